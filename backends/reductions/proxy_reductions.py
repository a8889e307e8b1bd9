"""Proxy reductions: a private proxy of the group, the reductions approach on public rows, and
counts that calibrate the final mixture (``protect="sensitive"``, ``pf.LinearClassifier``,
binary labels, any number of groups).

Algorithm (what runs).  Under the sensitive relation the features x and the label y are public
and only the group a is private.  So::

    M1: T̃ = Σ_i a_i u_i + N(0, σ²I)        u_i = [z(x_i), y_i], a_i = 1[g_i = first group]
        β = argmin Σ_i log(1 + e^{u_i·β}) − β·T̃ + ridge/2 ‖β‖²    (a logistic model of the
        π_i = σ(u_i·β)                                                group given x and y)

With G > 2 groups M1 releases every group's statistic T̃_g = Σ_{a_i = g} u_i + N(0, σ²I),
projected onto the public total Σ_i u_i (``project_onto_totals``: each group's estimate then
carries (1 − 1/G)σ² where reading the last one as Σ_i u_i minus the others' would give it
(G − 1)σ²), and π_i· is the multinomial logistic model with the last group as reference fitted
to the first G − 1 (``multinomial_proxy``: its score equations Σ_i u_i π_ig = T̃_g, so the statistics
are sufficient; on the public subsample, T̃ scaled by m/n).  Then every statistic of a rule h is estimated by soft counts
C[g, y, ŷ] = Σ_i π_ig 1[y_i = y] p_i(ŷ) (two groups: π_i0 = π_i, π_i1 = 1 − π_i), ℓ̂(h) read
from C as ``lagrangian_sgda`` reads ℓ̂ from its histogram, and the reductions approach of
Agarwal et al. (2018), as fairlearn's ``ExponentiatedGradient`` runs it, searches the linear
rules on these estimates::

    θ = 0 ∈ R^J (J one-sided pieces of the constraints, ``lagrangian.split``)
    for t = 1..T:
        λ = B·e^θ / (1 + Σ_k e^{θ_k})
        w = ∇_ℓ [f + Σ_k λ_k g_k] at ℓ̂ of the mixture so far
        d_i = Σ_g π_ig (c[g, y_i, 1] − c[g, y_i, 0])      the row's cost of ŷ = 1 over ŷ = 0
        h_t = the weighted logistic regression of 1[d_i < 0] with weights |d_i| (damped Newton,
              warm-started): a best response over linear rules
        θ += (2/B)·g(ℓ̂(h_t))

The proxy's estimates are biased where the proxy is (its soft counts match the true counts on
every linear function of u — the score equations — but a rule is a threshold of x, not a linear
function of u): measured on the validation splits, the mixture a program picks on them broke its
level by 40–110 % on the very rows it was fitted on.  So the last step reads counts instead::

    K ≤ 4 candidates: the supports of min f(M q) s.t. g_j(M q) ≤ −τ over the simplex (M's
        columns the ℓ̂(h_t)), τ ∈ {0, ±½, ¾} × the levels' public scale, largest weights first
    M2: Ñ0[y, s] = #{i : a_i = 1, y_i = y, pattern_i = s} + Lap(1/ε₂), s = Σ_k 2^k·h_k(x_i)
        (G > 2: Ñ_g[y, s] for every group g, + Lap(2/ε₂), projected onto the counts that are
        ≥ 0 and sum to the public N[y, s]: ``completed_counts``)
    q = argmin f(ℓ(q)) s.t. g_j(ℓ(q)) ≤ 0 over mixtures of the K rules and the two constant
        rules, ℓ(q) read from Ñ0 and the public N[y, s] (linear in q)
    release the mixture Σ q_k 1[x·w_k + b_k > 0] (each θ_k scaled into the ball: the same rule)

Privacy.  M1 is the ``cells`` backend's M1 (analytic Gaussian, Balle & Wang 2018, Thm 8): X and
y are the same in neighbours, so flipping one row's group moves Σ a_i u_i by exactly ±u_i,
Δ₂ = max_i ‖u_i‖₂ (public rows).  M2 is the ``cells`` backend's M2 on other cells (Laplace,
Dwork et al. 2006): a flip changes exactly one count by 1, Δ₁ = 1, whatever the cells; the
cells — the K rules' prediction patterns — are functions of public rows and of M1's output, so
M2 is chosen adaptively, which sequential composition covers (Dwork & Roth 2014, Thm 3.16).
With G > 2 groups a neighbour moves one row from group g to group h: M1's statistics T_g and
T_h move by ∓u_i (Δ₂ = √2·max_i ‖u_i‖₂; Laplace: Δ₁ = 2·max_i ‖u_i‖₁) and M2's counts
Ñ_g[y, s] and Ñ_h[y, s] by ∓1 (Δ₁ = 2) — what releasing only the first G − 1 would cost too,
so every group is released (``released_groups``; ``cells.proxy.proxy_event(..., groups=G)``,
``release_schedule``).  Everything else — the projections onto the public totals, the proxy
fit, the soft counts, the best responses, both programs, the clipping of Ñ to [0, N] — reads
only x, y and the releases: post-processing (Dwork & Roth 2014, Prop 2.1).  The certificate composes the two
events (basic: (ε₁ + ε₂, δ) = (ε, δ)).  The public subsample of the best responses (at most ``max_rows`` rows, when n is larger) is drawn
from the run's generator independently of the data.  Under ``protect="row"`` x and y are
private and none of this would be post-processing: the backend refuses.

No utility theorem: the plan predicts ∞; the held-out check measures the released rule on rows
it never read (docs/trust.md), and the ranking rests on the validation numbers of
docs/lagrangian.md, *Proxy reductions*.

Options: ``iterations`` (T, default 50: fairlearn's ``max_iter``), ``bound`` (B, default 50;
the step 2/B is fairlearn's ``eta0 / B``), ``proxy_share`` (M1's share of ε, default ½: chosen
on the validation splits), ``max_rows`` (the public subsample's size, default 200,000),
``proxy_ridge`` (default M1's noise scale σ₁, at least 1: noise of scale σ₁ in T̃ moves β most
along directions of curvature below σ₁ — rare 0/1 columns — and a ridge of σ₁ keeps those at
the prior; public, as σ₁ is).  The proxy is the ``cells`` backend's (``pf.ProxyCells()``'s
feature map: 0/1 columns as they are, the others one block clipped to norm 2).
"""

from __future__ import annotations

import math

import numpy as np

from privfair.data import passes

from ..base import PUBLIC, RELEASED, Backend, Plan, Verdict, convex_program_verdict
from ..options import Option, Param, from_options

OPTIONS = (
    Option("iterations", "int", 50, low=1,
           doc="best responses of the exponentiated-gradient game (fairlearn's max_iter)"),
    Option("bound", "float", 50.0, low=0, low_open=True,
           doc="B, the ℓ1 bound of the multipliers; the dual step is 2/B (fairlearn's eta0/B)"),
    Option("proxy_share", "float", 0.5, low=0, high=1, low_open=True, high_open=True,
           doc="M1's (the proxy's) share of ε; M2 (the pattern counts) has the rest"),
    Option("max_rows", "int", 200_000, low=1000,
           doc="rows of the public subsample the best responses are fitted on (n if smaller)"),
    Option("proxy_ridge", "float", None, low=0, low_open=True,
           doc="the proxy regression's ridge (None: M1's noise scale σ₁, at least 1)"),
)

#: Newton steps of the first best response (from θ = 0) and of each later one (warm-started)
FIRST_NEWTON, NEWTON = 15, 3
#: rows of the best responses' Newton Hessians (a fixed stride of the subsample when it is larger)
HESSIAN_ROWS = 8192
#: the best responses' ridge (on the mean weighted loss): keeps a separable relabelling finite
BR_RIDGE = 1e-6
#: public floor of the group-label masses in ℓ̂ (as ``lagrangian_sgda``'s ``mass_floor``)
MASS_FLOOR = 1e-3
#: the support hypotheses whose prediction patterns M2's counts are released for (2^K cells a
#: label): the program's largest weights
MAX_SUPPORT = 4
#: training rows up to which the plan ranks first (rank 0): the range of the validation splits
#: it was measured on (≤ 80,000 rows) with room; above it lagrangian_sgda, whose whole fit costs
#: ≤ 30 numpy passes at 10⁶–10⁷ rows (#19), goes first
RANK_FIRST_ROWS = 200_000


def soft_counts(P, y, h) -> np.ndarray:
    """C[g, y, ŷ] (G, 2, 2) of predictions ``h`` ∈ [0, 1] under soft group memberships
    ``P`` (m × G: P(group g | x, y) per row)."""
    out = np.empty((P.shape[1], 2, 2))
    for g, wg in enumerate(P.T):
        for k in (0, 1):
            m = wg * (y == k)
            one = float(m @ h)
            out[g, k] = (float(m.sum()) - one, one)
    return out


def best_response(Z, target, weight, w, steps, ridge=BR_RIDGE, hessian_rows=None) -> np.ndarray:
    """argmin_w Σ_i weight_i·[log(1 + e^{z_i·w}) − target_i·z_i·w]/n + ridge/2‖w‖², by
    ``steps`` damped Newton steps from ``w`` (halving until the objective does not rise).  The
    margins Zw are carried along (each trial step reads Z·step once, not Z·w per halving).

    ``Z`` may be single precision: its two products a step (the gradient Zᵀr and the trial
    margins Z·step) are then float32 reads of half the memory — the cost of a step on Adult,
    ~2× faster — while the margins, the objective and the line search stay float64.  The
    products' ~1e-6 relative error only perturbs the path; every accepted step still lowers the
    float64 objective at the carried margins.

    ``hessian_rows`` (an index array into Z's rows, or None for all): the Newton Hessian from
    these rows only, rescaled to the mean — a sub-sampled Newton method (Byrd, Chin, Neveitt and
    Nocedal 2011; Roosta-Khorasani and Mahoney 2019): the exact gradient with an approximate
    curvature, the line search on the whole objective."""
    from privfair.models.cells import sigmoid

    n = Z.shape[0]
    Zh = Z if hessian_rows is None else Z[hessian_rows]

    def value(z, v):
        return float(weight @ (np.logaddexp(0.0, z) - target * z)) / n + 0.5 * ridge * (v @ v)

    eye = np.eye(Z.shape[1])
    z = (Z @ w.astype(Z.dtype)).astype(float)
    f0 = value(z, w)
    for _ in range(steps):
        # margins clipped to ±35 (σ within 1e-15 of 0 or 1) and tiny terms set to 0: the
        # confidently classified rows of a separable relabelling reach subnormal numbers, and a
        # matrix product over subnormal numbers runs ~100× slower (measured: minutes for one
        # Adult best response)
        p = sigmoid(np.clip(z, -35.0, 35.0))
        r = weight * (p - target)
        r[np.abs(r) < 1e-100] = 0.0
        grad = (Z.T @ r.astype(Z.dtype)).astype(float) / n + ridge * w
        if hessian_rows is None:
            c = weight * p * (1.0 - p)
        else:
            ph = p[hessian_rows]
            c = weight[hessian_rows] * ph * (1.0 - ph)
        c[c < 1e-100] = 0.0
        # the Hessian only chooses the step (the line search checks it on the float64 value):
        # the single-precision rank-k update (passes.weighted_gram), ~3× faster than float64
        hess = passes.weighted_gram(Zh, c, float32=True) / len(c) + ridge * eye
        step = np.linalg.solve(hess, grad)
        zs = (Z @ step.astype(Z.dtype)).astype(float)
        t = 1.0
        while t > 1e-4:
            f1 = value(z - t * zs, w - t * step)
            if f1 <= f0:
                w, z, f0 = w - t * step, z - t * zs, f1
                break
            t /= 2
        else:
            break
    return w


class ProxyReductions(Backend):
    name = "proxy_reductions"
    # planned before the others (a solve skips those once an always-first backend has a plan):
    # its plans rank 0 up to RANK_FIRST_ROWS, and above it lagrangian_sgda — always first, and
    # accepting every problem this backend does — has the rank-0 plan
    always_ranks_first = True
    exposes = {
        "proxy_sensitivity": (PUBLIC, "M1's sensitivity max_i ‖u_i‖₂ (public rows)"),
        "proxy_scale": (PUBLIC, "M1's noise scale"),
        "rows_fitted": (PUBLIC, "the public subsample's size"),
        "hypotheses": (RELEASED, "the best responses found (post-processing of T̃)"),
        "support": (RELEASED, "the hypotheses whose patterns M2 counted"),
        "counts_scale": (PUBLIC, "M2's noise scale"),
        "pattern_counts": (RELEASED, "M2's release: the first group's count per (label, "
                           "pattern), clipped to [0, the cell's rows] (G > 2: every group's, "
                           "projected onto counts ≥ 0 that sum to the public cell totals)"),
        "solver_status": (RELEASED, "the program's status on the released estimates"),
        "estimates": (RELEASED, "f and g of the released mixture on M2's counts"),
    }
    option_table = OPTIONS
    plan_params = (
        *from_options(OPTIONS, "iterations", "bound", "proxy_share", "max_rows"),
        Param("clip", float, "the proxy's clipping bound (pf.ProxyCells()'s)"),
        Param("ridge", float, "the proxy regression's ridge (proxy_ridge; by default M1's noise "
                              "scale, at least pf.ProxyCells()'s 1)"),
    )
    theorem = ("proxy reductions: analytic Gaussian (Balle–Wang 2018) on the proxy statistic + "
               "Laplace (Dwork et al. 2006) on the pattern counts + post-processing (Dwork–Roth "
               "Prop 2.1)")
    needs_group_mass = False       # group sizes come from the proxy's soft counts

    def accepts(self, problem, analysis) -> Verdict:
        from privfair.models.decisions import LinearClassifier

        r = problem.rates
        ds = getattr(r, "decisions", None)
        if type(ds) is not LinearClassifier:
            return Verdict(False, "needs the decision set pf.LinearClassifier; got "
                                  f"{type(ds).__name__}")
        if analysis.privacy.protect != "sensitive":
            return Verdict(False, "needs protect='sensitive': the proxy and the best responses "
                                  "read x and y, which protect="
                                  f"{analysis.privacy.protect!r} protects")
        if r.G < 2:
            return Verdict(False, f"needs at least two groups; the data has {r.G}")
        if r.L != 2:
            return Verdict(False, f"needs binary labels; the data has {r.L}")
        if getattr(r, "surrogate", None) is not None:
            return Verdict(False, "reads hard rates: build the rates with surrogate=None")
        if getattr(r.data, "rows_on_workers", False):
            return Verdict(False, "runs in memory: a Dask dataset's rows stay on the workers "
                                  "(lagrangian_sgda runs there)")
        return convex_program_verdict(problem, analysis, "a convex program over the mixture")

    def plan(self, problem, analysis, privacy, options, spent=()) -> Plan:
        from privfair.models.cells import ProxyCells

        o = self.options_from(options or {})
        proxy = ProxyCells()
        params = {"iterations": o["iterations"], "bound": o["bound"],
                  "proxy_share": o["proxy_share"], "max_rows": o["max_rows"],
                  "clip": proxy.clip, "ridge": proxy.ridge}
        schedule, budget = None, []
        if privacy.is_private:
            share = o["proxy_share"]
            schedule, eps = release_schedule(problem.rates, privacy, share, spent)
            # the proxy's ridge at M1's noise scale: T̃'s noise moves β by H⁻¹N, and a
            # direction whose curvature (Σ σ(1 − σ)(u·v)², a rare 0/1 column's few rows) is
            # below σ₁ would follow the noise; a ridge of σ₁ caps that (the directions the data
            # cannot resolve stay at the prior).  Chosen on the validation splits against the
            # fixed ridge 1 and 0.3σ₁, 3σ₁ (docs/lagrangian.md, "The proxy's ridge")
            params["ridge"] = max(proxy.ridge, float(schedule["M1"].event.scale))
            m1 = "Gaussian" if privacy.delta > 0 else "Laplace"
            whose = "the first group's" if problem.rates.G == 2 else "every group's"
            budget = [(f"M1: {m1} release of {whose} proxy statistic Σ_(a_i = g) u_i",
                       share * eps, privacy.delta),
                      (f"M2: Laplace release of {whose} count in the (label, "
                       f"prediction pattern) cells of at most {MAX_SUPPORT} rules",
                       (1.0 - share) * eps, 0.0)]
        if o["proxy_ridge"] is not None:
            params["ridge"] = o["proxy_ridge"]
        notes = ["the group of each row is estimated by a logistic proxy fitted to the one "
                 "release; the constraints are estimated from its soft counts (biased where "
                 "the proxy is), met by the mixture on those estimates, and measured by the "
                 "held-out check",
                 "predicted excess risk ∞: no utility theorem; ranked on measured behaviour "
                 "(docs/lagrangian.md, 'Proxy reductions')"]
        measured = problem.rates.n <= RANK_FIRST_ROWS
        if not measured:
            notes.append(f"ranked after lagrangian_sgda above {RANK_FIRST_ROWS:,} rows: the "
                         "validation splits it was measured ahead on have at most 80,000, and "
                         "its best responses cost more numpy passes than a whole "
                         "lagrangian_sgda fit at 10⁶ rows (docs/scale.md); name it to run it")
        out = Plan(self.name, privacy, analysis, problem, params=params, budget=budget,
                   predicted_excess_risk=math.inf, theorem=self.theorem, notes=notes,
                   rank=0 if measured else 1,
                   rank_reason=("protect='sensitive' with binary labels: x and y are public, so "
                                "after one release of a proxy of the group the reductions "
                                "approach runs on public rows; measured ahead of "
                                "lagrangian_sgda on Adult, COMPAS and synthetic validation "
                                "splits (docs/lagrangian.md)") if measured else "")
        out.schedule = schedule
        return out

    def run(self, plan, *, rng, accountant, device="cpu", progress=True):
        """Fit on the CPU (numpy; ``device`` is ignored: the work is small dense fits), BLAS on
        one thread: the fits are many small products, which OpenBLAS's threads slow down ~10×
        on a shared machine (measured: 1.15 s against 0.10 s for one 24,000 × 102 Hessian)."""
        from ..cells.proxy import blas_single_thread

        with blas_single_thread():
            return self._run(plan, rng, accountant, progress)

    def _run(self, plan, rng, accountant, progress):
        from privfair.models.cells import ProxyCells, sigmoid
        from privfair.privacy.mechanisms import float_generator
        from privfair.privacy.randomness import as_source
        from privfair.results.result import Result
        from privfair.util.progress import bar

        from ..cells.cells import fit_design, singles_within_clip
        from ..cells.proxy import draw_proxy, logistic_fits
        from ..lagrangian import histogram as H
        from ..lagrangian.split import split

        problem, pp = plan.problem, plan.params
        r = problem.rates
        data, ds = r.data, r.decisions
        proxy = ProxyCells(clip=pp["clip"], ridge=pp["ridge"])
        features = proxy.features_for(data)
        check = not singles_within_clip(proxy, features)
        rows, design = data.rows(), fit_design(features, False, check)
        # one pass: T = Σ a_i u_i and the proxy fit's Newton terms at β = 0 (u_i is public)
        G = r.G
        if G == 2:
            ((T_exact, start),) = rows.map_sum(passes.several, (
                (passes.sum_and_logistic_terms, (design, ("group", 0),
                                                 np.zeros(design.dim(rows.n_features)),
                                                 passes.SINGLE)),))
        else:
            # every group's statistic Σ_{a_i = g} u_i (the multinomial logistic model's
            # sufficient statistics) and the public Σ_i u_i they sum to, which the released
            # blocks are projected onto (project_onto_totals)
            *blocks, total = rows.map_sum(passes.several, tuple(
                (passes.weighted_sum, (design, ("group", g))) for g in range(G)) + (
                (passes.weighted_sum, (design, None)),))
            T_exact = np.concatenate(blocks)
            start = None
        info = {}
        if plan.privacy.is_private:
            draws, T, m1 = draw_proxy(self, plan, accountant, rng, T_exact)
            schedule = plan.schedule
            info["proxy_sensitivity"], info["proxy_scale"] = m1.sensitivity, m1.scale
            source = draws.source
        else:
            T, source = T_exact, as_source(rng)
        del T_exact
        gen = float_generator(source)
        if G == 2:
            (beta,) = logistic_fits(rows, [dict(T=T, design=design, start=start,
                                                start_single=True)], proxy.ridge)
        # the public subsample of the best responses (x, y only; independent of the data)
        n = data.n
        m = min(n, int(pp["max_rows"]))
        idx = np.sort(gen.choice(n, size=m, replace=False)) if m < n else None
        Z, y = _design_rows(data, idx, m)                 # [x, 1] and y of the subsample
        if G == 2:
            p0 = sigmoid(features.design_dot(Z[:, :-1], y, beta, False))  # P(first group | x, y)
            P = np.stack([p0, 1.0 - p0], axis=1)
        else:
            U = features.design(Z[:, :-1], y, False)
            T = project_onto_totals(T.reshape(G, -1), total)[:G - 1]   # the last: the reference
            P = multinomial_proxy(U, T * (m / n), proxy.ridge)
        info["rows_fitted"] = m

        # the best responses read a single-precision copy, their Hessians a fixed stride of
        # HESSIAN_ROWS of it (public: it depends on m only) — together ~2× faster on Adult
        # (best_response; validated against the float64, all-row fits: docs/lagrangian.md)
        Z32 = Z.astype(np.float32)
        hessian_rows = (np.linspace(0, m - 1, HESSIAN_ROWS).astype(int)
                        if m > HESSIAN_ROWS else None)
        lay = H.Layout(r)
        floor = np.full((G, 2), MASS_FLOOR)
        q_declared = r.group_mass()[0]
        if q_declared is not None:
            floor = np.maximum(floor, np.asarray(q_declared))

        def ell_of(h):
            return H.rates_from_counts(soft_counts(P, y, h), lay, m, floor)

        f = problem.f
        pieces = [p for g in problem.g for p in split(g)]
        J, B = len(pieces), float(pp["bound"])
        eta = 2.0 / B
        dual = np.zeros(J)
        w = np.zeros(Z.shape[1])
        thetas, ells = [], []
        mix = None
        for t in bar(range(int(pp["iterations"])), "proxy_reductions", progress, min_steps=10):
            lam = B * np.exp(dual) / (1.0 + np.exp(dual).sum()) if J else np.zeros(0)
            at, pi_gy = (ell_of(np.zeros(m)) if mix is None else mix)
            wv = np.asarray(f.grad(at), dtype=float)
            for k in range(J):
                wv = wv + lam[k] * np.asarray(pieces[k].grad(at), dtype=float)
            c = H.row_coefficients(wv, lay, pi_gy)                   # (G, L, L)
            diff = c[:, :, 1] - c[:, :, 0]                           # (G, L)
            d = (P * diff[:, y].T).sum(axis=1)
            target = (d < 0).astype(float)
            weight = np.abs(d)
            scale = weight.mean()
            if scale > 0:
                w = best_response(Z32, target, weight / scale, w,
                                  NEWTON if t else FIRST_NEWTON, hessian_rows=hessian_rows)
            h = (Z @ w > 0).astype(float)
            e, pg = ell_of(h)
            thetas.append(w.copy())
            ells.append(e)
            mix = (np.mean(ells, axis=0), pg)
            if J:
                gv = np.array([float(p.value(e)) for p in pieces])
                dual = dual + eta * gv
        # (M2) the program's support, re-weighted on released counts: each row's pattern of
        # predictions under the support hypotheses (public: x and the hypotheses), the first
        # group's count in every (label, pattern) cell with Laplace noise; the rates of every
        # mixture of these rules (and of the two constants) are linear in those counts
        # the candidates: the supports of the program on the proxy's estimates at the asked
        # levels, then tightened and loosened by half a level (the proxy is biased, so the
        # rule that meets the level on M2's counts may be either side), best first
        M = np.array(ells).T
        scale = _level_scale(problem, lay.K)
        support, soft_status = [], None
        if len(ells) <= MAX_SUPPORT:           # few hypotheses: every one is a candidate
            support, soft_status = list(range(len(ells))), "all hypotheses"
        for tau in (() if support else (0.0, 0.5 * scale, -0.5 * scale, 0.75 * scale)):
            q_soft, st = _mixture(problem, M, tau)
            soft_status = soft_status or st
            for i in np.argsort(-q_soft):
                if q_soft[i] > 1e-9 and int(i) not in support and len(support) < MAX_SUPPORT:
                    support.append(int(i))
        W = np.array([thetas[i] for i in support])                    # (K, d + 1)
        K = len(support)
        N, Nr = pattern_counts(data, W, G)       # (2, 2^K), the released groups' (·, 2, 2^K)
        if plan.privacy.is_private:
            Nr = np.asarray(draws.laplace("M2", Nr), dtype=float).reshape(Nr.shape)
            info["counts_scale"] = float(schedule["M2"].event.scale)
        Ng = completed_counts(Nr, N, G)                  # (g, y, pattern): post-processing
        info["pattern_counts"] = (Ng[0] if G == 2 else Ng).tolist()
        bits = (np.arange(2 ** K)[None, :] >> np.arange(K)[:, None]) & 1   # (K, 2^K)
        hyp_bits = np.vstack([bits, np.zeros(2 ** K), np.ones(2 ** K)])   # + the constants
        cols = []
        for b in hyp_bits:
            one = (Ng * b[None, None, :]).sum(axis=2)                  # (g, y)
            C = np.stack([Ng.sum(axis=2) - one, one], axis=2)          # (g, y, ŷ)
            cols.append(H.rates_from_counts(C, lay, data.n, floor)[0])
        q, status = _mixture(problem, np.array(cols).T)
        keep = np.flatnonzero(q > 1e-9)
        radius = ds.radius
        d1 = Z.shape[1]
        const = [np.r_[np.zeros(d1 - 1), -radius], np.r_[np.zeros(d1 - 1), radius]]
        candidates = [W[k] * min(1.0, radius / max(np.linalg.norm(W[k]), 1e-300))
                      for k in range(K)] + const
        decisions = [candidates[i] for i in keep]
        weights = (q[keep] / q[keep].sum()).tolist()
        est = np.array(cols)[keep].T @ np.asarray(weights)
        f_val, g_vals = problem.evaluate(est)
        info.update(hypotheses=len(thetas), support=K, solver_status=status,
                    estimates={"f": f_val, "g": g_vals})
        trace = [{"hypotheses": len(thetas), "support": K, "status_on_proxy": soft_status,
                  "status": status, "objective_on_counts": f_val,
                  "constraints_on_counts": g_vals}]
        return Result(self.name, decisions, weights, ds, plan=plan, trace=trace, info=info)


def _design_rows(data, idx, m):
    """(Z, y): the rows ``idx`` (sorted; None: all) as [x, 1] and their labels, gathered chunk by
    chunk through ``data.rows()`` (no read of the whole ``data.X``: an index view would copy
    it, #19); m × (d + 1), the subsample the best responses are fitted on."""
    rows = data.rows()
    Z, y = np.empty((m, rows.n_features + 1)), np.empty(m, dtype=int)
    Z[:, -1] = 1.0
    at = 0
    for c in rows.chunks():
        if idx is None:
            take = slice(None)
            k = len(c)
        else:
            lo, hi = np.searchsorted(idx, [c.start, c.start + len(c)])
            take = idx[lo:hi] - c.start
            k = hi - lo
        if k:
            Z[at:at + k, :-1] = np.asarray(c.X, dtype=float)[take]
            y[at:at + k] = np.asarray(c.y)[take]
            at += k
    return Z, y


def released_groups(G) -> int:
    """How many groups' statistics and counts M1 and M2 release: the first group's alone when
    G = 2 (a flip moves one block and one count), every group's when G > 2 (a move between two
    groups moves two either way, so the last group's release costs nothing, and projecting all
    G onto the public totals gives every group (1 − 1/G) of one release's variance where the
    residual would give the last one G − 1 times it: ``project_onto_totals``)."""
    return 1 if G == 2 else G


def project_onto_totals(noisy, total) -> np.ndarray:
    """The least-squares projection of G noisy per-group releases (stacked on axis 0) onto the
    public totals Σ_g = ``total``: each gets the same share of the residual, (total − Σ_g
    noisy_g)/G.  Post-processing; with independent noise of variance v in each block every
    group's estimate has variance (1 − 1/G)·v.

    Examples
    --------
    >>> project_onto_totals(np.array([3.0, 5.0, 1.0]), 12.0)
    array([4., 6., 2.])
    """
    noisy = np.asarray(noisy, dtype=float)
    return noisy + (np.asarray(total, dtype=float) - noisy.sum(axis=0)) / noisy.shape[0]


def completed_counts(released, N, G) -> np.ndarray:
    """(G, 2, 2^K): every group's count per (label, pattern) from M2's release and the public
    cell totals N (2, 2^K) — post-processing.  G = 2: the first group's count clipped to [0, N],
    the second's the rest.  G > 2: in each cell the least-squares counts that are non-negative
    and sum to the cell's total — the Euclidean projection of the G released counts onto
    {c ≥ 0, Σ_g c_g = N} (one shared shift θ, then max(·, 0): Held, Wolfe & Crowder 1974;
    Duchi et al. 2008).  Where no count would go below 0 it is :func:`project_onto_totals`;
    a small group whose release fell far below 0 is set to 0 without inflating the others."""
    released = np.asarray(released, dtype=float)
    if G == 2:
        first = np.clip(released.reshape((1,) + N.shape), 0.0, N)
        return np.concatenate([first, N[None] - first])
    v = released.reshape(G, -1)
    total = np.asarray(N, dtype=float).reshape(-1)
    u = -np.sort(-v, axis=0)                                   # descending in each cell
    css = np.cumsum(u, axis=0) - total
    j = np.arange(1, G + 1)[:, None]
    # the support's size (≥ 1: with a total of 0 only the largest term is "kept", at 0)
    rho = np.maximum((u - css / j > 0).sum(axis=0), 1)
    theta = css[rho - 1, np.arange(v.shape[1])] / rho
    return np.maximum(v - theta, 0.0).reshape(released.shape)


def pattern_counts(data, W, G=2):
    """(N, Nr): the rows in every (label, pattern) cell (2, 2^K), and those of each released
    group (:func:`released_groups`: the first when G = 2, all G otherwise; (·, 2, 2^K)), the
    pattern of a row being Σ_k 2^k·1[x·w_k + b_k > 0] — one pass over the rows' chunks."""
    K = W.shape[0]
    R = released_groups(G)
    N, N0 = np.zeros((2, 2 ** K)), np.zeros((R, 2, 2 ** K))
    for c in data.rows().chunks():
        X = np.asarray(c.X, dtype=float)
        pat = ((X @ W[:, :-1].T + W[:, -1] > 0) * (1 << np.arange(K))).sum(axis=1)
        cell = np.asarray(c.y).astype(int) * 2 ** K + pat
        N += np.bincount(cell, minlength=2 * 2 ** K).reshape(2, -1)
        grp = np.asarray(c.group)
        for g in range(R):
            N0[g] += np.bincount(cell, weights=(grp == g).astype(float),
                                 minlength=2 * 2 ** K).reshape(2, -1)
    return N, N0


def multinomial_proxy(U, T, ridge, iters=50, tol=1e-9, hessian_rows=HESSIAN_ROWS) -> np.ndarray:
    """P (m × G): the multinomial logistic model of the group given the design rows U (m × d),
    fitted to the statistics T (G − 1, d) of the first G − 1 groups (the last the reference,
    logit 0) — argmin Σ_i log(1 + Σ_g e^{u_i·β_g}) − Σ_g β_g·T_g + ridge/2‖β‖² by damped Newton
    steps (its score equations Σ_i u_i P_ig = T_g: the statistics are sufficient).

    The gradient and the objective read every row; the Hessian's (G − 1)² blocks read a fixed
    stride of ``hessian_rows`` rows scaled to m (sub-sampled Newton, as :func:`best_response`;
    public: the stride depends on m only) — the blocks were 60 % of a solve at 50,000 rows and
    20 groups (16 s), growing with m·(G − 1)²·d²."""
    m, d = U.shape
    k = T.shape[0]
    beta = np.zeros((k, d))
    stride = np.linspace(0, m - 1, hessian_rows).astype(int) if m > hessian_rows else None
    Uh = U if stride is None else U[stride]
    weight = m / Uh.shape[0]

    def probs(b):
        Zl = np.c_[U @ b.T, np.zeros(m)]
        Zl -= Zl.max(axis=1, keepdims=True)
        E = np.exp(Zl)
        return E / E.sum(axis=1, keepdims=True)

    def value(b):
        logits = np.c_[U @ b.T, np.zeros(m)]
        return (float(np.logaddexp.reduce(logits, axis=1).sum() - (b * T).sum())
                + 0.5 * ridge * float((b * b).sum()))

    f0 = value(beta)
    for _ in range(iters):
        P = probs(beta)
        grad = (U.T @ P[:, :k]).T - T + ridge * beta                    # (k, d)
        Ph = P if stride is None else P[stride]
        hess = np.empty((k, d, k, d))
        for g in range(k):
            for h in range(g, k):
                block = weight * (Uh.T @ (Uh * (Ph[:, g] * ((g == h) - Ph[:, h]))[:, None]))
                hess[g, :, h, :], hess[h, :, g, :] = block, block.T
        hess = hess.reshape(k * d, k * d) + ridge * np.eye(k * d)
        step = np.linalg.solve(hess, grad.reshape(-1)).reshape(k, d)
        t = 1.0
        while t > 1e-6 and value(beta - t * step) > f0:     # halve until it does not rise
            t /= 2
        if t <= 1e-6:
            break
        f_prev, beta = f0, beta - t * step
        f0 = value(beta)
        if f_prev - f0 <= tol * max(1.0, abs(f0)):
            break
    return probs(beta)


def _level_scale(problem, K) -> float:
    """A public scale of the constraints' levels: the median of −g_j(0) over the constraints
    (c for |gap| ≤ c: a rate gap is 0 at ℓ = 0), at least 0.005."""
    zero = np.zeros(K)
    vals = [max(-float(g.value(zero)), 0.005) for g in problem.g] or [0.005]
    return float(np.median(vals))


def _mixture(problem, M, tau=0.0):
    """(q, status): argmin f(Mq) s.t. g_j(Mq) ≤ −τ over the simplex (M: K × T); when that is
    infeasible, the q of least violation (phase 1)."""
    import cvxpy as cp

    from ..cells.cells import solve_any

    T = M.shape[1]
    q = cp.Variable(T, bounds=[0.0, 1.0])
    x = M @ q
    simplex = [cp.sum(q) == 1]
    cons = [g.to_cvxpy(x) <= -tau for g in problem.g]
    status = solve_any(cp.Problem(cp.Minimize(problem.f.to_cvxpy(x)), simplex + cons))
    if status not in ("optimal", "optimal_inaccurate") and cons:
        viol = cp.maximum(*[g.to_cvxpy(x) for g in problem.g]) if len(cons) > 1 \
            else problem.g[0].to_cvxpy(x)
        status = "phase1:" + solve_any(cp.Problem(cp.Minimize(viol), simplex))
    val = q.value if q.value is not None else np.full(T, 1.0 / T)
    val = np.clip(np.nan_to_num(np.asarray(val, dtype=float)), 0.0, None)
    if not val.sum() > 0:                  # a solver that returned nothing usable: uniform
        val = np.full(T, 1.0 / T)
    return val / val.sum(), status


def release_schedule(rates, privacy, share, spent=()):
    """(Schedule of M1 and M2, the ε they share): M1 with ``share`` of it and the whole δ, M2
    (pure) the rest — basic composition is exactly (ε, δ) when nothing was spent, else the
    largest ε that fits beside ``spent``.  M1's sensitivity reads X and y, which the sensitive
    relation (the only one ``accepts`` takes) leaves public; M2's cells are 2·2^K for K ≤
    ``MAX_SUPPORT`` (Δ₁ = 1 whatever their number)."""
    from privfair.models.cells import ProxyCells
    from privfair.privacy import Schedule, Scheduled

    from ..cells.cells import extreme_design_rows, singles_within_clip
    from privfair.privacy import laplace_event, laplace_scale

    from ..cells.proxy import proxy_event
    from .._draws import whole_epsilon

    proxy = ProxyCells()
    features = proxy.features_for(rates.data)
    U = extreme_design_rows(rates.data, features, False, not singles_within_clip(proxy, features))

    G = rates.G
    # G > 2: every group's statistics and counts are released (released_groups), and a row
    # moved from one group to another moves two blocks (proxy_event) and two counts by 1 each
    # (Δ₁ = 2)
    moved = 1.0 if G == 2 else 2.0

    def releases(e):
        return [Scheduled("M1", proxy_event(U, share * e, privacy.delta, groups=G), exact=True),
                Scheduled("M2", counts_event((1.0 - share) * e), exact=True)]

    def counts_event(e2):
        # the cells are 2·2^K for the K ≤ MAX_SUPPORT rules chosen at run time, for each
        # released group; the sensitivity does not depend on how many
        return laplace_event(moved, e2, scale=laplace_scale(moved, e2),
                             dimension=released_groups(G) * 2 * 2 ** MAX_SUPPORT,
                             sensitivity_source=(
                                 "one row's group flip changes exactly one cell count by exactly "
                                 "1: ‖Δ‖₁ = 1" if G == 2 else
                                 "moving one row from one group to another moves one count of "
                                 "each by 1: ‖Δ‖₁ = 2"),
                             label=(f"M2: first group's count in ≤ {2 * 2 ** MAX_SUPPORT} "
                                    "(label, prediction pattern) cells" if G == 2 else
                                    f"M2: all {G} groups' counts in ≤ "
                                    f"{2 * 2 ** MAX_SUPPORT} (label, prediction pattern) cells"))
    eps = whole_epsilon(lambda e: [s.event for s in releases(e)], privacy, spent)
    return Schedule(releases(eps), privacy.epsilon, privacy.delta, spent), eps


from .. import register  # noqa: E402

register(ProxyReductions())

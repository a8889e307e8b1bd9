# Over 500 lines: one backend: accepts, plan (with its proof) and run; its releases are in
#   cells/proxy.py.
"""Proxy cells: two releases of the sensitive column, then a convex program on released counts.

Decision set: :class:`privfair.ProxyCells` — randomized rules x ↦ q[cell(s(x), p(x))] on the
cells of a public score s and a private proxy p of the (first) group.  The sensitive column a
(a_i = 1 when row i is in ``data.groups[0]``) is read by exactly two mechanisms:

* **M1** (analytic Gaussian, Balle & Wang 2018, Thm 8; (ε₁, δ)-DP): T = Σ_i a_i u_i + N(0, σ²I),
  u_i the public design row of the proxy, [1, clipped feature blocks, y_i] (or [z_i, y_i·z_i]
  with ``proxy_interactions=True``, which doubles the dimension).  Δ₂ = max_i ‖u_i‖₂: flipping
  a_i moves T by exactly ±u_i and the relation fixes X and y, so the bound holds for every pair
  of neighbours and is attained.  (δ = 0: Laplace with Δ₁ = max_i ‖u_i‖₁, ε₁-DP.)
* **M2** (Laplace, Dwork, McSherry, Nissim & Smith 2006; ε₂-DP): the first group's count in
  every (label, cell) — or every cell, when the problem reads the groups' statistics only through
  quantities pooled over labels (see :func:`needs_label_split`).  Δ₁ = 1: a flip changes exactly
  one count by 1.  The cells are a function of M1's output and public data, so M2 is chosen
  adaptively; sequential (basic) composition covers that (Dwork & Roth 2014, Thm 3.16).

Everything else is post-processing (Dwork & Roth 2014, Prop 2.1): the score s (a function of X
and y, identical in neighbours), the proxy fitted by Newton's method from the noisy T, the bin
edges, the public cell totals N_{y,c}, the second group's counts N − F̂, the shrinkage of the
noisy counts toward the proxy's soft counts, and the convex program.  The certificate composes
the two recorded events with the accountant (basic: (ε₁ + ε₂, δ)).

Given the released counts F̂, every coordinate of ℓ̃(q) is LINEAR in q: joint cells
Σ_c N̂_{g,y,c}·q_c / n (or the complement), conditional rates Σ_c N̂_{g,y,c}·q_c / n̂_{g,y}
with n̂_{g,y} = Σ_c N̂_{g,y,c}.  So the user's problem — minimize f(ℓ̃(q)) subject to
g_j(ℓ̃(q)) ≤ −τ_j, q ∈ [0,1]^C, q non-decreasing in the score bin (``monotone=True``) — is
convex whenever f and g are, and is handed to cvxpy through ``expr.to_cvxpy`` (HiGHS for LPs,
Clarabel otherwise).

Preconditions (``accepts``): protect="sensitive" (the score, the cell totals and the clipping
read X and y, which protect="row" protects); decision set ProxyCells without surrogate; binary
labels; two groups; f and every g proven convex and expressible in cvxpy (no ``smax``).

Constants chosen in ``plan`` from public quantities only (documented where they are defined):
the budget split (:func:`budget_split`), the tightening τ_j (:func:`tightening`, computed in
``run`` from released quantities), and the predicted excess risk (:func:`noise_bound`).

Options (``problem.solve(..., margin_z=, proxy_share=, proxy_interactions=)``): the quantile of
the tightening (default 1.645, one-sided 95%), M1's share of ε, and the interacted proxy design.
The defaults (1.645; no interactions) were chosen among a few values (z ∈ {1, 1.28, 1.645, 2})
after looking at Adult test results — see bench/README.md; no validation split was used.

Reading the rows (#19): every read is a pass over chunks (:mod:`privfair.data.passes`) — the
feature map and the extreme rows once per dataset, one pass for Zᵀy, T and both fits' first
Newton terms, then the score's and the proxy's Newton fits in lockstep (one pass per round for
both, :func:`privfair.statistics.scores.logistic_fits`), then the per-row scores.  T and the
fits read the proxy's rows blockwise (:class:`passes.ProxyBlocks`) when the default feature map
applies; T is summed in float64, and only Newton Hessians far from the optimum are float32
(post-processing; see :mod:`privfair.statistics.scores`).  On a Dask dataset
(``data.rows_on_workers``) the per-row stage runs on the workers too (:func:`cell_tallies`:
exact quantile edges from order statistics found by passes, then the cells' sums), so a whole
solve reads the rows only through passes whose results are sums, counts, maxima and the few
values that pin the released edges (docs/scale.md).

Releases: M1 and M2 are scheduled at plan time (``plan.schedule``; M1's sensitivity max_i ‖u_i‖
reads X and y, public under this relation) and drawn in ``run`` through
``schedule.open(accountant, rng)`` with the exact samplers.  The audit's negative control is
``privfair.privacy.reduced_noise(k)`` around the solve; the shrinkage then still uses the
scheduled (nominal) noise variance.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from privfair.data import passes
from privfair.errors import InvalidInputError
from privfair.analysis.theorems import NUMERIC

from ..base import PUBLIC, RELEASED, Backend, Plan, Verdict, convex_program_verdict
from ..options import Option, Param, from_options

#: failure probability ρ of the tail bound behind ``predicted_excess_risk``
RHO = 0.05
#: the constraints are tightened by the Φ(MARGIN_Z) = 95% one-sided quantile of the noise's effect
MARGIN_Z = 1.645

#: the solve options (declared once: validated by ``options_from`` at plan time, before anything
#: is spent, and listed by ``privfair backends``)
OPTIONS = (
    Option("proxy_share", "float", None, low=0, high=1, low_open=True, high_open=True,
           doc="M1's (the proxy's) share of ε; auto: 1/(k+1), k = label blocks M2 releases"),
    Option("margin_z", "float", MARGIN_Z, low=0,
           doc="tighten each constraint by the Φ(z) quantile of the count noise's effect"),
    Option("proxy_interactions", "bool", False,
           doc="proxy design [z, y·z] instead of [z, y] (doubles M1's dimension)"),
)

_JOINT = (("tn", 0, 0), ("fp", 0, 1), ("fn", 1, 0), ("tp", 1, 1))
_RATES = (("tnr", 0, 0), ("fpr", 0, 1), ("fnr", 1, 0), ("tpr", 1, 1))


def needs_label_split(problem) -> bool:
    """Whether M2 must release counts per (label, cell) rather than per cell.

    Pooled counts suffice when f and every g read the groups only through selection rates and
    through joint frequencies that enter affinely with the same coefficient for every group
    (then only Σ_g joint[g, y, ŷ] matters, which is public) — e.g. error + demographic parity.
    Per-label rates (fpr, tpr, ...) or group-specific joint terms need the split.
    """
    r = problem.rates
    sel = {r.selection.index(g) for g in r.groups}
    for e in [problem.f] + list(problem.g):
        sup = e.support()
        if any(k >= r.K_joint and k not in sel for k in sup):
            return True
        if any(k < r.K_joint for k in sup):
            if not e.is_affine():
                return True
            w = np.asarray(e.grad(np.full(r.K, 0.5)), dtype=float)
            for name, _, _ in _JOINT:
                acc = getattr(r, name)
                vals = [w[acc.index(g)] for g in r.groups]
                if not np.allclose(vals, vals[0]):
                    return True
    return False


def budget_split(epsilon, label_split: bool, proxy_share=None):
    """(ε₁, ε₂): M1 gets 1/(k+1) of ε, M2 gets k/(k+1), k = label blocks M2 releases (1 or 2).

    Rationale: the proxy is shared, while every label block of counts carries its own Laplace
    noise into the constraints; ``proxy_share`` overrides the share of M1.
    """
    k = 2 if label_split else 1
    share = 1.0 / (k + 1) if proxy_share is None else float(proxy_share)
    if not math.isfinite(epsilon):
        return math.inf, math.inf
    eps1 = epsilon * share
    return eps1, epsilon - eps1


def noise_bound(n, n_released, epsilon2, q_min, rho=RHO):
    """B with P(sup_q ‖ℓ̃(q) − ℓ(q)‖_∞ ≤ B) ≥ 1 − ρ for the unshrunk Laplace estimate.

    Each coordinate of ℓ̃ − ℓ is (Σ_c q_c e_c)/den (+ the denominator's error): with S = Σ_c |e_c|
    over the m released counts, |Σ_c q_c e_c| ≤ S for every q ∈ [0,1]^C, S ~ Gamma(m, 1/ε₂), so
    S ≤ S_ρ = Gamma⁻¹(1 − ρ; m, 1/ε₂).  Joint frequencies move by ≤ S_ρ/n; a rate A/D with
    A ≤ D, D ≥ n·q_min moves by ≤ 2S_ρ/(n·q_min − S_ρ).
    """
    if not math.isfinite(epsilon2):
        return 0.0
    return _sup_error(n, gamma_quantile(n_released, rho) / epsilon2, q_min)


def _sup_error(n, S, q_min, ops=NUMERIC):
    """max(S/n, 2S/(n·q_min − S)) when n·q_min > S, else ∞ (see :func:`noise_bound`)."""
    B = ops.max(S / n, 2 * S / (n * q_min - S))
    if ops.symbolic:
        return ops.where(n * q_min > S, B, ops.inf)
    return float(B) if n * q_min > S else math.inf


def gamma_quantile(n_released, rho=RHO):
    """Gamma⁻¹(1 − ρ; m, 1): S_ρ·ε₂ for the sum S of m |Lap(1/ε₂)| (scipy, numeric)."""
    from scipy.stats import gamma

    return float(gamma.ppf(1.0 - rho, n_released))


def excess_bound(n, epsilon, share, q_min, L_h, gamma_q, ops=NUMERIC):
    """The plan's bound: 2·L_h(ℓ∞)·B with B of :func:`noise_bound` written in ε and n.

    ε₂ = (1 − share)·ε (``budget_split``), S_ρ = γ_q/ε₂ with γ_q = :func:`gamma_quantile`
    (Gamma(m, 1/ε₂) = Gamma(m, 1)/ε₂), B = max(S_ρ/n, 2S_ρ/(n·q_min − S_ρ)) when n·q_min > S_ρ,
    else ∞.  Pure; ``ops`` may be ``privfair.analysis.theorems.symbolic()``.
    """
    return 2 * L_h * _sup_error(n, gamma_q / ((1 - share) * epsilon), q_min, ops)


def noise_jacobian(rates, Nhat, q, den, den_g, clamped, mix):
    """J (K × m): ∂ℓ̃(q)/∂e, the linear effect of the m released noises on ℓ̃ at a rule q.

    ℓ̃ depends on the first group's estimates F̂_{y,c} = Nhat[0] (the second group's are
    N − F̂), and F̂_{y,c} moves by mix[y, c, j] per unit of noise e_j (the shrinkage weight, times
    the proxy's label share for pooled releases).  Unclamped rates A/D move by (q_c − A/D)/D per
    unit of a count in their block: the denominator's noise is accounted for.
    """
    G, L, C = Nhat.shape
    D = np.zeros((rates.K, L, C))
    n_gy = Nhat.sum(axis=2)
    for gi, g in enumerate(rates.groups):
        sign = 1.0 if gi == 0 else -1.0
        for y in range(L):
            acc = Nhat[gi, y] @ q
            for name, yy, yhat in _JOINT:
                if yy == y:
                    D[getattr(rates, name).index(g), y] = sign * (q if yhat else 1 - q) / rates.n
            for name, yy, yhat in _RATES:
                if yy == y:
                    part = q if yhat else 1 - q
                    value = (acc if yhat else n_gy[gi, y] - acc) / den[gi, y]
                    D[getattr(rates, name).index(g), y] = sign * (
                        part - (0.0 if clamped[0][gi, y] else value)) / den[gi, y]
            sel = float(np.sum(Nhat[gi] @ q)) / den_g[gi]
            D[rates.selection.index(g), y] = sign * (q - (0.0 if clamped[1][gi] else sel)) / den_g[gi]
    return D.reshape(rates.K, L * C) @ mix.reshape(L * C, -1)


def tightening(problem, J, l_tilde, laplace_scale, z=MARGIN_Z, draws=2000):
    """τ_j: the Φ(z)-quantile of the released noise's simulated effect on g_j at the rule q₀.

    q₀ solves the untightened problem on the released counts; J = :func:`noise_jacobian` at q₀
    maps the m Laplace noises to ℓ̃.  With e* ~ Lap(b)^m drawn ``draws`` times (a simulation of
    the *public* noise distribution with a fixed seed — deterministic post-processing, nothing
    private is read), τ_j = max(0, quantile_{Φ(z)}(g_j(ℓ̃₀ + J e*) − g_j(ℓ̃₀))): for an affine g_j
    about z standard deviations of the noise's effect; for a max of several gaps, the effect on
    the max.  A function of n, ε₂ (b = 1/ε₂), the cells and released quantities; 0 without noise.
    """
    from scipy.stats import norm

    if laplace_scale <= 0 or not problem.g:
        return [0.0] * len(problem.g)
    E = np.random.default_rng(0).laplace(0.0, laplace_scale, size=(draws, J.shape[1]))
    sims = l_tilde[None, :] + E @ J.T
    level = float(norm.cdf(z))
    out = []
    for g in problem.g:
        base = float(g.value(l_tilde))
        effect = np.asarray(g.value(sims), dtype=float).reshape(-1) - base
        out.append(max(0.0, float(np.quantile(effect, level))))
    return out


def statistic_map(rates, Nhat, bound=None):
    """(A, b, den, den_g, clamped) with ℓ̃(q) = A q + b, from counts Nhat of shape (2, 2, C).

    Denominators are the counts' sums, clamped like ℓ's (``bound`` = the declared (q, q_group)
    group-mass bound, else at 1 row); ``clamped`` marks the clamped ones.
    """
    G, L, C = Nhat.shape
    n = rates.n
    K = rates.K
    A, b = np.zeros((K, C)), np.zeros(K)
    n_gy = Nhat.sum(axis=2)
    q, qg = (1.0 / n, 1.0 / n) if bound is None or bound[0] is None else bound
    den, den_g = np.maximum(n_gy, n * q), np.maximum(n_gy.sum(axis=1), n * qg)
    clamped = (n_gy < n * q, n_gy.sum(axis=1) < n * qg)
    for gi, g in enumerate(rates.groups):
        for names, scale in ((_JOINT, np.full((L,), float(n))), (_RATES, den[gi])):
            for name, y, yhat in names:
                k = getattr(rates, name).index(g)
                if yhat == 1:
                    A[k] = Nhat[gi, y] / scale[y]
                else:
                    A[k], b[k] = -Nhat[gi, y] / scale[y], n_gy[gi, y] / scale[y]
        A[rates.selection.index(g)] = Nhat[gi].sum(axis=0) / den_g[gi]
    return A, b, den, den_g, clamped


class CellsBackend(Backend):
    name = "cells"
    bound_on_h = True        # predicted_excess_risk bounds h − min h (Plan.bound_terms)
    exposes = {
        "label_split": (PUBLIC, "the plan's label split"),
        "epsilon_M1": (PUBLIC, "the plan's ε share of M1"),
        "epsilon_M2": (PUBLIC, "the plan's ε share of M2"),
        "M1_sensitivity": (PUBLIC, "M1's sensitivity (compiler constants)"),
        "M1_scale": (PUBLIC, "M1's noise scale"),
        "M2_scale": (PUBLIC, "M2's noise scale"),
        "shrinkage_kappa": (RELEASED, "the shrinkage weight, from the released counts"),
        "tightening": (RELEASED, "the constraint margins, from the released counts"),
        "solver_status": (RELEASED, "the LP's status on the released counts"),
        "note_shrinkage": (RELEASED, "a statement about the released counts"),
        "note": (RELEASED, "a statement about the released solution"),
    }
    option_table = OPTIONS
    plan_params = (
        Param("score_bins", int, "the decision set's score bins"),
        Param("proxy_bins", int, "the decision set's bins of the proxy score"),
        Param("cells", int, "score_bins × proxy_bins"),
        Param("monotone", bool, "whether the rules are monotone in the score (the decision set)"),
        Param("label_split", bool, "whether M2 releases the counts per label (the constraints "
              "read conditional rates)"),
        Param("released_counts", int, "m, the counts M2 releases"),
        Param("interactions", bool, "the proxy_interactions option: design [z, y·z]"),
        Param("epsilon_M1", float, "M1's (the proxy statistic's) ε"),
        Param("epsilon_M2", float, "M2's (the cell counts') ε"),
        *from_options(OPTIONS, "margin_z"),
        Param("ridge", float, "the proxy regression's ridge (the decision set)"),
        Param("clip", float, "the proxy's clipping bound (the decision set)"),
        Param("bound_values", dict, "the arguments of excess_bound besides n and ε (a private "
              "plan)", optional=True),
    )
    theorem = ("proxy cells: analytic Gaussian (Balle–Wang 2018) + Laplace (Dwork et al. 2006) "
               "+ post-processing (Dwork–Roth Prop 2.1)")
    needs_group_mass = False       # group sizes come from the noisy counts (post-processing)

    def accepts(self, problem, analysis) -> Verdict:
        from privfair.models.cells import ProxyCells

        r = problem.rates
        ds = getattr(r, "decisions", None)
        if not isinstance(ds, ProxyCells):
            return Verdict(False, f"needs the decision set pf.ProxyCells(...); got {type(ds).__name__}")
        if analysis.privacy.protect != "sensitive":
            return Verdict(False, "needs protect='sensitive': the public score, the cell totals "
                                  "and the feature clipping read X and y, which "
                                  f"protect={analysis.privacy.protect!r} protects")
        if r.surrogate is not None:
            return Verdict(False, "ProxyCells statistics are exact expected counts; build the "
                                  "rates with surrogate=None")
        if r.L != 2:
            return Verdict(False, f"needs binary labels; the data has {r.L}")
        if r.G != 2:
            return Verdict(False, f"needs exactly two groups (one released count per cell); the "
                                  f"data has {r.G}: {r.groups}")
        return convex_program_verdict(problem, analysis, "a convex program in q")

    def plan(self, problem, analysis, privacy, options, spent=()) -> Plan:
        """The split, the bound and the two releases, scheduled (``spent``: events already
        recorded against the same (ε, δ))."""
        options = self.options_from(options or {})   # typed refusals before anything is spent
        r = problem.rates
        ds = r.decisions
        split = needs_label_split(problem)
        inter = options["proxy_interactions"]
        m = ds.n_cells * (2 if split else 1)
        schedule, eps = None, privacy.epsilon
        eps1, eps2 = budget_split(eps, split, options.get("proxy_share"))
        z = options["margin_z"]
        params = {"score_bins": ds.score_bins, "proxy_bins": ds.proxy_bins, "cells": ds.n_cells,
                  "monotone": ds.monotone, "label_split": split, "released_counts": m,
                  "interactions": inter,
                  "epsilon_M1": eps1, "epsilon_M2": eps2, "margin_z": z,
                  "ridge": ds.ridge, "clip": ds.clip}
        notes = []
        if privacy.is_private:
            b2 = 1.0 / eps2 if eps2 > 0 else math.inf       # M2's Laplace scale (Δ = 1)
            if not math.isfinite(2.0 * b2 * b2):
                self.refuse(f"ε = {privacy.epsilon:.3g} is too small: M2's Laplace noise "
                            f"(scale 1/ε₂ = {b2:.3g}) has a variance beyond the float range, "
                            "so its effect on the constraints cannot be computed; the smallest "
                            "ε this backend plans is about 1e-153")
            schedule, eps = _schedule(r, privacy, split, options.get("proxy_share"), inter, m,
                                      spent)
            eps1, eps2 = budget_split(eps, split, options.get("proxy_share"))
            params.update(epsilon_M1=eps1, epsilon_M2=eps2)
            declared = getattr(r, "_q", None)
            # the declared bound, else the planner's schema-based guess (never data)
            q_min = float(np.min(declared)) if declared is not None else 1.0 / (2 * r.G * r.L)
            L = analysis.lipschitz.get("h", {}).get("linf")
            share = 1.0 - eps2 / eps                        # M1's share, as budget_split used
            params.update(bound_values={"q_min": q_min, "L_h": L, "share": share,
                                        "gamma_q": gamma_quantile(m)})
            risk = (excess_bound(r.n, eps, **params["bound_values"])
                    if L is not None else math.inf)
            m1 = "Gaussian" if privacy.delta > 0 else "Laplace"
            budget = [(f"M1: {m1} release of the proxy statistic T = Σ a_i u_i", eps1,
                       privacy.delta),
                      (f"M2: Laplace release of the first group's count in {m} cells", eps2, 0.0)]
        else:
            risk, budget = 0.0, []
        notes += [f"constraints tightened by τ_j = the Φ({z:g}) quantile of the count noise's "
                 "simulated effect on g_j at the untightened solution; risk bound: "
                 "2·L_h(ℓ∞)·sup_q‖ℓ̃(q) − ℓ(q)‖_∞ (Laplace tail, ρ = 0.05), relative to the best "
                 "rule on the fitted cells"]
        out = Plan(self.name, privacy, analysis, problem, params=params, budget=budget,
                   predicted_excess_risk=risk, theorem=self.theorem, notes=notes)
        out.schedule = schedule
        return out

    def formula(self, plan):
        """2·L_h·max(S/n, 2S/(n·q − S)), S = γ_q/((1 − share)·ε): :func:`excess_bound` in sympy."""
        from privfair.analysis.theorems import formula

        v = plan.params.get("bound_values")
        if v is None or not math.isfinite(plan.predicted_excess_risk):
            return None
        return formula(excess_bound, v, standard=("n", "epsilon"))

    def run(self, plan, *, rng, accountant, device="cpu", progress=True):
        """Fit on the CPU (numpy; ``device`` is ignored: the work is a few small dense fits)."""
        from . import proxy as _proxy

        with _proxy.blas_single_thread():
            return self._run(plan, rng, accountant)

    def _run(self, plan, rng, accountant):
        from privfair.models.cells import bin_index, quantile_edges
        from privfair.results.result import Result

        from . import proxy as _proxy

        problem, pp = plan.problem, plan.params
        r = problem.rates
        ds, data = r.decisions, r.data
        # a Dask dataset's rows stay on the workers: the per-row stage runs as passes there
        on_workers = bool(getattr(data, "rows_on_workers", False))
        private = plan.privacy.is_private
        split = pp["label_split"]
        info = {"label_split": split, "epsilon_M1": pp["epsilon_M1"], "epsilon_M2": pp["epsilon_M2"]}

        # (1) public score — X and y are identical in neighbours under protect="sensitive" —
        # and (2) M1: the proxy's sufficient statistic, then Newton from it (post-processing).
        # X is read only through passes over data.rows() (#19): the training part of the
        # held-out split is an index view of the data, never copied; the design rows u_i are
        # read one chunk at a time (never the n×dim matrix U)
        features = ds.features_for(data)
        inter = pp["interactions"]
        check = not singles_within_clip(ds, features)
        rows, design = data.rows(), fit_design(features, inter, check)
        # one pass for the first steps of both fits (#19): the score's Zᵀy and its Newton terms
        # at θ = 0 (what fit_score's first pass sums), T = Σ a_i u_i and the proxy fit's Newton
        # terms at θ = 0 (they read u_i only, public under the relation; not a release)
        d_score = passes.INTERCEPT.dim(rows.n_features)
        (Ty, score_start), (T_exact, start) = rows.map_sum(passes.several, (
            (passes.sum_and_logistic_terms, (passes.INTERCEPT, "y", np.zeros(d_score),
                                             passes.SINGLE)),
            (passes.sum_and_logistic_terms, (design, ("group", 0),
                                             np.zeros(design.dim(rows.n_features)),
                                             passes.SINGLE))))
        draws = None
        if private:
            draws, T, m1 = _proxy.draw_proxy(self, plan, accountant, rng, T_exact)
            schedule = plan.schedule
            info["M1_sensitivity"], info["M1_scale"] = m1.sensitivity, m1.scale
        else:
            T = T_exact
        del T_exact
        # the two Newton fits in lockstep: one read of the rows per round serves both; each
        # returns the θ it returns alone (fit_score(data), logistic_from_statistic), bit for bit
        score_coef, proxy_coef = _proxy.logistic_fits(rows, [
            dict(T=Ty, design=passes.INTERCEPT, start=score_start, start_single=True),
            dict(T=T, design=design, start=start, start_single=True)], ds.ridge)
        rule = ds.rule(score_coef, proxy_coef, features, inter, [], [], np.zeros(ds.n_cells))
        C = ds.n_cells
        if on_workers:
            # (3)-(4) as passes on the workers: the exact quantile edges (order statistics by
            # value buckets), then N, the soft counts and the first group's counts, summed
            s_edges, p_edges, N, soft, counts = cell_tallies(data, rule, ds, split, check)
        else:
            y = data.y
            a = (data.group == 0).astype(float)
            # s (public score), P(first group | x, y) and the proxy p, per row, in one pass
            s, p_xy, p = per_row_scores(data, rule, check)
            # (3) public cells: quantile edges of s and of the released proxy
            s_edges, p_edges = quantile_edges(s, ds.score_bins), quantile_edges(p, ds.proxy_bins)
            cell = bin_index(s, s_edges) * ds.proxy_bins + bin_index(p, p_edges)
            N = np.bincount(y * C + cell, minlength=2 * C).reshape(2, C).astype(float)
            soft = np.bincount(y * C + cell, weights=p_xy, minlength=2 * C).reshape(2, C)
            # (4) M2: the first group's counts, then shrinkage toward the proxy's soft counts
            counts = _proxy.group_counts(a, y, cell, C, split)
        tot, prior = (N.ravel(), soft.ravel()) if split else (N.sum(0), soft.sum(0))
        if private:
            b2 = float(schedule["M2"].event.scale)
            noisy = draws.laplace("M2", counts)
            v = 2.0 * b2 * b2                                   # float ops: no raise
            est, w, kappa = _proxy.shrink(noisy, prior, tot, v)
            info.update(M2_scale=b2, shrinkage_kappa=kappa)
            if kappa <= _proxy.KAPPA_FLOOR:
                # the noise dwarfs the counts, so the estimate is the proxy's and the shrunk
                # noise effect (w ≈ 0) would give no margin at all while the proxy's bias is
                # unknown: tighten by the *unshrunk* noise effect instead (w = 1 in J) — as if
                # the proxy could be as far off as the noise (measured: without this, ε = 0.01 on
                # 3,000 Adult rows gave EO 0.06–0.08 against a level of 0.03)
                w = np.ones_like(w)
                info["note_shrinkage"] = ("the released counts showed no signal above their "
                                          "noise; the margin assumes the proxy may be as far "
                                          "off as the noise")
        else:
            v, (est, w, kappa) = 0.0, _proxy.shrink(counts, prior, tot, 0.0)
        if split:
            F, mix = est.reshape(2, C), np.diag(w).reshape(2, C, 2 * C)
        else:
            # pooled counts, split over labels by the proxy's shares: f and g read only the
            # label sums (needs_label_split), so the split changes no value they see
            share = np.where(soft.sum(0) > 0, soft / np.maximum(soft.sum(0), 1e-300),
                             N / np.maximum(N.sum(0), 1.0))
            f0 = np.clip(est * share[0], np.maximum(0.0, est - N[1]), np.minimum(N[0], est))
            F = np.stack([f0, est - f0])                     # keeps Σ_y F_{y,c} = est_c
            mix = (w[None, :] * share)[:, :, None] * np.eye(C)[None, :, :]
        Nhat = np.stack([F, N - F])                          # (group, label, cell)
        # (5) the convex program on ℓ̃(q) = A q + b, tightened by the noise's effect at q₀
        A, b, den, den_g, clamped = statistic_map(r, Nhat, (getattr(r, "_q", None),
                                                            getattr(r, "_qg", None)))
        taus = [0.0] * len(problem.g)
        q, status = self._solve(problem, A, b, taus, C, ds.proxy_bins, ds.monotone)
        if v > 0 and problem.g:
            J = noise_jacobian(r, Nhat, q, den, den_g, clamped, mix)
            taus = tightening(problem, J, A @ q + b, info["M2_scale"], pp["margin_z"])
            q, status = self._solve(problem, A, b, taus, C, ds.proxy_bins, ds.monotone)
        info.update(tightening=taus, solver_status=status)
        if np.ptp(q[N.sum(0) > 0]) < 1e-6 and problem.g:
            info["note"] = ("the solution is a constant rule: the noise's effect on the constraints "
                            f"(tightening {max(taus):.3g}) leaves no room for another; use more rows, "
                            "a larger ε, fewer cells or a looser level")
        rule = ds.rule(score_coef, proxy_coef, features, inter, s_edges, p_edges, q)
        l_tilde = A @ rule.q + b
        f_val, g_vals = problem.evaluate(l_tilde)
        trace = [{"cells": C, "released_counts": counts.size if private else 0,
                  "objective_on_released": f_val, "constraints_on_released": g_vals,
                  "tightening": taus, "status": status}]
        return Result(self.name, [rule], [1.0], ds, plan=plan, trace=trace, info=info)

    @staticmethod
    def _solve(problem, A, b, taus, C, proxy_bins, monotone):
        """minimize f(Aq + b) s.t. g_j(Aq + b) ≤ −τ_j, 0 ≤ q ≤ 1, monotone in the score bin;
        when that is infeasible, the q of least tightened violation (phase 1)."""
        import cvxpy as cp

        q = cp.Variable(C, bounds=[0.0, 1.0])
        x = A @ q + b
        box = [q[:-proxy_bins] <= q[proxy_bins:]] if monotone and C > proxy_bins else []
        cons = [g.to_cvxpy(x) <= -t for g, t in zip(problem.g, taus)]
        prob = cp.Problem(cp.Minimize(problem.f.to_cvxpy(x)), box + cons)
        status = solve_any(prob)
        if status not in ("optimal", "optimal_inaccurate") and cons:
            viol = cp.maximum(*[g.to_cvxpy(x) + t for g, t in zip(problem.g, taus)]) \
                if len(cons) > 1 else problem.g[0].to_cvxpy(x) + taus[0]
            prob = cp.Problem(cp.Minimize(viol), box)
            status = "phase1:" + solve_any(prob)
        val = q.value if q.value is not None else np.full(C, 0.0)
        return np.clip(np.asarray(val, dtype=float), 0.0, 1.0), status


def _schedule(rates, privacy, split, proxy_share, interactions, n_counts, spent=()):
    """(Schedule of M1 and M2, the ε they share).  Nothing spent: basic composition of
    (ε₁, δ) and (ε₂, 0) is exactly (ε, δ), the whole ε; else the largest ε whose split fits
    beside ``spent`` (:func:`privfair.privacy.calibrate`).  M1's sensitivity reads X and y, which
    the "sensitive" relation (the only one ``accepts`` takes) leaves public."""
    from privfair.privacy import Schedule, Scheduled

    from . import proxy as _proxy
    from .._draws import whole_epsilon

    ds, data = rates.decisions, rates.data
    features = ds.features_for(data)
    U = extreme_design_rows(data, features, interactions, not singles_within_clip(ds, features))

    def releases(e):
        e1, e2 = budget_split(e, split, proxy_share)
        return [Scheduled("M1", _proxy.proxy_event(U, e1, privacy.delta), exact=True),
                Scheduled("M2", _proxy.counts_event(n_counts, e2), exact=True)]
    eps = whole_epsilon(lambda e: [r.event for r in releases(e)], privacy, spent)
    return Schedule(releases(eps), privacy.epsilon, privacy.delta, spent), eps


def proxy_design(features, interactions, check_single=True):
    """The proxy's design rows u_i as a :mod:`privfair.data.passes` design (built per chunk);
    ``check_single=False`` when no one-column block has an entry beyond the clip
    (:func:`singles_within_clip`): the same rows without two column reductions per chunk."""
    inner = passes.ProxyDesign(features, interactions, check_single)
    return passes.Mapped(inner, inner.dim)


def fit_design(features, interactions, check_single=True):
    """The design through which T and the proxy's Newton fit read u_i: the blockwise
    :class:`passes.ProxyBlocks` (no copy of a chunk into a design matrix, #19) when it applies —
    no interactions, every column in one block, no one-column block beyond the clip — else
    :func:`proxy_design`.  The two give the same sums up to float rounding."""
    if not interactions and not check_single:
        try:
            return passes.ProxyBlocks(features)
        except InvalidInputError:          # blocks that skip a column: the materialized rows
            pass
    return proxy_design(features, interactions, check_single)


def singles_within_clip(decisions, features) -> bool:
    """Whether every one-column block of ``features`` has all its entries within the clip,
    known without reading the rows: the default feature map (``feature_groups=None``) makes a
    one-column block of exactly the columns whose values are all 0 or 1 on the rows it was
    found on (:meth:`privfair.models.cells.ProxyCells.features_for`), and |x| ≤ 1 ≤ clip.  The
    backend reads the same rows the map was found on, so the per-chunk search for entries
    beyond the clip would find none (#19: ~0.9 s of 6 s of a 10⁶-row fit)."""
    return decisions.feature_groups is None and features.clip >= 1.0


def per_row_scores(data, rule, check_single=True):
    """(s, P(first group | x, y), p) of every row of ``data`` under ``rule`` — the public
    score, the proxy given the label, the proxy — in one pass over the rows (a chunk at a time:
    n-vectors only).  The chunks are the row spans :class:`privfair.models.cells.ProxyFeatures` uses
    on a whole X, and every number is computed by the float operations of the whole-X methods
    (``rule.score``, ``rule.group_given_label``, ``rule.proxy``), so it is the number they
    give; the clipped rows and u·θ are computed once per chunk for both proxies (#19: the
    methods each clip the chunk and multiply it again)."""
    n = data.n
    s, p_xy, p = np.empty(n), np.empty(n), np.empty(n)
    Z = None
    for c in data.rows(chunk_rows=_score_chunk_rows(rule)).chunks():
        sl = slice(c.start, c.start + len(c))
        if Z is None or Z.shape[0] != len(c):
            Z = np.empty((len(c), rule.features.dim - 1))
        s[sl], p_xy[sl], p[sl] = _chunk_scores(c, rule, check_single, Z)
    return s, p_xy, p


def _score_chunk_rows(rule) -> int:
    """Rows per chunk of the per-row scores (the spans ``ProxyFeatures`` uses on a whole X)."""
    return passes.chunk_rows_for(max(rule.features.n_features, rule.features.dim))


def _chunk_scores(c, rule, check_single=True, Z=None):
    """(s, P(first group | x, y), p) of one chunk's rows (``Z``: a (rows, dim − 1) buffer):
    the float operations :func:`per_row_scores` documents, shared by it and the passes of
    :func:`cell_tallies`."""
    from privfair.models.cells import sigmoid

    feat, theta, m = rule.features, np.asarray(rule.proxy_coef, dtype=float), rule.features.dim
    c0, c1 = rule.score_coef[0], rule.score_coef[1:]
    # ProxyFeatures.dot's coefficients: θ[:m] ([z, y] design) or θ as an (m, 2) matrix
    coef = theta.reshape(2, m).T if rule.interactions else theta[:m]
    X = np.asarray(c.X, dtype=float)
    s = sigmoid(c0 + X @ c1)
    if Z is None:
        Z = np.empty((X.shape[0], m - 1))
    passes.proxy_clip_into(feat, X, Z, check_single)
    zt = Z @ coef[1:] + coef[0]                 # ProxyFeatures.dot on this chunk
    y = np.asarray(c.y, dtype=float).reshape(-1)
    if rule.interactions:
        lin, lin0, lin1 = zt[:, 0] + y * zt[:, 1], zt[:, 0], zt[:, 0] + zt[:, 1]
    else:
        lin, lin0, lin1 = zt + y * theta[m], zt, zt + theta[m]
    return s, sigmoid(lin), s * sigmoid(lin1) + (1.0 - s) * sigmoid(lin0)


def cell_values(chunk, rule, check_single=True) -> tuple:
    """(s, p) of one chunk's rows: the two columns whose quantiles are the cells' edges (a
    pass function of :func:`privfair.data.passes.order_statistics`; runs on Dask workers)."""
    s, _, p = _chunk_scores(chunk, rule, check_single)
    return s, p


def cell_sums(chunk, rule, check_single, s_edges, p_edges, label_split) -> tuple:
    """One chunk's (N per (label, cell) (2C,) int, soft counts Σ P(first group | x, y) per
    (label, cell) (2C,), the first group's count per (label, cell) or per cell): the sums
    :meth:`CellsBackend._run` computes from the n-vectors, as a pass (merged by addition)."""
    from privfair.models.cells import bin_index

    from . import proxy as _proxy

    s, p_xy, p = _chunk_scores(chunk, rule, check_single)
    C = (len(s_edges) + 1) * (len(p_edges) + 1)
    y = np.asarray(chunk.y, dtype=np.int64)
    cell = bin_index(s, s_edges) * (len(p_edges) + 1) + bin_index(p, p_edges)
    key = y * C + cell
    a = (chunk.group == 0).astype(float)
    return (np.bincount(key, minlength=2 * C).astype(np.int64),
            np.bincount(key, weights=p_xy, minlength=2 * C),
            _proxy.group_counts(a, y, cell, C, label_split))


def cell_tallies(data, rule, decisions, label_split, check_single=True):
    """(score edges, proxy edges, N (2, C), soft counts (2, C), the first group's counts) of
    the rows of ``data`` — a Dask dataset — from passes on the workers (#19): what the
    in-memory path of :meth:`CellsBackend._run` computes from the n-vectors s, P(a | x, y), p.

    The edges are **exact**: :func:`privfair.data.passes.linear_quantiles` applies numpy's
    quantile arithmetic to order statistics found by :func:`privfair.data.passes.
    order_statistics` (counts in value buckets, then the few values of the buckets that hold
    the wanted ranks), so they are the bits ``quantile_edges`` gives on the same values — an
    approximate quantile would make the Dask cells differ from the in-memory cells, and the
    in-memory path's numbers must not change.  The values s and p are public under
    protect="sensitive" (they read X, y and the released proxy; the edges are released), and
    only bucket counts and the values near the wanted ranks come back.  N and the counts are
    integers (exact in any order); the soft counts are float sums, equal to the in-memory ones
    up to the order of the additions.  Three passes over the rows, typically (counts, values,
    sums); more for a bucket of more than ``passes.ORDER_GATHER`` values."""
    rows = data.rows(chunk_rows=_score_chunk_rows(rule))
    n = rows.n
    qs = [np.linspace(0.0, 1.0, int(b) + 1)[1:-1] for b in (decisions.score_bins,
                                                           decisions.proxy_bins)]
    if n == 0:
        edges = [np.zeros(len(q)) for q in qs]
    else:
        # the ranks np.quantile reads (linear_quantiles asks for them), found in one search
        wanted = [set(), set()]
        for j, q in enumerate(qs):
            passes.linear_quantiles(lambda r, j=j: wanted[j].update(int(x) for x in r) or
                                    {int(x): 0.0 for x in r}, n, q)
        found = passes.order_statistics(rows, cell_values, (rule, check_single),
                                        [sorted(w) for w in wanted], (0.0, 1.0))
        edges = [passes.linear_quantiles(lambda r, j=j: found[j], n, q)
                 for j, q in enumerate(qs)]
    s_edges, p_edges = (np.asarray(e, dtype=float) for e in edges)
    C = decisions.n_cells
    sums = rows.map_sum(cell_sums, rule, check_single, s_edges, p_edges, label_split)
    if sums is None:
        m = (2 if label_split else 1) * C
        sums = (np.zeros(2 * C, dtype=np.int64), np.zeros(2 * C), np.zeros(m))
    N, soft, counts = sums
    return (s_edges, p_edges, np.asarray(N).reshape(2, C).astype(float),
            np.asarray(soft, dtype=float).reshape(2, C), np.asarray(counts, dtype=float))


def extreme_design_rows(data, features, interactions, check_single=True) -> np.ndarray:
    """The design rows of largest ‖u_i‖₂ and of largest ‖u_i‖₁: a (2, dim) array on which
    :func:`_proxy.proxy_sensitivity` — a maximum over rows — takes the value it takes on the
    whole U, found without the n×dim matrix by the pass :func:`privfair.data.passes.max_norm_rows`
    (a maximum merged by maximum, ties to the first row, as ``np.argmax``): over in-memory
    chunks, an index view's gathered chunks, or a Dask dataset's partitions on the workers
    (only the two rows come back).  The norms are those of the design rows themselves, the
    numbers proxy_sensitivity computes.  Found once per dataset (its rows are read-only), not
    once per plan."""
    known = {}
    if hasattr(data, "rows"):          # a dataset (read-only arrays), not a bare row source
        try:
            known = _EXTREME_OF.setdefault(data, {})
        except TypeError:              # not weak-referenceable: not cached
            pass
    key = (features, bool(interactions))
    if key not in known:
        U = _extreme_design_rows(data, features, interactions, check_single)
        U.setflags(write=False)
        known[key] = U
    return known[key]


#: dataset → {(features, interactions): its extreme design rows} (public under the relation)
_EXTREME_OF = weakref.WeakKeyDictionary()


def _extreme_design_rows(data, features, interactions, check_single=True) -> np.ndarray:
    if data.n == 0:
        return features.design(np.zeros((0, data.n_features)), data.y, interactions)
    # a maximum over rows as a pass (merged by maximum; on Dask workers too): the design rows
    # of largest ‖u‖₂² and ‖u‖₁, computed on the design rows themselves — the numbers
    # proxy_sensitivity takes its maximum of
    l2, l1 = passes.rows_of(data).map_sum(passes.max_norm_rows, proxy_design(
        features, interactions, check_single))
    return np.stack([np.asarray(l2.item, dtype=float), np.asarray(l1.item, dtype=float)])


def solve_any(prob) -> str:
    """Solve with HiGHS, else Clarabel, else SCS; the status.  HiGHS's start-up banner, which
    it writes to descriptor 1 whatever its ``output_flag``, is silenced."""
    import cvxpy as cp

    from privfair.util.quiet import native_stdout_silenced

    for solver in (cp.HIGHS, cp.CLARABEL, cp.SCS):
        try:
            with native_stdout_silenced():
                prob.solve(solver=solver)
            return prob.status
        except (cp.error.SolverError, cp.error.DCPError, ValueError):
            continue
    return "solver_error"


from .. import register  # noqa: E402

register(CellsBackend())

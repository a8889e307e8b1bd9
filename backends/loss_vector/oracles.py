# Over 500 lines: the LOPT oracles' sensitivities and budget split, each next to its proof.
"""The LOPT backend's building blocks: private oracles, their sensitivities, the budget split
and the terms of the predicted bound.  See :mod:`backends.loss_vector.lopt` for the algorithm and proofs.

(Over 500 lines: the building blocks LOPT and Frank–Wolfe share; they split by concern when the
loss-vector family becomes one subpackage, #17 item 4.)

* :func:`score_sensitivity` — the one home of the linear score's sensitivity
  min_q ‖r_S‖_{q*}·Δℓ_q (Hölder, public weights), shared by LOPT and Frank–Wolfe.
* :func:`finite_oracle` — the exponential mechanism over a finite C with score −r·ℓ(c, D)
  ([A] Thm 5.10, finite case).
* :func:`erm_oracle` — noisy projected full-batch gradient descent on θ ↦ Σ_k r_k ℓ_k(θ, D)
  over the ℓ2 ball (Bassily, Smith & Thakurta 2014), gradient sensitivity from
  :func:`erm_terms`; :func:`erm_exact` — the ε = ∞ reference (scipy SLSQP).
* :class:`LoptBudget` / :func:`calibrate_lopt` — the per-call budget of T oracle calls and
  T − 1 loss releases, fitted once at plan time by :func:`privfair.privacy.calibrate` (exact
  closed forms — basic, optimal, GDP — as its starting point), and :func:`lopt_releases`, the
  plan's :class:`~privfair.privacy.Scheduled` releases ("oracle", "release") at that budget.
* :func:`surrogate_gap` — a proven bound on sup(e_s − e) for the compiler's smooth rewrites;
  :func:`geometry` — public diameters of the set of loss vectors (the layout's,
  :meth:`privfair.statistics.stats.Layout.geometry`); :class:`Bound` — the
  predicted excess risk the planner ranks by.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from privfair.analysis import formulas as F
from privfair.models.designs import row_blocks

from ..erm.reduction import row_coefficients
from .exponential import RHO

DUAL_ORD = {"l1": np.inf, "l2": 2, "linf": 1}
GD_STEPS = 100           # cap on noisy-GD steps per linear-classifier oracle call


# ----------------------------------------------------------------------------- finite oracle
def score_sensitivity(r_S, delta_l):
    """(Δ, q): a bound on |r·ℓ_S(c, D) − r·ℓ_S(c, D')| for every c and every pair of
    neighbours, for *public* weights r — Hölder, ‖r_S‖_{q*}·Δℓ_q, at the best norm q.

    ``delta_l`` maps a norm ("l1", "l2", "linf") to the compiler's Δℓ_q, or None where
    unknown.  Returns (None, None) when no Δℓ is known.  At r_S = 0 the bound is 0 — and 0 is
    the right value, not a placeholder: every score is 0 on every dataset, so the argmax is the
    same on all neighbours and is released exactly, for free.  (Frank–Wolfe used to substitute
    Δℓ_q there to keep the exponential mechanism's Δ positive, which only charged ε for a draw
    that reveals nothing; LOPT already took the free argmax.)
    """
    best = (None, None)
    r = np.asarray(r_S, dtype=float)
    for q, dual in DUAL_ORD.items():
        d = delta_l(q)
        if d is not None:
            v = float(np.linalg.norm(r, dual)) * d if r.size else 0.0
            if best[0] is None or v < best[0]:
                best = (v, q)
    return best


def linear_scores(L_S, r_S, xp_L=None):
    """The scores −ℓ_S(c, D)·r_S of every candidate (torch, on the device of ``xp_L``)."""
    if xp_L is not None:                                  # torch: the (m, |S|) product on device
        import torch

        return -(xp_L @ torch.as_tensor(r_S, dtype=xp_L.dtype, device=xp_L.device))
    return -(L_S @ r_S)


def finite_oracle(L_S, r_S, analysis, *, draws=None, name="oracle", xp_L=None):
    """(index, Δ): a private approximate minimizer of r·ℓ(c, D) — the exponential mechanism of
    the scheduled release ``name`` at this call's Δ (:func:`score_sensitivity`) — or the exact
    argmin when ``draws`` is None (ε = ∞) or Δ = 0 (free: the same on every neighbour)."""
    from .._draws import select

    scores = linear_scores(L_S, r_S, xp_L)
    if draws is None:
        return int(scores.argmax()), None
    sens, _ = score_sensitivity(r_S, analysis.delta_l)
    if not sens:
        return int(scores.argmax()), 0.0
    return select(draws, name, scores, sens), sens


# ----------------------------------------------------------------------------- ERM oracle
def _c_const(rates):
    """sup_i ‖∂(row i's mass on ŷ=1)/∂θ‖₂ ≤ sup φ'/φ(B) · ‖(x̃, 1)‖₂ = √(R² + 1)/φ(B)."""
    return rates.row_gradient_bound


def erm_terms(rates, relation, group_mass_bound=None):
    """For every allowed move of one row, the gradient change bound as Σ_j w_j |α_j·r|.

    ∇F(θ) = Σ_i a_i ∇m_i(θ) with ‖∇m_i‖ ≤ c (:func:`_c_const`) and a_i = Δr_J(g,y)/n +
    Δr_R(g,y)/d_{g,y} + r_sel(g)/d_g (Δr = weight on ŷ=1 minus weight on ŷ=0, d the clamped
    denominators).  When the row leaves (joins) a conditional block of clamp Q = n·q, the
    block's term Δr_R·Σ_{i∈B}∇m_i/d_B moves by ≤ 2c|Δr_R|/max(1, Q) (its own term plus the
    rescaling of the others, ≤ (m−1)c(1/d' − 1/d) + c/d); the joint term moves by the change
    of its own coefficient.  Returns a list, one per move, of (A (terms × K), w (terms,)).
    """
    q, qg = rates.group_mass(group_mass_bound)
    n, G, c = rates.n, rates.G, _c_const(rates)
    K, lay = rates.K, rates.layout

    def e(*pairs):
        v = np.zeros(K)
        for k, s in pairs:
            v[int(k)] += s
        return v

    J = {(g, y): e((lay.joint[g, y, 1], 1), (lay.joint[g, y, 0], -1))
         for g in range(G) for y in (0, 1)}
    R = {(g, y): e((lay.rate[g, y, 1], 1), (lay.rate[g, y, 0], -1))
         for g in range(G) for y in (0, 1)}
    S = {g: e((lay.selection[g], 1)) for g in range(G)}
    nan = float("nan")             # no group-mass bound: conditional blocks have no bound
    QR = {(g, y): (max(1.0, n * q[g, y]) if q is not None else nan)
          for g in range(G) for y in (0, 1)}
    QS = {g: (max(1.0, n * qg[g]) if qg is not None else nan) for g in range(G)}
    moves = []
    cells = [(g, y) for g in range(G) for y in (0, 1)]
    for (g, y) in cells:
        for (g2, y2) in cells:
            if relation == "sensitive" and (y2 != y or g2 == g):
                continue
            if relation == "sensitive":          # x and y fixed: same ∇m, new coefficient
                rows, w = [J[g2, y2] - J[g, y]], [c / n]
            else:
                rows, w = [J[g, y], J[g2, y2]], [c / n, c / n]
            if (g, y) == (g2, y2):                # the row stays in its blocks, ∇m changes
                rows.append(R[g, y]); w.append(2 * c / QR[g, y])
            else:
                rows += [R[g, y], R[g2, y2]]; w += [2 * c / QR[g, y], 2 * c / QR[g2, y2]]
            if g == g2:
                rows.append(S[g]); w.append(2 * c / QS[g])
            else:
                rows += [S[g], S[g2]]; w += [2 * c / QS[g], 2 * c / QS[g2]]
            moves.append((np.array(rows), np.array(w)))
    return moves


def _weighted_abs(A, w, r):
    vals = np.abs(A @ r)
    if np.any((vals > 0) & np.isnan(w)):
        raise ValueError("weights on conditional rates need a group-mass lower bound")
    return float(np.sum(np.where(vals > 0, w * vals, 0.0)))   # unread blocks contribute 0


def erm_sensitivity(rates, r, relation, group_mass_bound=None):
    """ℓ2 sensitivity of the full-batch gradient of θ ↦ r·ℓ(θ, D), for the public weights r."""
    return max(_weighted_abs(A, w, np.asarray(r, float))
               for A, w in erm_terms(rates, relation, group_mass_bound))


def erm_sensitivity_worst(rates, relation, l1_bound, support, group_mass_bound=None):
    """sup of :func:`erm_sensitivity` over r supported on ``support`` with ‖r‖₁ ≤ l1_bound
    (for planning, before r is known): l1_bound × the largest column sum of w|A|."""
    best, idx = 0.0, np.asarray(list(support), dtype=int)
    for A, w in erm_terms(rates, relation, group_mass_bound):
        col = np.where(np.abs(A) > 0, np.abs(A) * w[:, None], 0.0).sum(axis=0)[idx]
        best = max(best, float(np.max(col, initial=0.0)))
    return l1_bound * best if math.isfinite(best) else math.inf


def erm_lipschitz(rates, r):
    """‖∇F(θ)‖₂ ≤ c·(max|Δr_J| + Σ|Δr_R| + Σ|r_sel|): every block's mass is ≤ its denominator."""
    r, lay = np.asarray(r, float), rates.layout
    dJ = np.abs(r[lay.joint[:, :, 1]] - r[lay.joint[:, :, 0]])
    dR = np.abs(r[lay.rate[:, :, 1]] - r[lay.rate[:, :, 0]])
    return _c_const(rates) * float(dJ.max() + dR.sum() + np.abs(r[lay.selection]).sum())


def _on_workers(rates) -> bool:
    """Whether the rates' rows stay on Dask workers (read by passes only, #19)."""
    return bool(getattr(rates.data, "rows_on_workers", False))


def erm_gradient_fn(rates, r, device=None):
    """θ ↦ ∇_θ Σ_k r_k ℓ_k(θ, D): numpy (``rates.weighted_value_and_grad``) or torch.  On a
    Dask dataset always the former: one pass on the workers (``device`` is not used)."""
    r = np.asarray(r, float)
    if device is None or _on_workers(rates):
        # numpy; on a Dask dataset always: the gradient is a pass on the workers (#19)
        return lambda th: rates.weighted_value_and_grad(th, r)[1]
    import torch

    dev = "cuda" if device == "cuda" else "cpu"
    # X itself and the per-row clipping scale c (x̃_i = c_i·x_i): no clipped n×d copy (#19);
    # on the CPU the tensor shares X's memory (read only here, hence no warning about it)
    data = rates.data
    if data.is_materialized or dev == "cuda":
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            if data.is_materialized:
                X = torch.as_tensor(data.X, dtype=torch.float64, device=dev)
            else:   # taken by index: filled chunk by chunk on the device, never on the host (#19)
                X = torch.empty((data.n, data.n_features), dtype=torch.float64, device=dev)
                for ch in data.rows().chunks():
                    X[ch.start:ch.start + len(ch)] = torch.as_tensor(ch.X, device=dev)
        blocks = [(0, X)]
    else:   # taken by index, on the CPU: a tensor of X would be the copy; read the chunks
        blocks = None
    c = torch.as_tensor(rates.clip_scale, dtype=torch.float64, device=dev)
    sign = torch.as_tensor(np.where(data.y == 1, -1.0, 1.0), device=dev)
    coef = torch.as_tensor(row_coefficients(rates, r, "clamped"), device=dev)
    phiB, phi = rates.phi_at_bound, rates.surrogate_row.torch   # the one surrogate table

    def grad(theta):
        th = torch.as_tensor(theta, dtype=torch.float64, device=dev)
        gw = gb = None
        parts = blocks if blocks is not None else (     # one reused block, used at once
            (s, torch.as_tensor(Xb)) for s, Xb in row_blocks(data.rows()))
        for s, Xb in parts:
            e = s + Xb.shape[0]
            u = sign[s:e] * ((Xb @ th[:-1]) * c[s:e] + th[-1])
            val, der = phi(u)
            der = torch.where(val / phiB < 1.0, der / phiB, 0.0 * der)
            cd = coef[s:e] * der
            tw, tb = Xb.T @ (cd * c[s:e]), cd.sum()
            gw, gb = (tw, tb) if gw is None else (gw + tw, gb + tb)
        return torch.cat([gw, gb.reshape(1)])
    return grad


def erm_oracle(rates, r, steps, relation, *, draws, name="oracle", device=None,
               group_mass_bound=None):
    """Noisy projected gradient descent: ``steps`` full-batch steps whose noise is drawn from
    the scheduled Gaussian release ``name`` (noise multiplier z = σ/Δ = √steps/μ, so the call
    is μ-GDP) at this call's gradient sensitivity; returns (θ̄, sensitivity), θ̄ the average
    iterate.  Sensitivity 0: the exact minimizer, free (∇F is the same on every neighbour)."""
    from .._draws import gaussian_noise

    ds = rates.decisions
    P, R = ds.P, ds.radius
    if _on_workers(rates):      # the gradient is a pass on the Dask workers, not on a device
        device = None
    grad = erm_gradient_fn(rates, r, device)
    sens = erm_sensitivity(rates, r, relation, group_mass_bound)
    if sens == 0.0:
        return erm_exact(rates, r), 0.0
    # AdaGrad-norm steps η_k = 2R/√(2 Σ_{j≤k} ‖g_j‖²) on the noisy gradients (post-processing):
    # regret ≤ √2·2R·√(Σ‖g_k‖²), so E F(θ̄) − F* ≤ 2√2·R·√(L²/K + P·Δ²/μ²)
    theta, avg, sq = np.zeros(P), np.zeros(P), 0.0
    for _ in range(steps):
        avg += theta
        g = np.asarray(grad(theta).cpu() if device is not None else grad(theta), float)
        g = g + gaussian_noise(draws, name, (P,), sens)
        sq += float(g @ g)
        if sq > 0:
            theta = ds.project(theta - (2 * R / math.sqrt(2 * sq)) * g)
    return avg / steps, sens


def erm_exact(rates, r):
    """min_θ r·ℓ(θ, D) over the decision set (convex for sign-correct weights), no privacy.

    A ``SparseLinear`` set (ℓ1/structured ball, intercept box) goes to the certified ERM solver
    of the row-private backends at ε = ∞: solving over the ℓ2 ball and projecting afterwards
    (what the ℓ2 path below does) soft-thresholds the minimizer into an intercept-only rule.
    The ℓ2 ball of a ``LinearClassifier``: SLSQP from θ = 0.
    """
    from scipy.optimize import minimize

    from privfair.models.sparse import SparseLinear

    ds, r = rates.decisions, np.asarray(r, float)
    if isinstance(ds, SparseLinear):
        from ..erm.direct import private_weighted_erm

        return private_weighted_erm(rates, r, math.inf, 0.0)
    fun = lambda th: rates.weighted_value_and_grad(th, r)          # noqa: E731
    cons = {"type": "ineq", "fun": lambda th: ds.radius ** 2 - th @ th,
            "jac": lambda th: -2 * th}
    res = minimize(fun, np.zeros(ds.P), jac=True, method="SLSQP", constraints=[cons],
                   options={"maxiter": 500, "ftol": 1e-12})
    return ds.project(res.x)


def erm_sign_mask(rates):
    """Per coordinate of ℓ: +1 convex in θ (weight must be ≥ 0), −1 concave (≤ 0), 0 neither."""
    kind = {"convex": 1, "concave": -1}
    return np.array([kind.get(c, 0) for c in rates.curvature])


# ----------------------------------------------------------------------------- row oracle
#: methods of the row-private weighted-ERM oracle (backends/erm/direct.private_weighted_erm)
ROW_METHODS = ("objective_perturbation", "output_perturbation")


def row_oracle_reason(rates, method):
    """None, or why the row-private weighted-ERM oracle cannot run (checked before spending):
    the ERM family's own preconditions (``erm/preconditions.decision_set_reason``)."""
    from ..erm.preconditions import decision_set_reason

    why = decision_set_reason(rates, need_c2=method == "objective_perturbation",
                              need_strong=method == "output_perturbation",
                              l2_hint=(" or options oracle='objective_perturbation'"
                                       if method == "output_perturbation" else ""))
    if why is None:
        return None
    return ("under protect='row' the linear-classifier oracle is a row-private weighted ERM "
            f"({method}): " + why)


def row_oracle(rates, r, budget, method, *, draws=None, name="oracle", label=""):
    """θ from :func:`backends.erm.direct.private_weighted_erm` (public denominators n·q) at the
    budget's per-call (ε', δ'), drawn as the scheduled release ``name``: its declared
    (ε', δ') event is recorded before the ERM runs, which draws its noise through its own
    schedule (not recorded again; ``reduced_noise`` reaches it like every Draws).  ``draws``
    None (ε = ∞): the exact minimizer."""
    from ..erm.direct import private_weighted_erm

    if draws is None:
        return private_weighted_erm(rates, r, math.inf, 0.0, method=method)
    return draws.custom(name, lambda source, _scale: private_weighted_erm(
        rates, r, budget.oracle_epsilon, budget.oracle_delta, method=method, rng=source,
        accountant=None, label=label))


# ----------------------------------------------------------------------------- budgets
@dataclass(frozen=True)
class ReleaseBudget:
    """Each of the T − 1 loss releases: Laplace at ``epsilon`` (ℓ1 sensitivity), or Gaussian
    at noise multiplier 1/``mu`` (ℓ2), which is also (``epsilon``, ``delta``)-DP."""

    mechanism: str
    epsilon: float
    delta: float = 0.0
    mu: float | None = None


@dataclass(frozen=True)
class LoptBudget:
    """The per-call budget of a LOPT plan, fitted once at plan time (public).

    ``kind``: "pure" (exponential-mechanism oracle, Laplace releases), "gaussian" (the same
    oracle, Gaussian releases), "gdp" (noisy-GD oracle, μ-GDP per call, Gaussian releases) or
    "row" (row-private weighted ERM, (ε', δ') per call, Laplace releases); ``rule``: how the
    composition is proven."""

    kind: str
    T: int
    release: ReleaseBudget
    rule: str = ""
    oracle_epsilon: float | None = None
    oracle_delta: float = 0.0
    oracle_mu: float | None = None

    @property
    def scale(self) -> float:
        """The calibrated quantity: μ of a noisy-GD call ("gdp"), else the per-call ε'."""
        return self.oracle_mu if self.kind == "gdp" else self.oracle_epsilon


def _gauss_release(mu, delta, T) -> ReleaseBudget:
    from privfair.privacy import gaussian_epsilon

    d = delta / (4 * max(1, T - 1))
    return ReleaseBudget("gaussian", max(gaussian_epsilon(d, mu), 1e-12), d, mu)


def lopt_budget(kind, T, x, delta, share=1.0, rule="") -> LoptBudget:
    """The budget at scale x — ε' per oracle call, μ per call for "gdp" — with the releases at
    ``share``× it."""
    if kind == "gdp":
        return LoptBudget(kind, T, _gauss_release(share * x, delta, T), rule, oracle_mu=x)
    if kind == "gaussian":
        return LoptBudget(kind, T, _gauss_release(share * x, delta, T), rule, oracle_epsilon=x)
    d_call = delta / T if kind == "row" and delta > 0 else 0.0
    return LoptBudget(kind, T, ReleaseBudget("laplace", share * x), rule, oracle_epsilon=x,
                      oracle_delta=d_call)


def lopt_releases(budget: LoptBudget, *, dim, steps=1, n_candidates=None, method=None,
                  oracle_sensitivity=1.0, release_sensitivity=1.0, relation="sensitive"):
    """The plan's releases at ``budget``: "oracle" (T calls) and, for T > 1, "release" (T − 1
    loss vectors of ``dim`` coordinates).  With the default unit sensitivities these are the
    curves :func:`calibrate_lopt` composes (each depends only on ε or σ/Δ); the plan passes its
    planned bounds — a call's own Δ_t, of the public r_t, is at most the oracle's, and its
    draw uses Δ_t (:mod:`backends._draws`)."""
    from privfair.privacy import (Scheduled, approximate_event, exponential_event,
                                  gaussian_event, laplace_event, laplace_scale)

    T, b = budget.T, budget
    if b.kind == "gdp":
        z = math.sqrt(steps) / b.oracle_mu
        oracle = Scheduled("oracle", gaussian_event(
            oracle_sensitivity, z * oracle_sensitivity, count=T * steps, idealized=True,
            label=f"LOPT oracle: {T} noisy-GD calls × {steps} steps",
            sensitivity_source=("full-batch gradient of r·ℓ(θ): c·Σ_blocks |Δr|·(1/n, 2/max(1,nq)),"
                                " c = √(R²+1)/φ(B), at the planned sup over r (each call's own "
                                f"Δ_t, of the public r_t, is at most it); protect={relation!r}")))
    elif b.kind == "row":
        oracle = Scheduled("oracle", approximate_event(
            b.oracle_epsilon, b.oracle_delta, scale=1.0, count=T,
            theorem=(f"backends/{method}: its private weighted ERM is (ε', δ')-DP at the budget "
                     "it is given"),
            label=f"LOPT oracle: {T} row-private weighted ERM calls ({method})",
            sampler=f"drawn by backends/{method} through its own schedule (scale 1: a "
                    "placeholder; the ERM's noise scale is its own)"))
    else:
        oracle = Scheduled("oracle", exponential_event(
            oracle_sensitivity, b.oracle_epsilon, count=T, n_candidates=n_candidates,
            label=f"LOPT oracle: {T} exponential-mechanism calls",
            sensitivity_source=("Hölder: ‖r_S‖ (dual norm, public weights) × Δℓ, at most L_h·Δℓ "
                                "(each call's own Δ_t, of the public r_t, is what it draws with); "
                                f"protect={relation!r}")))
    out = [oracle]
    if T > 1:
        rel = b.release
        src = f"compiler: Δℓ on the support under protect={relation!r}"
        if rel.mechanism == "gaussian":
            ev = gaussian_event(release_sensitivity, release_sensitivity / rel.mu,
                                epsilon=rel.epsilon, delta=rel.delta, dimension=max(1, dim),
                                count=T - 1, sensitivity_source=src + " (ℓ2)",
                                label=f"LOPT loss releases ({T - 1})")
        else:
            ev = laplace_event(release_sensitivity, rel.epsilon,
                               scale=laplace_scale(release_sensitivity, rel.epsilon),
                               dimension=max(1, dim), count=T - 1,
                               sensitivity_source=src + " (ℓ1)",
                               label=f"LOPT loss releases ({T - 1})")
        out.append(Scheduled("release", ev, exact=True))
    return out


def calibrate_lopt(kind, T, epsilon, delta, share=1.0, *, dim, steps=1, spent=(),
                   thorough=False, method=None) -> LoptBudget:
    """The budget of T oracle calls and T − 1 releases at ``share``× the oracle's, fitted to
    (ε, δ) beside ``spent`` by :func:`privfair.privacy.calibrate` — the one bisection.

    Exact closed forms are its starting point ``hi``, checked by the accountant and then the
    whole answer: "pure" — basic composition ε/(T + (T − 1)·share) at δ = 0, the exact optimal
    composition (Kairouz, Oh & Viswanath 2017) of 2T − 1 equal events at δ > 0; "gdp" — exact
    μ-GDP composition, μ = μ_tot/√(T + (T − 1)·share²).  "gaussian" (RDP only, fast, for
    ranking; ``thorough`` refines above it with PLD) and "row" have none.

    Raises
    ------
    privfair.errors.BackendRefusedError
        When no positive budget fits (ε too small) — public, nothing spent.
    """
    from privfair.errors import BackendRefusedError, InvalidPrivacyError
    from privfair.privacy import calibrate, calibrate_gaussian_sigma, calibrate_optimal

    target = epsilon * (1 - 1e-6)
    hi, rules, rule = None, None, "accountant (the tightest of its rules)"
    if not spent and kind == "gdp":
        mu_tot = 1.0 / calibrate_gaussian_sigma(1.0, target, delta)
        hi, rule = mu_tot / math.sqrt(T + (T - 1) * share ** 2), "gdp (exact Gaussian composition)"
    elif not spent and kind == "pure" and delta == 0:
        hi, rule = target / (T + (T - 1) * share), "basic (= optimal for pure events at δ = 0)"
    elif not spent and kind == "pure" and share == 1.0:
        hi = calibrate_optimal(target, delta, 2 * T - 1).epsilon
        rule = "optimal composition (Kairouz, Oh & Viswanath 2017)"
    elif kind == "gaussian":
        rules, rule = ("rdp",), "bisection on the accountant (rdp)"

    def events(x):
        b = lopt_budget(kind, T, x, delta, share)
        return [r.event for r in lopt_releases(b, dim=dim, steps=steps, method=method)]
    key = ("lopt", kind, T, share, dim, steps, method)
    try:
        x = calibrate(events, epsilon, delta, spent=spent, hi=hi, rules=rules, key=key)
        if kind == "gaussian" and thorough:      # refine above the RDP answer with every rule
            x = calibrate(events, epsilon, delta, spent=spent, lo=x, key=key)
            rule = "bisection on the accountant (rdp, pld)"
    except InvalidPrivacyError as err:
        raise BackendRefusedError(
            "epsilon", epsilon, f"no per-call budget of {T} oracle calls and {T - 1} releases "
            f"composes to ε = {epsilon:.3g} at δ = {delta:.3g}: ε is too small for these "
            "releases") from err
    return lopt_budget(kind, T, x, delta, share, rule)


# ----------------------------------------------------------------------------- geometry
def start_point(rates):
    """The public x₀: 0 on joint frequencies, ½ on conditional rates (length K)."""
    return np.where(rates.is_conditional, 0.5, 0.0)


def geometry(rates, support):
    """Public bounds {norm: D} on ‖ℓ_S(p,D) − ℓ_S(p',D)‖ over mixtures p, p' ("hull"), on
    ‖ℓ_S(p,D) − x₀‖ ("start") and the box's ("box"), valid for every dataset: the layout's
    (:meth:`privfair.statistics.stats.Layout.geometry`, their one home)."""
    return rates.layout.geometry(support)


# ----------------------------------------------------------------------------- bound terms
def noise_mean_bound(release, sens, d, k, p):
    """Bounds {norm: b} on ‖mean of k release-noise vectors (d coordinates)‖ holding jointly
    with probability ≥ 1 − p (``release``: a :class:`ReleaseBudget`): Gaussian norm
    concentration, or the sub-exponential tail of a Laplace mean (E e^{λX} ≤ e^{2λ²b²} for
    |λ| ≤ 1/(2b))."""
    if release.mechanism == "gaussian":
        s = sens / release.mu / math.sqrt(k)
        l2 = s * (math.sqrt(d) + math.sqrt(2 * math.log(1 / p)))
        return {"l2": l2, "linf": min(l2, s * math.sqrt(2 * math.log(2 * d / p))),
                "l1": math.sqrt(d) * l2}
    b = sens / release.epsilon
    lg = math.log(2 * d / p)
    u = max(b * math.sqrt(8 * lg / k), 4 * b * lg / k)
    return {"linf": u, "l2": math.sqrt(d) * u, "l1": d * u}


def surrogate_gap(e, e_s):
    """A proven bound on sup over the box of e_s − e, together with e_s ≥ e; None if unproven.

    The compiler's rewrite lse(…, |u|, …) → lse(…, u, −u, …) raises lse by at most log(2)/η
    (each term at most doubles); other atoms pass their arguments' gaps on through their
    per-coordinate Lipschitz bounds, where they are non-decreasing in the raised arguments."""
    from privfair import expr as ex

    if e_s is e:
        return 0.0
    if isinstance(e, ex.Lse) and isinstance(e_s, ex.Lse) and len(e_s.args) > len(e.args):
        gaps, j = [0.0], 0
        for a in e.args:
            if isinstance(a, ex.Abs):
                if e_s.args[j] is not a.args[0]:
                    return None
                j += 2
            else:
                g = surrogate_gap(a, e_s.args[j])
                if g is None:
                    return None
                gaps.append(g)
                j += 1
        return math.log(2) / e.eta + max(gaps)
    if (not isinstance(e, ex.Atom) or type(e) is not type(e_s) or len(e.args) != len(e_s.args)):
        return None
    gam = []
    for a, a_s in zip(e.args, e_s.args):
        g = surrogate_gap(a, a_s)
        if g is None:
            return None
        gam += [g] * a.size
    gam = np.array(gam)
    pairs = list(zip(e.args, e_s.args))
    lo = np.concatenate([np.minimum(a.entry_bounds()[0], b.entry_bounds()[0]) for a, b in pairs])
    hi = np.concatenate([np.maximum(a.entry_bounds()[1], b.entry_bounds()[1]) for a, b in pairs])
    D = e.atom_dependency()
    moved = D & (gam > 0)[None, :]
    S = np.asarray(e.atom_monotonicity(lo, hi), float) * np.ones(D.shape)
    if not np.all(S[moved] >= 0):
        return None
    Gb = np.where(D, np.asarray(e.atom_coordinate_lipschitz(lo, hi), float) * np.ones(D.shape), 0.0)
    return float(np.max(Gb @ gam))


def lopt_bound(gap, oracle, noise, beta, D0, D, T, harmonic_minus_1=None):
    """backends/loss_vector/lopt.py's bound: gap + oracle + release noise + FTL regret β(D0² + D²(H_T − 1))/(2T).

    Pure; ``harmonic_minus_1`` may be a sympy expression (H_T − 1) to get the formula."""
    H = sum(1.0 / k for k in range(2, T + 1)) if harmonic_minus_1 is None else harmonic_minus_1
    return gap + oracle + noise + beta * (D0 ** 2 + D ** 2 * H) / (2 * T)


#: the exact exponential sampler's slack on [A] Thm 3.6 (its dyadic score grid and rounded-down
#: ε cost < 0.3%; 1% is charged)
SAMPLER_SLACK = 1.01


def finite_oracle_bound(sens_h, oracle_epsilon, m, T, rho=RHO, *, ops=F.NUMERIC):
    """[A] Thm 3.6 per call, union over T calls (:func:`privfair.analysis.formulas.a36_union_bound`,
    its one home), × :data:`SAMPLER_SLACK`.  ``ops``: ``privfair.analysis.formulas.symbolic()`` for the
    sympy form."""
    return SAMPLER_SLACK * F.a36_union_bound(sens_h, oracle_epsilon, m, T, rho, ops=ops)


def gd_oracle_bound(R, LF, K, P, dg, mu, sqrt=math.sqrt):
    """AdaGrad-norm noisy GD, K steps at μ-GDP: E excess ≤ 2√2·R·√(L²/K + P·Δ²/μ²)."""
    return 2 * sqrt(2) * R * sqrt(LF ** 2 / K + P * dg ** 2 / mu ** 2)


class Bound:
    """The predicted bound of backends/loss_vector/lopt.py (module docstring there) from public constants:
    the Analysis, n, ε, δ, α — never the data.  ``bound(T, cal)`` (``cal`` a
    :class:`LoptBudget`, or None at ε = ∞) is +inf when unproven."""

    def __init__(self, problem, analysis, kind, opts):
        self.an, self.kind, self.problem = analysis, kind, problem
        self.d = max(1, len(analysis.support))
        geo = geometry(problem.rates, analysis.support)
        self.D, self.D0, self.Dbox = geo["hull"], geo["start"], geo["box"]
        self.beta = analysis.smoothness.get("h_smooth", {})
        self.L = analysis.lipschitz.get("h_smooth", {})
        self.gd_cap = int(opts.get("gd_steps") or GD_STEPS)
        self.proven, self.why = True, ""
        gap = surrogate_gap(problem.f, analysis.f_smooth)
        if problem.g and gap is not None:
            gg = (surrogate_gap(problem.g[0], analysis.g_smooth[0])
                  if len(problem.g) == 1 else None)
            softplus = analysis.smoothing * math.log(2)
            gap = None if gg is None else gap + analysis.G * (gg + softplus)
        self.gap = gap
        printed = ((opts.get("weights") or "smooth") != "smooth"
                   or (opts.get("anchor") or "mean") != "mean")
        if printed:
            self.proven, self.why = False, "the printed Algorithm 2 variants have no regret bound"
        elif gap is None:
            self.proven, self.why = False, ("the smooth surrogate's distance to h is not proven "
                                            "(several constraints, or an unsupported rewrite)")
        elif all(self.beta.get(q) is None for q in self.D):
            why = "; ".join(f"{k}: {v}" for k, v in analysis.reasons.items()
                            if k.startswith("smoothness")) or "no constant proven"
            self.proven, self.why = False, f"h_s is not provably smooth: {why}"
        if kind == "finite":
            self.m = len(problem.rates.decisions)
            self.sens_h = analysis.sensitivity("h_smooth")
        else:
            rates, ds = problem.rates, problem.rates.decisions
            M = analysis.lipschitz.get("h_smooth", {}).get("linf")   # bounds ‖r‖₁
            self.P, self.R = ds.P, ds.radius
            self.LF = _c_const(rates) * M if M is not None else math.inf
            try:
                self.dg = erm_sensitivity_worst(rates, analysis.privacy.protect, M,
                                                analysis.support, analysis.group_mass.get("bound"))
            except Exception:  # noqa: BLE001 - no bound known yet
                self.dg = math.inf

    def steps(self, mu):
        if not (math.isfinite(self.dg) and self.dg > 0 and math.isfinite(self.LF)):
            return self.gd_cap
        k = math.ceil((self.LF * mu / (math.sqrt(self.P) * self.dg)) ** 2)
        return int(min(self.gd_cap, max(1, k)))

    def oracle_term(self, T, cal):
        if cal is None:
            return 0.0
        if self.kind == "finite":
            if self.sens_h is None:
                return math.inf
            return finite_oracle_bound(self.sens_h, cal.oracle_epsilon, self.m, T)
        mu = cal.oracle_mu
        return gd_oracle_bound(self.R, self.LF, self.steps(mu), self.P, self.dg, mu)

    def noise_term(self, T, cal):
        if cal is None or T == 1:
            return 0.0
        rel = cal.release
        sens = self.an.delta_l("l2" if rel.mechanism == "gaussian" else "l1")
        if sens is None:
            return math.inf
        total = 0.0
        for k in range(1, T):
            nb = noise_mean_bound(rel, sens, self.d, k, RHO / (2 * (T - 1)))
            total += min((min(self.beta[q] * nb[q], 2 * self.L[q]) if self.beta.get(q) is not None
                          else 2 * self.L[q]) * min(self.Dbox[q], self.D[q] + nb[q])
                         for q in self.D if self.L.get(q) is not None)
        return total / T

    def best_norm(self, T):
        """The norm q whose regret term is smallest (the bound takes the min over q)."""
        H = sum(1.0 / k for k in range(2, T + 1))
        return min((q for q in self.D if self.beta.get(q) is not None),
                   key=lambda q: self.beta[q] * (self.D0[q] ** 2 + self.D[q] ** 2 * H))

    def bound(self, T, cal):
        if not self.proven:
            return math.inf
        q = self.best_norm(T)
        return lopt_bound(self.gap, self.oracle_term(T, cal), self.noise_term(T, cal),
                          self.beta[q], self.D0[q], self.D[q], T)

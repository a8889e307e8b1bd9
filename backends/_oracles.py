"""The LOPT backend's building blocks: private oracles, their sensitivities, the budget split
and the terms of the predicted bound.  See :mod:`backends.lopt` for the algorithm and proofs.

* :func:`finite_oracle` — the exponential mechanism over a finite C with score −r·ℓ(c, D)
  ([A] Thm 5.10, finite case); sensitivity min_q ‖r_S‖_{q*}·Δℓ_q from the public weights.
* :func:`erm_oracle` — noisy projected full-batch gradient descent on θ ↦ Σ_k r_k ℓ_k(θ, D)
  over the ℓ2 ball (Bassily, Smith & Thakurta 2014), gradient sensitivity from
  :func:`erm_terms`; :func:`erm_exact` — the ε = ∞ reference (scipy SLSQP).
* :func:`calibrate` — per-call budgets for T oracle calls and T − 1 loss releases, by the
  accountant's rules (exact: basic, optimal, GDP; bisection on RDP/PLD otherwise).
* :func:`surrogate_gap` — a proven bound on sup(e_s − e) for the compiler's smooth rewrites;
  :func:`geometry` — public diameters of the set of loss vectors; :class:`Bound` — the
  predicted excess risk the planner ranks by.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ._erm import row_coefficients
from .exponential import RHO

DUAL_ORD = {"l1": np.inf, "l2": 2, "linf": 1}
GD_STEPS = 100           # cap on noisy-GD steps per linear-classifier oracle call
CALIBRATE_SHRINK = 40    # calibrate: the start ε' is divided by 4 at most this many times


# ----------------------------------------------------------------------------- finite oracle
def score_sensitivity(r_S, analysis):
    """(Δ, norm): |r·ℓ_S(c,D) − r·ℓ_S(c,D')| ≤ ‖r_S‖_{q*}·Δℓ_q for every c (Hölder), best q."""
    best = (None, None)
    for q, dual in DUAL_ORD.items():
        d = analysis.delta_l(q)
        if d is not None:
            v = float(np.linalg.norm(np.asarray(r_S, dtype=float), dual)) * d
            if best[0] is None or v < best[0]:
                best = (v, q)
    return best


def finite_oracle(L_S, r_S, epsilon, analysis, *, rng, accountant, xp_L=None, mult=1.0,
                  label=""):
    """Index of a private approximate minimizer of r·ℓ(c, D) (exact argmin when ε = ∞)."""
    from privfair.privacy import exponential_event, exponential_mechanism

    if xp_L is not None:                                  # torch: the (m, |S|) product on device
        import torch

        scores = -(xp_L @ torch.as_tensor(r_S, dtype=xp_L.dtype, device=xp_L.device))
    else:
        scores = -(L_S @ r_S)
    if epsilon is None:
        return int(scores.argmax()), None
    sens, norm = score_sensitivity(r_S, analysis)
    if not sens:    # the scores are the same on every neighbour: the exact argmax is free
        return int(scores.argmax()), 0.0
    source = (f"Hölder: ‖r_S‖ (dual of {norm}, public weights) × Δℓ({norm}) = {sens:.4g} "
              f"under protect={analysis.privacy.protect!r}")
    if mult == 1.0:
        idx = exponential_mechanism(scores, sens, epsilon, rng, accountant=accountant,
                                    sensitivity_source=source, label=label)
    else:   # test-only negative control: less noise than the recorded event claims
        if accountant is not None:
            accountant.record(exponential_event(sens, epsilon, n_candidates=len(L_S),
                                                sensitivity_source=source, label=label))
        idx = exponential_mechanism(scores, sens * mult, epsilon, rng)
    return int(idx), sens


def release_loss(value, spec, analysis, *, rng, accountant, mult=1.0, label=""):
    """ℓ_S(c_t, D) + noise: Laplace (Δℓ₁) or Gaussian (Δℓ₂) as planned in ``spec``."""
    from privfair.privacy import gaussian_mechanism, laplace_mechanism

    gauss = spec["mechanism"] == "gaussian"
    norm = "l2" if gauss else "l1"
    sens = analysis.delta_l(norm)
    source = f"compiler: Δℓ({norm}) on the support under protect={analysis.privacy.protect!r}"
    acc = accountant if mult == 1.0 else None
    if gauss:
        out = gaussian_mechanism(value, sens * mult, spec["epsilon"], spec["delta"], rng,
                                 accountant=acc, sensitivity_source=source, label=label,
                                 return_event=True)
    else:
        out = laplace_mechanism(value, sens * mult, spec["epsilon"], rng, accountant=acc,
                                sensitivity_source=source, label=label, return_event=True)
    if mult != 1.0 and accountant is not None:   # record the nominal event of the control
        from dataclasses import replace

        ev = out.event
        accountant.record(replace(ev, sensitivity=sens, scale=ev.scale / mult))
    return np.asarray(out.value, dtype=float)


# ----------------------------------------------------------------------------- ERM oracle
def _c_const(rates):
    """sup_i ‖∂(row i's mass on ŷ=1)/∂θ‖₂ ≤ sup φ'/φ(B) · ‖(x̃, 1)‖₂ = √(R² + 1)/φ(B)."""
    return math.sqrt(rates.feature_bound ** 2 + 1.0) / rates._phiB


def erm_terms(rates, relation, group_mass_bound=None):
    """For every allowed move of one row, the gradient change bound as Σ_j w_j |α_j·r|.

    ∇F(θ) = Σ_i a_i ∇m_i(θ) with ‖∇m_i‖ ≤ c (:func:`_c_const`) and a_i = Δr_J(g,y)/n +
    Δr_R(g,y)/d_{g,y} + r_sel(g)/d_g (Δr = weight on ŷ=1 minus weight on ŷ=0, d the clamped
    denominators).  When the row leaves (joins) a conditional block of clamp Q = n·q, the
    block's term Δr_R·Σ_{i∈B}∇m_i/d_B moves by ≤ 2c|Δr_R|/max(1, Q) (its own term plus the
    rescaling of the others, ≤ (m−1)c(1/d' − 1/d) + c/d); the joint term moves by the change
    of its own coefficient.  Returns a list, one per move, of (A (terms × K), w (terms,)).
    """
    q, qg = rates._bound(group_mass_bound)
    n, G, c = rates.n, rates.G, _c_const(rates)
    K = rates.K

    def e(*pairs):
        v = np.zeros(K)
        for k, s in pairs:
            v[int(k)] += s
        return v

    J = {(g, y): e((rates._joint[g, y, 1], 1), (rates._joint[g, y, 0], -1))
         for g in range(G) for y in (0, 1)}
    R = {(g, y): e((rates._rate[g, y, 1], 1), (rates._rate[g, y, 0], -1))
         for g in range(G) for y in (0, 1)}
    S = {g: e((rates._sel[g], 1)) for g in range(G)}
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
    r = np.asarray(r, float)
    dJ = np.abs(r[rates._joint[:, :, 1]] - r[rates._joint[:, :, 0]])
    dR = np.abs(r[rates._rate[:, :, 1]] - r[rates._rate[:, :, 0]])
    return _c_const(rates) * float(dJ.max() + dR.sum() + np.abs(r[rates._sel]).sum())


def erm_gradient_fn(rates, r, device=None):
    """θ ↦ ∇_θ Σ_k r_k ℓ_k(θ, D): numpy (``rates.weighted_value_and_grad``) or torch."""
    r = np.asarray(r, float)
    if device is None:
        return lambda th: rates.weighted_value_and_grad(th, r)[1]
    import torch

    dev = "cuda" if device == "cuda" else "cpu"
    X = torch.as_tensor(rates._Xc, dtype=torch.float64, device=dev)
    sign = torch.as_tensor(np.where(rates.data.y == 1, -1.0, 1.0), device=dev)
    coef = torch.as_tensor(row_coefficients(rates, r, "clamped"), device=dev)
    phiB, kind = rates._phiB, rates.surrogate

    def grad(theta):
        th = torch.as_tensor(theta, dtype=torch.float64, device=dev)
        u = sign * (X @ th[:-1] + th[-1])
        if kind == "logistic":
            val, der = torch.nn.functional.softplus(u), torch.sigmoid(u)
        elif kind == "smoothed_hinge":
            val = torch.where(u <= -1, 0.0 * u, torch.where(u < 0, 0.5 * (1 + u) ** 2, 0.5 + u))
            der = torch.clamp(1 + u, 0.0, 1.0)
        else:
            val, der = torch.clamp(1 + u, min=0.0), (u > -1).to(u.dtype)
        der = torch.where(val / phiB < 1.0, der / phiB, 0.0 * der)
        cd = coef * der
        return torch.cat([X.T @ cd, cd.sum().reshape(1)])
    return grad


def erm_oracle(rates, r, mu, steps, relation, *, rng, accountant, device=None, mult=1.0,
               label="", group_mass_bound=None):
    """Noisy projected gradient descent, ``steps`` full-batch steps at noise multiplier
    z = √steps/μ (so the call is μ-GDP); returns (θ̄, sensitivity) — θ̄ the average iterate."""
    from privfair.privacy import gaussian_event, gaussian_noise_vector

    ds = rates.decisions
    P, R = ds.P, ds.radius
    grad = erm_gradient_fn(rates, r, device)
    sens = erm_sensitivity(rates, r, relation, group_mass_bound)
    if sens == 0.0:   # ∇F, hence F up to a constant, is the same on every neighbour
        return erm_exact(rates, r), 0.0
    sigma = math.sqrt(steps) / mu * sens
    if accountant is not None:
        accountant.record(gaussian_event(
            sens, sigma, count=steps, idealized=True, label=label,
            sensitivity_source=("full-batch gradient of r·ℓ(θ): c·Σ_blocks |Δr|·(1/n, 2/max(1,nq)),"
                                f" c = √(R²+1)/φ(B); protect={relation!r}")))
    if device is not None:
        import torch

        noise = gaussian_noise_vector((steps, P), sigma * mult, rng, namespace="torch",
                                      device="cuda" if device == "cuda" else None,
                                      dtype=torch.float64).cpu().numpy()
    else:
        noise = gaussian_noise_vector((steps, P), sigma * mult, rng)
    # AdaGrad-norm steps η_k = 2R/√(2 Σ_{j≤k} ‖g_j‖²) on the noisy gradients (post-processing):
    # regret ≤ √2·2R·√(Σ‖g_k‖²), so E F(θ̄) − F* ≤ 2√2·R·√(L²/K + P·Δ²/μ²)
    theta, avg, sq = np.zeros(P), np.zeros(P), 0.0
    for k in range(steps):
        avg += theta
        g = np.asarray(grad(theta).cpu() if device is not None else grad(theta), float) + noise[k]
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

    from privfair.sparse import SparseLinear

    ds, r = rates.decisions, np.asarray(r, float)
    if isinstance(ds, SparseLinear):
        from ._erm import private_weighted_erm

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
#: methods of the row-private weighted-ERM oracle (backends/_erm.private_weighted_erm)
ROW_METHODS = ("objective_perturbation", "output_perturbation")


def row_oracle_reason(rates, method):
    """None, or why the row-private weighted-ERM oracle cannot run (checked before spending)."""
    from privfair.sparse import LOSSES, SparseLinear

    ds = rates.decisions
    if not isinstance(ds, SparseLinear):
        return ("under protect='row' the linear-classifier oracle is a row-private weighted ERM "
                "(objective/output perturbation), which needs a pf.SparseLinear decision set "
                f"with a declared feature_bound; got {type(ds).__name__}")
    if ds.feature_bound is None or abs(ds.feature_bound - rates.feature_bound) > 1e-12:
        return (f"unbounded or mismatched features: SparseLinear(feature_bound={ds.feature_bound})"
                f" must equal pf.rates(..., feature_bound={rates.feature_bound}) — rows are "
                "clipped to that public bound, without which no sensitivity is bounded")
    loss = LOSSES[rates.surrogate]
    if not loss.smooth:
        return f"the '{rates.surrogate}' surrogate is not smooth: use 'logistic'"
    if method == "objective_perturbation" and not loss.twice_differentiable:
        return (f"objective perturbation needs a C² loss; '{rates.surrogate}' is not — use "
                "surrogate='logistic' or options oracle='output_perturbation' with l2 > 0")
    if method == "output_perturbation" and not ds.l2 > 0:
        return "output perturbation needs an explicit ℓ2 term: pf.SparseLinear(..., l2=Λ > 0)"
    return None


def row_oracle(rates, r, spec, method, *, rng, accountant, label=""):
    """θ from :func:`backends._erm.private_weighted_erm` (public denominators n·q; records the
    mechanism's event before drawing); ε = ∞ (spec None): the exact minimizer."""
    from ._erm import private_weighted_erm

    eps, delta = (math.inf, 0.0) if spec is None else (spec["epsilon"], spec["delta"])
    return private_weighted_erm(rates, r, eps, delta, method=method, rng=rng,
                                accountant=accountant, label=label)


def calibrate_row(T, epsilon, delta, share, method="objective_perturbation", existing=()):
    """Per-call (ε', δ') of T row-private ERM calls and ε of T − 1 Laplace loss releases at
    ``share``·ε', fitted to (ε, δ) by the accountant's rules (:func:`backends._erm.fit_scale`)."""
    from privfair.privacy import approximate_event, laplace_event, pure_event

    from ._erm import fit_cached

    d_call = delta / T if delta > 0 else 0.0

    def events(x):
        ev = ([approximate_event(x, d_call, theorem=method, count=T)] if d_call > 0
              else [pure_event(x, theorem=method, count=T)])
        if T > 1:
            ev.append(laplace_event(1.0, share * x, dimension=2, count=T - 1))
        return ev
    x = fit_cached(("lopt-row", T, share, method), events, epsilon * (1 - 1e-6), delta,
                   tuple(existing), epsilon)
    return {"oracle_spec": {"epsilon": x, "delta": d_call}, "oracle_epsilon": x,
            "release": {"mechanism": "laplace", "epsilon": share * x},
            "rule": "accountant (basic / advanced / optimal composition of (ε', δ') calls)"}


# ----------------------------------------------------------------------------- calibration
def _compose(events, delta, rules):
    from privfair.privacy import Accountant

    acc = Accountant(delta=delta or None, rules=rules)
    acc.extend(events)
    return acc.total(delta if delta else None).epsilon


def planned_events(cal, T, steps=1, dim=1):
    """The events of a run (sensitivity 1: the curves depend only on ε and σ/Δ)."""
    from privfair.privacy import exponential_event, gaussian_event, laplace_event

    out = []
    if "oracle_mu" in cal:
        z = math.sqrt(steps) / cal["oracle_mu"]
        out.append(gaussian_event(1.0, z, count=T * steps, idealized=True))
    else:
        out.append(exponential_event(1.0, cal["oracle_epsilon"], count=T))
    rel = cal["release"]
    if T > 1 and rel["mechanism"] == "laplace":
        out.append(laplace_event(1.0, rel["epsilon"], dimension=max(2, dim), count=T - 1))
    elif T > 1:
        out.append(gaussian_event(1.0, 1.0 / rel["mu"], epsilon=rel["epsilon"],
                                  delta=rel["delta"], count=T - 1))
    return out


def _gauss_release(mu, delta, T):
    from privfair.privacy import gaussian_epsilon

    d = delta / (4 * max(1, T - 1))
    return {"mechanism": "gaussian", "mu": mu, "delta": d,
            "epsilon": max(gaussian_epsilon(d, mu), 1e-12)}


@functools.lru_cache(maxsize=1024)
def calibrate(kind, T, epsilon, delta, share=1.0, thorough=False):
    """Per-call budget of T oracle calls and T − 1 releases (release at ``share``× the oracle's).

    kind "pure": Laplace releases, oracle ε' — basic composition (δ = 0) or the exact optimal
    composition (δ > 0, share 1).  "gaussian": Gaussian releases, bisection for the largest ε'
    the accountant proves (RDP; ``thorough`` adds PLD).  "gdp": Gaussian oracle and releases,
    exact μ-GDP.  Returns a dict with ``oracle_epsilon`` or ``oracle_mu``, ``release``, ``rule``.
    """
    from privfair.privacy import calibrate_gaussian_sigma, calibrate_optimal

    target = epsilon * (1 - 1e-6)
    if kind == "gdp":
        mu_tot = 1.0 / calibrate_gaussian_sigma(1.0, target, delta)
        mu = mu_tot / math.sqrt(T + (T - 1) * share ** 2)
        return {"oracle_mu": mu, "release": _gauss_release(share * mu, delta, T),
                "rule": "gdp (exact Gaussian composition)"}
    if kind == "pure":
        if delta == 0:
            e = target / (T + (T - 1) * share)
            return {"oracle_epsilon": e, "release": {"mechanism": "laplace", "epsilon": share * e},
                    "rule": "basic (= optimal for pure events at δ = 0)"}
        e = calibrate_optimal(target, delta, 2 * T - 1).epsilon
        return {"oracle_epsilon": e, "release": {"mechanism": "laplace", "epsilon": e},
                "rule": "optimal composition (Kairouz, Oh & Viswanath 2017)"}
    def total(e, rules):
        cal = {"oracle_epsilon": e, "release": _gauss_release(share * e, delta, T)}
        try:
            return _compose(planned_events(cal, T), delta, rules)
        except Exception:  # noqa: BLE001 - a rule refusing is "does not fit"
            return math.inf

    def bisect(lo, hi, rules, steps):      # log-scale; total(exp(lo)) <= target is kept
        for _ in range(steps):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if total(math.exp(mid), rules) <= target else (lo, mid)
        return lo
    def too_small(tried):
        from privfair.errors import BackendRefusedError

        return BackendRefusedError(
            "epsilon", epsilon,
            f"no per-call budget of {T} oracle calls and {T - 1} Gaussian releases composes "
            f"to ε = {epsilon:.3g} at δ = {delta:.3g} (tried down to {tried:.3g} per call): "
            "ε is too small for these releases")
    start = target / (2 * T * (1 + share))
    if not start > 0:                                       # underflow: ε is subnormal
        raise too_small(start)
    lo = math.log(start)
    # Shrink the start until it fits, at most CALIBRATE_SHRINK times (a factor 4 each): the
    # Gaussian releases' own ε has a floor (1e-12), RDP's conversion one of its own, and a
    # float ε' underflows, so below some target nothing fits — then refuse, do not loop.
    for _ in range(CALIBRATE_SHRINK):
        if total(math.exp(lo), ("rdp",)) <= target:
            break
        lo -= math.log(4.0)
    else:
        raise too_small(math.exp(lo))
    e = math.exp(bisect(lo, math.log(target), ("rdp",), 30))
    rules = ("rdp",)
    if thorough:                                            # PLD is tighter, and slower
        rules = ("rdp", "pld")
        e = math.exp(bisect(math.log(e), math.log(min(target, 1.6 * e)), rules, 14))
    return {"oracle_epsilon": e, "release": _gauss_release(share * e, delta, T),
            "rule": "bisection on the accountant (" + ", ".join(rules) + ")"}


# ----------------------------------------------------------------------------- geometry
def start_point(rates):
    """The public x₀: 0 on joint frequencies, ½ on conditional rates (length K)."""
    return np.where(rates.is_conditional, 0.5, 0.0)


def _blocks(rates):
    """(joint blocks, conditional blocks, selection coordinates) as lists of index arrays."""
    G, L = rates.G, rates.L
    joint = [rates._joint[g, y] for g in range(G) for y in range(L)]
    cond = [rates._rate[g, y] for g in range(G) for y in range(L)]
    sel = [] if rates._sel is None else [np.array([k]) for k in rates._sel]
    return joint, cond, sel


def geometry(rates, support):
    """Public bounds {norm: D} on ‖ℓ_S(p,D) − ℓ_S(p',D)‖ over mixtures p, p' ("hull") and on
    ‖ℓ_S(p,D) − x₀‖ ("start"), valid for every dataset.  A joint block (g, y) holds the fixed
    mass n_gy/n (Σ = 1) and a decision only moves it between its cells; a conditional block's
    rates sum to n_gy/max(n_gy, nq) ≤ 1; a selection rate lies in [0, 1]."""
    S = np.zeros(rates.K, dtype=bool)
    S[list(support)] = True
    joint, cond, sel = _blocks(rates)
    kj = [int(S[b].sum()) for b in joint]
    kc = [int(S[b].sum()) for b in cond] + [int(S[b].sum()) for b in sel]
    c1 = lambda k: min(k, 2)                                     # noqa: E731
    c2 = lambda k: 0 if k == 0 else (1 if k == 1 else 2)         # noqa: E731
    hull = {"l1": max([c1(k) for k in kj], default=0) + sum(c1(k) for k in kc),
            "l2": math.sqrt(max([c2(k) for k in kj], default=0) + sum(c2(k) for k in kc)),
            "linf": 1.0}
    nj, nc = int(S[~rates.is_conditional].sum()), int(S[rates.is_conditional].sum())
    start = {"l1": (1.0 if nj else 0.0) + 0.5 * nc,
             "l2": math.sqrt((1.0 if nj else 0.0) + 0.25 * nc),
             "linf": 1.0 if nj else 0.5}
    d = max(1, int(S.sum()))
    box = {"l1": float(d), "l2": math.sqrt(d), "linf": 1.0}
    hull = {q: min(hull[q], box[q]) for q in box}
    return {"hull": hull, "start": {q: min(start[q], box[q]) for q in box}, "box": box}


# ----------------------------------------------------------------------------- bound terms
def noise_mean_bound(release, sens, d, k, p):
    """Bounds {norm: b} on ‖mean of k release-noise vectors (d coordinates)‖ holding jointly
    with probability ≥ 1 − p: Gaussian norm concentration, or the sub-exponential tail of a
    Laplace mean (E e^{λX} ≤ e^{2λ²b²} for |λ| ≤ 1/(2b))."""
    if release["mechanism"] == "gaussian":
        s = sens / release["mu"] / math.sqrt(k)
        l2 = s * (math.sqrt(d) + math.sqrt(2 * math.log(1 / p)))
        return {"l2": l2, "linf": min(l2, s * math.sqrt(2 * math.log(2 * d / p))),
                "l1": math.sqrt(d) * l2}
    b = sens / release["epsilon"]
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
    lo = np.concatenate([np.minimum(a._bounds()[0], b._bounds()[0]) for a, b in pairs])
    hi = np.concatenate([np.maximum(a._bounds()[1], b._bounds()[1]) for a, b in pairs])
    D = e._dependency()
    moved = D & (gam > 0)[None, :]
    S = np.asarray(e._local_mono(lo, hi), float) * np.ones(D.shape)
    if not np.all(S[moved] >= 0):
        return None
    Gb = np.where(D, np.asarray(e._local_gbound(lo, hi), float) * np.ones(D.shape), 0.0)
    return float(np.max(Gb @ gam))


def lopt_bound(gap, oracle, noise, beta, D0, D, T, harmonic_minus_1=None):
    """backends/lopt.py's bound: gap + oracle + release noise + FTL regret β(D0² + D²(H_T − 1))/(2T).

    Pure; ``harmonic_minus_1`` may be a sympy expression (H_T − 1) to get the formula."""
    H = sum(1.0 / k for k in range(2, T + 1)) if harmonic_minus_1 is None else harmonic_minus_1
    return gap + oracle + noise + beta * (D0 ** 2 + D ** 2 * H) / (2 * T)


def finite_oracle_bound(sens_h, oracle_epsilon, m, T, rho=RHO, log=math.log):
    """[A] Thm 3.6 per call, union over T calls: 2Δ/ε'·log(2mT/ρ) (×1.01: the sampler's dyadic
    score grid and rounded-down ε, < 0.3%)."""
    return 2.02 * sens_h / oracle_epsilon * log(2 * m * T / rho)


def gd_oracle_bound(R, LF, K, P, dg, mu, sqrt=math.sqrt):
    """AdaGrad-norm noisy GD, K steps at μ-GDP: E excess ≤ 2√2·R·√(L²/K + P·Δ²/μ²)."""
    return 2 * sqrt(2) * R * sqrt(LF ** 2 / K + P * dg ** 2 / mu ** 2)


class Bound:
    """The predicted bound of backends/lopt.py (module docstring there) from public constants:
    the Analysis, n, ε, δ, α — never the data.  ``bound(T, cal)`` is +inf when unproven."""

    def __init__(self, problem, analysis, kind, opts):
        self.an, self.kind, self.problem = analysis, kind, problem
        self.d = max(1, len(analysis.support))
        geo = geometry(problem.rates, analysis.support)
        self.D, self.D0, self.Dbox = geo["hull"], geo["start"], geo["box"]
        self.beta = analysis.smoothness.get("h_smooth", {})
        self.L = analysis.lipschitz.get("h_smooth", {})
        self.gd_cap = int(opts.get("gd_steps", GD_STEPS))
        self.proven, self.why = True, ""
        gap = surrogate_gap(problem.f, analysis.f_smooth)
        if problem.g and gap is not None:
            gg = (surrogate_gap(problem.g[0], analysis.g_smooth[0])
                  if len(problem.g) == 1 else None)
            softplus = analysis.smoothing * math.log(2)
            gap = None if gg is None else gap + analysis.G * (gg + softplus)
        self.gap = gap
        if opts.get("weights", "smooth") != "smooth" or opts.get("anchor", "mean") != "mean":
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
            return finite_oracle_bound(self.sens_h, cal["oracle_epsilon"], self.m, T)
        mu = cal["oracle_mu"]
        return gd_oracle_bound(self.R, self.LF, self.steps(mu), self.P, self.dg, mu)

    def noise_term(self, T, cal):
        if cal is None or T == 1:
            return 0.0
        rel = cal["release"]
        sens = self.an.delta_l("l2" if rel["mechanism"] == "gaussian" else "l1")
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

"""The constraint form of the row-private ERM backends (docs/sparsity.md §4): a private
Lagrangian search for one fairness constraint g(ℓ) = φ(d·ℓ) ≤ 0 — the multiplier range and
sensitivities (:func:`lagrange_setup`), the plan-time budget split and schedule
(:func:`lagrange_budget`, :func:`lagrange_releases`) and the run (:func:`lagrange_run`: probe,
interpolated multiplier, final ERM, repair mixture).

Reads ℓ's layout through the public :class:`privfair.statistics.layout.Layout` of the rates
(``rates.layout``; no private attribute of another module).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from privfair.privacy import laplace_event
from privfair.privacy.release import Scheduled, calibrate
from privfair.statistics.stats import Rates

from .reduction import (NeedsGroupMass, cell_coefficients, constraint_direction, erm_from_problem,
                        multiplier_range, objective_gradient)
from .releases import ERMBudget, LagrangeBudget
from .repair import repair_weights

#: defaults of the constraint form (public hyper-parameters; docs/sparsity.md §4)
PROBE_SHARE = 0.0        # ε of a ν = 0 probe ERM ÷ ε of the final ERM (0: the labels' statistic)
RELEASE_SHARE = 0.06     # ε of each Laplace release of u ÷ ε of the final ERM
ZERO_FRACTION = 0.85     # a-priori zero crossing of u(ν), as a fraction of the convex range
RHO = 0.05               # failure probability of the release margin


@dataclass
class LagrangeSetup:
    """The public data of the multiplier rule for one constraint g(ℓ) = φ(d·ℓ) ≤ 0."""

    r_f: np.ndarray
    d: np.ndarray
    nu_range: tuple
    support: np.ndarray
    delta_u: float                 # ℓ1 (= |·|) sensitivity of the scalar u = d·ℓ_S (0-1 rates)
    const_u: float | None          # u of the constant rule ŷ = 0 when it is public, else None
    probe_share: float = PROBE_SHARE
    empirical: bool = False


def _const_u(rates, d, S):
    """d·ℓ of the constant rule ŷ = 0 when it does not depend on the data: ŷ = 0 puts no mass
    on fp/tp (joint) or fpr/tpr/selection, and all of a block's mass on tnr/fnr (= 1); only
    the joint tn/fn coordinates hold data-dependent masses."""
    joint0 = rates.layout.joint[:, :, 0].ravel()
    if np.any(d[joint0] != 0):
        return None
    ones = rates.layout.rate[:, :, 0].ravel()
    return float(d[ones].sum())


def lagrange_setup(problem, analysis, probe_share=PROBE_SHARE, empirical=False):
    """None when q is not yet known (ranking before a private group-mass estimate)."""
    rates = problem.rates
    r_f = objective_gradient(problem)
    g = problem.g[0]
    d = constraint_direction(g, problem.variable.size)
    try:
        a_f = cell_coefficients(rates, r_f, "empirical" if empirical else "public")
        a_d = cell_coefficients(rates, d, "empirical" if empirical else "public")
    except NeedsGroupMass:
        return None
    lo, hi = multiplier_range(a_f, a_d)
    S = np.asarray(sorted(g.support()), dtype=int)
    du = math.nan
    if rates.group_mass()[0] is not None or not rates.uses_conditional(S):
        # |d·Δℓ_S| ≤ ‖d_S‖∞·‖Δℓ_S‖₁ (Hölder) with the compiler's Δℓ₁ under row replacement
        du = float(np.abs(d[S]).max()) * float(rates.delta_l("l1", "row", support=S))
    return LagrangeSetup(r_f, d, (lo, hi), S, du, _const_u(rates, d, S), float(probe_share),
                         bool(empirical))


#: ERM calls of the constraint form: a probe at ν = 0 and the final ERM
LAGRANGE_CALLS = 2


def lagrange_budget(backend, erm0, setup, epsilon, delta, *, relation="row", rules=None,
                    release_share=RELEASE_SHARE, spent=()):
    """The constraint form's :class:`LagrangeBudget`, fitted at plan time by
    :func:`privfair.privacy.release.calibrate`: the final ERM at ε = x, the probe at
    probe_share·x, each of the two Laplace releases of u at release_share·x (pure ε: the scalar
    has a tiny ℓ1 sensitivity, δ would only cost); δ/8 to the probe when there is one."""
    dc = delta / 8 if delta > 0 else 0.0
    ps, rs = setup.probe_share, release_share
    d_final = delta - dc if ps > 0 else delta

    def events(x):      # in recording order, one event per release (as the run records them)
        out = []
        if ps > 0:
            out += backend.planned_events(erm0, ERMBudget(ps * x, dc), relation=relation)
        out += [laplace_event(1.0, rs * x)]
        out += backend.planned_events(erm0, ERMBudget(x, d_final), relation=relation)
        return out + [laplace_event(1.0, rs * x)]
    x = calibrate(events, epsilon, delta, hi=epsilon, rules=rules, spent=tuple(spent),
                  key=(backend.name, "lagrange2", ps, rs))
    return LagrangeBudget(ERMBudget(ps * x, dc) if ps > 0 else None, ERMBudget(x, d_final),
                          rs * x)


def nu_interval(setup):
    """[ν_lo, ν_hi] ∋ every multiplier :func:`lagrange_run` can pick for the final ERM (0, or a
    point between 0 and ν_side, ν_side an end of the convex range — ±1 where that is infinite)."""
    lo, hi = setup.nu_range
    return (min(0.0, lo if math.isfinite(lo) else -1.0), max(0.0, hi if math.isfinite(hi) else 1.0))


def final_weight_bound(problem, setup):
    """A public ω ≥ the row-weight bound of the final ERM at every ν₁ in :func:`nu_interval`:
    its cell weights a_f + ν·a_d are affine in ν, so max_cells |·| is convex in ν and largest
    at an end of the interval."""
    return max(erm_from_problem(problem, setup.r_f + nu * setup.d, setup.empirical)
               .row_weight_bound for nu in nu_interval(setup))


def with_weight_bound(erm, omega):
    """``erm`` with the public row-weight bound ω (≥ its own: every w_i ≤ ω/n still holds), so
    its sensitivities are the ones a release scheduled for ω was calibrated to."""
    if omega < erm.row_weight_bound * (1 - 1e-12):     # a bug, not a data-dependent event
        raise RuntimeError(f"internal error: the final ERM's weight bound "
                           f"{erm.row_weight_bound:.6g} exceeds the scheduled {omega:.6g}")
    return replace(erm, row_weight_bound=float(omega), meta={})


#: names of the constraint form's scheduled releases
PROBE, FINAL = "probe ERM: ", "final ERM: "
U_PROBE, U_FINAL = "constraint statistic u₀", "constraint statistic u₁"


def lagrange_releases(backend, erm0, setup, budget, *, relation, options, label, rules=None,
                      spent=()):
    """The constraint form's scheduled releases at ``budget`` (:class:`LagrangeBudget`)."""
    def u_release(name, what):
        return Scheduled(name, laplace_event(
            setup.delta_u, budget.release_epsilon, label=f"{label}: {name} ({what})",
            sensitivity_source=("‖d_S‖∞·Δℓ₁(S) of the 0-1 statistics g reads (compiler, "
                                "protect='row'; Hölder)")), exact=True)
    out = []
    if budget.probe is not None:
        out += backend.releases(erm0, budget.probe, relation=relation, options=options,
                                label=f"{label}: probe ERM at ν = 0", rules=rules, prefix=PROBE,
                                spent=spent)
    out.append(u_release(U_PROBE, "the probe" if budget.probe is not None
                         else "the labels, the rule ŷ = y"))
    out += backend.releases(with_weight_bound(erm0, budget.final_weight_bound), budget.final,
                            relation=relation, options=options, label=f"{label}: final ERM",
                            rules=rules, prefix=FINAL, spent=spent)
    out.append(u_release(U_FINAL, "the final ERM"))
    return out


def release_margin(setup, release, lipschitz_phi, rho=RHO):
    """``release``: the ε of each Laplace release of u (None: not private).  A bound on |noise| of a convex combination of the (at most two) released u's, holding
    with probability ≥ 1 − ρ, times φ's Lipschitz constant: L_φ·b·log(2/ρ) for Laplace(b)
    noises — each |Lap(b)| > b·log(2/ρ) w.p. ρ/2, and |p·e₀ + (1 − p)·e₁| ≤ max(|e₀|, |e₁|)."""
    if release is None:
        return 0.0
    b = setup.delta_u / release
    return lipschitz_phi * b * math.log(2 / rho)


def lagrange_run(backend, problem, analysis, setup, budget, *, draws, relation="row",
                 slack=None, options=None):
    """The constraint form (docs/sparsity.md §4): probe, interpolated multiplier, final ERM and
    a fair repair.  Returns (decisions, weights, trace, margin).

    1. θ₀ = private ERM at ν = 0 (budget ``probe``); ũ₀ = d·ℓ_S(θ₀) + Laplace (0-1 rates).
       With ``probe_share = 0`` (default) no probe ERM is run: ũ₀ is the released statistic
       of the rule ŷ = y (for a selection-rate gap: the gap of the base rates), which an
       accurate unconstrained classifier approximately reproduces.
    2. If φ(ũ₀) ≤ −m, ν₁ = 0.  Otherwise ν₁ interpolates linearly between (0, ũ₀) and the
       a-priori zero crossing (ν_z, 0), ν_z = ZERO_FRACTION·ν_side (the end of the convex range
       on the side that moves u towards the feasible set), to the boundary value u* of the
       feasible side: ν₁ = ν_z·(1 − u*/ũ₀), clipped to [0, ν_side].
    3. θ₁ = private ERM at ν₁ (budget ``final``); ũ₁ released like ũ₀.
    4. Repair: the mixture with the largest weight on θ₁ whose released u satisfies φ(u) ≤ −m,
       the partner being the constant rule ŷ = 0 (whose u is public, e.g. 0 for selection-rate
       gaps) or θ₀; u is linear in mixtures, so the mixture's u is the same mixture of ũ's.
    m (``slack``) is the release margin (:func:`release_margin`), so the constraint holds on the
    training data with probability ≥ 1 − ρ for the returned mixture.  ``budget`` is the plan's
    :class:`LagrangeBudget` (None: ε = ∞, nothing released) and every noise is drawn through
    ``draws`` (the plan's schedule, :func:`lagrange_releases`); ν₁ and the mixture weights are
    post-processing.  ``options``: the backend's validated options (None: its defaults)."""
    if options is None:
        options = backend.options_from({})

    rates, g = problem.rates, problem.g[0]
    ds = rates.decisions
    hard = Rates(ds, rates.data, None, rates.group_mass_bound, feature_bound=rates.feature_bound,
                 group_mass_source=rates.group_mass_source)
    S, d, trace = setup.support, setup.d, []
    private = budget is not None
    rel = budget.release_epsilon if private else None
    base = np.full(problem.variable.size, 0.5)
    dd = float(d @ d)
    ell_at = lambda u: base + (u - float(d @ base)) * d / dd       # noqa: E731 - ℓ with d·ℓ = u
    phi = lambda u: float(g.value(ell_at(u)))                      # noqa: E731
    Lphi = analysis.lipschitz.get("g", {}).get("linf")             # ≥ ‖∇g‖₁ = |φ'|·‖d‖₁
    Lphi = Lphi / float(np.abs(d).sum()) if Lphi else 1.0
    if slack is None:
        slack = release_margin(setup, rel, Lphi) if private else 0.0

    def erm_at(nu, spec, prefix):
        erm = erm_from_problem(problem, setup.r_f + nu * d, setup.empirical)
        if private and prefix == FINAL:     # the ω its scheduled release was calibrated to
            erm = with_weight_bound(erm, budget.final_weight_bound)
        return backend.private_erm(erm, spec, draws=draws, relation=relation, prefix=prefix,
                                   options=options)

    def release(theta, name):
        if theta is None:     # ŷ = y: counts C[g, y, ŷ] with all of a cell's rows at ŷ = y
            C = np.zeros((hard.G, 2, 2))
            for y in (0, 1):
                C[:, y, y] = hard.cell_counts[:, y]
            ell = hard.from_counts(C)
        else:
            ell = hard.evaluate(theta)
        u = float(d[S] @ ell[S])
        if private:
            u = float(draws.laplace(name, u))
        return u

    th0 = None
    if setup.probe_share > 0:
        th0 = erm_at(0.0, budget.probe if private else None, PROBE)
        u0 = release(th0, U_PROBE)
        trace.append({"nu": 0.0, "released_u": u0, "released_g": phi(u0)})
    else:               # the rule ŷ = y: its u is the labels' own statistic (e.g. base rates)
        u0 = release(None, U_PROBE)
        trace.append({"labels": True, "released_u": u0, "released_g": phi(u0)})
    if phi(u0) <= -slack:
        nu1 = 0.0
    else:
        ref = u0 if u0 is not None else float(d @ base)
        side = float(np.asarray(g.grad(ell_at(ref)), float) @ d)
        nu_side = setup.nu_range[1] if side >= 0 else setup.nu_range[0]
        if not math.isfinite(nu_side):
            nu_side = math.copysign(1.0, side)
        nu_z = ZERO_FRACTION * nu_side
        if u0 == 0:
            nu1 = nu_z
        else:   # u* = the feasible boundary value nearest ũ₀ (φ(u*) = −m), by bisection
            lo_u, hi_u = 0.0, u0
            if phi(lo_u) > -slack:
                nu1 = nu_z
            else:
                for _ in range(60):
                    mid = 0.5 * (lo_u + hi_u)
                    lo_u, hi_u = (mid, hi_u) if phi(mid) <= -slack else (lo_u, mid)
                nu1 = float(np.clip(nu_z * (1 - lo_u / u0), min(0.0, nu_side), max(0.0, nu_side)))
    th1 = erm_at(nu1, budget.final if private else None, FINAL)
    u1 = release(th1, U_FINAL)
    trace.append({"nu": nu1, "released_u": u1, "released_g": phi(u1), "final": True})
    const = np.zeros(ds.P)      # the constant rule ŷ = 0 as a decision: θ = (w, b) = 0
    # Without a probe (probe_share = 0) ũ₀ is the statistic of the rule ŷ = y, which reads the
    # labels and is no decision: it cannot be a partner of the repair mixture (issue #20: it
    # was, as a 0-d NaN "decision", and every predict/metrics call of the result then raised).
    rep = repair_weights(phi, u1, [setup.const_u, u0 if th0 is not None else None], slack)
    if rep is None:      # no partner fixes it: keep θ₁ (reported)
        decisions, weights, partner = [th1], [1.0], None
    else:
        w1, j, wj = rep
        if j is None:
            decisions, weights, partner = [th1], [1.0], None
        else:
            decisions, weights = [th1, const if j == 0 else th0], [w1, wj]
            partner = "constant ŷ = 0" if j == 0 else "probe θ₀"
    trace.append({"repair": partner, "weights": list(map(float, weights)),
                  "margin": float(slack),
                  # False: no mixture meets level − margin (e.g. the margin exceeds the level
                  # on small data): θ₁ is returned without the training-side guarantee
                  "guarantee": rep is not None})
    return decisions, weights, trace, slack

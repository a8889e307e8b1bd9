"""Shared machinery of the row-private ERM backends (output perturbation, objective perturbation,
dual Frank–Wolfe): a certified solver, the Problem → ERM reduction, the plan-time release
schedule (:class:`ERMRelease`: typed budgets fitted by :func:`privfair.privacy.release.calibrate`,
drawn at run time through :class:`privfair.privacy.release.Draws`) and the private Lagrangian
search for one fairness constraint.  The ERM object itself is :class:`privfair.erm.ERM`.

The ERM (mean form).  For θ = (w, b) in C = {Ω(w) ≤ ρ, |b| ≤ ρ_b} (a :class:`SparseLinear`)::

    J_D(θ) = Σ_i w_i · l(θᵀu_i, y_i) + (Λ/2)‖θ‖²,     u_i = (x̃_i, 1), ‖x̃_i‖₂ ≤ R (clipped)

with per-row weights w_i ≥ 0 that depend on row i's own (group, label) only (*row-local*) and are
≤ ω/n for a public ω.  Replacing one row moves ∇J_D by at most Δ_g ≤ 2ζ/n in ℓ2 at every θ ∈ C,
where ζ = ω·L_l·‖u‖_max (L_l = sup|∂l/∂z|) — :meth:`privfair.erm.ERM.gradient_sensitivity`
proves the tight Δ_g per loss and neighbouring relation — and the row's Hessian by a rank-one PSD
matrix of norm ≤ β_H = ω·sup l''·‖u‖²_max (sum form).  Every constant is public: it comes from the decision set,
the declared feature bound, n and the (public) problem weights — never from the data.

From a fairness problem.  With r = ∇f (f affine in ℓ) plus ν·d for a constraint direction d, the
weighted surrogate error r·ℓ(θ) equals, up to a constant, Σ_i a_{g_i,y_i}·mass_i(θ), the mass a
row puts on ŷ = 1; a_{g,y} = Δr_joint/n + Δr_rate/(n q_{g,y}) + r_sel/(n q_g) with the *public*
group-mass bound q in place of the clamped empirical denominators (so the weights are row-local).
The y = 0 rows' mass is φ̃(z) (convex), the y = 1 rows' is 1 − φ̃(−z) (concave), so the ERM is
convex iff a_{g,0} ≥ 0 and a_{g,1} ≤ 0; the per-row loss is |a|·φ(∓z)/φ(B), a GLM.

The certified solver (:func:`solve`, :func:`solve_certified`) lives in :mod:`._erm_solver` and
is re-exported here.

Over 500 lines: the Problem → ERM reduction and the Lagrangian search read the private layout of
:class:`privfair.stats.Rates` (tests/test_layers.py allowlists those reads in this module) until
issue #17's public layout of ℓ lands; they move out with it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from privfair.privacy.release import Schedule, Scheduled, calibrate
from privfair.erm import ERM  # noqa: F401  (re-exported: the ERM object lives with the losses)

from ._erm_solver import (MAX_FALLBACK_STEPS, MAX_ITER, TAU_REL, Solution,  # noqa: F401
                          certify_reason, fallback_steps, public_smoothness, solve,
                          solve_certified, tau_target)
from .base import PUBLIC, RELEASED
from .options import Option

# ------------------------------------------------------------------------------------ refusals
def check_common(problem, analysis, *, need_strong=False, need_c2=False, allow_constraint=True):
    """None, or the reason the row-private ERM backends refuse ``problem``."""
    from privfair.sparse import LOSSES, SparseLinear

    rates = getattr(problem, "rates", None)
    ds = getattr(rates, "decisions", None)
    if not isinstance(ds, SparseLinear):
        return ("needs a pf.SparseLinear decision set (rates built with pf.rates(pf.SparseLinear"
                f"(d, norm=..., radius=..., l2=Λ), data, surrogate='logistic')); got "
                f"{type(ds).__name__}")
    if rates.surrogate is None:
        return "needs a convex surrogate: pf.rates(..., surrogate='logistic' or 'smoothed_hinge')"
    if ds.feature_bound is None or abs(ds.feature_bound - rates.feature_bound) > 1e-12:
        return (f"SparseLinear(feature_bound={ds.feature_bound}) must equal pf.rates(..., "
                f"feature_bound={rates.feature_bound}): rows are clipped to that public bound in "
                "training and prediction (unbounded features have no sensitivity bound)")
    loss = LOSSES[rates.surrogate]
    if not loss.smooth:
        return (f"the '{rates.surrogate}' surrogate is not smooth, so no certified minimizer "
                "exists for the sensitivity argument; use surrogate='smoothed_hinge' or 'logistic'")
    if need_c2 and not loss.twice_differentiable:
        return (f"objective perturbation needs a twice continuously differentiable loss (Chaudhuri "
                f"et al. 2011; Kifer et al. 2012); '{rates.surrogate}' is not C² — use 'logistic'")
    if need_strong and not ds.l2 > 0:
        return ("needs an explicit ℓ2 term Λ > 0 (its sensitivity is 2L/(nΛ) — a sparsity norm "
                "alone is not strongly convex): pass pf.SparseLinear(..., l2=Λ), e.g. Λ = "
                f"{suggest_l2(problem):.2g}")
    if analysis.curvature.get("f") not in ("affine", "constant"):
        return (f"needs an objective affine in ℓ (a weighted error such as r.error()); f is "
                f"{analysis.curvature.get('f')}")
    if problem.g:
        if not allow_constraint:
            return "handles unconstrained problems only (use output/objective perturbation)"
        if len(problem.g) > 1:
            return ("handles one fairness constraint (a function of one linear statistic, e.g. "
                    "|sel_F − sel_M| ≤ γ); combine several with pf.lse")
        if constraint_direction(problem.g[0], problem.variable.size) is None:
            return ("the constraint must depend on ℓ through one linear statistic d·ℓ (e.g. "
                    "pf.abs(r.selection['a'] - r.selection['b']) <= γ)")
    reason = _sign_reason(problem, analysis)
    if reason:
        return reason
    return None


def suggest_l2(problem):
    """A public Λ of the order [K] Thm 1 balances: L·‖u‖/√n in the problem's units."""
    r = problem.rates
    n = r.n
    return math.sqrt(r.feature_bound ** 2 + 1) / r._phiB / math.sqrt(n)


def _sign_reason(problem, analysis):
    r = objective_gradient(problem)
    if r is None:
        return "the objective's gradient is not constant (f must be affine in ℓ)"
    try:
        a = cell_coefficients(problem.rates, r, "public")
    except _NeedsMass:
        return None       # conditional weights: checked once the group-mass bound is known
    bad = _bad_cells(a)
    if bad:
        g, y = bad
        return (f"the weighted surrogate error is not convex in θ: cell (group "
                f"{problem.rates.groups[g]!r}, y={y}) gets a {'negative' if y == 0 else 'positive'}"
                " weight on its mass on ŷ=1; use non-negative weights on errors (fp, fn, fpr, fnr)")
    return None


# ------------------------------------------------------------------------------------ Problem → ERM
class _NeedsMass(Exception):
    pass


def objective_gradient(problem):
    """∇f (constant for affine f), or None."""
    K = problem.variable.size
    g0 = np.asarray(problem.f.grad(np.full(K, 0.5)), float)
    g1 = np.asarray(problem.f.grad(np.random.default_rng(0).random(K)), float)
    return g0 if np.allclose(g0, g1, atol=1e-12) else None


def constraint_direction(g, K):
    """d with ∇g(ℓ) ∥ d at every sampled ℓ (g depends on one linear statistic), or None."""
    rng = np.random.default_rng(12345)
    pts = np.vstack([np.full(K, 0.5), rng.random((12, K))])
    d = None
    for p in pts:
        v = np.asarray(g.grad(p), float)
        nv = np.abs(v).max()
        if nv == 0:
            continue
        v = v / nv
        if d is None:
            d = v
        elif not (np.allclose(v, d, atol=1e-9) or np.allclose(v, -d, atol=1e-9)):
            return None
    return d


#: how the conditional denominators of :func:`cell_coefficients` are taken
DENOMINATORS = ("public", "clamped", "empirical")


def cell_coefficients(rates, r, denominators="public"):
    """n·a_{g,y}, shape (G, 2): the one home of "a linear objective over the rates → a weighted
    ERM" (the row-private ERM backends, their constraint form and the LOPT oracles all use it).

    ℓ is linear in the mass s_i(θ) ∈ [0, 1] each row puts on ŷ = 1 (surrogate or 0-1), so

        r·ℓ(θ, D) = const(D) + (1/n)·Σ_i a_{g_i,y_i}·s_i(θ),
        n·a_{g,y} = Δr_joint(g,y) + n·Δr_rate(g,y)/den_{g,y} + n·r_sel(g)/den_g,

    Δr = (weight on the ŷ = 1 coordinate) − (weight on the ŷ = 0 one) of the block.
    ``denominators`` — the den of the conditional coordinates:

    * ``"public"``: n·q, q the (declared or privately estimated) group-mass bound.  Each row's
      weight then depends on its own (group, label) only (*row-local*), which the perturbation
      mechanisms' proofs need; the ERM minimizes r'·ℓ with the conditional weights scaled by
      max(n_{g,y}, nq)/(nq) ≥ 1 (``rescaling``), not r·ℓ.  Raises ``_NeedsMass`` without q.
    * ``"clamped"``: max(n_{g,y}, nq) — exactly r·ℓ as :class:`privfair.stats.Rates` defines it
      (the noisy-GD oracle; its sensitivity pays for the data-dependent denominators).
    * ``"empirical"``: the public bound if there is one, else max(n_{g,y}, 1) — ε = ∞ only.
    """
    if denominators not in DENOMINATORS:
        raise ValueError(f"denominators must be one of {DENOMINATORS}")
    r = np.asarray(r, float)
    G, n = rates.G, rates.n
    a = np.zeros((G, 2))
    uses_cond = bool(np.any(r[rates._rate] != 0) or np.any(r[rates._sel] != 0))
    if denominators == "clamped":
        den, den_g = rates._denominators(None)
    else:
        q, qg = rates._bound(None)
        if uses_cond and q is None and denominators == "empirical":
            q = np.maximum(rates._n_gy, 1.0) / n
            qg = np.maximum(rates._n_gy.sum(axis=1), 1.0) / n
        if uses_cond and q is None:
            raise _NeedsMass()
        den, den_g = (None, None) if q is None else (n * np.asarray(q), n * np.asarray(qg))
    for y in (0, 1):
        a[:, y] = r[rates._joint[:, y, 1]] - r[rates._joint[:, y, 0]]
        if uses_cond:
            a[:, y] += n * ((r[rates._rate[:, y, 1]] - r[rates._rate[:, y, 0]]) / den[:, y]
                            + r[rates._sel] / den_g)
    return a


def rescaling(rates):
    """(G, 2) factors max(n_{g,y}, nq)/(nq) ≥ 1 by which ``"public"`` denominators inflate the
    conditional weights relative to r·ℓ (data-dependent: for diagnostics and tests only)."""
    den, _ = rates._denominators(None)
    q, _ = rates._bound(None)
    return den / (rates.n * np.asarray(q))


def row_coefficients(rates, r, denominators="clamped"):
    """a_{g_i,y_i} per row (mean form): r·ℓ(θ) = const + Σ_i coef_i·s_i(θ)."""
    return cell_coefficients(rates, r, denominators).ravel()[rates._cell] / rates.n


def _bad_cells(a, tol=1e-12):
    for g in range(a.shape[0]):
        if a[g, 0] < -tol:
            return g, 0
        if a[g, 1] > tol:
            return g, 1
    return None


def multiplier_range(a_f, a_d):
    """(ν⁻, ν⁺): the convex range of ν for cell weights a_f + ν·a_d (y=0 ≥ 0, y=1 ≤ 0)."""
    lo, hi = -math.inf, math.inf
    for g in range(a_f.shape[0]):
        for y, sgn in ((0, 1.0), (1, -1.0)):     # need sgn·(a_f + ν a_d) ≥ 0
            af, ad = sgn * a_f[g, y], sgn * a_d[g, y]
            if ad > 0:
                lo = max(lo, -af / ad)
            elif ad < 0:
                hi = min(hi, af / -ad)
    return lo * (1 - 1e-9), hi * (1 - 1e-9)


def erm_from_problem(problem, r, empirical=False):
    """The ERM of the weighted surrogate error r·ℓ(θ) (public denominators; see module doc)."""
    return erm_from_rates(problem.rates, r, "empirical" if empirical else "public")


def private_weighted_erm(rates, r, epsilon, delta, *, method="objective_perturbation", rng=None,
                         accountant=None, label="LOPT oracle", options=None):
    """A private approximate minimizer of θ ↦ r·ℓ(θ, D) for public weights r — the LOPT
    reduction's linear-classifier oracle ([A] §5.2, oracle (b)) under ``protect="row"``.

    ``rates`` must come from ``pf.rates(pf.SparseLinear(...), data, surrogate=...)``; the weights
    must make the weighted surrogate error convex (non-negative on errors).  The mechanism's
    releases are scheduled for (``epsilon``, ``delta``) — the caller's per-call budget, fitted
    at its plan time — and drawn through the schedule, which records their event(s) in
    ``accountant`` before the first draw; returns θ.  ``epsilon=inf``: exact."""
    from privfair.privacy.randomness import as_source

    from . import get

    b = get(method)
    erm = erm_from_rates(rates, np.asarray(r, float),
                         "public" if math.isfinite(epsilon) else "empirical")
    why = b.erm_reason(erm, None)
    if why:
        b.refuse(why)
    opts = b.options_from(options or {})     # typed refusals before the schedule is opened
    if not math.isfinite(epsilon):
        return b.private_erm(erm, None, draws=None, options=opts)
    rel = schedule_for(b, erm, ERMBudget(float(epsilon), float(delta)), "row", opts, label)
    return b.private_erm(erm, rel.budget, draws=rel.schedule.open(accountant, as_source(rng)),
                         relation="row", options=opts)


def erm_from_rates(rates, r, denominators="public"):
    """The weighted GLM ERM of r·ℓ(θ) (:func:`cell_coefficients`): a y = 0 row's mass φ̃(z) is
    convex, a y = 1 row's 1 − φ̃(−z) concave, so row i gets the loss weight a·1[y=0] − a·1[y=1]
    (≥ 0 exactly when the ERM is convex) on φ(∓z)/φ(B), and r·ℓ = const + the ERM's Σ w_i l_i."""
    from privfair.designs import ClippedRows
    from privfair.sparse import LOSSES

    ds = rates.decisions
    a = cell_coefficients(rates, r, denominators)
    bad = _bad_cells(a, tol=1e-9 * (1 + np.abs(a).max()))
    if bad:
        from privfair.errors import BackendRefusedError

        raise BackendRefusedError("weights", f"cell {bad}", "the weighted ERM is not convex "
                                  "(a cell's weight has the wrong sign at this multiplier)")
    g, yv = rates.data.group, rates.data.y
    coef = np.where(yv == 0, a[g, 0], -a[g, 1])
    coef = np.maximum(coef, 0.0)
    scale = 1.0 / rates._phiB
    n = rates.n
    # the rates' own clipped rows (x_i·c_i, 1) as a view over X: no n×(d+1) copy (#19)
    U = ClippedRows(rates.data.X, rates._clip_scale)
    erm = ERM(U, np.where(yv == 1, 1.0, -1.0), coef * scale / n, LOSSES[rates.surrogate], ds,
              float(np.abs(a).max()) * scale, math.sqrt(rates.feature_bound ** 2 + 1.0))
    erm.meta["r"] = np.asarray(r, float)
    return erm


def uses_conditional(problem, r):
    rates = problem.rates
    return bool(np.any(r[rates._rate] != 0) or np.any(r[rates._sel] != 0))


# ------------------------------------------------------------------------------------ releases
@dataclass(frozen=True)
class ERMBudget:
    """The (ε, δ) of one private ERM (all of its releases together)."""

    epsilon: float
    delta: float


@dataclass(frozen=True)
class LagrangeBudget:
    """The constraint form's split: the probe ERM (None without a probe), the final ERM, and the
    ε of each of the two Laplace releases of the constraint statistic u.

    ``final_weight_bound`` is the public ω the final ERM's release is calibrated for: its
    multiplier ν₁ is chosen at run time (post-processing of ũ₀), so its row weights
    |a_f + ν₁·a_d| are bounded over every ν₁ the rule can pick (:func:`final_weight_bound`)."""

    probe: ERMBudget | None
    final: ERMBudget
    release_epsilon: float
    final_weight_bound: float = math.nan


@dataclass(frozen=True)
class ERMRelease:
    """A private plan's releases, fixed at plan time: the :class:`Schedule` every noise of the
    run is drawn through, the budget split it was fitted from, and the neighbouring relation
    the sensitivities refer to.  ``run`` reads it and never re-calibrates."""

    schedule: Schedule
    budget: ERMBudget | LagrangeBudget
    relation: str

    def __repr__(self):
        b = self.budget
        if isinstance(b, LagrangeBudget):
            what = (f"final ERM ε={b.final.epsilon:.4g}, δ={b.final.delta:.3g}"
                    + (f", probe ε={b.probe.epsilon:.4g}" if b.probe else "")
                    + f", u releases ε={b.release_epsilon:.4g} each")
        else:
            what = f"ε={b.epsilon:.4g}, δ={b.delta:.3g}"
        return f"{len(self.schedule.releases)} scheduled release(s): {what} ({self.relation})"


def spent_before(analysis) -> bool:
    """True when the solve spent budget before this plan: the group-mass bound was estimated
    privately (planner: a pure Laplace release, already in the accountant).  The plan then
    sees only the remaining (ε, δ); it fits its releases by basic composition, so that they
    compose with what was spent to at most the solve's (ε, δ) by the same rule — the guarantee
    the run-time fit against the accountant's limit and its events gave before (issue #17)."""
    gm = getattr(analysis, "group_mass", None) or {}
    return gm.get("source") == "private" and gm.get("bound") is not None


def fit_rules(analysis):
    """The composition rules a plan may fit its schedule with (:func:`spent_before`)."""
    return ("basic",) if spent_before(analysis) else None


def gradient_sensitivity(erm, relation="row"):
    """(Δ_g, source): :meth:`privfair.erm.ERM.gradient_sensitivity` with the text the
    events cite."""
    dg = erm.gradient_sensitivity(relation)
    rho, B, planar = erm.sensitivity_geometry()
    if relation == "sensitive":
        how = (f"(ω/n)·ρ·sup|l'| = {erm.row_weight_bound:.4g}/{erm.n}·{rho:.4g}·"
               f"{erm.loss.deriv_bound(B, erm.label_bound):.4g} (one row's weight changes, its x "
               "and y do not)")
    else:
        how = (f"(ω/n)·ρ·κ = {erm.row_weight_bound:.4g}/{erm.n}·{rho:.4g}·"
               f"{dg * erm.n / (erm.row_weight_bound * rho):.4g} (κ: the {erm.loss.name} loss's "
               f"gradient diameter at margins ≤ {B:.4g}{'' if planar else ', one dimension'}; "
               "privfair.erm.ERM.gradient_sensitivity; one row replaced)")
    return dg, how


def schedule_for(backend, erm, budget, relation, options, label, rules=None):
    """The :class:`ERMRelease` of one private ERM at ``budget`` with nothing spent before (the
    direct paths: :func:`fit_erm`, :func:`private_weighted_erm`)."""
    rel = backend.releases(erm, budget, relation=relation, options=options, label=label,
                           rules=rules)
    return ERMRelease(Schedule(rel, budget.epsilon, budget.delta), budget, relation)


# ------------------------------------------------------------------------------------ results
def make_result(name, theta, ds, plan, trace, info, weights=None):
    """A Result of one decision θ, or of the mixture ``theta`` (a list) with ``weights``."""
    from privfair.result import Result

    if weights is None:
        return Result(name, [np.asarray(theta, float)], [1.0], ds, plan=plan, trace=trace,
                      info=info)
    keep = [(np.asarray(t, float), float(w)) for t, w in zip(theta, weights) if w > 0]
    P = getattr(ds, "P", None)
    for t, _ in keep:
        if P is not None and t.shape != (P,):   # a bug, not a data-dependent event
            raise RuntimeError(f"internal error: {name} built a mixture component of shape "
                               f"{t.shape}; decisions are vectors (w, b) of length {P}")
    return Result(name, [t for t, _ in keep], [w for _, w in keep], ds, plan=plan, trace=trace,
                  info=info)


def fit_erm(erm, privacy, method, seed=None, **options):
    """Run ``method``'s mechanism on a direct :func:`privfair.sparse.glm` ERM (no Problem)."""
    from privfair.errors import InvalidInputError, InvalidPrivacyError
    from privfair.privacy import Accountant, Certificate
    from privfair.privacy.randomness import as_source
    from privfair.privacy.spec import DP

    from . import get

    if not isinstance(privacy, DP):
        raise InvalidPrivacyError("privacy", privacy, "pass pf.DP(epsilon, delta, protect='row')")
    b = get(method)
    if not hasattr(b, "run_erm"):
        raise InvalidInputError("method", method, "choose output_perturbation, "
                                "objective_perturbation or dual_frank_wolfe")
    if privacy.is_private and erm.decisions.feature_bound is None:
        raise InvalidInputError("feature_bound", None, "row privacy needs bounded features: "
                                "declare SparseLinear(..., feature_bound=R); rows are clipped to R")
    why = b.erm_reason(erm, privacy)
    if why:
        b.refuse(why)
    src = as_source(seed)
    if not privacy.is_private:
        res = b.run_erm(erm, privacy, rng=src, accountant=None, options=options)
        res.certificate = Certificate.non_private(privacy.protect)
        return res
    acc = Accountant(delta=privacy.delta or None, relation=privacy.protect,
                     limit=(privacy.epsilon, privacy.delta), source=src)
    res = b.run_erm(erm, privacy, rng=src, accountant=acc, options=options)
    res.certificate = acc.certificate(delta=privacy.delta or None, notes=res.info.get("notes", ()))
    return res


# ------------------------------------------------------------------------------------ widths
def primal_width(ds, n_samples=1000):
    """Gaussian width of C = {Ω(w) ≤ ρ} × [−ρ_b, ρ_b]: ρ·E Ω*(g) + ρ_b·√(2/π) (with its error)."""
    from privfair.norms import Width

    d = ds.n_features
    if ds.norm is None:
        base = Width(math.sqrt(2) * math.exp(math.lgamma((d + 1) / 2) - math.lgamma(d / 2)), 0.0, True)
    else:
        cache = ds.norm.__dict__.setdefault("_width_cache", {})
        if "primal" not in cache:
            ex = ds.norm.exact_gaussian_width("primal")
            cache["primal"] = (Width(ex, 0.0, True) if ex is not None else
                               ds.norm.gaussian_width("primal", n_samples=n_samples, rng=0))
        base = cache["primal"]
    return Width(ds.norm_radius * base.value + ds.intercept_bound * math.sqrt(2 / math.pi),
                 ds.norm_radius * base.stderr, base.exact, base.n_samples)


def dual_width(ds, n_samples=2000):
    """[K]'s G_{|P|(F)} = E Ω(g) (exact where a closed form exists, else Monte Carlo)."""
    from privfair.norms import Width

    d = ds.n_features
    if ds.norm is None:
        return Width(math.sqrt(2) * math.exp(math.lgamma((d + 1) / 2) - math.lgamma(d / 2)), 0.0, True)
    cache = ds.norm.__dict__.setdefault("_width_cache", {})
    if "dual" not in cache:
        ex = ds.norm.exact_gaussian_width("dual")
        cache["dual"] = (Width(ex, 0.0, True) if ex is not None else
                         ds.norm.gaussian_width("dual", n_samples=n_samples, rng=0))
    return cache["dual"]


def expected_gaussian_norm(P):
    return math.sqrt(2) * math.exp(math.lgamma((P + 1) / 2) - math.lgamma(P / 2))


def gamma_norm_noise(P, kappa, rng):
    """b with density ∝ exp(−‖b‖₂/κ) on R^P: κ·Gamma(P, 1) times a uniform direction, built from
    the privacy core's float Gaussians (idealized numerics): Gamma(P, 1) = Σ_{k≤P} (g²+g'²)/2."""
    from privfair.privacy import gaussian_noise_vector

    g = gaussian_noise_vector(P, 1.0, rng)
    e = gaussian_noise_vector(2 * P, 1.0, rng)
    radius = kappa * 0.5 * float(e @ e)
    return radius * g / np.linalg.norm(g)


# ------------------------------------------------------------------------------------ Lagrangian
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
    joint0 = rates._joint[:, :, 0].ravel()
    if np.any(d[joint0] != 0):
        return None
    ones = rates._rate[:, :, 0].ravel()
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
    except _NeedsMass:
        return None
    lo, hi = multiplier_range(a_f, a_d)
    S = np.asarray(sorted(g.support()), dtype=int)
    du = math.nan
    if rates._q is not None or not rates.uses_conditional(S):
        # |d·Δℓ_S| ≤ ‖d_S‖∞·‖Δℓ_S‖₁ (Hölder) with the compiler's Δℓ₁ under row replacement
        du = float(np.abs(d[S]).max()) * float(rates.delta_l("l1", "row", support=S))
    return LagrangeSetup(r_f, d, (lo, hi), S, du, _const_u(rates, d, S), float(probe_share),
                         bool(empirical))


# ------------------------------------------------------------------------------------ options
#: post-processing of every row-private ERM's release (all three backends read it)
PROJECT = Option("project", "bool", True,
                 doc="project the noisy θ back onto the decision set (post-processing: free; "
                     "soft-thresholds, so outputs are sparse)")
#: the constraint form's public hyper-parameters (:func:`lagrange_run`; docs/sparsity.md §4)
CONSTRAINT_OPTIONS = (
    Option("probe_share", "float", PROBE_SHARE, low=0,
           doc="constraint form: ε of a ν = 0 probe ERM ÷ the final ERM's (0: no probe, the "
               "labels' statistic ŷ = y is released instead)"),
    Option("release_share", "float", RELEASE_SHARE, low=0, low_open=True,
           doc="constraint form: ε of each Laplace release of the constraint statistic ÷ the "
               "final ERM's"),
    Option("slack", "float", None, low=0,
           doc="constraint form: the repair margin m (auto: the u releases' noise bound, "
               f"holding w.p. ≥ {1 - RHO:g})"),
)
#: the option table of an ERM backend that takes the constraint form (output and objective
#: perturbation; dual Frank–Wolfe declares its own)
ERM_OPTIONS = (PROJECT,) + CONSTRAINT_OPTIONS


#: ERM calls of the constraint form: a probe at ν = 0 and the final ERM
LAGRANGE_CALLS = 2


def lagrange_budget(backend, erm0, setup, epsilon, delta, *, relation="row", rules=None,
                    release_share=RELEASE_SHARE, spent=()):
    """The constraint form's :class:`LagrangeBudget`, fitted at plan time by
    :func:`privfair.privacy.release.calibrate`: the final ERM at ε = x, the probe at
    probe_share·x, each of the two Laplace releases of u at release_share·x (pure ε: the scalar
    has a tiny ℓ1 sensitivity, δ would only cost); δ/8 to the probe when there is one."""
    from privfair.privacy import laplace_event

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
    from privfair.privacy import laplace_event

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


def repair_weights(phi, u_main, partners, margin):
    """The mixture (weight on the main decision, partner index, partner weight) with the largest
    weight on the main decision such that φ(u) ≤ −margin; ``partners`` is a list of u's; None
    when even the best partner alone violates.  φ is convex, so the feasible weights form an
    interval, found on a grid of 4,001 points (post-processing of released values)."""
    if phi(u_main) <= -margin:
        return 1.0, None, 0.0
    grid = np.linspace(1.0, 0.0, 4001)
    best = None
    for j, u in enumerate(partners):
        if u is None:
            continue
        ok = [p for p in grid if phi(p * u_main + (1 - p) * u) <= -margin]
        if ok and (best is None or ok[0] > best[0]):
            best = (float(ok[0]), j, 1.0 - float(ok[0]))
    return best


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
    from privfair.stats import Rates

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
                C[:, y, y] = hard._n_gy[:, y]
            ell = hard._from_counts(C)
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


# ------------------------------------------------------------------------------------ backend base
class ERMBackend:
    exposes = {
        "lagrange": (RELEASED, "the Lagrangian search's trace: released statistics and multipliers"),
        "slack": (RELEASED, "the repair margin, from the releases' noise scales"),
        "budget": (PUBLIC, "the per-release (ε, δ) split, fitted to the plan"),
        "notes": (PUBLIC, "the plan's notes"),
        "predicted_excess_risk": (PUBLIC, "the theorem's bound at n, ε, δ"),
        "params": (PUBLIC, "the planned constants"),
    }
    """Mixin of the three row-private ERM backends: the Problem-level ``accepts``/``plan``/``run``
    around a backend's ``releases`` (the scheduled releases of one private ERM at an
    :class:`ERMBudget`, plan time), ``private_erm`` (that ERM, its noise drawn through a
    :class:`~privfair.privacy.release.Draws`, run time), ``planned_events`` (cheap events with
    the same privacy claim, for budget fitting) and ``predicted`` (its theorem's excess
    risk).  Each backend declares ``option_table`` (:data:`ERM_OPTIONS` where it takes the
    constraint form); ``plan``, ``schedule``, ``run_erm`` and :func:`private_weighted_erm`
    validate through ``options_from``, and the methods above read those validated options."""

    need_strong = True
    need_c2 = False
    allow_constraint = True

    def extra_reason(self, problem, analysis):
        return None

    def erm_reason(self, erm, privacy):
        if not erm.loss.smooth:
            return f"the {erm.loss.name} loss is not smooth: use smoothed_hinge or logistic"
        if self.need_c2 and not erm.loss.twice_differentiable:
            return f"needs a twice continuously differentiable loss; {erm.loss.name} is not C²"
        if self.need_strong and not erm.l2 > 0:
            return "needs an explicit ℓ2 term: SparseLinear(..., l2=Λ) with Λ > 0"
        if privacy is not None and getattr(privacy, "is_private", True):
            return certify_reason(erm, tau_target(erm), self.certify_ridge(erm, privacy))
        return None

    def certify_ridge(self, erm, privacy):
        """The public ridge the certified solve adds to the ERM (0 unless the mechanism adds
        one, as objective perturbation's Δ/n does)."""
        return 0.0

    def accepts(self, problem, analysis):
        from .base import Verdict

        why = check_common(problem, analysis, need_strong=self.need_strong, need_c2=self.need_c2,
                           allow_constraint=self.allow_constraint)
        why = why or self.extra_reason(problem, analysis)
        return Verdict(False, why) if why else Verdict(True)

    def plan(self, problem, analysis, privacy, options, spent=()):
        """Constants, predicted risk and — for a private plan — the :class:`ERMRelease`: every
        release of the run scheduled and fitted here, once, to ``privacy``.  ``spent``: the
        events already recorded against the same (ε, δ) (the planner's convention with
        ``lopt``): the releases are fitted beside them with every rule.  Without them,
        ``privacy`` is the budget left to this backend, fitted by basic composition when the
        solve spent budget before this plan (:func:`spent_before`).  Everything read here is
        public: n, the schema, the declared bounds and the problem's weights."""
        from .base import Plan

        opts = self.options_from(options)       # typed refusals before anything is spent
        r_f = objective_gradient(problem)
        private = privacy.is_private
        try:
            erm0 = erm_from_problem(problem, r_f, empirical=not private)
        except _NeedsMass:
            erm0 = None
        if erm0 is not None:        # public: refused here, identically on every neighbour
            why = self.erm_reason(erm0, privacy)
            if why:
                self.refuse(why)
        params = {"l2 (Λ)": problem.rates.decisions.l2,
                  "norm": getattr(problem.rates.decisions.norm, "name", "l2"),
                  "radius": problem.rates.decisions.norm_radius}
        notes = list(self.base_notes(problem))
        params["options"] = opts            # validated, defaults filled: run reads these
        if uses_conditional(problem, r_f):
            notes.append("conditional rates are weighted with the public denominators n·q (q the "
                         "group-mass bound), not the clamped empirical ones, so that each row's "
                         "weight is its own (row-local)")
        spent = tuple(spent)
        relation, rules = privacy.protect, (None if spent else fit_rules(analysis))
        if private and rules:
            notes.append("the releases are fitted to the budget left after the private "
                         "group-mass estimate by basic composition, so that they compose with it "
                         "to the solve's (ε, δ)")
        risk, budget, release = math.inf, [], None
        if problem.g:
            setup = lagrange_setup(problem, analysis, opts["probe_share"],
                                   empirical=not private)
            notes.append("constraint: private ERM at ν = 0 (probe), its 0-1 constraint statistic "
                         "released (Laplace); the final ERM at the multiplier interpolated "
                         f"between the probe and the a-priori zero crossing ({ZERO_FRACTION:g} "
                         "of the convex range); its statistic released; then a mixture with the "
                         "constant rule ŷ = 0 or the probe repairs a violation of the level minus "
                         f"the release margin (holds on the training data w.p. ≥ {1 - RHO:g}); "
                         "no excess-risk bound is claimed")
            if setup is None:
                notes.append("multiplier range and budget fixed at solve time (after the "
                             "group-mass estimate)")
            else:
                params.update(nu_range=tuple(float(v) for v in setup.nu_range),
                              erm_calls=LAGRANGE_CALLS if setup.probe_share > 0 else 1)
                if private and erm0 is not None:
                    b = lagrange_budget(self, erm0, setup, privacy.epsilon, privacy.delta,
                                        relation=relation, rules=rules, spent=spent,
                                        release_share=opts["release_share"])
                    b = replace(b, final_weight_bound=final_weight_bound(problem, setup))
                    why = self.erm_reason(with_weight_bound(erm0, b.final_weight_bound),
                                          privacy)
                    if why:     # public: the final ERM's certified solve, decided before any draw
                        self.refuse(why)
                    rel = lagrange_releases(self, erm0, setup, b, relation=relation,
                                            options=opts, label=self.name, rules=rules,
                                            spent=spent)
                    release = ERMRelease(Schedule(rel, privacy.epsilon, privacy.delta, spent), b,
                                         relation)
                    if b.probe is not None:
                        budget.append(("the probe ERM at ν = 0", b.probe.epsilon, b.probe.delta))
                    budget += [("each constraint-statistic release (Laplace)",
                                b.release_epsilon, 0.0),
                               ("the final ERM", b.final.epsilon, b.final.delta)]
        elif erm0 is not None:
            spec = ERMBudget(privacy.epsilon, privacy.delta) if private else None
            if private and spent:       # the ERM's own (ε', δ) beside what was spent
                d = privacy.delta
                spec = ERMBudget(calibrate(
                    lambda x: self.planned_events(erm0, ERMBudget(x, d), relation=relation),
                    privacy.epsilon, d, spent=spent, hi=privacy.epsilon,
                    key=(self.name, "one ERM")), d)
            risk, more, extra = self.predicted(erm0, spec, opts, relation=relation)
            params.update(more)
            notes += extra
            if spec is not None:       # spent: already carved out of spec, so its own parts
                # compose to spec by basic composition (and so beside spent, as spec does)
                release = ERMRelease(Schedule(self.releases(
                    erm0, spec, relation=relation, options=opts, label=self.name,
                    rules=("basic",) if spent else rules), privacy.epsilon, privacy.delta, spent),
                    spec, relation)
                budget = [(f"one {self.name} release", spec.epsilon, spec.delta)]
        if release is not None:
            params["release"] = release
        return Plan(self.name, privacy, analysis, problem, params=params, budget=budget,
                    predicted_excess_risk=risk, theorem=self.theorem, notes=notes)

    def base_notes(self, problem):
        return []

    def run(self, plan, *, rng, accountant, device="cpu", progress=True):
        """Draw the plan's releases (``plan.params["release"]``) through its schedule; nothing
        is calibrated here."""
        from privfair.privacy.randomness import as_source

        problem, an = plan.problem, plan.analysis
        src = as_source(rng)
        private = plan.privacy.is_private
        opts = plan.params["options"]         # validated by plan (options_from)
        release = plan.params.get("release")
        if private and release is None:     # a bug: the planner runs only a final plan
            raise RuntimeError(f"internal error: {self.name}'s private plan has no release "
                               "schedule (planned before the group-mass bound was known?)")
        draws = release.schedule.open(accountant, src) if private else None
        relation = release.relation if private else plan.privacy.protect
        r_f = objective_gradient(problem)
        ds = problem.rates.decisions
        if problem.g:
            setup = lagrange_setup(problem, an, opts["probe_share"],
                                   empirical=not private)
            budget = release.budget if private else None
            decisions, weights, trace, slack = lagrange_run(
                self, problem, an, setup, budget, draws=draws, relation=relation,
                slack=opts["slack"], options=opts)
            info = {"lagrange": trace, "slack": slack, "budget": budget, "notes": plan.notes}
            return make_result(self.name, decisions, ds, plan, trace, info, weights)
        erm = erm_from_problem(problem, r_f, empirical=not private)
        theta = self.private_erm(erm, release.budget if private else None, draws=draws,
                                 relation=relation, options=opts)
        return make_result(self.name, theta, ds, plan, [{"erm": self.name}], {"notes": plan.notes})

    def schedule(self, erm, epsilon, delta, options=None, relation="row"):
        """The :class:`ERMRelease` of one private ERM of ``erm`` at (ε, δ), nothing spent before
        (public; for direct use and tests: ``rel.schedule.open(accountant, rng)`` gives the
        draws :meth:`private_erm` takes, ``rel.budget`` its budget)."""
        return schedule_for(self, erm, ERMBudget(float(epsilon), float(delta)), relation,
                            self.options_from(options or {}), self.name)

    def run_erm(self, erm, privacy, *, rng, accountant, options):
        """Plan and run one private ERM on a direct :func:`privfair.sparse.glm` problem (no
        Problem, nothing spent before): the schedule is fitted to ``privacy``, then drawn.
        The sensitivities are the row relation's (valid for every relation: a glm has no
        sensitive column, so its features may carry it)."""
        opts = self.options_from(options)
        spec = ERMBudget(privacy.epsilon, privacy.delta) if privacy.is_private else None
        draws = None
        if spec is not None:
            rel = schedule_for(self, erm, spec, "row", opts, self.name)
            draws = rel.schedule.open(accountant, rng)
        theta = self.private_erm(erm, spec, draws=draws, relation="row", options=opts)
        risk, params, notes = self.predicted(erm, spec, opts, relation="row")
        return make_result(self.name, theta, erm.decisions, None, [],
                           {"predicted_excess_risk": risk, "params": params, "notes": notes})

# Over 500 lines: one backend: Algorithm 4 with its privacy and utility proofs in the docstring.
"""Frank–Wolfe on the loss vector — [A] Appendix B, Algorithm 4, Lemma B.4 / Cor B.5 (private
version: the gradient at a released point, docs/traps.md #4 and #6).

(Over 500 lines: one backend whose bound (★) is proved in this docstring, next to its plan, run
and formula.)

Algorithm.  Over a finite decision set C (``FiniteSet`` / ``Thresholds``) the attainable loss
vectors of randomized classifiers form the polytope P = conv{ℓ_S(c, D) : c ∈ C}, S the support
(the coordinates f and g read).  We minimise the compiler's smooth penalty
h_smooth = f̃ + G·s·log(1 + e^{g̃/s}) (``analysis.h_smooth_value`` / ``h_smooth_grad``; it is within
α/2 of h = f + G·max(0, g)) over P by Frank–Wolfe with γ_t = 2/(t+2):

    l_0 = ½·1 (a public point; it gets weight 0 after the first step since γ_0 = 1)
    for t = 0 .. T−1:  r_t = ∇h_smooth(l_t);  c_t = argmin_c ⟨ℓ_S(c, D), r_t⟩;
                       l_{t+1} = (1 − γ_t) l_t + γ_t ℓ_S(c_t, D)

and return the *mixture* of c_0..c_{T−1} with the Frank–Wolfe weights
w_t = γ_t Π_{j>t}(1 − γ_j) = 2(t+1)/(T(T+1)) (repeated decisions merged): its loss vector is
exactly l_T because ℓ is linear in the mixture.  ([A]'s Algorithm 4 returns the *uniform* mixture
and pays a log T for the averaging; the FW-weighted mixture does not.)

Convergence, with the constant derived for our setting.  For β_p = ``smoothness["h_smooth"][p]``
(‖∇h(x) − ∇h(y)‖_{p*} ≤ β_p‖x − y‖_p on the box) and D_p a public bound on the p-diameter of P,
the curvature constant is C_h ≤ β_p·D_p² ([A] Lemma B.3 / Jaggi 2013); we take the best p.
D_p is *not* the box diameter √K that [A]'s K·β stands for: ℓ has structure.  Between two
decisions on the same data each (group, label) cell's rows only move between predicted labels, so
the joint block changes by a vector of ℓ1 norm ≤ 2 (Σ n_{g,y}/n = 1) with entries ≤ 1, each
conditional block (g, y) by a zero-sum vector of ℓ1 norm ≤ 2 (its rates sum to ≤ 1), and each
selection rate by ≤ 1.  Restricted to S, a conditional block or selection rate B contributes
min(2, |B∩S|) to D_1 and to D_2² (‖v‖₂² ≤ ‖v‖₁‖v‖_∞), the joint block max_{g,y} min(2, |B_gy∩S|)
(its (g, y) cells move mass n_gy/n each, and these sum to 1), and D_∞ ≤ 1 (:func:`hull_diameter`,
:meth:`privfair.statistics.stats.Layout.geometry`, which LOPT reads too).  With e_t the additive error of step
t in the linear subproblem, the descent lemma and convexity give
Δ_{t+1} ≤ (1 − γ_t)Δ_t + γ_t e_t + γ_t² C/2; multiplying by (t+1)(t+2) and telescoping,

    h_smooth(l_T) − min_P h_smooth ≤ [β_p R_p² + 2C·Σ_{t=1}^{T−1} (t+1)/(t+2)] / (T(T+1))
                                     + Σ_{t=0}^{T−1} 2(t+1)/(T(T+1)) · e_t                    (★)

where R_p = ‖½·1_S‖-radius of the box (the first step starts from the public l_0, not from P).
Without privacy e_t = 0 and (★) ≤ 2C/(T+1) ≤ 2Kβ log T / T — Cor B.5's bound (with K·β ≥ C).
Since h ≤ h_smooth ≤ h + α/2, the excess of h over min_P h is at most (★) + α/2
(``predicted_excess_risk``; P contains every vertex, so this also bounds the excess over the best
single decision).

Privacy (docs/traps.md #4, [A] Def. 1.4: the gradient must be taken at a *released* point).
Each iteration t

1. picks c_t with the exponential mechanism (ε_E each), score u_c = −⟨ℓ_S(c, D), r_t⟩, where
   r_t = ∇h_smooth(clip(l̃_t)) is computed from released data only (clip to [0,1] is
   post-processing and never moves the point away from l_t ∈ [0,1]^S).  Its sensitivity
   max_c |⟨ℓ_S(c,D) − ℓ_S(c,D'), r_t⟩| ≤ min_p ‖r_{t,S}‖_{p*}·Δℓ(p) (Hölder; ``delta_l(p)``
   bounds ‖ℓ_S(c,D) − ℓ_S(c,D')‖_p for every c), computed per iteration from the public r_t;
2. releases ℓ_S(c_t, D) with the Gaussian mechanism (ℓ2 sensitivity ``delta_l("l2")``) or the
   Laplace mechanism (ℓ1 sensitivity ``delta_l("l1")``), and keeps l̃_{t+1} = (1 − γ_t)l̃_t +
   γ_t ℓ̃_S(c_t) (post-processing).  The last iteration releases nothing (l̃_T is not needed).

The T selections and T − 1 releases compose adaptively.  The plan calibrates one scale for all of
them, once, with :func:`privfair.privacy.calibrate` and the accountant's rules (RDP for Gaussian
+ pure events; exact optimal or basic composition for pure events), against (ε, δ) and the
events already spent, and schedules them (``plan.schedule``); ``run`` draws every noise through
``schedule.open(accountant, rng)`` and never re-calibrates.  A selection whose r_t is 0 on the
support has score sensitivity 0 (:func:`~._oracles.score_sensitivity`): its argmax is the same
on every neighbour and is taken exactly.  Errors in (★): e_t ≤ (2Δ_E/ε_E)·log(2mT/ρ) (exponential
mechanism, [A] Thm 3.6, w.p. 1 − ρ/(2T) each; Δ_E = ``analysis.sensitivity("h_smooth")`` bounds
every Δ_t because ‖∇h_smooth‖_{p*} ≤ L_p on the box) plus D_p β_p ‖ξ_t‖_p for the noise
ξ_t = l̃_t − l_t = Σ_i w_{t,i} z_i (Gaussian concentration, or the sub-exponential tail of
weighted Laplace sums, w.p. 1 − ρ/(2(T−1)) each), ρ = 0.05.

Planning (from n, ε, δ, α only).  T ∈ [5, 200] (geometric grid), the split of the budget between
selections and releases, and Gaussian vs Laplace are chosen to minimise the predicted bound (★);
``options``: ``T`` (int, public), ``T_range`` ((lo, hi)), ``mechanism`` ("gaussian" / "laplace").
ε = ∞ runs the exact LMO on the exact l_t for T = the smallest T with (★) ≤ α/2, capped at 2000.

Preconditions: a finite decision set; f and g convex (``analysis.is_convex``); the smoothness of
h_smooth known (one constraint at most — combine several with ``pf.lse``); Lipschitz constants
known; Δℓ known (or a group-mass bound to be estimated privately by the planner).

``device="cuda"`` / ``"torch"`` computes the score matrix–vector products with torch.

The audit's negative control is :func:`privfair.privacy.reduced_noise` around the solve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privfair.analysis import formulas as F
from privfair.analysis.formulas import NUMERIC

from .oracles import score_sensitivity    # its one home (LOPT shares it)
from ..base import PUBLIC, RELEASED, Backend, Plan, Verdict
from ..options import Option, Param

#: failure probability ρ of the predicted bound (split between selections and noise)
RHO = 0.05
#: default range of T for private runs, and the cap of the non-private reference
T_RANGE = (5, 200)
T_NONPRIVATE_MAX = 2000
#: shares of the privacy budget (in zCDP units) spent on the selections, tried by the planner
SPLITS = (0.15, 0.3, 0.5, 0.7, 0.85)
#: relative safety margin of the calibration against the target ε
_MARGIN = 1e-6
#: the exact exponential sampler rounds ε down (12 bits) and scores to a grid (Δ/g ≥ 2^10)
_EM_SLACK = (1 + 2.0 ** -10) / (1 - 2.0 ** -11)
FAST_RULES = ("basic", "optimal", "advanced", "rdp")
_NORMS = ("l1", "l2", "linf")


def _T_range(value):
    """(lo, hi) whole numbers with 1 ≤ lo ≤ hi, as a tuple of ints."""
    from privfair.errors import InvalidInputError

    fix = "pass (lo, hi) with 1 ≤ lo ≤ hi"
    try:
        lo, hi = value
        if any(isinstance(v, (bool, np.bool_, str)) or float(v) != int(v) for v in (lo, hi)):
            raise ValueError
        lo, hi = int(lo), int(hi)
    except (TypeError, ValueError, OverflowError):
        raise InvalidInputError("T_range", value, fix) from None
    if not 1 <= lo <= hi:
        raise InvalidInputError("T_range", value, fix)
    return (lo, hi)


#: frank_wolfe's options, declared once (type, range, default, doc): validated by
#: :func:`backends.options.validate` at plan time, before anything is spent
OPTIONS = (
    Option("T", "int", None, low=1,
           doc="iterations; auto: the bound's best over T_range (at ε = ∞: Cor B.5's T)"),
    Option("T_range", "any", None, check=_T_range,
           doc=f"(lo, hi): the T the planner tries when T is not given (auto: {T_RANGE})"),
    Option("mechanism", "str", None, choices=("gaussian", "laplace"),
           doc="the loss releases' noise (auto: the better bound; 'laplace' at δ = 0)"),
)


# ------------------------------------------------------------------------------ constants
def hull_diameter(rates, support) -> dict:
    """Public bound on the diameter of conv{ℓ_S(c, D) : c} in each norm (see module docstring):
    :meth:`privfair.statistics.stats.Layout.hull_diameter`, its one home (LOPT's regret reads the same
    layout geometry), and 0 on an empty support."""
    return rates.layout.hull_diameter(support)


class Constants:
    """Everything the bound (★) needs, read from the Analysis (public)."""

    def __init__(self, problem, analysis):
        self.analysis_id = id(analysis)
        self.support = np.asarray(analysis.support, dtype=np.int64)
        self.d = int(self.support.size)
        self.m = int(len(problem.rates.decisions))
        self.K = int(analysis.K)
        self.beta = dict(analysis.smoothness.get("h_smooth", {}))
        self.lip = dict(analysis.lipschitz.get("h_smooth", {}))
        self.delta_l = {p: analysis.delta_l(p) for p in _NORMS}
        self.diam = hull_diameter(problem.rates, analysis.support)
        self.radius = {"l1": 0.5 * self.d, "l2": 0.5 * math.sqrt(self.d),
                       "linf": 0.5 if self.d else 0.0}
        prods = [(self.beta[p] * self.diam[p] ** 2, p) for p in _NORMS
                 if self.beta.get(p) is not None]
        self.C, self.C_norm = min(prods) if prods else (math.inf, None)
        r0 = [self.beta[p] * self.radius[p] ** 2 for p in _NORMS if self.beta.get(p) is not None]
        self.C0 = min(r0) if r0 else math.inf
        em = [self.lip[p] * self.delta_l[p] for p in _NORMS
              if self.lip.get(p) is not None and self.delta_l[p] is not None]
        self.em_sensitivity = min(em) if em else None
        self.smoothing_gap = (analysis.G * analysis.smoothing * math.log(2.0) * len(problem.g)
                              if problem.g else 0.0)

    def optimization_bound(self, T: int) -> float:
        """First line of (★): the error of exact Frank–Wolfe after T steps."""
        return self.bound(T)["optimization"]

    def bound(self, T, eps_E=None, kind=None, scale=None) -> dict:
        """The three parts of (★) for a private plan (selection ε_E, noise kind and scale)."""
        return excess_bound(**self.bound_values(T, eps_E, kind, scale))

    def bound_values(self, T, eps_E=None, kind=None, scale=None) -> dict:
        """The arguments of :func:`excess_bound` for this problem and plan (all public)."""
        out = {"T": int(T), "C_0": self.C0, "C_h": self.C}
        if eps_E is None:
            return out
        norms = tuple(p for p in _NORMS if self.beta.get(p) is not None)
        out.update(eps_E=eps_E, select=self.m > 1, noisy=T >= 2 and self.d > 0, kind=kind,
                   norms=norms, m=self.m, Delta_E=self.em_sensitivity, s=scale, d=self.d,
                   **{f"D_{p}": self.diam[p] for p in norms},
                   **{f"beta_{p}": self.beta[p] for p in norms})
        return out


def excess_bound(T, C_0, C_h, eps_E=None, *, select=False, noisy=False, kind=None, norms=(),
                 m=1, Delta_E=0.0, s=0.0, d=0, rho=RHO, slack=_EM_SLACK, ops=NUMERIC, **DB):
    """(★) of the module docstring: {"optimization", "selection", "noise", "total"}.

    Pure (no problem, no data): T steps, curvature constants C_0 (first step, from the public
    start) and C_h = min_p β_p D_p²; for a private plan the selection ε_E, the exponential
    mechanism's sensitivity bound Δ_E over m candidates, the release noise (``kind`` "gaussian"
    with σ = ``s`` or "laplace" with b = ``s``) on the d support coordinates, and per norm p in
    ``norms`` the hull diameter ``D_p`` and smoothness ``beta_p`` (keyword arguments).
    ``select``/``noisy`` say whether there is a choice to make (m > 1) and anything released
    (T ≥ 2, d > 0).  ``ops`` is :data:`privfair.analysis.formulas.NUMERIC` or ``symbolic()``.
    """
    inf = ops.inf
    if not ops.symbolic and T < 1:
        return {"optimization": inf, "selection": 0.0, "noise": 0.0, "total": inf}
    opt = (C_0 + 2 * C_h * ops.sum(lambda t: (t + 1) / (t + 2), 1, T - 1)) / (T * (T + 1))
    if eps_E is None:
        opt = opt if ops.symbolic else float(opt)
        return {"optimization": opt, "selection": 0.0, "noise": 0.0, "total": opt}
    sel = 2 * Delta_E / eps_E * ops.log(2 * m * T / rho) * slack if select else 0
    noise = 0
    if noisy:
        lr = ops.log(2 * (T - 1) / rho)                     # per-step failure ρ/(2(T−1))

        def per_step(t):
            omega = 2 * (t + 1) / (T * (T + 1))
            sw = ops.sqrt(2 * (2 * t + 1) / (3 * t * (t + 1)))   # √(Σ_i w_{t,i}²)
            if kind == "gaussian":
                g = s * sw
                N = {"l2": g * (ops.sqrt(d) + ops.sqrt(2 * lr)),
                     "linf": g * ops.sqrt(2 * (lr + ops.log(2 * d))),
                     "l1": g * (d * ops.sqrt(2 / ops.pi) + ops.sqrt(2 * d * lr))}
            else:   # Laplace(b): sub-exponential (ν² = 4b²Σw², α = √2·b·max w)
                lg = lr + ops.log(2 * d)
                u = ops.max(2 * s * sw * ops.sqrt(2 * lg), 4 * ops.sqrt(2) * s / (t + 1) * lg)
                N = {"linf": u, "l2": ops.sqrt(d) * u, "l1": d * u}
            return omega * ops.min(*[DB[f"D_{p}"] * DB[f"beta_{p}"] * N[p] for p in norms])

        noise = ops.sum(per_step, 1, T - 1) if norms else inf
    parts = {"optimization": opt, "selection": sel, "noise": noise}
    if not ops.symbolic:
        parts = {k: float(v) for k, v in parts.items()}
    return {**parts, "total": parts["optimization"] + parts["selection"] + parts["noise"]}


# ------------------------------------------------------------------------------ calibration
@dataclass(frozen=True)
class FWBudget:
    """A private Frank–Wolfe plan's per-release budget, fitted once at plan time (public).

    ``eps_E`` per exponential-mechanism selection (T of them); the T − 1 releases of ℓ_S at
    noise multiplier 1/``mu`` (Gaussian; ``eps_g``, ``delta_g`` a per-release (ε, δ) they
    satisfy, for the explanation) or at ``eps_L`` (Laplace); ``scale_factor`` λ multiplies the
    planner's closed-form split."""

    kind: str
    T: int
    eps_E: float
    scale_factor: float
    mu: float | None = None
    eps_g: float | None = None
    delta_g: float | None = None
    eps_L: float | None = None


def _zcdp_budget(eps, delta) -> float:
    """ρ with ρ + 2√(ρ log(1/δ)) = ε (Bun & Steinke 2016): the planner's fast approximation."""
    L = math.log(1 / delta)
    return (math.sqrt(L + eps) - math.sqrt(L)) ** 2


def approx_params(kind, eps, delta, T, nu) -> tuple:
    """(ε_E, μ = Δ/σ or ε_L) for a split ν — a closed-form approximation used to rank plans.

    Laplace with δ > 0 uses one ε' for all 2T − 1 pure releases (ν is ignored): equal ε keeps
    the accountant's exact optimal composition to one group of randomized responses, which is
    fast to evaluate at every record."""
    if T == 1:
        return eps, None
    if delta > 0:
        rho = _zcdp_budget(eps, delta)
        if kind == "laplace":
            e = max(eps / (2 * T - 1), math.sqrt(2 * rho / (2 * T - 1)))
            return e, e
        return math.sqrt(2 * nu * rho / T), math.sqrt(2 * (1 - nu) * rho / (T - 1))
    return nu * eps / T, (1 - nu) * eps / (T - 1)


def fw_releases(kind, T, eps_E, z, d, *, em_sensitivity=1.0, release_sensitivity=1.0,
                n_candidates=None, relation="sensitive"):
    """The plan's releases: "select" (T exponential-mechanism draws at ``eps_E``) and, for
    T ≥ 2 with a noise parameter ``z`` (μ = Δ/σ, or ε_L), "release" (T − 1 noisy ℓ_S of ``d``
    coordinates).  With unit sensitivities: the curves :func:`calibrate` composes (each
    depends on ε or σ/Δ only); the plan passes its planned bounds (a selection's own Δ_t, of
    the public r_t, is at most ``em_sensitivity`` and is what it draws with)."""
    from privfair.privacy import (Scheduled, exponential_event, gaussian_event, laplace_event,
                                  laplace_scale)

    out = [Scheduled("select", exponential_event(
        em_sensitivity, eps_E, count=T, n_candidates=n_candidates,
        label=f"frank_wolfe LMO: {T} exponential-mechanism draws",
        sensitivity_source=("‖r_t,S‖_dual·Δℓ from the public gradient r_t, at most "
                            f"min_p L_p·Δℓ_p; protect={relation!r}")))]
    if T >= 2 and z is not None:
        src = f"compiler: Δℓ on the support under protect={relation!r}"
        label = f"frank_wolfe loss vectors ({T - 1})"
        if kind == "gaussian":
            ev = gaussian_event(release_sensitivity, release_sensitivity / z, count=T - 1,
                                dimension=max(d, 1), sensitivity_source=src + " (ℓ2)",
                                label=label)
        else:
            ev = laplace_event(release_sensitivity, z, scale=laplace_scale(release_sensitivity, z),
                               dimension=max(d, 1), count=T - 1,
                               sensitivity_source=src + " (ℓ1)", label=label)
        out.append(Scheduled("release", ev, exact=True))
    return out


def calibrate(kind, T, eps_E, z, epsilon, delta, d, spent=()):
    """The planner's split (ε_E, z) scaled by the largest λ whose releases, beside ``spent``,
    compose to ≤ (ε, δ) — :func:`privfair.privacy.calibrate` with the fast rules (basic,
    optimal, advanced, RDP); at δ = 0 with pure releases only, basic composition's λ is exact
    and is its starting point.  Returns a :class:`FWBudget`, or None when nothing fits."""
    from privfair.errors import InvalidPrivacyError
    from privfair.privacy import gaussian_epsilon
    from privfair.privacy import calibrate as fit

    def events(lam):
        zz = None if z is None else lam * z
        return [r.event for r in fw_releases(kind, T, lam * eps_E, zz, d)]
    hi = 2.0 ** 10                   # λ > 1 when the closed-form split is conservative
    if delta == 0 and (kind == "laplace" or T == 1) and not spent:
        hi = epsilon * (1 - _MARGIN) / (T * eps_E + ((T - 1) * z if T >= 2 else 0.0))
    try:
        lam = fit(events, epsilon, delta, spent=spent, hi=hi, rules=FAST_RULES,
                  key=("frank_wolfe", kind, T, eps_E, z, d))
    except InvalidPrivacyError:
        return None
    extra = {}
    if T >= 2 and z is not None and kind == "gaussian":
        d_g = delta
        e_g = gaussian_epsilon(d_g, lam * z)
        while e_g <= 0.0:             # μ so small that the release is (0, δ)-DP: any ε works
            d_g /= 10.0
            e_g = gaussian_epsilon(d_g, lam * z)
        extra = {"mu": lam * z, "eps_g": e_g, "delta_g": d_g}
    elif T >= 2 and z is not None:
        extra = {"eps_L": lam * z}
    return FWBudget(kind, T, lam * eps_E, lam, **extra)


_PRIVATE = "set by a private plan whose releases fit the budget"
_BOTH = "set at ε = ∞ and by a private plan whose releases fit the budget"
#: what a plan puts in Plan.params, declared once (checked when the plan is made)
PLAN_PARAMS = (
    Param("G", float, "the penalty weight of h = f + G·max(0, g) (the Analysis' G)"),
    Param("smoothing", float, "the softmax smoothing of max(0, g) in h_smooth"),
    Param("candidates", int, "m, the decisions the exponential-mechanism LMO selects from"),
    Param("support", int, "d, the coordinates of ℓ that f and g read (the releases' size)"),
    Param("C_h", float, "the curvature bound β·diam² of h_smooth, least over the norms"),
    Param("C_h_norm", (str, None), "the norm C_h is measured in (None: no β proven)"),
    Param("diameter", dict, "norm → the diameter of the hull of the loss vectors"),
    Param("beta_h_smooth", dict, "norm → the smoothness β of h_smooth"),
    Param("T", int, "the iterations"),
    Param("cor_b5_T", (int, None), "[A] Cor B.5's T from the Analysis (None: none); " + _BOTH,
          optional=True),
    Param("cor_b5_bound", float, "[A] Cor B.5's bound at T (ε = ∞ only)", optional=True),
    Param("bound_h_smooth", float, "(★)'s bound on h_smooth − min h_smooth at T; " + _BOTH,
          optional=True),
    Param("mechanism", str, "'gaussian' or 'laplace': the loss releases' noise; " + _PRIVATE,
          optional=True),
    Param("selection_share", float, "ν, the selections' share of the budget; " + _PRIVATE,
          optional=True),
    Param("calibration", FWBudget, "the per-release budget fitted at plan time; " + _PRIVATE,
          optional=True),
    Param("noise_scale", (float, None), "σ (Gaussian) or b (Laplace) of each loss release "
          "(None: no release); " + _PRIVATE, optional=True),
    Param("em_sensitivity_bound", float, "Δ_E, the LMO score's sensitivity; " + _PRIVATE,
          optional=True),
    Param("bound_parts", dict, "(★)'s parts: optimization, selection, noise, total; "
          + _PRIVATE, optional=True),
)


# ------------------------------------------------------------------------------ backend
class FrankWolfeBackend(Backend):
    name = "frank_wolfe"
    bound_on_h = True        # predicted_excess_risk bounds h − min h (Plan.bound_terms)
    exposes = {"T": (PUBLIC, "the planned iteration count"),
               "calibration": (PUBLIC, "the per-release budget fitted to the plan"),
               "loss_vector": (RELEASED, "exact ℓ of the output — ε = ∞ reference runs only"),
               "h_smooth": (RELEASED, "exact h of the output — ε = ∞ reference runs only"),
               "h": (RELEASED, "exact h of the output — ε = ∞ reference runs only")}
    option_table = OPTIONS
    plan_params = PLAN_PARAMS
    theorem = ("[A] Alg. 4 / Lemma B.4 / Cor B.5 (Frank–Wolfe, curvature C ≤ β·diam²), private "
               "LMO by the exponential mechanism at privately released loss vectors")

    # -- accepts ------------------------------------------------------------------------------
    def accepts(self, problem, analysis) -> Verdict:
        rates = problem.rates
        ds = getattr(rates, "decisions", None)
        if ds is None or not getattr(ds, "is_finite", False):
            return Verdict(False, "needs a finite decision set (pf.FiniteSet or pf.Thresholds); "
                                  f"got {type(ds).__name__}")
        if getattr(rates, "surrogate", None) is not None:
            return Verdict(False, "needs 0-1 statistics of a finite decision set (no surrogate)")
        if not analysis.is_convex:
            why = "; ".join(v for k, v in analysis.reasons.items() if k.startswith("convexity"))
            return Verdict(False, "Frank–Wolfe needs convex f and g: "
                                  f"{why or analysis.curvature}; use backend='exponential', "
                                  "which needs no convexity")
        beta = analysis.smoothness.get("h_smooth", {})
        if all(beta.get(p) is None for p in _NORMS):
            why = "; ".join(f"{k}: {v}" for k, v in analysis.reasons.items()
                            if k.startswith("smoothness"))
            return Verdict(False, "the smoothness of h_smooth is unknown (Frank–Wolfe's rate needs "
                                  f"it): {why or 'no constant proven'}")
        why = analysis.sensitivity_unproven()
        return Verdict(False, why) if why else Verdict(True)

    # -- plan ---------------------------------------------------------------------------------
    def plan(self, problem, analysis, privacy, options, spent=()) -> Plan:
        """T, the split and the releases, scheduled once (``spent``: events already recorded
        against the same (ε, δ))."""
        opts = self.options_from(options)       # typed errors before anything is spent
        c = Constants(problem, analysis)
        params = {"G": analysis.G, "smoothing": analysis.smoothing, "candidates": c.m,
                  "support": c.d, "C_h": c.C, "C_h_norm": c.C_norm,
                  "diameter": dict(c.diam), "beta_h_smooth": dict(c.beta)}
        notes = []
        if not privacy.is_private:
            T = opts.get("T") or self._nonprivate_T(c, analysis)
            b = c.bound(T)
            params.update(T=T, cor_b5_T=analysis.iterations.get("frank_wolfe_T"),
                          bound_h_smooth=b["total"],
                          cor_b5_bound=self._cor_b5(c, analysis, T))
            return Plan(self.name, privacy, analysis, problem, params=params, budget=[],
                        predicted_excess_risk=b["total"] + c.smoothing_gap, theorem=self.theorem,
                        notes=notes + ["exact linear minimisation oracle on exact loss vectors"])
        eps, delta = privacy.epsilon, privacy.delta
        if c.em_sensitivity is None or c.delta_l["l1"] is None:
            T = opts.get("T") or T_RANGE[0]
            params.update(T=T)
            return Plan(self.name, privacy, analysis, problem, params=params,
                        budget=[], predicted_excess_risk=math.inf, theorem=self.theorem,
                        notes=notes + ["Δℓ unknown at planning time"])
        kinds = [opts["mechanism"]] if opts["mechanism"] is not None else (
            ["gaussian", "laplace"] if delta > 0 else ["laplace"])
        if delta == 0 and kinds == ["gaussian"]:
            from privfair.errors import InvalidInputError

            raise InvalidInputError("mechanism", "gaussian", "the Gaussian mechanism needs δ > 0")
        if opts["T"] is not None:
            Ts = [opts["T"]]
        else:
            lo, hi = opts["T_range"] or T_RANGE
            Ts = sorted(set(int(round(v)) for v in np.geomspace(lo, hi, 16)))
        cands = []
        for kind in kinds:
            sens = c.delta_l["l2"] if kind == "gaussian" else c.delta_l["l1"]
            cand = None
            for T in Ts:
                splits = SPLITS if T >= 2 and (kind == "gaussian" or delta == 0) else (0.5,)
                for nu in splits:
                    e_E, z = approx_params(kind, eps, delta, T, nu)
                    scale = None if z is None else sens / z
                    risk = c.bound(T, e_E, kind, scale)["total"]
                    if cand is None or risk < cand[0]:
                        cand = (risk, kind, T, nu, e_E, z)
            cands.append(cand)
        cands.sort(key=lambda x: x[0])
        best = None
        for approx_risk, kind, T, nu, e_E, z in cands:
            if best is not None and approx_risk > 1.5 * best[0]["total"]:
                continue      # clearly worse: skip its exact calibration
            cal = calibrate(kind, T, e_E, z, eps, delta, c.d, spent)
            if cal is None:
                continue
            scale = (c.delta_l["l2"] / cal.mu if cal.mu is not None else
                     (c.delta_l["l1"] / cal.eps_L if cal.eps_L is not None else None))
            b = c.bound(T, cal.eps_E, kind, scale)
            if best is None or b["total"] < best[0]["total"]:
                best = (b, kind, T, nu, cal, scale)
        if best is None:
            params.update(T=Ts[0])
            return Plan(self.name, privacy, analysis, problem, params=params, budget=[],
                        predicted_excess_risk=math.inf, theorem=self.theorem,
                        notes=notes + ["no calibration fits the budget"])
        b, kind, T, nu, cal, scale = best
        params.update(T=T, mechanism=kind, selection_share=nu, calibration=cal,
                      noise_scale=scale, em_sensitivity_bound=c.em_sensitivity,
                      bound_parts=b, bound_h_smooth=b["total"],
                      cor_b5_T=analysis.iterations.get("frank_wolfe_T"))
        budget = [(f"each of T={T} exponential-mechanism draws (private LMO)", cal.eps_E, 0.0)]
        if T >= 2:
            if kind == "gaussian":
                budget.append((f"each of T−1={T - 1} Gaussian releases of ℓ_S (σ={scale:.3g})",
                               cal.eps_g, cal.delta_g))
            else:
                budget.append((f"each of T−1={T - 1} Laplace releases of ℓ_S (b={scale:.3g})",
                               cal.eps_L, 0.0))
        notes.append(f"fitted to ε={eps:g} at δ={delta:g} by the accountant's fast rules (basic, "
                     "optimal, advanced, RDP); the certificate, by every rule, may be tighter")
        out = Plan(self.name, privacy, analysis, problem, params=params, budget=budget,
                   predicted_excess_risk=b["total"] + c.smoothing_gap, theorem=self.theorem,
                   notes=notes)
        out.schedule = _schedule(cal, c, privacy, spent)
        return out

    @staticmethod
    def _nonprivate_T(c, analysis):
        """Smallest T with (★) ≤ α/2 (so h is within α of its minimum), capped."""
        target = analysis.alpha / 2
        if c.optimization_bound(1) <= target:
            return 1
        lo, hi = 1, T_NONPRIVATE_MAX
        if c.optimization_bound(hi) > target:
            return hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if c.optimization_bound(mid) > target else (lo, mid)
        return hi

    @staticmethod
    def _cor_b5(c, analysis, T):
        b = c.beta.get("l2")
        if b is None or T < 2:
            return math.inf
        return F.ab5_bound(K=max(c.d, 1), beta_h=b, T=T)   # [A] Cor B.5, K = the support size

    def formula(self, plan):
        """(★) + the smoothing gap as a sympy formula (``excess_bound`` with sympy ops).

        ε enters through ε_E and the noise scale s, which the accountant's composition
        calibrates numerically (no closed form); Δ_E ∝ 1/n likewise enters as a value.
        """
        from privfair.analysis.theorems import formula

        if not math.isfinite(plan.predicted_excess_risk):
            return None
        c = Constants(plan.problem, plan.analysis)
        p = plan.params
        if plan.privacy.is_private:
            v = c.bound_values(p["T"], p["calibration"].eps_E, p["mechanism"], p["noise_scale"])
            v.update(rho=RHO, slack=_EM_SLACK)
        else:
            v = c.bound_values(p["T"])
        fixed = {k: v.pop(k) for k in ("select", "noisy", "kind", "norms") if k in v}
        v["gap_smooth"] = c.smoothing_gap

        def total(gap_smooth, ops, **kw):
            return excess_bound(ops=ops, **kw)["total"] + gap_smooth

        return formula(total, v, **fixed)

    # -- run ----------------------------------------------------------------------------------
    def run(self, plan, *, rng, accountant, device="cpu", progress=True):
        from privfair.errors import InvalidInputError
        from privfair.results.result import Result

        from .._draws import select

        problem, analysis, params = plan.problem, plan.analysis, plan.params
        ds = problem.rates.decisions
        private = plan.privacy.is_private
        T = int(params["T"])
        torch = None
        if device in ("cuda", "torch"):
            try:
                import torch
            except ImportError:  # pragma: no cover - depends on the environment
                raise InvalidInputError("device", device, "torch is not installed; use "
                                        "device='cpu' or pip install torch") from None
        c = getattr(plan, "_fw_constants", None)
        if c is None or c.analysis_id != id(analysis):
            c = Constants(problem, analysis)       # public: from the Analysis only
            plan._fw_constants = c
        S = c.support
        draws, cal = None, params.get("calibration")
        if private:
            schedule = getattr(plan, "schedule", None)
            if schedule is None:
                self.refuse("the plan has no release schedule (Δℓ was unknown when planning, "
                            f"or no calibration fitted): {analysis.reason('delta_l')}")
            draws = schedule.open(accountant, rng)     # the plan is final: no re-fit here
        L = problem.rates.evaluate_all()                      # (m, K): one vectorized pass
        LS = L[:, S]
        if torch is not None:
            LS_dev = torch.as_tensor(LS, dtype=torch.float64,
                                     device="cuda" if device == "cuda" else "cpu")

        point = np.full(c.K, 0.5)                             # public start l_0
        l_tilde = None                                        # released FW combination on S
        weights = np.zeros(c.m)
        trace = []
        from privfair.util.progress import bar

        iterator = bar(range(T), "frank_wolfe", progress, min_steps=100)
        for t in iterator:
            gamma = 2.0 / (t + 2)
            if l_tilde is not None:
                point[S] = np.clip(l_tilde, 0.0, 1.0)         # post-processing of releases
            r = np.asarray(analysis.h_smooth_grad(point), dtype=float)[S]
            if torch is not None:
                scores = -(LS_dev @ torch.as_tensor(r, dtype=torch.float64, device=LS_dev.device))
            else:
                scores = -(LS @ r)
            rec = {"t": t, "gamma": gamma}
            sens = None
            if private:
                sens, norm = score_sensitivity(r, c.delta_l.get)
                rec.update(score_sensitivity=sens, norm=norm)
            if sens:
                idx = select(draws, "select", scores, sens)
            else:     # ε = ∞, or r = 0 on the support: every score is the same on every neighbour
                s_np = scores.cpu().numpy() if torch is not None else scores
                idx = int(np.argmax(s_np))        # exact LMO
            weights *= 1.0 - gamma
            weights[idx] += gamma
            rec["index"] = idx
            if t < T - 1:
                value = LS[idx]
                if not private or "release" not in draws.schedule:
                    released = value                  # exact, or the same on every neighbour
                elif cal.kind == "gaussian":
                    released = draws.gaussian("release", value)
                else:
                    released = draws.laplace("release", value)
                released = np.asarray(released, dtype=float)
                l_tilde = released if l_tilde is None else (1 - gamma) * l_tilde + gamma * released
            trace.append(rec)
        keep = np.flatnonzero(weights > 0)
        w = weights[keep] / weights[keep].sum()
        info = {"T": T}
        if not private:     # exact quantities only for the non-private reference
            lT = w @ L[keep]
            info.update(loss_vector=lT, h_smooth=float(analysis.h_smooth_value(lT)),
                        h=float(analysis.h_value(lT)))
        else:
            info.update(calibration=cal)
        return Result(self.name, [ds.decision(int(i)) for i in keep], w, ds, plan=plan,
                      trace=trace, info=info)


def _schedule(cal, c, privacy, spent):
    """The plan's :class:`~privfair.privacy.Schedule` at budget ``cal``: the selections at
    their planned sensitivity bound Δ_E, the releases at Δℓ (ℓ2 Gaussian, ℓ1 Laplace).  A Δℓ of
    0 means ℓ_S is the same on every neighbour: public, nothing scheduled for it."""
    from privfair.privacy import Schedule

    from privfair.errors import BackendRefusedError

    z = cal.mu if cal.kind == "gaussian" else cal.eps_L
    sens = c.delta_l["l2" if cal.kind == "gaussian" else "l1"] if z is not None else None
    if z is not None and sens is None:     # never release what no sensitivity bounds
        raise BackendRefusedError("backend", "frank_wolfe", "Δℓ of the loss releases is not "
                                  "proven")
    releases = fw_releases(cal.kind, cal.T, cal.eps_E, z if sens else None, c.d,
                           em_sensitivity=c.em_sensitivity or 1.0,
                           release_sensitivity=sens or 1.0, n_candidates=c.m,
                           relation=privacy.protect)
    return Schedule(releases, privacy.epsilon, privacy.delta, spent)


from .. import register  # noqa: E402

register(FrankWolfeBackend())

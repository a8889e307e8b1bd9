"""Objective perturbation for row-private sparse GLM ERM — Chaudhuri et al. 2011; Kifer, Smith &
Thakurta 2012 (KST) Thm 2; [K] §4.3, Prop 2 (it is output perturbation of the dual).

Mechanism (sum form).  Draw b, then release the minimizer over C of
    Σ_i n·w_i·l(θᵀu_i, y_i) + (nΛ + Δ)/2·‖θ‖² + bᵀθ
(mean form: J_D(θ) + (Δ/2n)‖θ‖² + (b/n)ᵀθ).  Constants (:mod:`backends.erm`,
:class:`privfair.models.erm.ERM`): every row's Hessian is rank one with eigenvalue ≤ β_H; a GLM, so
the gradient difference v between neighbours lies in the 2-dimensional span of the two rows' u;
and ‖v‖ ≤ D = n·Δ_g at every θ ∈ C, Δ_g = ``erm.gradient_sensitivity(relation)``.

The gradient sensitivity D (issue #16).  The textbook bound is D = 2ζ, ζ = ω·sup|l'|·‖u‖_max
(Chaudhuri, Monteleoni & Sarwate 2011, Kifer et al. 2012: the triangle inequality on the two
rows' terms).  For the logistic loss it is loose, and privfair uses the exact supremum over
θ ∈ C: with m = y·u a row's gradient is −σ(−θᵀm)·m, and the set it ranges over as the row
varies is, in the plane of θ and m, ρ times the curve γ_β(α) = σ(−β cos α)(cos α, sin α),
β = ‖θ‖ρ ≤ B = r₂ρ; D = ω·ρ·κ(B), κ its diameter (:func:`privfair.models.erm.
logistic_gradient_diameter` proves it and evaluates it with certified rounding up: κ(0) = 1,
κ(2) ≈ 1.28, κ(10) ≈ 1.84, → 2).  On one feature with the intercept fixed at 0 (only x̃ counts:
θ_b ≡ 0 on C, and b is drawn in the w-coordinates only: see below) the set is a segment
and κ ≤ 1.07 at every B — so the audit's one-feature instance, whose relabelled row moves the
gradient by exactly ωR, is calibrated within 7% of its true shift.  When only a row's sensitive
attribute changes (its weight moves in [0, ω/n], its x and y do not) D = ω·ρ·sup_{|z|≤B}|l'|.

Privacy (ε = ε₁ + ε₂ + 2ε₃).  The output density is ν(b(θ))·|det ∇b(θ)| (change of variables;
KST extend it to a convex domain C and non-smooth regularizers by smoothing).
* Jacobian: replacing a row changes the Hessian by a rank-one term of norm ≤ β_H on top of
  A ⪰ (Δ + nΛ)I, so |log det ratio| ≤ log(1 + β_H/(Δ + nΛ)) ≤ ε₁ for Δ = max(0, β_H/(e^{ε₁} − 1) − nΛ).
* Gaussian b ~ N(0, σ²I): the privacy loss of the noise is (2⟨b, v⟩ + ‖v‖²)/(2σ²) with ‖v‖ ≤ D
  and v in a fixed 2-dimensional subspace S, so ⟨b, v⟩ ≤ D‖P_S b‖ and ‖P_S b‖²/σ² ~ χ²₂:
  with probability ≥ 1 − δ₂ the loss is ≤ Dt/σ + D²/(2σ²), t = √(2 log(1/δ₂)).  Setting it to
  ε₂ gives σ = (D/2)/u, u = (√(t² + 2ε₂) − t)/2 — with D = 2ζ the replacement-relation form of
  KST's σ = ζ√(8 log(2/δ) + 4ε)/ε (add/remove), numerically within a few percent of it.
  Pure ε: density ∝ exp(−‖b‖/κ), κ = D/ε₂ (Chaudhuri et al. 2011, Thm 9): for a shift s with
  ‖s‖ ≤ D, log ν(b)/ν(b + s) = (‖b + s‖ − ‖b‖)/κ ≤ D/κ = ε₂ (the triangle inequality), in any
  dimension.
* Exact minimizer (trap): the solver certifies ‖θ̃ − θ*‖ ≤ τ (public), and θ̃ + N(0, σ₃²I) with
  σ₃ calibrated for sensitivity τ at (ε₃, δ₃) is released (approximate minima perturbation,
  Iyengar et al. 2019): P[Y(D) ∈ S] ≤ e^{ε₃}P[Y*(D) ∈ S] + δ₃ for Y* = θ* + N, so the total is
  (ε₁ + ε₂ + 2ε₃, e^{ε₃}δ₂ + (1 + e^{ε₁+ε₂+ε₃})δ₃).  Pure ε uses ℓ2-Laplace smoothing (κ₃ = τ/ε₃).

Where the noise is drawn (issue #16).  b and the smoothing noise are drawn in F, the span of the
coordinates of θ that C lets move (:func:`backends.erm.noise.free_coordinates`: all of R^P, or
the P − 1 coordinates of w when C pins the intercept, θ_b ≡ 0), and are 0 outside it; F is read
from the declared decision set only (public).  Claim: the release is (ε, δ)-DP with the same
ε₁, ε₂, ε₃, δ₂, δ₃, D, σ (or κ) and σ₃ (or κ₃) as above — the event and the accounting are
unchanged.  Proof.  (i) C ⊂ F, F a linear subspace, so for θ ∈ C: θᵀu_i = θᵀ(P_F u_i) and
bᵀθ = (P_F b)ᵀθ.  The mechanism is therefore objective perturbation of the ERM over C inside
F ≅ R^{d_F}, d_F = dim F, with rows P_F u_i and noise b_F ∈ F.  (ii) Every constant the proof
above uses is no larger there: the gradient difference of neighbours is P_F v with
‖P_F v‖ ≤ D (``ERM.gradient_sensitivity`` bounds ‖Pv‖ with P the identity or P_F itself,
and ‖P_F v‖ ≤ ‖Pv‖ either way); it lies in P_F S, of dimension ≤ 2; the Hessian change is
the rank-one P_F(ω l'' u uᵀ)P_F of norm ≤ β_H, on top of the restricted A ⪰ (Δ + nΛ)I_F.
(iii) The noise densities on F are the ones the proof needs in dimension d_F: pure ε,
∝ exp(−‖b‖/κ) on F (κ·Gamma(d_F, 1) times a uniform direction of F), whose log-ratio under a
shift of norm ≤ D is ≤ D/κ = ε₂ by the triangle inequality (above; the argument holds in every
dimension); Gaussian, N(0, σ²I_F), and the χ²₂ tail bound reads only ‖P_S b‖ with S ⊂ F.  So
KST's change-of-variables argument, run in F, gives (ε₁ + ε₂, δ₂) for the exact minimizer.
(iv) θ̃ and θ* both lie in C ⊂ F, so θ̃ − θ* ∈ F with ‖θ̃ − θ*‖ ≤ τ, and the smoothing noise in F
at the same scale is (ε₃, δ₃)-DP by the same density argument (pure ε) or the Gaussian
mechanism on F.  The composition (ε₁ + ε₂ + 2ε₃, ·) follows as before.  ∎  The preconditions
are unchanged and still checked (:mod:`backends.erm.preconditions`, ``need_c2``).
Why: when C pins the intercept the minimizer only ever sees P_F b.  With b drawn on R^P the
Gaussian's P_F b is N(0, σ²I_F) — the same law, so at δ > 0 nothing changes but the random
stream — while at δ = 0 the marginal of exp(−‖b‖/κ) on R^P is not exp(−‖b_F‖/κ) on F: it is
wider (on one free coordinate of P = 2, variance 3κ² against the Laplace's 2κ²) and its
log-ratio reaches 1/κ only in its tails.  It was private, but noisier than the guarantee pays
for, and the audit could not see half the noise removed (issue #16).  Drawing in F gives every
user the noise the proof needs and no more; the predicted bound uses E‖b‖ = κ·d_F.

Only twice-differentiable losses (logistic, squared) qualify; b is drawn with float Gaussians and
the solver runs in floating point, so the event is marked idealized.  One scheduled release (its
event covers b and the smoothing noise), drawn once through
:meth:`privfair.privacy.release.Draws.custom` — so the audit's ``reduced_noise(m)`` scales both.

Utility: E[J(θ_priv)] − J(θ̂) ≤ Δ·r₂²/(2n) + 2σ·w(C)/n + (ω·L·‖u‖ + Λr₂)·σ₃√P, with w(C) the
Gaussian width of C (ρ·E Ω*(g) + ρ_b√(2/π): dimension-free for the ℓ1 ball — KST Thm 4's G_C).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from privfair.privacy import Scheduled, approximate_event, calibrate_gaussian_sigma

from ..base import Backend
from ..options import Option, Param
from .backend import CONSTRAINT_PLAN_PARAMS, ERM_PLAN_PARAMS, PRIVATE_ONE_ERM, ERMBackend
from .noise import free_coordinates, gamma_norm_noise_in, gaussian_noise_in
from .options import ERM_OPTIONS
from .sensitivity import gradient_sensitivity
from .solver import solve, solve_certified, tau_target
from .widths import expected_gaussian_norm, primal_width

THEOREM = ("objective perturbation (Chaudhuri et al. 2011; Kifer, Smith & Thakurta 2012, Thm 2; "
           "[K] Prop 2) with a certified minimizer (Iyengar et al. 2019)")
SMOOTH_SHARE = 0.005                          # ε₃ / ε for the smoothing of the certified minimizer
JACOBIAN_SHARES = (0.02, 0.05, 0.1, 0.2, 0.35, 0.5)
#: the name of the one scheduled release (b and the smoothing noise)
RELEASE = "objective perturbation noise"


def gaussian_noise_sigma(zeta, eps2, delta2, sqrt=math.sqrt, log=math.log):
    """σ = ζ/u, u = (√(t² + 2ε₂) − t)/2, t = √(2 log(1/δ₂)) (module docstring, Gaussian b, with
    ζ = D/2 half the gradient sensitivity)."""
    t = sqrt(2 * log(1 / delta2))
    return zeta / ((sqrt(t * t + 2 * eps2) - t) / 2)


def jacobian_ridge(beta_H, eps1, n, l2, expm1=math.expm1, Max=max):
    """Δ = max(0, β_H/(e^{ε₁} − 1) − nΛ): |log det ratio| ≤ ε₁ (module docstring)."""
    return Max(0, beta_H / expm1(eps1) - n * l2)


def utility_bound(epsilon, n, P, r2, width_C, zeta, beta_H, l2, share, delta2, sigma3,
                  kappa_g=2.0, smooth_share=None, sqrt=math.sqrt, log=math.log,
                  expm1=math.expm1, Max=max):
    """The plan's bound for (ε, δ > 0): Δr₂²/(2n) + 2σ·w(C)/n + (ζ + Λr₂)·σ₃√P, with
    ε₁ = share·ε, ε₃ = SMOOTH_SHARE·ε, ε₂ = ε − ε₁ − 2ε₃ and σ for the gradient sensitivity
    D = κ_g·ζ (κ_g = 2: the triangle inequality; the logistic loss's is smaller) (Chaudhuri et al.
    2011 / KST Thm 4 form with the Gaussian width; the last term is the smoothing of the
    certified minimizer).  Pure; pass sympy's functions to get the formula."""
    ss = SMOOTH_SHARE if smooth_share is None else smooth_share
    e1, e3 = share * epsilon, ss * epsilon
    e2 = epsilon - e1 - 2 * e3
    Delta = jacobian_ridge(beta_H, e1, n, l2, expm1=expm1, Max=Max)
    sigma = gaussian_noise_sigma(kappa_g * zeta / 2, e2, delta2, sqrt=sqrt, log=log)
    return Delta * r2 * r2 / (2 * n) + 2 * sigma * width_C / n + (zeta + l2 * r2) * sigma3 * sqrt(P)


@dataclass(frozen=True)
class Constants:
    """The mechanism's constants at one (ε, δ) and Jacobian share (all public).

    ``D`` is the gradient sensitivity (sum form) the noise is calibrated to; ``scale`` the
    noise's scale the release's event records (σ for δ > 0, κ for pure ε); ``smooth`` the
    smoothing noise's scale (σ₃ or κ₃)."""

    share: float
    eps1: float
    eps2: float
    eps3: float
    Delta: float
    tau: float
    zeta: float
    beta_H: float
    D: float
    scale: float
    smooth: float
    delta2: float | None
    delta3: float | None
    bound: float
    width_C: float
    n: int
    P: int
    r2: float
    l2: float

    @property
    def kappa_g(self) -> float:
        return self.D / self.zeta if self.zeta > 0 else 2.0


def constants(erm, epsilon, delta, share=None, relation="row") -> Constants:
    """The mechanism's :class:`Constants` for a target (ε, δ) — closed forms, no fitting (the
    budget itself is fitted by :func:`privfair.privacy.release.calibrate` at plan time); with
    ``share`` None, the public grid of Jacobian shares is searched for the smallest bound."""
    key = ("objective_perturbation", epsilon, delta, share, relation)
    if key in erm.meta:
        return erm.meta[key]
    if share is None:      # smallest predicted excess over a public grid of Jacobian shares
        erm.meta[key] = min((constants(erm, epsilon, delta, s, relation)
                             for s in JACOBIAN_SHARES), key=lambda c: c.bound)
        return erm.meta[key]
    n, zeta, bH, P = erm.n, erm.zeta, erm.beta_H, erm.P
    D = erm.gradient_sensitivity(relation) * n
    e3 = SMOOTH_SHARE * epsilon
    e1 = share * epsilon
    e2 = epsilon - e1 - 2 * e3
    Delta = float(jacobian_ridge(bH, e1, n, erm.l2))
    tau = tau_target(erm)
    r2 = erm.decisions.radius
    wC = primal_width(erm.decisions).value
    if delta > 0:
        d3 = 1e-3 * delta / (1 + math.exp(epsilon))
        d2 = (delta - (1 + math.exp(e1 + e2 + e3)) * d3) / math.exp(e3)
        scale = gaussian_noise_sigma(D / 2, e2, d2)
        smooth = calibrate_gaussian_sigma(tau, e3, d3)
        bound = utility_bound(epsilon, n, P, r2, wC, zeta, bH, erm.l2, share, d2, smooth,
                              kappa_g=D / zeta if zeta > 0 else 2.0)
    else:
        d2 = d3 = None
        scale, smooth = D / e2, tau / e3
        # b and the smoothing are drawn in F (module docstring): E‖b‖ = κ·d_F, and
        # E sup_{θ∈C} bᵀθ = E‖b‖·w(C)/E‖g_F‖ (C ⊂ F: its Gaussian width is the same in F)
        dF = len(free_coordinates(erm.decisions, P))
        noise_mean = scale * dF / expected_gaussian_norm(dF)
        bound = (Delta * r2 * r2 / (2 * n) + 2 * noise_mean * wC / n
                 + (zeta + erm.l2 * r2) * smooth * dF)
    c = Constants(share, e1, e2, e3, Delta, tau, zeta, bH, D, scale, smooth, d2, d3, bound, wC,
                  n, P, r2, erm.l2)
    erm.meta[key] = c
    return c


class ObjectivePerturbationBackend(ERMBackend, Backend):
    name = "objective_perturbation"
    theorem = THEOREM
    need_strong = False
    need_c2 = True
    #: the projection, the constraint form's three (backends.erm.options.ERM_OPTIONS) and ε₁'s share
    option_table = ERM_OPTIONS + (
        Option("jacobian_share", "float", None, low=0, high=1 - 2 * SMOOTH_SHARE, low_open=True,
               high_open=True,
               doc="ε₁/ε, the share of ε paying for the Jacobian (ridge Δ); auto: the public grid "
                   f"{JACOBIAN_SHARES} entry with the smallest predicted bound"),)
    plan_params = ERM_PLAN_PARAMS + CONSTRAINT_PLAN_PARAMS + (
        Param("jacobian_share", float, "ε₁/ε, the share paying for the Jacobian; "
              + PRIVATE_ONE_ERM, optional=True),
        Param("Delta", float, "the ridge Δ the mechanism adds; " + PRIVATE_ONE_ERM,
              optional=True),
        Param("sigma", float, "the noise scale of the linear term b; " + PRIVATE_ONE_ERM,
              optional=True),
        Param("tau", float, "the certified optimisation tolerance; " + PRIVATE_ONE_ERM,
              optional=True),
        Param("gradient_sensitivity", float, "D, the gradient's sensitivity; " + PRIVATE_ONE_ERM,
              optional=True),
        Param("bound_constants", dict, "the constants of the bound's formula (when δ₂ is "
              "defined); " + PRIVATE_ONE_ERM, optional=True),
    )

    def certify_ridge(self, erm, privacy):
        """The ridge Δ/n the mechanism adds (Δ public: from β_H, ε₁, n and Λ)."""
        return constants(erm, privacy.epsilon, privacy.delta).Delta / erm.n

    def releases(self, erm, spec, *, relation="row", options, label="", rules=None,
                 prefix="", spent=()):
        """The one release at ``spec``: its event claims (ε, δ) and records b's scale."""
        c = constants(erm, spec.epsilon, spec.delta, options["jacobian_share"], relation)
        how = gradient_sensitivity(erm, relation)[1]
        src = (f"D = n·Δ_g = {c.D:.4g}, Δ_g = {how}; the gradient change lies in the span of the "
               f"two rows; β_H = {c.beta_H:.4g} (rank-one Hessian)")
        ev = approximate_event(
            spec.epsilon, spec.delta, theorem=THEOREM, sensitivity=c.D, norm="l2",
            scale=c.scale, sensitivity_source=src, label=label, idealized=True,
            sampler=("b: float Gaussian (idealized); Jacobian ε₁={:.3g}, Δ={:.4g}; smoothing of "
                     "the minimizer certified to τ={:.2g}{}".format(
                         c.eps1, c.Delta, c.tau, "" if erm.decisions.exact_projection
                         else " (projection by cvxpy: exactness assumed)")))
        return [Scheduled(prefix + RELEASE, ev)]

    def private_erm(self, erm, spec, *, draws, relation="row", prefix="", options):
        """The perturbed minimizer: b and the smoothing noise are drawn together, once, through
        the scheduled release ``prefix + RELEASE`` (``spec`` None: the exact minimizer), both in
        the span F of the coordinates C lets move (module docstring: the proof that the
        guarantee is unchanged)."""
        if spec is None:            # ε = ∞ reference: no certificate needed
            return solve(erm).theta
        c = constants(erm, spec.epsilon, spec.delta, options["jacobian_share"], relation)
        n, P = erm.n, erm.P
        free = free_coordinates(erm.decisions, P)      # public: the declared set's pinned axes

        def draw(source, scale):
            k = scale / c.scale            # 1, or the audit's reduced_noise multiplier
            if spec.delta > 0:
                return (gaussian_noise_in(P, free, scale, source),
                        gaussian_noise_in(P, free, k * c.smooth, source))
            return (gamma_norm_noise_in(P, free, scale, source),
                    gamma_norm_noise_in(P, free, k * c.smooth, source))

        b, smoothing = draws.custom(prefix + RELEASE, draw)
        sol = solve_certified(erm, lin=b / n, ridge=c.Delta / n, tau=c.tau)
        theta = sol.theta + smoothing
        if options["project"]:
            theta = erm.decisions.project(theta)
        return theta

    def predicted(self, erm, spec, opts, relation="row"):
        if spec is None:
            return 0.0, {}, []
        c = constants(erm, spec.epsilon, spec.delta, opts["jacobian_share"], relation)
        params = {"jacobian_share": c.share, "Delta": c.Delta, "sigma": c.scale, "tau": c.tau,
                  "gradient_sensitivity": c.D}
        if c.delta2 is not None:
            params["bound_constants"] = {"n": c.n, "P": c.P, "r2": c.r2, "width_C": c.width_C,
                                         "zeta": c.zeta, "beta_H": c.beta_H, "l2": c.l2,
                                         "delta2": c.delta2, "sigma3": c.smooth,
                                         "kappa_g": c.kappa_g}
        notes = [f"predicted: Δr₂²/(2n) + 2σ·w(C)/n + smoothing, with w(C) = {c.width_C:.4g} "
                 "(Gaussian width of C; KST Thm 4 form)",
                 f"gradient sensitivity D = {c.D:.4g} = {c.kappa_g:.4g}·ζ (the textbook 2ζ is "
                 "the triangle inequality; privfair.models.erm.ERM.gradient_sensitivity)"]
        return c.bound, params, notes

    def formula(self, plan):
        """:func:`utility_bound` with sympy (δ > 0, unconstrained plans); None otherwise."""
        import sympy as sp      # slow to import: only when a plan's formula is printed

        k = plan.params.get("bound_constants")
        if not k or "delta2" not in k or not math.isfinite(plan.predicted_excess_risk):
            return None
        names = ("n", "P", "r_2", "w_C", "zeta", "beta_H", "Lambda", "s_J", "delta_2", "sigma_3",
                 "kappa_g")
        syms = sp.symbols(" ".join(names), nonnegative=True)
        eps = sp.Symbol("epsilon", positive=True)
        expr = utility_bound(eps, *syms, sqrt=sp.sqrt, log=sp.log,
                             expm1=lambda x: sp.exp(x) - 1, Max=sp.Max)
        vals = (k["n"], k["P"], k["r2"], k["width_C"], k["zeta"], k["beta_H"], k["l2"],
                plan.params["jacobian_share"], k["delta2"], k["sigma3"], k["kappa_g"])
        return sp.Eq(sp.Symbol("excess"), expr, evaluate=False), dict(zip(names, vals))


from .. import register  # noqa: E402

register(ObjectivePerturbationBackend())

"""Objective perturbation for row-private sparse GLM ERM — Chaudhuri et al. 2011; Kifer, Smith &
Thakurta 2012 (KST) Thm 2; [K] §4.3, Prop 2 (it is output perturbation of the dual).

Mechanism (sum form).  Draw b, then release the minimizer over C of
    Σ_i n·w_i·l(θᵀu_i, y_i) + (nΛ + Δ)/2·‖θ‖² + bᵀθ
(mean form: J_D(θ) + (Δ/2n)‖θ‖² + (b/n)ᵀθ).  Constants (:mod:`backends._erm`): every row's
gradient ≤ ζ, its Hessian rank one with eigenvalue ≤ β_H; a GLM, so the gradient difference
between neighbours lies in the 2-dimensional span of the two rows' u.

Privacy (ε = ε₁ + ε₂ + 2ε₃).  The output density is ν(b(θ))·|det ∇b(θ)| (change of variables;
KST extend it to a convex domain C and non-smooth regularizers by smoothing).
* Jacobian: replacing a row changes the Hessian by a rank-one term of norm ≤ β_H on top of
  A ⪰ (Δ + nΛ)I, so |log det ratio| ≤ log(1 + β_H/(Δ + nΛ)) ≤ ε₁ for Δ = max(0, β_H/(e^{ε₁} − 1) − nΛ).
* Gaussian b ~ N(0, σ²I): the privacy loss of the noise is (2⟨b, v⟩ + ‖v‖²)/(2σ²) with ‖v‖ ≤ 2ζ
  and v in a fixed 2-dimensional subspace S, so ⟨b, v⟩ ≤ 2ζ‖P_S b‖ and ‖P_S b‖²/σ² ~ χ²₂:
  with probability ≥ 1 − δ₂ the loss is ≤ 2ζt/σ + 2ζ²/σ², t = √(2 log(1/δ₂)).  Setting it to ε₂
  gives σ = ζ/u, u = (√(t² + 2ε₂) − t)/2 — the replacement-relation form of KST's
  σ = ζ√(8 log(2/δ) + 4ε)/ε (add/remove), numerically within a few percent of it.
  Pure ε: density ∝ exp(−‖b‖/κ), κ = 2ζ/ε₂ (Chaudhuri et al. 2011, Thm 9).
* Exact minimizer (trap): the solver certifies ‖θ̃ − θ*‖ ≤ τ (public), and θ̃ + N(0, σ₃²I) with
  σ₃ calibrated for sensitivity τ at (ε₃, δ₃) is released (approximate minima perturbation,
  Iyengar et al. 2019): P[Y(D) ∈ S] ≤ e^{ε₃}P[Y*(D) ∈ S] + δ₃ for Y* = θ* + N, so the total is
  (ε₁ + ε₂ + 2ε₃, e^{ε₃}δ₂ + (1 + e^{ε₁+ε₂+ε₃})δ₃).  Pure ε uses ℓ2-Laplace smoothing (κ₃ = τ/ε₃).
Only twice-differentiable losses (logistic, squared) qualify; b is drawn with float Gaussians and
the solver runs in floating point, so the event is marked idealized.

Test-only knob: ``options={"_noise_multiplier": k}``, k in (0, 1], draws b and the smoothing noise
at k× their calibrated scales while the event still claims ε — **not private** for k < 1; it
builds the negative controls of ``privfair audit`` and is refused unless the run is seeded.

Utility: E[J(θ_priv)] − J(θ̂) ≤ Δ·r₂²/(2n) + 2σ·w(C)/n + (ω·L·‖u‖ + Λr₂)·σ₃√P, with w(C) the
Gaussian width of C (ρ·E Ω*(g) + ρ_b√(2/π): dimension-free for the ℓ1 ball — KST Thm 4's G_C).
"""

from __future__ import annotations

import math

from . import _erm as E
from .base import Backend
from .output_perturbation import test_multiplier, test_notes

THEOREM = ("objective perturbation (Chaudhuri et al. 2011; Kifer, Smith & Thakurta 2012, Thm 2; "
           "[K] Prop 2) with a certified minimizer (Iyengar et al. 2019)")
SMOOTH_SHARE = 0.005                          # ε₃ / ε for the smoothing of the certified minimizer
JACOBIAN_SHARES = (0.02, 0.05, 0.1, 0.2, 0.35, 0.5)


def gaussian_noise_sigma(zeta, eps2, delta2, sqrt=math.sqrt, log=math.log):
    """σ = ζ/u, u = (√(t² + 2ε₂) − t)/2, t = √(2 log(1/δ₂)) (module docstring, Gaussian b)."""
    t = sqrt(2 * log(1 / delta2))
    return zeta / ((sqrt(t * t + 2 * eps2) - t) / 2)


def jacobian_ridge(beta_H, eps1, n, l2, expm1=math.expm1, Max=max):
    """Δ = max(0, β_H/(e^{ε₁} − 1) − nΛ): |log det ratio| ≤ ε₁ (module docstring)."""
    return Max(0, beta_H / expm1(eps1) - n * l2)


def utility_bound(epsilon, n, P, r2, width_C, zeta, beta_H, l2, share, delta2, sigma3,
                  smooth_share=None, sqrt=math.sqrt, log=math.log, expm1=math.expm1, Max=max):
    """The plan's bound for (ε, δ > 0): Δr₂²/(2n) + 2σ·w(C)/n + (ζ + Λr₂)·σ₃√P, with
    ε₁ = share·ε, ε₃ = SMOOTH_SHARE·ε, ε₂ = ε − ε₁ − 2ε₃ (Chaudhuri et al. 2011 / KST Thm 4 form
    with the Gaussian width; the last term is the smoothing of the certified minimizer).
    Pure; pass sympy's functions to get the formula."""
    ss = SMOOTH_SHARE if smooth_share is None else smooth_share
    e1, e3 = share * epsilon, ss * epsilon
    e2 = epsilon - e1 - 2 * e3
    Delta = jacobian_ridge(beta_H, e1, n, l2, expm1=expm1, Max=Max)
    sigma = gaussian_noise_sigma(zeta, e2, delta2, sqrt=sqrt, log=log)
    return Delta * r2 * r2 / (2 * n) + 2 * sigma * width_C / n + (zeta + l2 * r2) * sigma3 * sqrt(P)


def calibrate(erm, epsilon, delta, share=None):
    """The mechanism's constants for a target (ε, δ): Δ, σ (or κ), σ₃ (or κ₃), ε₁, ε₂, δ₂."""
    from privfair.privacy import calibrate_gaussian_sigma

    key = ("objective_perturbation", epsilon, delta, share)
    if key in erm.meta:
        return erm.meta[key]
    if share is None:      # smallest predicted excess over a public grid of Jacobian shares
        erm.meta[key] = min((calibrate(erm, epsilon, delta, s) for s in JACOBIAN_SHARES),
                            key=lambda c: c["bound"])
        return erm.meta[key]
    n, zeta, bH = erm.n, erm.zeta, erm.beta_H
    e3 = SMOOTH_SHARE * epsilon
    e1 = share * epsilon
    e2 = epsilon - e1 - 2 * e3
    Delta = float(jacobian_ridge(bH, e1, n, erm.l2))
    tau = E.tau_target(erm)
    c = {"share": share, "eps1": e1, "eps2": e2, "eps3": e3, "Delta": Delta, "tau": tau,
         "zeta": zeta, "beta_H": bH}
    if delta > 0:
        d3 = 1e-3 * delta / (1 + math.exp(epsilon))
        d2 = (delta - (1 + math.exp(e1 + e2 + e3)) * d3) / math.exp(e3)
        c.update(delta2=d2, delta3=d3, sigma=gaussian_noise_sigma(zeta, e2, d2),
                 sigma3=calibrate_gaussian_sigma(tau, e3, d3))
        noise_mean = c["sigma"]                          # E sup⟨b, θ⟩ = σ·w(C)
        smooth_norm = c["sigma3"] * math.sqrt(erm.P)
    else:
        c.update(kappa=2 * zeta / e2, kappa3=tau / e3)
        noise_mean = c["kappa"] * erm.P / E.expected_gaussian_norm(erm.P)
        smooth_norm = c["kappa3"] * erm.P
    r2 = erm.decisions.radius
    wC = E.primal_width(erm.decisions).value
    if delta > 0:
        c["bound"] = utility_bound(epsilon, n, erm.P, r2, wC, zeta, bH, erm.l2, share,
                                   c["delta2"], c["sigma3"])
    else:
        c["bound"] = (Delta * r2 * r2 / (2 * n) + 2 * noise_mean * wC / n
                      + (erm.zeta + erm.l2 * r2) * smooth_norm)
    c.update(width_C=wC, n=n, P=erm.P, r2=r2, l2=erm.l2)
    erm.meta[key] = c
    return c


class ObjectivePerturbationBackend(E.ERMBackend, Backend):
    name = "objective_perturbation"
    theorem = THEOREM
    need_strong = False
    need_c2 = True
    OPTIONS = ("project", "probe_share", "slack", "release_share", "jacobian_share",
               "_noise_multiplier")
    option_names = OPTIONS

    def certify_ridge(self, erm, privacy):
        """The ridge Δ/n the mechanism adds (Δ public: from β_H, ε₁, n and Λ)."""
        c = calibrate(erm, privacy.epsilon, privacy.delta)
        return c["Delta"] / erm.n

    def planned_events(self, erm, spec, count=1):
        from privfair.privacy import approximate_event, pure_event

        if spec["delta"] > 0:
            return [approximate_event(spec["epsilon"], spec["delta"], theorem=THEOREM, count=count)]
        return [pure_event(spec["epsilon"], theorem=THEOREM, count=count)]

    def private_erm(self, erm, spec, *, rng, accountant, label, options):
        from privfair.privacy import approximate_event, gaussian_mechanism, gaussian_noise_vector

        if spec is None:            # ε = ∞ reference: no certificate needed
            return E.solve(erm).theta
        eps, delta = spec["epsilon"], spec["delta"]
        k = test_multiplier(self, options, rng)
        c = calibrate(erm, eps, delta, options.get("jacobian_share"))
        src = (f"ζ = ω·sup|l'|·‖u‖ = {c['zeta']:.4g} per row (gradient change ≤ 2ζ in the span of "
               f"the two rows), β_H = {c['beta_H']:.4g} (rank-one Hessian); one row replaced")
        sol_cert = erm.decisions.exact_projection
        ev = approximate_event(
            eps, delta, theorem=THEOREM, sensitivity=2 * c["zeta"], norm="l2",
            scale=c.get("sigma", c.get("kappa")), sensitivity_source=src, label=label,
            idealized=True,
            sampler=("b: float Gaussian (idealized); Jacobian ε₁={:.3g}, Δ={:.4g}; smoothing of "
                     "the minimizer certified to τ={:.2g}{}".format(
                         c["eps1"], c["Delta"], c["tau"],
                         "" if sol_cert else " (projection by cvxpy: exactness assumed)")))
        if accountant is not None:
            accountant.record(ev)
        n, P = erm.n, erm.P
        if delta > 0:
            b = gaussian_noise_vector(P, k * c["sigma"], rng)
        else:
            b = E.gamma_norm_noise(P, k * c["kappa"], rng)
        sol = E.solve_certified(erm, lin=b / n, ridge=c["Delta"] / n, tau=c["tau"])
        theta = sol.theta
        if delta > 0:      # exact Gaussian smoothing (its cost is inside the event above)
            theta = gaussian_mechanism(theta, k * c["tau"], c["eps3"], c["delta3"], rng,
                                       accountant=None, sensitivity_source="certified τ",
                                       label=label)
        else:
            theta = theta + E.gamma_norm_noise(P, k * c["kappa3"], rng)
        if options.get("project", True):
            theta = erm.decisions.project(theta)
        return theta

    def predicted(self, erm, spec, opts):
        if spec is None:
            return 0.0, {}, []
        c = calibrate(erm, spec["epsilon"], spec["delta"], opts.get("jacobian_share"))
        params = {"jacobian_share": c["share"], "Delta": c["Delta"],
                  "sigma": c.get("sigma", c.get("kappa")), "tau": c["tau"],
                  "bound_constants": {k: c[k] for k in ("n", "P", "r2", "width_C", "zeta",
                                                        "beta_H", "l2", "delta2", "sigma3")
                                      if k in c}}
        notes = test_notes(opts) + [f"predicted: Δr₂²/(2n) + 2σ·w(C)/n + smoothing, with w(C) = {c['width_C']:.4g} "
                 "(Gaussian width of C; KST Thm 4 form)"]
        return c["bound"], params, notes


    def formula(self, plan):
        """:func:`utility_bound` with sympy (δ > 0, unconstrained plans); None otherwise."""
        import sympy as sp

        k = plan.params.get("bound_constants")
        if not k or "delta2" not in k or not math.isfinite(plan.predicted_excess_risk):
            return None
        names = ("n", "P", "r_2", "w_C", "zeta", "beta_H", "Lambda", "s_J", "delta_2", "sigma_3")
        syms = sp.symbols(" ".join(names), nonnegative=True)
        eps = sp.Symbol("epsilon", positive=True)
        expr = utility_bound(eps, *syms, sqrt=sp.sqrt, log=sp.log,
                             expm1=lambda x: sp.exp(x) - 1, Max=sp.Max)
        vals = (k["n"], k["P"], k["r2"], k["width_C"], k["zeta"], k["beta_H"], k["l2"],
                plan.params["jacobian_share"], k["delta2"], k["sigma3"])
        return sp.Eq(sp.Symbol("excess"), expr, evaluate=False), dict(zip(names, vals))


from . import register  # noqa: E402

register(ObjectivePerturbationBackend())

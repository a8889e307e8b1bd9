"""Output perturbation for row-private sparse ERM — [K] §4.1, Thm 1, Lemma 1; Chaudhuri et al. 2011.

Theorem (sensitivity; Chaudhuri, Monteleoni & Sarwate 2011, Cor 8, in its general form).  If
J_D = Σ_i w_i l_i + (Λ/2)‖θ‖² (+ any common convex term) is Λ-strongly convex on the convex set C
and ‖∇J_D(θ) − ∇J_D'(θ)‖₂ ≤ Δ_g for every θ ∈ C and neighbours D ~ D', then the minimizers satisfy
‖θ̂(D) − θ̂(D')‖₂ ≤ Δ_g/Λ.  (Add the optimality inequalities J_D(θ̂') ≥ J_D(θ̂) + Λ/2‖Δθ‖² and
J_D'(θ̂) ≥ J_D'(θ̂') + Λ/2‖Δθ‖²: (J_D' − J_D)(θ̂) − (J_D' − J_D)(θ̂') ≥ Λ‖Δθ‖², and the left side
is ≤ Δ_g‖Δθ‖.)  With row-local weights Δ_g = 2ζ/n (:mod:`backends._erm`), so releasing
θ̂ + N(0, σ²I) with σ from the analytic Gaussian mechanism (Balle & Wang 2018) for ℓ2 sensitivity
2ζ/(nΛ) + 2τ — τ the solver's certified distance to θ̂ — is (ε, δ)-DP; density ∝ exp(−ε‖b‖/Δ) gives
ε-DP.  Projecting onto C afterwards is post-processing (and soft-thresholds: sparse outputs).

Test-only knob: ``options={"_noise_multiplier": k}``, k in (0, 1], draws k× the noise the event
records (the certificate still claims the calibrated ε) — **not private** for k < 1; it builds the
negative controls of ``privfair audit`` and is refused unless the run is seeded.

Trap ([K] Thm 1 divides by λ as if the sparsity norm were strongly convex): Λ must be explicit,
``pf.SparseLinear(..., l2=Λ)``; the backend refuses Λ = 0.

Utility ([K] Lemma 1, explicit): unprojected, E[J(θ̂ + b)] − J(θ̂) ≤ √(2/π)·ω·L·‖u‖·σ + Λσ²P/2;
projected, ≤ (ω·L·‖u‖ + Λ·r₂)·σ√P.  [K] Thm 1's O-form with the Gaussian width G_{|P|(F)} is
reported in the plan's notes.
"""

from __future__ import annotations

import math

from privfair.theorems import NUMERIC

from . import _erm as E
from .base import Backend

THEOREM = ("[K] Thm 1 / Chaudhuri et al. 2011: ‖θ̂(D) − θ̂(D')‖ ≤ 2ζ/(nΛ); analytic Gaussian "
           "(Balle & Wang 2018)")


def excess_bound(zeta, Lambda, r_2, P, tau, n, epsilon=None, sigma_1=None, *, project=True,
                 ops=NUMERIC):
    """The plan's bound on E[J(θ_priv)] − J(θ̂) (module docstring), from its constants.

    Δ₂ = 2ζ/(nΛ) + 2τ; Gaussian noise σ = Δ₂·σ₁ (σ₁ = the analytic-Gaussian σ for Δ = 1 at
    (ε, δ), numeric) or, when ``sigma_1`` is None, the ε-DP density ∝ exp(−ε‖b‖/Δ₂), κ = Δ₂/ε.
    Projected: (ζ + Λr₂)·E‖b‖; unprojected ([K] Lemma 1): ζ·E|bᵀe| + Λ·E‖b‖²/2.  Pure.
    """
    sens = 2 * zeta / (n * Lambda) + 2 * tau
    if sigma_1 is not None:
        sigma = sens * sigma_1
        e_norm, e_abs, e_sq = sigma * ops.sqrt(P), sigma * ops.sqrt(2 / ops.pi), sigma ** 2 * P
    else:
        kappa = sens / epsilon
        e_norm, e_abs, e_sq = P * kappa, kappa * ops.sqrt(P + 1), kappa ** 2 * P * (P + 1)
    if project:
        return (zeta + Lambda * r_2) * e_norm
    return zeta * e_abs + Lambda * e_sq / 2


def thm1_bound(L, R_2, G_F, n, epsilon, delta, ops=NUMERIC):
    """[K] Thm 1 (O-form, constants 1): L·R₂·G_{|P|(F)}·√(log(1/δ) + ε)/(ε√n), the excess risk of
    output perturbation at λ = L·R₂·√n/G_{|P|(F)}.  Pure; same value as
    ``privfair.sparse.theorem1_bound``."""
    return L * R_2 * G_F * ops.sqrt(ops.log(1 / delta) + epsilon) / (epsilon * ops.sqrt(n))


def test_multiplier(backend, options, rng, check_seeded=True) -> float:
    """The test-only ``_noise_multiplier`` of ``options`` (1.0 when absent): checked to lie in
    (0, 1], and refused unless ``rng`` is seeded (a negative control is not private).  Shared by
    the three row-private ERM backends."""
    from privfair.errors import InvalidInputError
    from privfair.privacy.randomness import as_source

    k = options.get("_noise_multiplier", 1.0)
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not 0 < k <= 1:
        raise InvalidInputError("_noise_multiplier", k, "test-only knob in (0, 1]")
    if k != 1.0 and check_seeded and not as_source(rng).seeded:
        backend.refuse("the test-only _noise_multiplier runs only seeded (it is not private)")
    return float(k)


def test_notes(options) -> list:
    """The plan's note for a test-only ``_noise_multiplier`` (checked), else []."""
    k = test_multiplier(None, options, None, check_seeded=False)
    return [] if k == 1.0 else [f"TEST ONLY: noise × {k:g} below what the certificate records "
                                "— this run is NOT private"]


class OutputPerturbationBackend(E.ERMBackend, Backend):
    name = "output_perturbation"
    theorem = THEOREM
    need_strong = True
    OPTIONS = ("project", "probe_share", "slack", "release_share", "_noise_multiplier")
    option_names = OPTIONS

    def sensitivity(self, erm):
        """(Δ₂, source): 2ζ/(nΛ) + 2τ."""
        tau = E.tau_target(erm)
        sens = erm.grad_sensitivity / erm.l2 + 2 * tau
        src = (f"[K] Thm 1 / Chaudhuri et al. 2011: 2ζ/(nΛ) + 2τ = 2·{erm.zeta:.4g}/({erm.n}·"
               f"{erm.l2:.4g}) + 2·{tau:.2g} (ζ = ω·sup|l'|·‖u‖, ‖u‖ ≤ {erm.feature_norm_bound:.4g}"
               " by clipping; τ: certified solver); one row replaced")
        return sens, src

    def planned_events(self, erm, spec, count=1):
        from privfair.privacy import calibrate_gaussian_sigma, gaussian_event, pure_event

        if spec["delta"] > 0:
            s = calibrate_gaussian_sigma(1.0, spec["epsilon"], spec["delta"])
            return [gaussian_event(1.0, s, epsilon=spec["epsilon"], delta=spec["delta"], count=count)]
        return [pure_event(spec["epsilon"], theorem="ℓ2-Laplace output perturbation", count=count)]

    def private_erm(self, erm, spec, *, rng, accountant, label, options):
        from privfair.privacy import (calibrate_gaussian_sigma, gaussian_event, gaussian_mechanism,
                                      pure_event)

        sol = erm.meta.get("solution")          # the minimizer is deterministic: solve once
        if sol is None or (spec is not None and sol.tau > E.tau_target(erm)):
            sol = E.solve_certified(erm) if spec is not None else E.solve(erm)
            erm.meta["solution"] = sol
        theta = sol.theta.copy()
        if spec is not None:
            sens, src = self.sensitivity(erm)
            eps, delta = spec["epsilon"], spec["delta"]
            idealized = not sol.certified
            if idealized:
                src += " — projection by cvxpy: τ assumes an exact projection (idealized)"
            k = test_multiplier(self, options, rng)
            if k != 1.0:     # negative control: the nominal event, k× its noise
                if delta > 0:
                    sigma = calibrate_gaussian_sigma(sens, eps, delta)
                    if accountant is not None:
                        accountant.record(gaussian_event(
                            sens, sigma, epsilon=eps, delta=delta, dimension=erm.P, label=label,
                            sensitivity_source=src + f" [TEST-ONLY noise ×{k:g}]"))
                    theta = gaussian_mechanism(theta, sens * k, eps, delta, rng, accountant=None)
                else:
                    if accountant is not None:
                        accountant.record(pure_event(
                            eps, theorem="output perturbation (TEST-ONLY noise ×{:g})".format(k),
                            sensitivity=sens, norm="l2", scale=sens / eps, label=label,
                            sensitivity_source=src, idealized=True))
                    theta = theta + E.gamma_norm_noise(erm.P, k * sens / eps, rng)
            elif delta > 0 and not idealized:
                theta = gaussian_mechanism(theta, sens, eps, delta, rng, accountant=accountant,
                                           sensitivity_source=src, label=label)
            elif delta > 0:
                sigma = calibrate_gaussian_sigma(sens, eps, delta)
                if accountant is not None:
                    accountant.record(gaussian_event(sens, sigma, epsilon=eps, delta=delta,
                                                     dimension=erm.P, sensitivity_source=src,
                                                     label=label, idealized=True))
                theta = gaussian_mechanism(theta, sens, eps, delta, rng, accountant=None,
                                           sensitivity_source=src, label=label)
            else:
                kappa = sens / eps
                if accountant is not None:
                    accountant.record(pure_event(
                        eps, theorem="output perturbation with density ∝ exp(−ε‖b‖₂/Δ₂) is ε-DP "
                        "(Chaudhuri et al. 2011, Thm 6)", sensitivity=sens, norm="l2",
                        scale=kappa, sensitivity_source=src, label=label, idealized=True,
                        sampler="κ·Gamma(P, 1)·uniform direction from float Gaussians"))
                theta = theta + E.gamma_norm_noise(erm.P, kappa, rng)
        if options.get("project", True):
            theta = erm.decisions.project(theta)
        return theta

    def predicted(self, erm, spec, opts):
        from privfair.privacy import calibrate_gaussian_sigma

        params, notes = {}, test_notes(opts)
        if spec is None:
            return 0.0, params, notes
        sens, _ = self.sensitivity(erm)
        eps, delta = spec["epsilon"], spec["delta"]
        P, Lu = erm.P, erm.zeta            # ζ = ω·L·‖u‖ (a bound on Σ w_i |l'| ‖u_i‖)
        sigma = calibrate_gaussian_sigma(sens, eps, delta) if delta > 0 else sens / eps
        values = {"zeta": Lu, "Lambda": erm.l2, "r_2": erm.decisions.radius, "P": P,
                  "tau": E.tau_target(erm)}
        if delta > 0:
            values["sigma_1"] = sigma / sens       # σ is linear in Δ₂ (Balle & Wang, Thm 8)
        project = bool(opts.get("project", True))
        risk = excess_bound(n=erm.n, epsilon=eps, project=project, **values)
        if project:
            notes.append("predicted: (ω·L·‖u‖ + Λ·r₂)·E‖b‖ (projection is 1-Lipschitz)")
        else:
            notes.append("predicted: [K] Lemma 1, E[J(θ̂+b)] − J(θ̂) ≤ ω·L·‖u‖·E|bᵀe| + Λ E‖b‖²/2")
        params.update(sensitivity=sens, sigma=sigma, bound_values=values, project=project)
        G = E.dual_width(erm.decisions)
        params["thm1_values"] = {"L": Lu, "R_2": 1.0, "G_F": float(G.value)}
        if delta > 0:
            k1 = thm1_bound(Lu, 1.0, G.value, erm.n, eps, delta)
            notes.append(f"[K] Thm 1 (O-form, constants 1, at its λ = L·R₂·√n/G): "
                         f"L·R₂·G·√(log(1/δ)+ε)/(ε√n) = {k1:.4g} with G_|P|(F) = {G.value:.4g}"
                         + ("" if G.exact else f" ± {G.stderr:.2g} (Monte Carlo)"))
        return risk, params, notes

    def formula(self, plan):
        """:func:`excess_bound` in sympy; None without a bound (constraints: the Lagrange search)."""
        from privfair.theorems import formula

        v = plan.params.get("bound_values")
        if v is None or not math.isfinite(plan.predicted_excess_risk):
            return None
        return formula(excess_bound, v, standard=("n", "epsilon"), integers=("P",),
                       project=plan.params.get("project", True))


from . import register  # noqa: E402

register(OutputPerturbationBackend())

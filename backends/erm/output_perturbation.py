"""Output perturbation for row-private sparse ERM — [K] §4.1, Thm 1, Lemma 1; Chaudhuri et al. 2011.

Theorem (sensitivity; Chaudhuri, Monteleoni & Sarwate 2011, Cor 8, in its general form).  If
J_D = Σ_i w_i l_i + (Λ/2)‖θ‖² (+ any common convex term) is Λ-strongly convex on the convex set C
and ‖∇J_D(θ) − ∇J_D'(θ)‖₂ ≤ Δ_g for every θ ∈ C and neighbours D ~ D', then the minimizers satisfy
‖θ̂(D) − θ̂(D')‖₂ ≤ Δ_g/Λ.  (Add the optimality inequalities J_D(θ̂') ≥ J_D(θ̂) + Λ/2‖Δθ‖² and
J_D'(θ̂) ≥ J_D'(θ̂') + Λ/2‖Δθ‖²: (J_D' − J_D)(θ̂) − (J_D' − J_D)(θ̂') ≥ Λ‖Δθ‖², and the left side
is ≤ Δ_g‖Δθ‖; only the component of ∇(J_D' − J_D) along the directions C spans counts.)  With
row-local weights Δ_g = :meth:`privfair.models.erm.ERM.gradient_sensitivity` — (ω/n)·ρ·κ under row
replacement, κ the loss's gradient diameter (2·sup|l'| for the hinge losses, the textbook 2ζ/n;
smaller for the logistic loss), (ω/n)·ρ·sup|l'| when only a row's sensitive attribute (hence its
weight) changes — so releasing θ̂ + N(0, σ²I) with σ from the analytic Gaussian mechanism (Balle &
Wang 2018) for ℓ2 sensitivity Δ_g/Λ + 2τ — τ the solver's certified distance to θ̂ — is
(ε, δ)-DP; density ∝ exp(−ε‖b‖/Δ) gives ε-DP.  Projecting onto C afterwards is post-processing
(and soft-thresholds).  So is the hard threshold applied before it (option ``threshold``: every
group of the noisy w with ‖w_g‖₂ ≤ t_g = σ(√|g| + √(2 log 2G)) is set to 0, σ public), which
keeps the release sparse: without it a group-norm release is dense (issue #20).  The release is scheduled at plan time and drawn through
:class:`privfair.privacy.release.Draws` (so the audit's ``reduced_noise`` reaches it).

Trap ([K] Thm 1 divides by λ as if the sparsity norm were strongly convex): Λ must be explicit,
``pf.SparseLinear(..., l2=Λ)``; the backend refuses Λ = 0.

Utility ([K] Lemma 1, explicit): unprojected, E[J(θ̂ + b)] − J(θ̂) ≤ √(2/π)·ω·L·‖u‖·σ + Λσ²P/2;
projected, ≤ (ω·L·‖u‖ + Λ·r₂)·σ√P.  [K] Thm 1's O-form with the Gaussian width G_{|P|(F)} is
reported in the plan's notes.
"""

from __future__ import annotations

import math

from privfair.analysis import formulas
from privfair.analysis.formulas import NUMERIC
from privfair.privacy import Scheduled, calibrate_gaussian_sigma, gaussian_event, pure_event

import numpy as np

from ..base import Backend
from ..options import Option, Param
from .backend import CONSTRAINT_PLAN_PARAMS, ERM_PLAN_PARAMS, PRIVATE_ONE_ERM, ERMBackend
from .noise import gamma_norm_noise
from .options import ERM_OPTIONS
from .sensitivity import gradient_sensitivity, minimizer_sensitivity
from .solver import solve, solve_certified, tau_target
from .widths import dual_width

THEOREM = ("[K] Thm 1 / Chaudhuri et al. 2011: ‖θ̂(D) − θ̂(D')‖ ≤ Δ_g/Λ; analytic Gaussian "
           "(Balle & Wang 2018)")
#: the name of the one scheduled release
RELEASE = "output perturbation noise"

#: hard-thresholding of the released w (post-processing; docs/sparsity.md "Sparsity after noise")
THRESHOLD = Option("threshold", "float", 1.0, low=0,
                   doc="zero every group (ℓ1: coordinate) of the noisy w whose ℓ2 norm is below "
                       "this × σ(√|g| + √(2 log 2G)), the level pure noise stays under w.p. "
                       "≥ 1 − 1/(2G) per group: post-processing at a public level, so sparsity "
                       "survives the noise (0: off; needs project)")


def threshold_groups(decisions):
    """The groups the release is hard-thresholded by: a disjoint group norm's groups (ℓ1: the
    coordinates), every coordinate alone for any other sparsity norm; none for the ℓ2 ball (no
    sparsity to keep) or a single group (ℓ∞, one feature: no support to select).  Public:
    read from the decision set."""
    norm = decisions.norm
    if norm is None:
        return []
    if getattr(norm, "disjoint", False) and hasattr(norm, "groups"):
        groups = [np.asarray(g) for g in norm.groups]
    else:
        groups = [np.array([j]) for j in range(decisions.n_features)]
    # one group (ℓ∞, or a single feature): no support to select, only "all or nothing"
    return groups if len(groups) >= 2 else []


def threshold_levels(groups, sigma):
    """t_g = σ(√|g| + √(2 log 2G)): ‖b_g‖₂ ≤ t_g w.p. ≥ 1 − 1/(2G) for b_g ~ N(0, σ²I_|g|)
    (Gaussian concentration of the 1-Lipschitz ‖·‖₂ around its mean ≤ √|g|: P[‖b_g‖ ≥ σ(√|g| +
    u)] ≤ e^{−u²/2}, here u² = 2 log 2G), so all pure-noise groups are zeroed w.p. ≥ 1/2."""
    G = len(groups)
    if G == 0:
        return np.zeros(0)
    extra = np.sqrt(2.0 * np.log(2.0 * G))
    return sigma * (np.sqrt([len(g) for g in groups]) + extra)


def hard_threshold(theta, groups, levels):
    """θ with w_g set to 0 where ‖w_g‖₂ ≤ t_g (the intercept is never thresholded)."""
    out = np.array(theta, dtype=float)
    for g, t in zip(groups, levels):
        if float(np.linalg.norm(out[g])) <= t:
            out[g] = 0.0
    return out


def excess_bound(zeta, Lambda, r_2, P, tau, n, epsilon=None, sigma_1=None, kappa_g=2.0,
                 t_norm=0.0, *, project=True, ops=NUMERIC):
    """The plan's bound on E[J(θ_priv)] − J(θ̂) (module docstring), from its constants.

    Δ₂ = κ_g·ζ/(nΛ) + 2τ (κ_g = n·Δ_g/ζ: 2 for the triangle-inequality bound, less for the
    logistic loss; :meth:`privfair.models.erm.ERM.gradient_sensitivity`); Gaussian noise σ = Δ₂·σ₁ (σ₁ = the analytic-Gaussian σ for Δ = 1 at
    (ε, δ), numeric) or, when ``sigma_1`` is None, the ε-DP density ∝ exp(−ε‖b‖/Δ₂), κ = Δ₂/ε.
    Projected: (ζ + Λr₂)·(E‖b‖ + ‖t‖), ‖t‖ the ℓ2 norm of the hard-threshold levels (0 without
    thresholding: zeroing a group whose noisy norm is ≤ t_g moves θ by ≤ t_g); unprojected
    ([K] Lemma 1): ζ·E|bᵀe| + Λ·E‖b‖²/2.  Pure.
    """
    sens = kappa_g * zeta / (n * Lambda) + 2 * tau
    if sigma_1 is not None:
        sigma = sens * sigma_1
        e_norm, e_abs, e_sq = sigma * ops.sqrt(P), sigma * ops.sqrt(2 / ops.pi), sigma ** 2 * P
    else:
        kappa = sens / epsilon
        e_norm, e_abs, e_sq = P * kappa, kappa * ops.sqrt(P + 1), kappa ** 2 * P * (P + 1)
    if project:
        return (zeta + Lambda * r_2) * (e_norm + t_norm)
    return zeta * e_abs + Lambda * e_sq / 2



class OutputPerturbationBackend(ERMBackend, Backend):
    name = "output_perturbation"
    theorem = THEOREM
    need_strong = True
    #: the projection and the constraint form's three (backends.erm.options.ERM_OPTIONS), and
    #: the hard threshold that keeps the release sparse (:data:`THRESHOLD`)
    option_table = ERM_OPTIONS + (THRESHOLD,)
    plan_params = ERM_PLAN_PARAMS + CONSTRAINT_PLAN_PARAMS + (
        Param("sensitivity", float, "Δ₂ of the ERM minimizer; " + PRIVATE_ONE_ERM, optional=True),
        Param("sigma", float, "the Gaussian (or Laplace-norm) noise scale; " + PRIVATE_ONE_ERM,
              optional=True),
        Param("bound_values", dict, "the arguments of excess_bound besides n and ε; "
              + PRIVATE_ONE_ERM, optional=True),
        Param("project", bool, "the project option, as validated; " + PRIVATE_ONE_ERM,
              optional=True),
        Param("thm1_values", dict, "[K] Thm 1's constants L, R₂, G_F; " + PRIVATE_ONE_ERM,
              optional=True),
    )

    def sensitivity(self, erm, relation="row"):
        """(Δ₂, source): Δ_g/Λ + 2τ (module docstring)."""
        tau = tau_target(erm)
        how = gradient_sensitivity(erm, relation)[1]
        sens = minimizer_sensitivity(erm, relation)
        units = ("" if erm.l2_factor == 1 else f" (SparseLinear(l2={erm.decisions.l2:g}) in "
                 f"the loss's units × {erm.l2_factor:.4g}, the surrogate's normalization)")
        src = (f"[K] Thm 1 / Chaudhuri et al. 2011: Δ_g/Λ + 2τ with Δ_g = {how}, Λ = "
               f"{erm.l2:.4g}{units}, τ = {tau:.2g} (certified solver)")
        if not erm.decisions.exact_projection:
            src += " — projection by cvxpy: τ assumes an exact projection (idealized)"
        return sens, src

    def planned_events(self, erm, spec, count=1, relation="row"):
        if spec.delta > 0:
            s = calibrate_gaussian_sigma(1.0, spec.epsilon, spec.delta)
            return [gaussian_event(1.0, s, epsilon=spec.epsilon, delta=spec.delta, count=count)]
        return [pure_event(spec.epsilon, theorem="ℓ2-Laplace output perturbation", count=count)]

    def releases(self, erm, spec, *, relation="row", options, label="", rules=None,
                 prefix="", spent=()):
        """The one release: θ̂ + noise at ``spec`` (an :class:`backends.erm.releases.ERMBudget`)."""
        sens, src = self.sensitivity(erm, relation)
        eps, delta = spec.epsilon, spec.delta
        idealized = not erm.decisions.exact_projection
        if delta > 0:       # exact normal sampler (Draws.gaussian with exact=True)
            ev = gaussian_event(sens, calibrate_gaussian_sigma(sens, eps, delta), epsilon=eps,
                                delta=delta, dimension=erm.P, sensitivity_source=src,
                                label=label, idealized=idealized)
            return [Scheduled(prefix + RELEASE, ev, exact=True)]
        ev = pure_event(eps, theorem="output perturbation with density ∝ exp(−ε‖b‖₂/Δ₂) is ε-DP "
                        "(Chaudhuri et al. 2011, Thm 6)", sensitivity=sens, norm="l2",
                        scale=sens / eps, sensitivity_source=src, label=label, idealized=True,
                        sampler="κ·Gamma(P, 1)·uniform direction from float Gaussians")
        return [Scheduled(prefix + RELEASE, ev)]

    def private_erm(self, erm, spec, *, draws, relation="row", prefix="", options):
        """θ̂ (certified to τ), plus the noise of the scheduled release ``prefix + RELEASE``
        drawn through ``draws``; ``spec`` None: the exact minimizer, nothing drawn."""
        sol = erm.meta.get("solution")          # the minimizer is deterministic: solve once
        if sol is None or (spec is not None and sol.tau > tau_target(erm)):
            sol = solve_certified(erm) if spec is not None else solve(erm)
            erm.meta["solution"] = sol
        theta = sol.theta.copy()
        if spec is not None:
            if spec.delta > 0:
                theta = draws.gaussian(prefix + RELEASE, theta)
            else:
                P = erm.P
                theta = theta + draws.custom(prefix + RELEASE,
                                             lambda src, kappa: gamma_norm_noise(P, kappa, src))
        if options["project"]:
            if spec is not None and options.get("threshold", 0.0) > 0:
                # post-processing of the release at a public level (σ is public): the noise
                # alone would leave every group nonzero (issue #20: 12/12 groups at ε = 1)
                groups = threshold_groups(erm.decisions)
                levels = options["threshold"] * threshold_levels(
                    groups, self.noise_scale(erm, spec, relation))
                theta = hard_threshold(theta, groups, levels)
            theta = erm.decisions.project(theta)
        return theta

    def noise_scale(self, erm, spec, relation="row"):
        """σ of one coordinate of the release's noise (public): the Gaussian's σ, or the rms
        κ√(P + 1) of a coordinate of the pure-ε noise (E‖b‖² = κ²P(P + 1))."""
        sens, _ = self.sensitivity(erm, relation)
        if spec.delta > 0:
            return calibrate_gaussian_sigma(sens, spec.epsilon, spec.delta)
        return sens / spec.epsilon * math.sqrt(erm.P + 1)

    def predicted(self, erm, spec, opts, relation="row"):
        params, notes = {}, []
        if spec is None:
            return 0.0, params, notes
        sens, _ = self.sensitivity(erm, relation)
        eps, delta = spec.epsilon, spec.delta
        P, Lu = erm.P, erm.zeta            # ζ = ω·L·‖u‖ (a bound on Σ w_i |l'| ‖u_i‖)
        sigma = calibrate_gaussian_sigma(sens, eps, delta) if delta > 0 else sens / eps
        values = {"zeta": Lu, "Lambda": erm.l2, "r_2": erm.decisions.radius, "P": P,
                  "tau": tau_target(erm),
                  "kappa_g": erm.gradient_sensitivity(relation) * erm.n / Lu if Lu > 0 else 2.0}
        if delta > 0:
            values["sigma_1"] = sigma / sens       # σ is linear in Δ₂ (Balle & Wang, Thm 8)
        project = opts["project"]
        thr = opts.get("threshold", 0.0) if project else 0.0
        groups = threshold_groups(erm.decisions)
        levels = thr * threshold_levels(groups, self.noise_scale(erm, spec, relation))
        values["t_norm"] = float(np.sqrt(np.sum(levels ** 2)))
        risk = excess_bound(n=erm.n, epsilon=eps, project=project, **values)
        if project:
            notes.append("predicted: (ω·L·‖u‖ + Λ·r₂)·(E‖b‖ + ‖t‖) (projection is 1-Lipschitz; "
                         "the hard threshold moves θ by at most ‖t‖ = (Σ_g t_g²)^½ more)")
        if thr > 0 and groups:
            notes.append(f"sparsity: groups of the noisy w with ‖w_g‖₂ ≤ t_g = {thr:g}·σ(√|g| + "
                         f"√(2 log 2G)) are set to 0 before the projection ({len(groups)} groups, "
                         "post-processing at a public level; option threshold=0 turns it off)")
        else:
            notes.append("predicted: [K] Lemma 1, E[J(θ̂+b)] − J(θ̂) ≤ ω·L·‖u‖·E|bᵀe| + Λ E‖b‖²/2")
        params.update(sensitivity=sens, sigma=sigma, bound_values=values, project=project)
        G = dual_width(erm.decisions)
        params["thm1_values"] = {"L": Lu, "R_2": 1.0, "G_F": float(G.value)}
        if delta > 0:
            k1 = formulas.k1_bound(Lu, 1.0, G.value, erm.n, eps, delta)
            notes.append(f"[K] Thm 1 (O-form, constants 1, at its λ = L·R₂·√n/G): "
                         f"L·R₂·G·√(log(1/δ)+ε)/(ε√n) = {k1:.4g} with G_|P|(F) = {G.value:.4g}"
                         + ("" if G.exact else f" ± {G.stderr:.2g} (Monte Carlo)"))
        return risk, params, notes

    def formula(self, plan):
        """:func:`excess_bound` in sympy; None without a bound (constraints: the Lagrange search)."""
        v = plan.params.get("bound_values")
        if v is None or not math.isfinite(plan.predicted_excess_risk):
            return None
        return formulas.formula(excess_bound, v, standard=("n", "epsilon"), integers=("P",),
                       project=plan.params.get("project", True))


from .. import register  # noqa: E402

register(OutputPerturbationBackend())

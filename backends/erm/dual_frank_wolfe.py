"""Private Frank–Wolfe on the dual of sparse ERM — [K] §4.2, Algorithms 1–2, Thm 3–4.

Primal (mean form): min_{θ∈C} J_D(θ) + λ'Ω(w), J_D Λ-strongly convex (``SparseLinear(l2=Λ)``).
Dual: max_{s∈K} D(s), K = λ'·(dual ball of Ω), D(s) = min_{θ∈C} J_D(θ) + ⟨s, w⟩; D is concave and
(1/Λ)-smooth with ∇D(s) = w(s), the w-part of the minimizer.  Frank–Wolfe (ρ_t = 2/(t+2)):
s_t = (1 − ρ_t)s_{t−1} + ρ_t v_t with v_t ≈ argmax_{v ∈ vertices(K)} ⟨w(s_{t−1}), v⟩.

Privacy.  s_{t−1} is public (a function of earlier releases); by the strong-convexity argument of
:mod:`backends.erm.output_perturbation`, ‖θ_D(s) − θ_D'(s)‖ ≤ Δ_g/Λ + 2τ for every s (Δ_g =
:meth:`privfair.models.erm.ERM.gradient_sensitivity`: 2ζ/n for the hinge losses, less for the
logistic loss), so the score ⟨w(s), v⟩ of every vertex moves by at most
Δ = λ'·max_v‖v‖₂·(Δ_g/Λ + 2τ) between neighbours.
Report-noisy-max over the vertices is the exponential mechanism ([K] Algorithm 2 uses Laplace
noise; its privacy follows Talwar, Thakurta & Zhang 2014).  The vertex set is exponential (2^p for
the ℓ∞ ball, the dual of ℓ1 — trap): when the dual ball is a product of small vertex sets (ℓ1, ℓ∞,
disjoint group ℓ1/ℓ∞) the linear score is a sum of block scores, so the exponential mechanism
over all vertices factorizes and is sampled exactly block by block (each block's scores rounded to
one dyadic grid g, integer joint sensitivity ⌊Δ/g⌋ + #blocks, exact Bernoulli(exp(−γ)) acceptance
— the sampler of :func:`privfair.privacy.exponential_mechanism` applied per block).  Other norms
(overlapping groups, graph TV, generic Lovász) are refused.
Primal recovery (trap): [K] Algorithm 2 releases only ŝ; turning it into a classifier,
θ = argmin_{θ∈C} J_D(θ) + ⟨ŝ, w⟩, reads the data again, so privfair releases it by output
perturbation (analytic Gaussian, sensitivity Δ_g/Λ + 2τ).  T selections and that release
compose in the accountant: the selections' ε is fitted at plan time by
:func:`privfair.privacy.release.calibrate` (the recovery keeps (1 − share)·ε), both are
scheduled releases, and every draw goes through :class:`privfair.privacy.release.Draws`.

Utility: [K] Thm 4 (O-form, with G_K = λ'·G_{|P|(F)}, Γ_K = λ'·diam, L = r₂) plus the final release
term; T defaults to Thm 4's T = Γ^{4/3}(nε)^{2/3}/(L G)^{2/3}, capped at ``T_MAX``.

The audit's ``reduced_noise(m)`` reaches both releases through the draws: the selections sample
at m× the score sensitivity, the recovery at m× σ.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from privfair.analysis import formulas
from privfair.analysis.formulas import NUMERIC
from privfair.privacy import exponential_mechanism_index   # the exact sampler, per block
from privfair.privacy import (Scheduled, calibrate, calibrate_gaussian_sigma, exponential_event,
                              gaussian_event, pure_event)

from ..base import Backend
from ..options import Option, Param
from .backend import ERM_PLAN_PARAMS, PRIVATE_ONE_ERM, ERMBackend
from .noise import gamma_norm_noise
from .options import PROJECT
from .sensitivity import gradient_sensitivity, minimizer_sensitivity
from .solver import solve, solve_certified, tau_target
from .widths import dual_width

THEOREM = ("[K] Algorithm 2, Thm 3–4 (dual Frank–Wolfe; exponential-mechanism selection, Talwar, "
           "Thakurta & Zhang 2014) + output-perturbation primal recovery")
T_MAX = 30
T_MIN = 5
SELECTION_SHARE = 0.5
#: names of the two scheduled releases
SELECTIONS, RECOVERY = "vertex selections", "primal recovery θ(ŝ)"


def _pad(s):
    return np.concatenate([s, [0.0]])



def excess_bound(L, Gamma, G_K, n, epsilon, delta_K, log_S, share, zeta, Lambda, r_2, P,
                 sigma, ops=NUMERIC):
    """The plan's bound: [K] Thm 4 at the selections' ε = share·ε, plus the primal-recovery
    release (ζ + Λr₂)·σ·√P (σ: analytic Gaussian, numeric; or Δ/((1 − share)ε) for pure ε).

    ``delta_K`` is the δ put into Thm 4 (the plan's δ, or 1e-12 as a stand-in when δ = 0: the
    theorem is an (ε, δ) statement, so under pure ε this term is not a proven bound).  Pure.
    """
    return (formulas.k4_bound(L, Gamma, G_K, n, share * epsilon, delta_K, log_S, ops=ops)
            + (zeta + Lambda * r_2) * sigma * ops.sqrt(P))


class DualFrankWolfeBackend(ERMBackend, Backend):
    name = "dual_frank_wolfe"
    theorem = THEOREM
    need_strong = True
    allow_constraint = False          # so the constraint form's options are not taken
    option_table = (
        PROJECT,
        Option("T", "int", None, low=1,
               doc=f"Frank–Wolfe steps (vertex selections); auto: [K] Thm 4's "
                   f"T = Γ^(4/3)(nε)^(2/3)/(L·G)^(2/3), clipped to [{T_MIN}, {T_MAX}]"),
        Option("penalty", "float", None, low=0, low_open=True,
               doc="λ', the radius of the dual ball K (the sparsity penalty's weight); auto: "
                   "ζ/(√n·G_|P|(F))"),
        Option("selection_share", "float", SELECTION_SHARE, low=0, high=1, low_open=True,
               high_open=True,
               doc="share of ε for the T vertex selections; the primal recovery gets the rest"),
    )
    plan_params = ERM_PLAN_PARAMS + (
        Param("T", int, "the Frank–Wolfe steps (vertex selections), when the ERM is known at "
              "plan time", optional=True),
        Param("penalty", float, "λ', the radius of the dual ball K, when the ERM is known at "
              "plan time", optional=True),
        Param("score_sensitivity", float, "the selection score's sensitivity, when the ERM is "
              "known at plan time", optional=True),
        Param("bound_values", dict, "the arguments of excess_bound besides n and ε; "
              + PRIVATE_ONE_ERM, optional=True),
        Param("thm4_values", dict, "[K] Thm 4's constants L, Γ, G_K, δ_K, log|S|; "
              + PRIVATE_ONE_ERM, optional=True),
    )

    def extra_reason(self, problem, analysis):
        return self._norm_reason(problem.rates.decisions)

    def _norm_reason(self, ds):
        if ds.norm is None or ds.norm.blocks() is None:
            name = "ℓ2" if ds.norm is None else repr(ds.norm)
            return (f"the dual ball of {name} is not a product of small vertex sets, so the "
                    "report-noisy-max over its (exponentially many) vertices cannot be sampled "
                    "exactly; use l1, linf or disjoint group norms (or output/objective "
                    "perturbation)")
        return None

    def erm_reason(self, erm, privacy):
        return super().erm_reason(erm, privacy) or self._norm_reason(erm.decisions)

    # -- constants ------------------------------------------------------------------------------
    def constants(self, erm, spec, options, relation="row"):
        ds = erm.decisions
        zeta, n = erm.zeta, erm.n
        G = dual_width(ds)
        lam = options["penalty"]
        if lam is None:
            lam = zeta / (math.sqrt(n) * max(G.value, 1e-12))
        tau = tau_target(erm)
        theta_sens = minimizer_sensitivity(erm, relation)
        vmax = ds.norm.lipschitz_l2
        score_sens = lam * vmax * theta_sens
        L, Gam, GK = ds.radius, lam * 2 * vmax, lam * G.value
        eps = spec.epsilon if spec else 1.0
        T = options["T"]
        if T is None:
            T_thm = Gam ** (4 / 3) * (n * eps) ** (2 / 3) / max(L * GK, 1e-300) ** (2 / 3)
            T = int(min(T_MAX, max(T_MIN, math.ceil(T_thm))))
        return {"penalty": lam, "T": int(T), "theta_sens": theta_sens, "score_sens": score_sens,
                "tau": tau, "width": G, "L": L, "diameter": Gam, "GK": GK}

    def releases(self, erm, spec, *, relation="row", options, label="", rules=None,
                 prefix="", spent=()):
        """T vertex selections (one exponential-mechanism event, count T) at the largest ε per
        selection that composes with the recovery at (1 − share)·ε to ``spec`` — fitted here,
        at plan time, by :func:`privfair.privacy.release.calibrate` — and the recovery."""
        c = self.constants(erm, spec, options, relation)
        eps, delta, T = spec.epsilon, spec.delta, c["T"]
        share = options["selection_share"]
        ef = (1 - share) * eps
        if delta > 0:
            unit = gaussian_event(1.0, calibrate_gaussian_sigma(1.0, ef, delta), epsilon=ef,
                                  delta=delta)
        else:
            unit = pure_event(ef, theorem="output perturbation")
        x = calibrate(lambda x: [exponential_event(1.0, x, count=T), unit], eps, delta,
                      hi=share * eps, rules=rules, spent=tuple(spent),
                      key=(self.name, T, share, ef))
        blocks = erm.decisions.norm.blocks()
        dg = gradient_sensitivity(erm, relation)[1]
        sel = exponential_event(
            c["score_sens"], x, count=T, label=f"{label}: dual Frank–Wolfe vertex selections",
            sensitivity_source=(f"|⟨w_D(s) − w_D'(s), v⟩| ≤ λ'·max‖v‖₂·(Δ_g/Λ + 2τ) = "
                                f"{c['score_sens']:.4g}, Δ_g = {dg} (strong convexity)"),
            sampler=(f"exact product sampler over {len(blocks)} blocks (common dyadic grid, "
                     "integer joint sensitivity ⌊Δ/g⌋ + #blocks, Bernoulli(exp(−γ)))"))
        src = f"Δ_g/Λ + 2τ = {c['theta_sens']:.4g}, Δ_g = {dg} (primal recovery)"
        if delta > 0:
            rec = Scheduled(prefix + RECOVERY, gaussian_event(
                c["theta_sens"], calibrate_gaussian_sigma(c["theta_sens"], ef, delta),
                epsilon=ef, delta=delta, sensitivity_source=src, dimension=erm.P,
                label=f"{label}: primal recovery θ(ŝ)"), exact=True)
        else:       # pure ε: the release is an event too (privfair audit caught its absence)
            rec = Scheduled(prefix + RECOVERY, pure_event(
                ef, theorem="output perturbation with density ∝ exp(−ε‖b‖₂/Δ₂) is ε-DP "
                "(Chaudhuri et al. 2011, Thm 6)", sensitivity=c["theta_sens"], norm="l2",
                scale=c["theta_sens"] / ef, label=f"{label}: primal recovery θ(ŝ)",
                idealized=True, sensitivity_source=src,
                sampler="κ·Gamma(P, 1)·uniform direction from float Gaussians"))
        return [Scheduled(prefix + SELECTIONS, sel), rec]

    # -- the mechanism --------------------------------------------------------------------------
    def private_erm(self, erm, spec, *, draws, relation="row", prefix="", options):
        """T Frank–Wolfe steps on the dual, each vertex drawn through the scheduled selections,
        then the recovered θ(ŝ) released through the scheduled recovery (``spec`` None: exact,
        nothing drawn)."""
        ds = erm.decisions
        c = self.constants(erm, spec, options, relation)
        lam, T = c["penalty"], c["T"]
        blocks = ds.norm.blocks()
        private = spec is not None
        if private:
            sel = draws.schedule[prefix + SELECTIONS].event
            eps_sel, temp = sel.epsilon, sel.scale
        s = np.zeros(ds.n_features)
        theta = None
        for t in range(1, T + 1):
            sol = (solve_certified(erm, lin=_pad(s), theta0=theta) if private
                   else solve(erm, lin=_pad(s), theta0=theta))
            theta = sol.theta
            w = theta[:-1]
            if private:     # k = 1, or the audit's reduced_noise multiplier (scale / the event's)
                v = draws.custom(prefix + SELECTIONS, lambda src, scale, w=w: self.sample_vertex(
                    blocks, w, lam, c, eps_sel, src, ds, scale / temp))
            else:
                v = lam * ds.norm.greedy(w)
            rho = 2.0 / (t + 2)
            s = (1 - rho) * s + rho * v
        sol = (solve_certified(erm, lin=_pad(s), theta0=theta) if private
               else solve(erm, lin=_pad(s), theta0=theta))
        theta = sol.theta
        if private and spec.delta > 0:
            theta = draws.gaussian(prefix + RECOVERY, theta)
        elif private:
            P = erm.P
            theta = theta + draws.custom(prefix + RECOVERY,
                                         lambda src, kappa: gamma_norm_noise(P, kappa, src))
        if options["project"]:
            theta = ds.project(theta)
        return theta

    def sample_vertex(self, blocks, w, lam, c, eps, rng, ds, k=1.0):
        """One exact exponential-mechanism draw over the product of the blocks' vertex sets
        (maximizing ⟨w, v⟩), block by block on a common grid (see the module docstring).  ``k``:
        1, or the audit's ``reduced_noise`` multiplier (the draw uses k× the score sensitivity)."""
        Delta, nb = k * c["score_sens"], len(blocks)
        g = 2.0 ** (math.floor(math.log2(Delta)) - 10 - math.ceil(math.log2(max(nb, 1))))
        vmax = max(float(np.abs(V).sum(axis=1).max()) for _, V in blocks)
        bound = lam * vmax * ds.radius             # public bound on |block score|
        if bound / g > 2.0 ** 60:
            g = 2.0 ** (math.ceil(math.log2(bound)) - 60)
        d_int = int(math.floor(Delta / g)) + nb
        k = min(36, max(0, 12 - math.floor(math.log2(eps))))
        eps_num, eps_den = int(math.floor(Fraction(eps) * 2 ** k)), 2 ** k
        den = eps_den * d_int * 2
        v = np.zeros_like(w)
        for idx, V in blocks:
            u = lam * (V @ w[idx])
            r = np.rint(u / g).astype(np.int64)
            j = exponential_mechanism_index(r.max() - r, eps_num, den, rng)
            v[idx] = lam * V[j]
        return v

    def predicted(self, erm, spec, opts, relation="row"):
        c = self.constants(erm, spec, opts, relation)
        params = {"T": c["T"], "penalty": c["penalty"], "score_sensitivity": c["score_sens"]}
        if spec is None:
            return 0.0, params, []
        eps, delta = spec.epsilon, spec.delta
        share = opts["selection_share"]
        logS = sum(math.log(len(V)) for _, V in erm.decisions.norm.blocks())
        sig = (calibrate_gaussian_sigma(c["theta_sens"], (1 - share) * eps, delta) if delta > 0
               else c["theta_sens"] / ((1 - share) * eps))
        thm4 = {"L": c["L"], "Gamma": c["diameter"], "G_K": c["GK"],
                "delta_K": delta if delta > 0 else 1e-12, "log_S": logS}
        values = {**thm4, "share": share, "zeta": erm.zeta, "Lambda": erm.l2,
                  "r_2": erm.decisions.radius, "P": erm.P, "sigma": sig}
        params.update(bound_values=values, thm4_values=thm4)
        k4 = formulas.k4_bound(c["L"], c["diameter"], c["GK"], erm.n, share * eps,
                               thm4["delta_K"], logS)
        rec = (erm.zeta + erm.l2 * erm.decisions.radius) * sig * math.sqrt(erm.P)
        notes = [f"predicted: [K] Thm 4 (O-form, constants 1) = {k4:.4g} with G_K = λ'·G_|P|(F) = "
                 f"{c['GK']:.4g}, log|S| = {logS:.4g}, plus the primal-recovery release "
                 f"{rec:.4g}"]
        if delta == 0:
            notes.append("pure ε: [K] Thm 4 is an (ε, δ) bound; δ = 1e-12 stands in, so this "
                         "term is not a proven bound")
        return excess_bound(n=erm.n, epsilon=eps, **values), params, notes

    def formula(self, plan):
        """:func:`excess_bound` in sympy (σ of the final release enters as a value)."""
        v = plan.params.get("bound_values")
        if v is None or not math.isfinite(plan.predicted_excess_risk):
            return None
        return formulas.formula(excess_bound, v, standard=("n", "epsilon"), integers=("P",))


from .. import register  # noqa: E402

register(DualFrankWolfeBackend())

"""Exponential sampling over a finite decision set — [A] §5.1, Algorithm 1, Thm 5.2 / Cor 5.3; [E].

Theorem (McSherry & Talwar 2007; [A] Thm 3.5–3.6).  Sampling c ∈ C with probability
∝ exp(−ε·h(ℓ(c,D)) / (2Δh)) is ε-DP when |h(ℓ(c,D)) − h(ℓ(c,D'))| ≤ Δh for every c and every
pair of neighbours, and then h(c̃) − min_C h ≤ (2Δh/ε)·log(|C|/ρ) with probability ≥ 1 − ρ.

Preconditions, checked against the Analysis:

* the decision set is finite (a ``FiniteSet`` or a ``Thresholds`` grid);
* Δh is proven: Lipschitz constants of f and g are known and ℓ has a row-influence structure
  (conditional rates need a group-mass bound — declared, or estimated privately by the planner).

Convexity is *not* needed, so this is the backend for ``smax`` and other non-convex problems.
h = f + G·max(0, g) with G from the Analysis ([A] Cor 4.2).  All candidates are scored in one
vectorized pass (``Rates.evaluate_all``); sampling is exact (see
:func:`privfair.privacy.exponential_mechanism` — never a normalisation of exp(scores)).

Test-only knob: ``options={"_noise_multiplier": k}``, k in (0, 1], samples with the temperature
k·2Δh/ε (the sensitivity handed to the sampler is k·Δh) while the event and the certificate still
claim ε — **not private** for k < 1; it builds the negative controls of ``privfair audit`` and is
refused unless the run is seeded.
"""

from __future__ import annotations

import math

import numpy as np

from .base import Backend, Plan, Verdict, plan_noise_multiplier

#: failure probability ρ in the utility bound the planner ranks by
RHO = 0.05


def utility_bound(delta_h, epsilon, candidates, rho=RHO, log=math.log):
    """[A] Thm 5.2 / Cor 5.3: h(c̃) − min_C h ≤ (2Δh/ε)·log(|C|/ρ) with probability ≥ 1 − ρ.

    Pure (no problem, no data); ``log`` may be ``sympy.log`` to get the formula symbolically.
    """
    return 2 * delta_h / epsilon * log(candidates / rho)


def penalized_values(problem, L, G):
    """h(ℓ) = f(ℓ) + G·max(0, max_j g_j(ℓ)) for a batch of statistic vectors L (m, K)."""
    h = np.asarray(problem.f.value(L), dtype=float).reshape(-1)
    if problem.g:
        gmax = np.max(np.stack([np.asarray(g.value(L), dtype=float).reshape(-1)
                                for g in problem.g]), axis=0)
        h = h + G * np.maximum(0.0, gmax)
    return h


class ExponentialBackend(Backend):
    name = "exponential"
    bound_on_h = True        # predicted_excess_risk bounds h − min h (Plan.bound_terms)
    theorem = "[A] Thm 5.2 / Cor 5.3 (exponential mechanism, McSherry–Talwar)"
    option_names = ("_noise_multiplier",)   # no hyper-parameters: one draw at the whole ε

    def accepts(self, problem, analysis) -> Verdict:
        ds = getattr(problem.rates, "decisions", None)
        if ds is None or not getattr(ds, "is_finite", False):
            return Verdict(False, "needs a finite decision set (pf.FiniteSet or pf.Thresholds); "
                                  f"got {type(ds).__name__}")
        why = analysis.sensitivity_unproven()
        return Verdict(False, why) if why else Verdict(True)

    def plan(self, problem, analysis, privacy, options) -> Plan:
        m = len(problem.rates.decisions)
        delta_h = analysis.sensitivity_h
        params = {"G": analysis.G, "candidates": m, "sensitivity_h": delta_h,
                  "norm": analysis.sensitivity_norm}
        notes = []
        plan_noise_multiplier(options, params, notes)
        if not privacy.is_private:
            risk = 0.0
        elif delta_h is None:
            risk = math.inf
        else:
            risk = utility_bound(delta_h, privacy.epsilon, m)
        return Plan(self.name, privacy, analysis, problem, params=params,
                    budget=[("one exponential-mechanism draw over all candidates",
                             privacy.epsilon, 0.0)],
                    predicted_excess_risk=risk, theorem=self.theorem, notes=notes)

    def formula(self, plan):
        import sympy as sp

        d, e, m, rho = sp.symbols("Delta_h epsilon m rho", positive=True)
        expr = utility_bound(d, e, m, rho=rho, log=sp.log)
        return (sp.Eq(sp.Symbol("excess"), expr, evaluate=False),
                {"Delta_h": plan.params.get("sensitivity_h"), "m": plan.params.get("candidates"),
                 "rho": RHO})

    def run(self, plan, *, rng, accountant, device="cpu", progress=True):
        from privfair.privacy import exponential_mechanism
        from privfair.result import Result

        problem, analysis = plan.problem, plan.analysis
        ds = problem.rates.decisions
        L = problem.rates.evaluate_all()                     # (m, K): one vectorized pass
        scores = -penalized_values(problem, L, analysis.G)
        k = float(plan.params.get("_noise_multiplier", 1.0))
        if plan.privacy.is_private and k != 1.0:
            from privfair.privacy.events import exponential_event
            from privfair.privacy.randomness import as_source

            rng = as_source(rng)
            if not rng.seeded:
                self.refuse("the test-only _noise_multiplier runs only seeded (it is not private)")
        if device in ("cuda", "torch"):
            import torch

            scores = torch.as_tensor(scores, device="cuda" if device == "cuda" else "cpu")
        if plan.privacy.is_private and k != 1.0:    # negative control: record ε, sample at ε/k
            src = f"compiler: L_h·Δℓ [TEST-ONLY ×{k:g}: NOT the proven sensitivity]"
            if accountant is not None:
                accountant.record(exponential_event(analysis.sensitivity_h, plan.privacy.epsilon,
                                                    n_candidates=len(ds), sensitivity_source=src,
                                                    label="exponential sampling of the decision"))
            idx = exponential_mechanism(scores, analysis.sensitivity_h * k, plan.privacy.epsilon,
                                        rng=rng)
        elif plan.privacy.is_private:
            idx = exponential_mechanism(
                scores, analysis.sensitivity_h, plan.privacy.epsilon, rng=rng, accountant=accountant,
                sensitivity_source=(f"compiler: L_h({analysis.sensitivity_norm})·"
                                    f"Δℓ({analysis.sensitivity_norm}) under "
                                    f"protect={plan.privacy.protect!r}"),
                label="exponential sampling of the decision")
        else:
            idx = int(np.argmax(np.asarray(scores.cpu() if hasattr(scores, "cpu") else scores)))
        return Result(self.name, [ds.decision(int(idx))], [1.0], ds, plan=plan,
                      trace=[{"candidates": len(ds), "chosen_index": int(idx)}])


from . import register  # noqa: E402

register(ExponentialBackend())

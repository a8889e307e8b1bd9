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

Releases: one, scheduled at plan time (``plan.schedule``, :mod:`privfair.privacy.release`): the
exponential-mechanism draw at the whole ε (what is left of it after any events already spent),
drawn in ``run`` through ``schedule.open(accountant, rng)``.  The audit's negative control is
``privfair.privacy.reduced_noise(k)`` around the solve, not an option of this backend.
"""

from __future__ import annotations

import math

import numpy as np

from ..base import Backend, Plan, Verdict
from ..options import Param

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
    #: no hyper-parameters: one draw at the whole ε (an empty table: every option is refused,
    #: naming the backend, before anything is spent)
    option_table = ()
    plan_params = (
        Param("G", float, "the penalty weight of h = f + G·max(0, g) (the Analysis' G)"),
        Param("candidates", int, "m, the number of decisions the draw is over"),
        Param("sensitivity_h", (float, None), "Δh, the score's sensitivity (None: unproven)"),
        Param("norm", (str, None), "the norm Δℓ is measured in to bound Δh (None: unproven)"),
    )

    def accepts(self, problem, analysis) -> Verdict:
        ds = getattr(problem.rates, "decisions", None)
        if ds is None or not getattr(ds, "is_finite", False):
            return Verdict(False, "needs a finite decision set (pf.FiniteSet or pf.Thresholds); "
                                  f"got {type(ds).__name__}")
        why = analysis.sensitivity_unproven()
        return Verdict(False, why) if why else Verdict(True)

    def plan(self, problem, analysis, privacy, options, spent=()) -> Plan:
        """One draw at ε (``spent``: events already recorded against the same (ε, δ))."""
        self.options_from(options or {})  # none taken: a typed refusal of any option given
        m = len(problem.rates.decisions)
        delta_h = analysis.sensitivity_h
        params = {"G": analysis.G, "candidates": m, "sensitivity_h": delta_h,
                  "norm": analysis.sensitivity_norm}
        schedule, eps = None, privacy.epsilon
        if not privacy.is_private:
            risk = 0.0
        elif delta_h is None:
            risk = math.inf
        else:
            schedule, eps = _schedule(analysis, privacy, m, spent)
            risk = utility_bound(delta_h, eps, m)
        out = Plan(self.name, privacy, analysis, problem, params=params,
                   budget=[("one exponential-mechanism draw over all candidates", eps, 0.0)],
                   predicted_excess_risk=risk, theorem=self.theorem, notes=[])
        out.schedule = schedule
        return out

    def formula(self, plan):
        import sympy as sp

        d, e, m, rho = sp.symbols("Delta_h epsilon m rho", positive=True)
        expr = utility_bound(d, e, m, rho=rho, log=sp.log)
        return (sp.Eq(sp.Symbol("excess"), expr, evaluate=False),
                {"Delta_h": plan.params.get("sensitivity_h"), "m": plan.params.get("candidates"),
                 "rho": RHO})

    def run(self, plan, *, rng, accountant, device="cpu", progress=True):
        from privfair.results.result import Result

        problem, analysis = plan.problem, plan.analysis
        ds = problem.rates.decisions
        private = plan.privacy.is_private
        schedule = getattr(plan, "schedule", None)
        if private and schedule is None:
            self.refuse("the plan has no release schedule: Δh was not proven when planning")
        L = problem.rates.evaluate_all()                     # (m, K): one vectorized pass
        scores = -penalized_values(problem, L, analysis.G)
        if device in ("cuda", "torch"):
            import torch

            scores = torch.as_tensor(scores, device="cuda" if device == "cuda" else "cpu")
        if private:
            idx = schedule.open(accountant, rng).exponential("decision", scores)
        else:
            idx = int(np.argmax(np.asarray(scores.cpu() if hasattr(scores, "cpu") else scores)))
        return Result(self.name, [ds.decision(int(idx))], [1.0], ds, plan=plan,
                      trace=[{"candidates": len(ds), "chosen_index": int(idx)}])


def _schedule(analysis, privacy, m, spent):
    """(Schedule, ε of the draw): :func:`~._draws.whole_epsilon` of one exponential event."""
    from privfair.privacy import Schedule, Scheduled, exponential_event

    from .._draws import whole_epsilon

    norm = analysis.sensitivity_norm

    def events(e):
        return [exponential_event(
            analysis.sensitivity_h, e, n_candidates=m, label="exponential sampling of the decision",
            sensitivity_source=(f"compiler: L_h({norm})·Δℓ({norm}) under "
                                f"protect={privacy.protect!r}"))]
    eps = whole_epsilon(events, privacy, spent)
    return (Schedule([Scheduled("decision", events(eps)[0])], privacy.epsilon, privacy.delta,
                     spent), eps)


from .. import register  # noqa: E402

register(ExponentialBackend())

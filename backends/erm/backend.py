"""The base class of the row-private ERM backends (:class:`ERMBackend`): the Problem-level
``accepts``/``plan``/``run`` shared by output perturbation, objective perturbation and dual
Frank–Wolfe around each backend's own ``releases``/``private_erm``/``predicted``, and
:func:`make_result`."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from privfair.privacy import approximate_event, pure_event
from privfair.privacy.randomness import as_source
from privfair.privacy.release import Schedule, calibrate
from privfair.results.result import Result

from ..base import PUBLIC, RELEASED, Plan, Verdict
from ..options import Param
from .constraint import (LAGRANGE_CALLS, RHO, ZERO_FRACTION, final_weight_bound, lagrange_budget,
                         lagrange_releases, lagrange_run, lagrange_setup, with_weight_bound)
from .preconditions import check_common
from .reduction import NeedsGroupMass, erm_from_problem, objective_gradient, uses_conditional
from .releases import ERMBudget, ERMRelease, fit_rules, schedule_for
from .solver import certify_reason, tau_target


def make_result(name, theta, ds, plan, trace, info, weights=None):
    """A Result of one decision θ, or of the mixture ``theta`` (a list) with ``weights``."""
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


#: the plan parameters every ERM backend's plan may set (:meth:`ERMBackend.plan`); each backend
#: adds those of its ``predicted`` (``plan_params = ERM_PLAN_PARAMS + (...)``)
ERM_PLAN_PARAMS = (
    Param("l2 (Λ)", float, "the decision set's ridge weight Λ"),
    Param("norm", str, "the decision set's norm"),
    Param("radius", float, "the decision set's radius in that norm"),
    Param("options", dict, "the solve options as validated, defaults filled: run reads these"),
    Param("release", ERMRelease, "every release of the run, scheduled and fitted (a private "
          "plan whose ERM is known at plan time)", optional=True),
)
#: and those of the constraint form (a backend with ``allow_constraint``)
CONSTRAINT_PLAN_PARAMS = (
    Param("nu_range", tuple, "the constraint form's multiplier range (floats), when it is "
          "fixed at plan time", optional=True),
    Param("erm_calls", int, "the constraint form's private ERM solves (2 with a probe), with "
          "nu_range", optional=True),
)

#: the doc's tail of a parameter only a private plan of the unconstrained form sets
PRIVATE_ONE_ERM = "set by a private plan with no constraint whose ERM is known at plan time"


class ERMBackend:
    """Mixin of the three row-private ERM backends: the Problem-level ``accepts``/``plan``/``run``
    around a backend's ``releases`` (the scheduled releases of one private ERM at an
    :class:`ERMBudget`, plan time), ``private_erm`` (that ERM, its noise drawn through a
    :class:`~privfair.privacy.release.Draws`, run time), ``planned_events`` (cheap events with
    the same privacy claim, for budget fitting; by default (ε, δ) under ``theorem``) and
    ``predicted`` (its theorem's excess risk).  Each backend declares ``option_table``
    (:data:`ERM_OPTIONS` where it takes the constraint form); ``plan``, ``schedule``,
    ``run_erm`` and :func:`.direct.private_weighted_erm` validate through ``options_from``, and
    the methods above read those validated options."""

    exposes = {
        "lagrange": (RELEASED, "the Lagrangian search's trace: released statistics and multipliers"),
        "slack": (RELEASED, "the repair margin, from the releases' noise scales"),
        "budget": (PUBLIC, "the per-release (ε, δ) split, fitted to the plan"),
        "notes": (PUBLIC, "the plan's notes"),
        "predicted_excess_risk": (PUBLIC, "the theorem's bound at n, ε, δ"),
        "params": (PUBLIC, "the planned constants"),
    }

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

    def planned_events(self, erm, spec, count=1, relation="row"):
        """Cheap events with the privacy claim of one private ERM at ``spec`` (no sensitivity,
        no noise scale: for fitting a budget split, :func:`.constraint.lagrange_budget` and the
        plan's ε' beside spent events): (ε, δ) — or pure ε when δ = 0 — under the backend's
        theorem.  A mechanism whose release composes more tightly overrides it (output
        perturbation: one Gaussian event)."""
        if spec.delta > 0:
            return [approximate_event(spec.epsilon, spec.delta, theorem=self.theorem,
                                      count=count)]
        return [pure_event(spec.epsilon, theorem=self.theorem, count=count)]

    def accepts(self, problem, analysis):
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
        solve spent budget before this plan (:func:`.releases.spent_before`).  Everything read
        here is public: n, the schema, the declared bounds and the problem's weights."""
        opts = self.options_from(options)       # typed refusals before anything is spent
        r_f = objective_gradient(problem)
        private = privacy.is_private
        try:
            erm0 = erm_from_problem(problem, r_f, empirical=not private)
        except NeedsGroupMass:
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
        """Plan and run one private ERM on a direct :func:`privfair.models.sparse.glm` problem (no
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

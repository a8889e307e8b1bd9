"""The plan-time releases of one private ERM: typed budgets (:class:`ERMBudget`, the constraint
form's :class:`LagrangeBudget`), the :class:`ERMRelease` a plan carries (the
:class:`~privfair.privacy.release.Schedule` every noise of the run is drawn through, fitted once
by :func:`privfair.privacy.release.calibrate`), and the composition rules a plan may fit with
after the solve's private group-mass estimate (:func:`spent_before`, :func:`fit_rules`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from privfair.privacy.release import Schedule


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


def schedule_for(backend, erm, budget, relation, options, label, rules=None):
    """The :class:`ERMRelease` of one private ERM at ``budget`` with nothing spent before (the
    direct paths: :func:`.direct.fit_erm`, :func:`.direct.private_weighted_erm`)."""
    rel = backend.releases(erm, budget, relation=relation, options=options, label=label,
                           rules=rules)
    return ERMRelease(Schedule(rel, budget.epsilon, budget.delta), budget, relation)

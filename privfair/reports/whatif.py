"""Bounds at a *what-if* n: the planner run on a copy of the problem whose rates carry another
public row count (:func:`at_n`; only the row count used for sensitivities changes, the group
masses stay declared), and the n a bound needs to reach α (:func:`n_needed`, bisection on log n
over a non-increasing bound; ∞ when it plateaus above α before :data:`N_MAX`)."""

from __future__ import annotations

import copy
import math

from ..analysis import formulas as F


N_MAX = 1e12


def at_n(problem, n):
    """A copy of ``problem`` whose rates carry the public row count ``n`` (for planning only:
    sensitivities and the plan's bound change, the data and the group masses do not)."""
    new = copy.copy(problem)
    r = copy.copy(problem.rates)
    r.n = int(n)
    new.rates = r
    return new


def bound_at(problem, privacy, backend, alpha, n=None):
    """``backend``'s predicted excess risk of h if the data had ``n`` rows (default: its own)."""
    p = problem if n is None else at_n(problem, n)
    chosen = p.plan(privacy, backend=backend, alpha=alpha).chosen
    return math.inf if chosen is None else float(chosen.predicted_excess_risk)


def n_needed(fn, alpha, n0, rel=0.02):
    """Smallest n (to ``rel``) with fn(n) ≤ α, for a non-increasing fn; inf if none ≤ N_MAX
    (:func:`privfair.analysis.formulas.n_for_alpha`)."""
    return F.n_for_alpha(fn, alpha, n0, rel=rel, n_max=N_MAX)

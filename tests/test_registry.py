"""The backend registry is an explicit table (issue #17): name → module, priority, reason.

The planner's tie-break (equal rank, equal predicted risk) is the declared priority, not the
order in which modules happen to be imported."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privfair as pf
import privfair.backends as backends
from privfair.backends import BACKENDS, ENTRIES, REGISTRY, Backend, Plan, Verdict


def test_table_and_backends_agree():
    assert [e.name for e in sorted(REGISTRY, key=lambda e: e.priority)] == list(BACKENDS)
    assert len({e.priority for e in REGISTRY}) == len(REGISTRY)
    for e in REGISTRY:
        assert BACKENDS[e.name].name == e.name
        assert e.reason.strip(), f"{e.name}: a priority needs its reason"
        # the module named in the table is the one defining the instance
        assert type(BACKENDS[e.name]).__module__ == "privfair.backends" + e.module


def test_unlisted_backend_is_refused():
    class Stray(Backend):
        name = "stray_backend_not_in_the_table"

    with pytest.raises(ValueError, match="REGISTRY"):
        backends.register(Stray())
    assert Stray.name not in BACKENDS


def _tied(name):
    """A stand-in accepting every problem, planning ∞ at rank 1 (a tie with every other)."""

    class Tied(Backend):
        theorem = "test stand-in"
        option_names = ()

        def accepts(self, problem, analysis):
            return Verdict(True)

        def plan(self, problem, analysis, privacy, options):
            return Plan(backend=self.name, privacy=privacy, analysis=analysis, problem=problem,
                        predicted_excess_risk=math.inf)

    Tied.name = name
    return Tied()


def _problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 1))
    data = pf.Dataset(X, (X[:, 0] > 0).astype(int), rng.choice(["a", "b"], 200))
    r = pf.rates(pf.Thresholds(np.linspace(-1, 1, 5), score=0), data, group_mass_bound=0.1)
    return pf.Problem(pf.minimize(r.error()))


def test_priority_breaks_ties(monkeypatch):
    """Two stand-ins tie (rank 1, risk ∞): the one with the smaller declared priority wins,
    whichever order they were added to BACKENDS in."""
    only = {}
    monkeypatch.setattr(backends, "BACKENDS", only)
    from privfair.planning import planner     # reads privfair.backends.BACKENDS at each call

    first, second = _tied("exponential"), _tied("frank_wolfe")
    only["frank_wolfe"], only["exponential"] = second, first     # added in the "wrong" order
    plans = planner.plan(_problem(), pf.DP(1.0, 1e-6, protect="sensitive"))
    assert [p.backend for p in plans.ranked] == ["exponential", "frank_wolfe"]
    monkeypatch.setitem(ENTRIES, "exponential",
                        backends.Entry("exponential", ".exponential", 99, "test: moved last"))
    plans = planner.plan(_problem(), pf.DP(1.0, 1e-6, protect="sensitive"))
    assert [p.backend for p in plans.ranked] == ["frank_wolfe", "exponential"]


def test_unlisted_names_come_after_listed(monkeypatch):
    monkeypatch.setitem(BACKENDS, "picky_test_stand_in", _tied("picky_test_stand_in"))
    assert backends.priority("picky_test_stand_in") >= len(REGISTRY)
    assert backends.priority("lagrangian_sgda") < backends.priority("picky_test_stand_in")


def test_auto_ranking_is_rank_then_risk_then_declared_priority():
    """On a real problem where several backends accept, the ranking is exactly the sort by
    (rank, predicted risk, registry priority) — the priority decides only among ties."""
    from privfair.planning import planner

    plans = planner.plan(_problem(), pf.DP(1.0, 1e-6, protect="sensitive"))
    assert len(plans.ranked) >= 3
    keys = [(p.rank, p.predicted_excess_risk, backends.priority(p.backend)) for p in plans.ranked]
    assert keys == sorted(keys)
    assert plans.chosen is plans.ranked[0]

"""Typed plan parameters (#17): every backend declares its plan's parameters once.

``Backend.plan_params`` lists each name ``plan`` may put in ``Plan.params`` with its type and a
one-line doc (:class:`backends.options.Param`); ``Plan`` checks the dict a backend built against
it when the plan is made, so an undeclared name, a missing required one or a value of another
type is a ``TypeError`` naming the backend, the parameter, the value and the fix.  Here every
registered backend plans small problems it accepts — private and ε = ∞, so that each declared
name is set by some plan (no stale entry) — and stand-ins that break their declaration are
refused.
"""

import math

import numpy as np
import pytest

import privfair as pf
from privfair.backends import BACKENDS
from privfair.backends.base import PLANNER_PARAMS, Backend, Plan, PlanParams, Verdict
from privfair.backends.options import Param, check_params, param_rows
from privfair.cli.commands import main
from privfair.planning import planner

from _synthetic import binary

INF = math.inf


def _problems():
    """name → (problem, its options): one small problem per kind of decision set."""
    data = binary(240, 0)
    out = {}
    r = pf.rates(pf.Thresholds(np.linspace(-1, 1, 9), score=0), data, group_mass_bound=0.1)
    dp = pf.abs(r.selection["a"] - r.selection["b"]) <= 0.1
    out["thresholds"] = pf.Problem(pf.minimize(r.error()), [dp])
    out["thresholds_smooth"] = pf.Problem(pf.minimize(
        r.error() + pf.square(r.selection["a"] - r.selection["b"])))
    r = pf.rates(pf.PostProcessed(lambda X: (np.asarray(X, float)[:, 0] > 0.1).astype(float)),
                 data)
    out["postprocessed"] = pf.Problem(pf.minimize(r.error()),
                                      [pf.abs(r.tpr["a"] - r.tpr["b"]) <= 0.1])
    r = pf.rates(pf.ProxyCells(2, 2), data, group_mass_bound=0.1)
    out["cells"] = pf.Problem(pf.minimize(r.error()),
                              [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.1])
    ds = pf.SparseLinear(2, norm=pf.norms.l1(2), radius=2.0, l2=0.05, feature_bound=2.0)
    r = pf.rates(ds, data, surrogate="logistic", group_mass_bound=0.1, feature_bound=2.0)
    out["sparse"] = pf.Problem(pf.minimize(r.error()),
                               [r.selection["a"] - r.selection["b"] <= 0.1])
    out["sparse_free"] = pf.Problem(pf.minimize(r.error()))
    lin = pf.LinearClassifier(2, radius=2.0)
    r = pf.rates(lin, data, surrogate="logistic", group_mass_bound=0.1)
    out["linear_surrogate"] = pf.Problem(pf.minimize(r.error()))
    r = pf.rates(lin, data, group_mass_bound=0.1)
    out["linear"] = pf.Problem(pf.minimize(r.error()),
                               [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.1])
    return out


#: backend → the (problem, ε, δ, protect) it plans here: together they set every declared name
CASES = {
    "exponential": [("thresholds", 1.0, 0.0, "sensitive"), ("thresholds", INF, 0.0, "sensitive")],
    "frank_wolfe": [("thresholds_smooth", 1.0, 0.0, "sensitive"),
                    ("thresholds_smooth", INF, 0.0, "sensitive")],
    "cells": [("cells", 1.0, 0.0, "sensitive"), ("cells", INF, 0.0, "sensitive")],
    "lopt": [("linear_surrogate", 1.0, 1e-6, "row"), ("sparse_free", 1.0, 0.0, "row"),
             ("thresholds", INF, 0.0, "sensitive")],
    "postprocessing": [("postprocessed", 1.0, 0.0, "sensitive"),
                       ("postprocessed", INF, 0.0, "sensitive")],
    "oracle_learner": [("linear", 1.0, 0.0, "sensitive"), ("thresholds", INF, 0.0, "sensitive")],
    "output_perturbation": [("sparse_free", 1.0, 0.0, "row"), ("sparse", 1.0, 0.0, "row"),
                            ("sparse_free", INF, 0.0, "row")],
    "objective_perturbation": [("sparse_free", 1.0, 1e-6, "row"), ("sparse", 1.0, 0.0, "row"),
                               ("sparse_free", INF, 0.0, "row")],
    "dual_frank_wolfe": [("sparse_free", 1.0, 0.0, "row"), ("sparse_free", INF, 0.0, "row")],
    "sgda": [("linear", INF, 0.0, "sensitive"), ("linear", 1.0, 1e-6, "sensitive")],
    "lagrangian_sgda": [("linear", INF, 0.0, "row"), ("linear", 1.0, 1e-6, "row")],
    "proxy_reductions": [("linear", 1.0, 1e-6, "sensitive"), ("linear", INF, 0.0, "sensitive")],
}


@pytest.fixture(scope="module")
def problems():
    return _problems()


def test_every_registered_backend_declares_its_plan_parameters():
    assert set(CASES) == set(BACKENDS), "add the new backend's cases to CASES"
    planner_names = {p.name for p in PLANNER_PARAMS}
    for name, b in BACKENDS.items():
        declared = b.plan_params
        assert isinstance(declared, tuple) and declared, name
        names = [p.name for p in declared]
        assert len(names) == len(set(names)), (name, names)          # one entry per name
        assert not planner_names & set(names), name                 # the planner's stay its own
        for p in declared:
            assert isinstance(p, Param) and p.doc, (name, p)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_plan_matches_its_declaration(name, problems):
    """Each plan is checked when it is made; here the check is repeated by hand, every required
    name is present, and every declared name is set by one of the plans (no stale entry)."""
    if name == "sgda":
        pytest.importorskip("torch", reason="sgda needs the optional torch extra")
    b = BACKENDS[name]
    declared = b.plan_params
    seen = set()
    for key, eps, delta, protect in CASES[name]:
        plans = planner.plan(problems[key], pf.DP(eps, delta, protect=protect), backend=name)
        plan = plans.chosen
        assert plan is not None and plan.backend == name, (name, key, eps, plans.refused)
        assert isinstance(plan.params, PlanParams)
        check_params(declared + PLANNER_PARAMS, plan.params, name)
        required = {p.name for p in declared if not p.optional}
        assert required <= set(plan.params), (name, key, required - set(plan.params))
        for p in declared:                          # both ways of reading stay
            if p.name in plan.params and p.name.isidentifier():
                assert getattr(plan.params, p.name) is plan.params[p.name]
        seen |= set(plan.params)
    stale = {p.name for p in declared} - seen
    assert not stale, f"{name} declares {sorted(stale)} but none of its test plans sets them"


class _StandIn(Backend):
    """A backend whose plan sets what the test asks, against a two-entry declaration."""

    name = "exponential"           # a registered name: Plan looks the declaration up by it
    theorem = "test stand-in"
    option_names = ()
    plan_params = (Param("T", int, "iterations"),
                   Param("scale", (float, None), "noise scale", optional=True))

    def __init__(self, params):
        self.params = params

    def accepts(self, problem, analysis):
        return Verdict(True)

    def plan(self, problem, analysis, privacy, options):
        return Plan(self.name, privacy, analysis, problem, params=dict(self.params),
                    predicted_excess_risk=INF)


@pytest.mark.parametrize("params, match", [
    ({"T": 3, "steps": 5}, r"'exponential' plans steps=5, which _StandIn\.plan_params do not "
                           r"declare: add Param\('steps'"),
    ({"T": 3.5}, r"plans T=3\.5, but _StandIn\.plan_params declare T as int \(iterations\): "
                 r"make it int"),
    ({"T": True}, r"plans T=True, but .* declare T as int"),
    ({"T": 3, "scale": "big"}, r"plans scale='big', but .* declare scale as float \| None"),
    ({"scale": 1.0}, r"does not set T, which _StandIn\.plan_params declare required"),
])
def test_a_plan_that_breaks_its_declaration_is_refused(monkeypatch, problems, params, match):
    monkeypatch.setitem(BACKENDS, "exponential", _StandIn(params))
    with pytest.raises(TypeError, match=match):
        planner.plan(problems["thresholds"], pf.DP(1.0, 1e-6, protect="sensitive"), backend="exponential")


def test_a_plan_that_keeps_its_declaration_is_made(monkeypatch, problems):
    """The positive side of the control: numpy integers are ints, ints are floats, None where
    declared; the planner's group_mass_share is added on top."""
    monkeypatch.setitem(BACKENDS, "exponential", _StandIn({"T": np.int64(3), "scale": None}))
    plan = planner.plan(problems["thresholds"], pf.DP(1.0, 1e-6, protect="sensitive"), backend="exponential").chosen
    assert plan.params.T == 3 and plan.params["scale"] is None
    assert "group_mass_share" in plan.params
    monkeypatch.setitem(BACKENDS, "exponential", _StandIn({"T": 3, "scale": 2}))
    assert planner.plan(problems["thresholds"], pf.DP(1.0, 1e-6, protect="sensitive"),
                        backend="exponential").chosen.params.scale == 2


def test_a_registered_backend_whose_declaration_misses_a_name_is_refused(monkeypatch, problems):
    """The check runs on the real backends: drop one declared name and the plan is refused,
    naming it and its value."""
    b = BACKENDS["exponential"]
    monkeypatch.setattr(type(b), "plan_params",
                        tuple(p for p in b.plan_params if p.name != "candidates"))
    with pytest.raises(TypeError, match=r"'exponential' plans candidates=9, which "
                                        r"ExponentialBackend\.plan_params do not declare"):
        planner.plan(problems["thresholds"], pf.DP(1.0, 0.0, protect="sensitive"), backend="exponential")


def test_the_planners_own_entries_are_checked_too():
    p = PlanParams({"T": 1})
    assert p.with_defaults(group_mass_share=0.25)["group_mass_share"] == 0.25
    with pytest.raises(TypeError, match="group_mass_shares=0.25, which backends.base."
                                        "PLANNER_PARAMS do not declare"):
        p.with_defaults(group_mass_shares=0.25)
    with pytest.raises(TypeError, match="declare group_mass_share as float"):
        p.with_defaults(group_mass_share="a quarter")


def test_a_declaration_names_classes():
    """A type spelled as a string (the option table's kinds) is a declaration error at import."""
    with pytest.raises(ValueError, match="plan parameter 'T' has type 'int': give a class"):
        Param("T", "int", "iterations")
    assert Param("s", (float, None)).accepts(None) and not Param("s", float).accepts(None)
    assert Param("n", int).accepts(np.int32(2)) and not Param("n", int).accepts(np.bool_(True))
    assert Param("x", float).accepts(2) and not Param("x", float).accepts("2.0")


def test_a_stand_in_without_a_declaration_is_not_checked(monkeypatch, problems):
    class Free(_StandIn):
        plan_params = None

    monkeypatch.setitem(BACKENDS, "exponential", Free({"anything": object()}))
    assert planner.plan(problems["thresholds"], pf.DP(1.0, 1e-6, protect="sensitive"),
                        backend="exponential").chosen is not None


def test_privfair_backends_name_lists_the_plan_parameters(capsys):
    assert main(["backends", "frank_wolfe"]) == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    assert "frank_wolfe" in out and BACKENDS["frank_wolfe"].theorem in flat
    assert "plan parameter" in out
    for name, kind, when, _ in param_rows(BACKENDS["frank_wolfe"].plan_params):
        assert f"{name} {kind} {when}" in flat, name
    assert "T_range" in out                               # its options too
    assert main(["backends", "no_such_backend"]) != 0


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_private_plan_lists_what_it_spends(name, problems):
    """``explain()`` shows a private plan's releases from ``Plan.budget``: every private case
    lists at least one (label, ε > 0, δ ≥ 0) — a pure one (δ = 0) at most the asked ε; an
    approximate one may show a larger ε at a smaller δ, a point of its own privacy curve that
    the accountant composes — and a plan at ε = ∞ lists nothing finite.  (29f7d1f put
    proxy_reductions' listing under its ``proxy_ridge`` override: by default its plans listed
    nothing, and ``proxy_ridge`` at ε = ∞ raised NameError.)"""
    if name == "sgda":
        pytest.importorskip("torch", reason="sgda needs the optional torch extra")
    for key, eps, delta, protect in CASES[name]:
        plan = planner.plan(problems[key], pf.DP(eps, delta, protect=protect),
                            backend=name).chosen
        if math.isinf(eps):
            assert all(math.isinf(e) for _, e, _ in plan.budget), (name, key, plan.budget)
            continue
        assert plan.budget, (name, key)
        for label, e, d in plan.budget:
            assert isinstance(label, str) and label, (name, key)
            assert 0 < e < math.inf and 0 <= d <= delta, (name, key, label, e, d)
            assert d > 0 or e <= eps * (1 + 1e-9), (name, key, label, e)

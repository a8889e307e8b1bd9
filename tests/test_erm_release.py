"""The row-private ERM backends on the release plumbing (issue #17): a private plan carries its
release schedule, fitted once; the run records exactly the scheduled events and calibrates
nothing; after a private group-mass estimate the schedule still composes to the solve's (ε, δ);
the audit's ``reduced_noise`` reaches every draw; the test-only option is gone."""

import numpy as np
import pytest

import privfair as pf
from privfair.backends import get
from privfair.errors import InvalidInputError
from privfair.privacy import reduced_noise

METHODS = ("output_perturbation", "objective_perturbation", "dual_frank_wolfe")


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.choice(["a", "b"], n)
    X = rng.normal(size=(n, 3)) * 0.5
    y = (X[:, 0] - X[:, 1] + 0.3 * rng.logistic(size=n) > 0).astype(int)
    return pf.Dataset(X, y, sensitive=a, group_names=["a", "b"])


def _problem(data, constraint=False, group_mass_bound=0.05):
    ds = pf.SparseLinear(3, norm=pf.norms.l1(3), radius=2.0, l2=0.05, intercept_bound=1.0)
    r = pf.rates(ds, data, surrogate="logistic", group_mass_bound=group_mass_bound)
    cons = [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.1] if constraint else []
    return pf.Problem(pf.minimize(r.error()), cons)


@pytest.mark.parametrize("method", METHODS)
def test_the_run_records_exactly_the_planned_schedule(method):
    prob = _problem(_data())
    privacy = pf.DP(1.0, 1e-6, protect="row")
    res = prob.solve(privacy, backend=method, seed=0, progress=False)
    release = res.plan.params["release"]
    planned = release.schedule.events()
    got = res.certificate.releases
    assert [ev.mechanism for ev in got] == [ev.mechanism for ev in planned]
    assert [(ev.epsilon, ev.delta, ev.scale, ev.count) for ev in got] == \
        [(ev.epsilon, ev.delta, ev.scale, ev.count) for ev in planned]
    assert res.certificate.epsilon <= 1.0 + 1e-9 and res.certificate.delta <= 1e-6 + 1e-15


def test_constraint_form_schedules_its_two_statistic_releases_and_the_final_erm():
    prob = _problem(_data(), constraint=True)
    res = prob.solve(pf.DP(2.0, 1e-6, protect="row"), backend="output_perturbation", seed=1,
                     progress=False)
    names = list(res.plan.params["release"].schedule.releases)
    assert names[0].startswith("constraint statistic") and names[-1].startswith("constraint")
    assert any(n.startswith("final ERM") for n in names)
    assert [ev.mechanism for ev in res.certificate.releases] == ["laplace", "gaussian", "laplace"]
    b = res.info["budget"]             # typed: the final ERM and each u release, fitted together
    assert b.probe is None and b.release_epsilon == pytest.approx(0.06 * b.final.epsilon)
    assert res.certificate.epsilon <= 2.0 + 1e-9


@pytest.mark.parametrize("method", ["output_perturbation", "objective_perturbation"])
def test_after_a_private_group_mass_estimate_the_schedule_composes_to_the_budget(method):
    prob = _problem(_data(600), constraint=True, group_mass_bound=None)
    privacy = pf.DP(1.0, 1e-6, protect="row")
    res = prob.solve(privacy, backend=method, seed=2, progress=False)
    cert = res.certificate
    assert cert.releases[0].mechanism == "laplace" and len(cert.releases) == 4   # q̂ first
    assert cert.epsilon <= 1.0 + 1e-9 and cert.delta <= 1e-6 + 1e-15
    assert any("basic composition" in n for n in res.plan.notes)


def test_reduced_noise_scales_the_drawn_noise_not_the_recorded_event():
    ds = pf.SparseLinear(2, norm=pf.norms.l1(2), radius=2.0, l2=0.2, feature_bound=1.0)
    rng = np.random.default_rng(5)
    erm = pf.sparse.glm(rng.normal(size=(50, 2)), rng.integers(0, 2, 50), ds, "logistic")
    b = get("output_perturbation")
    rel = b.schedule(erm, 1.0, 0.0, {"project": False})        # pure ε: κ·Gamma noise
    exact = pf.sparse.fit(erm, pf.DP(float("inf"), protect="row"), "output_perturbation",
                          project=False).decision
    acc = pf.privacy.Accountant(limit=(1.0, 0.0))
    opts = b.options_from({"project": False})
    honest = b.private_erm(erm, rel.budget, draws=rel.schedule.open(acc, 7), options=opts)
    with reduced_noise(0.5):
        acc_half = pf.privacy.Accountant(limit=(1.0, 0.0))
        half = b.private_erm(erm, rel.budget, draws=rel.schedule.open(acc_half, 7),
                             options=opts)
    np.testing.assert_allclose(half - exact, 0.5 * (honest - exact), rtol=1e-9, atol=1e-12)
    assert acc.events[0].scale == acc_half.events[0].scale          # the claim is unchanged


@pytest.mark.parametrize("method", METHODS)
def test_the_test_only_noise_knob_is_gone(method):
    prob = _problem(_data(100))
    with pytest.raises(InvalidInputError, match="_noise_multiplier"):
        prob.plan(pf.DP(1.0, 1e-6, protect="row"), backend=method, _noise_multiplier=0.5)


@pytest.mark.parametrize("method, constraint", [(m, False) for m in METHODS]
                         + [("output_perturbation", True), ("objective_perturbation", True)])
def test_plan_fits_beside_events_already_spent_against_the_same_budget(method, constraint):
    """``plan(..., spent=events)`` (the planner's convention with lopt): the schedule is fitted
    beside the events already recorded against the same (ε, δ), and the accountant that holds
    them accepts every release of the run."""
    prob = _problem(_data(), constraint=constraint)
    privacy = pf.DP(1.0, 1e-6, protect="row")
    b = get(method)
    spent = [pf.privacy.laplace_event(1.0, 0.1, sensitivity_source="a test's earlier release")]
    plan = b.plan(prob, prob.analyze(privacy), privacy, {}, spent=spent)
    acc = pf.privacy.Accountant(delta=1e-6, relation="row", limit=(1.0, 1e-6))
    acc.record(spent[0])
    b.run(plan, rng=0, accountant=acc, progress=False)       # refused events would raise here
    assert len(acc.events) > 1 and acc.total().epsilon <= 1.0 + 1e-9


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("delta", [1e-6, 0.0])
def test_planned_events_claim_what_the_scheduled_releases_spend(method, delta):
    """``planned_events`` (one home: ERMBackend's default, output perturbation's Gaussian
    override) stands in for a private ERM's releases when a budget split is fitted
    (``lagrange_budget``, a plan beside spent events): composed, the scheduled releases at a
    budget must cost no more than the planned events at that budget, which claim the budget
    itself — else a fitted split would be refused by its own schedule."""
    from privfair.backends.erm.releases import ERMBudget

    b = get(method)
    ds = pf.SparseLinear(2, norm=pf.norms.l1(2), radius=2.0, l2=0.2, feature_bound=1.0)
    rng = np.random.default_rng(3)
    erm = pf.sparse.glm(rng.normal(size=(80, 2)), rng.integers(0, 2, 80), ds, "logistic")
    spec = ERMBudget(1.0, delta)

    def total(events):
        acc = pf.privacy.Accountant(delta=delta or None)
        acc.extend(events)
        return acc.total(delta or None).epsilon

    planned = b.planned_events(erm, spec)
    releases = [r.event for r in b.releases(erm, spec, relation="row",
                                            options=b.options_from({}), label="t")]
    assert total(planned) == pytest.approx(spec.epsilon, rel=1e-6)
    assert total(releases) <= total(planned) * (1 + 1e-6)
    assert total(b.planned_events(erm, spec, count=3)) > total(planned)   # count is honoured


# ------------------------------------------------------------------ declarative options (#17 item 5)
BAD_VALUES = {   # (option, a bad value, words of the fix) for every option each backend declares
    "output_perturbation": [("project", "yes", "True or False"), ("probe_share", -0.1, "≥ 0"),
                            ("release_share", 0.0, "> 0"), ("slack", -1.0, "≥ 0"),
                            ("slack", float("nan"), "finite")],
    "objective_perturbation": [("project", 1, "True or False"), ("probe_share", "0.5", "≥ 0"),
                               ("release_share", -1.0, "> 0"), ("slack", "auto", "≥ 0"),
                               ("jacobian_share", 0.0, "(0, 0.99)"),
                               ("jacobian_share", 0.995, "(0, 0.99)")],
    "dual_frank_wolfe": [("project", None, "True or False"), ("T", 0, "whole number ≥ 1"),
                         ("T", 2.5, "whole number"), ("penalty", 0.0, "> 0"),
                         ("selection_share", 1.0, "(0, 1)"), ("selection_share", 0, "(0, 1)")],
}


@pytest.mark.parametrize("method, name, value, fix",
                         [(m, *bad) for m, bads in BAD_VALUES.items() for bad in bads])
def test_a_bad_option_value_is_refused_at_plan_time_naming_the_option(method, name, value, fix):
    """The table's validator (backends/options.py) runs in ``plan`` — before the solve spends
    anything, here not even the private group-mass estimate — and in the direct ERM path."""
    prob = _problem(_data(100), group_mass_bound=None)
    privacy = pf.DP(1.0, 1e-6, protect="row")
    budget = pf.BudgetFilter(1.0, 1e-6)
    with pytest.raises(InvalidInputError) as err:
        prob.solve(privacy, backend=method, seed=0, budget=budget, progress=False,
                   **{name: value})
    assert err.value.field == name and fix in str(err.value) and method in str(err.value)
    assert budget.spent == (0.0, 0.0)
    ds = pf.SparseLinear(2, norm=pf.norms.l1(2), radius=2.0, l2=0.2, feature_bound=1.0)
    rng = np.random.default_rng(0)
    erm = pf.sparse.glm(rng.normal(size=(30, 2)), rng.integers(0, 2, 30), ds, "logistic")
    with pytest.raises(InvalidInputError) as err:
        pf.sparse.fit(erm, privacy, method, seed=0, **{name: value})
    assert err.value.field == name


def _options_read(path):
    """Every option name the module at ``path`` reads from its options (``options["x"]``,
    ``opts["x"]``, ``options.get("x"...)``, ``opts.get("x"...)``)."""
    import re

    text = path.read_text()
    return set(re.findall(r"""\b(?:options|opts)(?:\[|\.get\()\s*["'](\w+)["']""", text))


@pytest.mark.parametrize("method", METHODS)
def test_the_option_table_lists_every_option_the_backend_reads(method):
    """A grep of the backend's module (and of the family's shared modules in backends/erm/,
    whose base class and constraint form read the constraint options, for the backends that
    take the constraint form) against its table: an option read but not declared would escape
    validation; one declared but not read does nothing."""
    import inspect
    import pathlib

    b = get(method)
    own = pathlib.Path(inspect.getsourcefile(type(b)))
    read = _options_read(own)
    if b.allow_constraint:
        backends = {own.parent / f"{m}.py" for m in METHODS}
        shared = sorted(set(own.parent.glob("*.py")) - backends)
        assert own.parent / "constraint.py" in shared
        for path in shared:
            read |= _options_read(path)
    assert read == {o.name for o in b.option_table}
    assert b.option_names == tuple(o.name for o in b.option_table)
    assert all(o.doc and o.kind != "any" for o in b.option_table)     # type and doc each
    assert set(b.options_from({})) == set(b.option_names)           # a default for each

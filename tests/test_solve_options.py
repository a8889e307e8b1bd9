"""Solve options are checked against the backend's declared ``option_names`` before anything is
spent: a misspelt option raises a typed error naming it (with the close match), ``auto`` refuses
only names no backend takes, legitimate options keep working; refusals read cleanly."""

import numpy as np
import pytest

import privfair as pf
from privfair.backends import BACKENDS, get
from privfair.errors import BackendRefusedError, InvalidInputError
from privfair.planning.planner import check_options

FW, PP = "frank_wolfe", "postprocessing"
#: the backends whose options are declared here (sgda declares its own)
OWNED = ("exponential", "frank_wolfe", "cells", "lopt", "postprocessing", "oracle_learner",
         "output_perturbation", "objective_perturbation", "dual_frank_wolfe")


def thresholds_problem(seed=0, n=300):
    rng = np.random.default_rng(seed)
    a = rng.choice(["a", "b"], n)
    x = rng.normal(size=n) + 0.8 * (a == "a")
    y = (x + rng.normal(scale=0.8, size=n) > 0.5).astype(int)
    D = pf.Dataset(x[:, None], y, sensitive=a, group_names=["a", "b"])
    r = pf.rates(pf.Thresholds(np.linspace(-1.5, 2.0, 9), score=0), D, group_mass_bound=0.1)
    gap = pf.lse(r.selection["a"] - r.selection["b"], r.selection["b"] - r.selection["a"], eta=20)
    return pf.Problem(pf.minimize(r.error()), [gap <= 0.1])


def postprocessed_problem(seed=0, n=400):
    rng = np.random.default_rng(seed)
    a = rng.choice(["a", "b"], n, p=[0.6, 0.4])
    y = rng.binomial(1, np.where(a == "a", 0.45, 0.35))
    x = 1.6 * y + rng.normal(size=n) + 0.5 * (a == "a")
    D = pf.Dataset(x[:, None], y, sensitive=a, group_names=["a", "b"])
    r = pf.rates(pf.PostProcessed(lambda X: 1.0 / (1.0 + np.exp(-3.0 * (X[:, 0] - 0.9)))), D)
    return pf.Problem(pf.minimize(r.error()), [pf.abs(r.fpr["a"] - r.fpr["b"]) <= 0.05])


@pytest.fixture(scope="module")
def fw_problem():
    return thresholds_problem()


@pytest.fixture(scope="module")
def pp_problem():
    return postprocessed_problem()


@pytest.fixture
def all_declared(monkeypatch):
    """Every backend declared (sgda's own declaration may land separately)."""
    from privfair.backends.sgda.options import OPTION_NAMES

    sgda = BACKENDS["sgda"]
    if getattr(sgda, "option_names", None) is None:
        monkeypatch.setattr(sgda, "option_names", OPTION_NAMES, raising=False)


def test_every_owned_backend_declares_its_options():
    for name in OWNED:
        names = get(name).option_names
        assert isinstance(names, tuple) and all(isinstance(k, str) for k in names), name
    # exponential takes no option (the audit's noise control is privacy.reduced_noise, not an
    # option of production code)
    assert get("exponential").option_names == ()
    assert "slack" in get(PP).option_names and "T" in get(FW).option_names


@pytest.mark.parametrize("backend, bad, good, value", [
    (FW, "Tt", "T", 2), (FW, "mechansim", "mechanism", "laplace"),
    (PP, "slak", "slack", "none"), (PP, "bta", "beta", 0.1)])
def test_misspelt_option_for_a_named_backend_raises_naming_it(fw_problem, pp_problem, backend,
                                                              bad, good, value):
    prob = fw_problem if backend == FW else pp_problem
    budget = pf.BudgetFilter(1.0, 1e-6)
    rng = np.random.default_rng(5)
    state = rng.bit_generator.state
    with pytest.raises(InvalidInputError) as info:
        prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend=backend, seed=rng, budget=budget, progress=False,
                   **{bad: value})
    err = info.value
    assert err.field == bad and err.value == value
    msg = str(err)
    assert f"unknown option for backend '{backend}'" in msg
    assert f"did you mean '{good}'" in msg
    listed = msg.split("it takes: ")[1].split(" —")[0].split(", ")
    assert listed == sorted(k for k in get(backend).option_names if not k.startswith("_"))
    assert budget.spent == (0.0, 0.0)                  # nothing reserved or spent
    assert rng.bit_generator.state == state            # nothing drawn
    with pytest.raises(InvalidInputError, match=bad):  # plan() refuses it too
        prob.plan(pf.DP(1.0, 1e-6, protect="sensitive"), backend=backend, **{bad: value})


def test_backend_without_options_says_so(fw_problem):
    with pytest.raises(InvalidInputError, match="backend 'exponential'; it takes no options"):
        fw_problem.solve(pf.DP(1.0, protect="sensitive"), backend="exponential", T=3, progress=False)


def test_auto_refuses_only_names_no_backend_takes(fw_problem, all_declared):
    budget = pf.BudgetFilter(1.0, 1e-6)
    with pytest.raises(InvalidInputError, match="no backend takes it") as info:
        fw_problem.solve(pf.DP(1.0, 1e-6, protect="sensitive"), budget=budget, progress=False, slak="none")
    assert info.value.field == "slak" and "did you mean 'slack'" in str(info.value)
    with pytest.raises(InvalidInputError, match="no backend takes it"):
        fw_problem.solve(pf.DP(1.0, 1e-6, protect="sensitive"), budget=budget, progress=False, not_an_option=1)
    assert budget.spent == (0.0, 0.0)
    # an option some backend takes passes under auto, whichever backend is chosen
    plans = fw_problem.plan(pf.DP(1.0, 1e-6, protect="sensitive"), slack="none", T=3)
    assert plans.chosen is not None
    for p in plans.ranked:                    # each backend saw only its own options
        unused = sorted({"slack", "T"} - set(get(p.backend).option_names))
        notes = [n for n in p.notes if "not used" in n]
        assert notes == ([f"option(s) not taken by {p.backend}, not used: {', '.join(unused)}"]
                         if unused else [])
    assert {p.backend: p for p in plans.ranked}[FW].params["T"] == 3


def test_undeclared_backend_is_not_checked(monkeypatch):
    monkeypatch.setattr(get(FW), "option_names", None)
    check_options(FW, {"anything": 1})                # named: no declaration, no check
    check_options("auto", {"anything": 1})            # auto: some backend may take it
    monkeypatch.undo()
    with pytest.raises(InvalidInputError):
        check_options(FW, {"anything": 1})


def test_legitimate_options_still_work(fw_problem, pp_problem):
    res = fw_problem.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend=FW, T=2, mechanism="laplace", seed=0,
                           progress=False)
    assert res.plan.params["T"] == 2 and res.plan.params["mechanism"] == "laplace"
    assert res.certificate.epsilon <= 1.0 + 1e-9
    res = pp_problem.solve(pf.DP(1.0, protect="sensitive"), backend=PP, slack="none", beta=0.1, seed=0,
                           progress=False)
    assert res.plan.params["slack"] == "none" and res.plan.params["beta"] == 0.1
    # the old test-only knob is gone from production signatures: an unknown option, refused
    # before anything is spent (the audit uses privacy.reduced_noise instead)
    with pytest.raises(InvalidInputError, match="_noise_multiplier"):
        fw_problem.solve(pf.DP(1.0, protect="sensitive"), backend=FW, T=2, _noise_multiplier=0.1, progress=False)


def test_auto_passes_each_erm_backend_only_its_own_options():
    """Before: output_perturbation refused dual_frank_wolfe's T under auto."""
    from privfair.audit.instances import ridge_pair, ridge_problem

    prob = ridge_problem("logistic")(ridge_pair()[0])
    privacy = pf.DP(1.0, 1e-6, protect="row")
    plans = prob.plan(privacy, T=1, jacobian_share=0.01)
    by = {p.backend: p for p in plans.ranked}
    assert by["objective_perturbation"].params["jacobian_share"] == 0.01
    assert by["dual_frank_wolfe"].params["T"] == 1
    assert any("not used: T, jacobian_share" in n for n in by["output_perturbation"].notes)
    res = prob.solve(privacy, T=1, jacobian_share=0.01, seed=0, progress=False)
    assert res.certificate.epsilon <= 1.0 + 1e-9


def test_direct_erm_path_names_the_misspelt_option():
    with pytest.raises(InvalidInputError, match="did you mean 'project'") as info:
        get("output_perturbation").options_from({"projct": False})
    assert info.value.field == "projct"


def test_refusal_message_names_the_backend_once(pp_problem):
    with pytest.raises(BackendRefusedError) as info:
        get("exponential").refuse("a reason")
    err = info.value
    assert err.field == "backend" and err.value == "exponential"
    assert str(err) == "backend='exponential' is invalid: a reason"
    budget = pf.BudgetFilter(1.0)
    with pytest.raises(BackendRefusedError) as info:     # refused by the backend: nothing spent
        pp_problem.solve(pf.DP(1.0, protect="sensitive"), backend=FW, budget=budget, progress=False)
    msg = str(info.value)
    assert msg.startswith("backend='frank_wolfe' is invalid: ") and "'='" not in msg
    assert msg.count("backend=") == 1
    assert budget.spent == (0.0, 0.0)

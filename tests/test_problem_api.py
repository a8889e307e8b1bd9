"""cvxpy habits on pf.Problem (#20, first contact): pf.Minimize / pf.Maximize, prob.status and
prob.value after a solve — with the privacy rule that a private solve publishes no objective
value computed on its training data."""

import math

import numpy as np
import pytest

import privfair as pf
from privfair.errors import InvalidInputError, ModelingError, PrivfairError
from _synthetic import binary as _binary


@pytest.fixture(scope="module")
def setting():
    train, test = _binary(600, 0), _binary(500, 1)
    r = pf.rates(pf.Thresholds(np.linspace(-2, 3, 30), score=0), train)
    return train, test, r


# ------------------------------------------------------------------ Minimize / Maximize
def test_cvxpy_spellings_build_the_objectives(setting):
    _, _, r = setting
    assert isinstance(pf.Minimize(r.error()), pf.Minimize)
    assert isinstance(pf.minimize(r.error()), pf.Minimize)
    mx = pf.Maximize(r.tpr["a"])
    assert isinstance(mx, pf.Maximize) and isinstance(pf.maximize(r.tpr["a"]), pf.Maximize)
    assert mx.sense == "maximize" and mx.target is not None
    # the minimized expression is the negation: backends and the compiler minimize prob.f
    ell = np.random.default_rng(0).random(r.K)
    assert mx.expr.value(ell) == pytest.approx(-r.tpr["a"].value(ell))
    assert mx.value(ell) == pytest.approx(r.tpr["a"].value(ell))
    prob = pf.Problem(mx, [r.fpr["a"] <= 0.2])
    assert repr(prob).startswith("maximize tpr[a]")
    # maximizing a concave expression is a convex problem (the compiler checks -f)
    assert pf.Problem(pf.Maximize(pf.hmean(r.tpr["a"], r.tpr["b"]))).analyze(
        pf.DP(1.0, 1e-6, protect="sensitive")).curvature["f"] == "convex"


def test_objectives_refuse_vectors_and_junk(setting):
    _, _, r = setting
    with pytest.raises(ModelingError) as info:
        pf.Maximize(r.vector[[0, 1]])
    assert info.value.field == "objective" and "scalar" in info.value.fix
    with pytest.raises(ModelingError, match="Maximize"):
        pf.Problem("error")
    with pytest.raises(AttributeError):
        pf.Minimize(r.error()).expr = r.error()


def test_objectives_and_solved_problems_pickle(setting):
    import pickle

    _, _, r = setting
    prob = pf.Problem(pf.Maximize(r.tpr["a"]), [r.fpr["a"] <= 0.2])
    prob.solve(pf.DP(math.inf, protect="sensitive"), seed=0, progress=False)
    back = pickle.loads(pickle.dumps(prob))
    assert isinstance(back.objective, pf.Maximize) and back.status == "solved"
    assert back.value == pytest.approx(prob.value)
    assert type(pickle.loads(pickle.dumps(prob.value))) is float


# ------------------------------------------------------------------ status and value
def test_status_and_value_after_a_non_private_solve(setting):
    _, test, r = setting
    prob = pf.Problem(pf.Maximize(r.tpr["a"]), [r.fpr["a"] <= 0.2])
    assert prob.status == "not solved"
    assert prob.value is None
    res = prob.solve(pf.DP(math.inf, protect="sensitive"), seed=0, progress=False)
    assert prob.status == "solved" and prob.result is res
    ell = r.evaluate_mixture(res.decisions, res.weights)
    # the maximized expression reads as itself, not its negation
    assert isinstance(prob.value, float)
    assert prob.value == pytest.approx(ell[r.index("tpr[a]")]) and prob.value > 0
    held_out = prob.value_on(test)
    ell_test = pf.rates(r.decisions, test).evaluate_mixture(res.decisions, res.weights)
    assert held_out == pytest.approx(ell_test[r.index("tpr[a]")])
    # non-private: the training data is no secret
    assert prob.value_on(r.data) == pytest.approx(prob.value)


def test_a_private_solve_publishes_no_training_objective(setting):
    """The objective on the private training rows is a function of them, outside the
    certificate: prob.value is None and value_on refuses the training data; held-out data is
    the user's to evaluate on."""
    _, test, r = setting
    prob = pf.Problem(pf.minimize(r.error()), [pf.abs(r.fpr["a"] - r.fpr["b"]) <= 0.1])
    prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), seed=0, progress=False)
    assert prob.status == "solved"
    assert prob.value is None
    with pytest.raises(InvalidInputError) as info:
        prob.value_on(r.data)
    assert info.value.field == "data" and "held-out" in info.value.fix
    assert 0 <= prob.value_on(test) <= 1


def test_status_after_a_refusal_and_value_on_other_schemas(setting):
    train, _, r = setting
    prob = pf.Problem(pf.minimize(r.error()), [r.fpr["a"] <= 0.2])
    with pytest.raises(PrivfairError):
        prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend="sgda", progress=False)   # sgda needs a model
    assert prob.status.startswith("refused: ") and "sgda" in prob.status
    assert prob.value is None and prob.result is None
    with pytest.raises(InvalidInputError) as info:
        prob.value_on(train)
    assert info.value.field == "result"
    prob.solve(pf.DP(math.inf, protect="sensitive"), seed=0, progress=False)
    rng = np.random.default_rng(3)
    other = pf.Dataset(rng.normal(size=(30, 2)), rng.integers(0, 2, 30),
                       sensitive=np.repeat(["a", "c"], 15), group_names=["a", "c"])
    with pytest.raises(InvalidInputError, match="groups"):
        prob.value_on(other)


def test_value_is_a_plain_attribute_and_evaluate_the_evaluation(setting):
    """cvxpy users expect prob.value to be an attribute (None, then a float); the (f, [g])
    evaluation at ℓ is prob.evaluate(l), and calling value is a TypeError like cvxpy's."""
    _, _, r = setting
    prob = pf.Problem(pf.Maximize(r.tpr["a"]), [r.fpr["a"] <= 0.2])
    ell = np.random.default_rng(1).random(r.K)
    f, gs = prob.evaluate(ell)
    assert [f, *gs] == pytest.approx([-ell[r.index("tpr[a]")], ell[r.index("fpr[a]")] - 0.2])
    assert prob.value is None
    with pytest.raises(TypeError):
        prob.value(ell)
    prob.solve(pf.DP(math.inf, protect="sensitive"), seed=0, progress=False)
    assert type(prob.value) is float


# ------------------------------------------------------------------ constraints without a list
def test_a_single_constraint_needs_no_list(setting):
    _, _, r = setting
    c = pf.abs(r.fpr["a"] - r.fpr["b"]) <= 0.1
    prob = pf.Problem(pf.Minimize(r.error()), c)
    assert prob.constraints == [c] and len(prob.g) == 1
    assert repr(prob) == repr(pf.Problem(pf.Minimize(r.error()), [c]))
    # an equality alone is refused as an equality, a vector constraint as a vector
    with pytest.raises(ModelingError, match=r"pf\.abs\(a - b\)") as info:
        pf.Problem(pf.Minimize(r.error()), r.fpr["a"] == r.fpr["b"])
    assert info.value.field == "constraints[0]"
    with pytest.raises(ModelingError, match="maximum") as info:
        pf.Problem(pf.Minimize(r.error()), r.vector[[0, 1]] <= 0.1)
    assert info.value.field == "constraints[0]"
    assert pf.Problem(pf.Minimize(r.error()), None).constraints == []       # as cvxpy


@pytest.mark.parametrize("bad", [0.02, True])
def test_constraints_that_are_neither_a_constraint_nor_a_list_name_the_field(setting, bad):
    _, _, r = setting
    with pytest.raises(ModelingError) as info:
        pf.Problem(pf.Minimize(r.error()), bad)
    assert info.value.field == "constraints" and "list of constraints" in info.value.fix


def test_value_of_a_constant_fallback_is_its_own_objective(setting):
    """After a non-private solve whose held-out check fell back to a constant rule (another
    decision set than the problem's), prob.value evaluated the constant's label as a decision
    of the problem's set (docs/trust.md listed it as not done); it reads the constant's own
    0-1 rates, as value_on does."""
    from privfair.planning.holdout import constant_result

    _, _, r = setting
    for label, tpr in ((1, 1.0), (0, 0.0)):
        prob = pf.Problem(pf.Maximize(r.tpr["a"]), [r.fpr["a"] <= 0.5])
        res = prob.solve(pf.DP(math.inf, protect="sensitive"), seed=0, progress=False)
        prob.result = constant_result(res, label)      # what a fallback solve leaves
        assert prob.value == tpr                       # "always label": its tpr on group a

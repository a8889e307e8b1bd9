"""ε and δ are checked in one place (#20, first contact): the budget filter (which allows ε = 0),
the estimator's hyper-parameters (which allow ε = inf) and pf.DP apply the privacy core's rules
(privfair/privacy/_validate.py, exported by privfair.privacy) and say the same thing —
a typed error naming the field, the value and the fix."""

import math

import numpy as np
import pytest

import privfair as pf
from privfair.errors import InvalidPrivacyError
from privfair.privacy import check_delta, check_epsilon


def _fix(call):
    with pytest.raises(InvalidPrivacyError) as info:
        call()
    return info.value.field, info.value.fix


@pytest.mark.parametrize("bad", ["1", True, b"1", None, [1.0]])
def test_the_budget_refuses_what_is_not_a_number(bad):
    # float("1") and float(True) made the budget spend a string or a bool as ε = 1
    b = pf.BudgetFilter(2.0, 1e-6)
    for call in (lambda: b.spend(bad), lambda: b.can_spend(bad), lambda: b.reserve(bad)):
        field, fix = _fix(call)
        assert field == "epsilon" and "≥ 0" in fix
    assert b.spent == (0.0, 0.0) and b.reserved == (0.0, 0.0)


def test_the_budget_keeps_its_rule_zero_is_a_request_inf_is_not():
    b = pf.BudgetFilter(1.0)
    assert b.can_spend(0) and b.can_spend(np.float64(0.5))
    b.spend(0.0)
    for bad in (-0.1, math.nan, math.inf):
        field, fix = _fix(lambda: b.spend(bad))
        assert field == "epsilon" and fix == check_fix(bad, allow_zero=True)
    assert _fix(lambda: b.spend(0.1, 1.0))[0] == "delta"


def check_fix(value, **rule):
    return _fix(lambda: check_epsilon(value, "epsilon", **rule))[1]


def test_one_rule_with_its_options():
    assert check_epsilon(0, allow_zero=True) == 0.0
    assert check_epsilon(math.inf, allow_inf=True) == math.inf
    assert check_epsilon(np.float32(0.5)) == 0.5
    for value, rule in ((0, {}), (math.inf, {}), (-1, {"allow_zero": True}),
                        (math.inf, {"allow_zero": True}), ("1", {"allow_inf": True})):
        field, fix = _fix(lambda: check_epsilon(value, "eps_total", **rule))
        assert field == "eps_total" and fix
    assert "finite" in check_fix(math.inf) and "≥ 0" in check_fix(-1, allow_zero=True)
    assert check_delta(0) == 0.0 and _fix(lambda: check_delta(1.0, "d"))[0] == "d"


def test_the_estimator_says_what_pf_dp_says():
    pytest.importorskip("sklearn", reason="scikit-learn is the sklearn extra")
    from privfair.sklearn import PrivateFairClassifier

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 2)), np.tile([0, 1], 20)
    a = np.repeat(["F", "M"], 20)
    for kw in ({"epsilon": -1.0}, {"epsilon": "1"}, {"epsilon": math.nan},
               {"delta": 1.0}, {"delta": -1e-9}, {"delta": True}):
        clf = PrivateFairClassifier(groups=["F", "M"], **kw)
        got = _fix(lambda: clf.fit(X, y, sensitive_features=a))
        dp = {"epsilon": 1.0, "delta": 0.0, **kw}
        assert got == _fix(lambda: pf.DP(dp["epsilon"], dp["delta"], protect="sensitive")), kw
    # the estimator's own rule: ε = inf is the non-private reference fit
    assert check_epsilon(math.inf, allow_inf=True) == PrivateFairClassifier(
        groups=["F", "M"], epsilon=math.inf, protect="sensitive").fit(X, y, sensitive_features=a).epsilon

"""Results speak the user's labels and groups (issue #20, first contact).

* ``Result.predict``/``sample`` return the dataset's label values (labels {1, 2} gave codes
  0/1, so ``mean(predict(X) == y)`` read 0.075 for an accuracy of 0.75); the codes stay
  available as ``predict_codes``/``sample_codes``.
* The positive class is explicit: ``labels=[negative, positive]`` or ``pos_label=``; two
  string labels read from y are refused instead of making the second sorted one positive.
* Groups keep the user's values: with groups ``[0, 1]``, ``r.selection[0]`` works (it raised
  ``choose one of ['0', '1']``).
"""

import math

import numpy as np
import pytest

import privfair as pf
from privfair.errors import DataError, InvalidInputError


def _data(labels=(0, 1), groups=("F", "M"), n=600, seed=0, **kw):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    a = np.asarray(groups, dtype=object)[rng.integers(0, len(groups), n)]
    if all(isinstance(g, int) for g in groups):
        a = a.astype(np.int64)
    y = np.asarray(labels)[(X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)]
    return X, y, a


def _solve(data, **kw):
    r = pf.rates(pf.Thresholds(np.linspace(-2, 2, 41), score=0), data)
    return pf.Problem(pf.minimize(r.error())).solve(pf.DP(math.inf, protect="sensitive"), progress=False, **kw)


def test_predict_returns_the_users_labels_and_accuracy_reads_right():
    X, y, a = _data(labels=(1, 2))
    data = pf.Dataset(X, y, a, group_names=["F", "M"], labels=[1, 2])
    res = _solve(data)
    assert res.labels == [1, 2]
    pred = res.predict(X)
    assert set(np.unique(pred)) <= {1, 2} and pred.dtype.kind == "i"
    acc = float(np.mean(pred == y))
    assert acc == pytest.approx(1 - res.metrics(data)["error"]) and acc > 0.7
    codes = res.predict_codes(X)                        # the internal codes, as data.y
    assert float(np.mean(codes == data.y)) == acc
    np.testing.assert_array_equal(pred, np.array([1, 2])[codes])
    assert set(np.unique(res.sample(X, rng=0))) <= {1, 2}
    assert set(np.unique(res.sample_codes(X, rng=0))) <= {0, 1}


def test_string_labels_need_an_explicit_positive_class():
    X, y, a = _data(labels=("denied", "approved"))      # sorted: 'approved' < 'denied'
    with pytest.raises(DataError) as e:
        pf.Dataset(X, y, a, group_names=["F", "M"])
    assert e.value.field == "pos_label" and "pos_label=" in e.value.fix
    by_pos = pf.Dataset(X, y, a, group_names=["F", "M"], pos_label="approved")
    declared = pf.Dataset(X, y, a, group_names=["F", "M"], labels=["denied", "approved"])
    for data in (by_pos, declared):
        assert data.label_values == ["denied", "approved"] and data.pos_label == "approved"
        np.testing.assert_array_equal(data.y, (y == "approved").astype(int))
        res = _solve(data)
        pred = res.predict(X)
        assert set(pred) <= {"denied", "approved"}
        assert np.mean(pred == y) == pytest.approx(1 - res.metrics(data)["error"])
        # predict_proba is P(ŷ = the positive class)
        np.testing.assert_array_equal(pred == "approved", res.predict_proba(X) >= 0.5)
    # pos_label reorders declared labels; it must be one of them and binary
    assert pf.Dataset(X, y, a, labels=["approved", "denied"], pos_label="approved",
                      group_names=["F", "M"]).label_values == ["denied", "approved"]
    for bad, kw in (("maybe", {}), ("x", {"labels": ["a", "b", "x"]})):
        with pytest.raises(DataError) as e:
            pf.Dataset(X, y if not kw else np.full(len(y), "a"), a, pos_label=bad, **kw)
        assert e.value.field == "pos_label"
    # numbers keep their order: the larger is positive; one class seen plus pos_label is binary
    assert pf.Dataset(X, np.where(y == "approved", 2, 1), a).label_values == [1, 2]
    assert pf.Dataset(X, np.full(len(y), "denied"), a,
                      pos_label="approved").label_values == ["denied", "approved"]


def test_a_test_set_with_the_labels_in_another_order_is_scored_right():
    X, y, a = _data(labels=("no", "yes"))
    train = pf.Dataset(X, y, a, group_names=["F", "M"], labels=["no", "yes"])
    res = _solve(train)
    flipped = pf.Dataset(X, y, a, group_names=["F", "M"], labels=["yes", "no"])
    assert res.metrics(flipped) == res.metrics(train)
    other = pf.Dataset(X, np.where(y == "yes", 1, 0), a, group_names=["F", "M"])
    with pytest.raises(InvalidInputError, match="labels"):
        res.metrics(other)


def test_integer_groups_stay_integers():
    X, y, a = _data(groups=(0, 1))
    data = pf.Dataset(X, y, a, group_names=[0, 1])
    assert data.groups == ["0", "1"] and data.group_values == [0, 1]
    r = pf.rates(pf.Thresholds([0.0], score=0), data, group_mass_bound={0: 0.05, (1, 0): 0.05,
                                                                      ("1", 1): 0.05})
    assert r.selection.index(0) == r.selection.index("0")
    gap = r.selection[0] - r.selection[1]               # raised: choose one of ['0', '1']
    assert pf.Problem(pf.minimize(r.error()), [gap <= 0.1]).f is not None
    with pytest.raises(InvalidInputError) as e:
        r.selection[2]
    assert "[0, 1]" in e.value.fix
    assert data.with_row(0, group=1).group[0] == 1
    # read from the data (non-private runs): numbers in numeric order, values kept
    inferred = pf.Dataset(X, y, np.where(a == 1, 10, 2))
    assert inferred.group_values == [2, 10] and inferred.groups == ["2", "10"]
    assert pf.rates(pf.Thresholds([0.0], score=0), inferred).selection.index(10) > 0
    # several attributes: a group is its name "F|W" or its tuple of values
    two = pf.Dataset(X[:4], [0, 1, 0, 1], [["F", "W"], ["M", "W"], ["F", "B"], ["M", "B"]],
                     group_names=[("F", "W"), ("M", "W"), ("F", "B"), ("M", "B")])
    assert two.groups == ["F|W", "M|W", "F|B", "M|B"] and two.group_values[0] == ("F", "W")
    assert two.group_index(("M", "B")) == two.group_index("M|B") == 3

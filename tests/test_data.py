"""Dataset construction and validation: every bad input raises DataError naming its field."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privfair.data.dataset import Dataset
from privfair.errors import DataError, InvalidInputError, PrivfairError


def _ok(n=6):
    X = np.arange(2 * n, dtype=float).reshape(n, 2)
    return X, np.array([0, 1] * (n // 2)), np.array(["F", "M", "M"] * (n // 3))


def _raises(field, *args, **kwargs):
    with pytest.raises(DataError) as e:
        Dataset(*args, **kwargs)
    assert e.value.field.startswith(field), e.value.field
    assert field.split("[")[0] in str(e.value)
    assert e.value.fix
    return e.value


def test_basic_attributes_and_codes():
    X, y, a = _ok()
    d = Dataset(X, y, a)
    assert (d.n, d.n_features, d.n_labels, d.n_groups) == (6, 2, 2, 2)
    assert d.groups == ["F", "M"] and d.group.tolist() == [0, 1, 1, 0, 1, 1]
    assert d.X.dtype == np.float64 and d.y.dtype == np.int64
    assert d.feature_names == ["x0", "x1"] and d.sensitive.tolist() == a.tolist()
    assert d.counts().tolist() == [[1, 1], [2, 2]] and len(d) == 6
    for arr in (d.X, d.y, d.group, d.sensitive):
        assert not arr.flags.writeable
    assert "n=6" in repr(d)


def test_label_mapping():
    X, _, a = _ok()
    with pytest.raises(DataError) as e:       # two strings: which one is positive? (#20)
        Dataset(X, ["no", "yes", "no", "no", "yes", "no"], a)
    assert e.value.field == "pos_label" and "labels=[negative, positive]" in e.value.fix
    d = Dataset(X, ["no", "yes", "no", "no", "yes", "no"], a, pos_label="yes")
    assert d.label_values == ["no", "yes"] and d.y.tolist() == [0, 1, 0, 0, 1, 0]
    assert not d.labels_declared and d.pos_label == "yes"
    d = Dataset(X, [-1, 1, 1, -1, 1, 1], a)                 # binary {-1, 1} -> codes {0, 1}
    assert d.y.tolist() == [0, 1, 1, 0, 1, 1]
    d = Dataset(X, [0, 0, 0, 0, 0, 0], a)                   # one class seen: still binary
    assert d.label_values == [0, 1]
    d = Dataset(X, [2, 0, 1, 2, 0, 1], a)                   # three classes
    assert d.n_labels == 3
    d = Dataset(X, [True, False] * 3, a)
    assert d.y.tolist() == [1, 0] * 3 and d.label_values == [False, True] and d.labels_declared
    d = Dataset(X, [0, 1] * 3, a, labels=[1, 0])            # declared order defines the codes
    assert d.y.tolist() == [1, 0] * 3


def test_pandas_inputs_and_intersectional_groups():
    df = pd.DataFrame({"age": [30, 40, 50, 60], "hours": [1.0, 2.0, 3.0, 4.0]})
    sens = pd.DataFrame({"sex": ["F", "M", "F", "M"], "race": ["W", "W", "B", "B"]})
    d = Dataset(df, pd.Series([0, 1, 1, 0]), sens)
    assert d.feature_names == ["age", "hours"] and d.sensitive_names == ["sex", "race"]
    assert d.groups == ["F|B", "F|W", "M|B", "M|W"] and d.sensitive.shape == (4, 2)
    d2 = Dataset(df, [0, 1, 1, 0], [sens["sex"].to_numpy(), sens["race"].to_numpy()],
                 sensitive_names=["s", "r"])
    assert d2.groups == d.groups and d2.group.tolist() == d.group.tolist()
    d3 = Dataset(df, [0, 1, 1, 0], pd.Series(["a", "b", "a", "b"], name="grp"))
    assert d3.sensitive_names == ["grp"] and d3.sensitive.ndim == 1
    d4 = Dataset(df, [0, 1, 1, 0], [1, 2, 1, 2], group_names=["2", "1"])
    assert d4.groups == ["2", "1"] and d4.group.tolist() == [1, 0, 1, 0]


def test_validation_errors_name_the_field():
    X, y, a = _ok()
    bad = X.copy()
    bad[2, 1] = np.nan
    _raises("X", bad, y, a)
    bad[2, 1] = np.inf
    _raises("X", bad, y, a)
    _raises("X", np.array([["a", "b"]] * 6), y, a)                          # non-numeric array
    e = _raises("X['c']", pd.DataFrame({"c": list("abcdef")}), y, a)        # names the column
    assert "one-hot" in e.fix
    _raises("X", X[:, 0], y, a)                                             # 1-D features
    _raises("X", np.zeros((0, 2)), [], [])                                  # empty dataset
    _raises("y", X, y[:5], a)                                               # wrong length
    _raises("y", X, [0, 1, 2, 0, 1, 0], a, labels=[0, 1])                   # outside declared
    _raises("y", X, [0, 1, np.nan, 0, 1, 0], a)                             # missing label
    _raises("labels", X, y, a, labels=[1])
    _raises("sensitive", X, y, a[:5])                                       # wrong length
    _raises("sensitive", X, y, np.array(["F", None, "M", "F", "M", "M"], dtype=object))
    _raises("sensitive", X, y, a, group_names=["F"])                        # undeclared group
    _raises("group_names", X, y, a, group_names=["F", "F", "M"])
    _raises("feature_names", X, y, a, feature_names=["only_one"])
    _raises("sensitive_names", X, y, a, sensitive_names=["s", "t"])


def test_errors_are_typed():
    assert issubclass(DataError, InvalidInputError) and issubclass(DataError, PrivfairError)
    with pytest.raises(ValueError):         # DataError is also a ValueError for generic callers
        Dataset(np.zeros((2, 1)), [0, 1, 1], ["a", "b"])


def test_take_subsample_split_keep_the_schema():
    rng = np.random.default_rng(0)
    d = Dataset(rng.normal(size=(40, 3)), rng.integers(0, 2, 40), np.repeat(["a", "b"], 20))
    s = d.subsample(10, rng=1)
    assert s.n == 10 and s.groups == d.groups and s.label_values == d.label_values
    assert d.subsample(10, rng=1).X.tolist() == s.X.tolist()                 # reproducible
    tr, te = d.split(0.25, rng=2)
    assert (tr.n, te.n) == (30, 10)
    rows = sorted(map(tuple, np.vstack([tr.X, te.X]).tolist()))
    assert rows == sorted(map(tuple, d.X.tolist()))                            # a partition
    only_a = d.take(d.group == 0)
    assert only_a.n == 20 and only_a.groups == ["a", "b"]                      # b kept, now empty
    with pytest.raises(InvalidInputError):
        d.subsample(41)
    with pytest.raises(InvalidInputError):
        d.split(1.5)
    with pytest.raises(DataError):
        d.take([])


def test_with_row_builds_neighbours():
    X, y, a = _ok()
    d = Dataset(X, y, a)
    n1 = d.with_row(0, group="M")
    assert n1.group[0] == 1 and n1.sensitive[0] == "M" and (n1.X == d.X).all()
    n2 = d.with_row(1, x=[9.0, 9.0], label=0)
    assert n2.X[1].tolist() == [9.0, 9.0] and n2.y[1] == 0 and n2.group[1] == d.group[1]
    assert (d.X[1] != 9.0).all()                                               # original intact
    with pytest.raises(DataError):
        d.with_row(0, group="Other")
    with pytest.raises(DataError):
        d.with_row(0, label=7)
    with pytest.raises(DataError):
        d.with_row(0, x=[np.nan, 0.0])
    with pytest.raises(DataError):
        d.with_row(0, x=[1.0])
    with pytest.raises(InvalidInputError):
        d.with_row(6, label=0)


def test_from_parquet_without_dask_names_the_extra(monkeypatch):
    # #19: the Dask engine is optional; without it the error says how to install it
    import sys

    from privfair.data.dask_data import DaskMissingError

    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "dask.dataframe", None)
    with pytest.raises(DaskMissingError, match=r"privfair\[dask\]"):
        Dataset.from_parquet("rows.parquet", label="y", sensitive="a", groups=[0, 1])


def test_rows_are_views_of_the_dataset():
    d = Dataset(np.arange(20.0).reshape(10, 2), [0, 1] * 5, ["a", "b"] * 5)
    chunks = list(d.rows(chunk_rows=4).chunks())
    assert [len(c) for c in chunks] == [4, 4, 2]
    assert all(np.shares_memory(c.X, d.X) for c in chunks)
    assert np.concatenate([c.group for c in chunks]).tolist() == d.group.tolist()


def test_copy_false_holds_x_once_and_still_validates():
    X = np.arange(12.0).reshape(6, 2)
    d = Dataset(X, [0, 1] * 3, ["a", "b"] * 3, copy=False)
    assert np.shares_memory(d.X, X) and not X.flags.writeable
    assert not np.shares_memory(Dataset(np.ones((2, 1)), [0, 1], ["a", "b"]).X, np.ones((2, 1)))
    bad = np.ones((5000, 3))
    bad[4100, 2] = np.nan          # the chunked check names the first bad row and column
    with pytest.raises(DataError, match="row 4100"):
        Dataset(bad, [0, 1] * 2500, ["a", "b"] * 2500, copy=False)

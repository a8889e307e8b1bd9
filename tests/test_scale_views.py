"""Index views of a dataset (#19): the training part of the held-out split is
``data.take(rows, copy=False)``, whose passes gather one chunk at a time.  A pass over the view
gives the same bits as over the copy, and a ``cells`` solve never copies the training rows."""

import pickle
import warnings

import numpy as np
import pytest

import privfair as pf
from privfair.data import passes
from privfair.data.dataset import Dataset


def _data(n=3000, d=7, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, -3:] = rng.integers(0, 2, size=(n, 3))          # some 0/1 columns (the proxy's blocks)
    sex = rng.integers(0, 2, n)
    y = (X[:, 0] + 0.8 * sex + rng.logistic(size=n) > 0.3).astype(int)
    return pf.Dataset(X, y, sex, group_names=[0, 1], labels=[0, 1])


def test_view_has_the_copys_rows_without_copying_them():
    data = _data()
    idx = np.sort(np.random.default_rng(1).choice(data.n, 2000, replace=False))
    view, copy = data.take(idx, copy=False), data.take(idx)
    assert not view.is_materialized and view.n == copy.n and view.n_features == copy.n_features
    assert np.array_equal(view.y, copy.y) and np.array_equal(view.group, copy.group)
    for k in (None, 300, 2000, 5000):
        a = list(view.rows(chunk_rows=k).chunks())
        b = list(copy.rows(chunk_rows=k).chunks())
        assert [c.start for c in a] == [c.start for c in b]
        assert all(np.array_equal(u.X, v.X) and np.array_equal(u.y, v.y) for u, v in zip(a, b))
    assert not view.is_materialized                               # reading passes gathered chunks only
    # a view of a view composes the indices; .X gathers (once) the same array take makes
    sub = view.take([5, 0, 17], copy=False)
    assert sub.view_base is data.X and np.array_equal(sub.X, data.X[idx[[5, 0, 17]]])
    assert np.array_equal(view.X, copy.X) and not view.X.flags.writeable
    assert view.X is view.X


def test_a_pass_over_a_view_is_the_same_bits_as_over_the_copy():
    data = _data()
    idx = np.sort(np.random.default_rng(2).choice(data.n, 1700, replace=False))
    view, copy = data.take(idx, copy=False).rows(chunk_rows=256), data.take(idx).rows(chunk_rows=256)
    theta = np.random.default_rng(3).normal(size=data.n_features + 1)
    for fn, params in [(passes.weighted_sum, (passes.INTERCEPT, "y")),
                       (passes.logistic_terms, (passes.INTERCEPT, theta, True)),
                       (passes.group_label_counts, (2, 2)),
                       (passes.non_binary_counts, ())]:
        a, b = view.map_sum(fn, *params), copy.map_sum(fn, *params)
        for u, v in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
            assert np.array_equal(u, v)
    seed = passes.poisson_seeds(0, 1)[0]
    a = passes.poisson_pass(view, 0.3, seed, passes.weighted_sum, (passes.INTERCEPT, "y"))
    b = passes.poisson_pass(copy, 0.3, seed, passes.weighted_sum, (passes.INTERCEPT, "y"))
    assert np.array_equal(a, b)


def test_view_pickles_its_own_rows_only():
    data = _data(n=500)
    view = data.take(np.arange(0, 500, 5), copy=False)
    back = pickle.loads(pickle.dumps(view))
    assert back.view_base is None and back.X.shape == (100, data.n_features)
    assert np.array_equal(back.X, data.X[::5]) and back.groups == data.groups


def test_indexed_rows_refuses_bad_indices():
    X = np.zeros((4, 2))
    with pytest.raises(pf.errors.InvalidInputError):
        passes.IndexedRows(X, [0, 4])
    with pytest.raises(pf.errors.InvalidInputError):
        passes.IndexedRows(X, [0.5])
    with pytest.raises(pf.errors.InvalidInputError):
        passes.IndexedRows(X, [0, 1], y=np.zeros(3))


def _cells_problem(data):
    r = pf.rates(pf.ProxyCells(5, 3), data)
    return pf.Problem(pf.minimize(r.error()), [pf.abs(r.selection[0] - r.selection[1]) <= 0.05])


def _rule_arrays(res):
    rule = res.decision
    return [rule.score_coef, rule.proxy_coef, rule.score_edges, rule.proxy_edges, rule.q]


@pytest.mark.filterwarnings("ignore::privfair.errors.UncheckedResultWarning")
def test_cells_on_a_view_is_the_cells_of_the_copy_bit_for_bit():
    data = _data()
    idx = np.sort(np.random.default_rng(4).choice(data.n, 2400, replace=False))
    out = []
    for part in (data.take(idx), data.take(idx, copy=False)):
        res = _cells_problem(part).solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend="cells",
                                         seed=7, progress=False, holdout=0)
        out.append(_rule_arrays(res))
    for a, b in zip(*out):
        assert np.array_equal(a, b)


def test_cells_solve_never_copies_the_training_rows(monkeypatch):
    """With the default held-out check the training part is a view; the whole solve (plan,
    releases, fit, check) reads it through passes: its X is never gathered."""
    gathered = []
    prop = Dataset.X

    def spy(self):
        if not self.is_materialized:
            gathered.append(self.n)
        return prop.fget(self)

    monkeypatch.setattr(Dataset, "X", property(spy))
    data = _data(n=4000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = _cells_problem(data).solve(pf.DP(1.0, 1e-6, protect="sensitive"),
                                         backend="cells", seed=0, progress=False)
    assert res.holdout is not None and res.holdout.n_held_out > 0   # the split happened
    assert gathered == []

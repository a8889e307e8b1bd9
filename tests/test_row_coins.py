"""The prediction coins u(x) (privfair.results.result.row_coins) read each row alone: the same
coin in any batch, −0.0 = 0.0, and no temporary of X's size (#19: ``predict`` on 2·10⁶ × 101
rows had peaked at +1.7 GB from a whole-X copy and an isfinite mask)."""

import tracemalloc

import numpy as np
import pytest

from privfair.errors import DataError
from privfair.results.result import row_coins


def test_a_row_gets_the_same_coin_in_any_batch_and_across_chunk_boundaries(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 5))
    whole = row_coins(X, 7)
    import privfair.data.passes as passes

    monkeypatch.setattr(passes, "chunk_rows_for", lambda d: 33)     # many small blocks
    assert np.array_equal(row_coins(X, 7), whole)
    assert np.array_equal(row_coins(X[500:], 7), whole[500:])
    assert np.array_equal(row_coins(X[::-1], 7), whole[::-1])
    assert not np.array_equal(row_coins(X, 8), whole)                  # another key, other coins
    assert ((whole >= 0) & (whole < 1)).all()


def test_negative_zero_is_the_same_feature_as_zero():
    X = np.array([[0.0, 1.5], [-0.0, 1.5], [0.0, -1.5]])
    u = row_coins(X, 3)
    assert u[0] == u[1] and u[0] != u[2]
    assert np.signbit(X[1, 0])          # the caller's array is not modified


def test_coins_make_no_temporary_of_the_size_of_x():
    X = np.random.default_rng(1).normal(size=(200_000, 50))        # 80 MB
    tracemalloc.start()
    try:
        row_coins(X, 5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 0.25 * X.nbytes, peak       # block-sized copies and the n-vector of coins


def test_predict_refuses_non_finite_rows_naming_x():
    import privfair as pf

    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 3))
    a = rng.integers(0, 2, 400)
    y = (X[:, 0] + 0.3 * a > 0).astype(int)
    data = pf.Dataset(X, y, a, group_names=[0, 1])
    r = pf.rates(pf.LinearClassifier(3), data)
    res = pf.Problem(pf.minimize(r.error())).solve(pf.DP(float("inf"), protect="sensitive"), backend="auto",
                                                   progress=False, seed=0, holdout=0)
    bad = X.copy()
    bad[123, 1] = np.nan
    with pytest.raises(DataError, match="X"):
        res.predict(bad)
    assert res.predict(X, random_state=0).shape == (400,)

"""lagrangian_sgda's numpy adapter reads the rows through ``data.rows()`` only (issue #19).

Fast.  With ``Dataset.X`` made to raise, the adapter's every read (a batch's design, the
all-rows passes) and whole ``lagrangian_sgda`` and ``auto`` fits of a ``LinearClassifier`` still
run, on a dataset that holds its X and on one taken by index, under both units and with a rate
surrogate; and a step's one read of its batch, block by block (``LinearAdapter.step``), gives
the masses and the clipped gradient of the row-by-row formula whatever the block size.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import privfair as pf
from privfair.backends.lagrangian import models

from _synthetic import binary
from _rows import forbid_whole_x


@pytest.fixture
def no_whole_x(monkeypatch):
    return forbid_whole_x(monkeypatch)


def _problem(data, surrogate=None):
    kw = {} if surrogate is None else dict(surrogate=surrogate, group_mass_bound=0.05)
    r = pf.rates(pf.LinearClassifier(data.n_features, radius=10.0), data, **kw)
    return pf.Problem(pf.Minimize(r.error()),
                      [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.05])


def _solve(prob, unit, backend, **opts):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return prob.solve(pf.DP(1.0, 1e-5, protect=unit), backend=backend, seed=0,
                          progress=False, **opts)


@pytest.mark.parametrize("view", [False, True])
def test_adapter_reads_never_touch_dataset_x(monkeypatch, view):
    full = binary(3000, 21)
    data = full.take(np.arange(0, 3000, 3), copy=False) if view else full
    # a surrogate's rates compute the rows' clipping scales (privfair.statistics.soft) before
    # the adapter exists: built first, the adapter's reads checked below
    rates = [(_problem(data, s).rates, sc) for s, sc in
             [(None, "capped"), (None, "angle"), ("logistic", "fixed")]]
    no_whole_x = forbid_whole_x(monkeypatch)
    for r, scale in rates:
        ad = models.LinearAdapter(r, sharpness=5.0, soft_scale=scale)
        ad.rows.chunk_rows = 256                     # several chunks, the last one short
        theta = np.random.default_rng(0).normal(size=ad.P)
        idx = np.sort(np.random.default_rng(1).choice(data.n, 50, replace=False))
        U = np.random.default_rng(2).normal(size=(50, 2))
        assert ad.probs(theta, idx).shape == (50, 2)
        g, _ = ad.grad_sum(theta, idx, U, -U, clip=1.0)
        assert np.all(np.isfinite(g))
        assert ad.label_totals(theta, 2).sum() == pytest.approx(data.n)
        assert ad.probs(theta, None).shape == (data.n, 2)
    assert no_whole_x == []


@pytest.mark.parametrize("unit", ["row", "sensitive"])
def test_whole_fits_never_read_dataset_x(no_whole_x, unit):
    data = binary(4000, 22)
    res = _solve(_problem(data), unit, "lagrangian_sgda", epochs=1)
    assert res.backend == "lagrangian_sgda" and len(res.decisions) >= 1
    # auto (the planner, the held-out split and its check) chooses lagrangian_sgda here, and
    # proxy_reductions under protect="sensitive" (two groups): it too reads rows by chunks
    res = _solve(_problem(data), unit, "auto")
    assert res.backend == ("proxy_reductions" if unit == "sensitive" else "lagrangian_sgda")
    assert no_whole_x == []


@pytest.mark.parametrize("surrogate,scale", [(None, "capped"), (None, "fixed"),
                                            ("logistic", "fixed")])
def test_one_read_in_blocks_gives_the_row_by_row_numbers(surrogate, scale):
    data = binary(2000, 23)
    r = _problem(data, surrogate).rates
    rng = np.random.default_rng(3)
    idx = np.sort(rng.choice(data.n, 300, replace=False))
    U, V = rng.normal(size=(300, 2)), rng.normal(size=(300, 2))
    theta = rng.normal(size=data.n_features + 1)
    CLIP = 0.05
    ref = models.LinearAdapter(r, sharpness=5.0, soft_scale=scale)
    for th in (theta, 3.0 * theta, -theta):
        whole = models.LinearAdapter(r, sharpness=5.0, soft_scale=scale)
        blocks = models.LinearAdapter(r, sharpness=5.0, soft_scale=scale)
        blocks.block_rows = 64                       # 5 blocks, the last one short
        P1, g1, c1 = whole.step(th, idx, U, V, clip=CLIP)
        P2, g2, c2 = blocks.step(th, idx, U, V, clip=CLIP)
        np.testing.assert_array_equal(P1, P2)        # masses are per row: the same bits
        np.testing.assert_allclose(g1, g2, rtol=1e-12, atol=1e-12)   # the sum's order differs
        assert c1 == c2 > 0                          # some rows clipped: the test is not vacuous
        np.testing.assert_array_equal(P1, whole.probs(th, idx))
        np.testing.assert_array_equal(g1, whole.grad_sum(th, idx, U, V, clip=CLIP)[0])
        # the masses of the all-rows pass (chunk by chunk), row by row
        np.testing.assert_allclose(P1, ref.probs(th, None)[idx], rtol=1e-13, atol=1e-15)
    # one row at a time, the rows' clipped terms add up to the batch's sum
    one = models.LinearAdapter(r, sharpness=5.0, soft_scale=scale)
    g_rows = sum(one.step(theta, idx[i:i + 1], U[i:i + 1], V[i:i + 1], clip=CLIP)[1]
                 for i in range(300))
    batch = models.LinearAdapter(r, sharpness=5.0, soft_scale=scale).step(theta, idx, U, V,
                                                                          clip=CLIP)[1]
    np.testing.assert_allclose(g_rows, batch, rtol=1e-10, atol=1e-10)


def test_batch_designs_reuse_one_buffer_and_hold_the_batch_rows():
    full = binary(2000, 24)
    data = full.take(np.arange(1, 2000, 2), copy=False)
    r = _problem(data).rates
    ad = models.LinearAdapter(r, sharpness=5.0)
    Xv = np.asarray(full.X)[np.arange(1, 2000, 2)]
    rng = np.random.default_rng(4)
    first = None
    for k in (300, 280, 310):          # Poisson batch sizes vary around the expected size
        idx = rng.choice(data.n, k, replace=False)
        Z = ad.design(idx)
        np.testing.assert_array_equal(Z, Xv[idx])    # x̃ only: the intercept is in the products
        first = Z if first is None else first
        assert np.shares_memory(Z, first), "a new batch-sized array every step"


def test_gather_into_a_buffer_checks_its_indices():
    from privfair.data.passes import ArrayRows, IndexedRows
    from privfair.errors import InvalidInputError

    X = np.random.default_rng(5).normal(size=(40, 3))
    i = np.array([7, 0, 39, 7])
    np.testing.assert_array_equal(ArrayRows(X).gather(i, out=np.empty((4, 3))), X[i])
    view = IndexedRows(X, np.arange(39, -1, -3))
    np.testing.assert_array_equal(view.gather(i[:3] // 3, out=np.empty((3, 3))),
                                  X[np.arange(39, -1, -3)][i[:3] // 3])
    for rows, bad in [(ArrayRows(X), 40), (ArrayRows(X), -1), (view, 14)]:
        with pytest.raises(InvalidInputError):
            rows.gather(np.array([bad]), out=np.empty((1, 3)))

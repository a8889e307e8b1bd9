"""The row-private ERM family, ``lopt``'s oracles and the surrogate ``Rates`` read a dataset
taken by index through its row source, chunk by chunk (issue #19).

Fast.  A dataset taken by index (``take(rows, copy=False)``; the default held-out check's
training part is one) is never gathered whole: with ``Dataset.X`` made to raise on such a view,
``objective_perturbation``, ``output_perturbation``, ``dual_frank_wolfe`` and ``lopt`` solve it
and give the rule of the same solve on a copy of the rows (same seed), up to float summation
order (a chunked Uᵀv adds the rows in another order than the dense product).  Chunks and blocks
are made small (``passes.chunk_rows_for``, ``designs.BLOCK_ROWS`` patched) so that every pass
crosses several of them.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import privfair as pf
from privfair.data import dataset as dataset_module
from privfair.data import passes
from privfair.models import designs
from privfair.models.designs import ClippedRows

CHUNK = 97          # rows per chunk in these tests: every pass reads many chunks


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(passes, "chunk_rows_for", lambda d, chunk_bytes=None: CHUNK)
    monkeypatch.setattr(designs, "BLOCK_ROWS", 61)        # the reused blocks of row_blocks


def _forbid_view_x(monkeypatch):
    """From now to the test's end ``Dataset.X`` raises on a dataset taken by index and not yet
    gathered (a materialized dataset still reads its own array); the attempted reads are listed."""
    reads = []
    whole = dataset_module.Dataset.X.fget

    def view_x(self):
        if not self.is_materialized:
            reads.append(self.n)
            raise AssertionError("Dataset.X of an index view read: use data.rows()")
        return whole(self)

    monkeypatch.setattr(dataset_module.Dataset, "X", property(view_x))
    return reads


def make(n, seed, d=5):
    rng = np.random.default_rng(seed)
    a = rng.choice(["a", "b"], n, p=[0.6, 0.4])
    y = rng.binomial(1, np.where(a == "a", 0.5, 0.35))
    X = rng.normal(size=(n, d))
    X[:, 0] += 1.2 * y + 0.3 * (a == "a")
    X[:: 7] *= 3.0                  # some rows outside the feature bound: clipped
    return pf.Dataset(X, y, sensitive=a, group_names=["a", "b"])


def _view_and_copy(n=1500, seed=0, keep=1200):
    full = make(n, seed)
    rows = np.random.default_rng(seed + 1).choice(n, keep, replace=False)   # unsorted
    return full, full.take(rows, copy=False), full.take(rows)


def test_clipped_rows_over_a_row_source_equal_the_array(small_chunks):
    _, view, copy = _view_and_copy()
    rng = np.random.default_rng(2)
    scale = rng.uniform(0.2, 1.0, view.n)
    A, B = ClippedRows.of(copy, scale), ClippedRows.of(view, scale)
    assert A.rows is None and B.rows is not None and B.X is None and view.view_base is not None
    theta, V = rng.normal(size=view.n_features + 1), rng.normal(size=(view.n_features + 1, 3))
    v, h = rng.normal(size=view.n), rng.uniform(0.0, 2.0, view.n)
    assert np.array_equal(B @ theta, A @ theta)           # row-wise margins: the same bits
    assert np.allclose(B @ V, A @ V, rtol=0, atol=1e-12)
    assert np.allclose(B.T @ v, A.T @ v, rtol=1e-12, atol=1e-12)
    assert np.allclose((B * h).T @ v, (A * h).T @ v, rtol=1e-12, atol=1e-12)
    # the Gram matrix is the same chunked pass on both: the same chunks, the same numbers
    assert np.array_equal((B * h[:, None]).T @ B, (A * h[:, None]).T @ A)
    assert np.array_equal(np.asarray(B), np.asarray(A))
    assert view.is_materialized is False                  # nothing above gathered the view


def test_surrogate_rates_of_a_view_never_gather_it(monkeypatch, small_chunks):
    _, view, copy = _view_and_copy()
    ds = pf.LinearClassifier(view.n_features, radius=3.0)
    ref = pf.rates(ds, copy, surrogate="logistic", feature_bound=1.5, group_mass_bound=0.05)
    reads = _forbid_view_x(monkeypatch)
    got = pf.rates(ds, view, surrogate="logistic", feature_bound=1.5, group_mass_bound=0.05)
    assert np.array_equal(got.clip_scale, ref.clip_scale)
    theta = np.random.default_rng(4).normal(size=ds.P)
    for a, b in zip(got.soft(theta), ref.soft(theta)):
        assert np.array_equal(a, b)
    assert np.array_equal(got.evaluate(theta), ref.evaluate(theta))
    wts = np.random.default_rng(5).normal(size=got.K)
    (v1, g1), (v2, g2) = got.weighted_value_and_grad(theta, wts), \
        ref.weighted_value_and_grad(theta, wts)
    assert v1 == v2 and np.allclose(g1, g2, rtol=1e-12, atol=1e-15)
    # the value is read off the same pass's masses: what evaluate gives
    assert v2 == float(wts @ ref.evaluate(theta))
    assert reads == [] and not view.is_materialized


def _sparse(d, l2):
    return pf.SparseLinear(d, norm=pf.norms.l1(d), radius=4.0, l2=l2, intercept_bound=2.0,
                           feature_bound=2.0)


CASES = {
    "objective_perturbation": (lambda d: _sparse(d, 0.01), "row", True, {}),
    "output_perturbation": (lambda d: _sparse(d, 0.5), "row", False, {}),
    "dual_frank_wolfe": (lambda d: _sparse(d, 0.01), "row", False, {"T": 3}),
    "lopt": (lambda d: pf.LinearClassifier(d, radius=3.0), "row", False, {}),
}


def _solve(data, backend, **kw):
    make_ds, unit, constrained, opts = CASES[backend]
    ds = make_ds(data.n_features)
    fb = ds.feature_bound if isinstance(ds, pf.SparseLinear) else 1.0
    r = pf.rates(ds, data, surrogate="logistic", feature_bound=fb)
    cons = [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.05] if constrained else []
    prob = pf.Problem(pf.minimize(r.error()), cons)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)      # the held-out check's status
        return prob.solve(pf.DP(2.0, 1e-6, protect=unit), backend=backend, seed=7,
                          progress=False, **opts, **kw)


@pytest.mark.parametrize("backend", sorted(CASES))
def test_solves_of_a_view_match_a_copy_and_never_gather_it(monkeypatch, small_chunks, backend):
    full, view, copy = _view_and_copy()
    expected = _solve(copy, backend, holdout=0)
    reads = _forbid_view_x(monkeypatch)
    got = _solve(view, backend, holdout=0)
    assert reads == [] and not view.is_materialized
    # the same noise (same seed); the chunked sums differ from the dense ones by rounding only
    assert np.allclose(np.asarray(got.decision, float), np.asarray(expected.decision, float),
                       rtol=1e-7, atol=1e-7)
    assert got.status == expected.status
    assert got.certificate.epsilon == expected.certificate.epsilon
    assert got.certificate.delta == expected.certificate.delta


def test_the_default_held_out_check_never_gathers_the_training_part(monkeypatch, small_chunks):
    full = make(2000, 3)
    reads = _forbid_view_x(monkeypatch)
    res = _solve(full, "objective_perturbation")          # default 20 % held out
    assert reads == []
    # the trained rule (the check may mix it with, or replace it by, a constant)
    trained = res.holdout.trained if res.holdout.trained is not None else res
    assert np.all(np.isfinite(np.asarray(trained.decision, float)))


@pytest.mark.parametrize("device", [None, "cpu"])
def test_lopt_oracle_gradient_of_a_view_equals_the_copy(monkeypatch, small_chunks, device):
    if device is not None:
        pytest.importorskip("torch", reason="the torch oracle gradient needs torch")
    from privfair.backends.loss_vector.oracles import erm_gradient_fn

    _, view, copy = _view_and_copy()
    ds = pf.LinearClassifier(view.n_features, radius=3.0)
    r = np.zeros(18)
    r[[1, 2]] = 1.0                              # fp and fn of the first group
    theta = np.random.default_rng(6).normal(size=ds.P)
    want = np.asarray(erm_gradient_fn(pf.rates(ds, copy, surrogate="logistic",
                                               group_mass_bound=0.05), r, device)(theta))
    reads = _forbid_view_x(monkeypatch)
    got = np.asarray(erm_gradient_fn(pf.rates(ds, view, surrogate="logistic",
                                              group_mass_bound=0.05), r, device)(theta))
    assert reads == [] and not view.is_materialized
    assert np.abs(want).max() > 1e-3
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("kind", ["thresholds", "finite"])
def test_evaluate_all_of_a_view_counts_chunk_by_chunk(monkeypatch, small_chunks, kind):
    _, view, copy = _view_and_copy()
    if kind == "thresholds":
        ds = pf.Thresholds(np.linspace(-2.0, 2.0, 9), score=0)
    else:
        ds = pf.FiniteSet(np.random.default_rng(8).normal(size=(5, view.n_features + 1)))
    want = pf.rates(ds, copy, group_mass_bound=0.05).evaluate_all()
    reads = _forbid_view_x(monkeypatch)
    got = pf.rates(ds, view, group_mass_bound=0.05).evaluate_all()
    assert reads == [] and not view.is_materialized
    assert np.array_equal(got, want)                       # counts: integers, exact

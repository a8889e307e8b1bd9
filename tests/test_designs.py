"""Designs as views over X (#19 item 1): the clipped rows [x_i·c_i, 1] of the row-private ERM,
the torch gradient of the LOPT oracle and the least-squares oracle of ``oracle_learner`` read X
without an n×(d+1) copy, and give the dense computation's numbers up to float summation order."""

import dataclasses
import math

import numpy as np
import pytest

import privfair as pf
import privfair.models.designs
from privfair.backends.erm import direct, reduction, solver
from privfair.backends.loss_vector import oracles as O
from privfair.backends.reductions import oracle_learner as OL
from privfair.models.designs import ClippedRows
from privfair.errors import InvalidInputError

pytestmark = pytest.mark.filterwarnings("ignore::privfair.errors.UncheckedResultWarning")


def _dense_factory(calls):
    """A stand-in for ClippedRows that builds the dense [X·c, 1] (the pre-#19 matrix)."""
    def dense(X, c):
        calls.append(X.shape)
        return np.hstack([X * c[:, None], np.ones((X.shape[0], 1))])
    return dense


def _rows(n=1500, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 2.0
    c = np.minimum(1.0, 3.0 / np.linalg.norm(X, axis=1))
    return X, c


def test_clipped_rows_products_equal_the_dense_matrix():
    X, c = _rows()
    U = ClippedRows(X, c, chunk_rows=128)                 # 12 chunks in the Gram pass
    D = np.hstack([X * c[:, None], np.ones((X.shape[0], 1))])
    assert U.shape == D.shape and np.array_equal(np.asarray(U), D)
    rng = np.random.default_rng(1)
    th, Th = rng.normal(size=5), rng.normal(size=(5, 3))
    v, V, h = rng.normal(size=X.shape[0]), rng.normal(size=(X.shape[0], 2)), rng.random(X.shape[0])
    tol = dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(U @ th, D @ th, **tol)
    np.testing.assert_allclose(U @ Th, D @ Th, **tol)
    np.testing.assert_allclose(U.T @ v, D.T @ v, **tol)
    np.testing.assert_allclose(U.T @ V, D.T @ V, **tol)
    np.testing.assert_allclose((U * h[:, None]).T @ U, (D * h[:, None]).T @ D, **tol)
    np.testing.assert_allclose(U.T @ U, D.T @ D, **tol)
    np.testing.assert_allclose((U * h[:, None]) @ th, (D * h[:, None]) @ th, **tol)
    np.testing.assert_allclose((U * h).T @ v, (D * h[:, None]).T @ v, **tol)
    np.testing.assert_allclose((h[:, None] * U).T @ (U * h[:, None]),
                               (D * (h * h)[:, None]).T @ D, **tol)
    with pytest.raises(InvalidInputError, match="theta"):
        U @ th[:-1]
    with pytest.raises(InvalidInputError, match="scale"):
        ClippedRows(X, c[:-1])
    with pytest.raises(InvalidInputError, match="same rows"):
        U.T @ ClippedRows(X.copy(), c)


def _surrogate_rates(n=2000, seed=1, ds=None):
    rng = np.random.default_rng(seed)
    a = rng.choice(["a", "b"], n)
    X = np.c_[rng.normal(size=(n, 3)) * 2 + 0.5 * (a == "a")[:, None]]
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=n) > 0.3).astype(int)
    data = pf.Dataset(X, y, sensitive=a, group_names=["a", "b"])
    ds = ds or pf.LinearClassifier(3, radius=2.0)
    return pf.rates(ds, data, surrogate="logistic", feature_bound=2.0)


def _r(rt):
    r = np.zeros(rt.K)
    r[[rt.fp.index("a"), rt.fn.index("a")]] = 1.0
    r[[rt.fp.index("b"), rt.fn.index("b")]] = 0.5
    return r


def test_the_erm_of_the_rates_reads_x_without_a_copy_and_equals_the_dense_erm():
    ds = pf.SparseLinear(3, norm=pf.norms.l1(3), radius=3.0, intercept_bound=2.0,
                         feature_bound=2.0, l2=0.01)
    rt = _surrogate_rates(ds=ds)
    erm = reduction.erm_from_rates(rt, _r(rt), "public")
    assert isinstance(erm.U, ClippedRows) and erm.U.X is rt.data.X     # X itself, not a copy
    dense = dataclasses.replace(erm, U=np.asarray(erm.U), meta=dict(erm.meta))
    X, R = rt.data.X, rt.feature_bound              # the rows clipped to the public bound
    clipped = X * np.minimum(1.0, R / np.maximum(np.linalg.norm(X, axis=1), 1e-300))[:, None]
    np.testing.assert_allclose(dense.U[:, :-1], clipped, rtol=1e-15, atol=0)
    np.testing.assert_array_equal(dense.U[:, -1], 1.0)
    th = np.random.default_rng(3).normal(size=erm.P) * 0.3
    for a, b in zip(erm.value_and_grad(th, ridge=0.1), dense.value_and_grad(th, ridge=0.1)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(erm.grad(th), dense.grad(th), rtol=1e-12, atol=1e-14)
    assert erm.smoothness() == pytest.approx(dense.smoothness(), rel=1e-12)
    assert (erm.n, erm.P) == (dense.n, dense.P)
    got, want = solver.solve(erm), solver.solve(dense)   # Newton on (U·h)ᵀU
    np.testing.assert_allclose(got.theta, want.theta, rtol=1e-7, atol=1e-9)


def test_a_private_erm_draws_the_same_release_on_the_view(monkeypatch):
    # objective perturbation through the schedule, with the same seed: the view and the dense
    # matrix give the same θ (the noise is the same draw; only float summation order differs)
    ds = pf.SparseLinear(3, norm=pf.norms.l1(3), radius=3.0, intercept_bound=2.0,
                         feature_bound=2.0, l2=0.01)
    rt = _surrogate_rates(ds=ds)
    r = _r(rt)
    got = direct.private_weighted_erm(rt, r, 2.0, 1e-6, rng=0, accountant=pf.Accountant(delta=1e-6))
    calls = []
    monkeypatch.setattr(privfair.models.designs, "ClippedRows", _dense_factory(calls))
    want = direct.private_weighted_erm(rt, r, 2.0, 1e-6, rng=0, accountant=pf.Accountant(delta=1e-6))
    assert calls                                  # the dense run did build the dense matrix
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)


def test_torch_gradient_reads_x_and_the_clipping_scale():
    pytest.importorskip("torch", reason="device='torch' needs the optional torch extra")
    rt = _surrogate_rates(n=500)
    assert (np.linalg.norm(rt.data.X, axis=1) > rt.feature_bound).any()     # rows are clipped
    rng = np.random.default_rng(4)
    for _ in range(3):
        r, th = rng.normal(size=rt.K), rng.normal(size=4)
        np.testing.assert_allclose(O.erm_gradient_fn(rt, r, device="torch")(th).numpy(),
                                   O.erm_gradient_fn(rt, r)(th), rtol=1e-10, atol=1e-14)


def _ol_data(n=600, seed=5):
    rng = np.random.default_rng(seed)
    a = rng.choice(["a", "b"], n, p=[0.6, 0.4])
    y = rng.binomial(1, np.where(a == "a", 0.5, 0.35))
    X = np.c_[1.5 * y + rng.normal(size=n) + 0.8 * (a == "a"), y + rng.normal(size=n)]
    return pf.Dataset(X, y, sensitive=a, group_names=["a", "b"])


def test_oracle_learner_row_norm_bound_is_the_dense_one(monkeypatch):
    data = _ol_data(n=3001)
    monkeypatch.setattr(pf.data.passes, "chunk_rows_for", lambda *a, **k: 256)
    assert OL.max_row_l1(data) == float(np.abs(data.X).sum(axis=1).max() + 1.0)


def test_least_squares_oracle_equals_the_dense_gram(monkeypatch):
    """The regression oracle's sums are passes over the rows' chunks (#19: hat_gram, hat_tdot_cells):
    with 64-row chunks they give the decisions of the dense x̂ = (x, 1) products (a stand-in
    that builds the dense matrix and sums it at once: the pre-#19 computation)."""
    data = _ol_data()
    r = pf.rates(pf.LinearClassifier(2, radius=2.0), data, group_mass_bound=0.1)
    gap = pf.maximum(pf.abs(r.fpr["a"] - r.fpr["b"]), pf.abs(r.tpr["a"] - r.tpr["b"]))
    prob = pf.Problem(pf.minimize(r.error()), [gap <= 0.05])
    runs, calls = {}, []
    for how in ("chunks", "dense"):
        if how == "chunks":
            monkeypatch.setattr(pf.data.passes, "chunk_rows_for", lambda *a, **k: 64)
        else:
            def dense_gram(chunk):
                calls.append(len(chunk))
                U = np.hstack([chunk.X, np.ones((len(chunk), 1))])
                return U.T @ U

            def dense_tdot(chunk, table):
                # the pre-#19 product: the n-vector of row coefficients, by the rates' cells
                v = np.asarray(table, dtype=float).ravel()[r.row_cell]
                U = np.hstack([chunk.X, np.ones((len(chunk), 1))])
                return U.T @ v[chunk.start:chunk.start + len(chunk)]
            monkeypatch.setattr(pf.data.passes, "chunk_rows_for", lambda *a, **k: 10 ** 9)
            monkeypatch.setattr(OL, "hat_gram", dense_gram)
            monkeypatch.setattr(OL, "hat_tdot_cells", dense_tdot)
        runs[how] = [prob.solve(pf.DP(math.inf, protect="sensitive"), backend="oracle_learner", T=20, B=3.0,
                                holdout=0),
                     prob.solve(pf.DP(5.0, 1e-6, protect="sensitive"), backend="oracle_learner", seed=0, T=5, B=3.0,
                                holdout=0)]
    assert calls == [data.n, data.n]          # the dense run: one chunk of every row, per solve
    runs["view"] = runs["chunks"]
    for got, want in zip(runs["view"], runs["dense"]):
        assert len(got.decisions) == len(want.decisions)
        np.testing.assert_allclose(np.asarray(got.decisions), np.asarray(want.decisions),
                                   rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(got.weights, want.weights, rtol=1e-9, atol=1e-12)


def test_weighted_gram_equals_the_general_product_for_any_weights():
    # w ≥ 0 goes through (Z√w)ᵀ(Z√w) (BLAS syrk), any other w through Zᵀ(Z·w): both ZᵀWZ
    from privfair.data import passes

    rng = np.random.default_rng(3)
    Z = rng.normal(size=(500, 7))
    for w in (rng.random(500), np.zeros(500), rng.normal(size=500), np.zeros(0)):
        Zw = Z[: w.size]
        want = Zw.T @ (Zw * w[:, None])
        got = passes.weighted_gram(Zw, w)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        if w.size and w.min() >= 0:         # syrk fills one triangle and mirrors it
            np.testing.assert_array_equal(got, got.T)

"""The ``cells`` backend as passes over the rows (#19): the proxy's design u_i is built one chunk
at a time (never the n×dim matrix U), and every number equals the previous dense computation
(the n×dim hstack of the clipped blocks) up to float summation order."""

import numpy as np
import pytest

import privfair as pf
from privfair.data import passes
from privfair.backends.cells.cells import extreme_design_rows, proxy_design
from privfair.models.cells import ProxyFeatures, sigmoid
from privfair.statistics.scores import fit_score, logistic_from_statistic

# the solves here fit on all the rows (holdout=0) to compare with the dense computation on them
pytestmark = pytest.mark.filterwarnings("ignore::privfair.errors.UncheckedResultWarning")


# -- the pre-#19 dense computation, kept here as the reference ------------------------------
def dense_features(f, X):
    cols = [np.ones((X.shape[0], 1))]
    for b in f.blocks:
        Z = X[:, list(b)]
        norm = np.linalg.norm(Z, axis=1, keepdims=True)
        cols.append(Z * np.minimum(1.0, f.clip / np.maximum(norm, 1e-300)))
    return np.hstack(cols)


def dense_design(f, X, y, inter):
    Z = dense_features(f, X)
    y = np.asarray(y, dtype=float)[:, None]
    return np.hstack([Z, y * Z]) if inter else np.hstack([Z, y])


def dense_proxy(rule, X, s):
    n = X.shape[0]
    p1 = sigmoid(dense_design(rule.features, X, np.ones(n), rule.interactions) @ rule.proxy_coef)
    p0 = sigmoid(dense_design(rule.features, X, np.zeros(n), rule.interactions) @ rule.proxy_coef)
    return s * p1 + (1.0 - s) * p0


def rows(n=3000, seed=0):
    """Numeric columns (one block of 7 ≥ the 8-way unrolling, one of 2), 0/1 columns, a
    column outside every block; a group correlated with them."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    X = np.hstack([rng.normal(size=(n, 9)) * 2 + a[:, None], rng.integers(0, 2, (n, 6)),
                   rng.normal(size=(n, 1))])
    y = (X[:, 0] + rng.logistic(size=n) > 0.5).astype(int)
    return X, y, a


FEATURES = [lambda X: pf.ProxyCells(clip=1.5).features_for(X),
            lambda X: ProxyFeatures(((0, 1, 2, 3, 4, 5, 6), (8, 7)) + tuple((j,) for j in
                                                                         range(9, 15)), 2.0, 16),
            # blocks in X's column order (no gather); a one-column block beyond clip (col 15)
            lambda X: ProxyFeatures((tuple(range(9)),) + tuple((j,) for j in range(9, 16)),
                                    1.0, 16)]


@pytest.mark.parametrize("make", FEATURES)
@pytest.mark.parametrize("inter", [False, True])
def test_design_is_the_dense_design_bit_for_bit(make, inter, monkeypatch):
    X, y, _ = rows()
    monkeypatch.setattr(passes, "chunk_rows_for", lambda *a, **k: 700)   # 5 chunks
    f = make(X)
    assert np.array_equal(f(X), dense_features(f, X))
    assert np.array_equal(f.design(X, y, inter), dense_design(f, X, y, inter))


@pytest.mark.parametrize("make", FEATURES)
@pytest.mark.parametrize("inter", [False, True])
def test_blockwise_products_equal_the_dense_ones(make, inter, monkeypatch):
    X, y, _ = rows(seed=1)
    monkeypatch.setattr(passes, "chunk_rows_for", lambda *a, **k: 700)
    f = make(X)
    U = dense_design(f, X, y, inter)
    theta = np.random.default_rng(2).normal(size=U.shape[1])
    np.testing.assert_allclose(f.design_dot(X, y, theta, inter), U @ theta, rtol=1e-13,
                               atol=1e-13)
    W = np.random.default_rng(3).normal(size=(f.dim, 3))
    np.testing.assert_allclose(f.dot(X, W), dense_features(f, X) @ W, rtol=1e-13, atol=1e-13)
    C = pf.ProxyCells(4, 3)
    score_coef = np.random.default_rng(4).normal(size=X.shape[1] + 1) * 0.3
    rule = C.rule(score_coef, theta, f, inter, [], [], np.zeros(C.n_cells))
    s = rule.score(X)
    np.testing.assert_allclose(rule.group_given_label(X, y), sigmoid(U @ theta), rtol=1e-13,
                               atol=1e-15)
    np.testing.assert_allclose(rule.proxy(X, s), dense_proxy(rule, X, s), rtol=1e-13,
                               atol=1e-15)
    with pytest.raises(pf.errors.InvalidInputError, match="coef"):
        f.design_dot(X, y, theta[:-1], inter)


@pytest.mark.parametrize("inter", [False, True])
def test_proxy_statistic_and_fit_through_passes_equal_the_dense_ones(inter):
    X, y, a = rows(seed=5)
    data = pf.Dataset(X, y, a, group_names=[0, 1])
    f = pf.ProxyCells().features_for(X)
    U = dense_design(f, X, y, inter)
    src, design = data.rows(chunk_rows=640), proxy_design(f, inter)
    T = src.map_sum(passes.weighted_sum, design, ("group", 0))
    np.testing.assert_allclose(T, U.T @ (a == 0).astype(float), rtol=1e-12, atol=1e-10)
    noisy = T + np.random.default_rng(6).normal(size=T.size) * 20     # a noisy release
    np.testing.assert_allclose(logistic_from_statistic(src, noisy, 1.0, design=design),
                               logistic_from_statistic(U, noisy, 1.0), rtol=1e-9, atol=1e-11)


def sensitivity(U, norm):
    """max_i ‖u_i‖ as the backend's M1 event computes it (the ℓ2 norm through einsum)."""
    if norm == "l2":
        return float(np.sqrt(np.max(np.einsum("ij,ij->i", U, U))))
    return float(np.max(np.abs(U).sum(axis=1)))


@pytest.mark.parametrize("inter", [False, True])
def test_extreme_rows_give_the_whole_designs_sensitivity(inter, monkeypatch):
    X, y, a = rows(seed=7)
    X[1234, :9] *= 0.01          # no clipping there: the ℓ1 and ℓ2 maxima differ in the row
    data = pf.Dataset(X, y, a, group_names=[0, 1])
    monkeypatch.setattr(passes, "chunk_rows_for", lambda *a, **k: 500)
    for f in (pf.ProxyCells(clip=1.5).features_for(X), pf.ProxyCells(clip=50.0).features_for(X)):
        U = dense_design(f, X, y, inter)
        ext = extreme_design_rows(data, f, inter)
        assert ext.shape == (2, U.shape[1])
        assert all((U == row).all(axis=1).any() for row in ext)       # rows of U, bit for bit
        for norm in ("l2", "l1"):
            # the row of the maximum; its norm summed as the whole U's (einsum may round a
            # row of a 2-row array and of an n-row array differently, by an ulp)
            assert sensitivity(ext, norm) == pytest.approx(sensitivity(U, norm), rel=1e-15)


def problem(data, eo=False):
    r = pf.rates(pf.ProxyCells(6, 3), data)
    if eo:
        gap = pf.maximum(pf.abs(r.fpr[0] - r.fpr[1]), pf.abs(r.tpr[0] - r.tpr[1]))
        return pf.Problem(pf.minimize(r.error()), [gap <= 0.05])
    return pf.Problem(pf.minimize(r.error()), [pf.abs(r.selection[0] - r.selection[1]) <= 0.05])


@pytest.mark.parametrize("eo", [False, True])
def test_solve_equals_the_dense_pipeline(eo):
    # at ε = ∞ (no noise) the rule's proxy and its cells are the dense computation's; in a
    # private solve the certificate's M1 sensitivity is the dense U's, exactly
    X, y, a = rows(n=4000, seed=8)
    data = pf.Dataset(X, y, a, group_names=[0, 1])
    prob = problem(data, eo)
    res = prob.solve(pf.DP(np.inf, protect="sensitive"), backend="cells", seed=0, progress=False,
                     holdout=0)
    rule = res.decision
    f = pf.ProxyCells(6, 3).features_for(X)
    assert rule.features == f
    U = dense_design(f, X, y, rule.interactions)
    ref = logistic_from_statistic(U, U.T @ (a == 0).astype(float), 1.0)
    np.testing.assert_allclose(rule.proxy_coef, ref, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(rule.score_coef, fit_score(X, y), rtol=1e-12, atol=1e-14)
    s = rule.score(X)
    np.testing.assert_allclose(rule.proxy(X), dense_proxy(rule, X, s), rtol=1e-12, atol=1e-15)
    private = prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend="cells", seed=0, progress=False,
                     holdout=0)
    m1 = private.certificate.releases[0]
    assert m1.sensitivity == pytest.approx(sensitivity(
        dense_design(f, X, y, private.decision.interactions), "l2"), rel=1e-15)


def test_a_solve_builds_no_design_larger_than_a_chunk(monkeypatch):
    # every design, clipped block and Hessian operand of a solve is at most one chunk of rows
    # (the 2-row array of the extreme rows at plan time aside): no n×dim U, no hstack of it
    X, y, a = rows(n=6000, seed=9)
    data = pf.Dataset(X, y, a, group_names=[0, 1])
    chunk = 512
    monkeypatch.setattr(passes, "chunk_rows_for", lambda *a, **k: chunk)
    seen = []
    # the backend builds the proxy's rows with passes.ProxyDesign / passes.proxy_clip_into
    # (ProxyFeatures' arithmetic, #19); the model's own methods are watched too
    real_design, real_clip, real_terms = ProxyFeatures.design, ProxyFeatures._clip_into, \
        passes.logistic_terms
    real_pdesign, real_pclip = passes.ProxyDesign.__call__, passes.proxy_clip_into
    real_hstack = np.hstack

    def design(self, X, *a, **k):
        seen.append(("design", np.shape(X)[0]))
        return real_design(self, X, *a, **k)

    def clip_into(self, X, Z):
        seen.append(("clipped", X.shape[0]))
        return real_clip(self, X, Z)

    def pdesign(self, chunk):
        seen.append(("design", len(chunk)))
        return real_pdesign(self, chunk)

    def pclip(features, X, Z, *a):
        seen.append(("clipped", X.shape[0]))
        return real_pclip(features, X, Z, *a)

    def terms(chunk, design, *a):
        M = design.matrix(chunk)          # a matrix, or ProxyBlocks' (X, y, block scales)
        seen.append(("newton", (M[0] if isinstance(M, tuple) else M).shape[0]))
        return real_terms(chunk, design, *a)

    def hstack(arrays, *a, **k):
        out = real_hstack(arrays, *a, **k)
        seen.append(("hstack", out.shape[0]))
        return out

    monkeypatch.setattr(ProxyFeatures, "design", design)
    monkeypatch.setattr(ProxyFeatures, "_clip_into", clip_into)
    monkeypatch.setattr(passes.ProxyDesign, "__call__", pdesign)
    monkeypatch.setattr(passes, "proxy_clip_into", pclip)
    monkeypatch.setattr(passes, "logistic_terms", terms)
    monkeypatch.setattr(np, "hstack", hstack)
    res = problem(data).solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend="cells", seed=0, progress=False,
                     holdout=0)
    assert res.backend == "cells"
    kinds = {k for k, _ in seen}
    assert {"design", "clipped", "newton"} <= kinds
    assert all(rows_ <= chunk for _, rows_ in seen), max(r for _, r in seen)


# -- a maximum over rows as a pass (merged by max), Poisson-sampled passes -------------------
@pytest.mark.parametrize("inter", [False, True])
def test_max_norm_rows_pass_finds_the_extreme_design_rows(inter, monkeypatch):
    # the pass merged by maximum (over 8 chunks) attains U's largest ‖u‖₂ and ‖u‖₁ at rows of
    # U, the same rows extreme_design_rows finds — the form in which it runs on Dask workers
    X, y, a = rows(n=4000, seed=5)
    data = pf.Dataset(X, y, a, group_names=[0, 1])
    f = pf.ProxyCells(clip=1.5).features_for(X)
    U = dense_design(f, X, y, inter)
    m2, m1 = data.rows(chunk_rows=500).map_sum(passes.max_norm_rows, proxy_design(f, inter))
    assert m2.value == pytest.approx(np.max(np.einsum("ij,ij->i", U, U)), rel=1e-14)
    assert m1.value == pytest.approx(np.max(np.abs(U).sum(axis=1)), rel=1e-14)
    assert all((U == row).all(axis=1).any() for row in (m2.item, m1.item))   # rows of U
    # clipped blocks tie many rows up to an ulp, so the rows may differ; their norms may not
    monkeypatch.setattr(passes, "chunk_rows_for", lambda *a, **k: 500)
    ext = extreme_design_rows(data, f, inter)
    for norm, row in (("l2", m2.item), ("l1", m1.item)):
        assert sensitivity(row[None], norm) == pytest.approx(sensitivity(ext, norm), rel=1e-15)


def test_max_merge_keeps_the_first_row_on_ties_and_handles_the_intercept():
    X = np.array([[3.0, 4.0], [0.0, 1.0], [4.0, 3.0], [-5.0, 0.0]])
    # ‖x‖₂ = 5 at rows 0, 2, 3: the first (row 0) wins, as np.argmax picks it, in any chunking
    for k in (1, 2, 4):
        m2, m1 = passes.ArrayRows(X, chunk_rows=k).map_sum(passes.max_norm_rows, passes.PLAIN)
        assert (m2.value, m1.value) == (25.0, 7.0)
        np.testing.assert_array_equal(m2.item, [3.0, 4.0])
        np.testing.assert_array_equal(m1.item, [3.0, 4.0])
    m2, m1 = passes.ArrayRows(X, chunk_rows=3).map_sum(passes.max_norm_rows, passes.INTERCEPT)
    assert (m2.value, m1.value) == (26.0, 8.0)               # z = [1, x]
    np.testing.assert_array_equal(m2.item, [1.0, 3.0, 4.0])
    # a Max leaf inside a tuple merges by maximum, sums beside it still add
    a = (passes.Max(1.0, "x"), np.array([1, 2]))
    b = (passes.Max(2.0, "y"), np.array([10, 20]))
    m, s = passes.merge(a, b)
    assert m.item == "y" and s.tolist() == [11, 22]


def test_poisson_pass_is_a_poisson_sample_from_the_seed():
    X = np.arange(20_000.0).reshape(-1, 1)
    rows_ = passes.ArrayRows(X, chunk_rows=777)
    count = passes.weighted_sum            # with (INTERCEPT, None): Σ [1, x] = [rows, Σ x]
    n_all = rows_.map_sum(passes.weighted_sum, passes.INTERCEPT, None)[0]
    assert rows_.poisson_map_sum(count, 1.0, 0, passes.INTERCEPT, None)[0] == n_all
    assert rows_.poisson_map_sum(count, 0.0, 0, passes.INTERCEPT, None) is None
    # the same seed gives the same sample (a seeded run is reproducible); the rows summed are
    # exactly those poisson_rows names
    seed = passes.poisson_seeds(3, 1)[0]
    idx = passes.poisson_rows(20_000, 0.1, seed)
    got = passes.poisson_pass(rows_, 0.1, seed, count, (passes.INTERCEPT, None))
    assert got[0] == idx.size and got[1] == X[idx, 0].sum()
    # its size is Binomial(n, q): within 5 standard deviations of qn
    assert abs(idx.size - 2000) < 5 * np.sqrt(20_000 * 0.1 * 0.9)
    assert np.all(np.diff(idx) > 0)
    # seeds are distinct draws of the source (one per partition)
    s = passes.poisson_seeds(np.random.default_rng(1), 3)
    assert len(set(s)) == 3 and all(len(v) == 4 for v in s)
    with pytest.raises(pf.errors.InvalidInputError, match="rate"):
        passes.poisson_rows(10, 1.5, seed)


@pytest.mark.parametrize("inter", [False, True])
@pytest.mark.parametrize("groups", [None, [[0, 1], [2], [4, 3]]])
def test_the_backend_proxy_rows_and_scores_are_the_model_methods_numbers(inter, groups):
    # #19: the backend builds u_i (passes.ProxyDesign) and the per-row proxies (per_row_scores)
    # with its own copy of ProxyFeatures' arithmetic, skipping the one-column blocks' search
    # for entries beyond the clip when the default map says there are none: the same bits
    from privfair.backends.cells.cells import per_row_scores, singles_within_clip

    X, y, a = rows(n=3000, seed=4)
    X[:7, 2] = 5.0                   # a one-column block (user groups) with entries beyond clip
    data = pf.Dataset(X, y, a, group_names=[0, 1])
    ds = pf.ProxyCells(feature_groups=groups, clip=1.5)
    f = ds.features_for(data)
    check = not singles_within_clip(ds, f)
    assert check == (groups is not None)
    ref = f.design(X, y, inter)
    for c in (True, check):
        got = np.vstack([passes.ProxyDesign(f, inter, c)(ch)
                         for ch in data.rows(chunk_rows=700).chunks()])
        assert np.array_equal(got, ref)
    rng = np.random.default_rng(1)
    rule = ds.rule(rng.normal(size=X.shape[1] + 1), rng.normal(size=ref.shape[1]), f, inter,
                   [], [], np.zeros(ds.n_cells))
    s, p_xy, p = per_row_scores(data, rule, check)
    assert np.array_equal(s, rule.score(X))
    assert np.array_equal(p_xy, rule.group_given_label(X, y))
    assert np.array_equal(p, rule.proxy(X, s))


@pytest.mark.parametrize("order", [None, [0, 1, 2, 8, 9, 3, 4, 5, 6, 7]])
def test_the_blockwise_proxy_rows_give_the_materialized_sums(order):
    # #19: passes.ProxyBlocks reads u_i = [1, clip(x)[perm], y] without copying a chunk into a
    # design matrix; its value, gradient, float64 Hessian and T are the materialized rows'
    # up to rounding, its float32 Hessian to single precision, and the fits agree on u·θ
    rng = np.random.default_rng(3)
    n = 4000
    X = np.hstack([rng.normal(size=(n, 3)) * 2, (rng.random((n, 5)) < 0.3).astype(float),
                   rng.normal(size=(n, 2))])
    X = X if order is None else X[:, order]
    y = (rng.random(n) < 0.4).astype(int)
    a = (rng.random(n) < 0.3 + 0.3 * y).astype(int)
    data = pf.Dataset(X, y, a, group_names=[0, 1])
    ds = pf.ProxyCells(clip=1.5)
    f = ds.features_for(data)
    from privfair.backends.cells.cells import fit_design, singles_within_clip

    assert singles_within_clip(ds, f)
    blk, mat = fit_design(f, False, False), proxy_design(f, False, False)
    assert isinstance(blk, passes.ProxyBlocks)
    rows_ = data.rows(chunk_rows=700)
    th = rng.normal(size=f.dim + 1) * 0.3
    for hess, tol in ((True, 1e-13), (passes.SINGLE, 1e-6)):
        A = rows_.map_sum(passes.logistic_terms, mat, th, hess)
        B = rows_.map_sum(passes.logistic_terms, blk, th, hess)
        assert B[0] == pytest.approx(A[0], rel=1e-13)
        np.testing.assert_allclose(B[1], A[1], rtol=1e-13, atol=1e-12)
        np.testing.assert_allclose(B[2], A[2], rtol=tol, atol=tol * np.abs(A[2]).max())
    TA = rows_.map_sum(passes.weighted_sum, mat, ("group", 0))
    TB = rows_.map_sum(passes.weighted_sum, blk, ("group", 0))
    np.testing.assert_allclose(TB, TA, rtol=1e-13, atol=1e-12)
    ta = logistic_from_statistic(rows_, TA, design=mat)
    tb = logistic_from_statistic(rows_, TA, design=blk)
    U = dense_design(f, X, y, False)
    np.testing.assert_allclose(U @ tb, U @ ta, rtol=0, atol=1e-6)
    # and the scale factors: a block with rows beyond the clip is scaled, the others are not
    M = blk.matrix(next(rows_.chunks()))
    (cols, s), = M[2]
    assert (s < 1).any() and (s == 1).any()

"""The public score and the proxy's Newton fit as chunked passes (#19): the same numbers as the
dense computation (up to float summation order), whatever the chunking, and no n×d copy."""

import numpy as np
import pytest

import privfair as pf
from privfair.data import passes
from privfair.errors import InvalidInputError
from privfair.statistics.scores import fit_score, logistic_from_statistic


def _dense_newton(Z, T, ridge=1.0, iters=50, tol=1e-10):
    """The pre-#19 implementation, kept as the reference: Z dense, a weighted copy per step."""
    theta = np.zeros(Z.shape[1])

    def objective(t):
        return float(np.sum(np.logaddexp(0.0, Z @ t)) - t @ T + 0.5 * ridge * t @ t)

    f = objective(theta)
    for _ in range(iters):
        p = 0.5 * (1.0 + np.tanh(0.5 * (Z @ theta)))
        g = Z.T @ p - T + ridge * theta
        H = (Z * (p * (1.0 - p))[:, None]).T @ Z + ridge * np.eye(Z.shape[1])
        step = np.linalg.solve(H, g)
        dec = float(g @ step)
        if dec / 2.0 < tol:
            break
        t = 1.0
        while True:
            f_new = objective(theta - t * step)
            if f_new <= f - 0.25 * t * dec or t < 1e-10:
                break
            t *= 0.5
        theta, f = theta - t * step, f_new
    return theta


def _data(n=3000, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] - 0.5 * X[:, 1] + rng.logistic(size=n) > 0).astype(int)
    return X, y


@pytest.mark.parametrize("chunk_rows", [None, 1, 7, 1000, 10_000])
def test_fit_score_equals_the_dense_fit(chunk_rows):
    X, y = _data()
    Z = np.hstack([np.ones((X.shape[0], 1)), X])
    ref = _dense_newton(Z, Z.T @ y.astype(float))
    got = fit_score(X, y, chunk_rows=chunk_rows)
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)


def test_fit_score_of_a_dataset_reads_its_rows():
    X, y = _data(n=500, seed=1)
    data = pf.Dataset(X, y, sensitive=np.arange(500) % 2)
    np.testing.assert_allclose(fit_score(data), fit_score(X, y), rtol=1e-12, atol=1e-14)
    s = pf.scores.public_score(data)
    assert np.mean((s(X) > 0) == y) > max(y.mean(), 1 - y.mean()) + 0.1   # beats a constant


def test_a_noisy_statistic_outside_the_attainable_set_still_converges():
    # a noisy T need not be Σ t_i z_i of any labels: the ridge keeps the fit well posed
    X, y = _data(n=400, d=3, seed=2)
    Z = np.hstack([np.ones((400, 1)), X])
    T = Z.T @ y + np.array([500.0, -300.0, 80.0, 0.0])
    ref = _dense_newton(Z, T)
    np.testing.assert_allclose(logistic_from_statistic(Z, T, chunk_rows=33), ref,
                               rtol=1e-9, atol=1e-11)
    # the intercept design on X gives the same fit as the explicit [1, X]
    np.testing.assert_allclose(logistic_from_statistic(X, T, design=passes.INTERCEPT), ref,
                               rtol=1e-9, atol=1e-11)


def test_a_halved_step_is_the_dense_fits_halved_step():
    # large statistics make the first full Newton step overshoot: the line search halves it,
    # and the chunked fit (value-only probes, then a fresh Hessian) follows the same iterates
    rng = np.random.default_rng(3)
    Z = np.hstack([np.ones((200, 1)), 4.0 * rng.normal(size=(200, 2))])
    T = np.array([199.0, 300.0, -250.0])
    ref = _dense_newton(Z, T, ridge=1e-3)
    np.testing.assert_allclose(logistic_from_statistic(Z, T, ridge=1e-3, chunk_rows=16), ref,
                               rtol=1e-8, atol=1e-10)


def test_the_statistic_must_match_the_design():
    X, _ = _data(n=50, d=3)
    with pytest.raises(InvalidInputError, match="T"):
        logistic_from_statistic(X, np.zeros(3), design=passes.INTERCEPT)


def test_fit_score_copies_no_full_design(monkeypatch):
    # no array of n rows and d+1 columns (the old Z = [1, X]) and no n×d weighted copy:
    # every temporary the fit allocates is at most one chunk
    X, y = _data(n=20_000, d=5)
    seen = []
    real_hstack = np.hstack

    def spy(arrays, *a, **k):
        out = real_hstack(arrays, *a, **k)
        seen.append(out.shape)
        return out

    monkeypatch.setattr(np, "hstack", spy)
    real_mul = type(passes.INTERCEPT).gram

    def gram(self, Z, w, float32=False):
        seen.append(Z.shape)
        return real_mul(self, Z, w, float32)

    monkeypatch.setattr(type(passes.INTERCEPT), "gram", gram)
    fit_score(X, y, chunk_rows=4096)
    assert all(shape[0] <= 4096 for shape in seen), seen


def test_merge_adds_partials_leaf_by_leaf():
    a = (1.0, np.array([1, 2]), None, {"k": 2})
    b = (2.0, np.array([3, 4]), np.eye(2), {"k": 3, "j": 1})
    out = passes.merge(a, b)
    assert out[0] == 3.0 and out[1].tolist() == [4, 6] and out[2].tolist() == [[1, 0], [0, 1]]
    assert out[3] == {"k": 5, "j": 1}
    assert passes.merge(None, a) is a


def test_docs_scale_in_memory_examples_run():
    # docs/scale.md's in-memory blocks run as written (the Dask blocks need a cluster)
    import os
    import re

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "docs", "scale.md"), encoding="utf-8") as fh:
        page = fh.read()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.S)[:2]
    assert len(blocks) == 2 and "fit_score" in blocks[0] and "map_sum" in blocks[1]
    ns = {}
    for code in blocks:
        exec(compile(code, "docs/scale.md", "exec"), ns)
    assert ns["counts"].sum() == ns["data"].n == 100_000
    np.testing.assert_allclose(ns["Xty"][0], ns["y"].sum())


def test_the_fit_stops_at_working_precision_instead_of_halving_forever(monkeypatch):
    """A tolerance below what f can resolve (at 8·10⁷ rows f ≈ 5·10⁷, rounding ~10⁻⁸ ≫ the
    default 10⁻¹⁰; here tol = 10⁻³⁰⁰ on 400 rows plays that part) must not send the line search
    halving t to 10⁻¹⁰ at every step — each halving is a pass over the rows (387 of them on one
    Dask fit, #19).  The fit stops once λ²/2 < 16·eps·|f| and returns the same θ."""
    X, y = _data(n=400, d=3, seed=4)
    Z = np.hstack([np.ones((400, 1)), X])
    T = Z.T @ y
    calls = {"value": 0}
    real = passes.logistic_value

    def counting(*args, **kw):
        calls["value"] += 1
        return real(*args, **kw)

    monkeypatch.setattr(passes, "logistic_value", counting)
    theta = logistic_from_statistic(Z, T, tol=1e-300)
    np.testing.assert_allclose(theta, _dense_newton(Z, T), rtol=1e-9, atol=1e-11)
    assert calls["value"] <= 2          # a halving or two at most; the storm was ~35 a step

"""Per-row weights of the GLM ERM (subgroup weights): a declared public bound scales the
sensitivity; weights above it or without it are refused."""

import numpy as np
import pytest

import privfair as pf
from privfair.errors import InvalidInputError


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) / 2
    return X, np.clip(X @ np.array([0.5, -0.2, 0.1]), -1, 1)


def test_weight_bound_scales_the_gradient_sensitivity():
    X, y = _data()
    ds = pf.SparseLinear(3, norm=pf.norms.l1(3), radius=2.0, l2=1e-2, feature_bound=1.0)
    plain = pf.sparse.glm(X, y, ds, loss="squared")
    w = np.where(np.arange(len(y)) % 5 == 0, 3.0, 1.0)
    weighted = pf.sparse.glm(X, y, ds, loss="squared", sample_weight=w, weight_bound=3.0)
    assert weighted.grad_sensitivity == pytest.approx(3.0 * plain.grad_sensitivity)
    np.testing.assert_allclose(weighted.w * len(y), w)


def test_brute_force_gradient_change_within_bound():
    """Replacing any row by any row of a pool (any weight ≤ the bound) moves the mean gradient
    by at most grad_sensitivity."""
    X, y = _data(n=12, seed=1)
    ds = pf.SparseLinear(3, norm=pf.norms.l1(3), radius=2.0, l2=1e-2, feature_bound=1.0)
    w = np.array([1.0, 3.0] * 6)
    erm = pf.sparse.glm(X, y, ds, loss="squared", sample_weight=w, weight_bound=3.0)
    theta = np.array([1.0, -0.5, 0.3, 0.2])
    _, g0 = erm.value_and_grad(theta)
    pool = [(np.array([0.9, 0.0, 0.0]), 1.0), (np.array([-0.6, 0.6, 0.3]), -1.0)]
    worst = 0.0
    for i in range(len(y)):
        for x_new, y_new in pool:
            for w_new in (0.0, 1.0, 3.0):
                X2, y2, w2 = X.copy(), y.copy(), w.copy()
                X2[i], y2[i], w2[i] = x_new, y_new, w_new
                e2 = pf.sparse.glm(X2, y2, ds, loss="squared", sample_weight=w2, weight_bound=3.0)
                worst = max(worst, np.linalg.norm(e2.value_and_grad(theta)[1] - g0))
    assert 0 < worst <= erm.grad_sensitivity


@pytest.mark.parametrize("kwargs, field", [
    ({"sample_weight": np.ones(200)}, "weight_bound"),
    ({"sample_weight": np.full(200, 4.0), "weight_bound": 3.0}, "sample_weight"),
    ({"sample_weight": -np.ones(200), "weight_bound": 3.0}, "sample_weight"),
])
def test_bad_weights_are_refused(kwargs, field):
    X, y = _data()
    ds = pf.SparseLinear(3, norm=pf.norms.l1(3), radius=2.0, l2=1e-2, feature_bound=1.0)
    with pytest.raises(InvalidInputError) as exc:
        pf.sparse.glm(X, y, ds, loss="squared", **kwargs)
    assert exc.value.field == field

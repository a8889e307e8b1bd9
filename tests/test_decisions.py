"""Decision sets: attributes, predictions, vectorised predict_all, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privfair.models.decisions import FiniteSet, LinearClassifier, Thresholds
from privfair.errors import InvalidInputError

RNG = np.random.default_rng(0)
X = RNG.normal(size=(50, 3))


def test_finite_linear_set():
    W = RNG.normal(size=(7, 4))
    C = FiniteSet(W)
    assert (C.size, C.P, C.n_features, C.vc_dimension, len(C)) == (7, 4, 3, 2, 7)
    assert C.is_finite and C.kind == "linear"
    d = np.linalg.norm(W[:, None] - W[None], axis=2).max()
    assert C.diameter == pytest.approx(d)
    P = C.predict_all(X)
    assert P.dtype == np.uint8 and P.shape == (7, 50)
    for i in range(7):
        assert (P[i] == C.predict(i, X)).all() and (P[i] == C.predict(C.decision(i), X)).all()
        assert (P[i] == (X @ W[i, :3] + W[i, 3] > 0)).all()
    chunks = list(C.iter_predictions(X, chunk=3))
    assert [s for s, _ in chunks] == [0, 3, 6] and (np.vstack([b for _, b in chunks]) == P).all()


def test_finite_diameter_upper_bound_for_large_sets():
    W = RNG.normal(size=(5000, 3))
    C = FiniteSet(W)
    exact = np.sqrt(((W[:, None, :2] - W[None, :200, :2]) ** 2).sum(-1)).max()  # a lower bound
    assert C.diameter >= exact


def test_finite_callables():
    fs = [lambda X: (X[:, 0] > 0).astype(int), lambda X: np.full(len(X), 2)]
    C = FiniteSet(fs)
    assert C.P is None and C.diameter is None and C.vc_dimension == 1 and C.size == 2
    P = C.predict_all(X)
    assert P[1].tolist() == [2] * 50 and (P[0] == (X[:, 0] > 0)).all()
    with pytest.raises(InvalidInputError):
        FiniteSet([lambda X: np.zeros(3)]).predict_all(X)         # wrong output length
    with pytest.raises(InvalidInputError):
        FiniteSet([lambda X: np.full(len(X), 0.5)]).predict(0, X)  # not a label code


def test_thresholds():
    T = Thresholds([-1.0, 0.0, 1.0], score=1)
    assert (T.P, T.size, T.vc_dimension, T.diameter) == (1, 3, 1, 2.0)
    P = T.predict_all(X)
    for i, t in enumerate(T.grid):
        assert (P[i] == (X[:, 1] >= t)).all() and T.decision(i) == t
    S = Thresholds([0.0, 0.5], score=lambda X: X.sum(axis=1))
    assert (S.predict(0.5, X) == (X.sum(1) >= 0.5)).all()
    with pytest.raises(InvalidInputError):
        Thresholds([], score=0)
    with pytest.raises(InvalidInputError):
        Thresholds([0.0, np.nan])
    with pytest.raises(InvalidInputError):
        Thresholds([0.0], score="age")
    with pytest.raises(InvalidInputError):
        Thresholds([0.0], score=5).predict_all(X)
    with pytest.raises(InvalidInputError):
        T.decision(3)


def test_linear_classifier():
    C = LinearClassifier(3, radius=2.0)
    assert (C.P, C.diameter, C.size, C.vc_dimension) == (4, 4.0, math.inf, 4)
    assert not C.is_finite
    theta = np.array([1.0, -1.0, 0.5, 0.2])
    assert (C.predict(theta, X) == (X @ theta[:3] + 0.2 > 0)).all()
    p = C.project(theta * 10)
    assert np.linalg.norm(p) == pytest.approx(2.0) and C.contains(p) and not C.contains(theta * 10)
    for bad in (0, -1.0, np.nan, np.inf, True, "1"):
        with pytest.raises(InvalidInputError) as e:
            LinearClassifier(3, radius=bad)
        assert "radius" in str(e.value)
    for bad in (0, -2, 2.5, True):
        with pytest.raises(InvalidInputError) as e:
            LinearClassifier(bad, radius=1.0)
        assert "n_features" in str(e.value)
    with pytest.raises(InvalidInputError):
        C.predict(np.ones(3), X)                                  # (w, b) has length d + 1
    with pytest.raises(InvalidInputError):
        C.predict(theta, X[:, :2])                                # wrong number of features


def test_finite_set_validation():
    for bad in (np.ones(4), np.ones((0, 3)), np.ones((3, 1)), [[1.0, np.nan]], "W", []):
        with pytest.raises(InvalidInputError) as e:
            FiniteSet(bad)
        assert "W" in str(e.value)
    C = FiniteSet(np.ones((2, 4)))
    with pytest.raises(InvalidInputError):
        C.predict_all(X[:, :2])
    with pytest.raises(InvalidInputError):
        C.decision(2)
    assert not C.W.flags.writeable

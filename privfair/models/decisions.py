"""Decision sets C_P: the classifiers a problem optimises over.

Every decision set knows

* ``P``            -- the number of reals that describe one decision (``None`` if unknown);
* ``diameter``     -- an upper bound on the ℓ2 diameter of the set of parameter vectors
                      (``None`` if unknown);
* ``size``         -- the number of decisions (``math.inf`` for infinite sets);
* ``vc_dimension`` -- an upper bound on the VC dimension of the induced classifiers (or None);
* ``predict(decision, X)`` -- the labels one decision assigns, a uint8 vector.

Decisions see the features ``X`` only, never the sensitive attribute: that is what makes a
row's prediction fixed when only its sensitive attribute changes (the "sensitive" neighbouring
relation of :mod:`privfair.statistics.stats`).

Finite sets (:class:`FiniteSet`, :class:`Thresholds`) also give ``decision(i)``, ``len()`` and a
vectorised ``predict_all(X)`` -> ``(m, n)`` uint8 matrix, computed in chunks of candidates.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..errors import InvalidInputError

__all__ = ["DecisionSet", "FiniteSet", "Thresholds", "LinearClassifier", "SoftmaxClassifier",
           "multiclass_hint"]

#: Elements of a float64 work array per chunk in ``predict_all`` (64 MiB): memory stays bounded
#: for millions of candidates or rows.
CHUNK_ELEMENTS = 1 << 23


def as_matrix(X, n_features=None, field="X"):
    """``X`` as a 2-D float64 array, validated (shared by every decision set's ``predict``).

    Raises
    ------
    InvalidInputError
        With ``field`` when ``X`` is not 2-D or has other than ``n_features`` columns.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise InvalidInputError(field, f"shape {X.shape}", "pass a 2-D array (n_rows, n_features)")
    if n_features is not None and X.shape[1] != n_features:
        raise InvalidInputError(field, f"shape {X.shape}",
                                f"this decision set expects {n_features} feature columns")
    return X


class DecisionSet:
    """Base class of decision sets (see the module docstring for the contract)."""

    P: int | None = None
    diameter: float | None = None
    size: float = math.inf
    vc_dimension: int | None = None
    n_features: int | None = None

    @property
    def is_finite(self) -> bool:
        """True for sets that can be enumerated (``predict_all`` exists)."""
        return math.isfinite(self.size)

    def predict(self, decision, X) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


class _Finite(DecisionSet):
    """Shared machinery of enumerable decision sets."""

    def __len__(self) -> int:
        return int(self.size)

    def _check_index(self, i):
        if not isinstance(i, numbers.Integral) or not 0 <= i < self.size:
            raise InvalidInputError("i", i, f"pass an integer index in [0, {len(self)})")
        return int(i)

    def _chunk(self, n_rows: int) -> int:
        return max(1, CHUNK_ELEMENTS // max(1, n_rows))

    def iter_predictions(self, X, chunk=None):
        """Yield ``(start, block)`` with ``block`` the (c, n) uint8 predictions of candidates
        ``start .. start + c - 1``; lets callers reduce over huge sets in bounded memory."""
        X = self._prepare(X)
        step = int(chunk) if chunk else self._chunk(self._n_rows(X))
        for start in range(0, len(self), step):
            yield start, self._predict_block(X, start, min(len(self), start + step))

    def predict_all(self, X) -> np.ndarray:
        """Predictions of every candidate: an ``(m, n)`` uint8 matrix, row i = decision i.

        Examples
        --------
        >>> import numpy as np
        >>> from privfair.models.decisions import Thresholds
        >>> Thresholds([0.5, 1.5], score=0).predict_all(np.array([[0.], [1.], [2.]]))
        array([[0, 1, 1],
               [0, 0, 1]], dtype=uint8)
        """
        return np.concatenate([b for _, b in self.iter_predictions(X)], axis=0)

    def _n_rows(self, X) -> int:
        return int(np.shape(X)[0])


class FiniteSet(_Finite):
    """A finite list of classifiers: linear decisions (rows of ``W``) or callables.

    Parameters
    ----------
    W : array-like of shape (m, d + 1), or a list of callables
        Array: row i is ``(w_i, b_i)``; decision i predicts 1 when ``x·w_i + b_i > 0``.
        Callables: each maps ``X`` (n, d) to labels in ``{0, ..., L-1}`` (n,).

    Attributes
    ----------
    P : int or None -- ``d + 1`` reals per decision for arrays; None for callables.
    diameter : float or None -- the largest ℓ2 distance between two rows of W (an upper bound
        ``2 max‖w_i − w̄‖`` above 4,096 rows); None for callables.
    size : int -- m.
    vc_dimension : int -- ``floor(log2 m)``, an upper bound valid for any m functions.

    Examples
    --------
    >>> import numpy as np
    >>> from privfair.models.decisions import FiniteSet
    >>> C = FiniteSet(np.array([[1.0, 0.0], [-1.0, 0.5]]))
    >>> C.size, C.P, C.vc_dimension
    (2, 2, 1)
    >>> C.predict_all(np.array([[-1.0], [1.0]]))
    array([[0, 1],
           [1, 0]], dtype=uint8)
    """

    def __init__(self, W):
        if isinstance(W, (list, tuple)) and len(W) > 0 and all(callable(f) for f in W):
            self.kind, self.functions, self.W = "callable", list(W), None
            self.P = self.diameter = self.n_features = None
            m = len(self.functions)
        else:
            try:
                W = np.array(W, dtype=np.float64)
            except (TypeError, ValueError):
                raise InvalidInputError("W", type(W).__name__, "pass an (m, d+1) array of linear "
                                        "decisions or a non-empty list of callables") from None
            if W.ndim != 2 or W.shape[0] == 0 or W.shape[1] < 2:
                raise InvalidInputError("W", f"shape {W.shape}",
                                        "pass an (m, d+1) array: one (w, b) per row, d >= 1")
            if not np.isfinite(W).all():
                raise InvalidInputError("W", "non-finite entries", "every weight must be finite")
            W.setflags(write=False)
            self.kind, self.functions, self.W = "linear", None, W
            self.P, self.n_features = W.shape[1], W.shape[1] - 1
            self.diameter = self._diameter(W)
            m = W.shape[0]
        self.size = m
        self.vc_dimension = int(math.floor(math.log2(m)))

    @staticmethod
    def _diameter(W) -> float:
        if W.shape[0] > 4096:  # the exact O(m^2) scan is not worth it: 2·radius about the mean
            return float(2 * np.linalg.norm(W - W.mean(axis=0), axis=1).max())
        sq = (W * W).sum(axis=1)
        d2 = sq[:, None] + sq[None, :] - 2 * W @ W.T
        return float(np.sqrt(max(0.0, d2.max())))

    def decision(self, i):
        """Decision i: a read-only (d+1,) vector ``(w, b)`` or the i-th callable."""
        i = self._check_index(i)
        return self.W[i] if self.kind == "linear" else self.functions[i]

    def _prepare(self, X):
        return as_matrix(X, self.n_features) if self.kind == "linear" else X

    def predict(self, decision, X) -> np.ndarray:
        """Labels (uint8, shape (n,)) that ``decision`` (a row of W, a callable, or an int
        index into this set) assigns to the rows of ``X``."""
        if isinstance(decision, numbers.Integral):
            decision = self.decision(decision)
        if callable(decision):
            return _call(decision, X)
        w = np.asarray(decision, dtype=np.float64)
        X = as_matrix(X, None if w.ndim != 1 else w.shape[0] - 1)
        if w.shape != (X.shape[1] + 1,):
            raise InvalidInputError("decision", f"shape {w.shape}",
                                    f"pass a vector (w, b) of length {X.shape[1] + 1}")
        return (X @ w[:-1] + w[-1] > 0).astype(np.uint8)

    def _predict_block(self, X, start, stop):
        if self.kind == "callable":
            return np.stack([_call(f, X) for f in self.functions[start:stop]])
        Wb = self.W[start:stop]
        return (Wb[:, :-1] @ X.T + Wb[:, -1:] > 0).astype(np.uint8)

    def __repr__(self):
        return f"FiniteSet(size={self.size}, kind={self.kind!r})"


def _call(f, X) -> np.ndarray:
    out = np.asarray(f(X))
    n = int(np.shape(X)[0])
    if out.shape != (n,):
        raise InvalidInputError("decision", f"output shape {out.shape}",
                                f"a callable decision must return one label per row ({n},)")
    if out.dtype.kind == "f":
        if not np.all(out == np.round(out)):
            raise InvalidInputError("decision", "non-integer output",
                                    "return integer label codes 0..L-1")
    elif out.dtype.kind not in "biu":
        raise InvalidInputError("decision", f"output dtype {out.dtype}", "return label codes")
    if out.size and (out.min() < 0 or out.max() > 255):
        raise InvalidInputError("decision", "labels outside 0..255", "return codes 0..L-1")
    return out.astype(np.uint8)


class Thresholds(_Finite):
    """Threshold classifiers ŷ = 1[score(x) ≥ t] for t in a public grid.

    Parameters
    ----------
    grid : array-like of shape (m,)
        The thresholds, finite; decision i is the float ``grid[i]``.
    score : int or callable, default 0
        A feature column index, or a function ``X -> (n,)`` scores (which must not use the
        sensitive attribute, and must not be fitted on the private data).

    Attributes
    ----------
    P = 1, diameter = max(grid) − min(grid), size = m, vc_dimension = 1.

    Examples
    --------
    >>> import numpy as np
    >>> from privfair.models.decisions import Thresholds
    >>> T = Thresholds(np.linspace(0, 1, 5), score=1)
    >>> T.size, T.diameter, T.decision(2)
    (5, 1.0, 0.5)
    >>> T.predict(0.5, np.array([[9., 0.2], [9., 0.7]]))
    array([0, 1], dtype=uint8)
    """

    P, vc_dimension = 1, 1

    def __init__(self, grid, score=0):
        try:
            grid = np.array(grid, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise InvalidInputError("grid", type(grid).__name__, "pass a 1-D array of numbers") from None
        if grid.size == 0 or not np.isfinite(grid).all():
            raise InvalidInputError("grid", grid[:5].tolist(), "pass a non-empty grid of finite thresholds")
        if not (callable(score) or (isinstance(score, numbers.Integral) and score >= 0)):
            raise InvalidInputError("score", score, "pass a feature column index or a callable X -> scores")
        grid.setflags(write=False)
        self.grid, self.score = grid, score
        self.size = int(grid.size)
        self.diameter = float(grid.max() - grid.min())

    def decision(self, i) -> float:
        """Threshold i of the grid."""
        return float(self.grid[self._check_index(i)])

    def scores(self, X) -> np.ndarray:
        """The score of every row, a float64 vector (n,)."""
        if callable(self.score):
            s = np.asarray(self.score(X), dtype=np.float64)
            if s.shape != (int(np.shape(X)[0]),):
                raise InvalidInputError("score", f"output shape {s.shape}", "return one score per row")
            return s
        X = as_matrix(X)
        if self.score >= X.shape[1]:
            raise InvalidInputError("score", self.score, f"X has only {X.shape[1]} columns")
        return X[:, self.score]

    def predict(self, decision, X) -> np.ndarray:
        """Labels 1[score ≥ t] for threshold ``decision`` (a float t)."""
        t = float(decision)
        return (self.scores(X) >= t).astype(np.uint8)

    def _prepare(self, X):
        return self.scores(X)  # scores are computed once, then compared with every threshold

    def _predict_block(self, s, start, stop):
        return (s[None, :] >= self.grid[start:stop, None]).astype(np.uint8)

    def __repr__(self):
        return f"Thresholds(size={self.size}, score={self.score!r})"


def multiclass_hint() -> str:
    """Why a ``LinearClassifier`` problem with L > 2 labels is refused, and what to do — one
    home for the refusal of every backend that trains it (the torch path is named with its
    install where torch is missing: the README's install has no torch)."""
    import importlib.util

    why = ("pf.LinearClassifier is binary; for multi-class labels use "
           "pf.SoftmaxClassifier(d, L) (numpy: lagrangian_sgda) or pf.TorchModel("
           "torch.nn.Linear(d, L), d, L)")
    if importlib.util.find_spec("torch") is None:
        why += (" (TorchModel needs torch, not installed here: pip install torch, or pip install "
                "'privfair[gpu]')")
    return why


class LinearClassifier(DecisionSet):
    """Linear classifiers in an ℓ2 ball: θ = (w, b) ∈ R^{d+1}, ‖θ‖₂ ≤ radius.

    Decision θ predicts 1 when ``x·w + b > 0``.

    Parameters
    ----------
    n_features : int
        d, the number of features (≥ 1).
    radius : float
        Radius of the ℓ2 ball over the whole vector (w, b), > 0 and finite.

    Attributes
    ----------
    P = d + 1, diameter = 2·radius, size = inf, vc_dimension = d + 1.

    Examples
    --------
    >>> import numpy as np
    >>> from privfair.models.decisions import LinearClassifier
    >>> C = LinearClassifier(2, radius=1.0)
    >>> C.P, C.diameter, C.vc_dimension
    (3, 2.0, 3)
    >>> C.predict(np.array([1.0, 0.0, -0.5]), np.array([[1.0, 5.0], [0.0, 5.0]]))
    array([1, 0], dtype=uint8)
    >>> C.project(np.array([3.0, 4.0, 0.0]))
    array([0.6, 0.8, 0. ])
    """

    def __init__(self, n_features: int, radius: float = 1.0):
        if isinstance(n_features, bool) or not isinstance(n_features, numbers.Integral) or n_features < 1:
            raise InvalidInputError("n_features", n_features, "pass a positive integer, e.g. data.n_features")
        if (isinstance(radius, bool) or not isinstance(radius, numbers.Real)
                or not math.isfinite(radius) or radius <= 0):
            raise InvalidInputError("radius", radius, "pass a positive finite radius, e.g. radius=1.0")
        self.n_features, self.radius = int(n_features), float(radius)
        self.P = self.n_features + 1
        self.diameter = 2.0 * self.radius
        self.vc_dimension = self.n_features + 1

    def theta(self, theta) -> np.ndarray:
        """The decision ``(w, b)`` as a validated float64 vector of length ``P``."""
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.P,):
            raise InvalidInputError("decision", f"shape {theta.shape}",
                                    f"pass a vector (w, b) of length n_features + 1 = {self.P}")
        return theta

    def margins(self, theta, X) -> np.ndarray:
        """z = X·w + b for every row."""
        theta = self.theta(theta)
        return as_matrix(X, self.n_features) @ theta[:-1] + theta[-1]

    def predict(self, decision, X) -> np.ndarray:
        """Labels 1[x·w + b > 0] (uint8)."""
        return (self.margins(decision, X) > 0).astype(np.uint8)

    def contains(self, theta, tol: float = 1e-9) -> bool:
        """Whether ‖θ‖₂ ≤ radius (up to a relative tolerance)."""
        return bool(np.linalg.norm(self.theta(theta)) <= self.radius * (1 + tol))

    def project(self, theta) -> np.ndarray:
        """The Euclidean projection of θ onto the ball."""
        theta = self.theta(theta)
        norm = np.linalg.norm(theta)
        return theta if norm <= self.radius else theta * (self.radius / norm)

    def __repr__(self):
        return f"LinearClassifier(n_features={self.n_features}, radius={self.radius})"


class SoftmaxClassifier(DecisionSet):
    """Multi-class linear rules in an ℓ2 ball, in numpy: θ = (W, b) ∈ R^{L×(d+1)}, ‖θ‖₂ ≤ radius.

    Decision θ — a vector of length L·(d + 1), class k's (w_k, b_k) in row-major order —
    predicts argmax_k (x·w_k + b_k) (ties: the smallest code).  ``lagrangian_sgda`` trains it on
    the soft prediction softmax(κ·(W x + b)) (``sharpness`` κ) in numpy, without torch: the
    multi-class counterpart of :class:`LinearClassifier`, whose rules are binary.  Scaling θ
    keeps every prediction, so the released θ is scaled into the ball (the same rule).

    Parameters
    ----------
    n_features : int
        d, the number of features (≥ 1).
    n_classes : int
        L, the number of labels (≥ 2; the data's declared labels, in their order).
    radius : float
        Radius of the ℓ2 ball over the whole θ, > 0 and finite.

    Attributes
    ----------
    P = L·(d + 1), diameter = 2·radius, size = inf.

    Examples
    --------
    >>> import numpy as np
    >>> from privfair.models.decisions import SoftmaxClassifier
    >>> C = SoftmaxClassifier(2, 3)
    >>> C.P
    9
    >>> theta = np.array([1.0, 0.0, 0.0,   0.0, 1.0, 0.0,   0.0, 0.0, 0.5])
    >>> C.predict(theta, np.array([[2.0, 0.0], [0.0, 2.0], [0.0, 0.0]]))
    array([0, 1, 2])
    """

    def __init__(self, n_features: int, n_classes: int, radius: float = 1.0):
        for name, v, low in (("n_features", n_features, 1), ("n_classes", n_classes, 2)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < low:
                raise InvalidInputError(name, v, f"pass an integer ≥ {low}"
                                        + (", e.g. data.n_features" if low == 1 else
                                           ", e.g. data.n_labels"))
        if (isinstance(radius, bool) or not isinstance(radius, numbers.Real)
                or not math.isfinite(radius) or radius <= 0):
            raise InvalidInputError("radius", radius, "pass a positive finite radius, e.g. radius=1.0")
        self.n_features, self.n_classes = int(n_features), int(n_classes)
        self.radius = float(radius)
        self.P = self.n_classes * (self.n_features + 1)
        self.diameter = 2.0 * self.radius

    def theta(self, theta) -> np.ndarray:
        """The decision as a validated (L, d + 1) float64 matrix (class k's (w_k, b_k) in row k)."""
        theta = np.asarray(theta, dtype=np.float64)
        if theta.size != self.P or theta.ndim not in (1, 2):
            raise InvalidInputError("decision", f"shape {theta.shape}",
                                    f"pass a vector of length n_classes·(n_features + 1) = "
                                    f"{self.P}")
        return theta.reshape(self.n_classes, self.n_features + 1)

    def margins(self, theta, X) -> np.ndarray:
        """The logits x·w_k + b_k, shape (n, L)."""
        W = self.theta(theta)
        return as_matrix(X, self.n_features) @ W[:, :-1].T + W[:, -1]

    def predict(self, decision, X) -> np.ndarray:
        """Label codes argmax_k (x·w_k + b_k) (int64)."""
        return np.argmax(self.margins(decision, X), axis=1).astype(np.int64)

    def project(self, theta) -> np.ndarray:
        """The Euclidean projection of θ (as a flat vector) onto the ball."""
        theta = self.theta(theta).ravel()
        norm = np.linalg.norm(theta)
        return theta if norm <= self.radius else theta * (self.radius / norm)

    def __repr__(self):
        return (f"SoftmaxClassifier(n_features={self.n_features}, n_classes={self.n_classes}, "
                f"radius={self.radius})")

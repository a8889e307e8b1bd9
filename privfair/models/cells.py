"""ProxyCells: randomized rules on the cells of a public score × a private proxy of the group.

A :class:`ProxyCells` decision set describes the rules

    x ↦ q[cell(s(x), p(x))],   q ∈ [0, 1]^C,  C = score_bins · proxy_bins,

that accept x with probability q_c.  s(x) is a *public* score (a ridge logistic regression of y on
X, which the "sensitive" relation leaves public) and p(x) a *private* proxy of the probability
that x belongs to the first group (``data.groups[0]``), fitted from one noisy release.  The cells
are the products of quantile bins of s and of p.  A rule never reads the sensitive attribute:
only its proxy, which is part of the fitted rule.

Before a solve the set has no cells: the ``cells`` backend (``privfair.backends.cells.cells``) fits
s, releases the proxy, cuts the bins and chooses q.  A *decision* is the immutable fitted
:class:`CellRule`; ``predict_proba(rule, X)`` is its expected prediction q[cell(x)],
``predict(rule, X)`` thresholds it at 1/2.  ``pf.rates(ProxyCells(...), data).evaluate(rule)``
computes ℓ exactly from the expected predictions (ℓ is linear in each row's mass on ŷ = 1).

The proxy's features
--------------------
``feature_groups`` lists the column blocks the proxy reads (e.g. for Adult: the numeric columns,
and the one-hot blocks of workclass, marital status, occupation, relationship, race and a
US-born flag).  Every block is clipped to ℓ2 row-norm ≤ ``clip`` (a one-hot block has norm ≤ 1
and is unchanged), and the map is u(x) = [1, block_1(x), ..., block_k(x)].  ``None`` (default)
uses every column: the columns whose values are all 0 or 1 are kept as they are, the others form
one block clipped to ``clip``.  The clipping bounds ‖u‖, hence the sensitivity of the release
(see the backend); columns that do not predict the group only add noise dimensions.
"""

from __future__ import annotations

import functools
import math
import numbers
import weakref
from dataclasses import dataclass

import numpy as np

from .decisions import DecisionSet, as_matrix
from ..errors import InvalidInputError

__all__ = ["ProxyCells", "CellRule", "ProxyFeatures", "sigmoid", "quantile_edges", "bin_index"]


def sigmoid(z):
    """The logistic function, computed stably."""
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, dtype=float)))


def quantile_edges(values, bins: int) -> np.ndarray:
    """The ``bins − 1`` inner edges of equal-count bins of ``values`` (ties may merge bins)."""
    v = np.asarray(values, dtype=float)
    inner = np.quantile(v, np.linspace(0.0, 1.0, int(bins) + 1)[1:-1]) if v.size else np.zeros(bins - 1)
    return np.asarray(inner, dtype=float)


def bin_index(values, inner_edges) -> np.ndarray:
    """Bin of every value: b with inner_edges[b−1] ≤ v < inner_edges[b] (0 .. len(edges))."""
    return np.searchsorted(np.asarray(inner_edges), np.asarray(values, dtype=float), side="right")


#: dataset → {(feature_groups, clip): ProxyFeatures}: a dataset's feature map, found once
_FEATURES_OF = weakref.WeakKeyDictionary()


def _weakrefable(obj) -> bool:
    try:
        weakref.ref(obj)
    except TypeError:
        return False
    return True


@functools.lru_cache(maxsize=64)
def _layout_of(blocks):
    """The column layout of :class:`ProxyFeatures` with these blocks (see ``_layout``)."""
    sizes = np.array([len(b) for b in blocks], dtype=np.intp)
    perm = np.array([j for b in blocks for j in b], dtype=np.intp)
    starts = (np.cumsum(sizes) - sizes).astype(np.intp)
    for a in (sizes, perm, starts):
        a.setflags(write=False)
    single = starts[sizes == 1]
    single.setflags(write=False)
    return perm, starts, sizes, single


def _readonly(a):
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class ProxyFeatures:
    """The public feature map u(x) = [1, clip(x_B1), ..., clip(x_Bk)] of the proxy.

    ``blocks`` are tuples of column indices; each block's row vector is scaled down to ℓ2 norm
    ≤ ``clip``, so ‖u(x)‖₂ ≤ ``norm_bound`` = sqrt(1 + k·clip²) for every x (a-priori).
    """

    blocks: tuple
    clip: float
    n_features: int

    @property
    def norm_bound(self) -> float:
        """A-priori bound on ‖u(x)‖₂ over all x: sqrt(1 + k·clip²) for k blocks."""
        return math.sqrt(1.0 + len(self.blocks) * self.clip ** 2)

    @property
    def dim(self) -> int:
        """Length of u(x): 1 + the number of columns kept."""
        return 1 + sum(len(b) for b in self.blocks)

    # -- blockwise evaluation (#19): chunks of rows, no n×dim temporary ------------------------
    def _layout(self):
        """(column order of u(x) after the intercept, each block's first position, block
        sizes, the positions of the one-column blocks)."""
        return _layout_of(self.blocks)

    def _spans(self, n):
        """Row ranges of the chunks (about :data:`privfair.data.passes.CHUNK_BYTES` of X each)."""
        from ..data.passes import chunk_rows_for

        k = chunk_rows_for(max(self.n_features, self.dim))
        return [(s, min(n, s + k)) for s in range(0, n, k)]

    def _clip_into(self, X, Z) -> None:
        """Z[...] = u(x) without its leading 1, for the rows of one chunk X; Z is a (k, dim − 1)
        array or view (e.g. the columns of a design being filled).  Each block is scaled by
        min(1, clip/‖x_B‖) — the same float operations as the dense formula, so the same
        numbers — but only where that scale can differ from 1: a one-column block whose
        entries in the chunk all have |x| ≤ clip has scale exactly 1 (x·1 = x), which is every
        0/1 column when clip ≥ 1, so the usual chunk costs a gather and two column reductions."""
        perm, starts, sizes, single = self._layout()
        if perm.size == X.shape[1] and (perm.size == 0 or perm[-1] == perm.size - 1) \
                and np.all(perm[1:] > perm[:-1]):
            Z[...] = X                          # the blocks keep X's column order: a copy
        else:
            np.take(X, perm, axis=1, out=Z, mode="clip")
        if not Z.shape[0] or not Z.shape[1]:
            return
        big = np.maximum(Z.max(axis=0), -Z.min(axis=0)) > self.clip
        for j in single[big[single]]:           # one-column blocks with an entry beyond clip
            z = Z[:, j]
            z *= np.minimum(1.0, self.clip / np.maximum(np.sqrt(z * z), 1e-300))
        for b in np.flatnonzero(sizes > 1):     # multi-column blocks: the squares summed
            a, e = starts[b], starts[b] + sizes[b]  # column after column, as np.linalg.norm
            blk = Z[:, a:e]                         # sums the columns of X[:, block] (an
            sq = blk[:, 0] * blk[:, 0]              # F-ordered copy): the same numbers
            for j in range(1, e - a):
                sq += blk[:, j] * blk[:, j]
            blk *= np.minimum(1.0, self.clip / np.maximum(np.sqrt(sq), 1e-300))[:, None]

    def _clipped(self, X) -> np.ndarray:
        """u(x) without its leading 1 for the rows of one chunk: a new (k, dim − 1) array."""
        Z = np.empty((X.shape[0], self.dim - 1))
        self._clip_into(X, Z)
        return Z

    def __call__(self, X) -> np.ndarray:
        """The rows u(x) (n, dim): the output is the only n-sized allocation."""
        X = as_matrix(X, self.n_features)
        out = np.empty((X.shape[0], self.dim))
        out[:, 0] = 1.0
        for s, e in self._spans(X.shape[0]):
            self._clip_into(X[s:e], out[s:e, 1:])
        return out

    def design(self, X, y, interactions: bool) -> np.ndarray:
        """Rows u_i of the proxy's logistic model of the group given (x, y): [z, y] or [z, y·z].

        Filled chunk by chunk into the output (no intermediate n×dim matrices); the whole
        matrix is only needed by callers that want it — the ``cells`` backend reads the rows
        through :class:`privfair.data.passes.ProxyDesign`, one chunk at a time."""
        X = as_matrix(X, self.n_features)
        y = np.asarray(y, dtype=float).reshape(-1)
        if y.shape[0] != X.shape[0]:
            raise InvalidInputError("y", f"{y.shape[0]} labels", f"pass one per row ({X.shape[0]})")
        m = self.dim
        out = np.empty((X.shape[0], 2 * m if interactions else m + 1))
        out[:, 0] = 1.0
        for s, e in self._spans(X.shape[0]):
            self._clip_into(X[s:e], out[s:e, 1:m])
        if interactions:
            np.multiply(out[:, :m], y[:, None], out=out[:, m:])
        else:
            out[:, m] = y
        return out

    def dot(self, X, coef) -> np.ndarray:
        """u(x)·coef for every row (coef (dim,) → (n,), or (dim, m) → (n, m)), computed chunk
        by chunk as coef₀ + clip(x)·coef₁: — the n×dim matrix u(X) is never formed."""
        X = as_matrix(X, self.n_features)
        coef = np.asarray(coef, dtype=float)
        if coef.shape[0] != self.dim:
            raise InvalidInputError("coef", f"{coef.shape[0]} entries",
                                    f"pass one per entry of u(x) ({self.dim})")
        out = np.empty((X.shape[0],) + coef.shape[1:])
        for s, e in self._spans(X.shape[0]):
            out[s:e] = self._clipped(X[s:e]) @ coef[1:] + coef[0]
        return out

    def design_dot(self, X, y, coef, interactions: bool) -> np.ndarray:
        """u_i·θ for the design rows u_i = [z, y] or [z, y·z] (:meth:`design`) without forming
        them: z·θ_z + y·θ_y, or z·θ_a + y·(z·θ_b)."""
        coef = np.asarray(coef, dtype=float).reshape(-1)
        y = np.asarray(y, dtype=float).reshape(-1)
        m = self.dim
        if coef.size != (2 * m if interactions else m + 1):
            raise InvalidInputError("coef", f"{coef.size} entries", "pass one per column of "
                                    f"the design ({2 * m if interactions else m + 1})")
        if interactions:
            zt = self.dot(X, coef.reshape(2, m).T)
            return zt[:, 0] + y * zt[:, 1]
        return self.dot(X, coef[:m]) + y * coef[m]


@dataclass(frozen=True, eq=False)
class CellRule:
    """A fitted rule of :class:`ProxyCells` (immutable; arrays are read-only).

    Attributes
    ----------
    score_coef : (d + 1,) -- the public score s(x) = σ(b + x·w), intercept first.
    proxy_coef : (dim,) -- the proxy's logistic model of the first group given (x, y).
    features : ProxyFeatures;  interactions : bool -- design [z, y·z] (True) or [z, y].
    score_edges, proxy_edges : inner bin edges of s and of p.
    q : (C,) -- acceptance probability of every cell, C = len(score_edges+1)·len(proxy_edges+1),
        cell index = score bin · proxy_bins + proxy bin.
    """

    score_coef: np.ndarray
    proxy_coef: np.ndarray
    features: ProxyFeatures
    interactions: bool
    score_edges: np.ndarray
    proxy_edges: np.ndarray
    q: np.ndarray

    @property
    def score_bins(self) -> int:
        return len(self.score_edges) + 1

    @property
    def proxy_bins(self) -> int:
        return len(self.proxy_edges) + 1

    def score(self, X) -> np.ndarray:
        """s(x): the public score of every row."""
        X = as_matrix(X, len(self.score_coef) - 1)
        return sigmoid(self.score_coef[0] + X @ self.score_coef[1:])

    def group_given_label(self, X, y) -> np.ndarray:
        """P(first group | x, y) under the proxy, for given labels ``y`` (rows of training data);
        u_i·θ blockwise (:meth:`ProxyFeatures.design_dot`), without the n×dim design."""
        return sigmoid(self.features.design_dot(X, y, self.proxy_coef, self.interactions))

    def proxy(self, X, s=None) -> np.ndarray:
        """p(x) = s(x)·P(first group | x, y=1) + (1 − s(x))·P(first group | x, y=0) (no label).

        One blockwise pass over X gives z·θ for both labels: with θ = [θ_a, θ_b] (interacted
        design) u·θ is z·θ_a at y = 0 and z·θ_a + z·θ_b at y = 1; with [θ_z, θ_y], z·θ_z and
        z·θ_z + θ_y."""
        s = self.score(X) if s is None else s
        m, theta = self.features.dim, self.proxy_coef
        if self.interactions:
            zt = self.features.dot(X, theta.reshape(2, m).T)
            lin0, lin1 = zt[:, 0], zt[:, 0] + zt[:, 1]
        else:
            lin0 = self.features.dot(X, theta[:m])
            lin1 = lin0 + theta[m]
        return s * sigmoid(lin1) + (1.0 - s) * sigmoid(lin0)

    def cells(self, X) -> np.ndarray:
        """Cell index of every row."""
        s = self.score(X)
        return bin_index(s, self.score_edges) * self.proxy_bins + bin_index(self.proxy(X, s),
                                                                            self.proxy_edges)

    def with_q(self, q) -> "CellRule":
        """The same cells with other acceptance probabilities."""
        q = np.clip(np.asarray(q, dtype=float).reshape(-1), 0.0, 1.0)
        if q.size != self.q.size:
            raise InvalidInputError("q", q.size, f"pass one probability per cell ({self.q.size})")
        return CellRule(self.score_coef, self.proxy_coef, self.features, self.interactions,
                        self.score_edges, self.proxy_edges, _readonly(q))


def _positive_int(value, field, minimum=1):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise InvalidInputError(field, value, f"pass an integer ≥ {minimum}")
    return int(value)


class ProxyCells(DecisionSet):
    """Randomized rules x ↦ q[cell(s(x), p(x))] on score × proxy cells (see the module docstring).

    Parameters
    ----------
    score_bins, proxy_bins : int, default 20 and 8
        Equal-count bins of the public score s and of the private proxy p (C = their product).
    monotone : bool, default True
        Constrain q to be non-decreasing in the score bin (within each proxy bin): a higher
        score is never accepted less often.
    feature_groups : None or sequence of sequences of int
        Column blocks the proxy reads (each clipped to row-norm ≤ ``clip``); None: every column
        (0/1 columns as they are, the others one clipped block).
    clip : float, default 2.0
        Row-norm bound of every block (public; bounds the release's sensitivity).
    ridge : float, default 1.0
        Ridge penalty of the score and proxy logistic regressions.

    Attributes
    ----------
    P = C (the reals q), diameter = √C (q ∈ [0,1]^C), size = inf (mixtures over the 2^C
    deterministic rules), vc_dimension = C (given the fitted cell map).

    Examples
    --------
    >>> import privfair as pf
    >>> C = pf.ProxyCells(score_bins=10, proxy_bins=4)
    >>> C.n_cells, C.P, C.size, C.is_finite
    (40, 40, inf, False)
    """

    size = math.inf
    needs_sensitive = False
    randomized = True

    def __init__(self, score_bins=20, proxy_bins=8, monotone=True, feature_groups=None,
                 clip=2.0, ridge=1.0):
        self.score_bins = _positive_int(score_bins, "score_bins")
        self.proxy_bins = _positive_int(proxy_bins, "proxy_bins")
        self.monotone = bool(monotone)
        if feature_groups is not None:
            try:
                groups = tuple(tuple(int(j) for j in g) for g in feature_groups)
            except (TypeError, ValueError):
                raise InvalidInputError("feature_groups", feature_groups, "pass a list of lists "
                                        "of column indices, e.g. [[0, 3], [5, 6, 7]]") from None
            flat = [j for g in groups for j in g]
            if not groups or any(len(g) == 0 for g in groups) or min(flat) < 0 \
                    or len(set(flat)) != len(flat):
                raise InvalidInputError("feature_groups", feature_groups, "pass non-empty, "
                                        "disjoint groups of non-negative column indices")
            feature_groups = groups
        self.feature_groups = feature_groups
        for name, v in (("clip", clip), ("ridge", ridge)):
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 < v < math.inf:
                raise InvalidInputError(name, v, "pass a positive finite number")
        self.clip, self.ridge = float(clip), float(ridge)
        self.n_cells = self.score_bins * self.proxy_bins
        self.P = self.n_cells
        self.diameter = math.sqrt(self.n_cells)
        self.vc_dimension = self.n_cells

    def features_for(self, X) -> ProxyFeatures:
        """The proxy's feature map for data with the columns of ``X`` (public under the
        "sensitive" relation: the default reads which columns are 0/1).  ``X`` is an array, a
        Dataset or a row source (:mod:`privfair.data.passes`; a Dask dataset's too): the 0/1 columns
        are found by one pass that counts every column's other values."""
        from ..data import passes

        source = hasattr(X, "map_sum") or hasattr(X, "rows")
        # a dataset's rows do not change (its arrays are read-only): its feature map is found
        # once, not once per plan and run (one pass each); bare arrays and row sources are not
        # cached (their arrays may be written to)
        cached = hasattr(X, "rows") and _weakrefable(X)
        key = (self.feature_groups, self.clip)
        if cached and key in _FEATURES_OF.get(X, {}):
            return _FEATURES_OF[X][key]
        rows = passes.rows_of(X) if source else passes.ArrayRows(as_matrix(X))
        out = self._features_of(rows)
        if cached:
            _FEATURES_OF.setdefault(X, {})[key] = out
        return out

    def _features_of(self, rows) -> ProxyFeatures:
        from ..data import passes

        d = rows.n_features
        if self.feature_groups is not None:
            if max(j for g in self.feature_groups for j in g) >= d:
                raise InvalidInputError("feature_groups", self.feature_groups,
                                        f"the data has {d} columns")
            return ProxyFeatures(self.feature_groups, self.clip, d)
        other = rows.map_sum(passes.non_binary_counts)     # chunk by chunk: no n×d temporary
        binary = np.ones(d, dtype=bool) if other is None else np.asarray(other) == 0
        blocks = [tuple(int(j) for j in np.flatnonzero(~binary))] if (~binary).any() else []
        blocks += [(int(j),) for j in np.flatnonzero(binary)]
        return ProxyFeatures(tuple(b for b in blocks if b), self.clip, d)

    def rule(self, score_coef, proxy_coef, features, interactions, score_edges, proxy_edges,
             q) -> CellRule:
        """Assemble a fitted rule (used by the backend)."""
        q = np.asarray(q, dtype=float).reshape(-1)
        if q.size != self.n_cells:
            raise InvalidInputError("q", q.size, f"pass one probability per cell ({self.n_cells})")
        return CellRule(_readonly(score_coef), _readonly(proxy_coef), features, bool(interactions),
                        _readonly(score_edges), _readonly(proxy_edges),
                        _readonly(np.clip(q, 0.0, 1.0)))

    @staticmethod
    def _check_rule(decision) -> CellRule:
        if not isinstance(decision, CellRule):
            raise InvalidInputError("decision", type(decision).__name__,
                                    "pass a fitted CellRule (result.decision of a 'cells' solve)")
        return decision

    def predict_proba(self, decision, X) -> np.ndarray:
        """Expected prediction q[cell(x)] of a fitted rule (never reads the sensitive attribute)."""
        rule = self._check_rule(decision)
        return np.asarray(rule.q)[rule.cells(X)]

    def predict(self, decision, X) -> np.ndarray:
        """Deterministic labels: 1 where the acceptance probability is ≥ 1/2 (uint8)."""
        return (self.predict_proba(decision, X) >= 0.5).astype(np.uint8)

    def __repr__(self):
        return (f"ProxyCells(score_bins={self.score_bins}, proxy_bins={self.proxy_bins}, "
                f"monotone={self.monotone}, feature_groups="
                f"{'None' if self.feature_groups is None else f'<{len(self.feature_groups)} groups>'})")

"""The clipped design [x_i·c_i, 1] of a linear model as a view over X (#19): never a copy.

The row-private ERM backends read the rows u_i = (x̃_i, 1), x̃_i = c_i·x_i the row clipped to
the public bound (c_i = min(1, R/‖x_i‖), :class:`privfair.statistics.stats.Rates` keeps c, not x̃).  They
used to build U = [X·c, 1] as an n×(d+1) array — a full copy of X, twice (the clipped copy and
the hstack).  :class:`ClippedRows` is that matrix as an operator over X and c: the products the
solvers take (U θ, Uᵀv, (U·h)ᵀU) are computed from X directly — the Gram matrix as a chunked
pass (:mod:`privfair.data.passes`) whose temporaries are one chunk — and equal the dense ones up to
float summation order.

:class:`ClippedPasses` is the same U over rows that stay where they are (a Dask dataset's
workers, #19): it holds no per-row array at all — c_i is computed from the row in each chunk
(:func:`privfair.statistics.soft.chunk_clip_scales`' arithmetic) and the row weights come from a
public (group, label) table — and it offers only the sums the ERM solver needs, each one pass
(:func:`glm_terms`): the weighted loss, its gradient and its Hessian at θ.

>>> import numpy as np
>>> X = np.array([[3.0, 4.0], [0.3, 0.4]]); c = np.minimum(1.0, 1.0 / np.linalg.norm(X, axis=1))
>>> U = ClippedRows(X, c)
>>> U.shape, U @ np.array([1.0, 1.0, 0.5])
((2, 3), array([1.9, 1.2]))
>>> np.allclose((U * np.array([[2.0], [1.0]])).T @ U, np.asarray(U).T @ (np.asarray(U) * [[2.0], [1.0]]))
True
"""

from __future__ import annotations

import numpy as np

from ..data import passes
from ..errors import InvalidInputError

__all__ = ["ClippedRows", "ClippedPasses", "glm_terms", "row_blocks", "BLOCK_ROWS"]

#: rows per block of :func:`row_blocks`: 2048 × 101 float64 is 1.6 MB, reused.  Measured (#19,
#: 8·10⁵ of 10⁶ rows × 101 taken by index, a shared 2-core machine): a gather and a
#: matrix-vector product per 2048-row block into one reused buffer 0.09–0.11 s a pass; the
#: passes' default 8 MB chunks, each a fresh array, 0.5–1.3 s (fresh pages, and the product of
#: a chunk that size is threaded by BLAS: the threads wait on a loaded machine)
BLOCK_ROWS = 2048


def row_blocks(rows, block_rows=None):
    """Yield (start, X block) over a row source's rows in order.  A source that gathers by
    index (``gather(i, out=...)``, e.g. :class:`~privfair.data.passes.IndexedRows`) fills one
    reused ``block_rows`` buffer — the block is overwritten by the next one: use it, don't keep
    it; other sources yield their ``chunks()``.  For row-wise products (U θ) and sums (Uᵀv)."""
    if not hasattr(rows, "gather") or getattr(rows, "X", None) is not None:
        for c in rows.chunks():
            yield c.start, c.X
        return
    block_rows = block_rows or BLOCK_ROWS
    n, d = int(rows.n), int(rows.n_features)
    buf = np.empty((min(block_rows, max(n, 1)), d))
    ar = np.arange(n)
    for s in range(0, n, block_rows):
        e = min(n, s + block_rows)
        yield s, rows.gather(ar[s:e], out=buf[:e - s])


def _gram_terms(chunk):
    """Σ w_i u_i u_iᵀ over one chunk, u_i = (c_i x_i, 1), intercept last (a chunk-sized copy)."""
    Z = chunk.X * chunk.extra["c"][:, None]
    w = chunk.extra["w"]
    d = Z.shape[1]
    H = np.empty((d + 1, d + 1))
    H[:d, :d] = passes.weighted_gram(Z, w)
    H[:d, d] = H[d, :d] = Z.T @ w
    H[d, d] = w.sum()
    return H


class ClippedRows:
    """The n×(d+1) matrix U = [x_i·c_i, 1] (times an optional row weight w_i), without a copy
    of X.  Supports what the ERM code takes of U: ``shape``, ``U @ θ`` (θ of d+1 entries, or a
    (d+1, k) matrix), ``U.T @ v`` (v of n entries, or (n, k)), ``U * h[:, None]`` (a weighted
    view) and ``(U * h[:, None]).T @ U`` (the Gram matrix, by a chunked pass), and
    ``np.asarray(U)`` (the dense matrix, for tests and small data only).

    The rows are an in-memory array X, or a row source of :mod:`privfair.data.passes` (e.g. the
    :class:`~privfair.data.passes.IndexedRows` of a dataset taken by index — the held-out split's
    training part, #19), read chunk by chunk: every product then reads one gathered chunk at a
    time and no n×d array is built.  On an array the products are the dense ones (unchanged);
    on a source U θ gives each row's margin from its chunk and Uᵀv sums the chunks' products
    (equal to the array's up to float summation order); the Gram matrix is the same chunked
    pass either way (the same numbers as on the copy ``X[index]``).

    Parameters
    ----------
    X : (n, d) float array, or a row source with ``chunks()``, ``n`` and ``n_features`` -- the
        rows (held, never written).
    scale : (n,) array -- c_i.
    weight : (n,) array or None -- w_i (rows of ``U * w[:, None]``).
    """

    __array_ufunc__ = None      # ndarray ⊙ ClippedRows defers to our reflected operators
    ndim = 2
    dtype = np.dtype(float)

    def __init__(self, X, scale, weight=None, chunk_rows=None):
        if hasattr(X, "chunks") and getattr(X, "X", None) is not None:
            X = X.X                                        # an ArrayRows: its array
        if hasattr(X, "chunks"):
            self.rows, self.X = X, None                    # a row source: read by chunks
            n, d = int(X.n), int(X.n_features)
        else:
            self.rows, self.X = None, np.asarray(X, dtype=float)
            if self.X.ndim != 2:
                raise InvalidInputError("X", f"shape {self.X.shape}", "pass a 2-D array of rows")
            n, d = self.X.shape
        self._n, self._d = n, d
        self.scale = np.asarray(scale, dtype=float).reshape(-1)
        if self.scale.shape != (n,):
            raise InvalidInputError("scale", f"shape {self.scale.shape}",
                                    f"pass one scale per row of X ({n})")
        self.weight = None if weight is None else np.asarray(weight, dtype=float).reshape(n)
        self.chunk_rows = chunk_rows

    @classmethod
    def of(cls, data, scale):
        """U over a :class:`privfair.Dataset`'s rows: its X when it holds one array, else its
        row source (a dataset taken by index: its X is never gathered, #19)."""
        if getattr(data, "is_materialized", True):
            return cls(data.X, scale)
        return cls(data.rows(), scale)

    def _same_rows(self, other) -> bool:
        if self.rows is not None or other.rows is not None:
            return self.rows is other.rows
        return other.X is self.X

    def _chunks(self):
        """(start, X chunk) pairs of the row source, in reused blocks (:func:`row_blocks`)."""
        return row_blocks(self.rows)

    @property
    def shape(self):
        return (self._n, self._d + 1)

    def __len__(self):
        return self._n

    def _row_factor(self):
        return self.scale if self.weight is None else self.scale * self.weight

    def __matmul__(self, theta):
        theta = np.asarray(theta, dtype=float)
        if theta.shape[0] != self.shape[1]:
            raise InvalidInputError("theta", f"shape {theta.shape}",
                                    f"pass {self.shape[1]} entries (d coefficients, intercept last)")
        if self.rows is None:
            z = self.X @ theta[:-1]
        else:           # each row's margin from its gathered chunk (row-wise: no n×d array)
            z = np.empty((self._n,) + theta.shape[1:])
            for s, Xc in self._chunks():
                z[s:s + Xc.shape[0]] = Xc @ theta[:-1]
        z *= self.scale if z.ndim == 1 else self.scale[:, None]
        z += theta[-1]
        if self.weight is not None:
            z *= self.weight if z.ndim == 1 else self.weight[:, None]
        return z

    def __mul__(self, h):
        h = np.asarray(h, dtype=float)
        if h.shape not in ((self.shape[0],), (self.shape[0], 1)):
            raise InvalidInputError("h", f"shape {h.shape}", "multiply by one weight per row "
                                    "(an (n,) or (n, 1) array)")
        h = h.reshape(-1)
        return ClippedRows(self.X if self.rows is None else self.rows, self.scale,
                           h if self.weight is None else self.weight * h, self.chunk_rows)

    __rmul__ = __mul__

    @property
    def T(self):
        return _Transposed(self)

    def __array__(self, dtype=None, copy=None):
        X = self.X if self.rows is None else np.concatenate([Xc.copy() for _, Xc in self._chunks()])
        out = np.hstack([X * self.scale[:, None], np.ones((self.shape[0], 1))])
        if self.weight is not None:
            out *= self.weight[:, None]
        return out if dtype is None else out.astype(dtype)

    def __repr__(self):
        return f"ClippedRows(n={self.shape[0]}, d={self.shape[1] - 1}, " \
               f"weighted={self.weight is not None})"


class _Transposed:
    """Uᵀ of a :class:`ClippedRows` (only for ``Uᵀ @ ...``)."""

    __array_ufunc__ = None

    def __init__(self, U):
        self.U = U

    @property
    def shape(self):
        return self.U.shape[::-1]

    def __matmul__(self, other):
        U = self.U
        if isinstance(other, ClippedRows):
            if not U._same_rows(other) or not (other.scale is U.scale
                                               or np.array_equal(other.scale, U.scale)):
                raise InvalidInputError("other", repr(other), "a Gram matrix of two clipped "
                                        "designs needs the same rows and scales")
            w = np.ones(U.shape[0])
            for f in (U.weight, other.weight):
                if f is not None:
                    w = w * f
            if U.rows is None:
                rows = passes.ArrayRows(U.X, extra={"c": U.scale, "w": w},
                                        chunk_rows=U.chunk_rows)
                return rows.map_sum(_gram_terms)
            total = None        # the same pass over the source's chunks (same boundaries)
            for c in U.rows.chunks():
                e = c.start + len(c)
                total = passes.merge(total, _gram_terms(passes.Chunk(
                    c.X, start=c.start, extra={"c": U.scale[c.start:e], "w": w[c.start:e]})))
            return total
        v = np.asarray(other, dtype=float)
        if v.shape[0] != U.shape[0]:
            raise InvalidInputError("v", f"shape {v.shape}", f"pass one entry per row ({U.shape[0]})")
        f = U._row_factor()
        vs = v * (f if v.ndim == 1 else f[:, None])
        vi = v if U.weight is None else v * (U.weight if v.ndim == 1 else U.weight[:, None])
        if U.rows is None:
            Xtv = U.X.T @ vs
        else:           # Σ over chunks of X_cᵀ v_c (the dense product's sum, in another order)
            Xtv = np.zeros((U._d,) + vs.shape[1:])
            for s, Xc in U._chunks():
                Xtv += Xc.T @ vs[s:s + Xc.shape[0]]
        return np.concatenate([Xtv, vi.sum(axis=0, keepdims=True)], axis=0)


def _clip(X, R):
    """c_i = min(1, R/‖x_i‖₂) of one chunk's rows (the arithmetic of
    :func:`privfair.statistics.soft.clip_scales`, row by row: the same bits)."""
    return np.minimum(1.0, R / np.maximum(np.sqrt(np.einsum("ij,ij->i", X, X)), 1e-300))


def glm_terms(chunk, feature_bound, table, loss, theta, what):
    """One chunk's sums of a weighted GLM ERM over u_i = (c_i x_i, 1), as a pass (#19):
    row i's weight is ``table[g_i, y_i]`` (a public (G, 2) table: the ERM's weights are
    row-local), its label ±1 from its label code (y = 1 → +1), c_i from the row.  ``what``:

    * ``"gram"``: Σ w_i u_i u_iᵀ (the smoothness bound's matrix);
    * ``"grad"``: (None, Σ w_i l'(z_i) u_i, None);
    * ``"value"``: (Σ w_i l(z_i), the gradient, None);
    * ``"newton"``: (the value, the gradient, Σ w_i l''(z_i) u_i u_iᵀ).

    The per-row arithmetic of :class:`privfair.models.erm.ERM` over a :class:`ClippedRows`:
    the same margins and terms, summed chunk by chunk (the same numbers up to float summation
    order)."""
    X = chunk.X
    c = _clip(X, feature_bound)
    w = np.asarray(table, dtype=float)[chunk.group, chunk.y]
    if what == "gram":
        return _gram_terms(passes.Chunk(X, extra={"c": c, "w": w}))
    z = X @ theta[:-1]
    z *= c
    z += theta[-1]
    y = np.where(chunk.y == 1, 1.0, -1.0)
    if what == "grad":
        f, der = None, loss.deriv(z, y)
    else:
        val, der = loss.value_and_deriv(z, y)
        f = float(w @ val)
    v = w * der
    g = np.concatenate([X.T @ (v * c), [v.sum()]])
    H = None
    if what == "newton":
        H = _gram_terms(passes.Chunk(X, extra={"c": c, "w": w * loss.second(z, y)}))
    return f, g, H


class ClippedPasses:
    """U = [x_i·c_i, 1] over a row source whose rows stay where they are (a Dask dataset's
    ``rows()``), with row weights from a public (group, label) table: only ``shape`` and the
    passes of :func:`glm_terms` (sums; nothing per row comes back).  The design of
    ``backends.erm.reduction.PassERM``.

    Parameters
    ----------
    rows : row source (``map_sum``, ``n``, ``n_features``)
    feature_bound : float -- the public R of c_i = min(1, R/‖x_i‖₂).
    """

    ndim = 2

    def __init__(self, rows, feature_bound):
        self.rows, self.feature_bound = rows, float(feature_bound)
        self._n, self._d = int(rows.n), int(rows.n_features)

    @property
    def shape(self):
        return (self._n, self._d + 1)

    def __len__(self):
        return self._n

    def terms(self, table, loss, theta, what):
        """The merged sums of :func:`glm_terms` (one pass); zeros where no row is read."""
        theta = None if theta is None else np.asarray(theta, dtype=float)
        out = self.rows.map_sum(glm_terms, self.feature_bound, np.asarray(table, dtype=float),
                                loss, theta, what)
        P = self._d + 1
        if what == "gram":
            return np.zeros((P, P)) if out is None else out
        f, g, H = (None, None, None) if out is None else out
        if what != "grad" and f is None:
            f = 0.0
        if g is None:
            g = np.zeros(P)
        if what == "newton" and H is None:
            H = np.zeros((P, P))
        return f, g, H

    def __repr__(self):
        return f"ClippedPasses(n={self._n}, d={self._d}, R={self.feature_bound})"

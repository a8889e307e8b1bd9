# Over 500 lines: the pass contract (chunks, exact merges, Poisson samples) and the passes privfair
#   runs, one home for what workers execute.
"""Passes over the rows: a map over chunks with an exact merge.

Everything privfair reads from the private rows is a sum over rows — group-label counts, the
proxy statistic T = Σ aᵢuᵢ, XᵀWX and Xᵀy for the public score, a surrogate's gradient.  A
*pass* computes such a sum as a map over chunks of rows followed by a merge that adds the
partial results: the map sees one chunk (a few MB of rows, views of the data, never a copy of
the whole), the merge is exact up to the order of the float additions.  Because sums over
disjoint partitions merge exactly, the same pass runs

* in memory (:class:`ArrayRows`: contiguous row slices of the arrays a Dataset already holds);
* on a Dask cluster (``privfair.data.dask_data.DaskRows``: the map runs on the workers, one
  partition at a time, and only the partial sums travel back to the client).

Noise, when a sum is released, is added once, after the merge, on the client (the release
plumbing of :mod:`privfair.privacy.release`); a pass never draws.

A pass function has the signature ``fn(chunk, *params) -> partial`` where ``chunk`` is a
:class:`Chunk` and ``params`` are public (coefficients, the schema): they are what travels to
the workers together with the code.  A partial is a number, an array, or a tuple / dict of
them (``None`` entries are skipped); :func:`merge` adds two partials leaf by leaf — except a
:class:`Max` leaf, merged by maximum (a maximum over rows, e.g. the largest design row's norm,
is a pass too: :func:`max_norm_rows`).

A pass may also run over a **Poisson sample** of the rows (``rows.poisson_map_sum(fn, rate,
source, *params)``): each row independently with probability ``rate``, from a 256-bit seed
drawn from the run's secure source — one seed per Dask partition, drawn on the client and
sent with the task, so the partitions' samples are independent and together one Poisson
sample of all the rows.

Designs
-------
Linear models read rows through a *design* z(x): :data:`INTERCEPT` is z = [1, x] — handled
blockwise (Zθ = θ₀ + Xθ₁, Zᵀv = [Σv, Xᵀv], ZᵀWZ = [[Σw, (Xᵀw)ᵀ], [Xᵀw, XᵀWX]]), so X is never
copied to add a column —, :data:`PLAIN` is z = x, and :class:`Mapped` applies a public row map
(e.g. the proxy's clipped features) to one chunk at a time.  :class:`ProxyBlocks` is the proxy's
rows [1, clip(x), y] read blockwise like INTERCEPT (only the clipped blocks' per-row scales are
computed; #19).

Precision: values, gradients and weighted sums (T, Zᵀy) are float64.  A Newton Hessian may be
summed in float32 (``hessian=SINGLE``; :func:`weighted_gram`, ``ProxyBlocks.gram`` with its
borders): it only chooses the direction of a step far from the optimum, which the line search
then checks on the float64 value, and the stopping test reads float64 Hessians only, so the
fit converges to the zero of the float64 gradient by the same test
(:func:`privfair.statistics.scores.logistic_from_statistic`).  No released quantity, noise scale
or sensitivity is computed from a float32 sum.

Examples
--------
>>> import numpy as np
>>> from privfair.data import passes
>>> X = np.arange(12.0).reshape(6, 2); y = np.array([0, 1, 1, 0, 1, 0])
>>> rows = passes.ArrayRows(X, y, chunk_rows=4)            # chunks of 4 and 2 rows
>>> rows.map_sum(passes.weighted_sum, passes.INTERCEPT, "y")   # Σ y_i [1, x_i]
array([ 3., 14., 17.])
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..errors import InvalidInputError

__all__ = ["Chunk", "ArrayRows", "IndexedRows", "rows_of", "merge", "Max", "chunk_rows_for", "INTERCEPT", "PLAIN",
           "Mapped", "ProxyDesign", "ProxyBlocks", "proxy_clip_into", "group_label_counts", "label_counts", "weighted_sum", "logistic_terms",
           "sum_and_logistic_terms", "logistic_terms_shift", "several", "sigmoid", "softplus_sum",
           "max_norm_rows", "non_binary_counts", "Concat", "order_statistics", "linear_quantiles",
           "rule_soft_counts", "poisson_seeds", "poisson_rows", "poisson_pass", "weighted_gram",
           "SINGLE"]

#: target size of one chunk of X: big enough for BLAS to run at full speed, small enough that
#: the chunk-sized temporaries of a pass (a weighted copy of the chunk) stay in cache/RAM noise
CHUNK_BYTES = 8 << 20


def chunk_rows_for(n_features: int, chunk_bytes: int = CHUNK_BYTES) -> int:
    """Rows per chunk so that one chunk of float64 features takes about ``chunk_bytes``."""
    return max(256, int(chunk_bytes) // (8 * max(1, int(n_features) + 1)))


def sigmoid(z):
    """The logistic function, computed stably (the same formula as privfair.models.cells.sigmoid)."""
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, dtype=float)))


def softplus_sum(z, p=None) -> float:
    """Σ log(1 + e^{zᵢ}), from z and p = σ(z) (computed when not given).

    log(1 + e^z) = max(z, 0) − log σ(|z|), and σ(|z|) ∈ [½, 1] is p or 1 − p: one log a row,
    read off the σ a Newton pass computes anyway.  ``np.logaddexp(0, z)`` gives the same
    numbers (to ~1e-16 relative) at an exp and a log1p a row: 1.1 ms per 50,000 rows against
    0.12 ms for z = Zθ itself, three times the rest of a Newton pass (#19, measured).

    Examples
    --------
    >>> import numpy as np
    >>> z = np.array([-800.0, -2.0, 0.0, 3.0, 800.0])
    >>> bool(np.isclose(softplus_sum(z), np.logaddexp(0.0, z).sum(), rtol=1e-15))
    True
    """
    z = np.asarray(z, dtype=float)
    if p is None:
        p = sigmoid(z)
    return float(np.sum(np.maximum(z, 0.0)) - np.sum(np.log(np.where(z > 0, p, 1.0 - p))))


class Chunk:
    """One chunk of rows: ``X`` (k, d) float features, ``y`` (k,) label codes or None,
    ``group`` (k,) group codes or None, ``start`` its first row's offset in its source (its
    partition, on Dask), and ``extra``, a dict of other per-row arrays sliced alongside."""

    __slots__ = ("X", "y", "group", "start", "extra")

    def __init__(self, X, y=None, group=None, start=0, extra=None):
        self.X, self.y, self.group, self.start = X, y, group, int(start)
        self.extra = extra or {}

    def __len__(self):
        return int(self.X.shape[0])


class Max:
    """A partial merged by **maximum**, not by addition: ``value`` (a number) and ``item``
    (what the maximum is attained at, e.g. the row; carried along).  Ties keep the earlier
    partial — chunks merge in row order and Dask partitions in partition order, so the first
    row attaining the maximum wins, as ``np.argmax`` picks it.

    >>> merge(Max(2.0, "a"), Max(3.0, "b")).item, merge(Max(3.0, "a"), Max(3.0, "b")).item
    ('b', 'a')
    """

    __slots__ = ("value", "item")

    def __init__(self, value, item=None):
        self.value, self.item = float(value), item

    def __repr__(self):
        return f"Max({self.value!r}, {self.item!r})"


class Concat:
    """A partial merged by **concatenation**: ``values``, a 1-D array (e.g. the few values of
    one narrow bucket that pin an exact order statistic, :func:`order_statistics`; the order
    of the merged values is not meaningful — the caller sorts them)."""

    __slots__ = ("values",)

    def __init__(self, values):
        self.values = np.asarray(values).reshape(-1)

    def __repr__(self):
        return f"Concat({self.values.size} values)"


def merge(a, b):
    """Merge two partials leaf by leaf: numbers and arrays add, :class:`Max` leaves take the
    larger; tuples/lists and dicts merge entrywise; None is empty."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, Max):
        return a if a.value >= b.value else b
    if isinstance(a, Concat):
        return Concat(np.concatenate([a.values, b.values]))
    if isinstance(a, dict):
        out = dict(a)
        for k, v in b.items():
            out[k] = merge(out.get(k), v)
        return out
    if isinstance(a, (tuple, list)):
        if len(a) != len(b):
            raise ValueError("partials of different lengths cannot merge")
        return type(a)(merge(x, v) for x, v in zip(a, b))
    return a + b


def _chunk_rows(chunk_rows, n_features) -> int:
    """``chunk_rows`` checked, or the default for ``n_features`` columns."""
    if chunk_rows is not None and (isinstance(chunk_rows, bool)
                                   or not isinstance(chunk_rows, numbers.Integral)
                                   or chunk_rows < 1):
        raise InvalidInputError("chunk_rows", chunk_rows, "pass a positive integer")
    return int(chunk_rows) if chunk_rows else chunk_rows_for(n_features)


class ArrayRows:
    """Rows held in memory, read in contiguous chunks (views: nothing is copied).

    Parameters
    ----------
    X : (n, d) array;  y, group : (n,) arrays or None
    extra : dict of (n, ...) arrays, sliced alongside (e.g. a per-row clipping scale)
    chunk_rows : int, optional -- rows per chunk (default: about :data:`CHUNK_BYTES` of X)
    """

    def __init__(self, X, y=None, group=None, *, extra=None, chunk_rows=None):
        self.X = np.asarray(X)
        if self.X.ndim != 2:
            raise InvalidInputError("X", f"shape {self.X.shape}", "pass a 2-D array of rows")
        self.y, self.group, self.extra = y, group, dict(extra or {})
        n = self.X.shape[0]
        for name, a in [("y", y), ("group", group), *self.extra.items()]:
            if a is not None and np.shape(a)[0] != n:
                raise InvalidInputError(name, f"{np.shape(a)[0]} rows", f"pass one per row ({n})")
        self.chunk_rows = _chunk_rows(chunk_rows, self.X.shape[1])

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    def chunks(self):
        """Yield :class:`Chunk` views of consecutive row ranges."""
        k = self.chunk_rows
        for s in range(0, self.n, k):
            e = min(self.n, s + k)
            yield Chunk(self.X[s:e], None if self.y is None else self.y[s:e],
                        None if self.group is None else self.group[s:e], s,
                        {name: a[s:e] for name, a in self.extra.items()})

    def map_sum(self, fn, *params):
        """Σ over chunks of ``fn(chunk, *params)`` (merged with :func:`merge`)."""
        total = None
        for c in self.chunks():
            total = merge(total, fn(c, *params))
        return total

    def gather(self, i, out=None) -> np.ndarray:
        """The feature rows ``i`` (indices into this source): a new (len(i), d) array, or
        ``out`` filled (a C-contiguous float64 (len(i), d) array, reused by the caller: a
        per-step batch gathered without allocating one — above glibc's mmap threshold every
        new batch-sized array is fresh pages from the kernel; #19)."""
        if out is None:
            return self.X[i]
        return _take_into(self.X, i, out)

    def poisson_map_sum(self, fn, rate, source, *params):
        """The pass over a **Poisson sample** of the rows: each row independently with
        probability ``rate``, drawn from a generator seeded by 256 bits of ``source`` (the
        run's :class:`privfair.privacy.randomness.RandomSource`; its secure default is
        ``os.urandom``) — one seed for these rows, as a Dask dataset draws one per partition.
        The sampled rows are gathered one chunk at a time (no copy of X).  The sample is
        secret: it must never be released (amplification by subsampling rests on it)."""
        return poisson_pass(self, rate, poisson_seeds(source, 1)[0], fn, params)


class IndexedRows(ArrayRows):
    """The rows ``X[index]`` of an in-memory X, without copying them: every chunk is gathered
    (``X[index[s:e]]``, one chunk-sized array) when a pass reads it.  The chunks are those of
    an :class:`ArrayRows` over the copy ``X[index]`` (same boundaries, same values), so a pass
    gives the same numbers; the copy of the selected rows is never made (#19: the training part
    of the held-out split).  ``y``, ``group`` and ``extra`` are this source's own (one entry per
    selected row).

    >>> X = np.arange(12.0).reshape(6, 2)
    >>> IndexedRows(X, [5, 0, 2], chunk_rows=2).map_sum(weighted_sum, INTERCEPT, None)
    array([ 3., 14., 17.])
    """

    def __init__(self, X, index, y=None, group=None, *, extra=None, chunk_rows=None):
        base = np.asarray(X)
        if base.ndim != 2:
            raise InvalidInputError("X", f"shape {base.shape}", "pass a 2-D array of rows")
        index = np.asarray(index)
        if index.ndim != 1 or (index.size and index.dtype.kind not in "iu"):
            raise InvalidInputError("index", f"{index.dtype} array of shape {index.shape}",
                                    "pass a 1-D array of row indices")
        if index.size and (index.min() < -base.shape[0] or index.max() >= base.shape[0]):
            raise InvalidInputError("index", "out of range", f"pass indices into {base.shape[0]} rows")
        self.base, self.index = base, index
        self.chunk_rows = _chunk_rows(chunk_rows, base.shape[1])
        n = index.shape[0]
        self.y, self.group, self.extra = y, group, dict(extra or {})
        for name, a in [("y", y), ("group", group), *self.extra.items()]:
            if a is not None and np.shape(a)[0] != n:
                raise InvalidInputError(name, f"{np.shape(a)[0]} rows", f"pass one per row ({n})")
        self.X = None                     # never the whole: read chunks() or gather()

    @property
    def n(self) -> int:
        return int(self.index.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.base.shape[1])

    def chunks(self):
        """Yield :class:`Chunk` s of consecutive selected rows, each gathered (a new array;
        ``np.take`` along axis 0: the same rows as ``base[index]``, ~20 % less CPU on 10⁴-row
        chunks of 101 float64 columns)."""
        k = self.chunk_rows
        for s in range(0, self.n, k):
            e = min(self.n, s + k)
            yield Chunk(np.take(self.base, self.index[s:e], axis=0), None if self.y is None else self.y[s:e],
                        None if self.group is None else self.group[s:e], s,
                        {name: a[s:e] for name, a in self.extra.items()})

    def gather(self, i, out=None) -> np.ndarray:
        if out is None:
            return self.base[self.index[i]]
        return _take_into(self.base, self.index[_checked_rows(i, self.n)], out)


def _checked_rows(i, n) -> np.ndarray:
    """``i`` as an integer array of row indices in [0, n) (what ``np.take``'s "clip" mode,
    which does not check, needs; a negative or too large index is refused as ``X[i]`` would)."""
    i = np.asarray(i)
    if i.size and (i.dtype.kind not in "iu" or i.min() < 0 or i.max() >= n):
        raise InvalidInputError("i", "indices out of range", f"pass row indices in [0, {n})")
    return i


def _take_into(A, i, out) -> np.ndarray:
    """``out[...] = A[i]`` without a temporary: ``np.take`` into a C-contiguous ``out``
    (its default "raise" mode always buffers; the indices are checked here instead).  Rows of
    another dtype than ``out``'s are gathered, then cast into it."""
    i = _checked_rows(i, A.shape[0])
    if A.dtype != out.dtype:
        out[...] = A[i]
    else:
        np.take(A, i, axis=0, out=out, mode="clip")
    return out


def poisson_seeds(source, k: int) -> list:
    """``k`` independent 256-bit seeds (4 words each) from ``source`` (a RandomSource, or
    anything :func:`privfair.privacy.randomness.as_source` takes), one per partition."""
    from ..privacy.randomness import as_source

    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 0:
        raise InvalidInputError("k", k, "pass a number of partitions")
    w = as_source(source).words(4 * int(k)).reshape(int(k), 4)
    return [tuple(int(v) for v in row) for row in w]


def poisson_sample(gen, n, q):
    """A Poisson sample of ``range(n)`` with rate q, as unique indices in increasing order.

    Each row is in it independently with probability q: the gaps between consecutive
    members (from −1) are i.i.d. Geometric(q) on {1, 2, …} (``gen.geometric``), and the
    sample is every partial sum below n.  For every set S = {s_1 < … < s_k},
    P(S) = Π_j q(1 − q)^(s_j − s_(j−1) − 1) · (1 − q)^(n − 1 − s_k) = q^k (1 − q)^(n − k) —
    exactly the Poisson sample's law (the privacy analysis depends on the distribution of the
    *set* only).  Why gaps (#19): the indices come out sorted at no cost, and a step's rows
    are then gathered in memory order (measured at 10⁶ rows: ~0.4 ms of a ~3.5 ms step less;
    before, a uniform subset of a Binomial(n, q) size came out unsorted and sorting it cost
    what the sorted gather saved); and the work is ~q·n draws, not n uniforms (a Dask worker
    sampling its 10⁶-row partition: 3.0 ms a step with one uniform per row, ~0.2 ms by gaps).
    ``gen`` is a numpy Generator (``lagrangian_sgda`` in memory: one over the run's secure
    source; :func:`poisson_rows`: one seeded per partition)."""
    if q >= 1.0:
        return np.arange(n)
    if n <= 0 or q <= 0.0:
        return np.zeros(0, np.int64)
    parts, last = [], -1
    while True:
        rest = (n - 1 - last) * q              # expected members still to come
        gaps = gen.geometric(q, size=int(rest + 6.0 * math.sqrt(rest) + 16))
        idx = last + np.cumsum(gaps)
        if idx[-1] >= n:                       # the sample ends inside this draw
            parts.append(idx[:np.searchsorted(idx, n)])
            break
        parts.append(idx)
        last = int(idx[-1])
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def poisson_rows(n: int, rate, seed) -> np.ndarray:
    """The sorted indices of a Poisson(``rate``) sample of ``range(n)`` drawn from ``seed``
    (4 words): :func:`poisson_sample` on a generator seeded with them (each row in
    independently with probability ``rate``)."""
    if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0 <= rate <= 1:
        raise InvalidInputError("rate", rate, "pass a sampling probability in [0, 1]")
    gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence(list(seed))))
    return np.asarray(poisson_sample(gen, int(n), float(rate)), dtype=np.int64)


def poisson_pass(rows, rate, seed, fn, params):
    """``fn(chunk, *params)`` over the Poisson(``rate``) sample of ``rows`` (an
    :class:`ArrayRows`) drawn from ``seed`` (4 words, :func:`poisson_seeds`): the sampled rows
    are gathered ``chunk_rows`` at a time (a chunk's ``start`` is its first sampled row's
    offset); None if no row is sampled.  What a Dask worker runs on its partition."""
    idx = poisson_rows(rows.n, rate, seed)
    total = None
    for s in range(0, idx.size, rows.chunk_rows):
        i = idx[s:s + rows.chunk_rows]
        c = Chunk(rows.gather(i), None if rows.y is None else rows.y[i],
                  None if rows.group is None else rows.group[i], int(i[0]),
                  {name: a[i] for name, a in rows.extra.items()})
        total = merge(total, fn(c, *params))
    return total


def rows_of(data, chunk_rows=None):
    """The row source of ``data``: its own ``rows()`` (a Dataset, a Dask dataset, a row
    source), or an :class:`ArrayRows` of a bare array."""
    if hasattr(data, "map_sum"):
        return data
    if hasattr(data, "rows"):
        return data.rows(chunk_rows=chunk_rows)
    return ArrayRows(np.asarray(data, dtype=float), chunk_rows=chunk_rows)


def weighted_gram(Z, w, float32: bool = False) -> np.ndarray:
    """ZᵀWZ = Σ_i w_i z_i z_iᵀ of one chunk.  With w ≥ 0 (a Newton Hessian's σ(1 − σ)) it is
    (Z√w)ᵀ(Z√w): numpy hands a product of a matrix with its own transpose to BLAS's symmetric
    rank-k update, which does half the work of a general product (measured 1.5× faster on a
    10⁴ × 102 chunk; the same matrix up to rounding, ~1e-16 relative).  Other weights: the
    general product.  The temporary is one chunk.

    ``float32=True`` (a Newton Hessian, #19): the rank-k update in single precision
    (Z√w cast once; sgemm/ssyrk is ~2.7× faster than the float64 product on a 10⁴ × 101
    chunk), the chunk's result returned as float64 and merged across chunks in float64
    (entries ~3e-7 relative off the float64 product).  Only for a matrix that need not be
    exact: a Newton step's Hessian, whose error changes the path (Newton with an approximate
    Hessian still converges to the zero of the float64 gradient, the stopping test reads
    that gradient), never a released or sensitivity-bearing quantity."""
    w = np.asarray(w, dtype=float)
    if w.size and w.min() >= 0:
        if float32:
            Zs = np.asarray(Z, dtype=np.float32)
            Zs = Zs * np.sqrt(w).astype(np.float32)[:, None] if Zs is Z else \
                np.multiply(Zs, np.sqrt(w).astype(np.float32)[:, None], out=Zs)
            return (Zs.T @ Zs).astype(float)
        Zs = Z * np.sqrt(w)[:, None]
        return Zs.T @ Zs
    return Z.T @ (Z * w[:, None])


# -- designs ------------------------------------------------------------------------------------
class _Intercept:
    """z = [1, x], without copying x."""

    def dim(self, d):
        return d + 1

    def matrix(self, chunk):
        return chunk.X

    def dot(self, Z, theta):
        return Z @ theta[1:] + theta[0]

    def tdot(self, Z, v):
        return np.concatenate([[v.sum()], Z.T @ v])

    def gram(self, Z, w, float32=False):
        Xw = Z.T @ w
        H = np.empty((Z.shape[1] + 1, Z.shape[1] + 1))
        H[0, 0], H[0, 1:], H[1:, 0] = w.sum(), Xw, Xw
        H[1:, 1:] = weighted_gram(Z, w, float32)   # a chunk-sized temporary only
        return H

    def __repr__(self):
        return "INTERCEPT"


class _Plain(_Intercept):
    """z = x."""

    def dim(self, d):
        return d

    def dot(self, Z, theta):
        return Z @ theta

    def tdot(self, Z, v):
        return Z.T @ v

    def gram(self, Z, w, float32=False):
        return weighted_gram(Z, w, float32)

    def __repr__(self):
        return "PLAIN"


INTERCEPT = _Intercept()
PLAIN = _Plain()


class Mapped(_Plain):
    """z = f(chunk): a public row map applied one chunk at a time (``f`` must be picklable to
    run on Dask workers, e.g. a module-level function or a frozen dataclass' method)."""

    def __init__(self, f, dim=None):
        self.f, self._dim = f, dim

    def dim(self, d):
        return self._dim

    def matrix(self, chunk):
        return np.asarray(self.f(chunk), dtype=float)

    def __repr__(self):
        return f"Mapped({self.f!r})"


class ProxyDesign:
    """The proxy's rows u_i = [z(x_i), y_i] or [z, y·z] (:meth:`privfair.models.cells.ProxyFeatures.
    design`) of one chunk: with :class:`Mapped`, the proxy statistic T = Σ aᵢuᵢ and the proxy's
    Newton fit run as passes (on Dask workers too) without the n×dim matrix U.

    ``check_single=False`` (#19) skips, in every chunk, the search for one-column blocks with an
    entry beyond the clip (two column reductions over the chunk, ~0.9 s of a 10⁶-row fit): the
    caller asserts that no such entry exists in these rows — e.g. the default feature map, whose
    one-column blocks are the 0/1 columns, with clip ≥ 1 — so every such block's scale is 1 and
    the rows are the same numbers (see :func:`proxy_clip_into`)."""

    def __init__(self, features, interactions: bool, check_single: bool = True):
        self.features, self.interactions = features, bool(interactions)
        self.check_single = bool(check_single)

    @property
    def dim(self) -> int:
        return self.features.dim * (2 if self.interactions else 1) + (0 if self.interactions
                                                                     else 1)

    def __call__(self, chunk):
        # the rows of ProxyFeatures.design(chunk.X, chunk.y, interactions), filled the same way
        X = np.asarray(chunk.X, dtype=float)
        y = np.asarray(chunk.y, dtype=float).reshape(-1)
        m = self.features.dim
        out = np.empty((X.shape[0], 2 * m if self.interactions else m + 1))
        out[:, 0] = 1.0
        proxy_clip_into(self.features, X, out[:, 1:m], self.check_single)
        if self.interactions:
            np.multiply(out[:, :m], y[:, None], out=out[:, m:])
        else:
            out[:, m] = y
        return out

    def __repr__(self):
        return f"ProxyDesign(dim={self.dim}, interactions={self.interactions})"


class ProxyBlocks:
    """The proxy's rows u_i = [1, clip(x_i)[perm], y_i] (:class:`ProxyDesign` without
    interactions) read **blockwise**, like :data:`INTERCEPT`: the chunk's X is never copied
    into a design matrix (#19: that copy was ~0.5 s of a 10⁶-row ``cells`` fit).  Only the
    multi-column blocks are ever scaled (one factor sᵢ = min(1, clip/‖x_B‖) per row and block,
    computed as :func:`proxy_clip_into` computes it), so with θ_x the coefficients of u's
    feature part in X's column order,

        u·θ = θ₀ + x·θ_x + Σ_B (sᵢ − 1)·(x_B·θ_B) + yθ_y,   Σ vᵢuᵢ = [Σv, Xᵀv (block entries
        Σ vᵢsᵢx_B), yᵀv] in u's order,  Σ wᵢuᵢuᵢᵀ: the Gram of the rows [x with x_B·sᵢ]·√wᵢ
        (:func:`weighted_gram`'s product; float32 when asked) bordered by Xcᵀw, Xcᵀ(wy), Σw,
        Σwy, Σwy² (the borders from the same weighted copy, in the Hessian's precision).

    The same sums as :class:`ProxyDesign`'s up to float rounding (a different order of the
    same products).  Only for a feature map whose blocks use every column once and whose
    one-column blocks have no entry beyond the clip (the caller knows: ``check_single=False``
    of :class:`ProxyDesign`); else use that one."""

    def __init__(self, features):
        perm, starts, sizes, _, _ = _proxy_layout(tuple(features.blocks))
        d = int(features.n_features)
        if perm.size != d or not np.array_equal(np.sort(perm), np.arange(d)):
            raise InvalidInputError("features", "blocks that skip or repeat a column",
                                    "use ProxyDesign for this feature map")
        self.features, self.perm, self.m = features, perm, int(features.dim)
        # a block's columns of X: a slice when they are adjacent (no fancy-index copies)
        self.multi = [_cols(perm[starts[b]:starts[b] + sizes[b]])
                      for b in np.flatnonzero(sizes > 1)]

    def dim(self, d):
        return self.m + 1

    def matrix(self, chunk):
        """(X, y as floats, [(columns of a multi-column block, its scale per row), ...])."""
        X = np.asarray(chunk.X, dtype=float)
        clip, scales = self.features.clip, []
        for cols in self.multi:      # the squares summed column after column (proxy_clip_into)
            idx = range(cols.start, cols.stop) if isinstance(cols, slice) else cols
            sq = X[:, idx[0]] * X[:, idx[0]]
            for j in idx[1:]:
                sq += X[:, j] * X[:, j]
            scales.append((cols, np.minimum(1.0, clip / np.maximum(np.sqrt(sq), 1e-300))))
        return X, np.asarray(chunk.y, dtype=float).reshape(-1), scales

    def _theta_x(self, theta):
        tx = np.empty(self.perm.size)
        tx[self.perm] = theta[1:self.m]
        return tx

    def dot(self, M, theta):
        X, y, scales = M
        tx = self._theta_x(theta)
        z = X @ tx + theta[0]
        for cols, s in scales:
            z += (s - 1.0) * (X[:, cols] @ tx[cols])
        z += y * theta[self.m]
        return z

    def _xc_t(self, X, scales, v):
        """Xcᵀv in X's column order (Xc: the rows with their blocks scaled)."""
        out = X.T @ v
        for cols, s in scales:
            out[cols] = X[:, cols].T @ (v * s)
        return out

    def tdot(self, M, v):
        X, y, scales = M
        out = np.empty(self.m + 1)
        out[0], out[1:self.m], out[self.m] = v.sum(), self._xc_t(X, scales, v)[self.perm], y @ v
        return out

    def gram(self, M, w, float32=False):
        X, y, scales = M
        w = np.asarray(w, dtype=float)
        m, perm = self.m, self.perm
        if w.size and w.min() >= 0:
            # (Xc√w)ᵀ(Xc√w), a symmetric rank-k update (weighted_gram's product: float32 when
            # asked), the blocks' columns scaled by their sᵢ in the weighted copy (a
            # chunk-sized temporary only); the borders Xcᵀw = (Xc√w)ᵀ√w and Xcᵀ(wy) from the
            # same copy (so in the Hessian's precision)
            r = np.sqrt(w)
            if float32:
                Zs = np.asarray(X, dtype=np.float32)
                r = r.astype(np.float32)
                Zs *= r[:, None]
                for cols, s in scales:
                    Zs[:, cols] *= s.astype(np.float32)[:, None]
                Hx = (Zs.T @ Zs).astype(float)
            else:
                Zs = X * r[:, None]
                for cols, s in scales:
                    Zs[:, cols] *= s[:, None]
                Hx = Zs.T @ Zs
            a = (Zs.T @ r).astype(float)[perm]
            b = (Zs.T @ (r * y.astype(r.dtype))).astype(float)[perm]
        else:
            Xc = X.copy()
            for cols, s in scales:
                Xc[:, cols] *= s[:, None]
            Hx = Xc.T @ (Xc * w[:, None])
            a, b = (Xc.T @ w)[perm], (Xc.T @ (w * y))[perm]
        wy = w * y
        H = np.empty((m + 1, m + 1))
        H[1:m, 1:m] = Hx[np.ix_(perm, perm)]
        H[0, 0], H[0, 1:m], H[1:m, 0] = w.sum(), a, a
        H[m, m], H[m, 1:m], H[1:m, m] = float(wy @ y), b, b
        H[0, m] = H[m, 0] = wy.sum()
        return H

    def __repr__(self):
        return f"ProxyBlocks(dim={self.m + 1})"


def _cols(idx):
    """Column indices as a slice when they are adjacent and increasing, else the array."""
    idx = np.asarray(idx, dtype=np.intp)
    if idx.size and np.all(np.diff(idx) == 1):
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx


def _proxy_layout(blocks):
    """(column order of u(x) after the intercept, each block's first position, block sizes,
    the positions of the one-column blocks) — ``ProxyFeatures``' layout of ``blocks``."""
    out = _LAYOUTS.get(blocks)
    if out is None:
        sizes = np.array([len(b) for b in blocks], dtype=np.intp)
        perm = np.array([j for b in blocks for j in b], dtype=np.intp)
        starts = (np.cumsum(sizes) - sizes).astype(np.intp)
        ident = bool(perm.size == 0 or (perm[0] == 0 and np.all(np.diff(perm) == 1)))
        out = _LAYOUTS[blocks] = (perm, starts, sizes, starts[sizes == 1], ident)
    return out


_LAYOUTS = {}


def proxy_clip_into(features, X, Z, check_single: bool = True) -> None:
    """Z[...] = u(x) without its leading 1 for the rows of one chunk X (Z: a (k, dim − 1) array
    or view) — the float operations of :meth:`privfair.models.cells.ProxyFeatures._clip_into`,
    in the same order, so the same numbers: each block scaled by min(1, clip/‖x_B‖), the squares
    of a multi-column block summed column after column.  A one-column block is scaled only where
    it has an entry beyond the clip (elsewhere its scale is exactly 1); ``check_single=False``
    skips that search (two column reductions over the chunk) when the caller knows there is no
    such entry in these rows (e.g. 0/1 columns and clip ≥ 1): the same numbers, since the
    search would find none."""
    perm, starts, sizes, single, ident = _proxy_layout(tuple(features.blocks))
    clip = features.clip
    if ident and perm.size == X.shape[1]:
        Z[...] = X                              # the blocks keep X's column order: a copy
    else:
        np.take(X, perm, axis=1, out=Z, mode="clip")
    if not Z.shape[0] or not Z.shape[1]:
        return
    if check_single and single.size:
        big = np.maximum(Z.max(axis=0), -Z.min(axis=0)) > clip
        for j in single[big[single]]:           # one-column blocks with an entry beyond clip
            z = Z[:, j]
            z *= np.minimum(1.0, clip / np.maximum(np.sqrt(z * z), 1e-300))
    for b in np.flatnonzero(sizes > 1):         # multi-column blocks: the squares summed
        a, e = starts[b], starts[b] + sizes[b]
        blk = Z[:, a:e]
        sq = blk[:, 0] * blk[:, 0]
        for j in range(1, e - a):
            sq += blk[:, j] * blk[:, j]
        blk *= np.minimum(1.0, clip / np.maximum(np.sqrt(sq), 1e-300))[:, None]


def _weights(chunk, target):
    """The per-row weights a pass sums against: ``"y"`` (the label codes as 0/1 floats),
    ``("group", k)`` (1 for rows of group k), ``None`` (all ones), or an extra's name."""
    if target is None:
        return np.ones(len(chunk))
    if target == "y":
        return chunk.y.astype(float)
    if isinstance(target, tuple) and target[0] == "group":
        return (chunk.group == target[1]).astype(float)
    return np.asarray(chunk.extra[target], dtype=float)


# -- standard passes (module-level: they travel to Dask workers by reference) -----------------
def group_label_counts(chunk, n_groups: int, n_labels: int) -> np.ndarray:
    """Rows per (group, label), flattened group-major: (G·L,) int64 — exact in any order."""
    return np.bincount(chunk.group * n_labels + chunk.y, minlength=n_groups * n_labels)


def label_counts(chunk, n_labels: int) -> np.ndarray:
    """Rows per label: (L,) int64 — the counts that are public under ``protect="sensitive"``
    (no group is read)."""
    return np.bincount(chunk.y, minlength=n_labels)


def weighted_sum(chunk, design, target) -> np.ndarray:
    """Σ_i t_i z_i: Zᵀy for the public score (``target="y"``), T = Σ aᵢuᵢ for the proxy
    (``target=("group", 0)``); see :func:`_weights`."""
    return design.tdot(design.matrix(chunk), _weights(chunk, target))


def logistic_terms(chunk, design, theta, hessian):
    """One Newton pass of a logistic likelihood at θ: (Σ log(1 + e^{zᵢ·θ}), Σ σ(zᵢ·θ) zᵢ,
    Σ σ(1 − σ) zᵢzᵢᵀ or None).  The labels do not enter: the fit reads them through T.
    ``hessian``: False (none), True (float64) or :data:`SINGLE` (summed in float32, returned
    as float64: a Newton step's Hessian far from the optimum)."""
    return _logistic_terms(design.matrix(chunk), design, theta, hessian)


def sum_and_logistic_terms(chunk, design, target, theta, hessian):
    """(:func:`weighted_sum`, :func:`logistic_terms`) of the chunk in one pass: a fit's
    statistic T = Σ tᵢzᵢ and its Newton terms at the start θ (which do not read t), from one
    read of the rows — the same numbers as the two passes apart."""
    Z = design.matrix(chunk)
    return design.tdot(Z, _weights(chunk, target)), _logistic_terms(Z, design, theta, hessian)


def logistic_terms_shift(chunk, design, theta, delta):
    """(:func:`logistic_terms` at θ without the Hessian, ``Max(max_i |zᵢ·δ|)``): the value
    and gradient at a Newton candidate θ = θ₀ + δ, and how far any row's margin moved from θ₀
    — which bounds the Hessian at θ against the one at θ₀ (σ(1 − σ) changes by a factor
    e^{±|Δz|}), so a fit can certify that it has converged without the Hessian's pass."""
    Z = design.matrix(chunk)
    f, g, _ = _logistic_terms(Z, design, theta, False)
    shift = design.dot(Z, delta)                 # z·θ − z·θ₀ for every row (margins move)
    return f, g, Max(float(np.max(np.abs(shift))) if len(shift) else 0.0)


def _logistic_terms(Z, design, theta, hessian):
    z = design.dot(Z, theta)
    p = sigmoid(z)
    f = softplus_sum(z, p)
    # hessian=SINGLE: the Hessian in single precision (weighted_gram), for the Newton steps far
    # from the optimum (privfair.statistics.scores.logistic_from_statistic says why the fit is unchanged)
    return f, design.tdot(Z, p), (design.gram(Z, p * (1.0 - p), float32=isinstance(hessian, str)
                                              and hessian == SINGLE) if hessian else None)


#: the ``hessian`` argument of :func:`logistic_terms` / :func:`sum_and_logistic_terms` that
#: asks for the Hessian summed in single precision (:func:`weighted_gram` ``float32=True``)
SINGLE = "float32"


def max_norm_rows(chunk, design):
    """The design rows of largest ‖z_i‖₂ and of largest ‖z_i‖₁ of the chunk, as two
    :class:`Max` partials ``(Max(‖z‖₂², z), Max(‖z‖₁, z))``: a maximum over rows (e.g. the
    sensitivity of a sum of design rows, a public quantity under ``protect="sensitive"``) as a
    pass, merged by maximum — in memory and on Dask workers alike.  An empty chunk gives None."""
    if len(chunk) == 0:
        return None
    Z = design.matrix(chunk)
    sq, l1 = np.einsum("ij,ij->i", Z, Z), np.abs(Z).sum(axis=1)
    lead = isinstance(design, _Intercept) and not isinstance(design, _Plain)
    if lead:                      # z = [1, x]: the leading 1 adds to both norms
        sq, l1 = sq + 1.0, l1 + 1.0
    out = []
    for v in (sq, l1):
        i = int(np.argmax(v))
        row = np.concatenate([[1.0], Z[i]]) if lead else np.array(Z[i], dtype=float)
        out.append(Max(v[i], row))
    return tuple(out)


def non_binary_counts(chunk) -> np.ndarray:
    """Per column, the number of entries of the chunk other than 0 and 1 (a column is 0/1
    iff its sum over all rows is 0): which columns are binary, as a pass."""
    X = chunk.X
    return np.count_nonzero((X != 0) & (X != 1), axis=0).astype(np.int64)


def several(chunk, tasks) -> tuple:
    """The partials of several passes over the same chunk, ``tasks`` = ((fn, params), ...):
    ``(fn₁(chunk, *params₁), fn₂(chunk, *params₂), ...)`` — merged entrywise, so each is the
    sum it would be alone (the same chunks, the same merge order: the same numbers), from one
    read of the rows (an index view's chunk gathered once, #19)."""
    return tuple(fn(chunk, *params) for fn, params in tasks)


def logistic_value(chunk, design, theta) -> float:
    """Σ log(1 + e^{zᵢ·θ}) only (a line-search probe)."""
    return softplus_sum(design.dot(design.matrix(chunk), theta))


def rule_soft_counts(chunk, rule, n_groups: int, n_labels: int,
                     group_values=None) -> np.ndarray:
    """Σ over the chunk's rows of P(``rule`` predicts ŷ | xᵢ) in their (group, label) block:
    the held-out check's soft confusion counts C[g, y, ŷ] (flattened, (G·L·L,)) as a pass.
    ``rule`` is a :class:`privfair.Result` (its ``predict_proba(X)``), the same per-row
    numbers as the in-memory check; a rule that reads the sensitive attribute (e.g.
    ``pf.PostProcessed``) is given ``group_values`` (the declared values, public), and reads
    each row's value ``group_values[g_i]`` (#19)."""
    L = n_labels
    C = np.zeros((n_groups * L, L))
    if len(chunk):
        sens = None if group_values is None else np.asarray(group_values)[chunk.group]
        p = np.asarray(rule.predict_proba(chunk.X, sens), dtype=float)
        P = p if p.ndim == 2 else np.stack([1.0 - p, p], axis=1)
        np.add.at(C, chunk.group * L + chunk.y, np.clip(P, 0.0, 1.0))
    return C.ravel()


# -- exact order statistics over passes (quantile edges of per-row values, #19) -----------------
def linear_quantiles(order_statistic, n: int, probabilities) -> np.ndarray:
    """``np.quantile(v, probabilities)`` (its default method, "linear") of n values v given
    only ``order_statistic(ranks) -> values`` (the values of the given 0-based ranks in sorted
    order): numpy's own float operations — the virtual index (n − 1)·q, the neighbouring
    ranks (the last one past the end), γ = index − floor and numpy's two-sided lerp
    (a + (b − a)·γ, or b − (b − a)·(1 − γ) when γ ≥ ½) — so the same bits as np.quantile on
    the whole array (tests/test_dask_solve.py checks random n, ties, n = 1)."""
    q = np.asarray(probabilities, dtype=float)
    virtual = (n - 1) * q
    prev = np.floor(virtual)
    nxt = prev + 1
    above = virtual >= n - 1
    prev[above], nxt[above] = -1, -1               # numpy: the last value (index −1)
    gamma = virtual - prev
    lo_rank = np.where(prev < 0, n - 1, prev).astype(np.int64)
    hi_rank = np.where(nxt < 0, n - 1, nxt).astype(np.int64)
    vals = order_statistic(np.unique(np.concatenate([lo_rank, hi_rank])))
    a = np.asarray([vals[int(r)] for r in lo_rank], dtype=float)
    b = np.asarray([vals[int(r)] for r in hi_rank], dtype=float)
    diff = b - a
    out = np.add(a, diff * gamma)
    np.subtract(b, diff * (1 - gamma), out=out, where=gamma >= 0.5)
    return out


#: sub-buckets of a value range in the first (whole-column) pass of :func:`order_statistics`
ORDER_BINS = 1 << 15
#: sub-buckets of one narrowed bucket in the later passes (one histogram per bucket followed)
ORDER_SUB_BINS = 1 << 10
#: a bucket with at most this many values is resolved by bringing its values back (sorted on
#: the client); a larger one is split again
ORDER_GATHER = 1 << 17


def _sub_edges(lo, hi, k):
    """k + 1 non-decreasing edges from lo to hi (k equal-width buckets; exact ends)."""
    e = lo + (hi - lo) * (np.arange(k + 1) / k)
    e[0], e[-1] = lo, hi
    return np.maximum.accumulate(e)


def bucket_pass(chunk, fn, params, specs) -> tuple:
    """One pass of :func:`order_statistics` over a chunk: the values ``fn(chunk, *params)``
    (a tuple of 1-D arrays, one per column); per spec ``(kind, column, lo, hi, closed[,
    inner edges])`` the values v of that column in the bucket lo ≤ v < hi (≤ hi when closed):
    kind "hist" — their counts in the sub-buckets (``np.searchsorted(edges, v, 'right')``),
    their largest value and minus their smallest (:class:`Max`: merged by maximum) —, kind
    "gather" — the values themselves (:class:`Concat`)."""
    vals = fn(chunk, *params)
    out = []
    for spec in specs:
        kind, j, lo, hi, closed = spec[:5]
        v = np.asarray(vals[j], dtype=float)
        w = v[(v >= lo) & ((v <= hi) if closed else (v < hi))]
        if kind == "gather":
            out.append(Concat(w))
            continue
        edges = spec[5]
        h = np.bincount(np.searchsorted(edges, w, side="right"), minlength=edges.size + 1)
        out.append((h.astype(np.int64), Max(w.max() if w.size else -np.inf),
                    Max(-w.min() if w.size else -np.inf)))
    return tuple(out)


def order_statistics(rows, fn, params, ranks, bounds, *, bins=None, sub_bins=None,
                     gather=None, max_passes=64) -> list:
    """The exact values of given ranks of per-row values computed by a pass, from a few passes
    that bring back counts and a few values only (no n-vector on the client, #19).

    ``fn(chunk, *params)`` returns a tuple of 1-D arrays (the columns: e.g. a score and a
    proxy per row); ``ranks[j]`` are the 0-based ranks wanted of column j (its values sorted);
    ``bounds = (lo, hi)`` contains every value (e.g. (0, 1) for probabilities; a value outside
    is refused).  Returns, per column, a dict rank → value: the number ``np.sort(v)[rank]``
    gives on the whole column, exactly.

    Method (a distributed selection by value buckets): the first pass counts each column's
    values in ``bins`` equal-width buckets of [lo, hi] (by comparisons with the edges, so a
    value's bucket is exact); the client finds the bucket of every wanted rank and how many
    values lie below it.  A bucket of at most ``gather`` values is then resolved by one pass
    that brings back its values (sorted on the client); a larger one is split again into
    ``sub_bins`` buckets (one histogram per bucket followed; the defaults are
    :data:`ORDER_BINS`, :data:`ORDER_SUB_BINS`, :data:`ORDER_GATHER`); a bucket whose smallest and
    largest values are equal (ties) is resolved at once.  Typically three passes: counts,
    values, and the caller's next pass.  The values brought back are those near the wanted
    ranks — what the caller releases anyway, as edges — plus at most ``gather`` per bucket."""
    bins = ORDER_BINS if bins is None else int(bins)           # (defaults read at call time)
    sub_bins = ORDER_SUB_BINS if sub_bins is None else int(sub_bins)
    gather = ORDER_GATHER if gather is None else int(gather)
    lo, hi = float(bounds[0]), float(bounds[1])
    n = int(rows.n)
    found = [dict() for _ in ranks]
    # a bucket: [column, lo, hi, closed, values below it, values in it, ranks in it]
    buckets = [[j, lo, hi, True, 0, n, sorted({int(r) for r in rs})]
               for j, rs in enumerate(ranks) if len(rs)]
    first = True
    for _ in range(max_passes):
        if not buckets:
            return found
        specs = []
        for j, a, b, closed, _, count, _ in buckets:
            if count <= gather and not first:
                specs.append(("gather", j, a, b, closed))
            else:
                specs.append(("hist", j, a, b, closed,
                              _sub_edges(a, b, bins if first else sub_bins)[1:-1]))
        parts = rows.map_sum(bucket_pass, fn, params, tuple(specs))
        new = []
        for (j, a, b, closed, below, count, rs), spec, part in zip(buckets, specs, parts):
            if spec[0] == "gather":
                v = np.sort(part.values)
                if v.size != count:
                    raise RuntimeError("the rows changed between two passes")
                for r in rs:
                    found[j][r] = float(v[r - below])
                continue
            h, top, neg_bottom = part
            if h.sum() != count:
                if first:
                    raise InvalidInputError("bounds", (lo, hi), "some values lie outside "
                                            "them; pass bounds that contain every value")
                raise RuntimeError("the rows changed between two passes")
            if top.value == -neg_bottom.value:          # every value of the bucket is equal
                for r in rs:
                    found[j][r] = float(top.value)
                continue
            edges = spec[5]
            full = np.concatenate([[a], edges, [b]])
            cum = np.concatenate([[0], np.cumsum(h)])
            k_of = {}
            for r in rs:
                k = int(np.searchsorted(cum, r - below, side="right")) - 1
                k_of.setdefault(k, []).append(r)
            last = h.size - 1
            for k, rk in k_of.items():
                new.append([j, float(full[k]), float(full[k + 1]), closed and k == last,
                            below + int(cum[k]), int(h[k]), rk])
        buckets, first = new, False
    raise RuntimeError(f"order statistics not resolved in {max_passes} passes")

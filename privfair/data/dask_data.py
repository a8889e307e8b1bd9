"""Datasets beyond one machine's memory: Parquet files or a Dask DataFrame, passes on Dask.

``pf.Dataset.from_parquet(path, label=, sensitive=, groups=, labels=)`` and
``pf.Dataset.from_dask(ddf, ...)`` return a :class:`DaskDataset`.  It holds no rows: it holds
the Dask graph that reads them and the *public schema* (feature columns, declared groups and
labels), and it runs every pass of :mod:`privfair.data.passes` as a map over the DataFrame's
partitions on the Dask workers:

* what travels to a worker: the pass's code (module-level functions, by reference) and public
  parameters only — the schema, coefficients θ, a design;
* what comes back: the pass's partial sums for that partition (a count vector, a (d+1)-vector,
  a (d+1)² matrix), merged on the client by :func:`privfair.data.passes.merge`;
* noise, for a private release, is drawn once, on the client, after the merge, by the same
  release code as the in-memory path — so a Dask run's certificate is the in-memory one, and
  without noise (ε = ∞) the two give the same numbers up to float summation order.

The schema must be declared (``groups=``, ``labels=``): reading it from the data would make
the layout of ℓ depend on the private rows (see :meth:`privfair.Dataset.check_public_schema`).
A running ``distributed.Client`` is used when one exists (``Client("tcp://scheduler:8786")``,
docs/scale.md); otherwise Dask's local scheduler runs the partitions.

Requires the optional extra: ``pip install 'privfair[dask]'``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from . import passes
from .heap import steady_heap
from .dataset import Dataset
from ..errors import DataError, DataNotFoundError, InvalidInputError, PrivfairError

__all__ = ["DaskDataset", "DaskRows", "DaskMissingError", "ParquetPart", "parquet_parts",
           "from_parquet", "from_dask"]


class DaskMissingError(PrivfairError, ImportError):
    """The optional Dask engine is not installed (``pip install 'privfair[dask]'``)."""


def _dask():
    try:
        import dask
        import dask.dataframe as dd
    except ImportError:
        raise DaskMissingError("dask", None, "install the optional extra: pip install "
                               "'privfair[dask]' (dask[dataframe], distributed, pyarrow)") from None
    return dask, dd


def _name(value) -> str:
    """A group's name as the in-memory Dataset names it: str(v), 'v1|v2' for several columns."""
    if isinstance(value, (tuple, list)):
        return "|".join(str(v) for v in value)
    return str(value)


def _plain(v):
    return v.item() if isinstance(v, np.generic) else v


@dataclass(frozen=True)
class Schema:
    """The public schema a worker needs to turn a partition into (X, y, group) codes."""

    features: tuple
    label: str
    sensitive: tuple
    group_values: tuple
    label_values: tuple

    @property
    def group_names(self) -> list:
        return [_name(v) for v in self.group_values]

    def arrays(self, df):
        """(X float64 (k, d), label codes (k,), group codes (k,)); codes are −1 outside the
        declared sets (the construction pass refuses such data)."""
        X = df[list(self.features)].to_numpy(dtype=np.float64, na_value=np.nan)
        y, g = self.codes(df)
        return X, y, g

    def codes(self, df):
        """(label codes, group codes) of a pandas frame holding the label and sensitive
        columns: the declared value's position, −1 for anything else."""
        import pandas as pd

        # Index.get_indexer: the declared value's position, −1 for anything else
        y = pd.Index(list(self.label_values)).get_indexer(df[self.label])
        if len(self.sensitive) == 1:
            col = df[self.sensitive[0]]
            numeric = all(isinstance(v, numbers.Number) and not isinstance(v, bool)
                          for v in self.group_values)
            if numeric and col.dtype.kind in "iuf":
                g = pd.Index(list(self.group_values)).get_indexer(col)
            else:       # matched by name, str(value), as the in-memory Dataset matches groups
                g = pd.Index(self.group_names).get_indexer(col.astype(str))
        else:
            key = df[self.sensitive[0]].astype(str)
            for c in self.sensitive[1:]:
                key = key + "|" + df[c].astype(str)
            g = pd.Index(self.group_names).get_indexer(key)
        return np.asarray(y, dtype=np.int64), np.asarray(g, dtype=np.int64)


def held_out_positions(size: int, k: int, seed) -> np.ndarray:
    """The ``k`` held-out rows of a partition of ``size`` rows, sorted: a uniform k-subset
    drawn from ``seed`` (a public coin the client drew; see :meth:`DaskDataset.split_holdout`)."""
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    return np.sort(np.random.default_rng(seed).choice(int(size), int(k), replace=False))


def _selected_positions(size: int, select):
    """The positions of a partition's rows a selection keeps: ``select`` = (seed, k, keep) with
    keep "held" (the k held-out rows) or "train" (the others); None keeps every row."""
    if select is None:
        return None
    seed, k, keep = select
    held = held_out_positions(size, k, seed)
    if keep == "held":
        return held
    mask = np.ones(int(size), dtype=bool)
    mask[held] = False
    return np.flatnonzero(mask)


def _select_arrays(arrays, select):
    """(X, y, group) restricted to the rows ``select`` keeps (:func:`_selected_positions`)."""
    if select is None:
        return arrays
    X, y, g = arrays
    i = _selected_positions(X.shape[0], select)
    return X[i], y[i], g[i]


# -- privfair's own Parquet reader ------------------------------------------------------------
#
# Why (#19): through dask.dataframe.read_parquet a partition became a pandas DataFrame and then
# a C-ordered float64 X — an Arrow table, a pandas copy, a strided transposing cast into fresh
# pages, pandas' per-column overhead: ~130 ms per 10⁶ × 20 partition (float32, snappy) in one
# process, against ~16 ms for the numpy gradient pass over it.  A :class:`ParquetPart` is read
# by pyarrow directly (only the schema's columns, memory-mapped, no pandas); the feature
# columns stay as the file has them (float32 stays float32, views of Arrow's buffers where
# possible) and a pass reads them through :class:`ColumnRows`, which casts one chunk at a time
# into the worker thread's reused float64 buffer: the cast chunk is still in cache when the
# pass reads it, and no partition-sized float64 X is ever written (a fresh 160 MB array also
# costs ~30 ms of page faults — the kernel zeroing new pages — each time).  The label and group
# columns are coded by a vectorized lookup where they are integers.

#: largest partition privfair's reader makes, in float64 bytes of the file's columns: a file
#: above it is split at row-group boundaries (the default block size of dask's own reader)
PART_BYTES = 256 << 20


@dataclass(frozen=True)
class ParquetPart:
    """One partition of a Parquet dataset read by privfair's own reader: a file and the run of
    its row groups (None: all of them).  Public: a path and indices, no row.

    ``filesystem``: the fsspec filesystem of a non-local file (an object store's URL, with its
    ``storage_options``), None for a local one (memory-mapped).  It is pickled into the tasks,
    so its options — credentials included — travel to the workers, inside the cluster."""

    path: str
    row_groups: tuple = None
    filesystem: object = field(default=None, compare=False, repr=False)

    def file(self):
        """The pyarrow ``ParquetFile`` (a local file memory-mapped)."""
        import pyarrow.parquet as pq

        if self.filesystem is None:
            return pq.ParquetFile(self.path, memory_map=True)
        return pq.ParquetFile(self.path, filesystem=self.filesystem)

    def read(self, columns=None):
        """The Arrow table of ``columns`` (all: None); pyarrow's own threads off (a Dask
        worker's threads already run one partition each)."""
        f = self.file()
        cols = None if columns is None else list(columns)
        if self.row_groups is None:
            return f.read(columns=cols, use_threads=False)
        return f.read_row_groups(list(self.row_groups), columns=cols, use_threads=False)

    def frame(self):
        """The partition as a pandas DataFrame, every column (``ddf``: ``to_dataset``,
        ``sample``)."""
        return self.read().to_pandas()


_local = None


def _buffer(d: int, k: int) -> np.ndarray:
    """This thread's reusable (d, ≥ k) float64 buffer (one chunk's X, transposed)."""
    import threading

    global _local
    if _local is None:
        _local = threading.local()
    buf = getattr(_local, "buf", None)
    if buf is None or buf.shape[0] != d or buf.shape[1] < k:
        _local.buf = None                       # free the old one before allocating
        buf = _local.buf = np.empty((d, k))
    return buf


def _int_codes(col, values):
    """Codes of an integer Arrow column against declared integer values, vectorized (a lookup
    table over [min, max] of the declared values); None where that does not apply."""
    import pyarrow as pa

    if (not pa.types.is_integer(col.type) or col.null_count
            or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                       for v in values)):
        return None
    vals = np.asarray(values, dtype=np.int64)
    lo, hi = int(vals.min()), int(vals.max())
    if hi - lo > 1 << 16:
        return None
    lut = np.full(hi - lo + 1, -1, dtype=np.int64)
    lut[vals - lo] = np.arange(vals.size)
    a = col.to_numpy()
    if a.size and lo <= a.min() and a.max() <= hi:     # every value in range: one lookup
        if lo == 0 and np.array_equal(vals, np.arange(vals.size)):
            return a.astype(np.int64, copy=False)       # the codes are the values (0, 1, …)
        return lut[a - lo]
    inside = (a >= lo) & (a <= hi)
    return np.where(inside, lut[np.clip(a, lo, hi) - lo], -1)


def table_columns(table, schema):
    """(feature columns, label codes, group codes) of an Arrow table: one 1-D numpy array per
    feature in the file's own numeric type (NaN for a null: such a column is cast to float64
    by Arrow first), and the codes as :meth:`Schema.codes` gives them."""
    import pyarrow as pa

    cols = []
    for name in schema.features:
        col = table.column(name)
        if col.null_count:                      # nulls → NaN (refused by the construction pass)
            col = col.cast(pa.float64())
        cols.append(col.chunk(0).to_numpy(zero_copy_only=False) if col.num_chunks == 1
                    else col.to_numpy())
    y = _int_codes(table.column(schema.label), schema.label_values)
    g = _int_codes(table.column(schema.sensitive[0]), schema.group_values) \
        if len(schema.sensitive) == 1 else None
    if y is None or g is None:      # strings, floats, several columns: pandas, as before
        y2, g2 = schema.codes(table.select([schema.label, *schema.sensitive]).to_pandas())
        y, g = (y2 if y is None else y), (g2 if g is None else g)
    return cols, y, g


def _checked_chunk_rows(chunk_rows):
    if chunk_rows is not None and (isinstance(chunk_rows, bool)
                                   or not isinstance(chunk_rows, numbers.Integral)
                                   or chunk_rows < 1):
        raise InvalidInputError("chunk_rows", chunk_rows, "pass a positive integer")
    return chunk_rows


class ColumnRows:
    """A partition read by privfair's reader as a row source for :mod:`privfair.data.passes`
    (what :class:`~privfair.data.passes.ArrayRows` is to an X in memory): feature columns in
    the file's own type, each chunk cast into this thread's reused float64 buffer when the pass
    reaches it.  A chunk's X is a Fortran-ordered (k, d) view of that buffer — the values of
    the float64 X, in the same chunks, so every pass gives the partition's numbers up to the
    order of BLAS's additions — and a partial that is a view of it is copied out before the
    next chunk overwrites it (:func:`_detach`)."""

    def __init__(self, cols, y, group, chunk_rows=None):
        self.cols, self.y, self.group, self.extra = list(cols), y, group, {}
        chunk_rows = _checked_chunk_rows(chunk_rows)
        self.chunk_rows = int(chunk_rows) if chunk_rows else \
            passes.chunk_rows_for(len(self.cols))

    @property
    def n(self) -> int:
        return int(len(self.y))

    @property
    def n_features(self) -> int:
        return len(self.cols)

    def select(self, i) -> "ColumnRows":
        """The rows ``i`` (a held-out split's part): each column gathered in its own type."""
        return ColumnRows([c[i] for c in self.cols], self.y[i], self.group[i], self.chunk_rows)

    def nonfinite_rows(self) -> int:
        """Rows with a NaN or infinite feature (read on the columns: the cast keeps both)."""
        bad = np.zeros(self.n, dtype=bool)
        for c in self.cols:
            if c.dtype.kind == "f":
                bad |= ~np.isfinite(c)
        return int(bad.sum())

    def _chunk_buffer(self) -> np.ndarray:
        return _buffer(len(self.cols), min(self.chunk_rows, self.n))

    def chunks(self):
        n, k = self.n, self.chunk_rows
        buf = self._chunk_buffer()
        for s in range(0, n, k):
            e = min(n, s + k)
            yield _CastChunk(self.cols, buf, s, e, self.y[s:e], self.group[s:e])

    def map_sum(self, fn, *params):
        """Σ over chunks of ``fn(chunk, *params)`` (merged with ``passes.merge``)."""
        total, buf = None, self._chunk_buffer()
        for c in self.chunks():
            total = passes.merge(total, _detach(fn(c, *params), buf))
        return total

    def gather(self, i, out=None) -> np.ndarray:
        """The feature rows ``i`` as a C-ordered float64 (len(i), d) array (or into ``out``),
        as :meth:`privfair.data.passes.ArrayRows.gather` gives them."""
        i = np.asarray(i)
        if out is None:
            out = np.empty((i.size, len(self.cols)))
        for j, c in enumerate(self.cols):
            out[:, j] = c[i]
        return out

    def arrays(self):
        """(X, y, group): X a new float64 (n, d) array (Fortran-ordered: one contiguous cast
        per column) — :meth:`DaskDataset.persist` keeps it."""
        XT = np.empty((len(self.cols), self.n))
        for j, c in enumerate(self.cols):
            XT[j] = c
        return XT.T, self.y, self.group


class _CastChunk(passes.Chunk):
    """A chunk of :class:`ColumnRows` whose X is cast into the buffer when a pass first reads
    it: a pass that reads only the codes (the (group, label) counts) casts nothing."""

    __slots__ = ("_cols", "_buf", "_s", "_e", "_X")

    def __init__(self, cols, buf, s, e, y, group):
        self._cols, self._buf, self._s, self._e, self._X = cols, buf, s, e, None
        super().__init__(None, y, group, s)

    @property
    def X(self):
        if self._X is None:
            s, e = self._s, self._e
            XT = self._buf[:, :e - s]
            for j, c in enumerate(self._cols):
                XT[j] = c[s:e]                  # the one cast, into a cache-sized buffer
            self._X = XT.T
        return self._X

    @X.setter
    def X(self, value):
        if value is not None:
            self._X = value

    def __len__(self):
        return self._e - self._s


def _detach(partial, buf):
    """``partial`` with every array that may share memory with ``buf`` copied: a pass may
    return a view of its chunk (:class:`privfair.data.passes.Max` carries the row attaining
    the maximum), and the buffer is overwritten by the next chunk."""
    if partial is None:
        return partial
    if isinstance(partial, np.ndarray):
        return partial.copy() if np.may_share_memory(partial, buf) else partial
    if isinstance(partial, passes.Max):
        return passes.Max(partial.value, _detach(partial.item, buf))
    if isinstance(partial, passes.Concat):
        return passes.Concat(_detach(partial.values, buf))
    if isinstance(partial, dict):
        return {k: _detach(v, buf) for k, v in partial.items()}
    if isinstance(partial, (tuple, list)):
        return type(partial)(_detach(v, buf) for v in partial)
    return partial


def _column_rows(part, schema, chunk_rows=None) -> ColumnRows:
    """A :class:`ParquetPart` read as :class:`ColumnRows` (codes not yet checked)."""
    cols = dict.fromkeys([*schema.features, schema.label, *schema.sensitive])
    return ColumnRows(*table_columns(part.read(cols), schema), chunk_rows=chunk_rows)


def _not_found(path) -> DataNotFoundError:
    return DataNotFoundError("path", path, "no Parquet file there: pass a file, a directory of "
                             "Parquet files, a glob or a URL fsspec knows (with "
                             "storage_options=)")


def parquet_parts(path, columns=None, storage_options=None):
    """privfair's partitions of the Parquet files at ``path`` — a file, a directory (every
    ``*.parquet``-like file below it that pyarrow's dataset discovery keeps), a glob, or a list
    of them; local, or any URL fsspec knows (``s3://``, ``gs://``, ``abfs://``, … with
    ``storage_options``, as dask's reader takes them) — in dask's natural order; or None where
    privfair's reader does not apply (nothing at a remote path, a hive-partitioned column
    missing from the files): dask's reader then.  A local path, directory or glob with no
    Parquet file raises :class:`~privfair.errors.DataNotFoundError`.

    One partition per file; a file whose X would exceed :data:`PART_BYTES` in float64 is
    split at row-group boundaries.  Reads the files' footers only (row-group sizes, the
    column names): no row."""
    import os

    try:
        import pyarrow.dataset as pads
        from dask.utils import natural_sort_key
        from fsspec.core import url_to_fs
        from fsspec.implementations.local import LocalFileSystem
    except ImportError:
        return None
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    files, fs = [], None
    for p in paths:
        p_fs, root = url_to_fs(os.fspath(p), **(storage_options or {}))
        if fs is not None and p_fs != fs:        # several filesystems: dask's reader
            return None
        fs = p_fs
        if any(c in root for c in "*?["):        # a glob (fsspec's pattern characters)
            found = p_fs.glob(root)
        elif p_fs.isdir(root):
            found = pads.dataset(root, filesystem=p_fs, format="parquet").files
        elif p_fs.isfile(root):
            found = [root]
        elif isinstance(p_fs, LocalFileSystem):
            found = []
        else:
            return None                           # nothing there: dask's reader says so
        if not found and isinstance(p_fs, LocalFileSystem):
            raise _not_found(p)
        files += sorted(found, key=natural_sort_key)
    if not files:
        return None
    # a local file is memory-mapped (no filesystem object); any other is opened through fs
    remote = None if isinstance(fs, LocalFileSystem) else fs
    parts = []
    for f in files:
        meta = ParquetPart(f, filesystem=remote).file().metadata
        names = set(meta.schema.to_arrow_schema().names)
        if columns is not None and not set(columns) <= names:
            return None
        width = 8 * max(1, meta.num_columns)        # float64 bytes per row, at most
        sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        if sum(sizes) * width <= PART_BYTES or len(sizes) <= 1:
            parts.append(ParquetPart(f, filesystem=remote))
            continue
        run, rows = [], 0
        for i, r in enumerate(sizes):
            if run and (rows + r) * width > PART_BYTES:
                parts.append(ParquetPart(f, tuple(run), remote))
                run, rows = [], 0
            run.append(i)
            rows += r
        parts.append(ParquetPart(f, tuple(run), remote))
    return parts


@steady_heap()
def _check_partition(df, schema) -> np.ndarray:
    """The construction pass: [rows, rows with a non-finite feature, rows with an undeclared
    label, rows with an undeclared group] of one partition (sums: they merge exactly)."""
    if isinstance(df, ParquetPart):
        rows = _column_rows(df, schema)
        return np.array([rows.n, rows.nonfinite_rows(), int((rows.y < 0).sum()),
                         int((rows.group < 0).sum())], dtype=np.int64)
    X, y, g = schema.arrays(df)
    return np.array([X.shape[0], int((~np.isfinite(X)).any(axis=1).sum()), int((y < 0).sum()),
                     int((g < 0).sum())], dtype=np.int64)


def _refuse_undeclared(y, g):
    if len(y) and (y.min() < 0 or g.min() < 0):
        # validated at construction: the files changed underneath the dataset
        raise ValueError("a partition holds a label or group outside the declared schema; "
                         "rebuild the dataset")


def partition_arrays(df, schema):
    """A partition — a pandas DataFrame (dask's reader) or a :class:`ParquetPart`
    (privfair's) — as (X float64, y codes, group codes) arrays, refusing codes outside the
    schema."""
    if isinstance(df, ParquetPart):
        X, y, g = _column_rows(df, schema).arrays()
    else:
        X, y, g = schema.arrays(df)
    _refuse_undeclared(y, g)
    return X, y, g


def _partition_rows(df, schema, chunk_rows, select):
    """One partition as a row source of the rows ``select`` keeps: :class:`ColumnRows` of a
    :class:`ParquetPart`, an :class:`~privfair.data.passes.ArrayRows` of a DataFrame."""
    if isinstance(df, ParquetPart):
        rows = _column_rows(df, schema, chunk_rows)
        _refuse_undeclared(rows.y, rows.group)
        i = _selected_positions(rows.n, select)
        return rows if i is None else rows.select(i)
    X, y, g = _select_arrays(partition_arrays(df, schema), select)
    return passes.ArrayRows(X, y, g, chunk_rows=chunk_rows)


def _persisted_columns(part, schema) -> ColumnRows:
    """What :meth:`DaskDataset.persist` keeps of a :class:`ParquetPart`: its columns in the
    file's own type and the codes (checked)."""
    rows = _column_rows(part, schema)
    _refuse_undeclared(rows.y, rows.group)
    return rows


def _held_rows(arrays, chunk_rows, select):
    """A persisted partition — (X, y, group) arrays or :class:`ColumnRows` — as a row source
    of the rows ``select`` keeps."""
    if isinstance(arrays, ColumnRows):
        rows = ColumnRows(arrays.cols, arrays.y, arrays.group, chunk_rows)     # no copy
        i = _selected_positions(rows.n, select)
        return rows if i is None else rows.select(i)
    X, y, g = _select_arrays(arrays, select)
    return passes.ArrayRows(X, y, g, chunk_rows=chunk_rows)


@steady_heap()
def _arrays_pass(arrays, chunk_rows, fn, params, select=None):
    """Run one pass on one persisted partition (the rows ``select`` keeps), in chunks; its
    partial sums (None if empty)."""
    return _held_rows(arrays, chunk_rows, select).map_sum(fn, *params)


@steady_heap()
def _partition_pass(df, schema, chunk_rows, fn, params, select=None):
    """Run one pass on one partition (a DataFrame or a :class:`ParquetPart`, read on the
    worker)."""
    return _partition_rows(df, schema, chunk_rows, select).map_sum(fn, *params)


@steady_heap()
def _arrays_poisson_pass(arrays, chunk_rows, rate, seed, fn, params, select=None):
    """One pass over a Poisson sample of one persisted partition, drawn from ``seed``."""
    return passes.poisson_pass(_held_rows(arrays, chunk_rows, select), rate, seed, fn, params)


@steady_heap()
def _partition_poisson_pass(df, schema, chunk_rows, rate, seed, fn, params, select=None):
    """One pass over a Poisson sample of one partition (sampled on the worker)."""
    return passes.poisson_pass(_partition_rows(df, schema, chunk_rows, select), rate, seed,
                               fn, params)


@steady_heap()
def _arrays_poisson_passes(arrays, chunk_rows, jobs, select=None):
    """Several passes, each over its own Poisson sample of one partition's arrays: ``jobs`` =
    [(fn, rate, seed, params), ...]; the list of their partial sums (the partition is
    converted and selected once for all of them)."""
    rows = _held_rows(arrays, chunk_rows, select)
    return [passes.poisson_pass(rows, rate, seed, fn, params) for fn, rate, seed, params in jobs]


@steady_heap()
def _partition_poisson_passes(df, schema, chunk_rows, jobs, select=None):
    """:func:`_arrays_poisson_passes` on one partition (read and selected once)."""
    rows = _partition_rows(df, schema, chunk_rows, select)
    return [passes.poisson_pass(rows, rate, seed, fn, params) for fn, rate, seed, params in jobs]


# -- several steps' Poisson samples per read (#19) --------------------------------------------
#
# Why: from Parquet, a ``lagrangian_sgda`` step's pass reads and decodes every partition to use
# a q ≈ 1/50 sample of it — 500 steps, 500 reads of all the files (10⁸ × 20: ~6.5 s a read on
# 2 workers).  Membership in a Poisson sample does not depend on the rows or on θ, so one read
# can draw the samples of the next K steps, keep just those rows on the worker (a
# :class:`SampleBlock`) and let each step's pass read its own stored sample.

#: default budget, per Dask worker, for the stored samples of the steps drawn ahead
#: (:func:`prefetch_steps`): a few hundred MB — well inside a worker's usual few GB (the
#: 4 GB workers of docs/scale.md's 10⁸-row runs peaked at ~1 GB without it), next to the
#: partition being read (~80 MB for 10⁶ × 20 float32).  With 2 workers, 20 float32 features
#: (82 bytes a sampled row) and q = 1/50: 8 steps a read at 8·10⁷ training rows (63 reads
#: instead of 500), 80 at 8·10⁶ (7 reads); docs/scale.md has the measured times.  Raise it
#: where the workers' memory allows (``DaskDataset.prefetch_bytes``); 0 turns it off
PREFETCH_BYTES = 512 << 20


def prefetch_steps(n, rates, row_bytes, workers=1, budget=PREFETCH_BYTES, steps=None) -> int:
    """K, how many steps' Poisson samples one read draws: the largest K whose expected stored
    rows, K · n · Σ rates · ``row_bytes`` (plus 6 standard deviations of the Binomial count),
    fit in ``budget`` bytes per worker times ``workers``; at most ``steps`` (the steps left,
    when known) and at least 1.  Every argument is public — the row count n (counted once,
    public in every plan), the rates (functions of n and the options), the bytes per row (the
    schema's dtypes), the cluster's workers and the budget — so K, like the rest of the plan,
    reveals nothing about the rows (tests/test_dask_prefetch.py changes X and y and checks K
    does not move)."""
    rate = float(sum(rates))
    if budget <= 0 or rate <= 0 or n <= 0:
        return 1
    per_step = n * rate
    per_step += 6.0 * math.sqrt(per_step)        # a margin for the Binomial count's spread
    k = int(budget * max(1, int(workers)) // (per_step * max(1, int(row_bytes))))
    if steps is not None:
        k = min(k, int(steps))
    return max(1, k)


def _feature_dtype(cols):
    """The one dtype of a partition's stored sampled features: the file's own (float32 stays
    float32) — what every column casts to exactly (float64 where they differ in kind)."""
    return np.result_type(*[c.dtype for c in cols]) if cols else np.dtype(np.float64)


def _code_dtype(count):
    """The smallest signed integer type holding the codes 0 … count − 1 (and −1)."""
    return np.min_scalar_type(-max(int(count), 1))


def _gather_columns(cols, picks, dtype) -> list:
    """The rows ``i`` of every index array of ``picks`` from a partition's feature columns,
    each as a C-ordered (len(i), d) array of ``dtype`` — the values ``X[i]`` of the
    partition's X.

    Column by column, every pick at once: a column (a few MB) comes from memory once and
    serves all the steps' gathers from cache, each written as one contiguous row of a (d, k)
    buffer, transposed once at the end.  Step by step, with strided writes, every step read
    every column from memory again: 8 steps of 8·10⁵ × 20 float32 at q = 1/50 took 38 ms
    against 19 ms (#19: the per-step gather was a 10⁸-row fit's main cost)."""
    bufs = [np.empty((len(cols), i.size), dtype=dtype) for i in picks]
    for j, c in enumerate(cols):
        for i, b in zip(picks, bufs):
            if c.dtype == b.dtype:
                np.take(c, i, out=b[j])
            else:
                b[j] = c[i]
    out = []
    for j in range(len(bufs)):        # each buffer freed once transposed: peak ≈ one block
        out.append(np.ascontiguousarray(bufs[j].T))
        bufs[j] = None
    return out


class SampleBlock:
    """The Poisson samples of the next K steps of one partition, kept on its Dask worker.

    ``samples[t][j]`` = (X, y, group, starts, extra): job j's sampled rows at step t, X in the
    partition's own feature type (a (k, d) C-ordered array), the codes in the smallest integer
    type, and ``starts`` the partition offset of the first row of each chunk the pass will
    read (what :func:`privfair.data.passes.poisson_pass` gives a chunk's ``start``).  Nothing
    of it leaves the worker: :func:`_stored_passes` runs a step's passes on it and returns the
    sums only."""

    __slots__ = ("samples", "chunk_rows")

    def __init__(self, rows, draws, n_groups, n_labels):
        """Draw every (step, job) sample of ``draws`` = [[(rate, seed) per job] per step] from
        ``rows`` (the partition read once) as :func:`passes.poisson_pass` would draw it."""
        k = self.chunk_rows = int(rows.chunk_rows)
        cols = getattr(rows, "cols", None)              # ColumnRows: the file's own types
        dt = _feature_dtype(cols) if cols is not None else np.asarray(rows.X).dtype
        ty, tg = _code_dtype(n_labels), _code_dtype(n_groups)
        picks = [[passes.poisson_rows(rows.n, rate, seed) for rate, seed in step]
                 for step in draws]
        flat = [i for step in picks for i in step]
        if cols is not None:
            Xs = iter(_gather_columns(cols, flat, dt))
        else:
            Xs = iter(np.ascontiguousarray(np.asarray(rows.X)[i]) for i in flat)
        self.samples = [[(next(Xs), rows.y[i].astype(ty), rows.group[i].astype(tg),
                          i[::k].astype(np.int64), {name: a[i] for name, a in
                                                    rows.extra.items()})
                         for i in step] for step in picks]

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for step in self.samples for s in step for a in s[:4])

    def run(self, t, j, fn, params):
        """``fn(chunk, *params)`` over step ``t``'s job ``j`` sample, in the chunks (and with the
        float64 X, the int64 codes and the starts) :func:`passes.poisson_pass` reads over the
        partition: the same partial sums, bit for bit."""
        X, y, g, starts, extra = self.samples[t][j]
        k, total = self.chunk_rows, None
        for c, s in enumerate(range(0, y.shape[0], k)):
            e = min(y.shape[0], s + k)
            chunk = passes.Chunk(X[s:e].astype(np.float64), y[s:e].astype(np.int64),
                                 g[s:e].astype(np.int64), int(starts[c]),
                                 {name: a[s:e] for name, a in extra.items()})
            total = passes.merge(total, fn(chunk, *params))
        return total

    def drop(self, t):
        """Free step ``t``'s samples (a step is read once)."""
        self.samples[t] = None


@steady_heap()
def _partition_samples(items, schema, chunk_rows):
    """Read a run of partitions, one after the other, and draw the samples of several steps of
    each: ``items`` = [(partition, draws, select), ...]; one :class:`SampleBlock` each."""
    return [SampleBlock(_partition_rows(df, schema, chunk_rows, select), draws,
                        len(schema.group_values), len(schema.label_values))
            for df, draws, select in items]


@steady_heap()
def _stored_passes(blocks, t, jobs):
    """Step ``t``'s passes on a run of partitions' stored samples: ``jobs`` = [(fn, params),
    ...] — job j over sample j; per partition, the list of partial sums (merged on the client
    in partition order, as :meth:`DaskRows.poisson_map_sums` merges them).  The step's samples
    are freed after."""
    out = []
    for block in blocks:
        out.append([block.run(t, j, fn, params) for j, (fn, params) in enumerate(jobs)])
        block.drop(t)
    return out


def _cluster_workers(scheduler) -> int:
    """The Dask workers a computation runs on: a distributed client's (the given one, else the
    default), else 1 (a local scheduler: one process)."""
    try:
        from distributed import Client, default_client
    except ImportError:
        return 1
    try:
        c = scheduler if isinstance(scheduler, Client) else \
            (default_client() if scheduler is None else None)
    except ValueError:          # no client running
        return 1
    if c is None:
        return 1
    return max(1, len(c.scheduler_info().get("workers", {})))


class PoissonStock:
    """The next K steps' Poisson samples, drawn by one read of every partition and held by the
    workers (one persisted list of :class:`SampleBlock` per run of partitions): :meth:`map_sums`
    runs step after step on them, and the blocks are released after the K-th
    (:meth:`DaskRows.poisson_prefetch` has the argument).

    Runs of partitions, ``2 × workers`` of them (public): a step's work on one partition's
    sample is a few ms, so one task per partition and step made the tasks' own cost the step's
    (10⁸ rows, 100 partitions, one task each: a row fit unfinished after 14 min, both workers
    at ~90 % CPU), and a small block may be moved to another worker by work stealing; a run's
    block is a few hundred MB, where its tasks stay.  Two runs per worker keep both busy while
    one is read."""

    def __init__(self, rows, rates, steps, source):
        dask, _ = _dask()
        parts = rows._partitions()
        p, J = len(parts), len(rates)
        draws = [[[] for _ in range(steps)] for _ in range(p)]
        for t in range(steps):
            # a step's seeds as poisson_map_sums draws them: job by job, partition by partition
            seeds = passes.poisson_seeds(source, J * p)
            for i in range(p):
                draws[i][t] = [(rates[j], seeds[j * p + i]) for j in range(J)]
        items = list(zip(parts, draws, rows._selects(p)))
        runs = np.array_split(np.arange(p), min(p, 2 * _cluster_workers(rows.scheduler)))
        task = dask.delayed(_partition_samples, pure=False)
        blocks = [task([items[i] for i in run], rows.schema, rows.chunk_rows)
                  for run in runs if run.size]
        self.kw = {} if rows.scheduler is None else {"scheduler": rows.scheduler}
        self.blocks = list(dask.persist(*blocks, **self.kw))
        self.rates, self.steps, self.next = tuple(rates), int(steps), 0

    @property
    def left(self) -> int:
        return self.steps - self.next

    def map_sums(self, jobs) -> list:
        """The next step's passes: ``jobs`` = [(fn, params), ...], one per rate; each job's sum
        merged over the partitions, as :meth:`DaskRows.poisson_map_sums` returns them."""
        if self.blocks is None or self.next >= self.steps:
            raise ValueError("every stored step has been read")
        if len(jobs) != len(self.rates):
            raise ValueError("one job per stored sample")
        dask, _ = _dask()
        task = dask.delayed(_stored_passes, pure=False)
        t = self.next
        tasks = [task(b, t, list(jobs)) for b in self.blocks]
        totals = [None] * len(jobs)
        for run in dask.compute(*tasks, **self.kw):
            for part in run:                        # partition order, as poisson_map_sums
                totals = [passes.merge(a, v) for a, v in zip(totals, part)]
        self.next += 1
        if self.next >= self.steps:
            self.release()
        return totals

    def release(self):
        """Forget the blocks: the workers free them (no reference is left to their keys)."""
        self.blocks = None


def _partition_frame(df, select):
    """The rows of one DataFrame partition that ``select`` keeps (``to_dataset`` of a view)."""
    i = _selected_positions(len(df), select)
    return df if i is None else df.iloc[i]


class DaskRows:
    """A row source for :mod:`privfair.data.passes` whose chunks live in a Dask DataFrame's
    partitions: :meth:`map_sum` maps the pass over the partitions on the workers and merges
    the partial sums on the client."""

    y = True    # the rows carry labels (fit_score(data) checks this)

    def __init__(self, ddf, schema, n, chunk_rows=None, scheduler=None, arrays=None,
                 select=None, parts=None, prefetch_bytes=PREFETCH_BYTES):
        self.ddf, self.schema, self.n = ddf, schema, int(n)
        #: per worker, the budget for the samples of steps drawn ahead (:func:`prefetch_steps`)
        self.prefetch_bytes = prefetch_bytes
        #: privfair's reader's partitions (:class:`ParquetPart`), aligned with ``ddf``'s, or None
        self.parts = parts
        self.chunk_rows, self.scheduler, self.arrays = chunk_rows, scheduler, arrays
        #: per partition, the rows a held-out split keeps ((seed, k, keep) or None), or None
        self.select = select

    def _partitions(self) -> list:
        """What a pass task reads: privfair's Parquet parts, else the DataFrame's partitions."""
        return list(self.parts) if self.parts is not None else self.ddf.to_delayed()

    def _selects(self, count):
        return [None] * count if self.select is None else list(self.select)

    @property
    def n_features(self) -> int:
        return len(self.schema.features)

    def partials(self, fn, *params) -> list:
        """The pass's partial sum of every partition (computed on the workers)."""
        dask, _ = _dask()
        if self.arrays is not None:      # partitions already converted, held by the workers
            task = dask.delayed(_arrays_pass, pure=True)
            tasks = [task(part, self.chunk_rows, fn, params, sel)
                     for part, sel in zip(self.arrays, self._selects(len(self.arrays)))]
        else:
            task = dask.delayed(_partition_pass, pure=True)
            parts = self._partitions()
            tasks = [task(part, self.schema, self.chunk_rows, fn, params, sel)
                     for part, sel in zip(parts, self._selects(len(parts)))]
        kw = {} if self.scheduler is None else {"scheduler": self.scheduler}
        return list(dask.compute(*tasks, **kw))

    def map_sum(self, fn, *params):
        """Σ over partitions of the pass ``fn(chunk, *params)``, merged on the client."""
        total = None
        for part in self.partials(fn, *params):
            total = passes.merge(total, part)
        return total

    def poisson_map_sum(self, fn, rate, source, *params):
        """The pass over a Poisson(``rate``) sample of the rows (each row independently), merged
        on the client.  The client draws one 256-bit seed per partition from ``source`` (the
        run's secure source, :func:`privfair.data.passes.poisson_seeds`) and sends it with that
        partition's task; the worker samples its partition's rows from it.  Independent seeds
        make the partitions' samples independent, so their union is one Poisson sample of all
        the rows.  The seeds and the sample are secret: they travel inside the cluster (the
        trust boundary) and are never released."""
        dask, _ = _dask()
        parts = self.arrays if self.arrays is not None else self._partitions()
        seeds = passes.poisson_seeds(source, len(parts))
        sels = self._selects(len(parts))
        if self.arrays is not None:
            task = dask.delayed(_arrays_poisson_pass, pure=False)
            tasks = [task(p, self.chunk_rows, rate, seed, fn, params, sel)
                     for p, seed, sel in zip(parts, seeds, sels)]
        else:
            task = dask.delayed(_partition_poisson_pass, pure=False)
            tasks = [task(p, self.schema, self.chunk_rows, rate, seed, fn, params, sel)
                     for p, seed, sel in zip(parts, seeds, sels)]
        kw = {} if self.scheduler is None else {"scheduler": self.scheduler}
        total = None
        for part in dask.compute(*tasks, **kw):
            total = passes.merge(total, part)
        return total

    def poisson_map_sums(self, jobs, source) -> list:
        """Several passes over **independent** Poisson samples in one round trip: ``jobs`` =
        [(fn, rate, params), ...]; returns each job's merged sum (None where nothing was
        sampled), as ``[self.poisson_map_sum(fn, rate, source, *params) for ...]`` would.

        The client draws one 256-bit seed per (job, partition) from ``source`` (job by job,
        :func:`privfair.data.passes.poisson_seeds`); one task per partition converts the
        partition once and runs every job on its own seeded sample.  Why (#19): a
        ``lagrangian_sgda`` step under ``protect="sensitive"`` reads the private batch B_t and
        the independent public batch B'_t; one round trip instead of two halves the per-step
        latency.  The seeds and the samples are secret, as in :meth:`poisson_map_sum`."""
        dask, _ = _dask()
        parts = self.arrays if self.arrays is not None else self._partitions()
        k = len(parts)
        seeds = passes.poisson_seeds(source, k * len(jobs))
        sels = self._selects(k)
        tasks = []
        for i, (p, sel) in enumerate(zip(parts, sels)):
            mine = [(fn, rate, seeds[j * k + i], params)
                    for j, (fn, rate, params) in enumerate(jobs)]
            if self.arrays is not None:
                tasks.append(dask.delayed(_arrays_poisson_passes, pure=False)(
                    p, self.chunk_rows, mine, sel))
            else:
                tasks.append(dask.delayed(_partition_poisson_passes, pure=False)(
                    p, self.schema, self.chunk_rows, mine, sel))
        kw = {} if self.scheduler is None else {"scheduler": self.scheduler}
        totals = [None] * len(jobs)
        for part in dask.compute(*tasks, **kw):
            totals = [passes.merge(t, v) for t, v in zip(totals, part)]
        return totals

    def row_bytes(self) -> int:
        """Bytes a stored sampled row takes on a worker (:class:`SampleBlock`): the features in
        the schema's dtypes (the files' own for privfair's reader, else float64) and the two
        codes — from the public schema, no row."""
        if self.parts is not None:
            try:
                dt = _feature_dtype([np.empty(0, self.ddf[c].dtype)
                                     for c in self.schema.features])
            except TypeError:           # an extension dtype: count float64 (an upper bound)
                dt = np.dtype(np.float64)
        else:
            dt = np.dtype(np.float64)
        return (dt.itemsize * len(self.schema.features)
                + _code_dtype(len(self.schema.label_values)).itemsize
                + _code_dtype(len(self.schema.group_values)).itemsize)

    def prefetch_steps(self, rates, steps=None) -> int:
        """K, the steps whose samples one read draws (:func:`prefetch_steps` of public
        quantities: n, the rates, :meth:`row_bytes`, the cluster's workers, the budget; at
        most ``steps``, the steps left); 1 — no prefetch — where ``steps`` is unknown, and for
        persisted partitions (a step already reads no file there: its cost is the sampling and
        the round trip, which prefetching does not remove)."""
        if self.arrays is not None or not self.prefetch_bytes or steps is None:
            return 1            # (steps unknown: samples drawn ahead might never be read)
        return prefetch_steps(self.n, rates, self.row_bytes(), _cluster_workers(self.scheduler),
                              self.prefetch_bytes, steps)

    def poisson_prefetch(self, rates, steps, source) -> PoissonStock:
        """The Poisson samples of the next ``steps`` steps, one per rate in ``rates`` a step
        (B_t, and B′_t under ``protect="sensitive"``), drawn by **one read** of every partition
        and kept on the workers; :meth:`PoissonStock.map_sums` then runs step after step as
        :meth:`poisson_map_sums` would, each over its own stored sample.

        Theorem (the samples' law is unchanged).  For every step t and job j the client draws
        one 256-bit seed per partition from ``source`` — the same words, in the same order, as
        ``steps`` successive calls of :meth:`poisson_map_sums` — and the worker draws from it
        ``passes.poisson_rows(n_partition, rate, seed)``, the sampler every pass uses.  Poisson
        membership depends on the seed and the rate only, never on the rows, θ or an earlier
        release, so drawing it before θ_t is known changes nothing: the samples of different
        (t, j, partition) come from distinct independent seeds, hence each step's B_t is an
        independent Poisson(q) sample of all the rows, independent of B′_t and of every other
        step, exactly as without prefetching.  The stored rows are those the pass would have
        gathered, in the same chunks, cast to float64 the same way (:meth:`SampleBlock.run`:
        the same partial sums, bit for bit), and step t's pass reads only step t's sample.
        So each step is the same subsampled Gaussian release and the run the same
        ``subsampled_gaussian_event(z, 1, q, count=T)``: the accountant and the certificate
        are unchanged.  Precondition: K is chosen from public quantities
        (:meth:`prefetch_steps`), so how the work is batched reveals nothing either.

        What stays on the workers: the seeds' samples (rows in the file's feature type, the
        codes), freed step by step and released after the last stored step; what travels is
        the seeds (never released, as in :meth:`poisson_map_sum`) and, per step, θ and the
        coefficient tables; what comes back is each step's sums only."""
        return PoissonStock(self, tuple(float(r) for r in rates), int(steps), source)


class DaskDataset:
    """A dataset read by Dask: the public schema and a graph, no rows (see the module doc).

    Attributes
    ----------
    n, n_features, feature_names, groups, group_values, label_values, sensitive_names
        As on :class:`privfair.Dataset`; ``n`` is counted once, at construction.
    ddf : dask.dataframe.DataFrame -- the rows (read lazily, partition by partition).

    Methods that read rows are passes on the workers: :meth:`counts`, :meth:`rows` (for
    ``pf.scores.fit_score(data)``, ``logistic_from_statistic`` and any pass),
    ``pf.estimate_group_mass_bound(data, ε)`` (counts merged, noise drawn on the client).
    """

    groups_declared = True
    labels_declared = True
    #: the rows stay on the workers: code that would read per-row arrays (``y``, ``group``,
    #: ``X``) on the client reads sums through :meth:`rows` passes instead (``pf.rates``,
    #: the ``cells`` backend, the held-out check)
    rows_on_workers = True
    #: per partition, the rows a held-out split keeps (:meth:`split_holdout`), or None: all
    _select = None

    # groups named by name or value, as on Dataset (the same code: they read the public schema)
    group_index = Dataset.group_index
    find_group = Dataset.find_group
    group_choices = Dataset.group_choices

    #: privfair's reader's partitions (:class:`ParquetPart`, aligned with ``ddf``'s), or None:
    #: passes read ``ddf``'s partitions (pandas) instead
    parts = None
    #: per Dask worker, the bytes of sampled rows a ``lagrangian_sgda`` run may keep for the
    #: steps it draws ahead (:meth:`DaskRows.poisson_prefetch`; 0: one read a step, as before)
    prefetch_bytes = PREFETCH_BYTES

    def __init__(self, ddf, *, label, sensitive, groups, labels=(0, 1), features=None,
                 chunk_rows=None, scheduler=None, parts=None):
        _dask()
        cols = [str(c) for c in ddf.columns]
        sens = (sensitive,) if isinstance(sensitive, str) else tuple(sensitive)
        for field, names in (("label", (label,)), ("sensitive", sens)):
            missing = [c for c in names if c not in cols]
            if missing:
                raise InvalidInputError(field, missing[0], f"name a column of the data: {cols}")
        if features is None:
            features = [c for c in cols if c != label and c not in sens]
        features = tuple(str(c) for c in features)
        if not features:
            raise DataError("features", [], "the data needs at least one feature column")
        for c in features:
            if c not in cols:
                raise InvalidInputError("features", c, f"name columns of the data: {cols}")
            kind = ddf[c].dtype.kind      # the schema (meta): no row is read
            if kind not in "biuf":
                raise DataError(f"X[{c!r}]", str(ddf[c].dtype),
                                "features must be numeric; one-hot encode categorical columns "
                                "before building the dataset")
        if groups is None or isinstance(groups, str) or not hasattr(groups, "__iter__"):
            raise InvalidInputError("groups", groups, "declare the public list of groups, e.g. "
                                    "groups=['F', 'M'] (a Dask dataset never reads it from the "
                                    "rows)")
        gvals = tuple(tuple(_plain(v) for v in g) if isinstance(g, (tuple, list)) else _plain(g)
                      for g in groups)
        lvals = tuple(_plain(v) for v in labels)
        if not gvals or len({_name(v) for v in gvals}) != len(gvals):
            raise InvalidInputError("groups", list(groups), "declare at least one group, "
                                    "with distinct names")
        if len(lvals) < 2 or len(set(lvals)) != len(lvals):
            raise DataError("labels", list(labels), "declare at least two distinct labels")
        self.ddf, self.parts = ddf, (None if parts is None else tuple(parts))
        self.schema = Schema(features, str(label), sens, gvals, lvals)
        self.chunk_rows, self.scheduler = chunk_rows, scheduler
        self.feature_names = list(features)
        self.sensitive_names = list(sens)
        self.group_values = list(gvals)
        self.groups = self.schema.group_names
        self.label_values = list(lvals)
        self._validate()

    def _validate(self):
        """One pass: count the rows and refuse non-finite features or undeclared values (the
        checks :class:`privfair.Dataset` makes at construction)."""
        dask, _ = _dask()
        task = dask.delayed(_check_partition, pure=True)
        kw = {} if self.scheduler is None else {"scheduler": self.scheduler}
        parts = dask.compute(*[task(p, self.schema) for p in self._partitions()], **kw)
        rows, nonfinite, bad_label, bad_group = np.sum(parts, axis=0) if parts else (0, 0, 0, 0)
        # rows per partition (counts): the public layout a held-out split allocates over
        self._partition_rows = tuple(int(p[0]) for p in parts)
        if rows == 0:
            raise DataError("data", "0 rows", "a dataset needs at least one row")
        if nonfinite:
            raise DataError("X", "NaN or infinite", "some rows have NaN or infinite feature "
                            "values; impute or drop them before building the dataset")
        if bad_label:
            raise DataError(self.schema.label, "undeclared label", f"some rows have a label "
                            f"outside the declared set {self.label_values}; fix them or declare "
                            "labels=[...] including it")
        if bad_group:
            raise DataError("sensitive", "undeclared group", f"some rows are in a group not "
                            f"among groups={self.groups}; add it to groups")
        self.n = int(rows)

    def _partitions(self) -> list:
        """What a pass task reads: privfair's Parquet parts, else the DataFrame's partitions."""
        return list(self.parts) if self.parts is not None else self.ddf.to_delayed()

    # -- shape and schema (as on Dataset) ---------------------------------------------------
    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    @property
    def n_groups(self) -> int:
        return len(self.groups)

    @property
    def n_labels(self) -> int:
        return len(self.label_values)

    def __len__(self) -> int:
        return self.n

    def check_public_schema(self, privacy) -> None:
        """Nothing to refuse: a Dask dataset's groups and labels are always declared."""

    def rows(self, chunk_rows=None) -> DaskRows:
        """The rows as a pass source run on the Dask workers."""
        return DaskRows(self.ddf, self.schema, self.n, chunk_rows or self.chunk_rows,
                        self.scheduler, getattr(self, "_arrays", None), self._select,
                        self.parts, self.prefetch_bytes)

    def split_holdout(self, m: int, source) -> tuple:
        """(training view, held-out view): a uniformly random ``m``-subset of the rows held out,
        chosen by a public coin, without moving a row (the Dask part of
        :func:`privfair.planning.holdout.partition`).

        The client draws 4 words from the run's ``source`` (as the in-memory split does) and
        from them, independently of the data: how many of the m held-out rows each partition
        gives (a multivariate hypergeometric draw over the partitions' row counts, so the m rows
        are a uniform m-subset of all n) and one seed per partition, from which the worker picks
        that many of its rows.  Both views are this dataset with a selection: every later pass
        (the backend's on the training view, the check's on the held-out view) converts a
        partition and keeps its selected rows on the worker; nothing travels but the seeds
        and the counts.  The draw differs from the in-memory :func:`~privfair.planning.holdout.
        split` (another way to draw the same distribution), so a Dask solve and an in-memory
        solve of the same rows hold out different rows."""
        if self._select is not None:
            raise InvalidInputError("data", "a held-out split's part", "split the whole dataset")
        sizes = np.asarray(self._partition_rows, dtype=np.int64)
        m = int(m)
        if not 0 <= m <= int(sizes.sum()):
            raise InvalidInputError("m", m, f"hold out between 0 and {int(sizes.sum())} rows")
        gen = np.random.default_rng(source.words(4))
        ks = gen.multivariate_hypergeometric(sizes, m) if sizes.size else sizes
        seeds = gen.integers(0, 2 ** 32, size=(sizes.size, 4), dtype=np.uint64)
        picks = [(tuple(int(w) for w in seed), int(k)) for seed, k in zip(seeds, ks)]
        return (self._view(tuple((sd, k, "train") for sd, k in picks), self.n - m),
                self._view(tuple((sd, k, "held") for sd, k in picks), m))

    def _view(self, select, n) -> "DaskDataset":
        """This dataset restricted to the rows ``select`` keeps (no pass: ``n`` is known)."""
        import copy

        out = copy.copy(self)
        out._select, out.n = select, int(n)
        return out

    def soft_counts(self, rule) -> np.ndarray:
        """C[g, y, ŷ]: the expected confusion counts of the randomized ``rule`` (a
        :class:`privfair.Result`; its ``predict_proba(X)``) on these rows, as a pass on the
        workers — the held-out check's statistic (:func:`privfair.planning.holdout.soft_counts`
        sends a copy holding the decision set, decisions and weights only, public); the
        (G, L, L) sums come back.  A rule that reads the group (``pf.PostProcessed``) is given
        each row's declared group value on the worker (the public schema, #19)."""
        G, L = self.n_groups, self.n_labels
        extra = ((list(self.group_values),)
                 if getattr(rule.decision_set, "needs_sensitive", False) else ())
        C = self.rows().map_sum(passes.rule_soft_counts, rule, G, L, *extra)
        return (np.zeros((G, L, L)) if C is None else np.asarray(C, dtype=float)).reshape(G, L, L)

    def persist(self) -> "DaskDataset":
        """Read every partition once and keep it in the workers' memory (``dask.persist``):
        later passes skip reading and decoding the files.  Partitions read by privfair's
        Parquet reader are kept as the files' columns in their own type and the codes
        (:class:`ColumnRows`: rows × (the file's bytes per row of the features + 16) — float32
        features: half a float64 X — each chunk cast to float64 when a pass reads it);
        others as (X float64, label codes, group codes), rows × (features + 2) × 8 bytes.
        Returns ``self``."""
        dask, _ = _dask()
        task = dask.delayed(_persisted_columns if self.parts is not None else partition_arrays,
                            pure=True)
        parts = [task(p, self.schema) for p in self._partitions()]
        kw = {} if self.scheduler is None else {"scheduler": self.scheduler}
        self._arrays = list(dask.persist(*parts, **kw))
        return self

    def counts(self) -> np.ndarray:
        """Rows per (group, label): (n_groups, n_labels) int — private, as on Dataset."""
        c = self.rows().map_sum(passes.group_label_counts, self.n_groups, self.n_labels)
        return np.asarray(c).reshape(self.n_groups, self.n_labels)

    def merge_groups(self, merges: dict):
        """Not on Dask yet: a Dask dataset's groups are the values of its sensitive column, so
        coarser groups are declared where it is built (refused with the way to do it)."""
        raise InvalidInputError(
            "merges", merges, "merging groups of a Dask dataset is not implemented; map the "
            "sensitive column in the Dask DataFrame (ddf[col] = ddf[col].replace({...})) and "
            "build it with pf.Dataset.from_dask(ddf, ..., groups=[the coarser groups])")

    def sample(self, frac: float, random_state=None) -> "DaskDataset":
        """A Bernoulli(``frac``) subsample of the rows, same schema (Dask's ``sample``)."""
        if not (isinstance(frac, numbers.Real) and 0 < frac <= 1):
            raise InvalidInputError("frac", frac, "pass a fraction in (0, 1]")
        if self._select is not None:
            raise InvalidInputError("data", "a held-out split's part", "sample the whole dataset")
        return DaskDataset(self.ddf.sample(frac=float(frac), random_state=random_state),
                           label=self.schema.label, sensitive=self.schema.sensitive,
                           groups=self.group_values, labels=self.label_values,
                           features=self.feature_names, chunk_rows=self.chunk_rows,
                           scheduler=self.scheduler)

    def to_dataset(self, max_rows: int = 10_000_000):
        """The rows in memory as a :class:`privfair.Dataset` with the same schema (refused
        above ``max_rows``, a public cap: pass a larger one knowingly)."""
        if self.n > max_rows:
            raise InvalidInputError("max_rows", max_rows, f"the dataset has more rows; sample "
                                    "it first (data.sample(frac)) or raise max_rows")
        kw = {} if self.scheduler is None else {"scheduler": self.scheduler}
        if self._select is None:
            df = self.ddf.compute(**kw)
        else:                   # a held-out split's part: the rows it keeps, in row order
            import pandas as pd

            dask, _ = _dask()
            task = dask.delayed(_partition_frame, pure=True)
            df = pd.concat(dask.compute(*[task(p, sel) for p, sel in zip(
                self.ddf.to_delayed(), self._select)], **kw))
        X, y, g = self.schema.arrays(df)
        sens = df[list(self.schema.sensitive)] if len(self.schema.sensitive) > 1 \
            else df[self.schema.sensitive[0]]
        return Dataset(X, np.asarray(self.label_values, dtype=object)[y], sens,
                       labels=self.label_values, group_names=self.group_values,
                       feature_names=self.feature_names, sensitive_names=self.sensitive_names)

    def __repr__(self):
        part = "" if self._select is None else f"{self._select[0][2]} part, "
        return (f"DaskDataset({part}n={self.n}, n_features={self.n_features}, "
                f"partitions={self.ddf.npartitions}, labels={self.label_values}, "
                f"groups={self.groups})")


def from_dask(ddf, *, label, sensitive, groups, labels=(0, 1), features=None, chunk_rows=None,
              scheduler=None) -> DaskDataset:
    """A :class:`DaskDataset` over a Dask DataFrame (see :meth:`privfair.Dataset.from_dask`)."""
    return DaskDataset(ddf, label=label, sensitive=sensitive, groups=groups, labels=labels,
                       features=features, chunk_rows=chunk_rows, scheduler=scheduler)


def from_parquet(path, *, label, sensitive, groups, labels=(0, 1), features=None,
                 chunk_rows=None, scheduler=None, **read_kw) -> DaskDataset:
    """A :class:`DaskDataset` over Parquet files (see :meth:`privfair.Dataset.from_parquet`).

    Files, directories and globs — local or at any fsspec URL — with no ``read_kw`` but
    ``storage_options`` are read by privfair's own reader (:func:`parquet_parts`: pyarrow, one
    partition per file, no pandas on the passes' path; ``ddf`` is then built over the same
    partitions, so its partition i is part i); anything else by
    ``dask.dataframe.read_parquet(path, **read_kw)``."""
    _, dd = _dask()
    parts = None
    if set(read_kw) <= {"storage_options"}:
        sens = [sensitive] if isinstance(sensitive, str) else list(sensitive)
        needed = [*(features or ()), label, *sens]
        parts = parquet_parts(path, needed, read_kw.get("storage_options"))
    if parts is None:
        try:
            ddf = dd.read_parquet(path, **read_kw)
        except FileNotFoundError as exc:
            # dask's message names its pandas backend, not what to change
            raise _not_found(path) from exc
    else:
        meta = parts[0].file().schema_arrow.empty_table().to_pandas()
        ddf = dd.from_map(ParquetPart.frame, parts, meta=meta, label="privfair-read-parquet",
                          enforce_metadata=False)
    return DaskDataset(ddf, label=label, sensitive=sensitive, groups=groups, labels=labels,
                       features=features, chunk_rows=chunk_rows, scheduler=scheduler,
                       parts=parts)

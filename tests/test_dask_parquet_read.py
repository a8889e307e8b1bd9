"""privfair's own Parquet reader (#19): ``from_parquet`` of local files reads each partition
with pyarrow (no pandas on the passes' path), casts the features into a Fortran-ordered float64
X (in the worker thread's reused buffer for a pass) and codes the label and group columns by a
vectorized lookup — and gives exactly the arrays, counts and checks of dask's reader."""

import numpy as np
import pytest

pytest.importorskip("dask.dataframe", reason="the Dask engine is the optional extra "
                                              "privfair[dask]")
pytest.importorskip("distributed", reason="the Dask engine's tests start a "
                                          "distributed.LocalCluster")
pa = pytest.importorskip("pyarrow", reason="Parquet files are read through pyarrow")

import dask.dataframe as dd  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import privfair as pf  # noqa: E402
from privfair.data import dask_data, passes  # noqa: E402
from privfair.errors import DataError  # noqa: E402
from privfair.privacy.randomness import as_source  # noqa: E402
from privfair.statistics.scores import fit_score  # noqa: E402

N = 3000          # rows per file


def _table(seed, n=N, group=None, label=None):
    rng = np.random.default_rng(seed)
    sex = rng.integers(0, 2, n) if group is None else group
    y = (rng.random(n) < 0.4).astype(np.int64) if label is None else label
    return pa.table({
        "x0": rng.normal(size=n).astype(np.float32),          # float32 on disk
        "x1": rng.normal(size=n),                              # float64
        "x2": rng.integers(-3, 4, n).astype(np.int32),         # an integer feature
        "x3": rng.random(n) < 0.5,                             # a boolean feature
        "sex": sex, "race": rng.choice(["a", "b"], n), "y": y})


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    path = tmp_path_factory.mktemp("pf-read")
    for i in range(3):      # several row groups per file: chunked Arrow columns
        pq.write_table(_table(i), str(path / f"part-{i}.parquet"), row_group_size=700)
    return str(path)


KW = dict(label="y", sensitive="sex", groups=[0, 1], labels=[0, 1],
          features=["x0", "x1", "x2", "x3"])


def _both(path, **kw):
    """The same files through privfair's reader and through dask's (pandas partitions)."""
    kw = {**KW, **kw}
    ours = pf.Dataset.from_parquet(path, **kw)
    assert ours.parts is not None                  # privfair's reader was used
    theirs = pf.Dataset.from_dask(dd.read_parquet(path), **kw)
    return ours, theirs


def test_the_arrays_are_dask_readers_arrays(files):
    # partition by partition, bit for bit: X (float32, float64, int and bool columns cast to
    # float64), the label codes and the group codes
    ours, theirs = _both(files)
    for part, frame in zip(ours.parts, theirs.ddf.to_delayed()):
        X, y, g = dask_data.partition_arrays(part, ours.schema)
        X2, y2, g2 = dask_data.partition_arrays(frame.compute(scheduler="sync"), ours.schema)
        assert X.dtype == np.float64 and X.shape == X2.shape and X.flags.f_contiguous
        np.testing.assert_array_equal(X, X2)
        np.testing.assert_array_equal(y, y2)
        np.testing.assert_array_equal(g, g2)
    assert ours.ddf.npartitions == 3 and ours.n == theirs.n == 3 * N


@pytest.mark.parametrize("kw", [dict(sensitive="race", groups=["a", "b"]),           # strings
                                dict(sensitive=["sex", "race"],                        # several
                                     groups=[(0, "a"), (0, "b"), (1, "a"), (1, "b")])])
def test_string_and_intersectional_groups_match_by_name(files, kw):
    ours, theirs = _both(files, **kw)
    with dask_config():
        np.testing.assert_array_equal(ours.counts(), theirs.counts())


def dask_config():
    import dask

    return dask.config.set(scheduler="sync")


def test_passes_on_the_cluster_give_the_in_memory_numbers(client, files):
    ours, theirs = _both(files)
    mem = theirs.to_dataset()
    np.testing.assert_array_equal(ours.counts(), mem.counts())          # integers: exact
    np.testing.assert_allclose(fit_score(ours), fit_score(mem), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(ours.to_dataset().X, mem.X)           # to_dataset: frames
    # a pass returning a view of its chunk (the row attaining the maximum): copied out of
    # the reused buffer before the next task overwrites it
    for design in (passes.PLAIN, passes.INTERCEPT):
        got = ours.rows().map_sum(passes.max_norm_rows, design)
        want = mem.rows().map_sum(passes.max_norm_rows, design)
        for g, w in zip(got, want):
            assert g.value == w.value
            np.testing.assert_array_equal(g.item, w.item)
    # a held-out split's views and persisted arrays read the same partitions
    train, held = ours.split_holdout(1000, as_source(3))
    np.testing.assert_array_equal(train.counts() + held.counts(), mem.counts())
    np.testing.assert_array_equal(np.sort(held.to_dataset().X[:, 1]),
                                  np.sort(np.setdiff1d(mem.X[:, 1], train.to_dataset().X[:, 1])))
    before = fit_score(ours)
    assert ours.persist() is ours and ours.rows().arrays is not None
    kept = ours.rows().arrays[0].compute()        # the file's columns, float32 kept
    assert isinstance(kept, dask_data.ColumnRows) and kept.cols[0].dtype == np.float32
    np.testing.assert_array_equal(ours.counts(), mem.counts())
    np.testing.assert_array_equal(fit_score(ours), before)      # the same chunks, the same sums
    train, held = ours.split_holdout(1000, as_source(3))       # persisted views select rows
    np.testing.assert_array_equal(train.counts() + held.counts(), mem.counts())
    args = (passes.INTERCEPT, "y")
    np.testing.assert_allclose(ours.rows().poisson_map_sum(passes.weighted_sum, 0.1, 5, *args),
                               theirs.rows().poisson_map_sum(passes.weighted_sum, 0.1, 5, *args),
                               rtol=1e-12)


def first_rows(chunk):
    """A pass returning a view of its chunk: the chunk's first row."""
    return passes.Concat(chunk.X[0])


def test_views_of_the_reused_buffer_are_copied_out(client, files):
    # each worker thread reuses one buffer for X from task to task; a partial that is a view
    # of it would be overwritten by the next partition's rows before the client merges it
    ours, theirs = _both(files)
    got = ours.rows(chunk_rows=N).map_sum(first_rows).values     # one chunk a file
    want = theirs.to_dataset().X[::N].reshape(-1)
    np.testing.assert_array_equal(got, want)


def test_poisson_samples_and_held_out_views_read_the_same_rows(files):
    # the same seeds sample the same rows of the same partitions through either reader (a
    # sampled batch is gathered from the columns); a held-out split's part likewise
    ours, theirs = _both(files)
    args = (passes.INTERCEPT, "y")
    with dask_config():
        for rate in (0.05, 1.0):
            np.testing.assert_allclose(ours.rows().poisson_map_sum(passes.weighted_sum, rate, 7,
                                                                   *args),
                                       theirs.rows().poisson_map_sum(passes.weighted_sum, rate,
                                                                     7, *args), rtol=1e-12)
        jobs = [(passes.weighted_sum, 0.1, args), (passes.group_label_counts, 0.2, (2, 2))]
        for a, b in zip(ours.rows().poisson_map_sums(jobs, 3),
                        theirs.rows().poisson_map_sums(jobs, 3)):
            np.testing.assert_allclose(a, b, rtol=1e-12)
        for x, z in zip(ours.split_holdout(500, as_source(1)),
                        theirs.split_holdout(500, as_source(1))):
            np.testing.assert_array_equal(x.counts(), z.counts())
            np.testing.assert_allclose(x.rows().map_sum(passes.weighted_sum, *args),
                                       z.rows().map_sum(passes.weighted_sum, *args), rtol=1e-12)


def test_large_files_split_at_row_groups(files, monkeypatch):
    # a file whose float64 X would exceed PART_BYTES becomes several partitions of whole
    # row groups (700 rows each here); the rows and their order do not change
    monkeypatch.setattr(dask_data, "PART_BYTES", 8 * 7 * 1500)       # ≤ 2 row groups
    parts = dask_data.parquet_parts(files, ["y", "sex"])
    assert [p.row_groups for p in parts[:3]] == [(0, 1), (2, 3), (4,)]
    ours, theirs = _both(files)
    assert ours.ddf.npartitions == len(parts) == 9
    with dask_config():
        np.testing.assert_array_equal(ours.counts(), theirs.counts())
        np.testing.assert_array_equal(ours.to_dataset().X, theirs.to_dataset().X)


def test_undeclared_values_and_nulls_are_refused(tmp_path):
    t = _table(0, group=np.array([0, 1, 2] * (N // 3)))
    pq.write_table(t, str(tmp_path / "g.parquet"))
    with dask_config(), pytest.raises(DataError, match="not among groups"):
        pf.Dataset.from_parquet(str(tmp_path / "g.parquet"), **KW)
    t = _table(0, label=np.array([0, 1, 5] * (N // 3)))
    pq.write_table(t, str(tmp_path / "y.parquet"))
    with dask_config(), pytest.raises(DataError, match="outside the declared set"):
        pf.Dataset.from_parquet(str(tmp_path / "y.parquet"), **KW)
    x1 = pa.array([1.0, None] * (N // 2), type=pa.float64())
    pq.write_table(_table(0).set_column(1, "x1", x1), str(tmp_path / "n.parquet"))
    with dask_config(), pytest.raises(DataError, match="NaN or infinite"):
        pf.Dataset.from_parquet(str(tmp_path / "n.parquet"), **KW)


def test_declared_labels_other_than_0_1(tmp_path):
    # the integer lookup maps the declared values to their positions, anything else to −1
    pq.write_table(_table(0, label=np.array([5, 2, 2] * (N // 3))), str(tmp_path / "a.parquet"))
    with dask_config():
        ours, theirs = _both(str(tmp_path), labels=[2, 5])
        np.testing.assert_array_equal(ours.counts(), theirs.counts())
        assert ours.counts().sum(axis=0).tolist() == [2 * N // 3, N // 3]


def test_globs_and_urls_are_read_by_privfairs_reader(files):
    # a glob and a file:// URL of local files: expanded by fsspec, then memory-mapped as before
    ours_dir = pf.Dataset.from_parquet(files, **KW)
    with dask_config():
        for path in (files + "/part-*.parquet", "file://" + files, [files + "/part-[01].parquet",
                                                                  files + "/part-2.parquet"]):
            data = pf.Dataset.from_parquet(path, **KW)
            assert [p.path for p in data.parts] == [p.path for p in ours_dir.parts]
            assert all(p.filesystem is None for p in data.parts)           # local: mmap
            np.testing.assert_array_equal(data.counts(), ours_dir.counts())
        # read options other than storage_options: dask's reader
        data = pf.Dataset.from_parquet(files, **KW, columns=["x0", "x1", "x2", "x3", "y", "sex"])
        assert data.parts is None and data.n == 3 * N
    assert dask_data.parquet_parts(files, ["nope"]) is None      # a column not in the files
    with pytest.raises(FileNotFoundError):         # a local glob that matches nothing
        dask_data.parquet_parts(files + "/nothing-*.parquet")


def test_a_non_local_filesystem_is_read_through_fsspec(files):
    """Files in an fsspec filesystem other than the local disk (here fsspec's in-memory one,
    standing in for s3:// or gs://, with ``storage_options`` as dask's reader takes them) go
    through privfair's reader too: each part carries the filesystem, and the arrays, counts
    and a pass are those of the same files on disk."""
    fsspec = pytest.importorskip("fsspec")
    mem = fsspec.filesystem("memory")
    for i in range(3):
        with open(f"{files}/part-{i}.parquet", "rb") as src, \
                mem.open(f"/pf-remote/part-{i}.parquet", "wb") as dst:
            dst.write(src.read())
    local = pf.Dataset.from_parquet(files, **KW)
    with dask_config():
        remote = pf.Dataset.from_parquet("memory://pf-remote", **KW, storage_options={})
        assert remote.parts is not None and len(remote.parts) == 3
        assert all(p.filesystem is not None for p in remote.parts)
        np.testing.assert_array_equal(remote.counts(), local.counts())
        np.testing.assert_array_equal(remote.to_dataset().X, local.to_dataset().X)
        args = (passes.INTERCEPT, "y")
        np.testing.assert_array_equal(remote.rows().map_sum(passes.weighted_sum, *args),
                                      local.rows().map_sum(passes.weighted_sum, *args))
    mem.rm("/pf-remote", recursive=True)


@pytest.mark.parametrize("where", ["missing-dir", "missing-file.parquet", "*.nothing"])
def test_a_path_with_no_parquet_file_is_a_typed_error_naming_it(tmp_path, where):
    """Nothing at the path: privfair's error names ``path`` and what to pass, and is still a
    FileNotFoundError (dask's own message named its pandas backend)."""
    from privfair.errors import DataNotFoundError

    path = str(tmp_path / where)
    with pytest.raises(DataNotFoundError, match="path=.*no Parquet file there") as exc:
        pf.Dataset.from_parquet(path, label="y", sensitive="sex", groups=[0, 1])
    assert isinstance(exc.value, FileNotFoundError) and isinstance(exc.value, DataError)
    assert exc.value.field == "path" and exc.value.value == path

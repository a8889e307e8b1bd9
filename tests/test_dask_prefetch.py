"""Several ``lagrangian_sgda`` steps' Poisson samples drawn by one read of a Dask dataset (#19).

``DaskRows.poisson_prefetch`` reads every partition once, draws the samples of the next K steps
from the seeds K successive ``poisson_map_sums`` calls would draw, keeps the sampled rows on the
workers, and runs each step's passes over its own stored sample.  Checked here: a step's sums
are those of the direct pass over the same seeds' rows, bit for bit (pandas and Parquet
partitions); the K steps' samples are independent (their overlaps are the Binomial's, not a
reused sample's); a whole solve with prefetching gives the in-memory rule at q = 1, ε = ∞ and
the in-memory certificate; K depends on public quantities only."""

import math

import numpy as np
import pytest

pytest.importorskip("dask.dataframe", reason="the Dask engine is the optional extra "
                                              "privfair[dask]")
pytest.importorskip("distributed", reason="the Dask engine's tests start a "
                                          "distributed.LocalCluster")

import privfair as pf  # noqa: E402
from privfair.data import dask_data, passes  # noqa: E402
from privfair.privacy.randomness import as_source  # noqa: E402
from _frames import GROUPS, features, in_memory, on_dask, sex_income_frame  # noqa: E402
from _frames import parity_problem, solve_parity  # noqa: E402

N, D, PARTS = 2000, 4, 3


@pytest.fixture(scope="module")
def frame():
    return sex_income_frame(N, D, 21, 0.4, 0.8, (1.5, 0.5), 0.8)


def _parquet(df, path):
    """The frame as PARTS Parquet files, float32 features (read by privfair's reader)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for i, part in enumerate(np.array_split(np.arange(len(df)), PARTS)):
        sub = df.iloc[part]
        cols = {c: pa.array(sub[c].to_numpy(np.float32)) for c in features(df)}
        cols.update(sex=pa.array(sub["sex"].to_numpy()), income=pa.array(sub["income"]))
        pq.write_table(pa.table(cols), str(path / f"part-{i}.parquet"))
    data = pf.Dataset.from_parquet(str(path), label="income", sensitive="sex", groups=GROUPS,
                                   chunk_rows=64)
    assert data.parts is not None              # privfair's reader: ColumnRows partitions
    return data


def _datasets(df, kind, tmp_path):
    if kind == "parquet":
        return _parquet(df, tmp_path)
    data = on_dask(df, PARTS)
    data.chunk_rows = 64                       # several chunks a sample: the starts matter
    return data


def sums_pass(chunk, w):
    """Every per-row quantity a pass reads, summed: rows, Σx, Σy, Σgroup, Σ x·w, the chunk's
    start (which differs if the chunking or the offsets do)."""
    X = np.asarray(chunk.X)
    assert X.dtype == np.float64 and np.asarray(chunk.y).dtype == np.int64
    return np.concatenate([[len(chunk)], X.sum(axis=0),
                           [chunk.y.sum(), chunk.group.sum(), (X @ w).sum(), chunk.start]])


def first_feature(chunk):
    """The sampled rows' x0 (continuous: it names the row) — for the overlap count only."""
    return passes.Concat(np.asarray(chunk.X)[:, 0].copy())


@pytest.mark.parametrize("kind", ["pandas", "parquet"])
def test_a_stored_steps_sums_are_the_direct_passes_over_the_same_seeds(client, frame, tmp_path,
                                                                      kind):
    data = _datasets(frame, kind, tmp_path)
    rows = data.rows()
    rates, K = (0.3, 0.2), 3
    w = np.arange(1.0, D + 1)
    stock = rows.poisson_prefetch(rates, K, as_source(5))
    direct = as_source(5)                      # the same words, drawn step by step
    for t in range(K):
        got = stock.map_sums([(sums_pass, (w * (t + 1),)) for _ in rates])
        want = rows.poisson_map_sums([(sums_pass, r, (w * (t + 1),)) for r in rates], direct)
        for g, h in zip(got, want):
            np.testing.assert_array_equal(g, h)         # bit for bit
        assert got[0][0] > 0.2 * N and got[1][0] > 0.1 * N
    assert stock.blocks is None and stock.left == 0     # released after the K-th step
    with pytest.raises(ValueError):
        stock.map_sums([(sums_pass, (w,)) for _ in rates])


def test_stored_samples_keep_the_files_feature_type_and_small_codes(client, frame, tmp_path):
    import dask

    stock = _parquet(frame, tmp_path).rows().poisson_prefetch((0.5,), 2, as_source(1))
    (blocks,) = dask.compute(stock.blocks[0])      # a run of partitions' blocks
    X, y, g, starts, _ = blocks[0].samples[0][0]
    assert X.dtype == np.float32 and X.flags.c_contiguous and X.shape[1] == D
    assert y.dtype == np.int8 and g.dtype == np.int8 and starts.dtype == np.int64
    stock.release()


def test_stored_samples_are_the_rows_of_x_for_mixed_column_types():
    """A partition whose columns differ in type (float32, float64, int16): every stored sample
    is X[i] of the partition's float64 X, C-ordered, for every step and job — the gather runs
    column by column over all the steps at once."""
    rng = np.random.default_rng(4)
    n = 5000
    cols = [rng.normal(size=n).astype(np.float32), rng.normal(size=n),
            rng.integers(-3, 4, n).astype(np.int16)]
    y, g = rng.integers(0, 2, n), rng.integers(0, 3, n)
    rows = dask_data.ColumnRows(cols, y, g, chunk_rows=700)
    X = np.column_stack([c.astype(np.float64) for c in cols])
    draws = [[(0.1, (11 + t, 1, 2, 3)), (0.3, (50 + t, 1, 2, 3))] for t in range(4)]
    block = dask_data.SampleBlock(rows, draws, 3, 2)
    for t, step in enumerate(draws):
        for j, (rate, seed) in enumerate(step):
            i = passes.poisson_rows(n, rate, seed)
            Xs, ys, gs, starts, _ = block.samples[t][j]
            assert Xs.dtype == np.float64 and Xs.flags.c_contiguous
            np.testing.assert_array_equal(Xs, X[i])
            np.testing.assert_array_equal(ys, y[i])
            np.testing.assert_array_equal(gs, g[i])
            np.testing.assert_array_equal(starts, i[::700])
    # the control: another step's seed gives other rows
    assert not np.array_equal(block.samples[1][0][0], X[passes.poisson_rows(n, 0.1, (11, 1, 2, 3))])


def test_the_k_steps_samples_are_independent_not_one_sample_reused(client, frame):
    # every stored (step, job) sample against every other: a row is in both independently with
    # probability q·q', so the overlap is Binomial(n, q q'); one sample reused for two steps
    # would overlap in all its ~n q rows
    rows = on_dask(frame, PARTS).rows()
    rates, K = (0.5, 0.5), 3
    stock = rows.poisson_prefetch(rates, K, as_source(9))
    sets = [set(v.values.tolist()) for _ in range(K)
            for v in stock.map_sums([(first_feature, ()) for _ in rates])]
    assert len(sets) == K * len(rates) and all(0.4 * N < len(s) < 0.6 * N for s in sets)
    mean, sd = N * 0.25, math.sqrt(N * 0.25 * 0.75)

    def independent(a, b):
        return abs(len(a & b) - mean) < 6 * sd

    pairs = [(a, b) for i, a in enumerate(sets) for b in sets[i + 1:]]
    assert len(pairs) == 15 and all(independent(a, b) for a, b in pairs)
    assert not independent(sets[0], sets[0])          # control: a reused sample is caught


def _problem(data):
    return parity_problem(data, D)


def _solve(data, privacy, **kw):
    return solve_parity(data, D, privacy, **kw)


@pytest.fixture
def counted(monkeypatch):
    """How many prefetching reads and single-step round trips a solve made."""
    calls = {"prefetch": [], "single": 0}
    pre, single = dask_data.DaskRows.poisson_prefetch, dask_data.DaskRows.poisson_map_sums

    def prefetch(self, rates, steps, source):
        calls["prefetch"].append(steps)
        return pre(self, rates, steps, source)

    def one(self, jobs, source):
        calls["single"] += 1
        return single(self, jobs, source)

    monkeypatch.setattr(dask_data.DaskRows, "poisson_prefetch", prefetch)
    monkeypatch.setattr(dask_data.DaskRows, "poisson_map_sums", one)
    return calls


@pytest.mark.parametrize("unit,totals", [("row", "batch"), ("sensitive", "batch"),
                                         ("sensitive", "exact")])
def test_with_prefetching_a_solve_without_sampling_or_noise_is_the_in_memory_solve(
        client, frame, counted, unit, totals):
    data, mem = on_dask(frame, PARTS), in_memory(frame)
    # a budget of two steps a read (n·Σq rows + 6 sd, 34 bytes a row, over 2 workers): T = 5
    # runs as 2 + 2 stored steps, then one step read directly (K = 1 left)
    jobs = 1 if unit == "row" else 2                 # B_t, and B'_t under the split steps
    data.prefetch_bytes = int((N * jobs + 6 * math.sqrt(N * jobs)) * 34) // 1 + 1
    inf = pf.DP(math.inf, protect=unit)
    opts = dict(holdout=0, batch_size=N, epochs=5, group_free_totals=totals,
                sensitive_algorithm="split")
    got, want = _solve(data, inf, **opts), _solve(mem, inf, **opts)
    assert got.plan.params["T"] == 5
    assert counted["prefetch"] == [2, 2] and counted["single"] == 1
    np.testing.assert_allclose(np.array(got.decisions), np.array(want.decisions), rtol=1e-9,
                               atol=1e-10)
    np.testing.assert_array_equal(got.weights, want.weights)


def test_with_prefetching_a_private_solve_has_the_in_memory_certificate(client, frame,
                                                                        tmp_path, counted):
    data, mem = _parquet(frame, tmp_path), in_memory(frame)
    priv = pf.DP(2.0, 1e-5, protect="sensitive")
    opts = dict(holdout=0, epochs=2, sensitive_algorithm="split")
    got, want = _solve(data, priv, **opts), _solve(mem, priv, **opts)
    T = got.plan.params["T"]
    assert counted["prefetch"] == [T] and counted["single"] == 0     # one read for all steps
    assert got.certificate == want.certificate
    assert got.plan.params["noise_multiplier"] == want.plan.params["noise_multiplier"] > 0
    assert np.all(np.isfinite(np.array(got.decisions)))


def test_k_is_chosen_from_public_quantities_only(client, frame):
    other = frame.copy()                           # the same n, schema and partitions
    rng = np.random.default_rng(3)
    for c in features(frame):
        other[c] = rng.normal(scale=5.0, size=N)
    other["income"] = 1 - other["income"]
    other["sex"] = other["sex"].iloc[::-1].to_numpy()
    a, b = on_dask(frame, PARTS).rows(), on_dask(other, PARTS).rows()
    for rates, steps in [((0.02,), 500), ((0.02, 0.02), 500), ((0.5,), 10**6)]:
        assert a.prefetch_steps(rates, steps) == b.prefetch_steps(rates, steps)
    assert a.row_bytes() == 4 * 8 + 1 + 1           # float64 features, int8 codes
    want = dask_data.prefetch_steps(N, (0.5,), 34, 2, dask_data.PREFETCH_BYTES, 10**6)
    assert a.prefetch_steps((0.5,), 10**6) == want > 1000
    assert a.prefetch_steps((0.5,), 7) == 7         # at most the steps left
    assert a.prefetch_steps((0.5,), None) == 1      # T unknown: no prefetching
    a.prefetch_bytes = 0
    assert a.prefetch_steps((0.5,), 500) == 1       # switched off
    # the rule alone: more budget or workers, more steps; more rows or a larger rate, fewer
    k = dask_data.prefetch_steps(10**8, (0.02,), 82, 2, 256 << 20)
    assert k == 3
    assert dask_data.prefetch_steps(10**8, (0.02,), 82, 2, 1 << 30) == 13
    assert dask_data.prefetch_steps(10**7, (0.02,), 82, 2, 256 << 20) == 32
    assert dask_data.prefetch_steps(10**8, (0.02, 0.02), 82, 2, 256 << 20) == 1


def test_persisted_partitions_keep_one_read_a_step(client, frame):
    data = on_dask(frame, PARTS).persist()
    assert data.rows().prefetch_steps((0.1,), 500) == 1

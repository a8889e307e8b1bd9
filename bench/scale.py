"""Scaling benchmark (#19): time, peak memory and throughput of privfair's passes in n.

In memory, for every n (each in its own process, so peak RSS is that n's own): synthetic
Adult-like rows (``--d`` features: 6 standardized numerics, the rest one-hot blocks; a binary
sensitive attribute correlated with them; a logistic label), held once (``Dataset(copy=False)``),
and the stages

* ``numpy``  — one logistic-gradient pass Xᵀ(σ(Xw) − y) in plain numpy: the hardware bound
  every other number is measured against, in the same process;
* ``pass``   — the same gradient through :mod:`privfair.data.passes` (chunked map + merge);
  its throughput ratio = t_numpy / t_pass (the issue's target: ≥ 0.3);
* ``score``  — ``pf.scores.fit_score(data)``: the public score's Newton fit (all its passes);
* ``dense``  — the pre-#19 fit (Z = [1, X] and a weighted n×d copy per Newton step), the
  "before" of ``score`` (skipped above ``--dense-max-n``);
* ``rates``  — ``pf.rates(LinearClassifier, data, surrogate="logistic")`` and one gradient;
* ``cells``  — a whole private ``cells`` solve (ProxyCells(20, 8), demographic parity ≤ 0.02,
  ε = 1, δ = 1/n², protect="sensitive").
* ``auto_cells_s``, ``auto_cells_r``, ``auto_linear_s``, ``auto_linear_r`` — a whole
  ``backend="auto"`` fit (plan, the chosen backend's run, the default 20 % held-out check) of
  the ProxyCells(20, 8) or the ``LinearClassifier(d, radius=10)`` problem (demographic parity
  ≤ 0.02, ε = 1, δ = 1/n² or ``--delta``) under protect="sensitive" (``_s``) or protect="row" (``_r``); the
  backend auto chose is printed beside the time.  Not in the default stages (minutes at 10⁷).
* ``post_s``, ``post_r`` — a whole ``backend="postprocessing"`` fit (plan, run, the default
  held-out check) of ``pf.PostProcessed(pf.LinearClassifier(d, radius=10))`` (group thresholds
  of a linear score; demographic parity ≤ 0.02, ε = 1, δ as above) under protect="sensitive"
  (the public logistic base) or protect="row" (the base trained by ``lagrangian_sgda``).  Not
  in the default stages.

For each stage: median wall time over ``--repeats`` (and min–max), rows/s, and its cost in
numpy passes (t / t_numpy, and the same ratio of this process's CPU times, steadier on a shared
machine); per n the peak RSS and the size of X; over n the fitted growth exponent b of t ∝ n^b
(least squares on log–log).  The LP solvers and the backends are imported before the stages are
timed (a one-time cost of seconds, independent of n).  A whole fit's time includes its plan:
``backend="auto"`` plans every backend that accepts the problem, and each plan's noise
calibration (PLD; cached in the process by its public key — ε, δ, steps, rate) costs ~0.2–1 s
whatever n, ≈ 10 numpy passes at 10⁶ rows; ``--warm`` runs each whole fit once untimed first,
so that the timed fit is the part that grows with n (report both).

With ``--dask ROWS``, a Parquet + Dask run: ROWS × ``--dask-features`` rows written to a
temporary directory (removed afterwards) in ``--partition-rows`` files, read by
``pf.Dataset.from_parquet`` on a LocalCluster of ``--workers`` processes (``--worker-memory``
each): the validation pass, the group-label counts, the public score and a whole private
``cells`` solve (the ``cells`` stage's problem with its default held-out check, every read of
the rows a pass on the workers; ``--no-dask-solve`` skips it), with each worker's peak RSS, and
a subsample check — the first partitions through Dask against the same rows in memory at
ε = ∞ (max |Δ coefficient|, counts equal, the cells solve's rule).  The features are written
as ``--dask-dtype`` (float32 by default; the workers convert each partition to float64), in
pyarrow's default layout (snappy, dictionary encoding) or the one ``--parquet-compression``,
``--parquet-dictionary``, ``--parquet-row-group`` and ``--parquet-required`` (every column
declared non-nullable, Parquet's *required*: no definition levels to decode) set.  The run
also prints where one partition's time goes in one process (read + decode, cast, arithmetic) and — the before,
unless ``--no-dask-reader`` — the counts and gradient passes through
``dask.dataframe.read_parquet`` on the same files, in the same run.
``--dask-linear`` also solves the ``auto_linear_*`` problem on the Dask dataset under both units
(``backend="auto"`` picks ``lagrangian_sgda``: one round trip to the workers a step; use
``--persist`` — unpersisted, every step re-reads the Parquet files) and prints its time per step.
Unpersisted, one read of a partition draws the samples of several steps (#19,
``DaskRows.poisson_prefetch``); ``--prefetch-mb MB`` sets the per-worker budget for them
(``DaskDataset.prefetch_bytes``; 0: one read a step, the before), ``--linear-units`` the units
run; with ``--dask-linear`` the subsample check also solves it at q = 1, ε = ∞ through Dask and
in memory (max |Δ decision|).  ``--log PATH`` appends each stage's time as it ends (a long run
in the background); ``--no-dask-passes`` skips the timed passes and the score fit.

Usage::

    python bench/scale.py                          # n = 1e5, 3e5 (quick)
    python bench/scale.py --n 1e5 1e6 1e7          # the issue's sizes (1e7 × 101: ~8 GB X)
    python bench/scale.py --n 1e5 --dask 1e7 --dask-features 20
    python bench/scale.py --stages numpy,pass,score,dense --n 1e5 1e6
    python bench/scale.py --n 1e6 --stages numpy,auto_cells_s --hessian64   # all-float64 Newton

Runs BLAS single-threaded (``--threads``) so that numbers on a shared machine are stable.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time

STAGES = ("numpy", "pass", "score", "dense", "rates", "cells", "auto_cells_s", "auto_cells_r",
          "auto_linear_s", "auto_linear_r", "post_s", "post_r")


def _peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20   # KB on Linux


def gradient_pass(chunk, w):
    """A pass function doing exactly the numpy bound's arithmetic on one chunk,
    Xᵀ(σ(Xw) − y): the pass machinery's throughput (chunks, partitions, merge, Dask's tasks)
    measured on the same work.  (:func:`privfair.data.passes.logistic_terms`, what the fits
    read, also sums log(1 + e^z) — a ``logaddexp`` per row, ~half a 20-feature pass.)"""
    import numpy as np

    X = chunk.X
    return X.T @ (0.5 * (1.0 + np.tanh(0.5 * (X @ w))) - chunk.y)


def make_rows(n, d, seed=0, dtype="float64"):
    """Adult-like synthetic rows, generated block by block (no temporaries of X's size)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    X = np.zeros((n, d), dtype=dtype)
    sex = (rng.random(n) < 0.33).astype(np.int64)
    n_num = min(6, d)
    step = 1 << 20
    for s in range(0, n, step):
        e = min(n, s + step)
        X[s:e, :n_num] = rng.standard_normal((e - s, n_num)) + 0.3 * sex[s:e, None]
    j, b = n_num, 0
    while j < d:                     # one-hot blocks of 2..15 categories
        width = min(d - j, 2 + (b * 7) % 14)
        for s in range(0, n, step):
            e = min(n, s + step)
            shift = (sex[s:e] * (b % 3)) % width
            cat = (rng.integers(0, width, e - s) + shift * (rng.random(e - s) < 0.3)) % width
            X[np.arange(s, e), j + cat] = 1.0
        j, b = j + width, b + 1
    w = np.random.default_rng(seed + 1).normal(size=d) / math.sqrt(d)
    z = np.empty(n)
    for s in range(0, n, step):
        e = min(n, s + step)
        z[s:e] = X[s:e] @ w + 0.5 * sex[s:e] + rng.logistic(size=e - s) - 0.4
    return X, (z > 0).astype(np.int64), sex


def _dense_fit(X, y, ridge=1.0, iters=50, tol=1e-10):
    """The pre-#19 fit_score: Z = [1, X] and (Z·w)ᵀZ, a weighted n×(d+1) copy per step."""
    import numpy as np

    Z = np.hstack([np.ones((X.shape[0], 1)), X])
    T = Z.T @ y.astype(float)
    theta = np.zeros(Z.shape[1])

    def obj(t):
        return float(np.sum(np.logaddexp(0.0, Z @ t)) - t @ T + 0.5 * ridge * t @ t)

    f = obj(theta)
    for _ in range(iters):
        p = 0.5 * (1.0 + np.tanh(0.5 * (Z @ theta)))
        g = Z.T @ p - T + ridge * theta
        H = (Z * (p * (1.0 - p))[:, None]).T @ Z
        H[np.diag_indices(Z.shape[1])] += ridge
        step = np.linalg.solve(H, g)
        dec = float(g @ step)
        if dec / 2.0 < tol:
            break
        t = 1.0
        while True:
            f_new = obj(theta - t * step)
            if f_new <= f - 0.25 * t * dec or t < 1e-10:
                break
            t *= 0.5
        theta, f = theta - t * step, f_new
    return theta


def _timed(fn, repeats):
    """Wall time (median, min, max) and this process's CPU time (median): on a shared machine
    the CPU time is the steadier measure of the work done (BLAS runs single-threaded)."""
    times, cpu, out = [], [], None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    times.sort()
    cpu.sort()
    return {"median": times[len(times) // 2], "min": times[0], "max": times[-1],
            "cpu": cpu[len(cpu) // 2]}, out


def child_memory(n, d, stages, repeats, dense_max_n, delta=None, hessian64=False, warm=False):
    """One n in this process: the stages' timings, peak RSS after each (private solves at
    δ = ``delta``, default 1/n²; ``warm``: each whole fit runs once untimed first)."""
    import numpy as np

    import privfair as pf
    X, y, sex = make_rows(n, d)
    out = {"n": n, "d": d, "x_gb": X.nbytes / 2 ** 30, "peak_gb": {}, "t": {}}
    if hessian64:       # the "before" of the mixed-precision Newton Hessians (#19)
        from privfair.data import passes

        gram = passes.weighted_gram
        passes.weighted_gram = lambda Z, w, float32=False: gram(Z, w)
        blocks = getattr(passes, "ProxyBlocks", None)     # the proxy's blockwise rows (#19)
        if blocks is not None:
            bgram = blocks.gram
            blocks.gram = lambda self, M, w, float32=False: bgram(self, M, w)
        out["hessian"] = "float64"
    try:
        data = pf.Dataset(X, y, sex, group_names=[0, 1], labels=[0, 1], copy=False)
    except TypeError:     # a checkout before #19 (bench/scale.py --before): X is copied
        data = pf.Dataset(X, y, sex, group_names=[0, 1], labels=[0, 1])
    out["version"] = os.path.dirname(os.path.dirname(os.path.abspath(pf.__file__)))
    out["peak_gb"]["data"] = _peak_gb()
    w = np.random.default_rng(2).normal(size=d) * 0.1

    def numpy_pass():
        return X.T @ (0.5 * (1.0 + np.tanh(0.5 * (X @ w))) - y)

    def our_pass():
        from privfair.data import passes

        return data.rows().map_sum(passes.logistic_terms, passes.PLAIN, w, False)[1]

    def cells():
        r = pf.rates(pf.ProxyCells(20, 8), data)
        prob = pf.Problem(pf.minimize(r.error()),
                          [pf.abs(r.selection[0] - r.selection[1]) <= 0.02])
        return prob.solve(pf.DP(1.0, delta or 1.0 / n ** 2, protect="sensitive"),
                          backend="cells", seed=0, progress=False)

    def rates():
        r = pf.rates(pf.LinearClassifier(d, radius=1.0), data, surrogate="logistic",
                     group_mass_bound=0.01)
        return r.weighted_value_and_grad(np.append(w, 0.0), np.ones(r.K))

    def auto(kind, protect):
        import warnings

        dec = pf.ProxyCells(20, 8) if kind == "cells" else pf.LinearClassifier(d, radius=10.0)
        r = pf.rates(dec, data)
        prob = pf.Problem(pf.minimize(r.error()),
                          [pf.abs(r.selection[0] - r.selection[1]) <= 0.02])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # the held-out check's status warnings
            res = prob.solve(pf.DP(1.0, delta or 1.0 / n ** 2, protect=protect),
                             backend="auto", seed=0, progress=False)
        out.setdefault("backend", {})[f"auto_{kind}_{protect[0]}"] = res.backend
        return res

    def post(protect):
        import warnings

        r = pf.rates(pf.PostProcessed(pf.LinearClassifier(d, radius=10.0)), data)
        prob = pf.Problem(pf.minimize(r.error()),
                          [pf.abs(r.selection[0] - r.selection[1]) <= 0.02])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # the held-out check's status warnings
            return prob.solve(pf.DP(1.0, delta or 1.0 / n ** 2, protect=protect),
                              backend="postprocessing", seed=0, progress=False)

    run = {"numpy": numpy_pass, "pass": our_pass, "score": lambda: pf.scores.fit_score(data),
           "dense": lambda: _dense_fit(X, y), "rates": rates, "cells": cells,
           "auto_cells_s": lambda: auto("cells", "sensitive"),
           "auto_cells_r": lambda: auto("cells", "row"),
           "auto_linear_s": lambda: auto("linear", "sensitive"),
           "auto_linear_r": lambda: auto("linear", "row"),
           "post_s": lambda: post("sensitive"), "post_r": lambda: post("row")}
    whole = ("cells", "post_s", "post_r")
    if any(s in whole or s.startswith("auto") for s in stages):
        # one-time imports (the LP solvers, the backends: seconds, independent of n) are not
        # part of a fit's cost in passes over X
        import cvxpy  # noqa: F401
        import privfair.backends  # noqa: F401
        try:
            import dp_accounting  # noqa: F401  (the certificate's PLD accounting: ~1 s to import)
        except ImportError:
            pass
    for stage in stages:
        if stage == "dense" and n > dense_max_n:
            continue
        # whole fits repeat at small n only (minutes each at 10⁷)
        reps = repeats if stage in ("numpy", "pass") or n <= (
            1e5 if stage.startswith(("auto", "post")) else 1e6) else 1
        try:
            if warm and (stage in whole or stage.startswith("auto")):
                run[stage]()      # untimed: the plan-time calibrations (cached by key) done
            out["t"][stage], _ = _timed(run[stage], max(1, reps))
        except Exception as exc:          # noqa: BLE001 - a stage's failure is a result too
            out["t"][stage] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
        out["peak_gb"][stage] = _peak_gb()
    return out


def _parquet_layout(compression, dictionary, row_group):
    """``pyarrow.parquet.write_table`` keywords of the bench's file layout (None: pyarrow's
    default — snappy, dictionary encoding on, row groups of up to 1 Mi rows)."""
    kw = {}
    if compression is not None:
        kw["compression"] = compression
    if dictionary is not None:
        kw["use_dictionary"] = bool(dictionary)
    if row_group:
        kw["row_group_size"] = int(row_group)
    return kw


def partition_breakdown(file, d, repeats=5):
    """Where one partition's time goes, in this process (one thread, the file warm in the page
    cache): privfair's reader — the file's read + decode (pyarrow), the columns and the
    label/group codes, the bound's arithmetic as a pass over ``ColumnRows`` (each chunk cast
    into a reused buffer, then the arithmetic) and the same pass over a float64 X in memory
    (the arithmetic alone); dask's reader — ``read_parquet`` of the file to pandas, then
    ``Schema.arrays``; and a whole-partition cast to a new float64 X (``persist``'s)."""
    import numpy as np

    from privfair.data import dask_data, passes

    schema = dask_data.Schema(tuple(f"x{j}" for j in range(d)), "y", ("sex",), (0, 1), (0, 1))
    part = dask_data.ParquetPart(file)
    cols = [*schema.features, "y", "sex"]
    out = {}
    t, table = _timed(lambda: part.read(cols), repeats)
    out["read_decode_s"] = t
    t, (xs, y, g) = _timed(lambda: dask_data.table_columns(table, schema), repeats)
    out["columns_codes_s"] = t
    source = dask_data.ColumnRows(xs, y, g)
    w = np.random.default_rng(2).normal(size=d) * 0.1
    t, _ = _timed(lambda: source.map_sum(gradient_pass, w), repeats)
    out["cast_and_gradient_pass_s"] = t
    t, _ = _timed(lambda: source.map_sum(passes.group_label_counts, 2, 2), repeats)
    out["counts_s"] = t
    t, (X, _, _) = _timed(source.arrays, repeats)
    out["whole_cast_s"] = t
    rows = passes.ArrayRows(X, y, g)
    t, _ = _timed(lambda: rows.map_sum(gradient_pass, w), repeats)
    out["gradient_pass_s"] = t
    t, _ = _timed(lambda: rows.map_sum(passes.logistic_terms, passes.PLAIN, w, False), repeats)
    out["logistic_terms_s"] = t
    del X, rows
    import dask.dataframe as dd

    part_df = dd.read_parquet(file).to_delayed()[0]
    t, df = _timed(lambda: part_df.compute(scheduler="sync"), repeats)
    out["dask_read_pandas_s"] = t
    t, _ = _timed(lambda: schema.arrays(df), repeats)
    out["dask_pandas_to_arrays_s"] = t
    return out


def counts_pass(chunk, n_groups, n_labels, nonce):
    """``passes.group_label_counts`` with an argument that changes every call (``nonce``,
    unused): a pure task of the same arguments may be answered from Dask's memory."""
    from privfair.data import passes

    return passes.group_label_counts(chunk, n_groups, n_labels)


def _worker_cpu(client) -> float:
    """The CPU seconds the cluster's worker processes have used so far (all their threads)."""
    return sum(client.run(time.process_time).values())


def child_dask(rows, d, partition_rows, workers, worker_memory, tmpdir, check_rows,
               persist=False, solve=True, dtype="float32", linear=False, delta=None,
               compression=None, dictionary=None, row_group=None, required=False,
               dask_reader=True,
               prefetch_mb=None, linear_units=("row", "sensitive"), log=None, time_passes=True):
    """The Parquet + Dask run (data written to a temporary directory, removed afterwards)."""
    import shutil
    import tempfile

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from distributed import Client, LocalCluster

    import privfair as pf
    from privfair.statistics.scores import fit_score

    path = tempfile.mkdtemp(prefix="privfair-scale-", dir=tmpdir)
    layout = _parquet_layout(compression, dictionary, row_group)
    out = {"rows": rows, "d": d, "partition_rows": partition_rows, "workers": workers,
           "dtype": dtype, "layout": layout or "pyarrow default (snappy, dictionary)",
           "required": bool(required)}
    cluster = client = None
    start = time.perf_counter()

    def note(msg):                  # --log: where a long run is
        if log:
            with open(log, "a") as fh:
                fh.write(f"{time.strftime('%H:%M:%S')} +{time.perf_counter() - start:.0f}s "
                         f"{msg}\n")

    try:
        t0 = time.perf_counter()
        parts = 0
        for s in range(0, rows, partition_rows):
            k = min(partition_rows, rows - s)
            X, y, sex = make_rows(k, d, seed=1000 + parts, dtype=dtype)
            cols = {f"x{j}": X[:, j] for j in range(d)}
            cols.update(sex=sex, y=y)
            table = pa.table(cols)
            if required:    # non-nullable fields: the reader skips the definition levels
                table = table.cast(pa.schema([f.with_nullable(False) for f in table.schema]))
            pq.write_table(table, os.path.join(path, f"part-{parts:05d}.parquet"), **layout)
            parts += 1
        out["write_s"] = time.perf_counter() - t0
        out["disk_gb"] = sum(os.path.getsize(os.path.join(path, f))
                             for f in os.listdir(path)) / 2 ** 30
        # the numpy bound over the same bytes: one gradient pass over a partition in memory,
        # times the partitions, shared by the workers
        X, y, _ = make_rows(min(partition_rows, rows), d, seed=1000)
        w = np.random.default_rng(2).normal(size=d) * 0.1
        tp, _ = _timed(lambda: X.T @ (0.5 * (1.0 + np.tanh(0.5 * (X @ w))) - y), 5)
        out["numpy_bound_s"] = tp["median"] * parts / workers
        out["numpy_bound_partition_s"] = tp
        del X, y
        out["partition"] = partition_breakdown(os.path.join(path, "part-00000.parquet"), d)
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               memory_limit=worker_memory, dashboard_address=None)
        client = Client(cluster)
        kw = dict(label="y", sensitive="sex", groups=[0, 1], labels=[0, 1])
        note(f"written: {parts} files, {out['disk_gb']:.2f} GB")
        t, data = _timed(lambda: pf.Dataset.from_parquet(path, **kw), 1)
        out["validate_s"] = t["median"]
        if prefetch_mb is not None:     # per worker, the samples of the steps drawn ahead
            data.prefetch_bytes = int(prefetch_mb * 2 ** 20)
        out["prefetch_bytes"] = data.prefetch_bytes
        if persist:       # convert the partitions once, keep the arrays on the workers
            t, _ = _timed(data.persist, 1)
            out["persist_s"] = t["median"]
        out["persist"] = bool(persist)
        from privfair.data import passes     # the numpy bound's gradient pass, through Dask

        # a new argument every repeat: the pass tasks are pure, so Dask may hand back a result
        # it still holds for the same arguments instead of computing it (a 0.01 s "pass" was
        # seen; data.counts() repeated hit it too)
        fresh = iter(w * (1.0 + 1e-12 * k) for k in range(1, 1000))
        nonce = iter(range(1, 1000))
        runs = {} if not time_passes else {
                "counts_s": (data, lambda x: x.rows().map_sum(counts_pass, 2, 2, next(nonce))),
                "pass_s": (data, lambda x: x.rows().map_sum(passes.logistic_terms, passes.PLAIN,
                                                            next(fresh), False)),
                "same_work_pass_s": (data, lambda x: x.rows().map_sum(gradient_pass,
                                                                      next(fresh)))}
        out["reader"] = "privfair" if data.parts is not None else "dask"
        if dask_reader and time_passes:
            # the before, in the same run: the same files through dask.dataframe.read_parquet
            # (pandas partitions, Schema.arrays), as from_parquet read them before #19's reader
            # (with --persist: persisted as float64 X, as persist() kept them before)
            import dask.dataframe as dd

            old = pf.Dataset.from_dask(dd.read_parquet(path), **kw)
            if persist:
                old.persist()
            runs["dask_reader_counts_s"] = (old, runs["counts_s"][1])
            runs["dask_reader_same_work_pass_s"] = (old, runs["same_work_pass_s"][1])
        # 3 repeats, interleaved (every kind once, then again): on a shared machine the
        # before and the after see the same load; wall time and the workers' CPU time
        times = {k: [] for k in runs}
        cpu = {k: [] for k in runs}
        for _ in range(3):
            for k, (x, fn) in runs.items():
                c0 = _worker_cpu(client)
                t0 = time.perf_counter()
                fn(x)
                times[k].append(time.perf_counter() - t0)
                cpu[k].append(_worker_cpu(client) - c0)
        for k in runs:
            ts, cs = sorted(times[k]), sorted(cpu[k])
            out[k] = {"median": ts[1], "min": ts[0], "max": ts[-1], "worker_cpu": cs[1]}
        if time_passes:
            out["pass_vs_numpy_bound"] = out["numpy_bound_s"] / out["pass_s"]["median"]
            out["same_work_vs_numpy_bound"] = (out["numpy_bound_s"]
                                               / out["same_work_pass_s"]["median"])
        out["numpy_bound_cpu_s"] = tp["cpu"] * parts
        if "dask_reader_same_work_pass_s" in out:
            out["dask_reader_same_work_vs_numpy_bound"] = (
                out["numpy_bound_s"] / out["dask_reader_same_work_pass_s"]["median"])
            del old
        out["load_average"] = os.getloadavg()
        note("passes timed")
        if time_passes:
            t, coef = _timed(lambda: fit_score(data), 1)
            out["score_s"] = t["median"]
            note(f"score fit {out['score_s']:.1f} s")
        out["worker_peak_gb"] = sorted(v / 2 ** 20 for v in client.run(
            lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss).values())
        if solve:         # the whole private cells solve on the workers (#19), the default check
            try:
                t, res = _timed(lambda: _dask_cells_solve(pf, data), 1)
                out["solve_s"] = t["median"]
                out["solve_status"] = res.status
                out["solve_certificate"] = [res.certificate.epsilon, res.certificate.delta]
            except Exception as exc:      # noqa: BLE001 - a stage's failure is a result too
                out["solve_s"] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
            out["worker_peak_gb_solve"] = sorted(v / 2 ** 20 for v in client.run(
                lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss).values())
        if linear:        # lagrangian_sgda on the workers: auto on the LinearClassifier problem
            for unit in linear_units:
                note(f"lagrangian_sgda {unit}: start")
                try:
                    t, res = _timed(lambda: _dask_linear_solve(pf, data, unit, delta), 1)
                    T = res.plan.params["T"] if res.plan is not None else None
                    q = res.plan.params["sampling_rate"] if res.plan is not None else None
                    out[f"linear_{unit}"] = {
                        "s": t["median"], "backend": res.backend, "status": res.status,
                        "steps": T, "s_per_step": t["median"] / T if T else None,
                        "sampling_rate": q,
                        "prefetch_steps": None if q is None else data.rows().prefetch_steps(
                            (q,), T),
                        "certificate": [res.certificate.epsilon, res.certificate.delta]}
                except Exception as exc:      # noqa: BLE001 - a stage's failure is a result
                    out[f"linear_{unit}"] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
                note(f"lagrangian_sgda {unit}: {out[f'linear_{unit}']}")
            out["worker_peak_gb_linear"] = sorted(v / 2 ** 20 for v in client.run(
                lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss).values())
        # subsample check at ε = ∞: the first partitions through Dask and in memory
        k = max(1, min(parts, int(math.ceil(check_rows / partition_rows))))
        # the first k files, through the same reader as the run (privfair's: from_parquet)
        sub = pf.Dataset.from_parquet([os.path.join(path, f"part-{i:05d}.parquet")
                                       for i in range(k)], **kw)
        mem = sub.to_dataset(max_rows=check_rows + partition_rows)
        out["check_rows"] = sub.n
        out["check_max_abs_coef_diff"] = float(np.max(np.abs(fit_score(sub) - fit_score(mem))))
        out["check_counts_equal"] = bool((sub.counts() == mem.counts()).all())
        if linear:
            # lagrangian_sgda at q = 1, ε = ∞ (no sampling, no noise), Dask against memory:
            # the same rule up to float summation order (the stored samples are every row)
            inf = pf.DP(math.inf, protect="row")
            a_, b_ = (_dask_linear_solve(pf, x, "row", privacy=inf, holdout=0,
                                         batch_size=x.n, epochs=3) for x in (sub, mem))
            out["check_linear_max_abs_diff"] = float(np.max(np.abs(
                np.asarray(a_.decisions, float) - np.asarray(b_.decisions, float))))
            out["check_linear_certificates_equal"] = a_.certificate == b_.certificate
        if solve and not isinstance(out.get("solve_s"), dict):
            # the whole cells solve at ε = ∞ without the held-out split, Dask against memory:
            # the same edges (exact order statistics), cells, counts and rule
            inf = pf.DP(math.inf, protect="sensitive")
            a_, b_ = (_dask_cells_solve(pf, x, inf, holdout=0).decision for x in (sub, mem))
            out["check_solve_max_abs_diff"] = {
                name: float(np.max(np.abs(np.asarray(getattr(a_, name)) -
                                          np.asarray(getattr(b_, name)))))
                for name in ("score_coef", "proxy_coef", "score_edges", "proxy_edges", "q")}
        out["client_peak_gb"] = _peak_gb()
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
        shutil.rmtree(path, ignore_errors=True)
    return out


def _dask_linear_solve(pf, data, unit, delta=None, privacy=None, **kw):
    """The ``auto_linear_*`` stages' problem — ``LinearClassifier(d, radius=10)``, demographic
    parity ≤ 0.02, ε = 1, δ = ``delta`` or 1/n², the default held-out check (unless
    ``privacy``/``kw`` say otherwise) — on ``data`` (a Dask dataset: ``auto`` picks
    ``lagrangian_sgda``, one round trip to the workers a step)."""
    import warnings

    r = pf.rates(pf.LinearClassifier(len(data.feature_names), radius=10.0), data)
    prob = pf.Problem(pf.minimize(r.error()), [pf.abs(r.selection[0] - r.selection[1]) <= 0.02])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # the held-out check's status warnings
        privacy = privacy or pf.DP(1.0, delta or 1.0 / data.n ** 2, protect=unit)
        return prob.solve(privacy, backend="auto", seed=0, progress=False, **kw)


def _dask_cells_solve(pf, data, privacy=None, **kw):
    """The ``cells`` stage's problem (ProxyCells(20, 8), demographic parity ≤ 0.02) solved on
    ``data`` — ε = 1, δ = 1/n², protect="sensitive", the default held-out check unless
    ``privacy``/``kw`` say otherwise."""
    import warnings

    r = pf.rates(pf.ProxyCells(20, 8), data)
    prob = pf.Problem(pf.minimize(r.error()), [pf.abs(r.selection[0] - r.selection[1]) <= 0.02])
    privacy = privacy or pf.DP(1.0, 1.0 / data.n ** 2, protect="sensitive")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # the held-out check's status warnings
        return prob.solve(privacy, backend="cells", seed=0, progress=False, **kw)


def _exponent(ns, ts):
    import numpy as np

    ok = [(n, t) for n, t in zip(ns, ts) if t and t > 0]
    if len(ok) < 2:
        return None
    ln = np.log([n for n, _ in ok])
    lt = np.log([t for _, t in ok])
    return float(np.polyfit(ln, lt, 1)[0])


def report(results, dask):
    lines = []
    if results:
        stages = [s for s in STAGES if any(s in r["t"] for r in results)]
        lines.append(f"{'n':>10} {'d':>4} {'X GB':>6} {'peak GB':>8}  stage   "
                     f"{'median s':>9} {'min-max s':>15} {'rows/s':>10} {'numpy passes':>12}"
                     f" {'(cpu time)':>10}")
        for r in results:
            tn = r["t"].get("numpy", {}).get("median")
            cn = r["t"].get("numpy", {}).get("cpu")
            for s in stages:
                t = r["t"].get(s)
                if t is None:
                    continue
                if "error" in t:
                    lines.append(f"{r['n']:>10.0f} {r['d']:>4} {'':>6} {'':>8}  {s:<7} "
                                 f"failed: {t['error']}")
                    continue
                ratio = t["median"] / tn if tn else float("nan")
                cpu_ratio = t["cpu"] / cn if cn and t.get("cpu") else float("nan")
                chosen = r.get("backend", {}).get(s)
                lines.append(
                    f"{r['n']:>10.0f} {r['d']:>4} {r['x_gb']:>6.2f} {r['peak_gb'][s]:>8.2f}  "
                    f"{s:<7} {t['median']:>9.3f} {t['min']:>7.3f}-{t['max']:<7.3f} "
                    f"{r['n'] / t['median']:>10.3g} {ratio:>12.1f} {cpu_ratio:>10.1f}"
                    + (f"  ({chosen})" if chosen else ""))
            if tn and "pass" in r["t"] and "median" in r["t"]["pass"]:
                lines.append(f"{'':>10} pass throughput / numpy bound = "
                             f"{tn / r['t']['pass']['median']:.2f}")
        ns = [r["n"] for r in results]
        for s in stages:
            b = _exponent(ns, [r["t"].get(s, {}).get("median") for r in results])
            if b is not None:
                lines.append(f"growth exponent of {s}: t ∝ n^{b:.2f}")
    if dask:
        lines.append(json.dumps(dask, indent=1))
        if dask.get("score_s"):
            lines.append(f"dask: score fit {dask['score_s']:.1f} s "
                         f"({dask['score_s'] / dask['pass_s']['median']:.1f} gradient passes); "
                         f"one gradient pass {dask['pass_s']['median']:.2f} s = "
                         f"{dask['pass_vs_numpy_bound']:.3f} x the numpy bound "
                         f"({dask['numpy_bound_s']:.2f} s over the same bytes)")
        if dask.get("same_work_pass_s"):
            sw = dask["same_work_pass_s"]
            lines.append(f"dask: the bound's own arithmetic as a pass (Xᵀ(σ(Xw) − y), no "
                         f"log-likelihood) {sw['median']:.2f} s ({sw['min']:.2f}-{sw['max']:.2f})"
                         f" = {dask['same_work_vs_numpy_bound']:.3f} x the numpy bound "
                         f"[{dask.get('reader')} reader; {dask.get('dtype')}, "
                         f"{dask.get('layout')}"
                         f"{', required columns' if dask.get('required') else ''}]")
            c = dask["counts_s"]
            lines.append(f"dask: the counts pass (no arithmetic) {c['median']:.2f} s "
                         f"({c['min']:.2f}-{c['max']:.2f})")
            lines.append(f"dask: the workers' CPU time per pass: counts {c['worker_cpu']:.2f} s, "
                         f"the bound's arithmetic {sw['worker_cpu']:.2f} s, against the bound's "
                         f"{dask['numpy_bound_cpu_s']:.2f} s on one core (ratio "
                         f"{dask['numpy_bound_cpu_s'] / sw['worker_cpu']:.3f}); load average "
                         f"{', '.join(f'{v:.1f}' for v in dask.get('load_average', ()))}")
        if dask.get("dask_reader_same_work_pass_s"):
            sw, c = dask["dask_reader_same_work_pass_s"], dask["dask_reader_counts_s"]
            lines.append(f"dask: the same pass through dask.dataframe.read_parquet (the "
                         f"before) {sw['median']:.2f} s ({sw['min']:.2f}-{sw['max']:.2f}) = "
                         f"{dask['dask_reader_same_work_vs_numpy_bound']:.3f} x the numpy bound;"
                         f" its counts pass {c['median']:.2f} s ({c['min']:.2f}-{c['max']:.2f});"
                         f" workers' CPU time per pass: counts {c['worker_cpu']:.2f} s, the "
                         f"bound's arithmetic {sw['worker_cpu']:.2f} s")
        if dask.get("partition"):
            p = dask["partition"]
            ms = {k: 1e3 * v["median"] for k, v in p.items()}
            lines.append(
                "one partition in one process, ms (median of 5): privfair's reader: read + "
                f"decode {ms['read_decode_s']:.1f}, columns + codes {ms['columns_codes_s']:.1f}, "
                f"cast + the bound's arithmetic {ms['cast_and_gradient_pass_s']:.1f} (the "
                f"arithmetic alone, on X in memory: {ms['gradient_pass_s']:.1f}; counts "
                f"{ms['counts_s']:.1f}); dask's reader: read_parquet → pandas "
                f"{ms['dask_read_pandas_s']:.1f}, → arrays {ms['dask_pandas_to_arrays_s']:.1f}; "
                f"a whole-partition cast {ms['whole_cast_s']:.1f}; logistic_terms "
                f"{ms['logistic_terms_s']:.1f}; the numpy bound "
                f"{1e3 * dask['numpy_bound_partition_s']['median']:.1f}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=float, nargs="*", default=[1e5, 3e5])
    ap.add_argument("--d", type=int, default=101)
    ap.add_argument("--stages", default="numpy,pass,score,dense,rates,cells")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dense-max-n", type=float, default=3e6)
    ap.add_argument("--delta", type=float, default=None, help="δ of the private solves "
                    "(default 1/n²)")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads")
    ap.add_argument("--hessian64", action="store_true", help="every Newton Hessian in float64 "
                    "(the before of the mixed-precision fits)")
    ap.add_argument("--warm", action="store_true", help="run each whole fit once untimed "
                    "first: the timed fit finds the n-independent plan-time calibrations "
                    "(cached by their public key) done")
    ap.add_argument("--dask", type=float, default=0, help="rows of the Parquet + Dask run")
    ap.add_argument("--dask-features", type=int, default=20)
    ap.add_argument("--partition-rows", type=float, default=1e6)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--worker-memory", default="4GB")
    ap.add_argument("--check-rows", type=float, default=1e6)
    ap.add_argument("--persist", action="store_true",
                    help="Dask: convert the partitions once and keep them on the workers")
    ap.add_argument("--no-dask-solve", action="store_true",
                    help="Dask: skip the whole cells solve (ProxyCells(20, 8), ε = 1)")
    ap.add_argument("--dask-linear", action="store_true",
                    help="Dask: also solve the LinearClassifier problem with backend='auto' "
                         "(lagrangian_sgda) under both units")
    ap.add_argument("--dask-dtype", default="float32",
                    help="Dask: the features' type on disk (the workers convert to float64)")
    ap.add_argument("--parquet-compression", default=None,
                    help="Dask: the files' codec (snappy, lz4, zstd, none; default: pyarrow's, "
                         "snappy)")
    ap.add_argument("--parquet-dictionary", default=None, choices=["on", "off"],
                    help="Dask: dictionary encoding (default: pyarrow's, on)")
    ap.add_argument("--parquet-row-group", type=float, default=None,
                    help="Dask: rows per row group (default: pyarrow's, up to 1 Mi)")
    ap.add_argument("--parquet-required", action="store_true",
                    help="Dask: declare every column non-nullable (Parquet 'required')")
    ap.add_argument("--no-dask-reader", action="store_true",
                    help="Dask: skip the before (the same passes through "
                         "dask.dataframe.read_parquet)")
    ap.add_argument("--prefetch-mb", type=float, default=None,
                    help="per Dask worker, the MB of sampled rows lagrangian_sgda keeps for the "
                         "steps one read draws ahead (default: the library's; 0: one read a step)")
    ap.add_argument("--linear-units", default="row,sensitive",
                    help="the units --dask-linear solves under")
    ap.add_argument("--log", default=None, help="append each Dask stage's time here")
    ap.add_argument("--no-dask-passes", action="store_true",
                    help="skip the timed passes and the public score fit (a --dask-linear run)")
    ap.add_argument("--tmpdir", default=None)
    ap.add_argument("--json", default=None, help="also write the results here")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        spec = json.loads(a.child)
        fn = child_dask if spec.pop("kind") == "dask" else child_memory
        print("RESULT " + json.dumps(fn(**spec)))
        return 0
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), OPENBLAS_NUM_THREADS=str(a.threads),
               MKL_NUM_THREADS=str(a.threads))

    def spawn(spec):
        p = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], env=env,
                           capture_output=True, text=True)
        for line in p.stdout.splitlines():
            if line.startswith("RESULT "):
                return json.loads(line[7:])
        sys.stderr.write(p.stderr[-3000:])
        return None

    stages = [s for s in a.stages.split(",") if s]
    results = []
    for n in a.n:
        r = spawn({"kind": "memory", "n": int(n), "d": a.d, "stages": stages,
                   "repeats": a.repeats, "dense_max_n": a.dense_max_n, "delta": a.delta,
                   "hessian64": a.hessian64, "warm": a.warm})
        if r is None:
            print(f"n = {n:.0f}: the run failed (out of memory?)", file=sys.stderr)
            continue
        results.append(r)
        print(report([r], None), flush=True)
    dask = None
    if a.dask:
        dask = spawn({"kind": "dask", "rows": int(a.dask), "d": a.dask_features,
                      "partition_rows": int(a.partition_rows), "workers": a.workers,
                      "worker_memory": a.worker_memory, "tmpdir": a.tmpdir,
                      "check_rows": int(a.check_rows), "persist": a.persist,
                      "solve": not a.no_dask_solve, "dtype": a.dask_dtype,
                      "linear": a.dask_linear, "delta": a.delta,
                      "compression": a.parquet_compression,
                      "dictionary": None if a.parquet_dictionary is None
                      else a.parquet_dictionary == "on",
                      "row_group": a.parquet_row_group, "required": a.parquet_required,
                      "dask_reader": not a.no_dask_reader,
                      "prefetch_mb": a.prefetch_mb,
                      "linear_units": [u for u in a.linear_units.split(",") if u],
                      "log": a.log, "time_passes": not a.no_dask_passes})
    print("\n" + report(results, dask))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"memory": results, "dask": dask}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

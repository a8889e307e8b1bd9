"""The natural problem on rows that stay on disk: Parquet files, passes on Dask workers.

    python examples/adult_parquet_dask.py [--files 8] [--workers 2] [--scheduler ADDRESS]
        [--path DIR] [--epsilon 1.0] [--level 0.02] [--subsample N] [--seed S]

Needs the optional extra ``pip install 'privfair[dask]'``.  Writes Adult's training rows as
``--files`` Parquet files in the layout privfair's reader decodes fastest (docs/scale.md,
*Writing Parquet files that read fast*: float32 features, every column non-nullable,
uncompressed, no dictionary) — into ``--path``, or a temporary directory removed afterwards.
Then it starts a local Dask cluster of ``--workers`` processes (or connects to the running
scheduler at ``--scheduler``, whose workers must be able to read ``--path``; ``--workers 0``:
no cluster, Dask's scheduler in this process — the same code), opens the files with
``pf.Dataset.from_parquet`` and solves ``LinearClassifier`` + demographic parity ≤ level with
``backend="auto"`` under whole-row DP (δ = 1e-5).  Every read of the rows is a pass on the
workers that sends back sums only; noise is drawn once, here.  Prints the dataset, the plan,
the certificate, the status and the test metrics of the released rule (the test rows are in
memory).  The sex column is written as strings for readability; integer codes holding the
declared values read faster (one lookup instead of pandas).
"""

import argparse
import contextlib
import pathlib
import shutil
import tempfile

import numpy as np

import privfair as pf


def write_parquet(data, path, files):
    """``data`` as ``files`` Parquet files under ``path``: float32 features x0…, ``sex``
    (the group's name) and ``income`` (0/1), every column non-nullable, uncompressed, no
    dictionary."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = pathlib.Path(path)
    path.mkdir(parents=True, exist_ok=True)
    names = [f"x{j}" for j in range(data.X.shape[1])]
    sex = np.asarray(data.group_values, dtype=object)[data.group]
    for k, rows in enumerate(np.array_split(np.arange(data.n), files)):
        cols = [pa.array(data.X[rows, j].astype(np.float32)) for j in range(len(names))]
        cols += [pa.array(sex[rows].astype(str)), pa.array(data.y[rows].astype(np.int8))]
        schema = pa.schema([pa.field(name, col.type, nullable=False)
                            for name, col in zip([*names, "sex", "income"], cols)])
        pq.write_table(pa.Table.from_arrays(cols, schema=schema),
                       path / f"part-{k:03d}.parquet", compression="none",
                       use_dictionary=False)
    return names


@contextlib.contextmanager
def dask_client(workers, scheduler):
    """A distributed Client: the scheduler's at ``scheduler``, a LocalCluster of ``workers``
    processes, or none (``workers`` 0: Dask's own scheduler in this process)."""
    if scheduler is None and workers == 0:
        yield None
        return
    from distributed import Client, LocalCluster

    if scheduler is not None:
        with Client(scheduler) as client:
            yield client
        return
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        yield client


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=8, help="Parquet files (one partition each)")
    ap.add_argument("--workers", type=int, default=2,
                    help="local worker processes (0: no cluster)")
    ap.add_argument("--scheduler", default=None,
                    help="a running Dask scheduler's address (its workers read --path)")
    ap.add_argument("--path", default=None, help="where to write the files (kept)")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--level", type=float, default=0.02, help="demographic-parity bound")
    ap.add_argument("--subsample", type=int, default=None,
                    help="write N random training rows (smoke test)")
    ap.add_argument("--seed", type=int, default=None, help="reproducible noise (not for real "
                                                           "releases)")
    args = ap.parse_args(argv)
    if args.files < 1:
        ap.error(f"--files must be at least 1 (got {args.files})")
    if args.workers < 0:
        ap.error(f"--workers must be 0 (no cluster) or more (got {args.workers})")

    train, test = pf.datasets.load_adult("train"), pf.datasets.load_adult("test")
    if args.subsample:
        train = train.subsample(args.subsample, rng=0)
    path = args.path or tempfile.mkdtemp(prefix="privfair-adult-")
    try:
        features = write_parquet(train, path, args.files)
        with dask_client(args.workers, args.scheduler):
            data = pf.Dataset.from_parquet(path, label="income", sensitive="sex",
                                           groups=["Female", "Male"], labels=[0, 1],
                                           features=features)
            print(data, "\n")
            r = pf.rates(pf.LinearClassifier(len(features), radius=10.0), data)
            problem = pf.Problem(pf.minimize(r.error()),
                                 [pf.abs(r.selection["Female"] - r.selection["Male"])
                                  <= args.level])
            privacy = pf.DP(args.epsilon, 1e-5, protect="row")
            print(problem.plan(privacy).explain(), "\n")
            result = problem.solve(privacy, seed=args.seed, progress=False)
        print(result.certificate, "\n")
        print("status:", result.status)
        m = result.metrics(test)
        print(f"test: error {m['error']:.4f}, DP violation {m['dp_violation']:.4f}  "
              f"(expected prediction of the released rule; sex is never an input)")
    finally:
        if args.path is None:
            shutil.rmtree(path, ignore_errors=True)
    return result


if __name__ == "__main__":
    main()

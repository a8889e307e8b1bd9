"""The row-private ERM family on a Dask dataset against the same rows in memory (#19).

Builds n × d synthetic rows (Adult-like: two groups, a logistic label), a Dask dataset of them
(``--partitions`` partitions, persisted on a LocalCluster of 2 worker processes × 1 thread) and
the in-memory ``pf.Dataset`` of the same rows, then solves
``pf.rates(pf.SparseLinear(d, l1, ...), data, surrogate="logistic")``'s error minimization with
each ``--backends`` backend at DP(ε, δ, protect="row"), ``holdout=0``, on both.  Prints, per
backend and side: wall time (median and range of ``--repeats``), the passes the Dask solve made
(``DaskRows.map_sum`` calls on the client), time per pass, the workers' peak RSS, whether the
certificates are equal and the largest difference of the decisions (the noise is drawn on the
client from the same seed, so the two agree up to float summation order).

    python bench/dask_erm.py --n 1e6 --d 20 --partitions 4
"""

from __future__ import annotations

import argparse
import math
import resource
import statistics
import time
import warnings

import numpy as np


def _peak_rss_gb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20     # KB on Linux


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=float, default=1e6)
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--backends", nargs="+",
                    default=["output_perturbation", "objective_perturbation"])
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-10)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    import dask.dataframe as dd
    import distributed
    import pandas as pd

    import privfair as pf
    from privfair.data import dask_data

    n, d = int(args.n), args.d
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    sex = rng.choice(np.array(["F", "M"]), n, p=[0.35, 0.65])
    X[:, 0] += 0.5 * (sex == "M")
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.logistic(size=n) > 0.5).astype(np.int64)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(d)])
    df["sex"], df["income"] = sex, y

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, memory_limit="4GiB")
    client = distributed.Client(cluster)
    try:
        dk = pf.Dataset.from_dask(dd.from_pandas(df, npartitions=args.partitions),
                                  label="income", sensitive="sex", groups=["F", "M"]).persist()
        mem = pf.Dataset(X, y, sex, group_names=["F", "M"], labels=[0, 1], copy=False)
        del df
        passes = [0]
        map_sum = dask_data.DaskRows.map_sum

        def counted(self, fn, *params):
            passes[0] += 1
            return map_sum(self, fn, *params)

        dask_data.DaskRows.map_sum = counted
        ds = pf.SparseLinear(d, norm=pf.norms.l1(d), radius=4.0, l2=0.01, intercept_bound=2.0,
                             feature_bound=3.0)
        privacy = pf.DP(args.epsilon, args.delta, protect="row")
        bound = []                  # one numpy logistic-gradient pass over X, this process
        for k in range(5):
            w = np.random.default_rng(k).normal(size=d) * 0.1
            t = time.perf_counter()
            p = 0.5 * (1.0 + np.tanh(0.5 * (X @ w)))
            _ = X.T @ (p - y)
            bound.append(time.perf_counter() - t)
        print(f"one numpy gradient pass Xᵀ(σ(Xw) − y) in memory: "
              f"{statistics.median(bound) * 1e3:.0f} ms (median of 5)")
        print(f"n = {n:,}, d = {d}, {args.partitions} persisted partitions, 2 worker "
              f"processes × 1 thread; {privacy}")
        for backend in args.backends:
            out = {}
            for side, data in (("memory", mem), ("dask", dk)):
                times, res = [], None
                for _ in range(args.repeats):
                    passes[0] = 0
                    r = pf.rates(ds, data, surrogate="logistic", feature_bound=3.0)
                    prob = pf.Problem(pf.minimize(r.error()), [])
                    t = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", UserWarning)
                        res = prob.solve(privacy, backend=backend, seed=1, holdout=0,
                                         progress=False)
                    times.append(time.perf_counter() - t)
                out[side] = (times, passes[0], res)
            (tm, _, rm), (td, k, rd) = out["memory"], out["dask"]
            workers = client.run(_peak_rss_gb)
            diff = float(np.max(np.abs(np.asarray(rm.decision, float)
                                       - np.asarray(rd.decision, float))))
            same = (rm.certificate.epsilon, rm.certificate.delta) == (rd.certificate.epsilon,
                                                                      rd.certificate.delta)
            med = statistics.median(td)
            print(f"{backend}: in memory {statistics.median(tm):.2f} s "
                  f"({min(tm):.2f}–{max(tm):.2f}); Dask {med:.2f} s ({min(td):.2f}–{max(td):.2f}), "
                  f"{k} passes ({med / max(k, 1) * 1e3:.0f} ms a pass, rates' counting pass "
                  f"included); workers' peak RSS "
                  + ", ".join(f"{v:.2f}" for v in workers.values())
                  + f" GB; client {_peak_rss_gb():.2f} GB; certificate equal: {same} "
                  f"(ε = {rd.certificate.epsilon:.6g}); max |Δθ| = {diff:.2e}")
    finally:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()

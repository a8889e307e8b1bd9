"""Sparsity of the row-private output-perturbation release with a group norm (issue #20).

Usage::

    python bench/group_sparsity.py                       # radius 3 and 20, ε = ∞ and 1, seeds 0..2
    python bench/group_sparsity.py --radius 3 --eps 1 --seeds 0,1,2 --threshold 0

Adult (train 30,162 rows, test 15,060), its 101 features in 12 consecutive disjoint groups of
≤ 9, ``pf.SparseLinear(101, norm=pf.norms.group(groups), radius, l2=3e-3, intercept_bound=5,
feature_bound=1)`` (Λ in logistic-loss units), ``minimize(r.error())`` with the logistic
surrogate, ``backend="output_perturbation"``, δ = 1/n², no hold-out.  Prints per seed: CPU
seconds of the solve, calls of the group-ball projection, nonzero groups and coefficients of
the released w, and the test error.  docs/sparsity.md §3.1 reports its output.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np

import privfair as pf
from privfair.models import norms as N


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--radius", type=float, action="append")
    ap.add_argument("--eps", type=float, action="append")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--threshold", type=float, default=None,
                    help="output_perturbation's threshold option (default: the backend's)")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    calls = [0]
    project = N.GroupNorm.project

    def counted(self, x, r):             # count the projections of the solve
        calls[0] += 1
        return project(self, x, r)

    N.GroupNorm.project = counted
    train, test = pf.datasets.load_adult("train"), pf.datasets.load_adult("test")
    d = train.n_features
    groups = [list(range(k, min(k + 9, d))) for k in range(0, d, 9)]
    opts = {} if a.threshold is None else {"threshold": a.threshold}
    for radius in a.radius or [3.0, 20.0]:
        ds = pf.SparseLinear(d, norm=pf.norms.group(groups), radius=radius, l2=3e-3,
                             intercept_bound=5, feature_bound=1.0)
        r = pf.rates(ds, train, surrogate="logistic", feature_bound=1.0)
        prob = pf.Problem(pf.minimize(r.error()))
        for eps in a.eps or [math.inf, 1.0]:
            priv = (pf.DP(eps, 1.0 / train.n ** 2, protect="row") if math.isfinite(eps)
                    else pf.DP(math.inf, protect="row"))
            for s in ([0] if not math.isfinite(eps) else [int(x) for x in a.seeds.split(",")]):
                calls[0] = 0
                t = time.process_time()
                res = prob.solve(priv, backend="output_perturbation", seed=s, progress=False,
                                 holdout=0, **opts)
                cpu = time.process_time() - t
                w = np.asarray(res.decision)[:-1]
                err = float(np.mean(np.asarray(res.predict(test.X)) != test.y))
                print(f"radius={radius:g} eps={eps:g} seed={s}: cpu {cpu:.2f} s, projections "
                      f"{calls[0]}, nonzero groups {sum(int(np.any(w[g] != 0)) for g in groups)}"
                      f"/{len(groups)}, coefs {int((w != 0).sum())}/{d}, test error {err:.4f}",
                      flush=True)


if __name__ == "__main__":
    main()

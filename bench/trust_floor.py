"""The constant-rule floor (#18 item 3) where a private fit is worse than a constant: COMPAS with
race as six groups, the natural problem (LinearClassifier, logistic surrogate, demographic parity
over every pair ≤ 0.02, backend="auto"), ε = 1, protect="sensitive", with holdout=0.2 and
holdout=0 on the same seeds; scored on a 30% test split with the randomized rule's expected error.

    python bench/trust_floor.py [--seeds 10]
"""

import argparse
import itertools
import time
import warnings

import numpy as np

import privfair as pf


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    args = ap.parse_args()
    train, test = pf.datasets.load_compas("all").split(0.3, rng=0)
    const = min(np.mean(test.y), 1 - np.mean(test.y))
    print(f"COMPAS: {train.n} training rows, {test.n} test rows, groups {train.groups}; "
          f"best constant rule's test error {const:.4f}")
    for holdout in (0.2, 0.0):
        errs, gaps, statuses, backends, t0 = [], [], [], set(), time.perf_counter()
        for s in range(args.seeds):
            r = pf.rates(pf.LinearClassifier(train.n_features, radius=1.0), train,
                         surrogate="logistic")
            terms = [pf.abs(r.selection[g] - r.selection[h])
                     for g, h in itertools.combinations(train.groups, 2)]
            prob = pf.Problem(pf.minimize(r.error()), [pf.maximum(*terms) <= 0.02])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = prob.solve(pf.DP(1.0, 1.0 / train.n ** 2, protect="sensitive"), seed=s, progress=False,
                                 holdout=holdout)
            m = res.metrics(test)
            errs.append(m["error"])
            gaps.append(m["dp_violation"])
            statuses.append(res.status.split(" at level")[0].split(":")[0])
            backends.add(res.backend)
        errs = np.asarray(errs)
        kinds = {k: statuses.count(k) for k in sorted(set(statuses))}
        print(f"holdout={holdout:<4} backend {sorted(backends)}: test error {errs.mean():.4f} ± "
              f"{errs.std():.4f} (worst {errs.max():.4f}; above the constant by > 0.005 in "
              f"{int(np.sum(errs > const + 0.005))}/{len(errs)}), DP gap {np.mean(gaps):.4f} ± "
              f"{np.std(gaps):.4f}; status {kinds}  ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()

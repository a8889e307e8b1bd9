"""Bound the Gini index of the per-group error rates ([A] Def. 8.6) on COMPAS (all races).

The Gini index is quasi-convex; privfair uses the convex level-set form
Σ_{i,j} |l_i − l_j| − 2Kθ Σ_i l_i ≤ 0 with K the number of groups ([A] Def. 8.6 writes 2n;
for K subgroups the normaliser is K: docs/traps.md #17).

Run: python examples/gini_constraint.py [--subsample N] [--seed S] [--theta 0.2]
"""

import argparse
import itertools

import numpy as np

import privfair as pf
from privfair.scores import public_score


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--subsample", type=int, default=None)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--theta", type=float, default=0.2)
    args = ap.parse_args(argv)
    data = pf.datasets.load_compas(race="binary")
    train, test = data.split(test_size=0.3, rng=0)
    if args.subsample:
        train = train.subsample(min(args.subsample, train.n), rng=0)
    score = public_score(train)
    s = score(train.X)
    r = pf.rates(pf.Thresholds(np.quantile(s, np.linspace(0.05, 0.95, 50)), score=score), train,
                 group_mass_bound=0.05)
    # per-group error *joint* frequencies (fp + fn of each group, count/n)
    errs = [r.fp[g] + r.fn[g] for g in train.groups]
    K = len(errs)
    gini = pf.sum([pf.abs(a - b) for a, b in itertools.permutations(errs, 2)]) \
        - 2 * K * args.theta * pf.sum(errs)
    prob = pf.Problem(pf.minimize(r.error()), [gini <= 0])
    privacy = pf.DP(1.0, 1.0 / train.n ** 2, protect="sensitive")  # score: X, y
    print(prob.analyze(privacy))
    res = prob.solve(privacy, seed=args.seed)
    print(res.certificate)
    print("test metrics:", {k: round(v, 4) for k, v in res.metrics(test).items()})


if __name__ == "__main__":
    main()

"""Maximize the H-mean of the class recalls (a concave confusion-matrix measure, [A] Ex. 8.3)
privately, subject to a demographic-parity gap on Adult.

-H-mean is convex and Lipschitz on [0,1] (privfair proves it); -G-mean is convex too but its
gradient is unbounded near 0, so its Lipschitz constant is unknown and private backends refuse it
unless the recalls' range is bounded away from 0 — the script shows the refusal message.

Run: python examples/gmean_hmean.py [--subsample N] [--seed S]
"""

import argparse

import numpy as np

import privfair as pf
from privfair.scores import public_score


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--subsample", type=int, default=None)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args(argv)
    train, test = pf.datasets.load_adult("train"), pf.datasets.load_adult("test")
    if args.subsample:
        train = train.subsample(args.subsample, rng=0)
    score = public_score(train)
    s = score(train.X)
    r = pf.rates(pf.Thresholds(np.quantile(s, np.linspace(0.3, 0.99, 100)), score=score), train,
                 group_mass_bound=0.01)
    # overall recalls from the joint frequencies: TPR = Σ tp / P(y=1), TNR = Σ tn / P(y=0);
    # P(y=1) does not depend on the decision, so dividing by a public-free constant is avoided by
    # using the per-group recalls directly.
    g = train.groups
    recalls = [r.tpr[g[0]], r.tpr[g[1]], r.tnr[g[0]], r.tnr[g[1]]]
    gap = pf.abs(r.selection[g[0]] - r.selection[g[1]])
    privacy = pf.DP(1.0, 1.0 / train.n ** 2, protect="sensitive")  # score: X, y
    prob = pf.Problem(pf.maximize(pf.hmean(*recalls)), [gap <= 0.1])
    print(prob.analyze(privacy))
    res = prob.solve(privacy, seed=args.seed)
    print(res.certificate)
    print("test metrics:", {k: round(v, 4) for k, v in res.metrics(test).items()})
    gm = pf.Problem(pf.maximize(pf.gmean(*recalls)), [gap <= 0.1])
    print("\n-G-mean:", gm.plan(privacy).explain())


if __name__ == "__main__":
    main()

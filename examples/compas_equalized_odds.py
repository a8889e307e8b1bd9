"""COMPAS, equalized odds between African-American and Caucasian defendants, ε = 1.

Two decision sets side by side: thresholds of a public score (any backend; auto picks by the
theorems' predicted risk) and randomized rules on score × private-proxy cells (the cells backend).

Run: python examples/compas_equalized_odds.py [--subsample N] [--seed S]
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
    data = pf.datasets.load_compas(race="binary")          # African-American vs Caucasian
    train, test = data.split(test_size=0.3, rng=0)
    if args.subsample:
        train = train.subsample(min(args.subsample, train.n), rng=0)
    score = public_score(train)                              # from (X, y): public for protect="sensitive"
    s = score(train.X)
    r = pf.rates(pf.Thresholds(np.quantile(s, np.linspace(0.05, 0.95, 60)), score=score), train)
    a, b = train.groups
    privacy = pf.DP(1.0, 1.0 / train.n ** 2, protect="sensitive")
    cells = pf.rates(pf.ProxyCells(10, 4), train)
    for name, rr in (("thresholds", r), ("proxy cells", cells)):
        gap = pf.maximum(pf.abs(rr.fpr[a] - rr.fpr[b]), pf.abs(rr.tpr[a] - rr.tpr[b]))
        prob = pf.Problem(pf.minimize(rr.error()), [gap <= 0.1])
        print(f"== {name}\n" + prob.plan(privacy).explain())
        res = prob.solve(privacy, seed=args.seed, progress=False)
        print(res.certificate)
        print(name, "test:", {k: round(v, 4) for k, v in res.metrics(test).items()})


if __name__ == "__main__":
    main()

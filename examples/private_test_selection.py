"""Private selection of a powerful test at level α ([A] §1.3.3).

Each candidate test rejects H0 when a statistic exceeds a threshold; the data are labelled
samples (y = 1 under the alternative, y = 0 under the null).  Maximize power (TPR) subject to the
type-I error (FPR) being at most α — with the labels protected (protect="row": one sample is
replaced).  With a single group, the rates are TPR and FPR of that group.

Run: python examples/private_test_selection.py [--n N] [--seed S] [--alpha 0.05]
"""

import argparse

import numpy as np

import privfair as pf


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--alpha", type=float, default=0.05)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, args.n)
    stat = rng.normal(loc=1.5 * y, scale=1.0)                # the test statistic
    # one group, declared (the schema is public): labels 0/1 are the default declared set
    data = pf.Dataset(stat[:, None], y, sensitive=np.zeros(args.n, dtype=int), group_names=["0"])
    tests = pf.Thresholds(np.linspace(0.0, 3.5, 141), score=0)
    # public design: each hypothesis is at least 40% of the samples
    r = pf.rates(tests, data, group_mass_bound=0.4)
    g = data.groups[0]
    prob = pf.Problem(pf.maximize(r.tpr[g]), [r.fpr[g] <= args.alpha])
    privacy = pf.DP(1.0, protect="row")
    res = prob.solve(privacy, seed=args.seed, alpha=0.05)
    t = float(res.decision)
    from scipy.stats import norm
    print(res.certificate)
    print(f"chosen threshold {t:.3f}: true type-I error {norm.sf(t):.4f} (level {args.alpha}), "
          f"true power {norm.sf(t - 1.5):.4f}; the most powerful level-{args.alpha} test "
          f"has threshold {norm.isf(args.alpha):.3f} and power {norm.sf(norm.isf(args.alpha) - 1.5):.4f}")


if __name__ == "__main__":
    main()

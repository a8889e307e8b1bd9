"""Equalized odds on Adult with whole records protected: randomized group thresholds.

    python examples/group_thresholds_row.py [--subsample N] [--epsilon 1.0] [--level 0.02]
                                            [--plot roc.png] [--seed S]

``pf.PostProcessed(pf.LinearClassifier(d))`` under ``protect="row"``: the ``postprocessing``
backend trains the linear score privately (``lagrangian_sgda``, 70% of ε), cuts its margin into
public levels, releases the counts N[level, group, label] once (Laplace) and solves an LP for a
randomized threshold per group — (ε, δ)-DP for a whole row, one certificate for both releases.
The rule reads the group at prediction time (``predict(X, sensitive=...)``), as fairlearn's
``ThresholdOptimizer``.  Prints the plan, the certificate and the test metrics beside the
group-blind ``pf.LinearClassifier`` + ``backend="auto"`` of the same problem; ``--plot`` saves
each group's test ROC curve of the private score with the rule's operating points — equalized
odds asks the points to coincide (docs/trust.md, "Group thresholds").
"""

import argparse
import warnings

import numpy as np

import privfair as pf


def problem(decisions, train, level):
    r = pf.rates(decisions, train)
    gap = pf.maximum(pf.abs(r.fpr["Female"] - r.fpr["Male"]),
                     pf.abs(r.tpr["Female"] - r.tpr["Male"]))
    return pf.Problem(pf.minimize(r.error()), [gap <= level])


def operating_points(result, test):
    """Each group's (false-positive rate, true-positive rate) of the randomized rule on test."""
    names = np.asarray(test.groups, dtype=object)
    p = result.predict_proba(test.X, sensitive=names[test.group])
    return {g: (p[(test.group == k) & (test.y == 0)].mean(), p[(test.group == k) & (test.y == 1)].mean())
            for k, g in enumerate(test.groups)}


def plot(result, test, path):
    """The private score's test ROC curve per group and the released rule's operating points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    score = result.decision.base(test.X)
    fig, ax = plt.subplots(figsize=(5, 5))
    points = operating_points(result, test)
    for k, g in enumerate(test.groups):
        s, y = score[test.group == k], test.y[test.group == k]
        ts = np.sort(np.unique(s))[::-1]
        fpr = [np.mean(s[y == 0] >= t) for t in ts]
        tpr = [np.mean(s[y == 1] >= t) for t in ts]
        line, = ax.plot([0] + fpr, [0] + tpr, label=f"{g}: ROC of the private score")
        ax.plot(*points[g], "o", color=line.get_color(), markersize=9,
                label=f"{g}: the rule (FPR {points[g][0]:.3f}, TPR {points[g][1]:.3f})")
    ax.plot([0, 1], [0, 1], ":", color="grey")
    ax.set_xlabel("false-positive rate (test)")
    ax.set_ylabel("true-positive rate (test)")
    ax.set_title("Randomized group thresholds, whole rows private")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--subsample", type=int, default=None, help="train on N random rows (smoke test)")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--level", type=float, default=0.02, help="equalized-odds bound")
    ap.add_argument("--plot", default=None, help="save the ROC plot here (PNG)")
    ap.add_argument("--seed", type=int, default=None, help="reproducible noise (not for real releases)")
    args = ap.parse_args(argv)

    train, test = pf.datasets.load_adult("train"), pf.datasets.load_adult("test")
    if args.subsample:
        train = train.subsample(args.subsample, rng=0)
    privacy = pf.DP(args.epsilon, 1e-5, protect="row")
    thresholds = problem(pf.PostProcessed(pf.LinearClassifier(train.n_features)), train, args.level)
    print(thresholds.plan(privacy).explain(refused=False), "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # the status is printed below
        res = thresholds.solve(privacy, seed=args.seed, progress=False)
        blind = problem(pf.LinearClassifier(train.n_features), train, args.level).solve(
            privacy, seed=args.seed, progress=False)
    print(res.certificate, "\n")
    for name, r in (("group thresholds (postprocessing)", res),
                    (f"group-blind linear rule ({blind.backend})", blind)):
        m = r.metrics(test)
        print(f"{name}: status {r.status}; test error {m['error']:.4f}, "
              f"equalized-odds gap {m['eo_violation']:.4f} (asked ≤ {args.level:g})")
    if args.plot and res.backend == "postprocessing" and not res.status.startswith("fallback"):
        plot(res, test, args.plot)
        print(f"ROC plot: {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

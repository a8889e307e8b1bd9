"""A PROBLEM.py for ``privfair solve``: equalized odds on UCI Adult (the ``cells`` backend).

    privfair solve examples/problem_adult_eo.py --epsilon 1 --protect sensitive --report adult_eo.html
    privfair report examples/problem_adult_eo.py --epsilon 1 --protect sensitive
    PRIVFAIR_SUBSAMPLE=3000 privfair solve examples/problem_adult_eo.py --epsilon 1 --protect sensitive --seed 0
    python examples/problem_adult_eo.py --subsample 3000 --seed 0      # the same, via main()

The file follows the command line's convention (docs/cli.md): it defines ``build()``, which
returns the problem — minimize the training error subject to max(|ΔFPR|, |ΔTPR|) ≤ 0.03
(Female vs Male) over randomized rules on score × proxy cells — and the test split, on which
``privfair solve`` also reports the metrics.  The environment variable ``PRIVFAIR_SUBSAMPLE``
(an integer) trains on that many random rows, for quick runs and tests.

The cells rules protect one row's sex (``--protect sensitive``: their public score reads X and
y); under the command line's default, ``--protect row`` (whole rows), no backend takes them and
the refusal says so.
"""

import argparse
import os
import pathlib

import privfair as pf

LEVEL = 0.03


def build():
    """``(problem, test)``: the equalized-odds problem on Adult's training split, and its test split."""
    train, test = pf.datasets.load_adult("train"), pf.datasets.load_adult("test")
    sub = os.environ.get("PRIVFAIR_SUBSAMPLE")
    if sub:
        if not sub.isdigit() or int(sub) < 1:
            raise ValueError(f"PRIVFAIR_SUBSAMPLE={sub!r}: pass a positive integer")
        train = train.subsample(min(int(sub), train.n), rng=0)
    bins = (20, 8) if train.n >= 20_000 else (10, 4)
    cells = pf.ProxyCells(*bins, feature_groups=pf.datasets.adult_proxy_feature_groups(train))
    r = pf.rates(cells, train)
    gap = pf.maximum(pf.abs(r.fpr["Female"] - r.fpr["Male"]),
                     pf.abs(r.tpr["Female"] - r.tpr["Male"]))
    return pf.Problem(pf.minimize(r.error()), [gap <= LEVEL]), test


def main(argv=None):
    """Run ``privfair solve`` on this file (``--subsample N`` sets ``PRIVFAIR_SUBSAMPLE``)."""
    from privfair.cli import main as cli

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--subsample", type=int, default=None, help="train on N random rows")
    ap.add_argument("--epsilon", default="1.0")
    ap.add_argument("--seed", default=None, help="reproducible noise (not for real releases)")
    args = ap.parse_args(argv)
    argv = ["solve", str(pathlib.Path(__file__).resolve()), "--epsilon", args.epsilon,
            "--protect", "sensitive"]
    if args.seed is not None:
        argv += ["--seed", args.seed]
    old = os.environ.get("PRIVFAIR_SUBSAMPLE")
    if args.subsample:
        os.environ["PRIVFAIR_SUBSAMPLE"] = str(args.subsample)
    try:
        code = cli(argv)
    finally:
        if old is None:
            os.environ.pop("PRIVFAIR_SUBSAMPLE", None)
        else:
            os.environ["PRIVFAIR_SUBSAMPLE"] = old
    if code:
        raise SystemExit(code)


if __name__ == "__main__":
    main()

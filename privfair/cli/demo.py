"""The main job on bundled data: a private fair fit on UCI Adult.

``privfair demo`` (or ``python -m privfair demo``) states the equalized-odds (or demographic-
parity) problem on Adult, prints what the compiler proved, the planner's ranking, the privacy
certificate of the fit and the test metrics.

Privacy unit: ``protect="sensitive"`` — one row's sex may change (features and labels are not
protected under this relation).  Decision set: randomized rules on the cells of a public score ×
a private proxy of sex (:class:`privfair.ProxyCells`); ``backend="auto"`` picks ``cells``.

``--protect row`` (the library's default unit, whole rows protected) states the problem a new
user writes instead — a group-blind :class:`privfair.LinearClassifier` — which ``auto`` solves
with ``lagrangian_sgda`` (the cells rules read X and y, which that unit protects).
"""

from __future__ import annotations

import time

import privfair as pf

from .args import MIN_SUBSAMPLE, epsilon_arg, seed_arg, subsample_arg
from .errors import EXIT_OK


def build_problem(train, constraint="equalized_odds", level=None, protect="sensitive"):
    """Minimize the error subject to an equalized-odds (≤ 0.03) or DP (≤ 0.01) constraint, over
    the cells rules (``protect="sensitive"``) or a linear rule (``"row"``)."""
    if protect == "row":
        r = pf.rates(pf.LinearClassifier(train.n_features), train)
    else:
        bins = (20, 8) if train.n >= 20_000 else (10, 4)
        cells = pf.ProxyCells(*bins,
                              feature_groups=pf.datasets.adult_proxy_feature_groups(train))
        r = pf.rates(cells, train)
    if constraint == "equalized_odds":
        gap = pf.maximum(pf.abs(r.fpr["Female"] - r.fpr["Male"]),
                         pf.abs(r.tpr["Female"] - r.tpr["Male"]))
        level = 0.03 if level is None else level
    else:
        gap = pf.abs(r.selection["Female"] - r.selection["Male"])
        level = 0.01 if level is None else level
    return pf.Problem(pf.minimize(r.error()), [gap <= level])


def run_demo(epsilon=1.0, constraint="equalized_odds", seed=None, subsample=None,
             protect="sensitive"):
    t0 = time.perf_counter()
    train, test = pf.datasets.load_adult("train"), pf.datasets.load_adult("test")
    if subsample:
        train = train.subsample(subsample, rng=0)
    privacy = pf.DP(epsilon, 1.0 / train.n ** 2, protect=protect)
    problem = build_problem(train, constraint, protect=protect)
    unit = ("one row's sex (protect='sensitive'; --protect row protects whole rows)"
            if protect == "sensitive" else "one whole row (protect='row')")
    print(f"privfair {pf.__version__} — {constraint.replace('_', ' ')} on UCI Adult "
          f"({train.n} train rows, {test.n} test rows); privacy unit: {unit}\n")
    print(problem, "\n")
    print(problem.analyze(privacy), "\n")
    print(problem.plan(privacy).explain(), "\n")
    result = problem.solve(privacy, seed=seed, progress=False)
    print(result.certificate, "\n")
    if "note" in result.info:
        print("note:", result.info["note"], "\n")
    m = result.metrics(test)
    print(f"backend: {result.backend}   test error {m['error']:.4f}   "
          f"DP violation {m['dp_violation']:.4f}   EO violation {m['eo_violation']:.4f}   "
          f"(expected prediction of the randomized rule; {time.perf_counter() - t0:.1f} s)")
    return result, m


def cmd_demo(args) -> int:
    run_demo(epsilon=args.epsilon, constraint=args.constraint, seed=args.seed,
             subsample=args.subsample, protect=args.protect)
    return EXIT_OK


def add_parser(sub) -> None:
    """Register the command on ``sub`` (argparse's subparsers)."""
    p = sub.add_parser("demo", help="private fair fit on bundled Adult: analysis, certificate, "
                       "metrics", description="The main job: a private fair fit on the bundled "
                       "UCI Adult data.")
    p.add_argument("--epsilon", type=epsilon_arg, default=1.0, help="privacy budget ε (default 1)")
    p.add_argument("--constraint", choices=["equalized_odds", "demographic_parity"],
                   default="equalized_odds")
    p.add_argument("--protect", choices=["sensitive", "row"], default="sensitive",
                   help="privacy unit: one row's sex (default: the cells rules) or one whole "
                        "row (a linear rule, lagrangian_sgda)")
    p.add_argument("--seed", type=seed_arg, default=None, help="seed for a reproducible run")
    p.add_argument("--subsample", type=subsample_arg, default=None,
                   help=f"use only this many training rows (at least {MIN_SUBSAMPLE})")
    p.set_defaults(func=cmd_demo)

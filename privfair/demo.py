"""The main job on bundled data: a private fair fit on UCI Adult.

``privfair demo`` (or ``python -m privfair demo``) builds the equalized-odds (or demographic-
parity) problem on Adult, prints what the compiler proved, the planner's ranking, the privacy
certificate of the fit and the test metrics.

Privacy unit: ``protect="sensitive"`` — one row's sex may change; features and labels are not
protected under this relation, so a score learned from (X, y) alone is public and the decision
set (thresholds on that score mixed by the backend) is too.
"""

from __future__ import annotations

import time

import numpy as np

import privfair as pf


def public_score(data):
    """A logistic-regression score learned from (X, y) only: public under protect='sensitive'."""
    from scipy.optimize import minimize as _minimize
    from scipy.special import expit

    X = np.hstack([data.X, np.ones((data.n, 1))])
    y = data.y.astype(float)

    def loss(w):
        z = X @ w
        return (np.logaddexp(0, z) - y * z).mean() + 1e-4 * w @ w, X.T @ (expit(z) - y) / len(y) + 2e-4 * w

    w = _minimize(loss, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B").x
    return lambda Z: np.asarray(Z, dtype=float) @ w[:-1] + w[-1]


def build_problem(train, constraint="equalized_odds", level=0.02, grid=200):
    """The problem of the architecture sketch, on thresholds of the public score."""
    score = public_score(train)
    s = score(train.X)
    decisions = pf.Thresholds(np.quantile(s, np.linspace(0.5, 0.995, grid)), score=score)
    r = pf.rates(decisions, train)
    if constraint == "equalized_odds":
        gap = pf.lse(pf.abs(r.fpr["Female"] - r.fpr["Male"]),
                     pf.abs(r.tpr["Female"] - r.tpr["Male"]), eta=50)
    else:
        gap = pf.abs(r.selection["Female"] - r.selection["Male"])
    return pf.Problem(pf.minimize(r.error()), [gap <= level])


def run_demo(epsilon=1.0, constraint="equalized_odds", seed=None, subsample=None):
    t0 = time.perf_counter()
    train, test = pf.datasets.load_adult("train"), pf.datasets.load_adult("test")
    if subsample:
        train = train.subsample(subsample, rng=0)
    privacy = pf.DP(epsilon, 1.0 / train.n ** 2, protect="sensitive")
    problem = build_problem(train, constraint)
    print(f"privfair {pf.__version__} — {constraint.replace('_', ' ')} on UCI Adult "
          f"({train.n} train rows, {test.n} test rows), privacy unit: one row's sex\n")
    print(problem, "\n")
    print(problem.analyze(privacy), "\n")
    print(problem.plan(privacy).explain(), "\n")
    result = problem.solve(privacy, seed=seed)
    print(result.certificate, "\n")
    m = result.metrics(test)
    print(f"backend: {result.backend}   test error {m['error']:.4f}   "
          f"DP violation {m['dp_violation']:.4f}   EO violation {m['eo_violation']:.4f}   "
          f"(expected prediction of the mixture; {time.perf_counter() - t0:.1f} s)")
    return result, m

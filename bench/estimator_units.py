"""The scikit-learn estimator's defaults under both privacy units, on Adult (docs/privacy.md,
*The default unit*).

    python bench/estimator_units.py [--seeds 5]

``PrivateFairClassifier(groups=..., classes=[0, 1], constraint=..., seed=s)`` with its defaults
(level 0.03, ε = 1, δ = 1/n², ``decision_set="auto"``) under ``protect="row"`` (the default: a
linear rule, ``lagrangian_sgda``) and ``protect="sensitive"`` (the cells rules), fitted on
adult.data and scored on adult.test by the randomized classifier's expected prediction: test
error and the constraint's gap, mean ± standard deviation over the seeds, and the statuses.
"""

import argparse
import warnings

import numpy as np

import privfair as pf
from privfair.sklearn import PrivateFairClassifier


def gap(p, y, a, constraint):
    """The largest between-group gap of the expected prediction ``p``."""
    if constraint == "demographic_parity":
        return abs(p[a == "Female"].mean() - p[a == "Male"].mean())
    return max(abs(p[(y == k) & (a == "Female")].mean() - p[(y == k) & (a == "Male")].mean())
               for k in (0, 1))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args(argv)
    train, test = pf.datasets.load_adult("train"), pf.datasets.load_adult("test")
    a_train, a_test = np.asarray(train.sensitive), np.asarray(test.sensitive)
    print("| unit | constraint ≤ 0.03 | backend | test error | test gap | statuses |")
    print("| --- | --- | --- | --- | --- | --- |")
    for protect in ("row", "sensitive"):
        for constraint in ("equalized_odds", "demographic_parity"):
            errs, gaps, statuses, backends = [], [], [], set()
            for seed in range(args.seeds):
                clf = PrivateFairClassifier(groups=list(train.group_values), classes=[0, 1],
                                            constraint=constraint, seed=seed, protect=protect)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    clf.fit(train.X, train.y, sensitive_features=a_train)
                p = clf.predict_proba(test.X)[:, 1]
                errs.append(np.mean(np.where(test.y == 1, 1 - p, p)))
                gaps.append(gap(p, test.y, a_test, constraint))
                statuses.append(clf.status_.split(" at level")[0])
                backends.add(clf.backend_)
            kinds = ", ".join(f"{k} ×{statuses.count(k)}" for k in sorted(set(statuses)))
            print(f"| {protect} | {constraint} | {', '.join(sorted(backends))} | "
                  f"{np.mean(errs):.4f} ± {np.std(errs, ddof=1):.4f} | "
                  f"{np.mean(gaps):.4f} ± {np.std(gaps, ddof=1):.4f} | {kinds} |", flush=True)


if __name__ == "__main__":
    main()

"""Per-group rates of a released decision on *held-out* data (:func:`group_rates`): the report
never shows exact statistics of the private training data, so the training rows passed as
``test`` are refused (:func:`check_held_out`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..data.dataset import Dataset
from ..errors import InvalidInputError
from ..results.result import Result


@dataclass
class GroupRates:
    """Per-group rates of a released decision's expected prediction on held-out data."""

    groups: list              # names
    n: list                   # rows of each group in the held-out data
    selection: list           # P(ŷ = 1 | group)
    tpr: list                 # P(ŷ = 1 | group, y = 1); nan where the group has no positive
    fpr: list                 # P(ŷ = 1 | group, y = 0); nan where the group has no negative
    metrics: dict             # result.metrics(test): error, dp_violation, eo_violation
    rows: int                 # held-out rows in all


def _same_rows(a, b):
    """True when two Datasets hold the same rows (the training data passed as 'held-out')."""
    if a is b:
        return True
    try:
        return (a.n == b.n and np.array_equal(a.y, b.y) and np.array_equal(a.group, b.group)
                and np.array_equal(a.X, b.X))
    except Exception:   # pragma: no cover - shapes that do not compare
        return False


def group_rates(result, test):
    """:class:`GroupRates` of ``result`` on ``test`` (binary labels), or a sentence saying why
    there are none.  ``test`` must be held-out data: a report never shows exact statistics of
    the private training data."""
    if result is None:
        return None, ("No per-group rate plot: the report was given no released decision "
                      "(pass result=problem.solve(...) and held-out data test=...).")
    if test is None:
        return None, ("No per-group rate plot: no held-out data was given (pass test=...). "
                      "The training data is private and a report never shows its exact "
                      "statistics.")
    if getattr(result, "n_classes", 2) > 2 or getattr(test, "n_labels", 2) != 2:
        return None, ("No per-group rate plot: selection rate, TPR and FPR are defined for "
                      "binary labels; this decision has more classes.")
    p = result.predict_proba(test.X, getattr(test, "sensitive", None))
    y, a = np.asarray(test.y), np.asarray(test.group)

    def mean(mask):
        return float(p[mask].mean()) if mask.any() else math.nan

    names, ns, sel, tpr, fpr = [], [], [], [], []
    for k, name in enumerate(test.groups):
        m = a == k
        names.append(str(name))
        ns.append(int(m.sum()))
        sel.append(mean(m))
        tpr.append(mean(m & (y == 1)))
        fpr.append(mean(m & (y == 0)))
    return GroupRates(names, ns, sel, tpr, fpr, result.metrics(test), int(test.n)), ""


def check_held_out(result, test, problem):
    """``result`` a privfair.Result, ``test`` a held-out Dataset (never the training rows)."""
    if result is not None and not isinstance(result, Result):
        raise InvalidInputError("result", type(result).__name__,
                                "pass the privfair.Result of problem.solve(...), or None")
    if test is not None:
        if not isinstance(test, Dataset):
            raise InvalidInputError("test", type(test).__name__,
                                    "pass held-out data as a privfair.Dataset, or None")
        if _same_rows(test, problem.rates.data):
            raise InvalidInputError("test", "the training data",
                                    "a report never shows exact statistics of the private "
                                    "training data: pass held-out rows (e.g. the test split)")

"""Fairness and accuracy metrics, as defined in BENCHMARKS.md.

All functions accept hard predictions in {0, 1} or *expected* predictions in [0, 1] (the
probability that a randomized classifier — a mixture — predicts 1); with expected predictions
the metrics are the expectations over the classifier's randomness.  With K > 2 classes pass an
(n, K) matrix of class probabilities (rows sum to 1; hard labels as one-hot rows) and label codes
0..K−1: the error is 1 − mean P(ŷ = y), demographic parity the largest gap of P(ŷ = k | group)
over classes k, equalized odds the largest gap of P(ŷ = k | y, group) over (y, k) — for K = 2
the same numbers as the binary forms.  With hard predictions they
agree with fairlearn's ``demographic_parity_difference`` and ``equalized_odds_difference``
(largest gap between any two groups).

Examples
--------
>>> import numpy as np
>>> from privfair.metrics import dp_violation
>>> dp_violation(np.array([1, 0, 1, 1]), np.array(["a", "a", "b", "b"]))
0.5
"""

from __future__ import annotations

import numpy as np

from .errors import InvalidInputError


def _arrays(y_pred, sensitive, y_true=None):
    p = np.asarray(y_pred, dtype=float).ravel()
    a = np.asarray(sensitive)
    if a.ndim > 1:  # several attributes: intersectional groups
        a = np.array(["|".join(map(str, row)) for row in a])
    if len(a) != len(p):
        raise InvalidInputError("sensitive", f"length {len(a)}",
                                f"needs one value per prediction ({len(p)})")
    if np.any((p < 0) | (p > 1)) or np.any(~np.isfinite(p)):
        raise InvalidInputError("y_pred", "values outside [0, 1]",
                                "pass hard predictions or expected predictions in [0, 1]")
    if y_true is not None:
        y = np.asarray(y_true).ravel()
        if len(y) != len(p):
            raise InvalidInputError("y_true", f"length {len(y)}", f"needs length {len(p)}")
        return p, a, y
    return p, a


def error(y_true, y_pred) -> float:
    """Expected 0-1 error: mean of |y − p|."""
    y = np.asarray(y_true, dtype=float).ravel()
    p = np.asarray(y_pred, dtype=float).ravel()
    return float(np.mean(np.abs(y - p)))


def _gap(values):
    return float(max(values) - min(values)) if len(values) > 1 else 0.0


def selection_rates(y_pred, sensitive) -> dict:
    """P(ŷ = 1 | group) for every group."""
    p, a = _arrays(y_pred, sensitive)
    return {g: float(p[a == g].mean()) for g in np.unique(a)}


def dp_violation(y_pred, sensitive) -> float:
    """Demographic-parity violation: max − min over groups of P(ŷ = 1 | group)."""
    return _gap(list(selection_rates(y_pred, sensitive).values()))


def eo_violation(y_true, y_pred, sensitive) -> float:
    """Equalized-odds violation: max(gap of FPR, gap of TPR) over groups (binary labels).

    Groups without a row of some label are skipped for that rate.
    """
    p, a, y = _arrays(y_pred, sensitive, y_true)
    gaps = []
    for label in (0, 1):
        rates = [p[(a == g) & (y == label)].mean() for g in np.unique(a)
                 if np.any((a == g) & (y == label))]
        gaps.append(_gap(rates))
    return float(max(gaps))


def _class_matrix(y_pred, sensitive, y_true):
    P = np.asarray(y_pred, dtype=float)
    a = np.asarray(sensitive)
    if a.ndim > 1:
        a = np.array(["|".join(map(str, row)) for row in a])
    y = np.asarray(y_true).ravel()
    if not (len(a) == len(y) == len(P)):
        raise InvalidInputError("y_pred", f"{len(P)} rows",
                                f"needs one row per label ({len(y)}) and per group ({len(a)})")
    if (not np.isfinite(P).all() or (P < -1e-12).any() or (P > 1 + 1e-12).any()
            or not np.allclose(P.sum(axis=1), 1.0, atol=1e-9)):
        raise InvalidInputError("y_pred", "rows that are not distributions",
                                "pass class probabilities in [0, 1] whose rows sum to 1")
    if not np.issubdtype(y.dtype, np.integer) or (y < 0).any() or (y >= P.shape[1]).any():
        raise InvalidInputError("y_true", "labels outside 0..K-1",
                                f"pass label codes 0..{P.shape[1] - 1} (Dataset.y)")
    return P, a, y


def summary_multiclass(y_true, y_pred, sensitive) -> dict:
    """``{"error", "dp_violation", "eo_violation"}`` for (n, K) class probabilities."""
    P, a, y = _class_matrix(y_pred, sensitive, y_true)
    groups = np.unique(a)
    dp = max(_gap([P[a == g, k].mean() for g in groups]) for k in range(P.shape[1]))
    eo = 0.0
    for label in np.unique(y):
        rows = [(a == g) & (y == label) for g in groups]
        rows = [m for m in rows if m.any()]
        eo = max(eo, max(_gap([P[m, k].mean() for m in rows]) for k in range(P.shape[1])))
    return {"error": float(1.0 - P[np.arange(len(y)), y].mean()), "dp_violation": float(dp),
            "eo_violation": float(eo)}


def summary(y_true, y_pred, sensitive) -> dict:
    """``{"error", "dp_violation", "eo_violation"}`` on one dataset (an (n, K) ``y_pred``:
    :func:`summary_multiclass`)."""
    if np.ndim(y_pred) == 2 and np.shape(y_pred)[1] > 1:
        return summary_multiclass(y_true, y_pred, sensitive)
    return {"error": error(y_true, y_pred),
            "dp_violation": dp_violation(y_pred, sensitive),
            "eo_violation": eo_violation(y_true, y_pred, sensitive)}

"""Fairness and accuracy metrics, as defined in BENCHMARKS.md, with fairlearn's calling convention.

Every group metric takes ``(y_true, y_pred, *, sensitive_features=...)`` as fairlearn's
``demographic_parity_difference`` and ``equalized_odds_difference`` do, and the same
``method="between_groups"`` (largest gap between any two groups, the default) or
``"to_overall"`` (largest gap between a group and the whole population).  Demographic parity
does not read ``y_true``; ``dp_violation(y_pred, sensitive_features=a)`` is accepted too.

The older privfair order ``dp_violation(y_pred, sensitive)`` (and ``selection_rates``) still works
when the groups cannot be mistaken for predictions — labels such as ``"Female"``, or several
attribute columns; with numeric group codes the two-argument call could equally be fairlearn's
``(y_true, y_pred)`` with the groups forgotten, so it raises an
:class:`~privfair.errors.InvalidInputError` naming ``sensitive_features`` instead of guessing.

All functions accept hard predictions in {0, 1} or *expected* predictions in [0, 1] (the
probability that a randomized classifier — a mixture — predicts 1); with expected predictions
the metrics are the expectations over the classifier's randomness.  With K > 2 classes pass an
(n, K) matrix of class probabilities (rows sum to 1; hard labels as one-hot rows) and label codes
0..K−1: the error is 1 − mean P(ŷ = y), demographic parity the largest gap of P(ŷ = k | group)
over classes k, equalized odds the largest gap of P(ŷ = k | y, group) over (y, k) — for K = 2
the same numbers as the binary forms.  With hard predictions they
agree with fairlearn's ``demographic_parity_difference`` and ``equalized_odds_difference``.

:func:`max_gap` is fairlearn's ``MetricFrame.difference(method="between_groups")`` for any
per-group values, and :func:`by_group` computes them for any metric.

Examples
--------
>>> import numpy as np
>>> from privfair.statistics.metrics import dp_violation, max_gap, by_group, error
>>> y, p = np.array([0, 1, 1, 0]), np.array([1, 0, 1, 1])
>>> a = np.array(["a", "a", "b", "b"])
>>> dp_violation(y, p, sensitive_features=a)
0.5
>>> dp_violation(p, a)                      # the older order, unambiguous with group names
0.5
>>> max_gap(by_group(error, y, p, sensitive_features=a))
0.5
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import numpy as np

from ..errors import InvalidInputError

METHODS = ("between_groups", "to_overall")


def _group_labels(sensitive):
    a = np.asarray(sensitive)
    if a.ndim > 1:  # several attributes: intersectional groups
        a = np.array(["|".join(map(str, row)) for row in a])
    return a


def _arrays(y_pred, sensitive, y_true=None):
    p = np.asarray(y_pred, dtype=float).ravel()
    a = _group_labels(sensitive)
    if len(a) != len(p):
        raise InvalidInputError("sensitive_features", f"length {len(a)}",
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


def _check_method(method):
    if method not in METHODS:
        raise InvalidInputError("method", method, f"choose one of {list(METHODS)} (as fairlearn)")


def _groups(name, sensitive, sensitive_features):
    """The groups, passed as fairlearn's ``sensitive_features=`` or privfair's ``sensitive``."""
    if sensitive is not None and sensitive_features is not None:
        raise InvalidInputError("sensitive_features", "given twice",
                                f"pass the groups once: {name}(y_true, y_pred, "
                                "sensitive_features=groups)")
    return sensitive_features if sensitive_features is not None else sensitive


def _cannot_be_predictions(values) -> bool:
    """Group labels that no prediction vector looks like: text, or several attribute columns."""
    arr = np.asarray(values, dtype=object if not hasattr(values, "dtype") else None)
    if arr.ndim != 1:
        return arr.ndim > 1
    if arr.dtype.kind in "biuf":
        return False
    return not all(isinstance(v, (numbers.Number, np.bool_)) for v in arr.tolist())


def _labels_free_args(name, y_true, y_pred, sensitive, sensitive_features):
    """(y_true or None, y_pred, groups) for a metric that does not read the labels."""
    groups = _groups(name, sensitive, sensitive_features)
    if groups is None:
        if y_true is not None and y_pred is not None and _cannot_be_predictions(y_pred):
            return None, y_true, y_pred             # the older order (y_pred, sensitive)
        raise InvalidInputError(
            "sensitive_features", None,
            f"pass the groups by keyword, as fairlearn: {name}(y_true, y_pred, "
            f"sensitive_features=groups) (or {name}(y_pred, sensitive_features=groups)); "
            f"{name}(u, v) with numeric v is not guessed: fairlearn's order reads it as "
            "(y_true, y_pred), privfair's older one as (y_pred, sensitive)")
    if y_pred is None:                              # name(y_pred, sensitive_features=groups)
        y_true, y_pred = None, y_true
    if y_pred is None:
        raise InvalidInputError("y_pred", None, f"pass the predictions: {name}(y_true, y_pred, "
                                "sensitive_features=groups)")
    return y_true, y_pred, groups


def _labelled_args(name, y_true, y_pred, sensitive, sensitive_features):
    groups = _groups(name, sensitive, sensitive_features)
    if groups is None:
        raise InvalidInputError("sensitive_features", None,
                                f"pass the groups: {name}(y_true, y_pred, sensitive_features=groups)")
    return groups


def error(y_true, y_pred) -> float:
    """Expected 0-1 error: mean of |y − p|."""
    y = np.asarray(y_true, dtype=float).ravel()
    p = np.asarray(y_pred, dtype=float).ravel()
    return float(np.mean(np.abs(y - p)))


def _gap(values):
    return float(max(values) - min(values)) if len(values) > 1 else 0.0


def _gap_to(values, overall):
    return float(max(abs(v - overall) for v in values)) if len(values) else 0.0


def max_gap(values_by_group) -> float:
    """The largest gap over all pairs of groups: max_{g,h} |v_g − v_h| = max − min.

    fairlearn's ``MetricFrame(...).difference(method="between_groups")`` for one metric.
    NaN values (a group where the metric is undefined) are skipped, as pandas does; fewer
    than two values give 0.

    Parameters
    ----------
    values_by_group : dict, pandas.Series or 1-D array
        One value per group, e.g. :func:`by_group`'s dict or a ``MetricFrame.by_group`` column.

    Examples
    --------
    >>> max_gap({"a": 0.25, "b": 0.5, "c": 0.375})
    0.25
    """
    vals = list(values_by_group.values()) if isinstance(values_by_group, Mapping) else values_by_group
    try:
        arr = np.asarray(vals, dtype=float)
    except (TypeError, ValueError):
        raise InvalidInputError("values_by_group", type(values_by_group).__name__,
                                "pass one number per group: a dict, a pandas Series or a 1-D "
                                "array") from None
    if arr.ndim != 1:
        raise InvalidInputError("values_by_group", f"shape {arr.shape}",
                                "pass one number per group (for several metrics, one call each)")
    arr = arr[~np.isnan(arr)]
    return _gap(arr.tolist())


def by_group(metric, y_true, y_pred, *, sensitive_features) -> dict:
    """``{group: metric(y_true[rows of group], y_pred[rows of group])}`` (fairlearn's
    ``MetricFrame(metrics=metric, ...).by_group`` as a dict).

    Several attribute columns give intersectional groups ``"F|W"``.
    """
    a = _group_labels(sensitive_features)
    y, p = np.asarray(y_true), np.asarray(y_pred)
    if not (len(a) == len(y) == len(p)):
        raise InvalidInputError("sensitive_features", f"length {len(a)}",
                                f"needs one value per row of y_true ({len(y)}) and y_pred "
                                f"({len(p)})")
    return {g: metric(y[a == g], p[a == g]) for g in np.unique(a)}


def selection_rates(y_true=None, y_pred=None, sensitive=None, *, sensitive_features=None) -> dict:
    """P(ŷ = 1 | group) for every group.

    Call as ``selection_rates(y_true, y_pred, sensitive_features=a)`` (``y_true`` is not read;
    ``None`` is fine) or ``selection_rates(y_pred, sensitive_features=a)``; see the module
    docstring for the older ``selection_rates(y_pred, sensitive)``.
    """
    y_true, y_pred, groups = _labels_free_args("selection_rates", y_true, y_pred, sensitive,
                                               sensitive_features)
    p, a = _arrays(y_pred, groups, y_true)[:2]
    return {g: float(p[a == g].mean()) for g in np.unique(a)}


def dp_violation(y_true=None, y_pred=None, sensitive=None, *, sensitive_features=None,
                 method: str = "between_groups") -> float:
    """Demographic-parity violation: the largest gap of P(ŷ = 1 | group).

    Parameters
    ----------
    y_true : array-like or None
        Not read (demographic parity ignores the labels); its length is checked.  Accepted for
        fairlearn's convention ``(y_true, y_pred, *, sensitive_features)``.
    y_pred : array-like
        Hard predictions in {0, 1} or expected predictions in [0, 1].
    sensitive_features : array-like
        The group of every row (a 2-D array: intersectional groups).  ``sensitive`` is the
        older name of the same argument.
    method : {"between_groups", "to_overall"}
        max − min over groups (default), or max over groups of |rate − overall rate|.

    The two-argument form ``dp_violation(y_pred, sensitive)`` is the older privfair order; it is
    accepted only when ``sensitive`` cannot be predictions (module docstring).
    """
    _check_method(method)
    y_true, y_pred, groups = _labels_free_args("dp_violation", y_true, y_pred, sensitive,
                                               sensitive_features)
    p, a = _arrays(y_pred, groups, y_true)[:2]
    rates = [float(p[a == g].mean()) for g in np.unique(a)]
    return _gap(rates) if method == "between_groups" else _gap_to(rates, float(p.mean()))


def eo_violation(y_true, y_pred, sensitive=None, *, sensitive_features=None,
                 method: str = "between_groups") -> float:
    """Equalized-odds violation: max(gap of FPR, gap of TPR) over groups (binary labels), as
    fairlearn's ``equalized_odds_difference(y_true, y_pred, sensitive_features=...)``.

    ``method="to_overall"`` measures each rate's gap to its rate on all rows of that label.
    Groups without a row of some label are skipped for that rate.
    """
    _check_method(method)
    groups = _labelled_args("eo_violation", y_true, y_pred, sensitive, sensitive_features)
    p, a, y = _arrays(y_pred, groups, y_true)
    gaps = []
    for label in (0, 1):
        rates = [p[(a == g) & (y == label)].mean() for g in np.unique(a)
                 if np.any((a == g) & (y == label))]
        if method == "between_groups":
            gaps.append(_gap(rates))
        else:
            gaps.append(_gap_to(rates, float(p[y == label].mean())) if rates else 0.0)
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


def summary_multiclass(y_true, y_pred, sensitive=None, *, sensitive_features=None) -> dict:
    """``{"error", "dp_violation", "eo_violation"}`` for (n, K) class probabilities."""
    sensitive = _labelled_args("summary_multiclass", y_true, y_pred, sensitive, sensitive_features)
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


def summary(y_true, y_pred, sensitive=None, *, sensitive_features=None) -> dict:
    """``{"error", "dp_violation", "eo_violation"}`` on one dataset (an (n, K) ``y_pred``:
    :func:`summary_multiclass`); ``sensitive_features=`` as in fairlearn."""
    sensitive = _labelled_args("summary", y_true, y_pred, sensitive, sensitive_features)
    if np.ndim(y_pred) == 2 and np.shape(y_pred)[1] > 1:
        return summary_multiclass(y_true, y_pred, sensitive)
    return {"error": error(y_true, y_pred),
            "dp_violation": dp_violation(y_true, y_pred, sensitive_features=sensitive),
            "eo_violation": eo_violation(y_true, y_pred, sensitive_features=sensitive)}


def summary_from_counts(counts) -> dict:
    """``{"error", "dp_violation", "eo_violation"}`` from the expected confusion counts
    C[g, y, k] = Σ over the rows of group g and label code y of P(ŷ = k) — what
    :func:`summary` computes from per-row predictions, for data whose rows never come to one
    place (a Dask dataset: the counts are one pass on the workers).

    Groups without a row (and, for equalized odds, (group, label) cells without a row) are
    skipped, as :func:`summary` skips groups absent from ``sensitive``.  Binary labels read
    the positive class's rates (the negative class's gaps are the same); more labels read
    every class's, as :func:`summary_multiclass` does.

    Examples
    --------
    >>> C = np.array([[[8., 2.], [1., 9.]], [[9., 1.], [3., 7.]]])
    >>> summary_from_counts(C)["error"]
    0.175
    """
    C = np.asarray(counts, dtype=float)
    G, L, K = C.shape
    n = C.sum()
    err = 1.0 - float(np.trace(C.sum(axis=0))) / n if n > 0 else 0.0
    ks = [1] if K == 2 else range(K)
    rows_g = C.sum(axis=(1, 2))
    sel = C.sum(axis=1)                                        # (G, K)
    dp = max(_gap([sel[g, k] / rows_g[g] for g in range(G) if rows_g[g] > 0]) for k in ks)
    eo = 0.0
    for y in range(L):
        rows_gy = C[:, y, :].sum(axis=1)
        for k in ks:
            eo = max(eo, _gap([C[g, y, k] / rows_gy[g] for g in range(G) if rows_gy[g] > 0]))
    return {"error": float(err), "dp_violation": float(dp), "eo_violation": float(eo)}

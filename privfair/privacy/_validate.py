"""Validation of privacy parameters, shared by every constructor (one place, one message)."""

from __future__ import annotations

import math

from ..errors import InvalidPrivacyError

__all__ = ["check_epsilon", "check_delta", "check_positive", "check_count", "check_rate"]


def _check_epsilon(epsilon, field="epsilon", allow_inf=True) -> float:
    if isinstance(epsilon, (str, bytes, bool)):   # "1" or True would silently become numbers
        raise InvalidPrivacyError(field, epsilon, "pass a positive number, e.g. epsilon=1.0")
    try:
        eps = float(epsilon)
    except (TypeError, ValueError):
        raise InvalidPrivacyError(field, epsilon, "pass a positive number, e.g. epsilon=1.0") from None
    if math.isnan(eps) or eps <= 0:
        raise InvalidPrivacyError(field, epsilon, "epsilon must be > 0 (e.g. epsilon=1.0)")
    if math.isinf(eps) and not allow_inf:
        raise InvalidPrivacyError(field, epsilon, "epsilon must be finite here")
    return eps


def _check_delta(delta, field="delta") -> float:
    if isinstance(delta, (str, bytes, bool)):
        raise InvalidPrivacyError(field, delta, "pass a number in [0, 1), e.g. delta=1e-6")
    try:
        d = float(delta)
    except (TypeError, ValueError):
        raise InvalidPrivacyError(field, delta, "pass a number in [0, 1), e.g. delta=1e-6") from None
    if not (0.0 <= d < 1.0):  # also rejects NaN
        raise InvalidPrivacyError(field, delta, "delta must lie in [0, 1), e.g. delta=1/n**2")
    return d


def check_epsilon(epsilon, field: str = "epsilon", *, allow_inf: bool = False,
                  allow_zero: bool = False) -> float:
    """ε as a float, or :class:`~privfair.errors.InvalidPrivacyError` naming ``field``, the
    value and the fix — the one home of the ε rules (mechanisms, calibrations, the budget filter,
    the estimator's hyper-parameters).

    Parameters
    ----------
    epsilon : number
        A real number (not a string or a bool: ``"1"`` or ``True`` would silently become one).
    field : str
        The name the error reports (the caller's parameter).
    allow_inf : bool, default False
        Accept ``inf`` (a non-private reference run: :class:`~privfair.privacy.DP`, the
        estimator); mechanisms and calibrations need a finite ε.
    allow_zero : bool, default False
        Accept ``0`` (a budget request that spends nothing); otherwise ε > 0.

    Examples
    --------
    >>> check_epsilon(0, "epsilon", allow_zero=True)
    0.0
    >>> check_epsilon(-1, "epsilon", allow_zero=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    privfair.errors.InvalidPrivacyError: epsilon=-1 is invalid: ... ≥ 0 ...
    """
    if allow_zero:
        # the rules of a positive ε below, with 0 let through and the fix saying "≥ 0"
        zero = not isinstance(epsilon, (str, bytes, bool))
        try:
            zero = zero and float(epsilon) == 0.0
        except (TypeError, ValueError):
            zero = False
        if zero:
            return 0.0
        try:
            return _check_epsilon(epsilon, field=field, allow_inf=allow_inf)
        except InvalidPrivacyError:
            finite = "" if allow_inf else " and finite"
            raise InvalidPrivacyError(field, epsilon, f"pass a number ≥ 0{finite}, e.g. "
                                      f"{field}=1.0 (0 spends nothing)") from None
    return _check_epsilon(epsilon, field=field, allow_inf=allow_inf)


def check_delta(delta, field: str = "delta", positive: bool = False) -> float:
    """A delta in [0, 1) — or (0, 1) when ``positive``."""
    d = _check_delta(delta, field=field)
    if positive and d == 0.0:
        raise InvalidPrivacyError(
            field, delta, "this needs delta > 0 (the Gaussian mechanism and advanced "
            "composition cannot give pure DP); e.g. delta=1e-6")
    return d


def check_positive(value, field: str, what: str = "a positive finite number") -> float:
    """A finite number > 0 (sensitivities, noise scales)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InvalidPrivacyError(field, value, f"pass {what}") from None
    if math.isnan(v) or math.isinf(v) or v <= 0:
        raise InvalidPrivacyError(field, value, f"{field} must be {what}")
    return v


def check_count(value, field: str = "T") -> int:
    """A positive integer count of releases."""
    try:
        ok = float(value) == int(value) and int(value) >= 1
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok or isinstance(value, bool):
        raise InvalidPrivacyError(field, value, f"{field} must be a positive integer")
    return int(value)


def check_rate(value, field: str = "q") -> float:
    """A sampling probability in (0, 1]."""
    try:
        q = float(value)
    except (TypeError, ValueError):
        raise InvalidPrivacyError(field, value, "pass a sampling rate in (0, 1]") from None
    if not (0.0 < q <= 1.0):
        raise InvalidPrivacyError(field, value, f"{field} must lie in (0, 1]")
    return q

"""Validation of privacy parameters, shared by every constructor (one place, one message)."""

from __future__ import annotations

import math

from ..errors import InvalidPrivacyError
from .spec import _check_delta, _check_epsilon

__all__ = ["check_epsilon", "check_delta", "check_positive", "check_count", "check_rate"]


def check_epsilon(epsilon, field: str = "epsilon") -> float:
    """A finite epsilon > 0 (mechanisms and calibrations need a finite one)."""
    return _check_epsilon(epsilon, field=field, allow_inf=False)


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

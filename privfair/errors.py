"""Typed errors of privfair.

Every error privfair raises on bad input derives from :class:`PrivfairError` and says three
things: the *field* at fault, the *value* it had, and the *fix*.  Errors raised before a
solve draws any randomness guarantee that no privacy budget was spent.

Examples
--------
>>> from privfair.errors import InvalidPrivacyError
>>> raise InvalidPrivacyError("epsilon", -1.0, "pass a positive finite epsilon, e.g. epsilon=1.0")
Traceback (most recent call last):
...
privfair.errors.InvalidPrivacyError: epsilon=-1.0 is invalid: pass a positive finite epsilon, e.g. epsilon=1.0
"""

from __future__ import annotations

__all__ = [
    "PrivfairError",
    "InvalidInputError",
    "DataError",
    "DataNotFoundError",
    "InvalidPrivacyError",
    "ModelingError",
    "CurvatureError",
    "UnknownConstantError",
    "GroupMassError",
    "BackendRefusedError",
    "BudgetExceededError",
    "PrivateFailureError",
    "ResultStatusWarning",
    "UncertifiedConstraintWarning",
    "FallbackWarning",
    "UncheckedResultWarning",
]


class PrivfairError(Exception):
    """Base of every error privfair raises on purpose.

    Parameters
    ----------
    field : str
        The argument, column or expression at fault.
    value : object
        The offending value (shortened in the message when long).
    fix : str
        What the user should change.
    """

    def __init__(self, field: str, value=None, fix: str = ""):
        self.field = field
        self.value = value
        self.fix = fix
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        msg = f"{field}={shown} is invalid"
        if fix:
            msg += f": {fix}"
        super().__init__(msg)


class InvalidInputError(PrivfairError, ValueError):
    """An argument has the wrong type, shape or value."""


class DataError(InvalidInputError):
    """A dataset is malformed: NaN or infinite features, labels or groups outside the declared
    set, columns of the wrong length.  (A declared group with no rows is valid.)"""


class DataNotFoundError(DataError, FileNotFoundError):
    """No data file at the path given (``pf.Dataset.from_parquet``).  Also a
    ``FileNotFoundError``, so code that catches the built-in keeps working."""


class InvalidPrivacyError(InvalidInputError):
    """A privacy parameter (epsilon, delta, sensitivity, noise scale, relation) is invalid."""


class ModelingError(PrivfairError, TypeError):
    """An expression, constraint or problem is ill-formed (wrong shape, unknown atom
    argument, non-scalar objective)."""


class CurvatureError(ModelingError):
    """A backend needs convexity (or concavity) that the compiler could not prove."""


class UnknownConstantError(ModelingError):
    """A backend needs a Lipschitz or smoothness constant that is unknown for some atom."""


class GroupMassError(PrivfairError, ValueError):
    """Conditional rates were used without a public or privately estimated lower bound on
    the group mass."""


class BackendRefusedError(PrivfairError, ValueError):
    """A backend's theorem does not apply to the analysed problem; nothing was spent."""


class BudgetExceededError(PrivfairError, RuntimeError):
    """A release would overspend the dataset's privacy budget; nothing was spent."""


class PrivateFailureError(PrivfairError, RuntimeError):
    """A solve failed after it touched the private data, for a reason not proven to be
    decided from public quantities alone.

    The whole reservation has been charged (a failure that depends on private data, or that
    follows a release, is an output of the mechanism), and the original message is withheld
    because it may carry values computed from the private rows.  The original exception's type
    is named; set the environment variable ``PRIVFAIR_UNSAFE_DEBUG=1`` to chain the original
    exception for debugging — its message is then *not* covered by the certificate."""


class ResultStatusWarning(UserWarning):
    """Base of the warnings about a solve's ``Result.status`` (anything but ``"certified"``):
    filter this class to silence them all (docs/trust.md)."""


class UncertifiedConstraintWarning(ResultStatusWarning):
    """A constraint is not certified on the held-out rows: its upper confidence bound exceeds
    the level plus the tolerance (``Result.status`` names the level, ``Result.holdout`` the
    estimate and the bound).  The rule may still meet it; the held-out data cannot show it."""


class FallbackWarning(ResultStatusWarning):
    """The held-out check did not return the trained rule as it was: it was worse than the best
    constant rule, or it confidently broke a constraint, so the constant rule
    (``Result.status == "fallback: constant rule"``) or the trained rule mixed with it
    (``"fallback: mixed with a constant rule"``) was returned instead; the trained rule is
    ``Result.holdout.trained``."""


class UncheckedResultWarning(ResultStatusWarning):
    """No held-out check was made (``holdout=0``, or too few rows to hold out): nothing says
    whether the constraints hold on new data or whether the rule beats a constant."""


class WeakPrivacyWarning(UserWarning):
    """The privacy asked is too weak to mean much: δ ≥ 1/n.  A mechanism that publishes one
    random row in the clear is (0, 1/n)-DP, so such a δ does not rule it out (docs/privacy.md,
    *Choosing δ*)."""

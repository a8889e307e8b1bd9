"""The privacy specification a user asks for: ``DP(epsilon, delta, protect)``."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InvalidPrivacyError
from ._validate import check_delta, check_epsilon

#: The neighbouring relations privfair knows.  The compiler's sensitivities refer to them.
RELATIONS = {
    "sensitive": "datasets differ in the sensitive attribute of one row (features and label fixed)",
    "row": "datasets differ by replacing one whole row (features, label and sensitive attribute)",
}


@dataclass(frozen=True)
class DP:
    """An (epsilon, delta)-differential-privacy requirement under a neighbouring relation.

    Parameters
    ----------
    epsilon : float
        Privacy loss, > 0.  ``float("inf")`` asks for a non-private reference run; the
        certificate then says that nothing is protected.
    delta : float, default 0.0
        Failure probability in [0, 1).  ``0`` asks for pure epsilon-DP.
    protect : {"row", "sensitive"}, default "row"
        ``"row"``: neighbours differ by one replaced row (features, label and sensitive
        attribute) — standard differential privacy, what ``epsilon`` means in diffprivlib,
        Opacus or OpenDP.  ``"sensitive"``: neighbours differ in one row's sensitive attribute
        only (the notion of the private-fair-learning papers; features and labels are not
        protected).  The default was ``"sensitive"`` until 2026-11-27; why it changed:
        docs/privacy.md, *The default unit*.

    Examples
    --------
    >>> import privfair as pf
    >>> pf.DP(1.0, 1e-6)
    DP(epsilon=1.0, delta=1e-06, protect='row')
    >>> pf.DP(0)
    Traceback (most recent call last):
    ...
    privfair.errors.InvalidPrivacyError: epsilon=0 is invalid: epsilon must be > 0 (e.g. epsilon=1.0)
    """

    epsilon: float
    delta: float = 0.0
    protect: str = "row"

    def __post_init__(self):
        eps = check_epsilon(self.epsilon, allow_inf=True)
        d = check_delta(self.delta)
        if self.protect not in RELATIONS:
            raise InvalidPrivacyError(
                "protect", self.protect, f"choose one of {sorted(RELATIONS)}")
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", d)

    @property
    def is_private(self) -> bool:
        """False for the non-private reference (epsilon = inf)."""
        return math.isfinite(self.epsilon)

    @property
    def relation(self) -> str:
        """A sentence describing the neighbouring relation."""
        return RELATIONS[self.protect]

"""A dataset's total privacy budget across solves (a privacy *filter*).

Each solve asks the filter before drawing any noise.  The filter adds up the (ε, δ) of the
solves it lets through — basic composition, which stays valid when every solve's budget is
chosen adaptively from earlier results (Rogers, Roth, Ullman & Vadhan 2016, "privacy
filters") — and refuses with ``BudgetExceededError`` any request that would overspend.

Two ways to spend::

    budget = BudgetFilter(epsilon=2.0, delta=1e-6)
    budget.spend(0.5, 0.0)                       # immediate, e.g. for a one-shot release

    with budget.reserve(1.0, 5e-7) as r:         # transactional: refused here if it does not fit
        res = backend.run(..., accountant=r.accountant)
    # success → committed; a failure → refunded only if it is provably public (below)

A refund is sound only when the failure itself is not an output of the private data.  So an
exception inside the block is refunded only when both hold:

* nothing has been released: the accountant the reservation watches (``r.accountant``, or the
  one passed as ``watch=``) has recorded no event — mechanisms record their event *before*
  drawing, so "no event" implies "no draw";
* the exception is one of privfair's typed errors (:class:`~privfair.errors.PrivfairError`),
  which by the code's rule are decided from public quantities (the schema, n, ε, δ, the
  options, the problem) before anything private is read.

Any other failure — one after a release (its occurrence is post-processing of that release,
but repeating it must not be free), or an untyped one (a solver that did not converge, an
arithmetic error on the data) — charges the whole reservation.  ``refund_on_error=False``
charges every failure.  Tests: ``tests/test_privacy_failures.py``.
"""

from __future__ import annotations

import threading

from ..errors import BudgetExceededError, InvalidPrivacyError
from ._validate import check_delta, check_epsilon
from .accountant import Accountant

__all__ = ["BudgetFilter", "Reservation"]

_TOL = 1e-12


def _check_amount(epsilon, delta):
    """A request's (ε, δ): ε ≥ 0 and finite (0 spends nothing), δ in [0, 1) — the privacy
    core's rules and messages (:mod:`privfair.privacy._validate`)."""
    return check_epsilon(epsilon, allow_zero=True), check_delta(delta)


class BudgetFilter:
    """A total (ε, δ) budget for one dataset.

    Parameters
    ----------
    epsilon : float
        Total ε > 0 (finite).
    delta : float, default 0.0
        Total δ in [0, 1).
    name : str, optional
        Shown in error messages (e.g. the dataset's name).

    Examples
    --------
    >>> b = BudgetFilter(1.0, 1e-6)
    >>> b.spend(0.4)
    >>> b.remaining
    (0.6, 1e-06)
    >>> b.spend(0.7)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    privfair.errors.BudgetExceededError: epsilon=0.7 is invalid: ...
    """

    def __init__(self, epsilon, delta=0.0, *, name: str = "dataset"):
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.name = name
        self._spent_eps = 0.0
        self._spent_delta = 0.0
        self._reserved_eps = 0.0
        self._reserved_delta = 0.0
        self._lock = threading.Lock()
        self.history: list[tuple[str, float, float]] = []

    # ------------------------------------------------------------------ state
    @property
    def spent(self) -> tuple:
        """(ε, δ) committed so far."""
        return (self._spent_eps, self._spent_delta)

    @property
    def reserved(self) -> tuple:
        """(ε, δ) held by open reservations."""
        return (self._reserved_eps, self._reserved_delta)

    @property
    def remaining(self) -> tuple:
        """(ε, δ) still available (budget − spent − reserved), rounded to 12 digits."""
        eps = self.epsilon - self._spent_eps - self._reserved_eps
        d = self.delta - self._spent_delta - self._reserved_delta
        return (round(max(eps, 0.0), 12), round(max(d, 0.0), 15))

    def can_spend(self, epsilon, delta=0.0) -> bool:
        """Would a request of (ε, δ) fit now?"""
        eps, d = _check_amount(epsilon, delta)
        return self._fits(eps, d)

    def _fits(self, eps, d) -> bool:
        e_used = self._spent_eps + self._reserved_eps + eps
        d_used = self._spent_delta + self._reserved_delta + d
        return e_used <= self.epsilon * (1 + _TOL) and d_used <= self.delta * (1 + _TOL) + 0.0

    def _refuse(self, eps, d, label):
        rem_e, rem_d = self.remaining
        field, value = ("epsilon", eps) if self._spent_eps + self._reserved_eps + eps > \
            self.epsilon * (1 + _TOL) else ("delta", d)
        raise BudgetExceededError(
            field, value,
            f"the request{f' ({label})' if label else ''} would overspend {self.name}'s budget "
            f"(total ε={self.epsilon:g}, δ={self.delta:g}; remaining ε={rem_e:g}, δ={rem_d:g}); "
            "nothing was spent and no noise was drawn")

    # ------------------------------------------------------------------ spending
    def spend(self, epsilon, delta=0.0, label: str = "") -> None:
        """Commit (ε, δ) now, or raise ``BudgetExceededError`` and spend nothing."""
        eps, d = _check_amount(epsilon, delta)
        with self._lock:
            if not self._fits(eps, d):
                self._refuse(eps, d, label)
            self._spent_eps += eps
            self._spent_delta += d
            self.history.append((label or "spend", eps, d))

    def reserve(self, epsilon, delta=0.0, label: str = "", *, refund_on_error: bool = True,
                watch=None) -> "Reservation":
        """Hold (ε, δ) for a solve; use as a context manager (see the module docstring).

        ``watch``: the :class:`Accountant` the solve records its releases in (default: the
        reservation's own ``accountant``); once it holds an event, any failure is charged.

        Raises ``BudgetExceededError`` immediately — before any noise — if it does not fit."""
        eps, d = _check_amount(epsilon, delta)
        if eps == 0.0:
            raise InvalidPrivacyError("epsilon", epsilon, "reserve a positive ε (a solve with "
                                      "ε = 0 cannot release anything)")
        with self._lock:
            if not self._fits(eps, d):
                self._refuse(eps, d, label)
            self._reserved_eps += eps
            self._reserved_delta += d
        return Reservation(self, eps, d, label, refund_on_error, watch)

    def _close(self, res: "Reservation", commit: bool) -> None:
        with self._lock:
            self._reserved_eps -= res.epsilon
            self._reserved_delta -= res.delta
            if commit:
                self._spent_eps += res.epsilon
                self._spent_delta += res.delta
                self.history.append((res.label or "reservation", res.epsilon, res.delta))

    def __repr__(self) -> str:
        return (f"BudgetFilter(epsilon={self.epsilon:g}, delta={self.delta:g}, "
                f"spent={self.spent}, reserved={self.reserved})")


class Reservation:
    """An open hold on part of a :class:`BudgetFilter`.

    ``accountant`` is an :class:`Accountant` limited to the reserved (ε, δ): a backend records
    its events there, and any event that would exceed the reservation is refused before its noise
    is drawn.  Leaving the ``with`` block normally commits the reservation; an exception rolls it
    back only when it is provably public (see the module docstring and :meth:`refundable`),
    otherwise it is charged and ``charged_failure`` says why.  ``commit()`` and ``cancel()`` do
    it by hand."""

    def __init__(self, budget: BudgetFilter, epsilon: float, delta: float, label: str,
                 refund_on_error: bool, watch=None):
        self.budget = budget
        self.epsilon = epsilon
        self.delta = delta
        self.label = label
        self.refund_on_error = refund_on_error
        self.state = "open"
        self.accountant = Accountant(limit=(epsilon, delta))
        self.watch = self.accountant if watch is None else watch
        self.charged_failure: str | None = None

    def refundable(self, exc) -> str | None:
        """None when a failure ``exc`` may be refunded; else the reason it is charged."""
        from ..errors import PrivfairError

        if not self.refund_on_error:
            return "refund_on_error=False"
        if len(self.watch):
            return (f"it came after {len(self.watch)} recorded release(s): once anything is "
                    "released, a failure is charged")
        if not isinstance(exc, PrivfairError):
            return (f"{type(exc).__name__} is not one of privfair's typed refusals, so it is not "
                    "proven to be decided from public quantities")
        return None

    def commit(self) -> None:
        """Spend the reserved (ε, δ)."""
        if self.state != "open":
            raise BudgetExceededError("reservation", self.state, "this reservation is closed")
        self.budget._close(self, commit=True)
        self.state = "committed"

    def cancel(self) -> None:
        """Release the hold; nothing is spent."""
        if self.state != "open":
            raise BudgetExceededError("reservation", self.state, "this reservation is closed")
        self.budget._close(self, commit=False)
        self.state = "cancelled"

    def __enter__(self) -> "Reservation":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self.state == "open":
            why = None if exc_type is None else self.refundable(exc)
            if exc_type is None:
                self.commit()
            elif why is None:
                self.cancel()
            else:
                self.charged_failure = why
                self.commit()
                if isinstance(exc, BaseException) and hasattr(exc, "add_note"):
                    exc.add_note(f"privfair: the reservation (ε={self.epsilon:g}, "
                                 f"δ={self.delta:g}) was charged: {why}")
        return False

    def __repr__(self) -> str:
        return f"Reservation(epsilon={self.epsilon:g}, delta={self.delta:g}, {self.state})"

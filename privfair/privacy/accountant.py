"""The accountant: records release events and composes them with the tightest rule it can prove.

Usage by a backend::

    acc = Accountant(delta=1e-6, relation="sensitive", limit=(1.0, 1e-6))
    acc.record(gaussian_event(sens, sigma, count=T, idealized=True,
                              sensitivity_source="Lemma 5.1"))   # before drawing noise
    ... draw noise ...
    cert = acc.certificate()            # cert.epsilon, cert.delta, str(cert)

or simply pass ``accountant=acc`` to the mechanism functions, which record their own events
before they draw anything.  ``total(delta)`` runs every rule of :mod:`.composition` that applies
and returns the smallest ε with the rule's name.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import NamedTuple

from ..errors import BudgetExceededError, InvalidPrivacyError
from ._validate import check_delta, check_epsilon
from .calibration import calibrate_advanced, calibrate_gaussian, calibrate_optimal
from .certificate import Certificate
from .composition import (advanced_epsilon, basic_epsilon, gdp_epsilon, optimal_epsilon,
                          pld_epsilon, rdp_epsilon)
from .events import Event
from .gaussian import calibrate_gaussian_sigma
from .spec import DP, RELATIONS

__all__ = ["Accountant", "Total"]


class Total(NamedTuple):
    """A proven total: the composition is (epsilon, delta)-DP by ``rule``."""

    epsilon: float
    delta: float
    rule: str


_ALL_RULES = ("basic", "advanced", "optimal", "gdp", "pld", "rdp")


class Accountant:
    """Records events and composes them.

    Parameters
    ----------
    delta : float, optional
        Default target δ for :meth:`total` and :meth:`certificate`.
    relation : {"sensitive", "row"}
        The neighbouring relation the events' sensitivities refer to (printed on certificates).
    limit : DP or (epsilon, delta), optional
        A cap: :meth:`record` refuses (``BudgetExceededError``, nothing recorded) an event that
        would take the total above it.  Its δ is also the default target δ.
    rules : sequence of str, optional
        Restrict the rules tried (default: all of basic, advanced, optimal, gdp, pld, rdp).
    pld_discretization : float
        dp-accounting's ``value_discretization_interval`` (smaller: tighter, slower; always an
        upper bound).
    rdp_orders : sequence of float, optional
        RDP orders (default: dp-accounting's).
    source : privfair.privacy.randomness.RandomSource, optional
        The randomness the run draws its noise from.  When it is seeded, every event recorded
        here is marked ``seeded`` and so is the certificate — by construction, whoever records
        the event (a mechanism function or a backend recording its own release by hand).
    """

    calibrate_advanced = staticmethod(calibrate_advanced)
    calibrate_optimal = staticmethod(calibrate_optimal)
    calibrate_gaussian = staticmethod(calibrate_gaussian)
    calibrate_gaussian_sigma = staticmethod(calibrate_gaussian_sigma)

    def __init__(self, delta=None, *, relation: str = "sensitive", limit=None, rules=None,
                 pld_discretization: float = 1e-4, rdp_orders=None, source=None):
        self.delta = None if delta is None else check_delta(delta)
        if relation not in RELATIONS:
            raise InvalidPrivacyError("relation", relation, f"choose one of {sorted(RELATIONS)}")
        self.relation = relation
        self.limit = None
        if limit is not None:
            if isinstance(limit, DP):
                self.limit = (limit.epsilon, limit.delta)
            else:
                try:
                    eps, d = limit
                except (TypeError, ValueError):
                    raise InvalidPrivacyError("limit", limit, "pass DP(...) or (epsilon, delta)"
                                              ) from None
                self.limit = (check_epsilon(eps, "limit epsilon"), check_delta(d, "limit delta"))
        self.rules = tuple(_ALL_RULES if rules is None else rules)
        bad = [r for r in self.rules if r not in _ALL_RULES]
        if bad:
            raise InvalidPrivacyError("rules", bad, f"choose among {_ALL_RULES}")
        self.pld_discretization = float(pld_discretization)
        self.rdp_orders = rdp_orders
        self._events: list[Event] = []
        self.source = source

    @property
    def seeded(self) -> bool:
        """True when the run's randomness source is reproducible from a seed."""
        return bool(getattr(self.source, "seeded", False))

    # ------------------------------------------------------------------ recording
    @property
    def events(self) -> tuple:
        """The recorded events, in order."""
        return tuple(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def would_exceed(self, event: Event) -> bool:
        """True if recording ``event`` would take the total above ``limit``.

        Rules are tried cheapest first and the search stops at the first one that fits."""
        if self.limit is None:
            return False
        eps_cap, delta_cap = self.limit
        events = self._events + [event]
        cap = eps_cap * (1 + 1e-12)
        if delta_cap == 0.0 or not self.rules:
            try:
                return self._total(events, delta_cap).epsilon > cap
            except InvalidPrivacyError:
                return True
        for rule in ("basic", "gdp", "optimal", "advanced", "rdp", "pld"):
            if rule not in self.rules:
                continue
            eps, _ = self._candidates(events, delta_cap, only=(rule,))[rule]
            if eps is not None and eps <= cap:
                return False
        return True

    def record(self, event: Event) -> Event:
        """Add ``event`` (call it *before* drawing the noise it describes).

        Raises ``BudgetExceededError`` — and records nothing — when a ``limit`` would be
        exceeded."""
        if not isinstance(event, Event):
            raise InvalidPrivacyError("event", event, "pass a privfair.privacy.Event")
        if self.would_exceed(event):
            eps_cap, delta_cap = self.limit
            raise BudgetExceededError(
                "event", event.describe(),
                f"recording it would exceed this accountant's limit (ε={eps_cap:g}, "
                f"δ={delta_cap:g}); nothing was recorded or drawn")
        if self.seeded and not event.seeded:
            event = replace(event, seeded=True)
        self._events.append(event)
        return event

    def extend(self, events) -> None:
        """Record several events (each checked against the limit)."""
        for ev in events:
            self.record(ev)

    # ------------------------------------------------------------------ composing
    def _target_delta(self, delta):
        if delta is not None:
            return check_delta(delta)
        if self.delta is not None:
            return self.delta
        if self.limit is not None:
            return self.limit[1]
        return None

    def candidates(self, delta=None) -> dict:
        """{rule: (epsilon or None, reason or None)} for every rule tried at ``delta``."""
        d = self._target_delta(delta)
        if d is None:
            raise InvalidPrivacyError("delta", None, "pass a target delta")
        return self._candidates(self._events, d)

    def _candidates(self, events, d: float, only=None) -> dict:
        funcs = {
            "basic": lambda: basic_epsilon(events, d),
            "advanced": lambda: advanced_epsilon(events, d),
            "optimal": lambda: optimal_epsilon(events, d),
            "gdp": lambda: gdp_epsilon(events, d),
            "pld": lambda: pld_epsilon(events, d, self.pld_discretization),
            "rdp": lambda: rdp_epsilon(events, d, self.rdp_orders),
        }
        out = {}
        for rule in (self.rules if only is None else only):
            try:
                eps, why = funcs[rule]()
            except (ValueError, ArithmeticError, NotImplementedError) as exc:  # library refusal
                eps, why = None, f"{type(exc).__name__}: {exc}"
            except MemoryError:
                # e.g. a PLD over a huge loss range: this rule gives no claim, the others stand
                # (the total is the minimum over the valid rules, so dropping one is safe)
                eps, why = None, "MemoryError: the computation did not fit in memory"
            if eps is not None and (math.isnan(eps) or eps < 0):
                eps, why = None, f"numerical failure (ε = {eps})"
            out[rule] = (eps, why)
        return out

    def _total(self, events, d) -> Total:
        if not events:
            return Total(0.0, 0.0 if d is None else d, "none")
        if d is None:
            if all(ev.epsilon is not None for ev in events):
                eps, _ = basic_epsilon(events, 1.0)
                return Total(eps, math.fsum(ev.delta * ev.count for ev in events), "basic")
            raise InvalidPrivacyError("delta", None, "releases given by their noise alone (a "
                                      "Gaussian σ) need a target delta, e.g. total(delta=1e-6)")
        cands = self._candidates(events, d)
        valid = [(eps, rule) for rule, (eps, _) in cands.items() if eps is not None]
        if not valid:
            reasons = "; ".join(f"{r}: {why}" for r, (_, why) in cands.items())
            raise InvalidPrivacyError("delta", d, f"no composition rule applies at this δ "
                                      f"({reasons})")
        eps, rule = min(valid, key=lambda t: (t[0], _ALL_RULES.index(t[1])))
        # When basic composition is (numerically) as tight, report its own δ = Σδ_i, which is
        # smaller than the target (0 for pure releases): (Σε_i, Σδ_i) is itself a valid claim.
        if all(ev.epsilon is not None for ev in events):
            basic_eps, _ = basic_epsilon(events, 1.0)
            basic_delta = math.fsum(ev.delta * ev.count for ev in events)
            if (basic_delta <= d and basic_eps <= eps * (1 + 1e-6) + 1e-12
                    and (self.limit is None or basic_eps <= self.limit[0] * (1 + 1e-12))):
                # (the absolute slack must not report more than a tiny limit allows)
                return Total(float(basic_eps), basic_delta, "basic")
        return Total(float(eps), d, rule)

    def total(self, delta=None) -> Total:
        """The tightest proven (ε, δ) of everything recorded, and the rule that gives it.

        ``delta`` defaults to the accountant's target; with no target, and every event carrying
        its own (ε_i, δ_i), it is basic composition (Σε_i, Σδ_i) — (Σε_i, 0) for pure events."""
        return self._total(self._events, self._target_delta(delta))

    def certificate(self, delta=None, notes=()) -> Certificate:
        """A :class:`Certificate` of everything recorded."""
        d = self._target_delta(delta)
        tot = self._total(self._events, d)
        cands, reasons = {}, {}
        if self._events and d is not None:
            for rule, (eps, why) in self._candidates(self._events, d).items():
                cands[rule] = eps
                if why:
                    reasons[rule] = why
        return Certificate(
            releases=tuple(self._events), epsilon=tot.epsilon, delta=tot.delta, rule=tot.rule,
            candidates=cands, reasons=reasons, relation=self.relation,
            idealized_numerics=any(ev.idealized for ev in self._events),
            seeded=self.seeded or any(ev.seeded for ev in self._events), notes=tuple(notes))

    def __repr__(self) -> str:
        return (f"Accountant({len(self._events)} events, relation={self.relation!r}, "
                f"limit={self.limit})")

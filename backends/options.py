"""Declarative solve options: each backend states every option once — name, type, range or
choices, default and doc — and one validator checks them all before anything is spent.

Modeled on scikit-learn's parameter validation (``_param_validation``): the table is data, so
``privfair backends`` and the docs list it, and the error for a bad value is the same everywhere
(:class:`~privfair.errors.InvalidInputError` naming the option, the value and the fix).

Examples
--------
>>> table = (Option("steps", "int", 100, low=1, doc="iterations"),
...          Option("rule", "str", "first", choices=("first", "best")))
>>> validate(table, {"steps": 20}, "demo")
{'steps': 20, 'rule': 'first'}
>>> validate(table, {"steps": 0}, "demo")
Traceback (most recent call last):
...
privfair.errors.InvalidInputError: steps=0 is invalid: pass a whole number ≥ 1 (backend 'demo': iterations)
"""

from __future__ import annotations

import difflib
import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from privfair.errors import InvalidInputError

__all__ = ["Option", "validate", "rows", "unknown_option", "REQUIRED"]

#: the default of an option that has none (it must be given when used)
REQUIRED = object()

_KINDS = ("float", "int", "bool", "str", "any")


def _real(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


@dataclass(frozen=True)
class Option:
    """One solve option.

    Parameters
    ----------
    name : str
        As passed to ``problem.solve(..., name=value)``.  Names starting with ``_`` are
        testing-only and never listed.
    kind : {"float", "int", "bool", "str", "any"}
        The type; numbers are normalised to float / int.
    default : object
        Used when the option is not given (``None`` means "decided by the backend from public
        quantities"; the doc says how).
    low, high : float, optional
        Bounds of a number; ``low_open``/``high_open`` make them strict.
    choices : tuple, optional
        The allowed values (for ``"str"``; also allowed alongside a number range, e.g. "auto").
    check : callable, optional
        ``value -> value`` for what a range cannot say (must raise InvalidInputError itself).
    doc : str
        One line: what it does, and why one would change it.
    """

    name: str
    kind: str = "any"
    default: Any = None
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple | None = None
    check: Callable | None = None
    doc: str = ""

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise ValueError(f"internal error: option {self.name!r} has kind {self.kind!r}")

    # ------------------------------------------------------------------ description
    def range_text(self) -> str:
        parts = []
        if self.low is not None or self.high is not None:
            lo = "-∞" if self.low is None else f"{self.low:g}"
            hi = "∞" if self.high is None else f"{self.high:g}"
            parts.append(("(" if self.low_open or self.low is None else "[") + f"{lo}, {hi}"
                         + (")" if self.high_open or self.high is None else "]"))
        if self.choices:
            parts.append(" | ".join(repr(c) for c in self.choices))
        return " or ".join(parts) if parts else "—"

    def default_text(self) -> str:
        if self.default is REQUIRED:
            return "required"
        return "auto" if self.default is None else repr(self.default)

    # ------------------------------------------------------------------ validation
    def _fix(self) -> str:
        if self.kind == "bool":
            return "pass True or False"
        if self.kind == "str" or (self.choices and self.low is None and self.high is None):
            return "choose one of " + ", ".join(repr(c) for c in self.choices or ())
        what = "a whole number" if self.kind == "int" else "a finite number"
        rng = self.range_text()
        if self.low is not None and self.high is None:
            rng = (">" if self.low_open else "≥") + f" {self.low:g}"
            return f"pass {what} {rng}" + (
                f" or one of {', '.join(map(repr, self.choices))}" if self.choices else "")
        return f"pass {what} in {rng}" if rng != "—" else f"pass {what}"

    def validate(self, value, backend: str = ""):
        """The normalised value, or an InvalidInputError naming the option, value and fix."""
        def bad():
            where = f"backend {backend!r}" if backend else ""
            doc = f"{where}: {self.doc}" if where and self.doc else where or self.doc
            raise InvalidInputError(self.name, value, self._fix() + (f" ({doc})" if doc else ""))

        if value is None and self.default is None:
            return None
        if self.choices is not None and not _real(value) and value in self.choices:
            out = value
        elif self.kind == "bool":
            if not isinstance(value, (bool, np.bool_)):
                bad()
            out = bool(value)
        elif self.kind in ("float", "int"):
            if isinstance(value, np.ndarray) and value.ndim == 0:
                value = value.item()
            if not _real(value) or not math.isfinite(value):
                bad()
            if self.kind == "int" and float(value) != math.floor(value):
                bad()
            v = float(value)
            if self.low is not None and (v <= self.low if self.low_open else v < self.low):
                bad()
            if self.high is not None and (v >= self.high if self.high_open else v > self.high):
                bad()
            out = int(value) if self.kind == "int" else v
        elif self.kind == "str":
            if not isinstance(value, str) or (self.choices and value not in self.choices):
                bad()
            out = value
        else:
            out = value
        return self.check(out) if self.check is not None else out


def validate(table, given: dict, backend: str) -> dict:
    """The defaults of ``table`` updated with ``given``, every value validated; an unknown
    name raises InvalidInputError listing the public names and the closest ones."""
    by_name = {o.name: o for o in table}
    for name, value in given.items():
        if name not in by_name:
            raise unknown_option(name, value, backend, by_name)
    out = {}
    for o in table:
        if o.name in given:
            out[o.name] = o.validate(given[o.name], backend)
        elif o.default is not REQUIRED and not o.name.startswith("_"):
            out[o.name] = o.default
    return out


def unknown_option(name, value, backend, known) -> InvalidInputError:
    """The typed error for a solve option ``name`` that backend ``backend`` does not take.

    ``known`` are the names it takes; the fix lists them (test-only names, which start with an
    underscore, are not listed) and suggests the closest one, if any is close."""
    public = sorted(k for k in known if not k.startswith("_"))
    fix = f"unknown option for backend {backend!r}; " + (
        f"it takes: {', '.join(public)}" if public else "it takes no options")
    close = difflib.get_close_matches(str(name), sorted(known), n=3)
    if close:
        fix += " — did you mean " + " or ".join(map(repr, close)) + "?"
    return InvalidInputError(str(name), value, fix)


def rows(table) -> list:
    """(name, type, range/choices, default, doc) for every public option — for
    ``privfair backends`` and the docs."""
    return [(o.name, o.kind, o.range_text(), o.default_text(), o.doc)
            for o in table if not o.name.startswith("_")]

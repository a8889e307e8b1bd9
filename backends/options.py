"""Declarative tables: each backend states every solve option once — name, type, range or
choices, default and doc — and one validator checks them all before anything is spent; and
every plan parameter once (:class:`Param`: name, type, doc), checked when a plan is made.

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

A plan's parameters (``Plan.params``) are what ``Backend.plan`` chose from n, ε, δ, α and the
options; ``Backend.plan_params`` declares them, and :func:`check_params` refuses a plan that
sets an undeclared name, misses a required one or gives one a value of the wrong type — a
backend author's mistake, so a ``TypeError``, not an input error:

>>> declared = (Param("T", int, "iterations"), Param("scale", (float, None), "noise scale"))
>>> check_params(declared, {"T": 3, "scale": None}, "demo")
>>> check_params(declared, {"T": 3.5, "scale": 1.0}, "demo")
Traceback (most recent call last):
...
TypeError: internal error: backend 'demo' plans T=3.5, but its plan_params declare T as int (iterations): make it int, or declare the type it is
"""

from __future__ import annotations

import difflib
import math
import numbers
import reprlib
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from privfair.errors import InvalidInputError

__all__ = ["Option", "validate", "rows", "unknown_option", "REQUIRED", "Param", "check_params",
           "param_rows", "from_options"]

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


# ---------------------------------------------------------------------------- plan parameters

@dataclass(frozen=True)
class Param:
    """One plan parameter: a name ``Backend.plan`` puts in ``Plan.params``.

    Parameters
    ----------
    name : str
        The key (``plan.params[name]``; ``plan.params.name`` where it is an identifier).
    type : type or tuple of types
        What its value is; ``None`` in a tuple allows None.  ``int`` is a whole number (numpy's
        too, never a bool), ``float`` a real number (an int or numpy float too, never a bool),
        ``bool`` a Python or numpy bool, ``object`` anything; any other class by
        ``isinstance``.
    doc : str
        One line: what it is and where it comes from.
    optional : bool
        True when only some plans set it (the doc says which); a required one is in every plan.
    """

    name: str
    type: Any
    doc: str = ""
    optional: bool = False

    def __post_init__(self):
        if not all(t is None or isinstance(t, type) for t in self._types()):
            raise ValueError(f"internal error: plan parameter {self.name!r} has type "
                             f"{self.type!r}: give a class (int, float, bool, str, dict, ...) or "
                             "a tuple of them, None allowed")

    def _types(self) -> tuple:
        return self.type if isinstance(self.type, tuple) else (self.type,)

    def accepts(self, value) -> bool:
        """Whether ``value`` is of the declared type."""
        return any(_is(value, t) for t in self._types())

    def type_text(self) -> str:
        """The type as ``privfair backends NAME`` and the errors print it, e.g. ``float | None``."""
        return " | ".join("None" if t is None else getattr(t, "__name__", str(t))
                          for t in self._types())


def _is(value, t) -> bool:
    if t is None:
        return value is None
    if t is bool:
        return isinstance(value, (bool, np.bool_))
    if t is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
    if t is float:
        return _real(value)
    return isinstance(value, t)


_OPTION_TYPES = {"float": float, "int": int, "bool": bool, "str": str, "any": object}


def from_options(table, *names) -> tuple:
    """Plan parameters that pass solve options on as validated (one doc for both): the type of
    each named :class:`Option` (None-able when its default is None, "auto"; the types of its
    choices beside a number range), its doc after "as the option: "."""
    by_name = {o.name: o for o in table}
    out = []
    for name in names:
        o = by_name[name]
        t = _OPTION_TYPES[o.kind]
        if t is not object:       # "auto" (None) and the choices beside a number range
            extra = ((None,) if o.default is None else ()) + tuple(
                dict.fromkeys(type(c) for c in o.choices or () if not _is(c, t)))
            t = (t,) + extra if extra else t
        out.append(Param(name, t, f"as the option: {o.doc}"))
    return tuple(out)


def check_params(declared, values, backend: str, where: str = "its plan_params",
                 who: str = "") -> None:
    """Raise TypeError when ``values`` (a plan's parameters) do not match ``declared``: an
    undeclared name, a required name missing, or a value of the wrong type.  The message names
    the backend (``who`` overrides "backend NAME"), the parameter, the value and the fix
    (``where``: the declaration to edit)."""
    who = who or f"backend {backend!r}"
    by_name = {p.name: p for p in declared}
    for name, value in values.items():
        p = by_name.get(name)
        if p is None:
            raise TypeError(f"internal error: {who} plans {name}={_short(value)}, which {where} "
                            f"do not declare: add Param({name!r}, <type>, <doc>) there, or do "
                            "not set it")
        if not p.accepts(value):
            raise TypeError(f"internal error: {who} plans {name}={_short(value)}, but {where} "
                            f"declare {name} as {p.type_text()}"
                            + (f" ({p.doc})" if p.doc else "")
                            + f": make it {p.type_text()}, or declare the type it is")
    missing = [p.name for p in declared if not p.optional and p.name not in values]
    if missing:
        raise TypeError(f"internal error: {who}'s plan does not set {', '.join(missing)}, which "
                        f"{where} declare required: set {'it' if len(missing) == 1 else 'them'} "
                        "in every plan, or declare Param(..., optional=True) and say in its doc "
                        "when it is set")


def _short(value) -> str:
    """``repr(value)``, cut to a readable length (a plan may hold a whole release schedule)."""
    r = reprlib.Repr()
    r.maxstring = r.maxother = 60
    return r.repr(value)


def param_rows(declared) -> list:
    """(name, type, required/optional, doc) for every declared plan parameter — for
    ``privfair backends NAME``."""
    return [(p.name, p.type_text(), "optional" if p.optional else "always", p.doc)
            for p in declared]

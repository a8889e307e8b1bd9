"""Inequality constraints between expressions, normalised to ``expr <= 0``; and the refused
equality ``a == b``."""

from __future__ import annotations

import numpy as np

from ..errors import ModelingError
from .expression import Expression, as_expression


class Constraint:
    """``lhs <= rhs`` or ``lhs >= rhs``, stored in normal form ``expr <= 0``.

    Built by comparing expressions: ``a <= b`` gives ``expr = a - b``; ``a >= b`` gives
    ``expr = b - a``.  A vector constraint holds entrywise.  Equality constraints are not
    supported (``a == b`` builds an :class:`Equality`, which :class:`privfair.Problem` refuses):
    write a tolerance, ``pf.abs(a - b) <= 0.01``.

    Attributes
    ----------
    expr : Expression
        The normalised g with the constraint g(ℓ) ≤ 0.
    lhs, rhs : Expression
        The two sides as written.
    sense : {"<=", ">="}
    """

    __array_ufunc__ = None

    def __init__(self, lhs, rhs, sense: str = "<="):
        if sense not in ("<=", ">="):
            raise ModelingError("sense", sense, 'use "<=" or ">="')
        self.lhs = as_expression(lhs, "constraint")
        self.rhs = as_expression(rhs, "constraint")
        self.sense = sense
        self.expr: Expression = self.lhs - self.rhs if sense == "<=" else self.rhs - self.lhs

    @property
    def shape(self):
        return self.expr.shape

    def is_dcp(self) -> bool:
        """True when the feasible set {ℓ : expr(ℓ) ≤ 0} is convex by DCP (expr convex)."""
        return self.expr.is_convex()

    def violation(self, l):
        """max(expr(ℓ), 0) (entrywise for a vector constraint)."""
        v = self.expr.value(l)
        return max(v, 0.0) if isinstance(v, float) else np.maximum(v, 0.0)

    def to_cvxpy(self, x):
        """The cvxpy constraint ``expr(x) <= 0``."""
        return self.expr.to_cvxpy(x) <= 0

    def __bool__(self):
        raise ModelingError("constraint", self, "a constraint has no truth value; write a <= x <= b "
                                                "as two constraints, and check one with "
                                                "c.violation(l)")

    def __repr__(self):
        return f"{self.lhs!r} {self.sense} {self.rhs!r}"

    __str__ = __repr__


EQUALITY_FIX = ("equality constraints are not supported: a private solver meets its constraints "
                "only up to noise (and some tighten them), so an exact equality is infeasible; "
                "write a tolerance, pf.abs(a - b) <= 0.01")


class Equality:
    """What ``a == b`` builds for expressions: *not* a constraint.

    :class:`privfair.Problem` refuses it with a :class:`~privfair.errors.ModelingError` naming
    the fix ``pf.abs(a - b) <= tol``: private backends meet constraints only up to their noise,
    and some tighten every constraint by a margin (``g ≤ −τ``), so the two inequalities of an
    equality would leave nothing feasible.  Its truth value is object identity (``a is b``), so
    list membership and ``index`` on expressions keep Python's usual meaning.

    Attributes
    ----------
    lhs, rhs : Expression
        The two sides as written.
    """

    __array_ufunc__ = None

    def __init__(self, lhs, rhs):
        self._same = lhs is rhs
        self.lhs = as_expression(lhs, "constraint")
        self.rhs = as_expression(rhs, "constraint")

    def __bool__(self):
        return self._same

    def __repr__(self):
        return f"{self.lhs!r} == {self.rhs!r}"

    __str__ = __repr__

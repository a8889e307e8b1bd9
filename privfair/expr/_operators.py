"""Python operators of expressions: ``+ - * / @ ** [] <= >= ==``, and the refusals.

Kept apart from :mod:`.expression` so that the base class stays short; every operator builds a
node from :mod:`.affine`, :mod:`.elementwise` or :mod:`.constraint`.
"""

from __future__ import annotations

import numpy as np

from ..errors import ModelingError


def _as_expr(value):
    from .expression import as_expression

    return as_expression(value)


class OperatorsMixin:
    """Operator overloading shared by every :class:`~privfair.expr.Expression`.

    ``a == b`` builds an :class:`~privfair.expr.constraint.Equality`, which
    :class:`privfair.Problem` refuses with a :class:`~privfair.errors.ModelingError` naming the
    fix (``pf.abs(a - b) <= tol``); its truth value is object identity, so ``in``, ``index`` and
    ``remove`` on lists of expressions keep working, and expressions stay hashable (by id).
    """

    __hash__ = object.__hash__      # defining __eq__ would otherwise make expressions unhashable

    def __eq__(self, other):
        from .constraint import Equality
        from .expression import Expression

        if isinstance(other, (Expression, int, float, np.number, np.ndarray, list, tuple)) \
                and not isinstance(other, bool):
            return Equality(self, other)
        return NotImplemented           # None, strings, ...: Python falls back to identity

    def __ne__(self, other):
        return self is not other

    def __add__(self, other):
        from .affine import add
        return add(self, _as_expr(other))

    def __radd__(self, other):
        from .affine import add
        return add(_as_expr(other), self)

    def __sub__(self, other):
        from .affine import add
        return add(self, -_as_expr(other))

    def __rsub__(self, other):
        from .affine import add
        return add(_as_expr(other), -self)

    def __neg__(self):
        from .affine import Neg
        return Neg(self)

    def __pos__(self):
        return self

    def __mul__(self, other):
        from .affine import multiply
        return multiply(self, other)

    def __rmul__(self, other):
        from .affine import multiply
        return multiply(self, other)

    def __truediv__(self, other):
        from .affine import divide
        return divide(self, other)

    def __rtruediv__(self, other):
        raise ModelingError("denominator", self, "divide only by a non-zero constant; a statistic in "
                                                 "a denominator is not supported")

    def __matmul__(self, other):
        from .affine import matmul
        return matmul(other, self, left=False)

    def __rmatmul__(self, other):
        from .affine import matmul
        return matmul(other, self, left=True)

    def __pow__(self, power):
        if isinstance(power, (int, float, np.number)) and float(power) == 2.0:
            from .elementwise import square
            return square(self)
        raise ModelingError("power", power, "only ** 2 (pf.square) is supported")

    def __le__(self, other):
        from .constraint import Constraint
        return Constraint(self, other, "<=")

    def __ge__(self, other):
        from .constraint import Constraint
        return Constraint(self, other, ">=")

    def __lt__(self, other):
        raise ModelingError("constraint", "<", "strict inequalities are not supported; use <=")

    def __gt__(self, other):
        raise ModelingError("constraint", ">", "strict inequalities are not supported; use >=")

    def __getitem__(self, key):
        from .indexing import Index
        return Index(self, key)

    def __len__(self):
        if not self.shape:
            raise ModelingError("len", self, "a scalar expression has no length")
        return self.size

    def __iter__(self):
        if not self.shape:
            raise ModelingError("iter", self, "a scalar expression cannot be iterated")
        return (self[i] for i in range(self.size))

    def __bool__(self):
        raise ModelingError("truth value", self, "an expression has no truth value; compare values "
                                                 "with e.value(l), and write a <= x <= b as two "
                                                 "constraints")

"""Elementwise atoms: ``abs``, ``pos`` and ``square``.

Each output entry depends on the matching argument entry only, so φ's facts are scalar facts
about a function of one real y ∈ [lo, hi]: G = sup |φ'|, β_φ = sup |φ''| (the norm on y is then
irrelevant), and the monotonicity is the sign of φ' on [lo, hi].
"""

from __future__ import annotations

import numpy as np

from .atom import Atom
from .expression import Expression, as_expression


class Elementwise(Atom):
    """Base of the elementwise atoms: one argument, the same shape out."""

    def __init__(self, arg):
        arg = as_expression(arg, self.name)
        super().__init__([arg], arg.shape)

    def atom_dependency(self):
        return np.eye(self.size, dtype=bool)

    # subclasses give per-entry arrays; the base lays them on the diagonal
    def atom_coordinate_lipschitz(self, lo, hi):
        return np.diag(self._deriv_bound(lo, hi))

    def atom_monotonicity(self, lo, hi):
        return np.diag(self._sign(lo, hi))

    def atom_forward(self, xp, y, Jy):
        val, deriv = self._scalar_forward(xp, y)
        return val, (None if Jy is None else deriv[..., :, None] * Jy)

    def _compute_cvx(self, x, memo):
        import cvxpy as cp

        return getattr(cp, self.name)(self.args[0].build_cvxpy(x, memo))

    def _repr(self):
        return f"{self.name}({self.args[0]!r})"


def sign_by_range(lo, hi):
    """+1 where the argument is non-negative, −1 where non-positive, NaN where it may cross 0."""
    return np.where(lo >= 0, 1.0, np.where(hi <= 0, -1.0, np.nan))


class Abs(Elementwise):
    """|y| elementwise.

    Convex; non-decreasing for a non-negative argument, non-increasing for a non-positive one.
    Range [dist(0, [lo, hi]), max(|lo|, |hi|)].  1-Lipschitz (G = 1).  Not differentiable at 0:
    smoothness unknown unless the argument's range excludes the interior crossing of 0, where
    abs is linear (β = 0).
    """

    name = "abs"

    def is_atom_convex(self):
        return True

    def _sign(self, lo, hi):
        return sign_by_range(lo, hi)

    def atom_bounds(self, lo, hi):
        return np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(np.abs(lo), np.abs(hi))), \
            np.maximum(np.abs(lo), np.abs(hi))

    def _deriv_bound(self, lo, hi):
        return np.where((lo == 0) & (hi == 0), 0.0, 1.0)

    def atom_smoothness(self, p, lo, hi):
        return np.where((lo >= 0) | (hi <= 0), 0.0, np.inf)

    def _scalar_forward(self, xp, y):
        return xp.abs(y), self._sign_with_range(xp, y)

    def _unknown_reason(self, prop, q):
        if prop == "smoothness":
            lo, hi = self.args[0].range() if not self.shape else (None, None)
            where = f" and its argument ranges over [{lo:.3g}, {hi:.3g}]" if lo is not None else ""
            return ("abs is not differentiable at 0" + where +
                    "; inside lse, the compiler may rewrite |u| as the pair u, -u")
        if prop == "monotonicity":
            lo, hi = self.args[0].range() if not self.shape else (None, None)
            where = (f"ranges over [{lo:.3g}, {hi:.3g}]" if lo is not None
                     else "may take either sign")
            return f"abs decreases below 0 and increases above it, and its argument {where}"
        return super()._unknown_reason(prop, q)


class Pos(Elementwise):
    """max(y, 0) elementwise.

    Convex and non-decreasing.  Range [max(lo, 0), max(hi, 0)].  G = 1 (0 if hi ≤ 0).  Not
    differentiable at 0: β = 0 when the range does not straddle 0, unknown otherwise.
    """

    name = "pos"

    def is_atom_convex(self):
        return True

    def _sign(self, lo, hi):
        return np.ones_like(lo)

    def atom_bounds(self, lo, hi):
        return np.maximum(lo, 0.0), np.maximum(hi, 0.0)

    def _deriv_bound(self, lo, hi):
        return np.where(hi > 0, 1.0, 0.0)

    def atom_smoothness(self, p, lo, hi):
        return np.where((lo >= 0) | (hi <= 0), 0.0, np.inf)

    def _scalar_forward(self, xp, y):
        lo = self.args[0].entry_bounds()[0]
        at0 = xp.asarray((lo >= 0).astype(float), like=y)  # pos is the identity when lo ≥ 0
        return xp.maximum(y, 0.0 * y), xp.where(y == 0, at0 + 0.0 * y, xp.astype_float(y > 0, like=y))

    def _unknown_reason(self, prop, q):
        if prop == "smoothness":
            return "pos is not differentiable at 0 and its argument's range contains 0"
        return super()._unknown_reason(prop, q)


class Square(Elementwise):
    """y² elementwise.

    Convex; non-decreasing for a non-negative argument, non-increasing for a non-positive one.
    Range [dist(0, [lo, hi])², max(lo², hi²)].  G = 2·max(|lo|, |hi|); β = 2.
    """

    name = "square"

    def is_atom_convex(self):
        return True

    def _sign(self, lo, hi):
        return sign_by_range(lo, hi)

    def atom_bounds(self, lo, hi):
        m = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(np.abs(lo), np.abs(hi)))
        return m * m, np.maximum(lo * lo, hi * hi)

    def _deriv_bound(self, lo, hi):
        return 2.0 * np.maximum(np.abs(lo), np.abs(hi))

    def atom_smoothness(self, p, lo, hi):
        return np.full(self.size, 2.0)

    def _scalar_forward(self, xp, y):
        return y * y, 2.0 * y


def abs(x) -> Expression:  # noqa: A001 - mirrors cvxpy's name
    """Elementwise absolute value |x|; see :class:`Abs`."""
    return Abs(x)


def pos(x) -> Expression:
    """Elementwise positive part max(x, 0); see :class:`Pos`."""
    return Pos(x)


def square(x) -> Expression:
    """Elementwise square x²; see :class:`Square`."""
    return Square(x)

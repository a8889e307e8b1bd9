"""Norms of a (vector) expression: ``norm1``, ``norm2``, ``norm_inf`` (scalars)."""

from __future__ import annotations

import math

import numpy as np

from .atom import Reduction
from .elementwise import sign_by_range
from .expression import Expression
from .maximum import can_win, winner_subgradient


def _magnitude_bounds(lo, hi):
    """Range of |y_j| when y_j ∈ [lo_j, hi_j]."""
    mlo = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(np.abs(lo), np.abs(hi)))
    return mlo, np.maximum(np.abs(lo), np.abs(hi))


def _fixed_sign(lo, hi):
    return (lo >= 0) | (hi <= 0)


class _Norm(Reduction):
    """Shared facts: convex; monotone in y_j like |y_j| (by the sign of its range)."""

    def is_atom_convex(self):
        return True

    def atom_monotonicity(self, lo, hi):
        return sign_by_range(lo, hi)[None, :]

    def _repr(self):
        return f"{self.name}({self._args_repr()})"


class Norm1(_Norm):
    """‖y‖₁ = Σ|y_j|.

    ∂/∂y_j = sign(y_j): G_j = 1, so L_φ,p = ‖1‖_{p*} (1 w.r.t. ℓ1 on y, √n for ℓ2, n for ℓ∞).
    Range [Σ min|y_j|, Σ max|y_j|].  Linear (β = 0) when no entry's range straddles 0,
    otherwise not differentiable (smoothness unknown).
    """

    name = "norm1"

    def atom_bounds(self, lo, hi):
        mlo, mhi = _magnitude_bounds(lo, hi)
        return mlo.sum(), mhi.sum()

    def atom_coordinate_lipschitz(self, lo, hi):
        return np.where((lo == 0) & (hi == 0), 0.0, 1.0)[None, :]

    def atom_smoothness(self, p, lo, hi):
        return np.array([0.0 if np.all(_fixed_sign(lo, hi)) else np.inf])

    def atom_forward(self, xp, y, Jy):
        val = xp.sum(xp.abs(y), axis=-1, keepdims=True)
        return val, self._chain(xp, self._sign_with_range(xp, y)[:, None, :], Jy)

    def atom_cvxpy(self, cvx_args):
        import cvxpy as cp

        return cp.norm1(self._cvx_y(cvx_args))


class Norm2(_Norm):
    """‖y‖₂.

    ∇ = y/‖y‖₂ (0 at 0): ‖∇‖₂ ≤ 1, so L_φ,2 = L_φ,1 = 1 and L_φ,∞ = √n.  Range
    [‖min|y|‖₂, ‖max|y|‖₂].  Hessian (I − uuᵀ)/‖y‖ with u = y/‖y‖: when the range box stays at
    distance r > 0 from 0, β_φ,2 = β_φ,1 = 1/r and β_φ,∞ = n/r; otherwise unknown.
    """

    name = "norm2"

    def atom_bounds(self, lo, hi):
        mlo, mhi = _magnitude_bounds(lo, hi)
        return math.sqrt(np.sum(mlo ** 2)), math.sqrt(np.sum(mhi ** 2))

    def atom_coordinate_lipschitz(self, lo, hi):
        return np.where((lo == 0) & (hi == 0), 0.0, 1.0)[None, :]

    def atom_lipschitz_extra(self, p, lo, hi):
        return np.array([math.sqrt(self.n_in) if p == math.inf else 1.0])

    def atom_smoothness(self, p, lo, hi):
        r = math.sqrt(np.sum(_magnitude_bounds(lo, hi)[0] ** 2))
        if r == 0:
            return np.array([np.inf])
        return np.array([self.n_in / r if p == math.inf else 1.0 / r])

    def atom_forward(self, xp, y, Jy):
        val = xp.sqrt(xp.sum(y * y, axis=-1, keepdims=True))
        if Jy is None:
            return val, None
        safe = xp.where(val > 0, val, 1.0 + 0.0 * val)
        return val, self._chain(xp, (y / safe)[:, None, :], Jy)

    def atom_cvxpy(self, cvx_args):
        import cvxpy as cp

        return cp.norm(self._cvx_y(cvx_args), 2)


class NormInf(_Norm):
    """‖y‖_∞ = max_j |y_j|.

    Its subgradient is ±e_j: 1-Lipschitz w.r.t. every ℓp on y.  Range [max min|y_j|,
    max max|y_j|].  Entries whose magnitude can never be the largest get G_j = 0.  Not
    differentiable at ties: smoothness unknown unless a single entry of fixed sign can win.
    """

    name = "norm_inf"

    def atom_bounds(self, lo, hi):
        mlo, mhi = _magnitude_bounds(lo, hi)
        return mlo.max(), mhi.max()

    def atom_coordinate_lipschitz(self, lo, hi):
        return can_win(*_magnitude_bounds(lo, hi)).astype(float)[None, :]

    def atom_lipschitz_extra(self, p, lo, hi):
        return np.ones(1)

    def atom_smoothness(self, p, lo, hi):
        win = can_win(*_magnitude_bounds(lo, hi))
        return np.array([0.0 if win.sum() == 1 and np.all(_fixed_sign(lo, hi)[win]) else np.inf])

    def atom_forward(self, xp, y, Jy):
        a = xp.abs(y)
        val = xp.amax(a, axis=-1, keepdims=True)
        if Jy is None:
            return val, None
        return val, self._chain(xp, (winner_subgradient(xp, a) * self._sign_with_range(xp, y))[:, None, :], Jy)

    def atom_cvxpy(self, cvx_args):
        import cvxpy as cp

        return cp.norm_inf(self._cvx_y(cvx_args))


def norm1(x) -> Expression:
    """ℓ1 norm of an expression (a list or tuple is stacked first); see :class:`Norm1`."""
    return Norm1(x)


def norm2(x) -> Expression:
    """ℓ2 norm of an expression (a list or tuple is stacked first); see :class:`Norm2`."""
    return Norm2(x)


def norm_inf(x) -> Expression:
    """ℓ∞ norm of an expression (a list or tuple is stacked first); see :class:`NormInf`."""
    return NormInf(x)

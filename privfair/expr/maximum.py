"""The maximum of all entries of its arguments: ``maximum(a, b, ...)``."""

from __future__ import annotations

import numpy as np

from .atom import Reduction
from .expression import Expression


def can_win(lo, hi):
    """Entries j that can be the maximum on the box: hi_j ≥ max_{k≠j} lo_k."""
    n = lo.size
    if n == 1:
        return np.ones(1, dtype=bool)
    order = np.sort(lo)
    best_other = np.where(lo == order[-1], order[-2], order[-1])
    return hi >= best_other


def winner_subgradient(xp, y):
    """Subgradient of max: the uniform distribution over the maximisers of each row of y."""
    top = xp.amax(y, axis=-1, keepdims=True)
    w = xp.astype_float(y >= top, like=y)
    return w / xp.sum(w, axis=-1, keepdims=True)


class Maximum(Reduction):
    """max_j y_j over all entries of the arguments (a scalar).

    Convex and non-decreasing in every argument.  Range [max lo, max hi].  Its (sub)gradient is a
    point of the simplex, so it is 1-Lipschitz w.r.t. ‖y‖_∞ (hence w.r.t. every ℓp on y) and the
    composition gives L ≤ max_j L_j.  Entries that can never be the maximum on the box
    (hi_j < max_{k≠j} lo_k) get G_j = 0.  Not differentiable where two entries tie: smoothness
    unknown unless a single entry can be the maximum (then max = y_j, β = 0).
    """

    name = "maximum"

    def is_atom_convex(self):
        return True

    def atom_monotonicity(self, lo, hi):
        return np.ones((1, self.n_in))

    def atom_bounds(self, lo, hi):
        return np.max(lo), np.max(hi)

    def atom_coordinate_lipschitz(self, lo, hi):
        return can_win(lo, hi).astype(float)[None, :]

    def atom_lipschitz_extra(self, p, lo, hi):
        return np.ones(1)

    def atom_smoothness(self, p, lo, hi):
        return np.array([0.0 if can_win(lo, hi).sum() == 1 else np.inf])

    def atom_forward(self, xp, y, Jy):
        val = xp.amax(y, axis=-1, keepdims=True)
        if Jy is None:
            return val, None
        return val, self._chain(xp, winner_subgradient(xp, y)[:, None, :], Jy)

    def atom_cvxpy(self, cvx_args):
        import cvxpy as cp

        return cp.max(self._cvx_y(cvx_args))

    def _unknown_reason(self, prop, q):
        if prop == "smoothness":
            return "maximum is not differentiable where entries tie; use lse(..., eta=...) for a " \
                   "smooth upper bound within log(m)/eta"
        return super()._unknown_reason(prop, q)


def maximum(*args) -> Expression:
    """Largest entry over all arguments (scalars or vectors); see :class:`Maximum`."""
    return Maximum(*args)

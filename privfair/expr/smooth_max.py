"""Smooth maxima: log-sum-exp (:class:`Lse`, convex) and the Boltzmann operator (:class:`Smax`,
*not* convex, although [A] Def. 1.14 calls it so — docs/traps.md #1)."""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..errors import InvalidInputError, ModelingError
from ._numeric import fmt_num
from .atom import Reduction
from .expression import Expression


def check_eta(eta) -> float:
    """Validate a temperature η: a finite number > 0.

    Raises
    ------
    InvalidInputError
        ``eta`` is not a positive finite number.
    """
    fix = "pass a positive finite eta, e.g. eta=50 (larger is closer to the max)"
    if isinstance(eta, bool) or not isinstance(eta, numbers.Real):
        raise InvalidInputError("eta", eta, fix)
    eta = float(eta)
    if not math.isfinite(eta) or eta <= 0:
        raise InvalidInputError("eta", eta, fix)
    return eta


def _softmax(xp, z):
    z = z - xp.amax(z, axis=-1, keepdims=True)
    e = xp.exp(z)
    return e / xp.sum(e, axis=-1, keepdims=True)


def _lse_np(y, eta):
    m = np.max(y)
    return float(m + np.log(np.sum(np.exp(eta * (y - m)))) / eta)


class _SmoothMax(Reduction):
    def __init__(self, *args, eta):
        self.eta = check_eta(eta)
        super().__init__(*args)

    def _params(self):
        return {"eta": self.eta}

    def _repr(self):
        return f"{self.name}({self._args_repr()}; eta={fmt_num(self.eta)})"


class Lse(_SmoothMax):
    """lse(y; η) = (1/η) log Σ_j e^{η y_j}, computed stably (the max is subtracted first).

    * convex, non-decreasing in every argument;
    * range [lse(lo), lse(hi)] ⊂ [max lo, max hi + log(n)/η]  (max y ≤ lse ≤ max y + log(n)/η);
    * ∇ = softmax(ηy) lies in the simplex: 1-Lipschitz w.r.t. ‖y‖_∞ (so L ≤ max_j L_j), and
      per coordinate ∂/∂y_j ≤ 1/(1 + Σ_{k≠j} e^{η(lo_k − hi_j)});
    * ∇² = η(diag(p) − ppᵀ) is PSD with xᵀ∇²x = η Var_p(x): β_φ,∞ = η (Var ≤ 1 for
      ‖x‖_∞ ≤ 1), β_φ,2 = η/2 (Var ≤ (max x − min x)²/4 ≤ 1/2), β_φ,1 = η/4.
    """

    name = "lse"

    def is_atom_convex(self):
        return True

    def atom_monotonicity(self, lo, hi):
        return np.ones((1, self.n_in))

    def atom_bounds(self, lo, hi):
        return _lse_np(lo, self.eta), _lse_np(hi, self.eta)

    def atom_coordinate_lipschitz(self, lo, hi):
        with np.errstate(over="ignore"):
            others = np.exp(self.eta * (lo[None, :] - hi[:, None]))
        np.fill_diagonal(others, 0.0)
        return (1.0 / (1.0 + others.sum(axis=1)))[None, :]

    def atom_lipschitz_extra(self, p, lo, hi):
        return np.ones(1)

    def atom_smoothness(self, p, lo, hi):
        return np.array([self.eta * {1.0: 0.25, 2.0: 0.5, math.inf: 1.0}[p]])

    def atom_forward(self, xp, y, Jy):
        m = xp.amax(y, axis=-1, keepdims=True)
        val = m + xp.log(xp.sum(xp.exp(self.eta * (y - m)), axis=-1, keepdims=True)) / self.eta
        if Jy is None:
            return val, None
        return val, self._chain(xp, _softmax(xp, self.eta * y)[:, None, :], Jy)

    def atom_cvxpy(self, cvx_args):
        import cvxpy as cp

        return cp.log_sum_exp(self.eta * self._cvx_y(cvx_args)) / self.eta


class Smax(_SmoothMax):
    """smax(y; η) = Σ_j y_j e^{η y_j} / Σ_j e^{η y_j} — the Boltzmann operator of [A] Def. 1.14.

    **Not convex and not concave** (its second derivative changes sign), so its curvature is
    "unknown" and DCP never calls it convex; use :class:`Lse` for a convex smooth maximum.
    With p = softmax(ηy), s = smax(y), d = y − s, and R = max hi − min lo the width of the
    arguments' range (n entries):

    * ∂s/∂y_j = p_j (1 + η d_j).  Σ_j ∂_j = 1, and the negative parts sum to
      N ≤ min(ηR/4, (n−1)e^{−2}) (each is p_j(η(s − y_j) − 1) ≤ x e^{-x}-type ≤ e^{−2}, and in
      total ≤ η·MAD_p(y)/2 ≤ ηR/4).  Hence ‖∇s‖₁ ≤ 1 + 2N (the Lipschitz constant w.r.t. every
      ℓp on y) and |∂_j| ≤ 1 + N;
    * non-decreasing in every argument when ηR ≤ 1 (then 1 + η d_j ≥ 0); otherwise not monotone
      (unknown);
    * range [min lo, max hi] (a convex combination of the entries);
    * ∇²_ij = η p_i [δ_ij (2 + η d_i) − p_j (2 + η d_i + η d_j)], so Σ_ij |∇²_ij| ≤
      η (4 + 3 η MAD_p) with η·MAD_p ≤ min(ηR/2, 2(n−1)/e): β_φ ≤ η(4 + 3 min(ηR/2, 2(n−1)/e))
      w.r.t. every ℓp on y (β = 0 for a single entry, where smax(y) = y).
    """

    name = "smax"

    def _neg_mass(self, lo, hi):
        R = float(np.max(hi) - np.min(lo))
        return min(self.eta * R / 4.0, (self.n_in - 1) * math.exp(-2.0)), R

    def atom_monotonicity(self, lo, hi):
        R = float(np.max(hi) - np.min(lo))
        return np.full((1, self.n_in), 1.0 if self.eta * R <= 1.0 else np.nan)

    def atom_bounds(self, lo, hi):
        return np.min(lo), np.max(hi)

    def atom_coordinate_lipschitz(self, lo, hi):
        return np.full((1, self.n_in), 1.0 + self._neg_mass(lo, hi)[0])

    def atom_lipschitz_extra(self, p, lo, hi):
        return np.array([1.0 + 2.0 * self._neg_mass(lo, hi)[0]])

    def atom_smoothness(self, p, lo, hi):
        if self.n_in == 1:
            return np.zeros(1)
        R = float(np.max(hi) - np.min(lo))
        mad = min(self.eta * R / 2.0, 2.0 * (self.n_in - 1) / math.e)
        return np.array([self.eta * (4.0 + 3.0 * mad)])

    def atom_forward(self, xp, y, Jy):
        p = _softmax(xp, self.eta * y)
        s = xp.sum(p * y, axis=-1, keepdims=True)
        if Jy is None:
            return s, None
        return s, self._chain(xp, (p * (1.0 + self.eta * (y - s)))[:, None, :], Jy)

    def atom_cvxpy(self, cvx_args):
        raise ModelingError("smax", repr(self), "smax (the Boltzmann operator) is not convex and has "
                                                "no cvxpy equivalent; use pf.lse(..., eta=...) for a "
                                                "convex smooth maximum")

    def _unknown_reason(self, prop, q):
        if prop == "curvature":
            return ("smax is the Boltzmann operator Σ y e^{ηy}/Σ e^{ηy}: neither convex nor concave; "
                    "use lse(..., eta=...) (convex, within log(m)/eta of the max)")
        if prop == "monotonicity":
            return "smax is not monotone when eta × (width of its arguments' range) > 1"
        return super()._unknown_reason(prop, q)


def lse(*args, eta) -> Expression:
    """Log-sum-exp smooth maximum of all entries of the arguments; see :class:`Lse`.

    Parameters
    ----------
    *args : Expression or number
        Scalars or vectors, flattened and concatenated.
    eta : float
        Temperature > 0; lse is within log(n)/eta above the max.
    """
    return Lse(*args, eta=eta)


def smax(*args, eta) -> Expression:
    """Boltzmann smooth maximum Σ y e^{ηy}/Σ e^{ηy} (not convex); see :class:`Smax`."""
    return Smax(*args, eta=eta)

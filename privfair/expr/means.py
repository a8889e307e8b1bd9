"""Geometric and harmonic means of all entries of the arguments (concave, non-decreasing).

Both are defined for y ≥ 0 (cvxpy's convention: ``geo_mean`` and ``harmonic_mean`` have the
implicit domain y ≥ 0); if an argument's range dips below 0 the constants are unknown.
Their constants depend on a *positive lower bound* a_j ≤ y_j (from the arguments' ranges
[a_j, b_j]): near 0 the gradient of gmean and the curvature of both blow up.
"""

from __future__ import annotations

import numpy as np

from .atom import Reduction
from .expression import Expression


def _beta_from_hessian_bound(Hb, p):
    """β_φ,p from an entrywise bound |∇²φ| ≤ Hb: ‖H‖_{p→p*} ≤ Σ Hb (p=∞), ‖Hb‖₂ (p=2),
    max Hb (p=1)."""
    if not np.all(np.isfinite(Hb)):
        return np.inf
    if p == np.inf:
        return float(Hb.sum())
    if p == 2.0:
        return float(np.linalg.norm(Hb, 2))
    return float(Hb.max())


def _prod_pow(b, m, skip):
    """Π_{k ∉ skip} b_k^{1/m}."""
    mask = np.ones(b.size, dtype=bool)
    mask[list(skip)] = False
    return float(np.prod(b[mask] ** (1.0 / m)))


def _pow0(a, e, factor):
    """factor · a^e with a ≥ 0, e ≤ 0: 0 when factor is 0, inf when a is 0 (and factor > 0)."""
    if factor == 0:
        return 0.0
    return np.inf if a == 0 and e < 0 else factor * a ** e


class _Mean(Reduction):
    """Shared facts of the means: concave, non-decreasing, monotone range map."""

    def is_atom_concave(self):
        return True

    def atom_monotonicity(self, lo, hi):
        return np.ones((1, self.n_in))

    def atom_bounds(self, lo, hi):
        return self._np_value(np.maximum(lo, 0.0)), self._np_value(np.maximum(hi, 0.0))

    def _outside_domain(self, lo):
        return bool(np.any(lo < 0))

    def _unknown_reason(self, prop, q):
        lo = np.concatenate([a.entry_bounds()[0] for a in self.args])
        if self._outside_domain(lo):
            return f"{self.name} is defined for non-negative arguments, but an argument's range " \
                   f"reaches {lo.min():.3g} < 0"
        if prop in ("lipschitz", "smoothness"):
            return (f"{self.name}'s {'gradient' if prop == 'lipschitz' else 'curvature'} is unbounded "
                    "where an argument approaches 0, and an argument's range starts at 0; bound it "
                    "away from 0 (e.g. add a constant) to get finite constants")
        return super()._unknown_reason(prop, q)


class GMean(_Mean):
    """gmean(y) = (Π_j y_j)^{1/n} on y ≥ 0 (NaN off the domain).

    * concave, non-decreasing; range [gmean(max(lo, 0)), gmean(max(hi, 0))];
    * ∂/∂y_j = g/(n y_j) ≤ (1/n) a_j^{1/n−1} Π_{k≠j} b_k^{1/n} on [a, b] (G_j), unbounded when
      a_j = 0 and n > 1: Lipschitz constant unknown unless every a_j > 0;
    * ∇²_ij = g/(n² y_i y_j) − δ_ij g/(n y_i²): entrywise bounded by
      (1/n²) a_i^{1/n−1} a_j^{1/n−1} Π_{k≠i,j} b_k^{1/n} (i ≠ j) and
      ((n−1)/n²) a_i^{1/n−2} Π_{k≠i} b_k^{1/n} (i = j), whence β_φ,p.
    """

    name = "gmean"

    @staticmethod
    def _np_value(y):
        return float(np.prod(y) ** (1.0 / y.size))

    def atom_coordinate_lipschitz(self, lo, hi):
        n = self.n_in
        if self._outside_domain(lo):
            return np.full((1, n), np.inf)
        if n == 1:
            return np.ones((1, 1))
        return np.array([[_pow0(lo[j], 1.0 / n - 1.0, _prod_pow(hi, n, [j]) / n) for j in range(n)]])

    def _hessian_bound(self, lo, hi):
        n = self.n_in
        Hb = np.empty((n, n))
        for i in range(n):
            for j in range(n):
                if i == j:
                    Hb[i, i] = _pow0(lo[i], 1.0 / n - 2.0, (n - 1) / n ** 2 * _prod_pow(hi, n, [i]))
                else:
                    f = _prod_pow(hi, n, [i, j]) / n ** 2
                    Hb[i, j] = 0.0 if f == 0 else _pow0(lo[i], 1.0 / n - 1.0, f) * _pow0(lo[j], 1.0 / n - 1.0, 1.0)
        return Hb

    def atom_smoothness(self, p, lo, hi):
        if self._outside_domain(lo):
            return np.array([np.inf])
        if self.n_in == 1:
            return np.zeros(1)
        return np.array([_beta_from_hessian_bound(self._hessian_bound(lo, hi), p)])

    def atom_forward(self, xp, y, Jy):
        n = y.shape[-1]
        g = xp.exp(xp.sum(xp.log(y), axis=-1, keepdims=True) / n)
        if Jy is None:
            return g, None
        if n == 1:
            return g, Jy
        d = xp.where(y > 0, g / (n * y), float("inf") + 0.0 * y)
        return g, self._chain(xp, d[:, None, :], Jy)

    def atom_cvxpy(self, cvx_args):
        import cvxpy as cp

        return cp.geo_mean(self._cvx_y(cvx_args))


class HMean(_Mean):
    """hmean(y) = n / Σ_j 1/y_j on y ≥ 0 (0 when an entry is 0, NaN off the domain).

    * concave, non-decreasing; range [hmean(max(lo, 0)), hmean(max(hi, 0))];
    * ∂/∂y_j = (h/y_j)²/n = n/(1 + y_j T_j)² with T_j = Σ_{k≠j} 1/y_k, so 0 ≤ ∂_j ≤ n and
      ‖∇h‖₁ = (n/S²) Σ 1/y_j² ≤ n max_j 1/(1 + y_j T_j) ≤ n: hmean is n-Lipschitz w.r.t. every
      ℓp on y even on the closed orthant; on [a, b], ∂_j ≤ n/(1 + a_j Σ_{k≠j} 1/b_k)² (G_j) and
      ‖∇h‖₁ ≤ n max_j 1/(1 + a_j Σ_{k≠j} 1/b_k);
    * ∇²_ij = (2n/S³)/(y_i² y_j²) − δ_ij 2n/(S² y_i³): |∇²_ii| ≤ 2n/(a_i (1 + a_i T_i)²) and,
      for i ≠ j, ∇²_ij ≤ min(n/(2(a_i + a_j)), 2n/(S_lo³ a_i² a_j²)) with S_lo = Σ 1/b_k;
      unbounded when some a_j = 0 (smoothness unknown).
    """

    name = "hmean"

    @staticmethod
    def _np_value(y):
        if np.any(y == 0):
            return 0.0
        return float(y.size / np.sum(1.0 / y))

    def atom_coordinate_lipschitz(self, lo, hi):
        n = self.n_in
        if self._outside_domain(lo):
            return np.full((1, n), np.inf)
        with np.errstate(divide="ignore"):
            inv_hi = 1.0 / hi
        G = np.empty(n)
        for j in range(n):
            T = float(np.sum(np.delete(inv_hi, j)))
            G[j] = 0.0 if np.isinf(T) else n / (1.0 + lo[j] * T) ** 2
        return G[None, :]

    def atom_lipschitz_extra(self, p, lo, hi):
        # ‖∇h‖₁ = (n/S²) Σ x_j² with x_j = 1/y_j ≤ n max_j x_j/S = n max_j 1/(1 + y_j T_j)
        if self._outside_domain(lo):
            return np.array([np.inf])
        n = self.n_in
        with np.errstate(divide="ignore"):
            inv_hi = 1.0 / hi
        T = np.array([float(np.sum(np.delete(inv_hi, j))) for j in range(n)])
        with np.errstate(invalid="ignore"):
            frac = np.where(np.isinf(T), 0.0, 1.0 / (1.0 + lo * np.where(np.isinf(T), 0.0, T)))
        return np.array([n * float(frac.max())])

    def _hessian_bound(self, lo, hi):
        n = self.n_in
        with np.errstate(divide="ignore"):
            inv_hi = 1.0 / hi
        S_lo = float(np.sum(inv_hi))
        if np.isinf(S_lo):  # some entry is identically 0: h ≡ 0
            return np.zeros((n, n))
        Hb = np.empty((n, n))
        for i in range(n):
            a = lo[i]
            T = S_lo - inv_hi[i]
            Hb[i, i] = np.inf if a == 0 else 2 * n / (a * (1 + a * T) ** 2)
            for j in range(n):
                if j != i:
                    s = lo[i] + lo[j]
                    b1 = np.inf if s == 0 else n / (2 * s)
                    b2 = np.inf if lo[i] * lo[j] == 0 else 2 * n / (S_lo ** 3 * lo[i] ** 2 * lo[j] ** 2)
                    Hb[i, j] = min(b1, b2)
        return Hb

    def atom_smoothness(self, p, lo, hi):
        if self._outside_domain(lo):
            return np.array([np.inf])
        if self.n_in == 1:
            return np.zeros(1)
        return np.array([_beta_from_hessian_bound(self._hessian_bound(lo, hi), p)])

    def atom_forward(self, xp, y, Jy):
        n = y.shape[-1]
        h = n / xp.sum(1.0 / y, axis=-1, keepdims=True)
        outside = xp.sum(xp.astype_float(y < 0, like=y), axis=-1, keepdims=True) > 0
        h = xp.where(outside, float("nan") + 0.0 * h, h)  # undefined off the domain y ≥ 0
        if Jy is None:
            return h, None
        zeros = xp.sum(xp.astype_float(y == 0, like=y), axis=-1, keepdims=True)
        r = xp.where(y > 0, h / y, n / xp.maximum(zeros, 1.0 + 0.0 * zeros) + 0.0 * y)
        return h, self._chain(xp, (r * r / n)[:, None, :], Jy)

    def atom_cvxpy(self, cvx_args):
        import cvxpy as cp

        return cp.harmonic_mean(self._cvx_y(cvx_args))



def gmean(*args) -> Expression:
    """Geometric mean of all entries of the arguments (y ≥ 0); see :class:`GMean`."""
    return GMean(*args)


def hmean(*args) -> Expression:
    """Harmonic mean of all entries of the arguments (y ≥ 0); see :class:`HMean`."""
    return HMean(*args)

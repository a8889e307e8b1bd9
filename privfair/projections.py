"""Vectorized Euclidean projections onto norm balls of sparse decision sets (numpy only).

:func:`project_disjoint_group_ball` projects onto {w : Σ_g d_g‖w_g‖_∞ ≤ r} for disjoint groups
(ℓ1 = singleton groups, ℓ∞ = one group are its extreme cases).  The certified ERM solver of the
row-private backends projects hundreds of times per solve; the per-group Python loop it replaces
(one sort-based ℓ1 projection per group per bisection step) took 6.7 of 7.9 s of an
output-perturbation solve on Adult with groups of 4 features (measured; see the commit message).

Method.  The projection is prox_{μΩ}(x) for the constraint's multiplier μ ≥ 0, and by Moreau's
decomposition prox_{μΩ}(x) = x − Π_{μK}(x), K = Π_g {‖s_g‖₁ ≤ d_g} the dual ball; per group
w_g(μ) = x_g − Π_{μd_g·B₁}(x_g) = sign(x_g)·min(|x_g|, θ_g(μ)), where θ_g(μ)
is the soft threshold of the ℓ1-ball projection of x_g onto radius μd_g (Duchi, Shalev-Shwartz,
Singer & Chandra 2008, sort-based: θ = (Σ_{k≤ρ} u_k − μd_g)/ρ with u the sorted |x_g| and ρ the
last k with u_k > (Σ_{j≤k} u_j − μd_g)/k; θ = 0 when ‖x_g‖₁ ≤ μd_g).  Then
Ω(w(μ)) = Σ_g d_g θ_g(μ), non-increasing in μ: the multiplier μ with Ω(w(μ)) = r is found by
bisection to machine precision.  The sorts and cumulative sums do not depend on μ, so they are
done once (O(p log p)); each bisection step is O(p) numpy work on a padded (groups × size) array.
"""

from __future__ import annotations

import numpy as np

__all__ = ["project_disjoint_group_ball", "GroupLayout"]


class GroupLayout:
    """The padded (groups × max size) index array of disjoint groups (built once per norm)."""

    def __init__(self, groups, weights, p):
        sizes = np.array([len(g) for g in groups])
        self.p = int(p)
        self.weights = np.asarray(weights, dtype=float)
        self.index = np.full((len(groups), int(sizes.max())), -1, dtype=np.int64)
        for k, g in enumerate(groups):
            self.index[k, :len(g)] = g
        self.mask = self.index >= 0


def _thresholds(u, css, k, radius):
    """θ_g of the ℓ1-ball projections of every group's sorted |x_g| (rows of ``u``, padded with
    zeros) onto the radii ``radius`` (one per group); 0 for a group already inside its ball."""
    cond = u * k > css - radius[:, None]
    rho = cond.shape[1] - 1 - np.argmax(cond[:, ::-1], axis=1)        # last k that holds
    theta = (css[np.arange(len(u)), rho] - radius) / (rho + 1.0)
    inside = css[:, -1] <= radius
    return np.where(inside, 0.0, np.maximum(theta, 0.0))


def project_disjoint_group_ball(x, layout: GroupLayout, radius: float) -> np.ndarray:
    """Euclidean projection of ``x`` onto {w : Σ_g d_g‖w_g‖_∞ ≤ radius} (disjoint groups).

    >>> import numpy as np
    >>> L = GroupLayout([[0, 1], [2, 3]], [1.0, 2.0], 4)
    >>> w = project_disjoint_group_ball(np.array([3.0, -1.0, 0.5, 2.0]), L, 2.0)
    >>> round(float(np.abs(w[:2]).max() + 2 * np.abs(w[2:]).max()), 9)
    2.0
    """
    x = np.asarray(x, dtype=float)
    a = np.abs(x)
    d = layout.weights
    A = np.where(layout.mask, a[np.maximum(layout.index, 0)], 0.0)
    if float(d @ A.max(axis=1)) <= radius:
        return x.copy()
    if radius <= 0:
        return np.zeros_like(x)
    u = -np.sort(-A, axis=1)                                   # each group's |x| descending
    css = np.cumsum(u, axis=1)
    k = np.arange(1, u.shape[1] + 1)

    def omega(mu):
        return _thresholds(u, css, k, mu * d)

    lo, hi = 0.0, float(np.max(css[:, -1] / d))               # Ω(w(hi)) = 0 ≤ radius
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if float(d @ omega(mid)) > radius else (lo, mid)
    theta = omega(hi)
    t = np.zeros(layout.p)
    t[layout.index[layout.mask]] = np.broadcast_to(theta[:, None], layout.index.shape)[layout.mask]
    return np.sign(x) * np.minimum(a, t)

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
Ω(w(μ)) = Σ_g d_g θ_g(μ), non-increasing and piecewise linear in μ (θ_g is linear between the
μ where group g's active count ρ changes): the multiplier μ with Ω(w(μ)) = r is found exactly by
a binary search over those ≤ p breakpoints and one linear interpolation (issue #20; before, a
bisection on μ to machine precision, ~60 steps, 2.7 ms per projection on Adult's 101 features
in 12 groups).  The sorts and cumulative sums do not depend on μ, so they are done once
(O(p log p)); each search step is O(p) numpy work on a padded (groups × size) array.
"""

from __future__ import annotations

import numpy as np

__all__ = ["project_disjoint_group_ball", "GroupLayout",
           "group_thresholds"]


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


def group_thresholds(u, css, k, radius):
    """θ_g of the ℓ1-ball projections of every group's sorted |x_g| (rows of ``u``, padded with
    zeros) onto the radii ``radius`` (shape (..., groups): one per group, with any leading
    batch dimensions); 0 for a group already inside its ball, max|x_g| at radius 0 (where the
    strict test below holds for no k)."""
    radius = np.asarray(radius, dtype=float)
    cond = u * k > css - radius[..., None]
    rho = cond.shape[-1] - 1 - np.argmax(cond[..., ::-1], axis=-1)      # last k that holds
    top = np.take_along_axis(np.broadcast_to(css, cond.shape), rho[..., None], axis=-1)[..., 0]
    theta = (top - radius) / (rho + 1.0)
    inside = css[:, -1] <= radius
    theta = np.where(radius <= 0, u[:, 0], theta)       # radius 0: no shrinkage, θ = max|x_g|
    return np.where(inside, 0.0, np.maximum(theta, 0.0))


#: below this many (breakpoints × groups × group size) entries, Ω(w(μ)) is evaluated at every
#: breakpoint in one vectorized pass (a 10⁵-float temporary) instead of a binary search
BATCH_MAX = 200_000


def project_disjoint_group_ball(x, layout: GroupLayout, radius: float) -> np.ndarray:
    """Euclidean projection of ``x`` onto {w : Σ_g d_g‖w_g‖_∞ ≤ radius} (disjoint groups).

    Exact (up to rounding), by a search over the breakpoints of the piecewise-linear
    Ω(w(μ)) (module docstring): O(p log p) for the sorts, then Ω at every breakpoint in one
    vectorized pass when that is small (:data:`BATCH_MAX`), else O(p) per step of a binary
    search over the ≤ p sorted breakpoints — at most ⌈log₂(p + 1)⌉ + 3 evaluations of the
    thresholds instead of the bisection's ~54 on μ.

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
    # Ω(x), computed once: the "inside" test and f(0) of the search below must be the same
    # float (two summation orders can disagree by an ulp, and then no breakpoint lies above r)
    omega0 = float(d @ A.max(axis=1))
    if omega0 <= radius:
        return x.copy()
    if radius <= 0:
        return np.zeros_like(x)
    u = -np.sort(-A, axis=1)                                   # each group's |x| descending
    css = np.cumsum(u, axis=1)
    k = np.arange(1, u.shape[1] + 1)

    def omega(mu):
        return group_thresholds(u, css, k, mu * d)

    # θ_g(μ) is linear in μ between the breakpoints μ = (css_k − k·u_{k+1})/d_g, where the
    # active count ρ of group g changes (u_{m+1} = 0: the group reaches 0 at ‖x_g‖₁/d_g), so
    # f(μ) = Σ_g d_g θ_g(μ) is piecewise linear and non-increasing; f(0) > radius ≥ 0 = f(max)
    nxt = np.concatenate([u[:, 1:], np.zeros((u.shape[0], 1))], axis=1)
    bps = np.unique(np.concatenate([[0.0], ((css - k * nxt) / d[:, None]).ravel()]))
    if len(bps) * u.size <= BATCH_MAX:          # every breakpoint at once (one numpy pass)
        f = group_thresholds(u, css, k, bps[:, None] * d) @ d
        f[0] = omega0                                          # f(0) = Ω(x) > radius
        lo = int(np.nonzero(f > radius)[0][-1])                # f is non-increasing
        hi = lo + 1
        f_lo, f_hi = float(f[lo]), float(f[hi])
    else:                                       # binary search: ⌈log₂ p⌉ evaluations
        lo, hi = 0, len(bps) - 1                               # f(bps[lo]) > r ≥ f(bps[hi])
        f_lo, f_hi = omega0, float(d @ omega(bps[hi]))
        while hi - lo > 1:
            mid = (lo + hi) // 2
            f_mid = float(d @ omega(bps[mid]))
            if f_mid > radius:
                lo, f_lo = mid, f_mid
            else:
                hi, f_hi = mid, f_mid
    # f is linear on [bps[lo], bps[hi]]: its root there, clamped against rounding
    mu = bps[lo] + (f_lo - radius) * (bps[hi] - bps[lo]) / (f_lo - f_hi)
    theta = omega(min(max(mu, bps[lo]), bps[hi]))
    t = np.zeros(layout.p)
    t[layout.index[layout.mask]] = np.broadcast_to(theta[:, None], layout.index.shape)[layout.mask]
    return np.sign(x) * np.minimum(a, t)

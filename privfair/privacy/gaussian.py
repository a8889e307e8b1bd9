"""The analytic Gaussian mechanism (Balle & Wang 2018) and exact Gaussian composition.

For ``value + N(0, σ²I)`` with ℓ2 sensitivity Δ, write μ = Δ/σ.  Balle & Wang (2018, Thm 8)
show the mechanism is (ε, δ)-DP **iff**

    δ ≥ δ_μ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ),

the hockey-stick divergence between N(0, 1) and N(μ, 1).  Adaptive composition of Gaussian
mechanisms with μ_1..μ_k is exactly a Gaussian mechanism with μ = (Σ μ_i²)^{1/2} (Dong, Roth &
Su 2022, Cor. 3.3 — μ-GDP composes this way), so the same formula is the tightest possible
accounting of any number of Gaussian releases.

Numerics: Φ is evaluated through ``scipy.special.log_ndtr`` and the difference as
``Φ(a)·(−expm1(ε + log Φ(b) − log Φ(a)))``, which keeps full relative precision in the tails.
Every bisection returns the *safe* end of its bracket and asks that the computed δ be below the
target by a relative margin of 1e-9, far above the float error of these expressions.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ._validate import check_delta, check_epsilon, check_positive

__all__ = ["gaussian_delta", "gaussian_epsilon", "calibrate_gaussian_sigma"]

_MARGIN = 1e-9


def gaussian_delta(epsilon: float, mu: float) -> float:
    """δ_μ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) for μ = Δ/σ (μ > 0, ε ≥ 0)."""
    if mu <= 0:
        return 0.0
    if math.isinf(mu):
        return 1.0
    a = mu / 2.0 - epsilon / mu
    b = -mu / 2.0 - epsilon / mu
    log_a = float(special.log_ndtr(a))
    log_b = epsilon + float(special.log_ndtr(b))
    if log_b >= log_a:  # only through rounding when δ ≈ 0
        return 0.0
    return float(math.exp(log_a) * -math.expm1(log_b - log_a))


def gaussian_epsilon(delta: float, mu: float) -> float:
    """The smallest ε ≥ 0 (up to 1e-12 relative) with δ_μ(ε) ≤ δ: the exact ε of μ-GDP."""
    if mu <= 0:
        return 0.0
    target = delta * (1.0 - _MARGIN)
    if gaussian_delta(0.0, mu) <= target:
        return 0.0
    lo, hi = 0.0, max(1.0, mu * mu)
    while gaussian_delta(hi, mu) > target:
        lo, hi = hi, 2.0 * hi
        if hi > 1e12:
            return math.inf
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if gaussian_delta(mid, mu) <= target:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-12 * hi:
            break
    return hi


def calibrate_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """The smallest σ (to 1e-12 relative) for which ``value + N(0, σ²I)`` is (ε, δ)-DP.

    Bisection on the exact condition of Balle & Wang (2018, Thm 8),
    Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) ≤ δ; the returned σ satisfies it (with a 1e-9
    relative margin on δ).

    Parameters
    ----------
    sensitivity : float
        ℓ2 sensitivity Δ > 0 of the released vector.
    epsilon : float
        Target ε > 0 (finite).
    delta : float
        Target δ in (0, 1).

    Examples
    --------
    >>> round(calibrate_gaussian_sigma(1.0, 1.0, 1e-5), 4)
    3.7306
    """
    sens = check_positive(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    d = check_delta(delta, positive=True)
    target = d * (1.0 - _MARGIN)

    def ok(sigma: float) -> bool:
        return gaussian_delta(eps, sens / sigma) <= target

    hi = sens
    while not ok(hi):
        hi *= 2.0
    lo = hi / 2.0
    while ok(lo) and lo > sens * 1e-12:
        hi, lo = lo, lo / 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-12 * hi:
            break
    return float(np.nextafter(hi, np.inf))

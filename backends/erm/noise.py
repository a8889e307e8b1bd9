"""The ε-DP output noise of the row-private ERM backends under pure ε: density ∝ exp(−‖b‖₂/κ)."""

from __future__ import annotations

import numpy as np

from privfair.privacy import gaussian_noise_vector

def gamma_norm_noise(P, kappa, rng):
    """b with density ∝ exp(−‖b‖₂/κ) on R^P: κ·Gamma(P, 1) times a uniform direction, built from
    the privacy core's float Gaussians (idealized numerics): Gamma(P, 1) = Σ_{k≤P} (g²+g'²)/2."""
    g = gaussian_noise_vector(P, 1.0, rng)
    e = gaussian_noise_vector(2 * P, 1.0, rng)
    radius = kappa * 0.5 * float(e @ e)
    return radius * g / np.linalg.norm(g)

"""The output noise of the row-private ERM backends under pure ε (density ∝ exp(−‖b‖₂/κ)), and
the subspace of θ that a decision set lets move (:func:`free_coordinates`), in which objective
perturbation draws its noise (:mod:`backends.erm.objective_perturbation`, issue #16)."""

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


def free_coordinates(decisions, P) -> np.ndarray:
    """The coordinates of θ = (w, b) ∈ R^P that the decision set C lets move (public: read from
    the declared set only): all P, or the P − 1 coordinates of w when C pins the intercept
    (``SparseLinear(intercept=False)`` or ``intercept_bound=0``: θ_b ≡ 0 on C).

    Their span F contains C (C ⊂ F, a linear subspace through 0), so for any b ∈ R^P and any
    θ ∈ C, bᵀθ = (P_F b)ᵀθ: a linear term enters a minimization over C only through P_F b."""
    pinned = float(getattr(decisions, "intercept_bound", 1.0)) == 0.0
    return np.arange(P - 1 if pinned and P > 1 else P)


def embed(P, coords, v) -> np.ndarray:
    """The vector of R^P equal to ``v`` on ``coords`` and 0 elsewhere."""
    out = np.zeros(P)
    out[coords] = v
    return out


def gamma_norm_noise_in(P, coords, kappa, rng):
    """b ∈ R^P, zero outside ``coords``, with density ∝ exp(−‖b‖₂/κ) on their span F
    (:func:`gamma_norm_noise` in dimension |coords|, embedded)."""
    return embed(P, coords, gamma_norm_noise(len(coords), kappa, rng))


def gaussian_noise_in(P, coords, sigma, rng):
    """b ∈ R^P, zero outside ``coords``, distributed N(0, σ²I) on their span F (= P_F of
    N(0, σ²I_P) in law)."""
    return embed(P, coords, gaussian_noise_vector(len(coords), sigma, rng))

"""Gaussian widths of the decision set C and of its dual ball (the utility bounds' G_C and [K]'s
G_{|P|(F)}), exact where a closed form exists, else Monte Carlo (cached on the norm)."""

from __future__ import annotations

import math


def expected_gaussian_norm(P):
    """E‖g‖₂ for g ~ N(0, I_P): √2·Γ((P + 1)/2)/Γ(P/2) (the Gaussian width of the unit ℓ2 ball)."""
    return math.sqrt(2) * math.exp(math.lgamma((P + 1) / 2) - math.lgamma(P / 2))


def primal_width(ds, n_samples=1000):
    """Gaussian width of C = {Ω(w) ≤ ρ} × [−ρ_b, ρ_b]: ρ·E Ω*(g) + ρ_b·√(2/π) (with its error)."""
    from privfair.norms import Width

    d = ds.n_features
    if ds.norm is None:
        base = Width(expected_gaussian_norm(d), 0.0, True)
    else:
        cache = ds.norm.__dict__.setdefault("_width_cache", {})
        if "primal" not in cache:
            ex = ds.norm.exact_gaussian_width("primal")
            cache["primal"] = (Width(ex, 0.0, True) if ex is not None else
                               ds.norm.gaussian_width("primal", n_samples=n_samples, rng=0))
        base = cache["primal"]
    return Width(ds.norm_radius * base.value + ds.intercept_bound * math.sqrt(2 / math.pi),
                 ds.norm_radius * base.stderr, base.exact, base.n_samples)


def dual_width(ds, n_samples=2000):
    """[K]'s G_{|P|(F)} = E Ω(g) (exact where a closed form exists, else Monte Carlo)."""
    from privfair.norms import Width

    d = ds.n_features
    if ds.norm is None:
        return Width(expected_gaussian_norm(d), 0.0, True)
    cache = ds.norm.__dict__.setdefault("_width_cache", {})
    if "dual" not in cache:
        ex = ds.norm.exact_gaussian_width("dual")
        cache["dual"] = (Width(ex, 0.0, True) if ex is not None else
                         ds.norm.gaussian_width("dual", n_samples=n_samples, rng=0))
    return cache["dual"]

"""Gaussian widths of the decision set C and of its dual ball (the utility bounds' G_C and [K]'s
G_{|P|(F)}), exact where a closed form exists, else Monte Carlo (cached on the norm)."""

from __future__ import annotations

import math

from privfair.models.norms import Width


def expected_gaussian_norm(P):
    """E‖g‖₂ for g ~ N(0, I_P): √2·Γ((P + 1)/2)/Γ(P/2) (the Gaussian width of the unit ℓ2 ball)."""
    return math.sqrt(2) * math.exp(math.lgamma((P + 1) / 2) - math.lgamma(P / 2))


def norm_width(norm, kind, n_samples):
    """E Ω*(g) (``kind="primal"``: the width of Ω's unit ball) or E Ω(g) (``"dual"``: of its
    dual ball), g ~ N(0, I): exact where the norm has a closed form, else Monte Carlo with a
    fixed seed; cached on the norm (public: it reads no data)."""
    cache = norm.__dict__.setdefault("_width_cache", {})
    if kind not in cache:
        ex = norm.exact_gaussian_width(kind)
        cache[kind] = (Width(ex, 0.0, True) if ex is not None else
                       norm.gaussian_width(kind, n_samples=n_samples, rng=0))
    return cache[kind]


def primal_width(ds, n_samples=1000):
    """Gaussian width of C = {Ω(w) ≤ ρ} × [−ρ_b, ρ_b]: ρ·E Ω*(g) + ρ_b·√(2/π) (with its error)."""
    d = ds.n_features
    base = (Width(expected_gaussian_norm(d), 0.0, True) if ds.norm is None
            else norm_width(ds.norm, "primal", n_samples))
    return Width(ds.norm_radius * base.value + ds.intercept_bound * math.sqrt(2 / math.pi),
                 ds.norm_radius * base.stderr, base.exact, base.n_samples)


def dual_width(ds, n_samples=2000):
    """[K]'s G_{|P|(F)} = E Ω(g) (exact where a closed form exists, else Monte Carlo)."""
    if ds.norm is None:
        return Width(expected_gaussian_norm(ds.n_features), 0.0, True)
    return norm_width(ds.norm, "dual", n_samples)

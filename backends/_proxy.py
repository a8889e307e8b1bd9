"""The two releases of the ``cells`` backend and the fits around them (see backends/cells.py).

* :func:`fit_score` — the public score: ridge logistic regression of y on X (no release needed
  under the "sensitive" relation, where X and y are identical in neighbouring datasets).
* **M1** :func:`release_proxy_statistic` — T = Σ_i a_i u_i (a_i = 1 for the first group, u_i the
  public design row of :meth:`privfair.cells.ProxyFeatures.design`).  The logistic likelihood of
  a given U depends on a only through T, so the proxy fitted from a noisy T
  (:func:`logistic_from_statistic`) is post-processing of one release.  Flipping a_i moves T by
  exactly ±u_i, so Δ₂ = max_i ‖u_i‖₂ (Δ₁ = max_i ‖u_i‖₁ for the pure-DP variant) — a function
  of (X, y), which the relation fixes: the bound holds for every pair of neighbours and is
  attained by the row of largest norm.
* **M2** :func:`release_group_counts` — the first group's count in every released cell, one
  count per (label, cell) or per cell.  Flipping a_i changes exactly one count by exactly 1, so
  Δ₁ = 1 and Laplace(1/ε₂) gives ε₂-DP.
* :func:`shrink` — empirical-Bayes shrinkage of the noisy counts toward the proxy's soft counts
  (post-processing).
"""

from __future__ import annotations

import numpy as np


__all__ = ["blas_single_thread", "logistic_from_statistic", "fit_score", "proxy_statistic",
           "proxy_sensitivity",
           "release_proxy_statistic", "group_counts", "release_group_counts", "shrink"]


from privfair.scores import fit_score, logistic_from_statistic  # noqa: E402,F401


def blas_single_thread():
    """A context limiting BLAS to one thread (when threadpoolctl is installed).

    The Hessians here are small (d ≤ ~200) products over n rows; on a loaded machine BLAS
    threads spin-waiting for cores cost 10–20× the single-threaded time.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def proxy_statistic(U, in_group) -> np.ndarray:
    """T = Σ_i a_i u_i: the only function of the sensitive column the proxy needs."""
    return np.asarray(U, dtype=float).T @ np.asarray(in_group, dtype=float)


def proxy_sensitivity(U, norm: str = "l2") -> float:
    """max_i ‖u_i‖: the exact sensitivity of T when one row's group flips (X, y fixed)."""
    U = np.asarray(U, dtype=float)
    if norm == "l2":
        return float(np.sqrt(np.max(np.einsum("ij,ij->i", U, U))))
    return float(np.max(np.abs(U).sum(axis=1)))


def release_proxy_statistic(U, in_group, epsilon, delta, rng, accountant=None, mult=1.0):
    """M1: T + N(0, σ²I) (analytic Gaussian, (ε, δ)) — or T + Lap(Δ₁/ε) when δ = 0.  ``mult``:
    the test-only noise multiplier (k× the noise, the nominal event recorded)."""
    from privfair.privacy import gaussian_mechanism, laplace_mechanism

    T = proxy_statistic(U, in_group)
    src = ("flipping one row's group moves T = Σ a_i u_i by exactly ±u_i (X, y fixed by the "
           "relation): max_i ‖u_i‖")
    label = f"M1: proxy statistic T = Σ a_i u_i ({T.size} dims)"
    if delta > 0:
        return _scaled(gaussian_mechanism, mult, accountant, T, proxy_sensitivity(U, "l2"),
                       epsilon, delta, rng, sensitivity_source=src + "₂", label=label)
    return _scaled(laplace_mechanism, mult, accountant, T, proxy_sensitivity(U, "l1"), epsilon,
                   rng, sensitivity_source=src + "₁", label=label)


def _scaled(mechanism, mult, accountant, value, sensitivity, *args, **kw):
    """``mechanism(value, sensitivity, *args, ...)`` returning its Release; with a test-only
    ``mult`` ≠ 1 the noise is drawn at mult× its scale and the accountant records the nominal
    event, while the Release returned carries the scale actually drawn (the backend's
    post-processing — the shrinkage — uses it, as a backend with this bug would)."""
    from dataclasses import replace

    if mult == 1.0:
        return mechanism(value, sensitivity, *args, accountant=accountant, return_event=True, **kw)
    out = mechanism(value, sensitivity * mult, *args, accountant=None, return_event=True, **kw)
    if accountant is not None:
        accountant.record(replace(out.event, sensitivity=sensitivity,
                                  scale=out.event.scale / mult))
    return out


def group_counts(in_group, y, cell, n_cells, label_split: bool) -> np.ndarray:
    """The first group's count per (label, cell) — shape (2·C,), label-major — or per cell (C,)."""
    key = (np.asarray(y, dtype=np.int64) * n_cells + cell) if label_split else np.asarray(cell)
    m = (2 if label_split else 1) * n_cells
    return np.bincount(key, weights=np.asarray(in_group, dtype=float), minlength=m)


def release_group_counts(counts, epsilon, rng, accountant=None, mult=1.0):
    """M2: counts + Lap(1/ε) per coordinate (ℓ1 sensitivity 1: one flip moves one count by 1).
    ``mult``: the test-only noise multiplier (as in :func:`release_proxy_statistic`)."""
    from privfair.privacy import laplace_mechanism

    return _scaled(laplace_mechanism, mult, accountant, np.asarray(counts, dtype=float), 1.0,
                   epsilon, rng,
                   sensitivity_source="one row's group flip changes exactly one "
                                      "cell count by exactly 1: ‖Δ‖₁ = 1",
                   label=f"M2: first group's count in {np.size(counts)} cells")


#: κ̂ at this floor means the method of moments found no signal above the noise (Σ r² ≤ m·v):
#: the counts cannot say how far the proxy is from them, and the estimate is the proxy's
KAPPA_FLOOR = 1e-6


def shrink(noisy, prior, totals, variance):
    """Shrink noisy counts toward the proxy's soft counts; returns (estimate, weights, κ).

    Model: count_c − prior_c has mean 0 and variance κ·N_c, the noise variance v.  κ by the
    method of moments, κ̂ = max(10⁻⁶, (Σ r_c² − m·v) / Σ N_c); the weight of the noisy count is
    w_c = κ̂N_c / (κ̂N_c + v); the estimate is clipped to [0, N_c].  v = 0 returns the counts.
    """
    noisy, prior, totals = (np.asarray(a, dtype=float) for a in (noisy, prior, totals))
    if variance <= 0:
        return np.clip(noisy, 0.0, totals), np.ones_like(noisy), float("inf")
    resid = noisy - prior
    kappa = max(KAPPA_FLOOR,
                float(np.sum(resid ** 2) - resid.size * variance) / max(totals.sum(), 1.0))
    w = kappa * totals / (kappa * totals + variance)
    return np.clip(prior + w * resid, 0.0, totals), w, kappa

"""The two releases of the ``cells`` backend and the fits around them (see backends/cells/cells.py).

* :func:`fit_score` — the public score: ridge logistic regression of y on X (no release needed
  under the "sensitive" relation, where X and y are identical in neighbouring datasets).
* **M1** :func:`proxy_event` — the event of T = Σ_i a_i u_i + noise (a_i = 1 for the first group, u_i the
  public design row of :meth:`privfair.models.cells.ProxyFeatures.design`).  The logistic likelihood of
  a given U depends on a only through T, so the proxy fitted from a noisy T
  (:func:`logistic_from_statistic`) is post-processing of one release.  Flipping a_i moves T by
  exactly ±u_i, so Δ₂ = max_i ‖u_i‖₂ (Δ₁ = max_i ‖u_i‖₁ for the pure-DP variant) — a function
  of (X, y), which the relation fixes: the bound holds for every pair of neighbours and is
  attained by the row of largest norm.
* **M2** :func:`counts_event` — the event of the first group's count in every released cell,
  one count per (label, cell) or per cell, + Laplace noise.  Flipping a_i changes exactly one count by exactly 1, so
  Δ₁ = 1 and Laplace(1/ε₂) gives ε₂-DP.
* :func:`shrink` — empirical-Bayes shrinkage of the noisy counts toward the proxy's soft counts
  (post-processing).

The two events are scheduled by the backend at plan time and drawn through
:mod:`privfair.privacy.release` (``Draws.gaussian`` / ``Draws.laplace``, exact samplers).
"""

from __future__ import annotations

import math

import numpy as np


__all__ = ["blas_single_thread", "logistic_from_statistic", "logistic_fits", "fit_score", "proxy_statistic",
           "proxy_sensitivity", "proxy_event", "group_counts", "counts_event", "shrink"]


from privfair.util.threads import blas_single_thread  # noqa: E402,F401
from privfair.statistics.scores import (fit_score, logistic_fits,  # noqa: E402,F401
                                       logistic_from_statistic)


def proxy_statistic(U, in_group) -> np.ndarray:
    """T = Σ_i a_i u_i: the only function of the sensitive column the proxy needs."""
    return np.asarray(U, dtype=float).T @ np.asarray(in_group, dtype=float)


def proxy_sensitivity(U, norm: str = "l2") -> float:
    """max_i ‖u_i‖: the exact sensitivity of T when one row's group flips (X, y fixed)."""
    U = np.asarray(U, dtype=float)
    if norm == "l2":
        return float(np.sqrt(np.max(np.einsum("ij,ij->i", U, U))))
    return float(np.max(np.abs(U).sum(axis=1)))


def proxy_event(U, epsilon, delta, groups: int = 2):
    """M1's event: T + N(0, σ²I), σ the analytic-Gaussian σ for Δ₂ = max_i ‖u_i‖₂ at (ε, δ)
    (Balle & Wang 2018, Thm 8) — or T + Lap(Δ₁/ε), Δ₁ = max_i ‖u_i‖₁, when δ = 0.  ``U`` is
    public under the "sensitive" relation (a function of X and y), so the event is fixed at
    plan time.

    ``groups`` = G > 2 (``proxy_reductions``' multinomial proxy): T is every group's statistic
    T_g = Σ_{a_i = g} u_i, stacked (G blocks); a row moved from one group to another moves two
    blocks by ∓u_i, so Δ₂ = √2·max‖u_i‖₂ and Δ₁ = 2·max‖u_i‖₁ — the same as for the first G − 1
    blocks alone, which is why all G are released (``proxy_reductions.project_onto_totals``)."""
    from privfair.privacy import (calibrate_gaussian_sigma, gaussian_event, laplace_event,
                                  laplace_scale)

    dim = int(np.shape(U)[1])
    if groups > 2:
        blocks = groups
        src = ("moving one row from one group to another moves two of the statistics "
               "T_g = Σ_{a_i = g} u_i by ∓u_i (X, y fixed by the relation): ")
        label = (f"M1: proxy statistics T_g = Σ_(a_i = g) u_i of {blocks} groups "
                 f"({blocks * dim} dims)")
        if delta > 0:
            sens = math.sqrt(2.0) * proxy_sensitivity(U, "l2")
            return gaussian_event(sens, calibrate_gaussian_sigma(sens, epsilon, delta),
                                  epsilon=epsilon, delta=delta, dimension=blocks * dim,
                                  sensitivity_source=src + "√2·max_i ‖u_i‖₂", label=label)
        sens = 2.0 * proxy_sensitivity(U, "l1")
        return laplace_event(sens, epsilon, scale=laplace_scale(sens, epsilon),
                             dimension=blocks * dim, sensitivity_source=src + "2·max_i ‖u_i‖₁",
                             label=label)
    src = ("flipping one row's group moves T = Σ a_i u_i by exactly ±u_i (X, y fixed by the "
           "relation): max_i ‖u_i‖")
    label = f"M1: proxy statistic T = Σ a_i u_i ({dim} dims)"
    if delta > 0:
        sens = proxy_sensitivity(U, "l2")
        return gaussian_event(sens, calibrate_gaussian_sigma(sens, epsilon, delta),
                              epsilon=epsilon, delta=delta, dimension=dim,
                              sensitivity_source=src + "₂", label=label)
    sens = proxy_sensitivity(U, "l1")
    return laplace_event(sens, epsilon, scale=laplace_scale(sens, epsilon), dimension=dim,
                         sensitivity_source=src + "₁", label=label)


def draw_proxy(backend, plan, accountant, rng, T_exact):
    """(draws, T̃, M1's event): open the plan's release schedule and draw M1 — T + Gaussian or
    Laplace noise, whichever its event is — the one home of this step for ``cells`` and
    ``proxy_reductions``.  A plan without a schedule (planned at ε = ∞) is refused before any
    draw."""
    schedule = getattr(plan, "schedule", None)
    if schedule is None:
        backend.refuse("the plan has no release schedule (it was planned at ε = ∞)")
    draws = schedule.open(accountant, rng)
    event = schedule["M1"].event
    draw = draws.gaussian if event.mechanism == "gaussian" else draws.laplace
    return draws, np.asarray(draw("M1", T_exact), dtype=float), event


def group_counts(in_group, y, cell, n_cells, label_split: bool) -> np.ndarray:
    """The first group's count per (label, cell) — shape (2·C,), label-major — or per cell (C,)."""
    key = (np.asarray(y, dtype=np.int64) * n_cells + cell) if label_split else np.asarray(cell)
    m = (2 if label_split else 1) * n_cells
    return np.bincount(key, weights=np.asarray(in_group, dtype=float), minlength=m)


def counts_event(n_counts: int, epsilon):
    """M2's event: counts + Lap(1/ε) per coordinate (ℓ1 sensitivity 1: one flip moves one
    count by 1)."""
    from privfair.privacy import laplace_event, laplace_scale

    return laplace_event(1.0, epsilon, scale=laplace_scale(1.0, epsilon),
                         dimension=int(n_counts),
                         sensitivity_source="one row's group flip changes exactly one "
                                            "cell count by exactly 1: ‖Δ‖₁ = 1",
                         label=f"M2: first group's count in {int(n_counts)} cells")


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

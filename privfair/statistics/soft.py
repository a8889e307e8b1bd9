"""Surrogate masses: the mass a row puts on ŷ = 1 when a LinearClassifier's 0-1 prediction is
replaced by a convex surrogate φ of its margin z = x̃·w + b (``rates(..., surrogate=...)``).

Rows are clipped to the declared public feature bound R (x̃ = c·x with c = min(1, R/‖x‖₂)), so
|z| ≤ B = radius·√(R² + 1) on the ball, and φ̃ = min(1, φ/φ(B)) ∈ [0, 1]: a y = 0 row puts φ̃(z)
on ŷ = 1 (in fp), a y = 1 row puts 1 − φ̃(−z) there (φ̃(−z) in fn).  φ itself comes from the
one surrogate table, :data:`privfair.models.surrogates.SURROGATE_TABLE`.

The **passes** at the end (:func:`surrogate_pass`, :func:`decision_counts_pass`,
:func:`all_counts_pass`) are what ``Rates`` runs on a dataset whose rows stay on Dask workers
(#19): each computes a row's clip scale from the row itself (:func:`chunk_clip_scales`, the
arithmetic of :func:`clip_scales`), and returns sums only — the (G·L·L) expected counts and a
(d+1) gradient — never a per-row vector.  Module-level functions: they travel to the workers
by reference, with their parameters (θ, the declared bound R, φ(B), the schema's G and L, a
per-cell coefficient table): no row travels.
"""

from __future__ import annotations

import numpy as np

from ..models.surrogates import SURROGATE_TABLE
from .counts import all_counts, hard_counts, soft_counts

__all__ = ["row_norms", "clip_scales", "chunk_clip_scales", "phi_at", "soft_masses",
           "surrogate_pass", "decision_counts_pass", "all_counts_pass"]


def row_norms(data) -> np.ndarray:
    """‖x_i‖₂ of every row, one chunked pass over ``data.rows()`` (np.linalg.norm(X, axis=1)
    squares all of X into an n×d temporary first; and for data taken by index — the held-out
    split's training part — ``data.X`` would gather a copy of the selected rows: 6.5 GB at
    10⁷ × 101, #19).  Row-wise, so the same values whichever way the rows are read."""
    rows = data.rows()
    out = np.empty(rows.n)
    for c in rows.chunks():
        out[c.start:c.start + len(c)] = np.sqrt(np.einsum("ij,ij->i", c.X, c.X))
    return out


def clip_scales(data, feature_bound) -> np.ndarray:
    """c_i = min(1, R/‖x_i‖₂) per row: x̃_i = c_i·x_i lies in the public ball of radius R.  Only
    c (n floats) is kept, never a clipped copy of X (an n×d temporary; at 10⁷ × 101, 8 GB);
    never rescale by a data-derived norm instead: that would leak."""
    return np.minimum(1.0, feature_bound / np.maximum(row_norms(data), 1e-300))


def phi_at(surrogate, margin_bound) -> float:
    """φ(B): the surrogate at the public margin bound B, the scale of φ̃ = min(1, φ/φ(B))."""
    return float(SURROGATE_TABLE[surrogate].numpy(np.array(float(margin_bound)))[0])


def soft_masses(z, y, surrogate, phi_b):
    """(mass on ŷ = 1, its derivative in z) of rows with margins z and labels y (codes 0/1):
    y = 0 rows φ̃(z), derivative φ̃'(z); y = 1 rows 1 − φ̃(−z), derivative +φ̃'(−z), with
    φ̃ = min(1, φ/φ(B)) and ``phi_b`` = φ(B)."""
    sign = np.where(y == 1, -1.0, 1.0)                 # y=1 rows: fn gets φ̃(−z)
    val, der = SURROGATE_TABLE[surrogate].numpy(sign * z)
    val = val / phi_b
    der = np.where(val < 1.0, der / phi_b, 0.0)        # min(1, ·) is flat beyond B
    val = np.minimum(val, 1.0)
    return np.where(sign > 0, val, 1.0 - val), der


def chunk_clip_scales(X, feature_bound) -> np.ndarray:
    """c_i = min(1, R/‖x_i‖₂) of the rows of one chunk X: the float operations of
    :func:`row_norms` and :func:`clip_scales` row by row, so the same bits (a function of the
    row and the public R only: a Dask worker computes it from its own rows, #19)."""
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    return np.minimum(1.0, feature_bound / np.maximum(norms, 1e-300))


def surrogate_pass(chunk, theta, feature_bound, surrogate, phi_b, n_groups, n_labels, coef):
    """One chunk's (expected counts C[g, y, ŷ] flattened (G·L·L,), gradient or None) of
    surrogate rates at θ = (w, b): the margin z = c·(x·w) + b with c from the row
    (:func:`chunk_clip_scales`), the masses of :func:`soft_masses`, their expected counts
    (:func:`~privfair.statistics.counts.soft_counts`) and — when ``coef`` (a (G, L) table of
    d(weights·ℓ)/d(mass), computed on the client from ℓ's layout and the denominators: public
    n·q, or clamped counts, which stay inside the cluster like every partial sum) is given —
    Σ_i coef_{g_i,y_i}·s'_i·(c_i x_i, 1), the gradient of weights·ℓ.  The per-row arithmetic
    of ``Rates._soft`` and ``Rates.weighted_value_and_grad``; only the sums leave the chunk."""
    X = chunk.X
    c = chunk_clip_scales(X, feature_bound)
    z = X @ theta[:-1]
    z = z * c + theta[-1]                                   # = x̃·w + b
    s, der = soft_masses(z, chunk.y, surrogate, phi_b)
    cell = chunk.group * n_labels + chunk.y
    C = soft_counts(cell, s, n_groups, n_labels).ravel()
    if coef is None:
        return C, None
    cd = np.asarray(coef, dtype=float).ravel()[cell] * der
    return C, np.concatenate([X.T @ (cd * c), [cd.sum()]])


def decision_counts_pass(chunk, decisions, decision, n_groups, n_labels, randomized):
    """One chunk's counts C[g, y, ŷ] (flattened) of a decision without surrogate: of its 0-1
    predictions, or (``randomized``) the expected counts of its ``predict_proba`` clipped to
    [0, 1] — what ``Rates._counts`` computes on every row in memory."""
    cell = chunk.group * n_labels + chunk.y
    if randomized:
        s = np.clip(np.asarray(decisions.predict_proba(decision, chunk.X),
                               dtype=float).reshape(-1), 0.0, 1.0)
        return soft_counts(cell, s, n_groups, n_labels).ravel()
    return hard_counts(cell, decisions.predict(decision, chunk.X), n_groups, n_labels).ravel()


def all_counts_pass(chunk, decisions, n_groups, n_labels):
    """One chunk's counts C[d, g, y, ŷ] of every decision of a finite set (integers: the sum
    over chunks is exact; :func:`~privfair.statistics.counts.all_counts`)."""
    return all_counts(decisions, chunk.X, chunk.group * n_labels + chunk.y, n_groups, n_labels)

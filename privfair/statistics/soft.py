"""Surrogate masses: the mass a row puts on ŷ = 1 when a LinearClassifier's 0-1 prediction is
replaced by a convex surrogate φ of its margin z = x̃·w + b (``rates(..., surrogate=...)``).

Rows are clipped to the declared public feature bound R (x̃ = c·x with c = min(1, R/‖x‖₂)), so
|z| ≤ B = radius·√(R² + 1) on the ball, and φ̃ = min(1, φ/φ(B)) ∈ [0, 1]: a y = 0 row puts φ̃(z)
on ŷ = 1 (in fp), a y = 1 row puts 1 − φ̃(−z) there (φ̃(−z) in fn).  φ itself comes from the
one surrogate table, :data:`privfair.models.surrogates.SURROGATE_TABLE`.
"""

from __future__ import annotations

import numpy as np

from ..models.surrogates import SURROGATE_TABLE

__all__ = ["row_norms", "clip_scales", "phi_at", "soft_masses"]


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

"""Counting predictions per (group, label, prediction) cell: C[g, y, ŷ], from which ℓ is read
(``Rates.from_counts``): hard predictions, expected counts of soft or randomized ones, and every
decision of a finite set at once.  (Private data: the counts are what mechanisms release.)"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError
from ..models.decisions import FiniteSet, Thresholds

__all__ = ["hard_counts", "soft_counts", "all_counts"]


def hard_counts(row_cell, predictions, G, L) -> np.ndarray:
    """C[g, y, ŷ] (floats, (G, L, L)) of 0-1 predictions (codes 0..L−1, one per row) of rows in
    (group, label) cells ``row_cell`` = g·L + y."""
    n = len(row_cell)
    p = np.asarray(predictions).astype(np.int64)
    if p.shape != (n,) or p.min() < 0 or p.max() >= L:
        raise InvalidInputError("decision", "predictions", f"must be codes 0..{L - 1} per row")
    return np.bincount(row_cell * L + p, minlength=G * L * L).reshape(G, L, L).astype(float)


def soft_counts(row_cell, s, G, L) -> np.ndarray:
    """The expected counts C[g, y, ŷ] of binary predictions putting mass s_i on ŷ = 1 (and
    1 − s_i on ŷ = 0): ℓ is linear in each row's mass."""
    n = len(row_cell)
    w = np.stack([1.0 - s, s], axis=1)
    flat = np.repeat(row_cell * L, L) + np.tile(np.arange(L), n)
    return np.bincount(flat, weights=w.ravel(), minlength=G * L * L).reshape(G, L, L)


def all_counts(decisions, X, row_cell, G, L) -> np.ndarray:
    """C[d, g, y, ŷ] for every decision d of a finite set, an (m, G, L, L) array in one
    vectorised pass: sorted-threshold counting for :class:`Thresholds` (each (g, y) block's
    scores sorted once, every threshold a binary search), per-cell sums of prediction blocks
    otherwise (chunked by the decision set, never a sorted copy of X)."""
    dec = decisions
    if not isinstance(dec, (FiniteSet, Thresholds)):
        raise InvalidInputError("decisions", repr(dec), "evaluate_all needs a finite set "
                                "(FiniteSet or Thresholds) without surrogate")
    m, cells = len(dec), G * L
    order = np.argsort(row_cell, kind="stable")   # rows grouped by (g, y) cell
    sizes = np.bincount(row_cell, minlength=cells)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    C = np.zeros((m, cells, L))
    if isinstance(dec, Thresholds):
        s = dec.scores(X)[order]
        for c in np.flatnonzero(sizes):
            block = np.sort(s[starts[c]:starts[c] + sizes[c]])
            C[:, c, 1] = sizes[c] - np.searchsorted(block, dec.grid, side="left")
    else:
        nonempty = np.flatnonzero(sizes)
        # predict on X as it is and sort each block's (c, n) predictions by cell: sorting
        # X itself would copy all n×d features; a block is bounded by the decision set's
        # chunking (CHUNK_ELEMENTS)
        for start, P in dec.iter_predictions(X):
            if P.size and P.max() >= L:
                raise InvalidInputError("decisions", "predictions", f"must be codes 0..{L - 1}")
            P = P[:, order]
            for k in range(1, L):
                hits = P if L == 2 else (P == k)
                # Columns are sorted by cell, so a cell's count is a contiguous sum.
                C[start:start + P.shape[0], nonempty, k] = np.add.reduceat(
                    hits, starts[nonempty], axis=1, dtype=np.int64)
    C[:, :, 0] = sizes[None, :] - C[:, :, 1:].sum(axis=2)
    return C.reshape(m, G, L, L)

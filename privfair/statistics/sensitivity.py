"""How far one row moves ℓ: the row-influence structure (:class:`Influence`) and the exact
worst-case change of a conditional block (:func:`block_constants`) behind ``Rates.delta_l``.

The conditional denominators are clamped to ``max(n_{g,y}, n·q_{g,y})`` with the group-mass
lower bound q (:mod:`privfair.statistics.group_mass`), so one row moves a rate by at most
``1/(n·q)`` on every dataset, whether or not the bound is true for it.

One row's influence is local: under a change of its profile (group, label, prediction) only

* two joint coordinates move (its old and new cell), by exactly 1/n each;
* in a conditional block (the coordinates sharing one denominator) at most two coordinates
  move: the row's own cell and -- because the denominator changes -- one other cell.  The
  change of a block is affine in the row's contribution s and in the other rows' contributions
  c' (points of scaled simplices), so every norm of it is maximised at vertices, where it is
  supported on {ŷ_row, ŷ_others}; :func:`block_constants` maximises the two changes over the
  block size m in both clamp regimes (m ≤ n·q, m > n·q).  Each is ≤ 1/max(1, n·q).

Blocks touch disjoint coordinates, so their bounds add (ℓ1), add in squares (ℓ2) or take the
max (ℓ∞).  Surrogates keep these bounds: a row's contribution to its (g, y) block is a point
(1−φ̃, φ̃) of the simplex instead of a vertex, and the same vertex argument applies.  The tests in
``tests/test_stats_sensitivity.py`` enumerate every neighbour of small datasets (and every
dataset of 3 rows) and find each bound attained for single coordinates and single blocks.
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

import numpy as np

from ..errors import GroupMassError, InvalidInputError

if TYPE_CHECKING:
    from .rates import Rates

__all__ = ["Influence", "block_constants", "NORMS", "RELATIONS"]

NORMS = ("l1", "l2", "linf")
RELATIONS = ("sensitive", "row")


def _reduce(entries, norm):
    """Combine bounds on disjoint groups of coordinates (l1: sum, l2: root-sum-square of the
    returned squares, linf: max)."""
    E = np.stack(np.broadcast_arrays(*entries), axis=-1)
    return E.max(axis=-1) if norm == "linf" else (E if norm == "l1" else E * E).sum(axis=-1)


def block_constants(Q, m_max=None):
    """Exact worst-case changes of one conditional block when one row joins or leaves it.

    A block of m rows (m ≥ 1 counting the moving row) with clamp Q = n·q has denominator
    d(m) = max(m, Q).  At the extreme points (the row predicts j, the m − 1 others all
    predict k) the change is 1/d(m) on j and (m−1)(1/d(m−1) − 1/d(m)) on k ≠ j, or
    m/d(m) − (m−1)/d(m−1) on j when k = j.  Returns, maximised over m:

    ``own``  -- sup change of the row's own cell;  ``other`` -- of any other cell;
    ``l1``, ``l2`` -- sup norm of (own, other) together;  ``fixed`` -- 1/max(1, Q), the change
    of a cell when the row stays but its prediction flips (denominator unchanged).
    For Q ≥ 1 these are 1/Q, ≈1/(Q+1), ≈2/(Q+1), ≈√2/(Q+1) and 1/Q.  ``m_max`` (the
    public n) caps the block size.

    Examples
    --------
    >>> from privfair.statistics.sensitivity import block_constants
    >>> c = block_constants(10.0)
    >>> round(float(c["own"]), 4), round(float(c["other"]), 4), round(float(c["l1"]), 4)
    (0.1, 0.0909, 0.1818)
    """
    Q = np.asarray(Q, dtype=float)
    # d is constant for m ≤ Q and 1/m-like beyond; the sup sits at m = 1 or near Q.
    base = np.floor(Q)[..., None]
    m = np.concatenate([np.ones_like(base), np.maximum(1.0, base + np.arange(-1, 4))], axis=-1)
    if m_max is not None:
        m = np.minimum(m, float(m_max))
    inv = 1.0 / np.maximum(m, Q[..., None])
    inv_prev = np.where(m > 1, 1.0 / np.maximum(np.maximum(m - 1, Q[..., None]), 1e-300), 0.0)
    other = (m - 1) * (inv_prev - inv)
    own = np.maximum(inv, np.abs(m * inv - (m - 1) * inv_prev))
    l1 = np.maximum(own, inv + other).max(axis=-1)
    l2 = np.sqrt(np.maximum(own ** 2, inv ** 2 + other ** 2).max(axis=-1))
    return {"own": own.max(axis=-1), "other": other.max(axis=-1), "l1": l1, "l2": l2,
            "fixed": 1.0 / np.maximum(1.0, Q)}


class Influence:
    """Which coordinates of ℓ one row touches, and by how much, given its profile.

    A profile is (group, label, prediction).  A row *contributes* to its joint cell, its
    conditional-rate cell and its group's selection rate of its prediction (binary: only where
    ŷ = 1, the one selection coordinate); it also sits in the *denominators* of its (group,
    label) rate block and of its group's selection rates, so moving it rescales those blocks.
    ``bounds()`` gives the per-coordinate change bound: 1/n for joint coordinates,
    1/max(1, n·q) for conditional ones (NaN when no group-mass bound is known).
    """

    def __init__(self, rates: "Rates"):
        self._r = rates

    @property
    def profiles(self) -> list:
        """Every (group, label, prediction) profile, by name."""
        lv = self._r.label_values
        return [(g, y, j) for g in self._r.groups for y in lv for j in lv]

    def _idx(self, group, label, prediction):
        r = self._r
        return (r.data.group_index(group), r.label_index(label, "label"),
                r.label_index(prediction, "prediction"))

    def contributes(self, group, label, prediction) -> list:
        """Coordinates a row with this profile adds mass to."""
        r = self._r
        g, y, j = self._idx(group, label, prediction)
        out = [int(r.layout.joint[g, y, j]), int(r.layout.rate[g, y, j])]
        if r.layout.class_selection is not None:
            return out + [int(r.layout.class_selection[g, j])]
        return out + ([int(r.layout.selection[g])] if r.L == 2 and j == 1 else [])

    def denominator_block(self, group, label) -> list:
        """Conditional coordinates whose denominator counts a row of this group and label."""
        r = self._r
        g, y, _ = self._idx(group, label, label)
        sel = ([int(r.layout.selection[g])] if r.L == 2 else
               [int(k) for k in r.layout.class_selection[g]])
        return sorted(int(k) for k in r.layout.rate[g, y]) + sel

    def _constants(self, group_mass_bound, S):
        r = self._r
        q, qg = r.group_mass(group_mass_bound)
        if q is None:
            if (S & r.is_conditional).any():
                bad = [r.names[k] for k in np.flatnonzero(S & r.is_conditional)[:3]]
                raise GroupMassError("group_mass_bound", None, f"the support reads conditional "
                                     f"rates ({', '.join(bad)}, ...) whose sensitivity needs a group-"
                                     "mass lower bound: declare one with rates(..., group_mass_bound="
                                     "q) or estimate it privately first")
            q, qg = np.ones((r.G, r.L)), np.ones(r.G)   # unused: no conditional coordinate in S
        return block_constants(r.n * q, r.n), block_constants(r.n * qg, r.n)

    def bounds(self, group_mass_bound=None) -> np.ndarray:
        """Per-coordinate bound on how much one row moves each coordinate (length K)."""
        r = self._r
        b = np.full(r.K, np.nan)
        b[: r.K_joint] = 1.0 / r.n
        if r.group_mass(group_mass_bound)[0] is not None:
            c, cg = self._constants(group_mass_bound, np.zeros(r.K, dtype=bool))
            b[r.layout.rate] = np.maximum(c["own"], c["other"])[:, :, None]
            if r.L == 2:
                b[r.layout.selection] = np.maximum(cg["own"], cg["other"])
            else:
                b[r.layout.class_selection] = np.maximum(cg["own"], cg["other"])[:, None]
        return b

    def delta(self, norm, relation, S, group_mass_bound=None) -> float:
        """max over allowed (old, new) profile pairs of the norm of the change bounds within S
        (see :meth:`Rates.delta_l`; ``S`` is a boolean mask of length K)."""
        if norm not in NORMS:
            raise InvalidInputError("norm", norm, f"choose one of {list(NORMS)}")
        if relation not in RELATIONS:
            raise InvalidInputError("relation", relation, f"choose one of {list(RELATIONS)}")
        r = self._r
        G, L, n = r.G, r.L, r.n
        c, cg = self._constants(group_mass_bound, S)
        inR = S[r.layout.rate]                                        # (G, L, L)
        jw = S[r.layout.joint] / n                                    # own joint cell: exactly 1/n
        own = inR
        other = (inR.sum(axis=2, keepdims=True) - inR) > 0      # another cell of the block in S
        pick = {"l1": c["l1"], "l2": c["l2"], "linf": np.maximum(c["own"], c["other"])}[norm]
        block = np.where(own & other, pick[:, :, None],
                         np.where(own, c["own"][:, :, None],
                                  np.where(other, c["other"][:, :, None], 0.0)))
        if L == 2:   # selection: the row's own cell if it predicts 1, else "another" cell
            sel = S[r.layout.selection][:, None, None] * np.where(np.arange(2) == 1, cg["own"][:, None, None],
                                                       cg["other"][:, None, None])
        else:        # the group's selection block, as a conditional block (denominator n_g):
            # the row's own prediction's rate and every other rate of the block, per (g, ŷ)
            inS = S[r.layout.class_selection]                           # (G, L)
            s_other = (inS.sum(axis=1, keepdims=True) - inS) > 0
            pick_g = {"l1": cg["l1"], "l2": cg["l2"],
                      "linf": np.maximum(cg["own"], cg["other"])}[norm][:, None]
            sel = np.where(inS & s_other, pick_g,
                           np.where(inS, cg["own"][:, None],
                                    np.where(s_other, cg["other"][:, None], 0.0)))[:, None, :]
        side = _reduce([jw, block, sel], norm)                  # (G, L, L): one side of a move
        best = 0.0
        if G >= 2:  # the group changes: old and new sides touch disjoint coordinates
            top = np.sort(side if relation == "sensitive" else side.reshape(G, -1).max(axis=1),
                          axis=0)[::-1]
            best = float((np.maximum(top[0], top[1]) if norm == "linf" else top[0] + top[1]).max())
        if relation == "row":   # the group stays, the label and/or prediction change
            fixed = c["fixed"]
            for y, j, y2, j2 in itertools.product(range(L), repeat=4):
                if (y, j) == (y2, j2):
                    continue
                ent = [jw[:, y, j], jw[:, y2, j2]]
                if y == y2:   # same denominator: exactly the two cells move
                    ent += [inR[:, y, j] * fixed[:, y], inR[:, y, j2] * fixed[:, y]]
                else:
                    ent += [block[:, y, j], block[:, y2, j2]]
                if L == 2 and j != j2:
                    ent.append(S[r.layout.selection] * cg["fixed"])
                elif j != j2:    # one of the group's rows moves from ŷ = j to j2: two rates
                    cs = r.layout.class_selection
                    ent += [S[cs[:, j]] * cg["fixed"], S[cs[:, j2]] * cg["fixed"]]
                best = max(best, float(_reduce(ent, norm).max()))
        return math.sqrt(best) if norm == "l2" else best

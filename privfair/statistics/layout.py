"""The layout of ℓ — which coordinate is which — from the schema alone (public), and the one map
from weights on ℓ to per-row coefficients (:meth:`Layout.coefficients`).

ℓ is laid out (docs/internals.md) as

1. **joint frequencies** -- for every group g (``data.groups`` order), true label y and
   predicted label ŷ (row-major in (y, ŷ)): count / n.  Binary labels give, per group,
   ``tn, fp, fn, tp``; names ``"fp[Female]"``; multi-class ``"cell[g,y=a,yhat=b]"``.
2. **conditional rates** -- per group, binary: ``fpr, tnr`` (over rows of g with y=0),
   ``tpr, fnr`` (y=1) and ``selection`` (all rows of g); multi-class: the row-normalised
   confusion matrix ``"rate[g,y=a,yhat=b]"``, then every group's prediction rates
   ``"selection[g,yhat=b]"`` (P(ŷ = b | g), all rows of g).  The denominators are clamped
   (:mod:`privfair.statistics.sensitivity`).

The layout depends on the groups and labels only, never on the rows, so backends read ℓ's
structure here (``rates.layout``) and nowhere else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError

__all__ = ["Layout", "BINARY_JOINT", "BINARY_CONDITIONAL"]

#: a binary group's joint cells, in (y, ŷ) order 00, 01, 10, 11
BINARY_JOINT = ("tn", "fp", "fn", "tp")
#: a binary group's conditional rates: (name, y, ŷ)
BINARY_CONDITIONAL = (("fpr", 0, 1), ("tnr", 0, 0), ("tpr", 1, 1), ("fnr", 1, 0))


@dataclass(frozen=True, eq=False)
class Layout:
    """The layout of ℓ — which coordinate is which — from the schema alone (public).

    Depends on the groups and labels only, never on the rows: two :class:`Rates` over the same
    schema have the same layout.  Backends read ℓ's structure here (and nowhere else).

    Attributes
    ----------
    G, L : int -- number of groups and of labels.
    K, K_joint : int -- length of ℓ and of its joint block (coordinates ``0 .. K_joint-1``).
    joint : int array (G, L, L) -- ``joint[g, y, ŷ]`` is the coordinate of the joint frequency
        of (group g, true label y, prediction ŷ).
    rate : int array (G, L, L) -- the coordinate of the conditional rate P(ŷ | g, y) (binary:
        fpr = rate[g, 0, 1], tnr = rate[g, 0, 0], tpr = rate[g, 1, 1], fnr = rate[g, 1, 0]).
    selection : int array (G,) or None -- the selection-rate coordinates (binary labels only).
    class_selection : int array (G, L) or None -- multi-class labels only: the coordinate of
        P(ŷ = k | g), every prediction k (binary labels: ``selection`` is P(ŷ = 1 | g)).
    names : tuple of str -- the name of every coordinate.
    is_conditional : bool array (K,) -- which coordinates are conditional rates.
    """

    G: int
    L: int
    K: int
    K_joint: int
    joint: np.ndarray
    rate: np.ndarray
    selection: object
    names: tuple
    is_conditional: np.ndarray
    class_selection: object = None

    @classmethod
    def of(cls, groups, label_values) -> "Layout":
        """The layout of ℓ over these groups (names, in order) and labels (values, in order)."""
        G, L, names = len(groups), len(label_values), []
        K_joint = G * L * L
        joint = np.arange(K_joint).reshape(G, L, L)
        lv = list(label_values)
        for g in groups:
            for y in range(L):
                for j in range(L):
                    names.append(f"{BINARY_JOINT[2 * y + j]}[{g}]" if L == 2
                                 else f"cell[{g},y={lv[y]},yhat={lv[j]}]")
        k = K_joint
        rate = np.zeros((G, L, L), dtype=np.int64)
        sel = csel = None
        if L == 2:
            sel = np.zeros(G, dtype=np.int64)
            for gi, g in enumerate(groups):
                for name, y, j in BINARY_CONDITIONAL:
                    rate[gi, y, j] = k
                    names.append(f"{name}[{g}]")
                    k += 1
                sel[gi] = k
                names.append(f"selection[{g}]")
                k += 1
        else:
            rate[:] = k + np.arange(G * L * L).reshape(G, L, L)
            names += [f"rate[{g},y={lv[y]},yhat={lv[j]}]"
                      for g in groups for y in range(L) for j in range(L)]
            k += G * L * L
            csel = k + np.arange(G * L).reshape(G, L)
            names += [f"selection[{g},yhat={lv[j]}]" for g in groups for j in range(L)]
            k += G * L
        return cls(G, L, k, K_joint, joint, rate, sel, tuple(names), np.arange(k) >= K_joint,
                   csel)

    def support_mask(self, support) -> np.ndarray:
        """The boolean mask (K,) of a support S: indices, an expression (its ``support()``), or
        ``None`` (all K coordinates)."""
        if support is None:
            return np.ones(self.K, dtype=bool)
        if hasattr(support, "support") and callable(support.support):
            support = support.support()
        idx = np.asarray(sorted(int(k) for k in support), dtype=np.int64)
        if idx.size and (idx[0] < 0 or idx[-1] >= self.K):
            raise InvalidInputError("support", idx.tolist()[:8], f"indices must lie in [0, {self.K})")
        mask = np.zeros(self.K, dtype=bool)
        mask[idx] = True
        return mask

    def from_counts(self, C, n, denominators) -> np.ndarray:
        """ℓ from per-(g, y, ŷ) counts C of shape (..., G, L, L): the joint block C/n, the
        conditional rates C/d, the selection rates (C[g,0,1] + C[g,1,1])/d_g (binary; multi-class
        Σ_y C[g,y,k]/d_g for every k) — the one
        home of "ℓ from counts" (``Rates.from_counts`` at the clamped denominators; the
        lagrangian solver at a noisy batch histogram's).  ``denominators`` = (d (G, L), d_g (G,)),
        in the units of ``n``."""
        C = np.asarray(C, dtype=float)
        den = np.asarray(denominators[0], dtype=float)
        lead = C.shape[:-3]
        out = np.empty(lead + (self.K,))
        out[..., self.joint.ravel()] = C.reshape(lead + (-1,)) / n
        out[..., self.rate.ravel()] = (C / den[:, :, None]).reshape(lead + (-1,))
        if self.selection is not None:
            out[..., self.selection] = (C[..., 0, 1] + C[..., 1, 1]) / denominators[1]
        if self.class_selection is not None:
            dg = np.asarray(denominators[1], dtype=float)[:, None]
            out[..., self.class_selection.ravel()] = (C.sum(axis=-2) / dg).reshape(lead + (-1,))
        return out

    def blocks(self):
        """(joint blocks, conditional blocks, selection blocks), each a list of index
        arrays: the coordinates of one (g, y) joint block (mass n_gy/n, moved between its
        cells by a decision), of one (g, y) conditional block (one denominator), and each
        binary selection rate alone — multi-class, each group's prediction rates (one
        denominator, summing to n_g/d_g ≤ 1, like a conditional block)."""
        joint = [self.joint[g, y] for g in range(self.G) for y in range(self.L)]
        cond = [self.rate[g, y] for g in range(self.G) for y in range(self.L)]
        sel = [] if self.selection is None else [np.array([k]) for k in self.selection]
        if self.class_selection is not None:
            sel = [self.class_selection[g] for g in range(self.G)]
        return joint, cond, sel

    def geometry(self, support) -> dict:
        """Public bounds {norm: D} on ‖ℓ_S(p,D) − ℓ_S(p',D)‖ over mixtures p, p' (``"hull"``,
        the hull diameter), on ‖ℓ_S(p,D) − x₀‖ (``"start"``, x₀ the centre of the box) and the
        box's own diameters (``"box"``), valid for every dataset.

        A joint block (g, y) holds the fixed mass n_gy/n (Σ = 1) and a decision only moves it
        between its cells; a conditional block's rates sum to n_gy/max(n_gy, nq) ≤ 1; a
        selection rate lies in [0, 1]."""
        S = self.support_mask(support)
        joint, cond, sel = self.blocks()
        kj = [int(S[b].sum()) for b in joint]
        kc = [int(S[b].sum()) for b in cond] + [int(S[b].sum()) for b in sel]
        c1 = lambda k: min(k, 2)                                     # noqa: E731
        c2 = lambda k: 0 if k == 0 else (1 if k == 1 else 2)         # noqa: E731
        hull = {"l1": max([c1(k) for k in kj], default=0) + sum(c1(k) for k in kc),
                "l2": math.sqrt(max([c2(k) for k in kj], default=0) + sum(c2(k) for k in kc)),
                "linf": 1.0}
        nj, nc = int(S[~self.is_conditional].sum()), int(S[self.is_conditional].sum())
        start = {"l1": (1.0 if nj else 0.0) + 0.5 * nc,
                 "l2": math.sqrt((1.0 if nj else 0.0) + 0.25 * nc),
                 "linf": 1.0 if nj else 0.5}
        d = max(1, int(S.sum()))
        box = {"l1": float(d), "l2": math.sqrt(d), "linf": 1.0}
        hull = {q: min(hull[q], box[q]) for q in box}
        return {"hull": hull, "start": {q: min(start[q], box[q]) for q in box}, "box": box}

    def hull_diameter(self, support) -> dict:
        """{norm: D_p}: the public bound on the diameter of conv{ℓ_S(c, D) : c}
        (:meth:`geometry`'s ``"hull"``), and 0 on an empty support."""
        if len(support) == 0:
            return {"l1": 0.0, "l2": 0.0, "linf": 0.0}
        return {q: float(v) for q, v in self.geometry(support)["hull"].items()}

    def coefficients(self, weights, denominators, *, n=1.0, along=None) -> np.ndarray:
        """The map from weights on ℓ to per-row coefficients — the chain rule through ℓ, its one
        home (:meth:`Rates.cell_coefficients`, the ERM reduction and lagrangian_sgda's batch
        histogram all read it).

        With the denominators held fixed (they count rows of (g, y), not predictions), w·ℓ is
        linear in each row's prediction mass p ∈ Δ_L, and for a row of group g and label y

            n·∂(w·ℓ)/∂p(ŷ) = w_J[g,y,ŷ] + n·(w_R[g,y,ŷ]/d[g,y] + [ŷ = 1]·w_S[g]/d_g[g])

        (w_J, w_R, w_S: the weights on the joint, conditional and selection coordinates; with
        multi-class labels the selection term is w_S[g, ŷ]/d_g[g], every prediction ŷ having
        its own rate).

        Parameters
        ----------
        weights : array (K,) -- w, e.g. ∇Φ(ℓ).
        denominators : (d (G, L), d_g (G,) or None)
            The conditional denominators, in the units of ``n``: counts (clamped n_{g,y}, or the
            public n·q) with ``n`` the row count, or masses π with ``n = 1``.  ``d_g`` (the
            selection denominators, the group's rows) is read where ℓ has selection rates.
        n : float, default 1.0
            The factor of the joint block's 1/n: the result is n·∂(w·ℓ)/∂p, the coefficient of
            the *sum* over rows (divide by n for the mean form).
        along : None or array (L,)
            ``None``: the coefficient of every prediction ŷ, shape (G, L, L).  A vector v: the
            derivative along v, Σ_ŷ v_ŷ·c[g, y, ŷ], shape (G, L), with v applied to the weights
            before they are divided (binary v = (−1, 1) is the derivative in the mass s on
            ŷ = 1 of p = (1 − s, s), the ERM's n·a).

        Returns
        -------
        numpy.ndarray
            (G, L, L) or, with ``along``, (G, L).
        """
        w = np.asarray(weights, dtype=float).reshape(-1)
        if w.shape != (self.K,):
            raise InvalidInputError("weights", w.shape, f"pass K={self.K} weights")
        den = np.asarray(denominators[0], dtype=float)
        if den.shape != (self.G, self.L):
            raise InvalidInputError("denominators", den.shape, f"pass d of shape ({self.G}, "
                                    f"{self.L}) and d_g of shape ({self.G},)")
        wJ, wR = w[self.joint], w[self.rate]                        # (G, L, L)
        binary = self.selection is not None
        if along is None:
            cond = wR / den[:, :, None]
            if binary:   # the selection rate counts the mass on ŷ = 1 (0·w_S on ŷ = 0: exact)
                cond = cond + (w[self.selection][:, None, None] * (np.arange(2) == 1)
                               / np.asarray(denominators[1], dtype=float)[:, None, None])
            if self.class_selection is not None:    # P(ŷ | g): every label y alike
                cond = cond + (w[self.class_selection][:, None, :]
                               / np.asarray(denominators[1], dtype=float)[:, None, None])
            return wJ + n * cond
        v = np.asarray(along, dtype=float).reshape(-1)
        if v.shape != (self.L,):
            raise InvalidInputError("along", v.shape, f"pass a direction of length L={self.L}")
        # the weights are contracted with v first: for v = (−1, 1) these are the differences
        # w(ŷ=1) − w(ŷ=0), as the ERM reduction always computed them (bit for bit)
        cond = (wR @ v) / den
        if binary:
            cond = cond + (v[1] * w[self.selection] / np.asarray(denominators[1], float))[:, None]
        if self.class_selection is not None:
            cond = cond + ((w[self.class_selection] @ v)
                           / np.asarray(denominators[1], float))[:, None]
        return wJ @ v + n * cond

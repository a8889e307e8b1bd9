"""Group statistics ℓ(c, D) ∈ [0,1]^K and the structure that makes their sensitivity tight.

(Over 500 lines: ℓ's public layout, its evaluation and its row-influence bounds share one index
map and one proof; the surrogate table and :class:`Layout` can move to their own module of the
statistics subpackage when ``privfair/`` is split, #17 item 4.)

``rates(decisions, data)`` returns a :class:`Rates`.  ℓ is laid out (docs/internals.md) as

1. **joint frequencies** -- for every group g (``data.groups`` order), true label y and
   predicted label ŷ (row-major in (y, ŷ)): count / n.  Binary labels give, per group,
   ``tn, fp, fn, tp``; names ``"fp[Female]"``; multi-class ``"cell[g,y=a,yhat=b]"``.
2. **conditional rates** -- per group, binary: ``fpr, tnr`` (over rows of g with y=0),
   ``tpr, fnr`` (y=1) and ``selection`` (all rows of g); multi-class: the row-normalised
   confusion matrix ``"rate[g,y=a,yhat=b]"``.  The denominator is clamped to
   ``max(n_{g,y}, n·q_{g,y})`` with the group-mass lower bound q, so one row moves a rate by
   at most ``1/(n·q)`` on every dataset, whether or not the bound is true for it.

Sensitivity (``Rates.delta_l``).  One row's influence is local: under a change of its profile
(group, label, prediction) only

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
import numbers
from dataclasses import dataclass

import numpy as np

from ..data.dataset import Dataset
from ..models.decisions import DecisionSet, FiniteSet, LinearClassifier, Thresholds
from ..models.surrogates import SURROGATE_TABLE, SURROGATES, Surrogate  # noqa: F401 (re-exported)
from ..errors import GroupMassError, InvalidInputError

__all__ = ["rates", "Rates", "Layout", "Influence", "block_constants",
           "estimate_group_mass_bound", "Surrogate", "SURROGATE_TABLE", "SURROGATES", "NORMS",
           "RELATIONS"]

NORMS = ("l1", "l2", "linf")
RELATIONS = ("sensitive", "row")
_BIN_JOINT = ("tn", "fp", "fn", "tp")                            # (y, ŷ) = 00, 01, 10, 11
_BIN_COND = (("fpr", 0, 1), ("tnr", 0, 0), ("tpr", 1, 1), ("fnr", 1, 0))


def rates(decisions, data, surrogate=None, group_mass_bound=None, *, feature_bound=1.0):
    """The vector ℓ(c, D) of per-group confusion statistics of ``decisions`` on ``data``.

    Parameters
    ----------
    decisions : DecisionSet
        :class:`~privfair.models.decisions.FiniteSet`, :class:`~privfair.models.decisions.Thresholds` or
        :class:`~privfair.models.decisions.LinearClassifier`.
    data : Dataset
    surrogate : {None, "logistic", "hinge", "smoothed_hinge"}
        ``None``: 0-1 predictions.  Otherwise (LinearClassifier, binary labels only) the cells
        use a convex surrogate of the margin z = x̃·w + b, with x̃ = x clipped to
        ``‖x̃‖₂ ≤ feature_bound``, so ``|z| ≤ B = radius·sqrt(feature_bound² + 1)``:
        a y=0 row puts φ̃(z) in fp and 1 − φ̃(z) in tn; a y=1 row puts φ̃(−z) in fn and
        1 − φ̃(−z) in tp, where φ̃ = min(1, φ/φ(B)) ∈ [0, 1].  On the ball, **fp, fn, fpr, fnr
        are convex in (w, b)**, tn, tp, tnr, tpr concave, selection neither
        (``Rates.curvature``).  φ̃ is a rescaled proxy, not an upper bound of the 0-1 loss.
    group_mass_bound : None, float in (0, 1], or dict
        Lower bound q on every group-label mass n_{g,y}/n, used to clamp conditional rates.
        A dict maps ``(group, label)`` or ``group`` (all its labels) to q and must cover
        every pair.  The selection rate of g is clamped with Σ_y q_{g,y}.  ``None``: the
        bound will be estimated privately at solve time (``group_mass_source == "private"``);
        until then conditional rates are exact (unclamped) and have no sensitivity bound.
    feature_bound : float, default 1.0
        Public row-norm bound R used by surrogates.  Declare it; never compute it from the
        private data.  (Adult's standardized rows have norms around 3; clipping them to 1
        only rescales margins.)

    Returns
    -------
    Rates

    Examples
    --------
    >>> import numpy as np
    >>> from privfair.data.dataset import Dataset
    >>> from privfair.models.decisions import Thresholds
    >>> from privfair.statistics.stats import rates
    >>> data = Dataset(np.array([[0.], [1.], [2.], [3.]]), [0, 1, 0, 1], ["a", "a", "b", "b"])
    >>> r = rates(Thresholds([0.5, 2.5], score=0), data, group_mass_bound=0.25)
    >>> r.K, r.names[:5]
    (18, ['tn[a]', 'fp[a]', 'fn[a]', 'tp[a]', 'tn[b]'])
    >>> r.evaluate(0.5)[:8]
    array([0.25, 0.  , 0.  , 0.25, 0.  , 0.25, 0.  , 0.25])
    >>> r.delta_l("l1", "sensitive", support=range(8)), r.delta_l("linf", "row")
    (0.5, 1.0)
    """
    return Rates(decisions, data, surrogate, group_mass_bound, feature_bound=feature_bound)


def estimate_group_mass_bound(data, epsilon, rng=None, beta=0.05, *, accountant=None,
                              return_event=False):
    """A private lower bound on every group-label mass n_{g,y}/n, valid w.p. ≥ 1 − β.

    Releases the G·L counts n_{g,y} with the Laplace mechanism (ℓ1 sensitivity 2 under both
    relations: one row leaves one cell and joins another) and returns, per cell,
    ``q = max(ñ_{g,y} − b·ln(G·L / (2β)), 1) / n`` with b = 2/ε: by the Laplace tail
    P(noise > t) = e^{−t/b}/2 and a union bound, all G·L bounds hold at once w.p. ≥ 1 − β.
    (The floor of one row keeps q > 0; if Σq > 1, which only a failed bound can cause, q is
    rescaled to sum to 1.)  The result is post-processing of an ε-DP release.

    Parameters
    ----------
    data : Dataset, or a Dask dataset (``Dataset.from_parquet``): the counts are then a pass on
        the workers, merged on the client, and the noise is drawn once, here.
    epsilon : float -- the share of the budget spent on the estimate.
    rng : None, int or numpy.random.Generator -- None draws from the OS CSPRNG.
    beta : float in (0, 1) -- failure probability of the bound (accuracy only, never privacy).
    accountant : privfair.privacy.Accountant, optional -- records the Laplace event.
    return_event : bool -- return ``(bound, event)``.

    Returns
    -------
    dict
        ``{(group, label): q}``, ready for ``rates(..., group_mass_bound=...)`` or
        ``Rates.delta_l(..., group_mass_bound=...)``.

    Examples
    --------
    >>> import numpy as np
    >>> from privfair.data.dataset import Dataset
    >>> from privfair.statistics.stats import estimate_group_mass_bound
    >>> d = Dataset(np.zeros((4000, 1)), [0, 1] * 2000, ["a"] * 1000 + ["b"] * 3000)
    >>> q = estimate_group_mass_bound(d, epsilon=1.0, rng=0)
    >>> 0.11 < q[("a", 0)] < 0.125 and 0.36 < q[("b", 1)] < 0.375
    True
    """
    from ..privacy import laplace_mechanism  # the privacy core owns every noisy release

    if not isinstance(data, Dataset) and type(data).__name__ != "DaskDataset":
        raise InvalidInputError("data", type(data).__name__, "pass a privfair.data.dataset.Dataset")
    if isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not 0 < beta < 1:
        raise InvalidInputError("beta", beta, "pass a failure probability in (0, 1), e.g. 0.05")
    counts = data.counts().astype(float).ravel()
    release = laplace_mechanism(counts, 2.0, epsilon, rng, accountant=accountant,
                                sensitivity_source="group-label counts: one row leaves one cell "
                                "and joins another, ‖Δ‖₁ ≤ 2",
                                label="group-mass lower bound", return_event=True)
    b = 2.0 / float(epsilon)
    slack = b * max(0.0, math.log(counts.size / (2.0 * beta)))
    q = np.maximum(np.asarray(release.value, dtype=float) - slack, 1.0) / data.n
    if q.sum() > 1.0:
        q = q / q.sum()
    bound = {(g, lab): float(q[gi * data.n_labels + li])
             for gi, g in enumerate(data.groups) for li, lab in enumerate(data.label_values)}
    return (bound, release.event) if return_event else bound


def _check_bound(bound, data):
    """(q per (group, label) as a (G, L) array, q per group (G,)) or (None, None)."""
    G, L = data.n_groups, data.n_labels
    if bound is None:
        return None, None
    q = np.full((G, L), np.nan)
    if isinstance(bound, dict):
        li = {v: k for k, v in enumerate(data.label_values)}
        find = data.find_group
        for key, val in bound.items():
            if isinstance(val, bool) or not isinstance(val, numbers.Real):
                raise GroupMassError(f"group_mass_bound[{key!r}]", val, "pass a float in (0, 1]")
            # a group is its name or its value (a value may itself be a tuple of attributes)
            whole = find(key)
            pair = (find(key[0]) if isinstance(key, tuple) and len(key) == 2 and key[1] in li
                    else None)
            if pair is not None:
                q[pair, li[key[1]]] = val
            elif whole is not None:
                q[whole, :] = np.where(np.isnan(q[whole]), val, q[whole])
            else:
                raise GroupMassError("group_mass_bound", key, f"keys are groups "
                                     f"{data.group_choices()} or "
                                     f"(group, label) pairs with labels {data.label_values}")
        if np.isnan(q).any():
            g, y = np.argwhere(np.isnan(q))[0]
            raise GroupMassError("group_mass_bound", bound, f"no bound for (group, label) = "
                                 f"({data.groups[g]!r}, {data.label_values[y]!r}); cover every pair")
    elif isinstance(bound, numbers.Real) and not isinstance(bound, bool):
        q[:] = float(bound)
    else:
        raise GroupMassError("group_mass_bound", bound, "pass None, a float in (0, 1] or a dict")
    if not (np.isfinite(q).all() and (q > 0).all() and (q <= 1).all()):
        raise GroupMassError("group_mass_bound", bound, "every bound must lie in (0, 1]")
    if q.sum() > 1 + 1e-12:
        raise GroupMassError("group_mass_bound", bound, f"the bounds sum to {q.sum():g} > 1 over "
                             f"the {G}x{L} group-label cells, so no dataset satisfies them")
    return q, q.sum(axis=1)


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
                    names.append(f"{_BIN_JOINT[2 * y + j]}[{g}]" if L == 2
                                 else f"cell[{g},y={lv[y]},yhat={lv[j]}]")
        k = K_joint
        rate = np.zeros((G, L, L), dtype=np.int64)
        sel = None
        if L == 2:
            sel = np.zeros(G, dtype=np.int64)
            for gi, g in enumerate(groups):
                for name, y, j in _BIN_COND:
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
        return cls(G, L, k, K_joint, joint, rate, sel, tuple(names), np.arange(k) >= K_joint)

    def blocks(self):
        """(joint blocks, conditional blocks, selection coordinates), each a list of index
        arrays: the coordinates of one (g, y) joint block (mass n_gy/n, moved between its
        cells by a decision), of one (g, y) conditional block (one denominator), and each
        selection rate alone."""
        joint = [self.joint[g, y] for g in range(self.G) for y in range(self.L)]
        cond = [self.rate[g, y] for g in range(self.G) for y in range(self.L)]
        sel = [] if self.selection is None else [np.array([k]) for k in self.selection]
        return joint, cond, sel

    def geometry(self, support) -> dict:
        """Public bounds {norm: D} on ‖ℓ_S(p,D) − ℓ_S(p',D)‖ over mixtures p, p' (``"hull"``,
        the hull diameter), on ‖ℓ_S(p,D) − x₀‖ (``"start"``, x₀ the centre of the box) and the
        box's own diameters (``"box"``), valid for every dataset.

        A joint block (g, y) holds the fixed mass n_gy/n (Σ = 1) and a decision only moves it
        between its cells; a conditional block's rates sum to n_gy/max(n_gy, nq) ≤ 1; a
        selection rate lies in [0, 1]."""
        S = np.zeros(self.K, dtype=bool)
        S[list(support)] = True
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

        (w_J, w_R, w_S: the weights on the joint, conditional and selection coordinates; the
        selection term exists for binary labels only).

        Parameters
        ----------
        weights : array (K,) -- w, e.g. ∇Φ(ℓ).
        denominators : (d (G, L), d_g (G,) or None)
            The conditional denominators, in the units of ``n``: counts (clamped n_{g,y}, or the
            public n·q) with ``n`` the row count, or masses π with ``n = 1``.  ``d_g`` (the
            selection denominators) is read for binary labels only.
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
            return wJ + n * cond
        v = np.asarray(along, dtype=float).reshape(-1)
        if v.shape != (self.L,):
            raise InvalidInputError("along", v.shape, f"pass a direction of length L={self.L}")
        # the weights are contracted with v first: for v = (−1, 1) these are the differences
        # w(ŷ=1) − w(ŷ=0), as the ERM reduction always computed them (bit for bit)
        cond = (wR @ v) / den
        if binary:
            cond = cond + (v[1] * w[self.selection] / np.asarray(denominators[1], float))[:, None]
        return wJ @ v + n * cond


class _Accessor:
    """``r.fp["Female"]`` -> the index expression of one coordinate; ``.index(g)`` -> int."""

    def __init__(self, owner, name, offsets):
        self._owner, self._name, self._offsets = owner, name, offsets

    def index(self, group) -> int:
        if self._offsets is None:
            raise InvalidInputError(f"rates.{self._name}", "multi-class labels",
                                    "use r.cell(g, y, yhat) or r.rate(g, y, yhat)")
        return int(self._offsets[self._owner._group_index(group)])

    def __getitem__(self, group):
        return self._owner.vector[self.index(group)]


class Rates:
    """ℓ(c, D) with names, index expressions and row-influence bounds; see :func:`rates`.

    Attributes
    ----------
    K, K_joint : int -- length of ℓ and of its joint block (coordinates ``0 .. K_joint-1``).
    names : list of str;  is_conditional : bool array (K,).
    vector : privfair.expr.Variable -- ℓ as an expression leaf (``owner`` is this object).
    fp, fn, tp, tn, fpr, tpr, fnr, tnr, selection : ``r.fpr["Female"]`` is an expression,
        ``r.fpr.index("Female")`` the coordinate (binary labels only).  A group is named by its
        name (``data.groups``) or by the user's value (``data.group_values``): with groups
        declared as ``[0, 1]``, ``r.selection[0]`` and ``r.selection["0"]`` are the same.
    groups, group_values, label_values : the data's group names, group values and labels.
    group_mass_bound, group_mass_source : the declared bound and "public" / "private".
    decisions, data, surrogate, feature_bound, margin_bound (surrogates only).

    To clamp with a privately estimated bound q, pass ``group_mass_bound=q`` to ``evaluate``,
    ``evaluate_all``, ``evaluate_mixture``, ``weighted_value_and_grad`` and ``delta_l`` (keeps
    ``vector``), or rebuild with :meth:`with_group_mass_bound` (a new ``vector``).
    """

    def __init__(self, decisions, data, surrogate=None, group_mass_bound=None, *,
                 feature_bound=1.0, group_mass_source=None):
        if not isinstance(data, Dataset):
            raise InvalidInputError("data", type(data).__name__, "pass a privfair.data.dataset.Dataset")
        if not isinstance(decisions, DecisionSet):
            raise InvalidInputError("decisions", type(decisions).__name__,
                                    "pass a FiniteSet, Thresholds or LinearClassifier")
        nf = getattr(decisions, "n_features", None)
        if nf is not None and nf != data.n_features:
            raise InvalidInputError("decisions", repr(decisions),
                                    f"expects {nf} features but data has {data.n_features}")
        self.decisions, self.data, self.surrogate = decisions, data, surrogate
        self.n, self.groups, self.label_values = data.n, list(data.groups), list(data.label_values)
        self.group_values = data.group_values           # the user's values; groups: their names
        G, L = self.G, self.L = data.n_groups, data.n_labels
        if surrogate is not None:
            if surrogate not in SURROGATES:
                raise InvalidInputError("surrogate", surrogate,
                                        f"choose None or one of {sorted(SURROGATES)}")
            if not isinstance(decisions, LinearClassifier) or L != 2:
                raise InvalidInputError("surrogate", surrogate, "surrogates apply to a "
                                        "LinearClassifier with binary labels; use surrogate=None")
            R = feature_bound
            if isinstance(R, bool) or not isinstance(R, numbers.Real) or not (0 < R < math.inf):
                raise InvalidInputError("feature_bound", R, "declare a positive finite public "
                                        "row-norm bound, e.g. feature_bound=1.0")
            # Clip each row to the public bound R so that |z| <= B on the ball (never rescale
            # by a data-derived norm: that would leak).  The clipped rows are x_i·c_i with a
            # per-row scale c_i ≤ 1: only c (n floats) is stored, never a clipped copy of X
            # (an n×d temporary; at 10⁷ × 101 rows, 8 GB).
            self._clip_scale = np.minimum(1.0, R / np.maximum(_row_norms(data), 1e-300))
            self._Xc_cache = None
            self.margin_bound = decisions.radius * math.sqrt(R * R + 1.0)
            self._phiB = float(SURROGATES[surrogate](np.array(self.margin_bound))[0])
        self.feature_bound = float(feature_bound)
        self._q, self._qg = _check_bound(group_mass_bound, data)
        self.group_mass_bound = group_mass_bound
        self.group_mass_source = group_mass_source or (
            "private" if group_mass_bound is None else "public")
        self._cell = data.group * L + data.y                    # (g, y) cell of every row
        self._n_gy = np.bincount(self._cell, minlength=G * L).reshape(G, L).astype(float)
        self._layout()
        self._vector = None

    @property
    def _Xc(self) -> np.ndarray:
        """The clipped rows x_i·c_i as one (n, d) array — a full copy of X, built on first use
        and kept.  Rates themselves never build it (they scale margins and gradients by c);
        it remains for the backends that still read it whole (to be ported to passes)."""
        if self.surrogate is None:
            raise AttributeError("_Xc: clipped rows exist only under a surrogate")
        if self._Xc_cache is None:
            self._Xc_cache = self.data.X * self._clip_scale[:, None]
        return self._Xc_cache

    @property
    def clipped_rows(self) -> np.ndarray:
        """The clipped rows x̃_i = x_i·c_i as one (n, d) array (surrogates only; private data):
        a full copy of X, built on first use and kept.  Prefer :attr:`clip_scale` with X (no
        copy)."""
        return self._Xc

    @property
    def clipped_rows_built(self) -> bool:
        """Whether the (n, d) copy :attr:`clipped_rows` exists (a memory diagnostic: Rates never
        build it themselves)."""
        return getattr(self, "_Xc_cache", None) is not None

    @property
    def clip_scale(self) -> np.ndarray:
        """Per-row scale c_i = min(1, R/‖x_i‖₂) ≤ 1 with x̃_i = c_i·x_i inside the declared
        feature bound R (surrogates only; n floats, private data)."""
        if self.surrogate is None:
            raise InvalidInputError("surrogate", None, "rows are clipped only under a surrogate: "
                                    "pass rates(..., surrogate='logistic') or another")
        return self._clip_scale

    @property
    def surrogate_row(self) -> Surrogate:
        """The surrogate's row of :data:`SURROGATE_TABLE` (its numpy and torch forms)."""
        if self.surrogate is None:
            raise InvalidInputError("surrogate", None, "these rates use 0-1 predictions (no "
                                    "surrogate)")
        return SURROGATE_TABLE[self.surrogate]

    @property
    def phi_at_bound(self) -> float:
        """φ(B), the surrogate at the public margin bound B = radius·√(R² + 1): φ̃ = min(1, φ/φ(B))
        puts each row's mass in [0, 1] (surrogates only; public)."""
        if self.surrogate is None:
            raise InvalidInputError("surrogate", None, "φ(B) exists only under a surrogate")
        return self._phiB

    @property
    def row_gradient_bound(self) -> float:
        """sup_i ‖∂(row i's mass on ŷ = 1)/∂θ‖₂ ≤ sup φ'/φ(B)·‖(x̃_i, 1)‖₂ = √(R² + 1)/φ(B)
        (surrogates with φ' ≤ 1: logistic, hinge, smoothed hinge; public)."""
        return math.sqrt(self.feature_bound ** 2 + 1.0) / self.phi_at_bound

    @property
    def row_cell(self) -> np.ndarray:
        """The (group, label) cell g·L + y of every row (n ints; private data)."""
        return self._cell

    @property
    def cell_counts(self) -> np.ndarray:
        """n_{g,y}: the number of rows of each group and label, (G, L) floats (private data)."""
        return self._n_gy

    # -- layout ---------------------------------------------------------------------------
    def _layout(self):
        lay = self.layout = Layout.of(self.groups, self.label_values)
        self.K_joint, self.K, self.names = lay.K_joint, lay.K, list(lay.names)
        self.is_conditional = lay.is_conditional
        # the private names of the same arrays, kept while other modules still read them
        # (#17: read ``rates.layout`` instead)
        self._joint, self._rate, self._sel = lay.joint, lay.rate, lay.selection
        L = self.L
        off = {c: lay.joint[:, c // 2, c % 2] for c in range(4)} if L == 2 else {}
        for c, name in enumerate(_BIN_JOINT):
            setattr(self, name, _Accessor(self, name, off.get(c)))
        for name, y, j in _BIN_COND:
            setattr(self, name, _Accessor(self, name, lay.rate[:, y, j] if L == 2 else None))
        self.selection = _Accessor(self, "selection", lay.selection)

    @property
    def vector(self):
        """The :class:`privfair.expr.Variable` standing for ℓ (length K, named, owner=self)."""
        if self._vector is None:
            from ..expr import Variable  # imported late: expr builds on top of this module's data

            self._vector = Variable(self.K, names=list(self.names), owner=self)
        return self._vector

    def _group_index(self, group) -> int:
        """A group's position, from its name (``"0"``, ``"F|W"``) or its value (``0``,
        ``("F", "W")``): :meth:`privfair.Dataset.group_index`."""
        return self.data.group_index(group)

    def _label_index(self, label, field) -> int:
        try:
            return self.label_values.index(label)
        except ValueError:
            raise InvalidInputError(field, label, f"choose one of {self.label_values}") from None

    def index(self, name: str) -> int:
        """The coordinate named ``name`` (e.g. ``"fpr[Female]"``)."""
        try:
            return self.names.index(name)
        except ValueError:
            raise InvalidInputError("name", name, f"choose one of r.names ({self.K})") from None

    def cell(self, g, y, yhat):
        """Joint frequency of (group g, true label y, predicted yhat): an index expression."""
        gi = self._group_index(g)
        return self.vector[int(self._joint[gi, self._label_index(y, "y"),
                                           self._label_index(yhat, "yhat")])]

    def rate(self, g, y, yhat):
        """Conditional rate P(ŷ = yhat | g, y) (clamped denominator): an index expression."""
        gi = self._group_index(g)
        return self.vector[int(self._rate[gi, self._label_index(y, "y"),
                                          self._label_index(yhat, "yhat")])]

    def error(self):
        """Misclassification rate Σ_g Σ_{y≠ŷ} joint[g, y, ŷ] (an affine expression)."""
        from .. import expr

        off = [int(self._joint[g, y, j]) for g in range(self.G)
               for y in range(self.L) for j in range(self.L) if y != j]
        return expr.sum(self.vector[off])

    @property
    def curvature(self) -> list:
        """Curvature of each coordinate in the decision parameters (w, b), with a surrogate:
        "convex" (fp, fn, fpr, fnr), "concave" (tn, tp, tnr, tpr), "unknown" (selection, and
        every coordinate of 0-1 statistics, which are not continuous in the parameters)."""
        if self.surrogate is None:
            return ["unknown"] * self.K
        kind = {"fp": "convex", "fn": "convex", "fpr": "convex", "fnr": "convex",
                "tn": "concave", "tp": "concave", "tnr": "concave", "tpr": "concave"}
        return [kind.get(nm.split("[")[0], "unknown") for nm in self.names]

    def uses_conditional(self, support) -> bool:
        """Whether any coordinate in ``support`` is a conditional rate."""
        return bool(self.is_conditional[self._support_mask(support)].any())

    def _support_mask(self, support) -> np.ndarray:
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

    def with_group_mass_bound(self, bound, source: str = "private") -> "Rates":
        """A copy of these rates whose conditional coordinates are clamped with ``bound``
        (e.g. a privately estimated one; ``source`` records where it came from)."""
        return Rates(self.decisions, self.data, self.surrogate, bound,
                     feature_bound=self.feature_bound, group_mass_source=source)

    # -- evaluation -----------------------------------------------------------------------
    def denominators(self, group_mass_bound=None):
        """(d (G, L), d_g (G,)): the clamped denominators max(n_{g,y}, n·q_{g,y}) of the
        conditional rates and max(n_g, n·q_g) of the selection rates (private data; with no
        group-mass bound, the empirical counts floored at 1)."""
        return self._denominators(group_mass_bound)

    def group_mass(self, group_mass_bound=None):
        """(q (G, L), q_g (G,)): the group-mass lower bound in use — the declared one, or
        ``group_mass_bound`` when given (it may only be smaller) — or (None, None) when none is
        known (public)."""
        return self._bound(group_mass_bound)

    def from_counts(self, C, group_mass_bound=None) -> np.ndarray:
        """ℓ from per-(g, y, ŷ) counts (or expected counts) C of shape (..., G, L, L)."""
        return self._from_counts(C, group_mass_bound)

    def soft(self, theta):
        """(mass each row puts on ŷ = 1, its derivative in the margin z) under the surrogate,
        at θ = (w, b): y=0 rows φ̃(z), y=1 rows 1 − φ̃(−z) (private data)."""
        if self.surrogate is None:
            raise InvalidInputError("surrogate", None, "soft predictions need a surrogate")
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.decisions.P,):
            raise InvalidInputError("theta", f"shape {theta.shape}", "pass a vector (w, b) of "
                                    f"length n_features + 1 = {self.decisions.P}")
        return self._soft(theta)

    def cell_coefficients(self, weights, group_mass_bound=None, *, denominators=None,
                          times_n=False) -> np.ndarray:
        """a (G, 2): the derivative of weights·ℓ in the mass a row of cell (g, y) puts on ŷ = 1
        (binary labels), at the clamped denominators — the map from ℓ to row coefficients:
        weights·ℓ(θ) = const + Σ_i a_{g_i, y_i}·s_i(θ), s_i the row's mass on ŷ = 1.

        ``a[g, y] = (w_J(g,y,1) − w_J(g,y,0))/n + (w_R(g,y,1) − w_R(g,y,0))/d_{g,y} + w_sel(g)/d_g``
        (private: the clamped denominators d are counts).  ``denominators=(d, d_g)`` uses other
        denominators instead (e.g. the public n·q, for an objective whose weights must not
        depend on the counts).  ``times_n=True`` returns n·a (the coefficients of the sum form
        Σ_i rather than of the mean; the ERM reduction's weights).  Computed by
        :meth:`Layout.coefficients` along (−1, 1)."""
        if self.L != 2:
            raise InvalidInputError("labels", self.label_values, "row coefficients are defined "
                                    "for binary labels")
        den = self._denominators(group_mass_bound) if denominators is None else denominators
        na = self.layout.coefficients(weights, den, n=float(self.n), along=(-1.0, 1.0))
        return na if times_n else na / self.n

    def row_coefficients(self, weights, group_mass_bound=None, *,
                         denominators=None) -> np.ndarray:
        """Per row, a_{g_i, y_i} of :meth:`cell_coefficients` (n floats; private data)."""
        return self.cell_coefficients(weights, group_mass_bound,
                                      denominators=denominators).ravel()[self._cell]

    def _denominators(self, group_mass_bound):
        q, qg = self._bound(group_mass_bound)
        if q is None:  # exact empirical rates (an empty cell gives 0/1 = 0)
            return np.maximum(self._n_gy, 1.0), np.maximum(self._n_gy.sum(axis=1), 1.0)
        return np.maximum(self._n_gy, self.n * q), np.maximum(self._n_gy.sum(axis=1), self.n * qg)

    def _bound(self, group_mass_bound):
        """The (q, q_group) to use: the declared one, or a given one no larger than it."""
        if group_mass_bound is None:
            return self._q, self._qg
        q, qg = _check_bound(group_mass_bound, self.data)
        if self._q is not None and (q > self._q * (1 + 1e-12)).any():
            # ℓ is clamped with the declared bound; a larger q would understate sensitivity.
            raise GroupMassError("group_mass_bound", group_mass_bound,
                                 "exceeds the bound these rates were built with; use "
                                 "r.with_group_mass_bound(q) to rebuild them")
        return q, qg

    def _from_counts(self, C, group_mass_bound=None):
        """ℓ from per-(g, y, ŷ) counts C of shape (..., G, L, L)."""
        den, den_g = self._denominators(group_mass_bound)
        lead = C.shape[:-3]
        joint = C.reshape(lead + (-1,)) / self.n
        R = C / den[:, :, None]
        if self.L == 2:
            sel = (C[..., 0, 1] + C[..., 1, 1]) / den_g
            cond = np.stack([R[..., 0, 1], R[..., 0, 0], R[..., 1, 1], R[..., 1, 0], sel], axis=-1)
        else:
            cond = R
        return np.concatenate([joint, cond.reshape(lead + (-1,))], axis=-1)

    def _counts(self, decision) -> np.ndarray:
        G, L = self.G, self.L
        randomized = getattr(self.decisions, "randomized", False) and L == 2
        if self.surrogate is not None or randomized:
            if randomized:   # expected counts of a randomized rule (ℓ is linear in each row's mass)
                s = np.clip(np.asarray(self.decisions.predict_proba(decision, self.data.X),
                                       dtype=float).reshape(-1), 0.0, 1.0)
            else:
                s = self._soft(self.decisions.theta(decision))[0]    # mass on ŷ = 1 per row
            w = np.stack([1.0 - s, s], axis=1)
            flat = np.repeat(self._cell * L, L) + np.tile(np.arange(L), self.n)
            return np.bincount(flat, weights=w.ravel(), minlength=G * L * L).reshape(G, L, L)
        p = np.asarray(self.decisions.predict(decision, self.data.X)).astype(np.int64)
        if p.shape != (self.n,) or p.min() < 0 or p.max() >= L:
            raise InvalidInputError("decision", "predictions", f"must be codes 0..{L - 1} per row")
        return np.bincount(self._cell * L + p, minlength=G * L * L).reshape(G, L, L).astype(float)

    def _soft(self, theta):
        """(mass each row puts on ŷ = 1, its derivative in z) under the surrogate.

        y=0: mass φ̃(z), derivative φ̃'(z); y=1: mass 1 − φ̃(−z), derivative +φ̃'(−z).
        """
        z = (self.data.X @ theta[:-1]) * self._clip_scale + theta[-1]   # = x̃·w + b
        return self._soft_from_margins(z, self.data.y)

    def soft_from_margins(self, z, y):
        """(mass on ŷ = 1, its derivative in z) of rows with margins z = x̃·w + b and labels y
        (codes 0/1) under the surrogate: y=0 rows φ̃(z), y=1 rows 1 − φ̃(−z), with
        φ̃ = min(1, φ/φ(B)) — the one home of this map (:meth:`soft` applies it to every row)."""
        if self.surrogate is None:
            raise InvalidInputError("surrogate", None, "soft predictions need a surrogate")
        return self._soft_from_margins(np.asarray(z, dtype=float), np.asarray(y))

    def _soft_from_margins(self, z, y):
        sign = np.where(y == 1, -1.0, 1.0)                 # y=1 rows: fn gets φ̃(−z)
        val, der = SURROGATE_TABLE[self.surrogate].numpy(sign * z)
        val = val / self._phiB
        der = np.where(val < 1.0, der / self._phiB, 0.0)    # min(1, ·) is flat beyond B
        val = np.minimum(val, 1.0)
        return np.where(sign > 0, val, 1.0 - val), der

    def evaluate(self, decision, group_mass_bound=None) -> np.ndarray:
        """ℓ(c, D) for one decision: a float vector of length K (joint block first).

        ``decision`` is a decision of the set: an int index or a row of W (FiniteSet), a
        threshold (Thresholds), a vector (w, b) (LinearClassifier).  ``group_mass_bound``
        overrides the declared bound (it may only be smaller, or given when none was).
        """
        return self._from_counts(self._counts(decision), group_mass_bound)

    def evaluate_mixture(self, decisions, weights, group_mass_bound=None) -> np.ndarray:
        """ℓ of the randomized classifier playing ``decisions[i]`` with probability
        ``weights[i]`` (ℓ is linear in each row's contribution, so this is Σ_i w_i ℓ(c_i))."""
        w = np.asarray(weights, dtype=float).reshape(-1)
        if len(decisions) != w.size or w.size == 0:
            raise InvalidInputError("weights", w.size, f"give one weight per decision ({len(decisions)})")
        if not np.isfinite(w).all() or (w < 0).any() or abs(w.sum() - 1) > 1e-6:
            raise InvalidInputError("weights", w.tolist()[:5], "weights must be >= 0 and sum to 1")
        C = sum(wi * self._counts(d) for d, wi in zip(decisions, w / w.sum()))
        return self._from_counts(C, group_mass_bound)

    def evaluate_all(self, group_mass_bound=None) -> np.ndarray:
        """ℓ of every decision of a finite set: an (m, K) array, computed in one vectorised pass
        (sorted-threshold counting for Thresholds; per-cell sums of prediction blocks otherwise).

        Examples
        --------
        >>> import numpy as np
        >>> from privfair.data.dataset import Dataset
        >>> from privfair.models.decisions import Thresholds
        >>> from privfair.statistics.stats import rates
        >>> d = Dataset(np.array([[0.], [1.], [2.]]), [0, 1, 1], ["a", "b", "b"])
        >>> rates(Thresholds([0.5, 1.5]), d).evaluate_all()[:, :8].tolist()[1]
        [0.3333333333333333, 0.0, 0.0, 0.0, 0.0, 0.0, 0.3333333333333333, 0.3333333333333333]
        """
        C = self._all_counts()
        return self._from_counts(C, group_mass_bound)

    def _all_counts(self) -> np.ndarray:
        dec, G, L = self.decisions, self.G, self.L
        if not isinstance(dec, (FiniteSet, Thresholds)) or self.surrogate is not None:
            raise InvalidInputError("decisions", repr(dec), "evaluate_all needs a finite set "
                                    "(FiniteSet or Thresholds) without surrogate")
        m, cells = len(dec), G * L
        order = np.argsort(self._cell, kind="stable")   # rows grouped by (g, y) cell
        sizes = np.bincount(self._cell, minlength=cells)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        C = np.zeros((m, cells, L))
        if isinstance(dec, Thresholds):
            s = dec.scores(self.data.X)[order]
            for c in np.flatnonzero(sizes):
                block = np.sort(s[starts[c]:starts[c] + sizes[c]])
                C[:, c, 1] = sizes[c] - np.searchsorted(block, dec.grid, side="left")
        else:
            nonempty = np.flatnonzero(sizes)
            # predict on X as it is and sort each block's (c, n) predictions by cell: sorting
            # X itself would copy all n×d features; a block is bounded by the decision set's
            # chunking (CHUNK_ELEMENTS)
            for start, P in dec.iter_predictions(self.data.X):
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

    def weighted_value_and_grad(self, theta, weights, group_mass_bound=None):
        """(Σ_k weights_k ℓ_k(θ), its gradient in θ = (w, b)) under the surrogate.

        ℓ is linear in each row's mass on ŷ = 1, so the gradient is Σ_i a_{g_i,y_i} ∂s_i/∂θ
        with a per-cell coefficient a; one pass over the rows.
        """
        if self.surrogate is None:
            raise InvalidInputError("surrogate", None, "gradients need a surrogate")
        theta = self.decisions.theta(theta)
        wts = np.asarray(weights, dtype=float).reshape(-1)
        if wts.shape != (self.K,):
            raise InvalidInputError("weights", wts.shape, f"pass K={self.K} weights")
        s, der = self._soft(theta)
        # d(w·ℓ)/d(mass on ŷ=1) for a row of cell (g, y): +1/n on (y, 1), −1/n on (y, 0), etc.
        a = self.cell_coefficients(wts, group_mass_bound)
        value = float(wts @ self.evaluate(theta, group_mass_bound))
        coef = a.ravel()[self._cell] * der                 # der = d(mass on ŷ=1)/dz >= 0
        grad = np.concatenate([self.data.X.T @ (coef * self._clip_scale), [coef.sum()]])
        return value, grad

    # -- row influence ----------------------------------------------------------------------
    @property
    def influence(self) -> "Influence":
        """The row-influence structure (profiles, touched coordinates, per-coordinate bounds)."""
        return Influence(self)

    def delta_l(self, norm="l1", relation="sensitive", support=None, group_mass_bound=None) -> float:
        """Proven bound on ‖ℓ_S(c, D) − ℓ_S(c, D')‖ over neighbours D ~ D' and every decision c.

        Parameters
        ----------
        norm : {"l1", "l2", "linf"}
        relation : {"sensitive", "row"}
            "sensitive": one row's group changes (label and features, hence prediction, fixed);
            "row": one row is replaced (group, label and prediction may all change).
        support : iterable of int or expression, optional
            S, the coordinates read downstream (default: all K).
        group_mass_bound : optional
            Bound to use for conditional coordinates (default: the declared one).

        Raises
        ------
        GroupMassError
            If S contains conditional rates and no group-mass bound is known.
        """
        if norm not in NORMS:
            raise InvalidInputError("norm", norm, f"choose one of {list(NORMS)}")
        if relation not in RELATIONS:
            raise InvalidInputError("relation", relation, f"choose one of {list(RELATIONS)}")
        return self.influence.delta(norm, relation, self._support_mask(support), group_mass_bound)

    def __repr__(self):
        return (f"Rates(K={self.K}, groups={self.groups}, labels={self.label_values}, "
                f"surrogate={self.surrogate!r}, group_mass_source={self.group_mass_source!r})")


def _row_norms(data) -> np.ndarray:
    """‖x_i‖₂ of every row, one chunked pass (np.linalg.norm(X, axis=1) squares all of X into
    an n×d temporary first)."""
    from ..data.passes import ArrayRows

    rows = ArrayRows(data.X)
    out = np.empty(rows.n)
    for c in rows.chunks():
        out[c.start:c.start + len(c)] = np.sqrt(np.einsum("ij,ij->i", c.X, c.X))
    return out


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
    >>> from privfair.statistics.stats import block_constants
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
    conditional-rate cell and (binary, ŷ = 1) its group's selection rate; it also sits in the
    *denominators* of its (group, label) rate block and of its group's selection rate, so moving
    it rescales those blocks.  ``bounds()`` gives the per-coordinate change bound: 1/n for joint
    coordinates, 1/max(1, n·q) for conditional ones (NaN when no group-mass bound is known).
    """

    def __init__(self, rates: Rates):
        self._r = rates

    @property
    def profiles(self) -> list:
        """Every (group, label, prediction) profile, by name."""
        lv = self._r.label_values
        return [(g, y, j) for g in self._r.groups for y in lv for j in lv]

    def _idx(self, group, label, prediction):
        r = self._r
        return (r._group_index(group), r._label_index(label, "label"),
                r._label_index(prediction, "prediction"))

    def contributes(self, group, label, prediction) -> list:
        """Coordinates a row with this profile adds mass to."""
        r = self._r
        g, y, j = self._idx(group, label, prediction)
        out = [int(r._joint[g, y, j]), int(r._rate[g, y, j])]
        return out + ([int(r._sel[g])] if r.L == 2 and j == 1 else [])

    def denominator_block(self, group, label) -> list:
        """Conditional coordinates whose denominator counts a row of this group and label."""
        r = self._r
        g, y, _ = self._idx(group, label, label)
        return sorted(int(k) for k in r._rate[g, y]) + ([int(r._sel[g])] if r.L == 2 else [])

    def _constants(self, group_mass_bound, S):
        r = self._r
        q, qg = r._bound(group_mass_bound)
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
        if r._bound(group_mass_bound)[0] is not None:
            c, cg = self._constants(group_mass_bound, np.zeros(r.K, dtype=bool))
            b[r._rate] = np.maximum(c["own"], c["other"])[:, :, None]
            if r.L == 2:
                b[r._sel] = np.maximum(cg["own"], cg["other"])
        return b

    def delta(self, norm, relation, S, group_mass_bound=None) -> float:
        """max over allowed (old, new) profile pairs of the norm of the change bounds within S
        (see :meth:`Rates.delta_l`; ``S`` is a boolean mask of length K)."""
        r = self._r
        G, L, n = r.G, r.L, r.n
        c, cg = self._constants(group_mass_bound, S)
        inR = S[r._rate]                                        # (G, L, L)
        jw = S[r._joint] / n                                    # own joint cell: exactly 1/n
        own = inR
        other = (inR.sum(axis=2, keepdims=True) - inR) > 0      # another cell of the block in S
        pick = {"l1": c["l1"], "l2": c["l2"], "linf": np.maximum(c["own"], c["other"])}[norm]
        block = np.where(own & other, pick[:, :, None],
                         np.where(own, c["own"][:, :, None],
                                  np.where(other, c["other"][:, :, None], 0.0)))
        if L == 2:   # selection: the row's own cell if it predicts 1, else "another" cell
            sel = S[r._sel][:, None, None] * np.where(np.arange(2) == 1, cg["own"][:, None, None],
                                                       cg["other"][:, None, None])
        else:
            sel = np.zeros((G, 1, 1))
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
                    ent.append(S[r._sel] * cg["fixed"])
                best = max(best, float(_reduce(ent, norm).max()))
        return math.sqrt(best) if norm == "l2" else best

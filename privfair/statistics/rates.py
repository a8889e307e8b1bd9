# Over 500 lines: Rates is one class — its names, evaluation (in memory and on Dask workers)
#   and row-influence bounds share its cached per-row state.
"""The statistics ℓ(c, D) ∈ [0,1]^K of a decision on the data: :func:`rates` and :class:`Rates`
(names, index expressions, evaluation, the coefficient map, row-influence bounds).

The modules beside this one hold each concern Rates reads: the public layout of ℓ and the
coefficient map (:mod:`.layout`), the group-mass bound (:mod:`.group_mass`), per-cell counting
(:mod:`.counts`), surrogate masses (:mod:`.soft`) and the sensitivity proof (:mod:`.sensitivity`).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..data.dataset import Dataset
from ..errors import GroupMassError, InvalidInputError
from ..models.decisions import DecisionSet, LinearClassifier
from ..models.designs import row_blocks
from ..models.surrogates import SURROGATE_TABLE, SURROGATES, Surrogate
from .counts import all_counts, hard_counts, soft_counts
from .group_mass import group_mass_arrays
from .layout import BINARY_CONDITIONAL, BINARY_JOINT, Layout
from .sensitivity import Influence
from . import soft as soft_passes
from .soft import clip_scales, phi_at, soft_masses

__all__ = ["rates", "Rates"]


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
    >>> from privfair.statistics.rates import rates
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


class _Accessor:
    """``r.fp["Female"]`` -> the index expression of one coordinate; ``.index(g)`` -> int."""

    def __init__(self, owner, name, offsets):
        self._owner, self._name, self._offsets = owner, name, offsets

    def index(self, group) -> int:
        if self._offsets is None:
            raise InvalidInputError(f"rates.{self._name}", "multi-class labels",
                                    "use r.cell(g, y, yhat), r.rate(g, y, yhat) or "
                                    "r.selection_rate(g, yhat)")
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
        # a Dask dataset (``rows_on_workers``) keeps its rows on the workers: ℓ's layout and the
        # (group, label) counts come from its public schema and one counting pass; per-row
        # arrays are never built on the client (#19) — code that needs them refuses it
        on_workers = bool(getattr(data, "rows_on_workers", False))
        if not isinstance(data, Dataset) and not on_workers:
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
            # Clip each row to the public bound R so that |z| <= B on the ball: only the
            # per-row scale c_i ≤ 1 is stored (soft.clip_scales) — on a Dask dataset not even
            # that: each pass computes a row's c_i from the row on its worker (soft.surrogate_pass)
            self._clip_scale = None if on_workers else clip_scales(data, R)
            self._Xc_cache = None
            self.margin_bound = decisions.radius * math.sqrt(R * R + 1.0)
            self._phiB = phi_at(surrogate, self.margin_bound)
        self.feature_bound = float(feature_bound)
        self._on_workers = on_workers
        self._q, self._qg = group_mass_arrays(group_mass_bound, data)
        self.group_mass_bound = group_mass_bound
        self.group_mass_source = group_mass_source or (
            "private" if group_mass_bound is None else "public")
        if on_workers:
            self._cell_rows = None
            self._n_gy = np.asarray(data.counts(), dtype=float).reshape(G, L)
        else:
            self._cell_rows = data.group * L + data.y                # (g, y) cell of every row
            self._n_gy = np.bincount(self._cell_rows, minlength=G * L).reshape(G, L).astype(float)
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
        self._in_memory("the per-row clip scales")
        return self._clip_scale

    def _in_memory(self, what):
        """Refuse a per-row array of a Dask dataset (its rows stay on the workers, #19)."""
        if self._on_workers:
            raise InvalidInputError(
                "data", type(self.data).__name__, f"{what} are per-row arrays; a Dask "
                "dataset's rows stay on its workers and are read by passes only (evaluate, "
                "weighted_value_and_grad, evaluate_all) — load the rows with pf.Dataset to "
                "read them")

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
    def _cell(self) -> np.ndarray:
        if self._cell_rows is None:
            raise InvalidInputError(
                "data", type(self.data).__name__, "this computation reads the rows' (group, "
                "label) cells in memory; on a Dask dataset only passes run — solve with "
                "backend='cells' (pf.ProxyCells), or load the rows with pf.Dataset")
        return self._cell_rows

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
        L = self.L
        off = {c: lay.joint[:, c // 2, c % 2] for c in range(4)} if L == 2 else {}
        for c, name in enumerate(BINARY_JOINT):
            setattr(self, name, _Accessor(self, name, off.get(c)))
        for name, y, j in BINARY_CONDITIONAL:
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

    def label_index(self, label, field="label") -> int:
        """A label's position in ``label_values`` (``field`` names the argument in the error)."""
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
        return self.vector[int(self.layout.joint[gi, self.label_index(y, "y"),
                                                 self.label_index(yhat, "yhat")])]

    def rate(self, g, y, yhat):
        """Conditional rate P(ŷ = yhat | g, y) (clamped denominator): an index expression."""
        gi = self._group_index(g)
        return self.vector[int(self.layout.rate[gi, self.label_index(y, "y"),
                                                self.label_index(yhat, "yhat")])]

    def selection_rate(self, g, yhat):
        """P(ŷ = yhat | g), the share of group g's rows predicted ``yhat`` (clamped denominator):
        an expression.  Binary labels: ``r.selection[g]`` for the positive label, and
        1 − ``r.selection[g]`` for the other (the coordinate is P(ŷ = 1 | g) only)."""
        gi = self._group_index(g)
        j = self.label_index(yhat, "yhat")
        cs = self.layout.class_selection
        if cs is not None:
            return self.vector[int(cs[gi, j])]
        sel = self.vector[int(self.layout.selection[gi])]
        return sel if j == 1 else 1.0 - sel

    def error(self):
        """Misclassification rate Σ_g Σ_{y≠ŷ} joint[g, y, ŷ] (an affine expression)."""
        from .. import expr

        off = [int(self.layout.joint[g, y, j]) for g in range(self.G)
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
        return bool(self.is_conditional[self.layout.support_mask(support)].any())

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
        q, qg = group_mass_arrays(group_mass_bound, self.data)
        if self._q is not None and (q > self._q * (1 + 1e-12)).any():
            # ℓ is clamped with the declared bound; a larger q would understate sensitivity.
            raise GroupMassError("group_mass_bound", group_mass_bound,
                                 "exceeds the bound these rates were built with; use "
                                 "r.with_group_mass_bound(q) to rebuild them")
        return q, qg

    def _from_counts(self, C, group_mass_bound=None):
        """ℓ from per-(g, y, ŷ) counts C of shape (..., G, L, L) (:meth:`Layout.from_counts`)."""
        return self.layout.from_counts(C, self.n, self._denominators(group_mass_bound))

    def _counts(self, decision) -> np.ndarray:
        G, L = self.G, self.L
        randomized = getattr(self.decisions, "randomized", False) and L == 2
        if self._on_workers:        # a pass on the workers: the (G, L, L) sums come back
            return self._pass_counts(decision, randomized)
        if self.surrogate is not None or randomized:
            if randomized:   # expected counts of a randomized rule (ℓ is linear in each row's mass)
                s = np.clip(np.asarray(self._per_row(
                    lambda X: self.decisions.predict_proba(decision, X)),
                    dtype=float).reshape(-1), 0.0, 1.0)
            else:
                s = self._soft(self.decisions.theta(decision))[0]    # mass on ŷ = 1 per row
            return soft_counts(self._cell, s, G, L)
        return hard_counts(self._cell,
                           self._per_row(lambda X: self.decisions.predict(decision, X)), G, L)

    def _pass_counts(self, decision, randomized) -> np.ndarray:
        """C[g, y, ŷ] of one decision on a Dask dataset: one pass (soft.surrogate_pass or
        soft.decision_counts_pass) whose per-chunk counts are added on the client."""
        G, L = self.G, self.L
        rows = self.data.rows()
        if self.surrogate is not None and not randomized:
            C = rows.map_sum(soft_passes.surrogate_pass, self.decisions.theta(decision),
                             self.feature_bound, self.surrogate, self._phiB, G, L, None)
            C = None if C is None else C[0]
        else:
            C = rows.map_sum(soft_passes.decision_counts_pass, self.decisions, decision, G, L,
                             bool(randomized))
        return np.zeros((G, L, L)) if C is None else np.asarray(C, float).reshape(G, L, L)

    def _per_row(self, fn) -> np.ndarray:
        """``fn(X)`` of every row: on X itself, or — for data taken by index and not
        materialized (the held-out split's training part) — chunk by chunk through its row
        source, so evaluating a decision never gathers a copy of X (#19: sgda's checkpoint
        selection did, 6.5 GB at 10⁷ × 101 rows).  Row-wise ``fn``: the same values."""
        self._in_memory("per-row predictions")
        if self.data.is_materialized:
            return np.asarray(fn(self.data.X))
        return np.concatenate([np.asarray(fn(c.X)) for c in self.data.rows().chunks()])

    def _soft(self, theta):
        """(mass each row puts on ŷ = 1, its derivative in z) under the surrogate.

        y=0: mass φ̃(z), derivative φ̃'(z); y=1: mass 1 − φ̃(−z), derivative +φ̃'(−z).
        """
        self._in_memory("the rows' surrogate masses")
        if self.data.is_materialized:
            z = self.data.X @ theta[:-1]
        else:   # taken by index: each row's margin from its block of rows (no copy of X, #19)
            z = np.empty(self.n)
            for s, Xb in row_blocks(self.data.rows()):
                z[s:s + Xb.shape[0]] = Xb @ theta[:-1]
        z = z * self._clip_scale + theta[-1]                                # = x̃·w + b
        return self._soft_from_margins(z, self.data.y)

    def _rows_T_dot(self, v) -> np.ndarray:
        """Xᵀv (v one entry per row): on X itself, or — for data taken by index and not
        materialized — summed chunk by chunk over its row source (no copy of X, #19; the
        sum's order differs from the dense product's: equal up to float rounding)."""
        if self.data.is_materialized:
            return self.data.X.T @ v
        out = np.zeros(self.data.n_features)
        for s, Xb in row_blocks(self.data.rows()):
            out += Xb.T @ v[s:s + Xb.shape[0]]
        return out

    def soft_from_margins(self, z, y):
        """(mass on ŷ = 1, its derivative in z) of rows with margins z = x̃·w + b and labels y
        (codes 0/1) under the surrogate: y=0 rows φ̃(z), y=1 rows 1 − φ̃(−z), with
        φ̃ = min(1, φ/φ(B)) (:func:`privfair.statistics.soft.soft_masses`; :meth:`soft` applies it
        to every row)."""
        if self.surrogate is None:
            raise InvalidInputError("surrogate", None, "soft predictions need a surrogate")
        return self._soft_from_margins(np.asarray(z, dtype=float), np.asarray(y))

    def _soft_from_margins(self, z, y):
        return soft_masses(z, y, self.surrogate, self._phiB)

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
        >>> from privfair.statistics.rates import rates
        >>> d = Dataset(np.array([[0.], [1.], [2.]]), [0, 1, 1], ["a", "b", "b"])
        >>> rates(Thresholds([0.5, 1.5]), d).evaluate_all()[:, :8].tolist()[1]
        [0.3333333333333333, 0.0, 0.0, 0.0, 0.0, 0.0, 0.3333333333333333, 0.3333333333333333]
        """
        if self.surrogate is not None:
            raise InvalidInputError("decisions", repr(self.decisions), "evaluate_all needs a "
                                    "finite set (FiniteSet or Thresholds) without surrogate")
        if self._on_workers:     # a pass: each chunk's integer counts, added on the client
            C = self.data.rows().map_sum(soft_passes.all_counts_pass, self.decisions, self.G,
                                         self.L)
            if C is None:
                C = np.zeros((len(self.decisions), self.G, self.L, self.L))
        elif self.data.is_materialized:
            C = all_counts(self.decisions, self.data.X, self._cell, self.G, self.L)
        else:   # taken by index: the counts of each chunk, added (integers: exact; #19)
            C = 0.0
            for c in self.data.rows().chunks():
                C = C + all_counts(self.decisions, c.X, self._cell[c.start:c.start + len(c)],
                                   self.G, self.L)
        return self._from_counts(C, group_mass_bound)

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
        if self._on_workers:
            return self._pass_value_and_grad(theta, wts, group_mass_bound)
        s, der = self._soft(theta)
        # d(w·ℓ)/d(mass on ŷ=1) for a row of cell (g, y): +1/n on (y, 1), −1/n on (y, 0), etc.
        a = self.cell_coefficients(wts, group_mass_bound)
        if getattr(self.decisions, "randomized", False):   # evaluate reads predict_proba
            value = float(wts @ self.evaluate(theta, group_mass_bound))
        else:   # ℓ(θ) from the masses s just computed (what evaluate computes again: one pass)
            value = float(wts @ self._from_counts(soft_counts(self._cell, s, self.G, self.L),
                                                  group_mass_bound))
        coef = a.ravel()[self._cell] * der                 # der = d(mass on ŷ=1)/dz >= 0
        grad = np.concatenate([self._rows_T_dot(coef * self._clip_scale), [coef.sum()]])
        return value, grad

    def _pass_value_and_grad(self, theta, wts, group_mass_bound):
        """:meth:`weighted_value_and_grad` on a Dask dataset: one pass (soft.surrogate_pass)
        brings back the expected counts and the gradient's sum; the per-cell coefficients a
        travel (functions of the counts' denominators, computed on the client as in memory)."""
        a = self.cell_coefficients(wts, group_mass_bound)
        out = self.data.rows().map_sum(soft_passes.surrogate_pass, theta, self.feature_bound,
                                       self.surrogate, self._phiB, self.G, self.L, a)
        if out is None:
            C, grad = np.zeros((self.G, self.L, self.L)), np.zeros(self.decisions.P)
        else:
            C, grad = np.asarray(out[0], float).reshape(self.G, self.L, self.L), out[1]
        if getattr(self.decisions, "randomized", False):   # evaluate reads predict_proba
            value = float(wts @ self.evaluate(theta, group_mass_bound))
        else:
            value = float(wts @ self._from_counts(C, group_mass_bound))
        return value, np.asarray(grad, float)

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
        return self.influence.delta(norm, relation, self.layout.support_mask(support), group_mass_bound)

    def __repr__(self):
        return (f"Rates(K={self.K}, groups={self.groups}, labels={self.label_values}, "
                f"surrogate={self.surrogate!r}, group_mass_source={self.group_mass_source!r})")

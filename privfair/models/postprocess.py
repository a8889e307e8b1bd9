"""Post-processed predictors (Hardt, Price & Srebro 2016; [J] §3): a base prediction Ŷ(x) and the
sensitive attribute a decide together.

A :class:`PostProcessed` decision set describes the *derived predictors*

    (x, a) ↦ P(ỹ = 1) = p[Ŷ(x), a],    p ∈ [0, 1]^{2 × |A|},

which flip the binary base prediction Ŷ(x) with a probability that depends on its value and on
the group a of the row.  The base predictor is trained on (X, Y) *without* A — it is public under
``protect="sensitive"`` (X and y are identical in neighbouring datasets) and must come from public
data under ``protect="row"``.  Only the table p is fitted on the sensitive attribute, by the
``postprocessing`` backend (:mod:`privfair.backends.reductions.postprocessing`, [J] Algorithm 1).

A *decision* is the immutable fitted :class:`PostProcessRule` (the base predictor, the group
names and p).  Because the rule reads the group, prediction needs the sensitive attribute:
``Result.predict(X, sensitive=...)``; without it, :meth:`PostProcessed.predict_proba` raises a
typed :class:`~privfair.errors.InvalidInputError` naming ``sensitive`` (``needs_sensitive = True``
tells :class:`~privfair.results.result.Result` to pass it through).

Examples
--------
>>> import numpy as np
>>> import privfair as pf
>>> pp = pf.PostProcessed(lambda X: X[:, 0])          # base score, thresholded at 0.5
>>> rule = pp.rule(groups=["a", "b"], p=[[0.0, 0.2], [1.0, 0.9]])
>>> pp.predict_proba(rule, np.array([[0.9], [0.1], [0.9]]), sensitive=["a", "b", "b"]).tolist()
[1.0, 0.2, 0.9]
>>> pp.predict_proba(rule, np.array([[0.9]]))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
privfair.errors.InvalidInputError: sensitive=None is invalid: ...
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from .decisions import DecisionSet, as_matrix
from ..errors import InvalidInputError

__all__ = ["PostProcessed", "PostProcessRule", "LogisticBase", "LinearScore", "group_codes"]

#: the default cut points of a privately trained LinearClassifier base's margin, in units of the
#: ball's radius r: fine near the decision boundary, coarse in the tails.  Every level adds one
#: Laplace count to the sums the LP reads, and a small group's positives are few (Adult's women:
#: ~630 in the training counts), so levels cost accuracy of the rates; these 9 were chosen on a
#: validation split of adult.data (docs/trust.md, "Group thresholds") over
#: uniform grids of 8–32 levels and other placements
DEFAULT_MARGIN_CUTS = (-1.0, -0.6, -0.3, -0.1, 0.1, 0.3, 0.6, 1.0)
#: the default number of equal-width levels of a probability score (the public logistic
#: regression under protect="sensitive", whose counts get the whole ε): 16 and 32 gave the same
#: validation error and violation
DEFAULT_PROBABILITY_LEVELS = 16

_NEEDS_SENSITIVE = ("post-processing (Hardt et al. 2016; [J] Algorithm 1) decides with the "
                    "sensitive attribute: pass it, e.g. result.predict(X, sensitive=data.sensitive) "
                    "(raw values or group names), or solve with backend='oracle_learner', whose "
                    "classifiers never read it")


def group_codes(sensitive, groups, n):
    """Group index of every row from raw sensitive values (as given to ``pf.Dataset``) or
    group names; several attributes (an (n, k) array) form names ``"v1|v2"``."""
    if sensitive is None:
        raise InvalidInputError("sensitive", None, _NEEDS_SENSITIVE)
    raw = np.asarray(sensitive)
    if raw.dtype.kind not in "biu":     # integer codes are factorized as they are (str(v) alike)
        raw = np.asarray(sensitive, dtype=object)
    if raw.ndim == 2 and raw.shape[1] == 1:
        raw = raw[:, 0]
    if raw.ndim not in (1, 2) or raw.shape[0] != n:
        raise InvalidInputError("sensitive", f"shape {raw.shape}",
                                f"pass one sensitive value per row of X ({n} rows)")
    # each distinct value's name once, not one str() per row (#19: a row-by-row loop was half
    # of predict_proba's time on 2·10⁶ rows): pandas' hash-based factorize per column, as
    # pf.Dataset codes the groups, then the distinct combinations
    import pandas as pd

    cols = raw[:, None] if raw.ndim == 1 else raw
    codes, names = np.zeros(n, dtype=np.int64), [()]     # names[k]: the k-th present combination
    for j in range(cols.shape[1]):
        c, uniq = pd.factorize(cols[:, j], use_na_sentinel=False)
        m = max(len(uniq), 1)
        combos, inverse = np.unique(codes * m + c, return_inverse=True)
        names = [names[int(p) // m] + (str(uniq[int(p) % m]),) for p in combos]
        codes = inverse.reshape(-1)
    index = {g: k for k, g in enumerate(groups)}
    lookup = np.array([index.get("|".join(v), -1) for v in names] or [-1], dtype=np.int64)
    out = lookup[codes]
    bad = np.flatnonzero(out < 0)
    if bad.size:
        i = int(bad[0])
        raise InvalidInputError("sensitive", "|".join(names[codes[i]]), f"row {i} is in no group "
                                f"the rule was fitted on; the groups are {list(groups)}")
    return out


def threshold_labels(base, X, threshold, nonfinite="raise"):
    """Binary base predictions 1[base(X) ≥ threshold] (uint8), validated.

    ``nonfinite="negative"`` counts a non-finite score as a negative prediction instead of
    raising: where X is private (``protect="row"``) an error raised on some row's score would be
    a failure that depends on the private data (issue #16), so the rule must be total."""
    return score_levels(base, X, (threshold,), nonfinite).astype(np.uint8)


def score_levels(base, X, cuts, nonfinite="raise"):
    """The level of every row's base score among the sorted public ``cuts`` c_1 < … < c_{K−1}:
    level k ⇔ c_k ≤ score < c_{k+1} (level 0 below c_1; one cut t gives 1[score ≥ t]), int64.

    ``nonfinite="negative"`` puts a non-finite score in level 0 instead of raising (see
    :func:`threshold_labels`)."""
    out = base(X)
    out = np.asarray(out, dtype=float)
    n = int(np.shape(X)[0])
    if out.ndim == 2 and out.shape[1] == 2:   # predict_proba-like output: P(y = 1)
        out = out[:, 1]
    if out.shape != (n,):
        raise InvalidInputError("base", f"output shape {out.shape}",
                                f"the base predictor must return one score or label per row ({n},)")
    finite = np.isfinite(out)
    if not finite.all() and nonfinite != "negative":
        raise InvalidInputError("base", "non-finite output", "return finite scores or 0/1 labels")
    levels = np.searchsorted(np.asarray(cuts, dtype=float), out, side="right")
    return np.where(finite, levels, 0).astype(np.int64)


def cell_counts(levels, group, y, G, K=2):
    """Counts N[k, g, y] (shape (K, G, 2), float) of the rows' base levels k (the binary ŷ when
    K = 2), group codes and binary label codes — private; released only through the Laplace
    mechanism ([J] Algorithm 1)."""
    flat = (np.asarray(levels).astype(np.int64) * G + group) * 2 + y
    return np.bincount(flat, minlength=2 * K * G).reshape(K, G, 2).astype(float)


def level_counts(chunk, base, cuts, n_groups, nonfinite="raise"):
    """The pass (:mod:`privfair.data.passes`) of the counts N[k, a, y] of the base's score
    levels (:func:`score_levels`) over one chunk of rows: the chunk's (K, G, 2)
    :func:`cell_counts`; chunks merge by addition, exactly (integer counts below 2⁵³).  The
    base is applied to one chunk at a time, so no temporary of the data's size is made (#19:
    the training part of the held-out split, taken by index, is never gathered)."""
    levels = score_levels(base, chunk.X, cuts, nonfinite)
    return cell_counts(levels, chunk.group, chunk.y, int(n_groups), len(cuts) + 1)


def check_cuts(bins):
    """``bins`` (the :class:`PostProcessed` argument) as ``None`` (binary), ``"default"`` (the
    validated grid of :func:`default_cuts`), an int K ≥ 3 (an equal-width grid of K levels) or
    a tuple of sorted finite cut points."""
    if bins is None or (isinstance(bins, str) and bins == "default"):
        return bins
    if isinstance(bins, numbers.Integral) and not isinstance(bins, bool):
        if not 3 <= bins <= 256:
            raise InvalidInputError("bins", bins, "pass a number of score levels in [3, 256] "
                                    "(e.g. bins=32), a sorted list of cut points, or None for "
                                    "the binary base prediction")
        return int(bins)
    try:
        cuts = tuple(float(c) for c in bins)
    except (TypeError, ValueError):
        raise InvalidInputError("bins", bins, "pass an int (number of levels), a sorted list "
                                "of finite cut points, or None") from None
    if not cuts or not all(math.isfinite(c) for c in cuts) or any(
            b <= a for a, b in zip(cuts, cuts[1:])):
        raise InvalidInputError("bins", bins, "the cut points must be finite and strictly "
                                "increasing, e.g. bins=[0.25, 0.5, 0.75]")
    return cuts


def default_cuts(K, kind, radius=1.0):
    """The public cut points of a base score: for ``K="default"``, :data:`DEFAULT_MARGIN_CUTS`
    × r of a linear margin (``kind="margin"``, r the ball's radius: a privately trained
    :class:`~privfair.models.decisions.LinearClassifier` base) or
    :data:`DEFAULT_PROBABILITY_LEVELS` equal-width levels of a probability score
    (``kind="probability"``); for an int K, K equal-width levels over [−2r, 2r] of the margin
    or over (0, 1) of the probability.  Public: it reads K, the kind and r only — never the
    data.

    Why margins in units of r: the released linear base lies in the ball ‖θ‖ ≤ r, so for
    standardised or one-hot features most margins fall inside ±2r (Adult's 1%–99% quantiles:
    ±1.3 at r = 1); rows outside fall in the end levels.  Pass explicit cut points for other
    score scales."""
    if K == "default":
        if kind == "margin":
            return tuple(float(c) * radius for c in DEFAULT_MARGIN_CUTS)
        K = DEFAULT_PROBABILITY_LEVELS
    if kind == "margin":
        return tuple(float(c) for c in np.linspace(-2.0 * radius, 2.0 * radius, K - 1))
    return tuple(float(c) for c in np.linspace(0.0, 1.0, K + 1)[1:-1])


@dataclass(frozen=True)
class LinearScore:
    """The margin x·w + b of a released linear decision θ = (w, b): the base score of a
    :class:`PostProcessed` set whose base is a :class:`~privfair.models.decisions.LinearClassifier`
    trained privately at solve time."""

    theta: tuple

    def __call__(self, X):
        th = np.asarray(self.theta, dtype=float)
        return as_matrix(X, th.size - 1) @ th[:-1] + th[-1]


def as_base(base):
    """A callable X -> scores/labels from a callable or a fitted estimator."""
    if base is None:
        return None
    if hasattr(base, "predict_proba"):
        return lambda X: np.asarray(base.predict_proba(X))[:, 1]
    if hasattr(base, "predict") and not callable(base):
        return base.predict
    if callable(base):
        return base
    raise InvalidInputError("base", type(base).__name__, "pass a callable X -> scores (or 0/1 "
                            "labels), or a fitted estimator with predict_proba / predict")


@dataclass(frozen=True)
class LogisticBase:
    """The base score fitted by the backend when none is given: σ(x·w + b), from a
    logistic regression of y on X (never on the sensitive attribute).  The fit is the
    ``postprocessing`` backend's (``public_base``: scikit-learn's ``LogisticRegression()``
    objective, C = 1 and the intercept unpenalised, minimised by Newton steps over passes of
    the rows, #19); :meth:`from_theta` builds the base from its θ."""

    coef: tuple
    intercept: float

    def __call__(self, X):
        z = as_matrix(X) @ np.asarray(self.coef) + self.intercept
        return 0.5 * (1.0 + np.tanh(0.5 * z))

    @classmethod
    def from_theta(cls, theta):
        """The base of θ = (b, w), intercept first (as :func:`privfair.scores.fit_score`
        returns it)."""
        theta = np.asarray(theta, dtype=float).reshape(-1)
        return cls(tuple(float(v) for v in theta[1:]), float(theta[0]))


@dataclass(frozen=True, eq=False)
class PostProcessRule:
    """A fitted derived predictor: P(ỹ = 1 | x, a) = p[level(x), a].

    Attributes
    ----------
    base : callable -- X -> scores (or labels).
    cuts : tuple of float -- the sorted public cut points; level(x) = #{c ∈ cuts : base(x) ≥ c}
        (one cut t: the binary Ŷ = 1[base(x) ≥ t]).
    groups : tuple of str -- the group names, in the order of p's columns.
    p : numpy.ndarray (K, |A|) -- row level, column a: the probability of predicting 1.
    """

    base: object
    cuts: tuple
    groups: tuple
    p: np.ndarray

    @property
    def threshold(self):
        """The binary base's one cut point (None for a rule over K ≥ 3 score levels)."""
        return self.cuts[0] if len(self.cuts) == 1 else None

    def base_levels(self, X):
        return score_levels(self.base, X, self.cuts)

    def __repr__(self):
        if self.p.shape[0] > 2:
            return (f"PostProcessRule({self.p.shape[0]} score levels × groups "
                    f"{list(self.groups)}; p[level, group] = P(predict 1))")
        cols = ", ".join(f"{g}: ({self.p[0, k]:.3g}, {self.p[1, k]:.3g})"
                         for k, g in enumerate(self.groups))
        return f"PostProcessRule(p[ŷ=0, ŷ=1] per group — {cols})"


class PostProcessed(DecisionSet):
    """Derived predictors of a base predictor: p[level(x), a] (Hardt et al. 2016).

    Parameters
    ----------
    base : None, callable, fitted estimator or pf.LinearClassifier
        The base predictor, trained on (X, Y) without the sensitive attribute: a callable
        ``X -> scores`` (or 0/1 labels), or an estimator with ``predict_proba``/``predict``.
        ``None``: the ``postprocessing`` backend fits a logistic regression of y on X at solve
        time — allowed under ``protect="sensitive"`` only (X and y are public there).
        A :class:`~privfair.models.decisions.LinearClassifier`: the backend trains it at solve
        time — privately under ``protect="row"`` (``lagrangian_sgda`` minimising the error with
        the solve option ``base_share`` of ε, default 0.7; it needs δ > 0), as the public
        logistic regression under ``protect="sensitive"`` (X and y are public there; that fit
        is not confined to the ball, so ``radius`` only scales the row unit's cut points) — and
        post-processes its score.
    threshold : float, default 0.5
        Ŷ(x) = 1[base(x) ≥ threshold] (the binary base, ``bins=None``).  A LinearClassifier
        base ignores it: its binary Ŷ is its own prediction (margin ≥ 0, probability ≥ ½).
    bins : "default", None, int or sequence of float
        Score levels instead of the binary Ŷ.  ``"default"``: the binary Ŷ for a given base;
        for a LinearClassifier base the validated public grid of :func:`default_cuts` (9
        levels of the margin under ``protect="row"``, 16 of the public logistic regression's
        probability under ``protect="sensitive"``).  ``None``: the binary Ŷ.  An int K (3–256):
        K equal-width levels (margin over ±2·radius, or probability over (0, 1)).  A sequence:
        the sorted cut points themselves.  The table p then has one row per level and the backend's LP keeps it
        non-decreasing in the score (randomized group thresholds — Hardt et al.'s derived
        predictors of a score).

    Attributes
    ----------
    needs_sensitive = True -- prediction reads the group; ``size = inf``; ``P`` = 2·|A| once
    fitted (None before).

    Notes
    -----
    ``pf.rates(PostProcessed(...), data)`` gives the statistic vector to write the problem
    (e.g. ``r.error()`` and ``pf.abs(r.fpr["a"] - r.fpr["b"])``); the rule is fitted by the
    ``postprocessing`` backend.  ``Rates.evaluate`` cannot evaluate a rule (it has no access to
    the sensitive attribute at prediction time); use ``result.metrics(data)``.
    """

    needs_sensitive = True
    randomized = False      # Rates must not evaluate rules without the sensitive attribute

    def __init__(self, base=None, threshold: float = 0.5, bins="default"):
        if (isinstance(threshold, bool) or not isinstance(threshold, numbers.Real)
                or not math.isfinite(threshold)):
            raise InvalidInputError("threshold", threshold, "pass a finite number, e.g. 0.5")
        from .decisions import LinearClassifier

        #: a LinearClassifier trained by the backend at solve time (else None)
        self.trainable = base if isinstance(base, LinearClassifier) else None
        if isinstance(base, DecisionSet) and self.trainable is None:
            raise InvalidInputError("base", type(base).__name__, "a base decision set trained "
                                    "at solve time must be a pf.LinearClassifier; pass a fitted "
                                    "predictor (callable or estimator) otherwise")
        if isinstance(bins, str) and bins == "default" and self.trainable is None:
            bins = None                  # a given base: the binary Ŷ, as [J] Algorithm 1
        self.bins = check_cuts(bins)
        self.base = None if self.trainable is not None else as_base(base)
        self.threshold = float(threshold)
        self.size = math.inf
        self.P = None
        self.diameter = math.sqrt(2.0)   # per group, p ∈ [0,1]^2 (ℓ2 diameter of one block)

    def cuts(self, kind="probability"):
        """The public cut points: (threshold,) for the binary base, the given points, or
        :func:`default_cuts` for ``bins=K`` (``kind``: the base score's scale)."""
        if self.bins is None:
            if self.trainable is not None:    # the trained classifier's own Ŷ: margin > 0 ⇔ σ > ½
                return (0.0,) if kind == "margin" else (0.5,)
            return (self.threshold,)
        if isinstance(self.bins, (int, str)):
            r = self.trainable.radius if self.trainable is not None else 1.0
            return default_cuts(self.bins, kind, r)
        return self.bins

    def rule(self, groups, p, base=None, cuts=None) -> PostProcessRule:
        """The rule with table p (K × |groups|, K = len(cuts) + 1; default cuts
        :meth:`cuts`) and this set's base (or ``base``)."""
        b = as_base(base) if base is not None else self.base
        if b is None:
            raise InvalidInputError("base", None, "no base predictor: pass one to "
                                    "PostProcessed(base=...) or fit one first")
        cuts = self.cuts() if cuts is None else tuple(float(c) for c in cuts)
        p = np.array(p, dtype=float)
        groups = tuple(str(g) for g in groups)
        K = len(cuts) + 1
        if p.shape != (K, len(groups)) or not np.isfinite(p).all():
            raise InvalidInputError("p", p.shape, f"pass a ({K}, {len(groups)}) table of "
                                    "probabilities (row: base level, column: group)")
        p = np.clip(p, 0.0, 1.0)
        p.setflags(write=False)
        return PostProcessRule(b, cuts, groups, p)

    def predict_proba(self, decision, X, sensitive=None) -> np.ndarray:
        """P(ỹ = 1) for every row: p[Ŷ(x), a].  Raises ``InvalidInputError`` (field
        ``sensitive``) when the sensitive attribute is not given."""
        if not isinstance(decision, PostProcessRule):
            raise InvalidInputError("decision", type(decision).__name__,
                                    "pass a PostProcessRule (e.g. result.decision)")
        n = int(np.shape(X)[0])
        a = group_codes(sensitive, decision.groups, n)    # raises first when sensitive is None
        return decision.p[decision.base_levels(X), a].astype(float)

    def predict(self, decision, X, sensitive=None) -> np.ndarray:
        """Labels 1[P(ỹ = 1) ≥ 1/2] (uint8); needs ``sensitive`` like :meth:`predict_proba`."""
        return (self.predict_proba(decision, X, sensitive) >= 0.5).astype(np.uint8)

    def __repr__(self):
        base = ("pf.LinearClassifier trained at solve time" if self.trainable is not None
                else "fitted at solve time" if self.base is None else "given")
        levels = (f"threshold={self.threshold:g}" if self.bins is None
                  else f"bins={self.bins if isinstance(self.bins, int) else len(self.bins) + 1}"
                  if not isinstance(self.bins, str) else "bins='default'")
        return f"PostProcessed(base={base}, {levels})"

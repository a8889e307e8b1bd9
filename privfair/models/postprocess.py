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

__all__ = ["PostProcessed", "PostProcessRule", "LogisticBase", "group_codes"]

_NEEDS_SENSITIVE = ("post-processing (Hardt et al. 2016; [J] Algorithm 1) decides with the "
                    "sensitive attribute: pass it, e.g. result.predict(X, sensitive=data.sensitive) "
                    "(raw values or group names), or solve with backend='oracle_learner', whose "
                    "classifiers never read it")


def group_codes(sensitive, groups, n):
    """Group index of every row from raw sensitive values (as given to ``pf.Dataset``) or
    group names; several attributes (an (n, k) array) form names ``"v1|v2"``."""
    if sensitive is None:
        raise InvalidInputError("sensitive", None, _NEEDS_SENSITIVE)
    raw = np.asarray(sensitive, dtype=object)
    if raw.ndim == 2 and raw.shape[1] == 1:
        raw = raw[:, 0]
    if raw.ndim not in (1, 2) or raw.shape[0] != n:
        raise InvalidInputError("sensitive", f"shape {raw.shape}",
                                f"pass one sensitive value per row of X ({n} rows)")
    keys = ([str(v) for v in raw] if raw.ndim == 1
            else ["|".join(str(v) for v in row) for row in raw])
    index = {g: k for k, g in enumerate(groups)}
    out = np.empty(n, dtype=np.int64)
    for i, key in enumerate(keys):
        k = index.get(key)
        if k is None:
            raise InvalidInputError("sensitive", key, f"row {i} is in no group the rule was fitted "
                                    f"on; the groups are {list(groups)}")
        out[i] = k
    return out


def threshold_labels(base, X, threshold, nonfinite="raise"):
    """Binary base predictions 1[base(X) ≥ threshold] (uint8), validated.

    ``nonfinite="negative"`` counts a non-finite score as a negative prediction instead of
    raising: where X is private (``protect="row"``) an error raised on some row's score would be
    a failure that depends on the private data (issue #16), so the rule must be total."""
    out = base(X)
    out = np.asarray(out, dtype=float)
    n = int(np.shape(X)[0])
    if out.ndim == 2 and out.shape[1] == 2:   # predict_proba-like output: P(y = 1)
        out = out[:, 1]
    if out.shape != (n,):
        raise InvalidInputError("base", f"output shape {out.shape}",
                                f"the base predictor must return one score or label per row ({n},)")
    finite = np.isfinite(out)
    if nonfinite == "negative":
        return ((out >= threshold) & finite).astype(np.uint8)
    if not finite.all():
        raise InvalidInputError("base", "non-finite output", "return finite scores or 0/1 labels")
    return (out >= threshold).astype(np.uint8)


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
    logistic regression of y on X (never on the sensitive attribute)."""

    coef: tuple
    intercept: float

    def __call__(self, X):
        z = as_matrix(X) @ np.asarray(self.coef) + self.intercept
        return 0.5 * (1.0 + np.tanh(0.5 * z))

    @classmethod
    def fit(cls, X, y, C: float = 1.0):
        """Deterministic fit (lbfgs) of y on X: identical on neighbouring datasets under
        ``protect="sensitive"``, which leaves X and y unchanged."""
        from sklearn.linear_model import LogisticRegression

        y = np.asarray(y)
        if np.unique(y).size < 2:       # one class only: a constant base
            return cls(tuple(np.zeros(np.shape(X)[1])), 10.0 if y.size and y[0] == 1 else -10.0)
        m = LogisticRegression(C=C, max_iter=1000).fit(np.asarray(X, float), y)
        return cls(tuple(float(v) for v in m.coef_[0]), float(m.intercept_[0]))


@dataclass(frozen=True, eq=False)
class PostProcessRule:
    """A fitted derived predictor: P(ỹ = 1 | x, a) = p[Ŷ(x), a].

    Attributes
    ----------
    base : callable -- X -> scores (or labels); Ŷ = 1[base(X) ≥ threshold].
    threshold : float
    groups : tuple of str -- the group names, in the order of p's columns.
    p : numpy.ndarray (2, |A|) -- row ŷ, column a: the probability of predicting 1.
    """

    base: object
    threshold: float
    groups: tuple
    p: np.ndarray

    def base_labels(self, X):
        return threshold_labels(self.base, X, self.threshold)

    def __repr__(self):
        cols = ", ".join(f"{g}: ({self.p[0, k]:.3g}, {self.p[1, k]:.3g})"
                         for k, g in enumerate(self.groups))
        return f"PostProcessRule(p[ŷ=0, ŷ=1] per group — {cols})"


class PostProcessed(DecisionSet):
    """Derived predictors of a binary base predictor: p[Ŷ(x), a] (Hardt et al. 2016).

    Parameters
    ----------
    base : None, callable or fitted estimator
        The base predictor Ŷ, trained on (X, Y) without the sensitive attribute: a callable
        ``X -> scores`` (or 0/1 labels), or an estimator with ``predict_proba``/``predict``.
        ``None``: the ``postprocessing`` backend fits a logistic regression of y on X at solve
        time — allowed under ``protect="sensitive"`` only (X and y are public there).
    threshold : float, default 0.5
        Ŷ(x) = 1[base(x) ≥ threshold].

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

    def __init__(self, base=None, threshold: float = 0.5):
        if (isinstance(threshold, bool) or not isinstance(threshold, numbers.Real)
                or not math.isfinite(threshold)):
            raise InvalidInputError("threshold", threshold, "pass a finite number, e.g. 0.5")
        self.base = as_base(base)
        self.threshold = float(threshold)
        self.size = math.inf
        self.P = None
        self.diameter = math.sqrt(2.0)   # per group, p ∈ [0,1]^2 (ℓ2 diameter of one block)

    def rule(self, groups, p, base=None) -> PostProcessRule:
        """The rule with table p (2 × |groups|) and this set's base (or ``base``)."""
        b = as_base(base) if base is not None else self.base
        if b is None:
            raise InvalidInputError("base", None, "no base predictor: pass one to "
                                    "PostProcessed(base=...) or fit one first")
        p = np.array(p, dtype=float)
        groups = tuple(str(g) for g in groups)
        if p.shape != (2, len(groups)) or not np.isfinite(p).all():
            raise InvalidInputError("p", p.shape, f"pass a (2, {len(groups)}) table of "
                                    "probabilities (row ŷ, column group)")
        p = np.clip(p, 0.0, 1.0)
        p.setflags(write=False)
        return PostProcessRule(b, self.threshold, groups, p)

    def predict_proba(self, decision, X, sensitive=None) -> np.ndarray:
        """P(ỹ = 1) for every row: p[Ŷ(x), a].  Raises ``InvalidInputError`` (field
        ``sensitive``) when the sensitive attribute is not given."""
        if not isinstance(decision, PostProcessRule):
            raise InvalidInputError("decision", type(decision).__name__,
                                    "pass a PostProcessRule (e.g. result.decision)")
        n = int(np.shape(X)[0])
        a = group_codes(sensitive, decision.groups, n)    # raises first when sensitive is None
        yhat = decision.base_labels(X)
        return decision.p[yhat, a].astype(float)

    def predict(self, decision, X, sensitive=None) -> np.ndarray:
        """Labels 1[P(ỹ = 1) ≥ 1/2] (uint8); needs ``sensitive`` like :meth:`predict_proba`."""
        return (self.predict_proba(decision, X, sensitive) >= 0.5).astype(np.uint8)

    def __repr__(self):
        return f"PostProcessed(base={'fitted at solve time' if self.base is None else 'given'}, " \
               f"threshold={self.threshold:g})"

"""Results: the private decision (or mixture of decisions), its certificate and its trace."""

from __future__ import annotations

import numpy as np

from . import metrics as _metrics
from .errors import InvalidInputError


class Result:
    """What a solve returns.

    A result is a *randomized classifier*: decisions c_1..c_m of the problem's decision set
    with mixture weights w (a single decision has weight 1).  ``predict_proba`` is the expected
    prediction Σ w_j c_j(x); ``predict`` thresholds it at 1/2; ``sample`` draws one decision
    per row, as the randomized classifier the theorems speak of.

    Attributes
    ----------
    backend : str
        Name of the backend that ran.
    decisions : list
        The decisions (as the decision set represents them).
    weights : numpy.ndarray
        Mixture weights (sum to 1).
    decision_set : privfair.DecisionSet
    certificate : privfair.privacy.Certificate
        The proof of the (ε, δ) claim: every release, its sensitivity and the composition.
    plan : backends.base.Plan
    trace : list of dict
        Per-iteration records of the run (only released or public quantities).
    """

    def __init__(self, backend, decisions, weights, decision_set, *, certificate=None, plan=None,
                 trace=None, info=None):
        self.backend = backend
        self.decisions = list(decisions)
        w = np.asarray(weights, dtype=float).ravel()
        if len(w) != len(self.decisions) or np.any(w < -1e-12) or not np.isclose(w.sum(), 1.0):
            raise InvalidInputError("weights", weights, "mixture weights must be ≥ 0 and sum to 1, "
                                    "one per decision")
        self.weights = np.clip(w, 0, None) / np.clip(w, 0, None).sum()
        self.decision_set = decision_set
        self.certificate = certificate
        self.plan = plan
        self.trace = list(trace or [])
        self.info = dict(info or {})

    @property
    def decision(self):
        """The decision with the largest weight."""
        return self.decisions[int(np.argmax(self.weights))]

    def _check_X(self, X):
        X = np.asarray(X, dtype=float)
        if X.ndim != 2:
            raise InvalidInputError("X", f"shape {X.shape}", "pass a 2-D array (rows × features)")
        return X

    def predict_proba(self, X, sensitive=None) -> np.ndarray:
        """Expected prediction P(ŷ = 1 | x) of the mixture."""
        X = self._check_X(X)
        ds = self.decision_set
        fn = getattr(ds, "predict_proba", None)
        out = np.zeros(len(X))
        for c, w in zip(self.decisions, self.weights):
            if w == 0:
                continue
            if fn is not None:
                p = fn(c, X, sensitive) if getattr(ds, "needs_sensitive", False) else fn(c, X)
            else:
                p = ds.predict(c, X)
            out += w * np.asarray(p, dtype=float)
        # weights sum to 1 only up to rounding (100 × 0.01 accumulates to 1 + 7e-16): clip, so
        # that a certain prediction reads as a probability
        return np.clip(out, 0.0, 1.0)

    def predict(self, X, sensitive=None) -> np.ndarray:
        """Deterministic prediction: 1 where the expected prediction is ≥ 1/2."""
        return (self.predict_proba(X, sensitive) >= 0.5).astype(np.int64)

    def sample(self, X, rng=None, sensitive=None) -> np.ndarray:
        """Randomized prediction: each row draws its own decision (and its own coin)."""
        p = self.predict_proba(X, sensitive)
        g = np.random.default_rng(rng)
        return (g.random(len(p)) < p).astype(np.int64)

    def metrics(self, data) -> dict:
        """``{"error", "dp_violation", "eo_violation"}`` of the expected prediction on ``data``
        (a :class:`privfair.Dataset`, e.g. the test split)."""
        p = self.predict_proba(data.X, getattr(data, "sensitive", None))
        groups = np.asarray(data.groups, dtype=object)[data.group]
        return _metrics.summary(data.y, p, groups)

    def __repr__(self):
        eps = getattr(self.certificate, "epsilon", None)
        return (f"Result(backend={self.backend!r}, {len(self.decisions)} decision(s), "
                f"ε={eps})")

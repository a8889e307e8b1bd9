"""Results: the private decision (or mixture of decisions), its certificate and its trace."""

from __future__ import annotations

import numpy as np

from . import metrics as _metrics
from .errors import InvalidInputError


class Result:
    """What a solve returns.

    A result is a *randomized classifier*: decisions c_1..c_m of the problem's decision set
    with mixture weights w (a single decision has weight 1).  ``predict_proba`` is the expected
    prediction Σ w_j c_j(x) (the probability of the positive class, ``labels[1]``); ``predict``
    thresholds it at 1/2; ``sample`` draws one decision per row, as the randomized classifier
    the theorems speak of.

    ``predict`` and ``sample`` return the training data's own labels (``labels``: the
    Dataset's ``label_values``, e.g. ``"approved"``/``"denied"`` or ``1``/``2``);
    ``predict_codes`` and ``sample_codes`` return the codes 0..L−1 that ``Dataset.y`` holds
    (compare those with ``data.y``).

    With more than two classes (a ``TorchModel(..., n_classes=K)``), ``predict_proba`` is the
    (n, K) matrix Σ w_j onehot(c_j(x)) of the randomized classifier's class probabilities
    (columns in the order of ``labels``), ``predict`` its argmax, ``sample`` a draw per row,
    and ``metrics`` the multi-class error and gaps of :func:`privfair.metrics.summary`.

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
    labels : list
        The label value of every code 0..L−1 (public schema: the declared labels of the data
        the problem was solved on; codes ``0..L−1`` themselves when unknown).
    """

    def __init__(self, backend, decisions, weights, decision_set, *, certificate=None, plan=None,
                 trace=None, info=None, labels=None):
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
        self._labels = None if labels is None else list(labels)

    def _known_labels(self):
        """The training data's labels (code order), or None when this result does not know
        them (built by hand without ``labels=`` and without a plan)."""
        labels = getattr(self, "_labels", None)            # (a result pickled before it)
        if labels is None:
            data = getattr(getattr(getattr(self.plan, "problem", None), "rates", None),
                           "data", None)
            labels = getattr(data, "label_values", None)
        if labels is None or len(labels) != self.n_classes:
            return None
        return list(labels)

    @property
    def labels(self) -> list:
        """The label each code 0..L−1 stands for: the declared labels of the dataset the
        problem was solved on (``Dataset.label_values``; binary: ``[negative, positive]``), or
        the codes themselves when unknown."""
        known = self._known_labels()
        return known if known is not None else list(range(self.n_classes))

    def _to_labels(self, codes) -> np.ndarray:
        labels = self.labels
        values = np.asarray(labels)
        if values.ndim != 1 or values.tolist() != labels:    # mixed types: keep each as given
            values = np.empty(len(labels), dtype=object)
            values[:] = labels
        return values[codes]

    @property
    def decision(self):
        """The decision with the largest weight."""
        return self.decisions[int(np.argmax(self.weights))]

    @property
    def n_classes(self) -> int:
        """Number of classes of the decision set (2 unless it says otherwise)."""
        return int(getattr(self.decision_set, "n_classes", 2) or 2)

    def _check_X(self, X):
        from .errors import DataError

        try:
            X = np.asarray(X, dtype=float)
        except (TypeError, ValueError):
            raise DataError("X", type(X).__name__, "pass a numeric 2-D array (rows × features)") \
                from None
        if X.ndim != 2:
            raise InvalidInputError("X", f"shape {X.shape}", "pass a 2-D array (rows × features)")
        d = getattr(self.decision_set, "n_features", None)
        if d is not None and X.shape[1] != d:
            raise DataError("X", f"{X.shape[1]} features",
                            f"the decision was fitted on {d} features; pass X with {d} columns")
        if not np.isfinite(X).all():
            raise DataError("X", "NaN or infinite values",
                            "impute or drop them before predicting (a prediction on NaN is not "
                            "defined)")
        return X

    def predict_proba(self, X, sensitive=None) -> np.ndarray:
        """Expected prediction P(ŷ = 1 | x) of the mixture."""
        X = self._check_X(X)
        ds = self.decision_set
        if self.n_classes > 2:          # (n, K): the mixture of the components' hard labels
            out = np.zeros((len(X), self.n_classes))
            for c, w in zip(self.decisions, self.weights):
                if w > 0:
                    out[np.arange(len(X)), np.asarray(ds.predict(c, X), dtype=np.int64)] += w
            return np.clip(out, 0.0, 1.0)
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
        """Deterministic prediction, as the data's labels (``labels``): the positive class
        ``labels[1]`` where the expected prediction is ≥ 1/2, else ``labels[0]`` (multi-class:
        the most probable class).  :meth:`predict_codes` gives the codes 0..L−1."""
        return self._to_labels(self.predict_codes(X, sensitive))

    def predict_codes(self, X, sensitive=None) -> np.ndarray:
        """Deterministic prediction as label codes 0..L−1 (as ``Dataset.y``): 1 where the
        expected prediction is ≥ 1/2 (multi-class: the most probable class)."""
        p = self.predict_proba(X, sensitive)
        if p.ndim == 2:
            return np.argmax(p, axis=1).astype(np.int64)
        return (p >= 0.5).astype(np.int64)

    def sample(self, X, rng=None, sensitive=None) -> np.ndarray:
        """Randomized prediction, as the data's labels: each row draws its own decision (and
        its own coin).  :meth:`sample_codes` gives the codes."""
        return self._to_labels(self.sample_codes(X, rng, sensitive))

    def sample_codes(self, X, rng=None, sensitive=None) -> np.ndarray:
        """Randomized prediction as label codes 0..L−1 (see :meth:`sample`)."""
        p = self.predict_proba(X, sensitive)
        g = np.random.default_rng(rng)
        if p.ndim == 2:                 # inverse-CDF draw of one class per row
            u = g.random(len(p))[:, None]
            return np.minimum((np.cumsum(p, axis=1) < u).sum(axis=1), p.shape[1] - 1)
        return (g.random(len(p)) < p).astype(np.int64)

    def metrics(self, data) -> dict:
        """``{"error", "dp_violation", "eo_violation"}`` of the expected prediction on ``data``
        (a :class:`privfair.Dataset`, e.g. the test split)."""
        _check_dataset(data)
        y = self._codes_of(data)
        p = self.predict_proba(data.X, getattr(data, "sensitive", None))
        groups = np.asarray(data.groups, dtype=object)[data.group]
        return _metrics.summary(y, p, groups)

    def _codes_of(self, data) -> np.ndarray:
        """``data.y`` as codes of this result's labels: a test set may declare the same labels
        in another order (its codes are then mapped); other labels are refused."""
        mine, theirs = self._known_labels(), list(data.label_values)
        if mine is None or theirs == mine:
            return data.y
        if len(theirs) != len(mine) or any(v not in mine for v in theirs):
            raise InvalidInputError("data", f"labels {theirs}",
                                    f"the result predicts the labels {mine} of the data it was "
                                    "fitted on; score it on data with the same labels "
                                    "(pf.Dataset(..., labels=[...]))")
        return np.asarray([mine.index(v) for v in theirs], dtype=np.int64)[data.y]

    def path(self, data):
        """Every checkpoint of a path-following run (``sgda``'s λ path) scored on ``data``.

        Returns a :class:`privfair.path.PathTable` (print it, ``to_markdown()``, ``plot()``):
        λ, error, demographic-parity and equalized-odds gaps of each checkpoint's prediction
        on ``data``, the chosen checkpoints marked with their mixture weight, and a last row
        with the released classifier's own metrics (``metrics(data)``).  Pass held-out
        data (module docstring of :mod:`privfair.path`).

        Examples
        --------
        >>> res = prob.solve(pf.DP(1.0, 1e-6), backend="sgda")      # doctest: +SKIP
        >>> print(res.path(test)); res.path(test).plot()            # doctest: +SKIP
        """
        from .path import PathPoint, PathTable

        _check_dataset(data)
        ckpts, lams = self.info.get("checkpoints"), self.info.get("lambdas")
        if not ckpts or not lams or len(ckpts) != len(lams):
            raise InvalidInputError("result", f"a {self.backend!r} result",
                                    "path() needs a run that releases a path of checkpoints "
                                    "(backend='sgda'); other backends release one decision or "
                                    "a mixture: use metrics(data)")
        weights = [0.0] * len(ckpts)
        for i, w in self.info.get("chosen_indices", ()):
            weights[i] += w
        points = []
        for lam, ckpt, w in zip(lams, ckpts, weights):
            m = Result(self.backend, [ckpt], [1.0], self.decision_set,
                       labels=self._known_labels()).metrics(data)
            points.append(PathPoint(float(lam), m["error"], m["dp_violation"],
                                    m["eo_violation"], float(w)))
        return PathTable(points, self.info.get("fairness", "demographic_parity"),
                         released=self.metrics(data))

    def __repr__(self):
        eps = getattr(self.certificate, "epsilon", None)
        return (f"Result(backend={self.backend!r}, {len(self.decisions)} decision(s), "
                f"ε={eps})")


def _check_dataset(data):
    """Scoring needs labels and groups as well as features: a Dataset, not an array."""
    from .data import Dataset

    if not isinstance(data, Dataset):
        raise InvalidInputError("data", f"a {type(data).__name__}",
                                "pass a pf.Dataset with labels and the sensitive attribute "
                                "(e.g. pf.datasets.load_adult('test')); for predictions on "
                                "features alone use predict_proba(X)")

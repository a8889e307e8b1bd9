"""Results: the private decision (or mixture of decisions), its certificate and its trace."""

from __future__ import annotations

import numpy as np

from ..statistics import metrics as _metrics
from ..errors import InvalidInputError


class Result:
    """What a solve returns.

    A result is a *randomized classifier*: decisions c_1..c_m of the problem's decision set
    with mixture weights w (a single decision has weight 1).  ``predict_proba`` is the expected
    prediction Σ w_j c_j(x) (the probability of the positive class, ``labels[1]``); ``sample``
    draws one decision per row afresh from ``rng``, as the randomized classifier the theorems
    speak of.

    ``predict`` draws from the randomized classifier (as fairlearn's reductions do): row x gets
    the positive class when u(x) < P(ŷ = 1 | x), where u(x) ∈ [0, 1) is a pseudo-random function
    of a key and of x's features — one realization of the randomized rule, so the same row gets
    the same prediction in every call, batch and order (``random_state=`` picks the key; by
    default one drawn once per result).  The fairness constraints speak of this randomized
    rule; ``predict(X, randomized=False)`` thresholds the expected prediction at 1/2 instead,
    which can violate them (issue #18: EO 0.13–0.18 where 0.03 was asked).

    ``status`` says what the held-out check found (``"certified"``, ``"constraint not
    certified at level c"``, ``"fallback: constant rule"``, ``"fallback: mixed with a constant
    rule"`` or ``"not checked: <why>"``) and
    ``holdout`` holds its numbers (:class:`privfair.planning.holdout.HoldoutCheck`; docs/trust.md).

    ``predict`` and ``sample`` return the training data's own labels (``labels``: the
    Dataset's ``label_values``, e.g. ``"approved"``/``"denied"`` or ``1``/``2``);
    ``predict_codes`` and ``sample_codes`` return the codes 0..L−1 that ``Dataset.y`` holds
    (compare those with ``data.y``).

    With more than two classes (a ``TorchModel(..., n_classes=K)``), ``predict_proba`` is the
    (n, K) matrix Σ w_j onehot(c_j(x)) of the randomized classifier's class probabilities
    (columns in the order of ``labels``), ``predict`` its argmax, ``sample`` a draw per row,
    and ``metrics`` the multi-class error and gaps of :func:`privfair.statistics.metrics.summary`.

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
    status : str
        What the held-out check found (see above); ``"not checked: ..."`` for a result built
        outside a solve.
    holdout : privfair.planning.holdout.HoldoutCheck or None
        The held-out check's estimates, bounds and certificate (None when none was made).
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
        self.status = "not checked: built outside a solve"
        self.holdout = None

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
        from ..errors import DataError

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
        from ..data.dataset import first_nonfinite

        if first_nonfinite(X) is not None:      # chunk by chunk: no n×d boolean mask (#19)
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

    def predict(self, X, sensitive=None, *, random_state=None, randomized=True) -> np.ndarray:
        """Predictions of the randomized classifier, as the data's labels (``labels``).

        Parameters
        ----------
        X : array of shape (n, d)
        sensitive : array, optional
            The sensitive attribute, for rules that read it (``PostProcessed``).
        random_state : None, int or numpy.random.Generator
            The key of the pseudo-random coins u(x): each row's prediction is the positive
            class when u(x) < P(ŷ = 1 | x) (multi-class: the class whose cumulative
            probability first exceeds u(x)).  None: this result's own key, drawn once from the
            operating system, so repeated calls agree.  Coins depend on the key and the row
            only, so a prediction does not change with the batch or the order of the rows.
        randomized : bool, default True
            False: the deterministic threshold of the expected prediction at 1/2 (multi-class:
            the most probable class).  **This voids the fairness guarantee**: the constraints
            hold for the randomized rule, and its thresholded version can violate them by far
            (issue #18 measured EO 0.13–0.18 where 0.03 was asked).

        :meth:`predict_codes` gives the codes 0..L−1."""
        return self._to_labels(self.predict_codes(X, sensitive, random_state=random_state,
                                                  randomized=randomized))

    def predict_codes(self, X, sensitive=None, *, random_state=None,
                      randomized=True) -> np.ndarray:
        """:meth:`predict` as label codes 0..L−1 (as ``Dataset.y``)."""
        p = self.predict_proba(X, sensitive)
        if not randomized:
            if p.ndim == 2:
                return np.argmax(p, axis=1).astype(np.int64)
            return (p >= 0.5).astype(np.int64)
        u = row_coins(self._check_X(X), self._coin_key(random_state))
        if p.ndim == 2:
            return np.minimum((np.cumsum(p, axis=1) <= u[:, None]).sum(axis=1),
                              p.shape[1] - 1).astype(np.int64)
        return (u < p).astype(np.int64)

    def _coin_key(self, random_state) -> int:
        if random_state is None:
            key = getattr(self, "_predict_key", None)
            if key is None:
                import secrets

                key = self._predict_key = secrets.randbits(64)
            return key
        return coin_key(random_state)

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
        (a :class:`privfair.Dataset`, e.g. the test split).

        On a Dask dataset (``pf.Dataset.from_parquet`` / ``from_dask``) the expected confusion
        counts are one pass on the workers — the rule (decision set, decisions, weights)
        travels, the (groups × labels × labels) sums come back — and the metrics are computed
        from them (:func:`privfair.statistics.metrics.summary_from_counts`): the in-memory
        numbers up to float summation order.  A rule that reads the sensitive attribute is
        refused there."""
        if getattr(data, "rows_on_workers", False):
            return self._metrics_of_counts(data)
        _check_dataset(data)
        y = self._codes_of(data)
        p = self.predict_proba(data.X, getattr(data, "sensitive", None))
        groups = np.asarray(data.groups, dtype=object)[data.group]
        return _metrics.summary(y, p, groups)

    def _metrics_of_counts(self, data) -> dict:
        """:meth:`metrics` on a dataset whose rows stay on Dask workers: one pass of counts."""
        rule = Result(self.backend, self.decisions, self.weights, self.decision_set,
                      labels=self.labels)
        C = data.soft_counts(rule)                     # (G, L, L): the data's label codes
        mine, theirs = self._known_labels(), list(data.label_values)
        if mine is not None and theirs != mine:
            code = self._label_map(theirs, mine)
            D = np.zeros_like(C)
            for j, c in enumerate(code):
                D[:, c, :] += C[:, j, :]
            C = D
        return _metrics.summary_from_counts(C)

    def _label_map(self, theirs, mine) -> np.ndarray:
        """The codes in ``mine`` of the labels ``theirs`` (another order of the same labels);
        other labels are refused."""
        if len(theirs) != len(mine) or any(v not in mine for v in theirs):
            raise InvalidInputError("data", f"labels {theirs}",
                                    f"the result predicts the labels {mine} of the data it was "
                                    "fitted on; score it on data with the same labels "
                                    "(pf.Dataset(..., labels=[...]))")
        return np.asarray([mine.index(v) for v in theirs], dtype=np.int64)

    def _codes_of(self, data) -> np.ndarray:
        """``data.y`` as codes of this result's labels: a test set may declare the same labels
        in another order (its codes are then mapped); other labels are refused."""
        mine, theirs = self._known_labels(), list(data.label_values)
        if mine is None or theirs == mine:
            return data.y
        return self._label_map(theirs, mine)[data.y]

    def path(self, data):
        """Every checkpoint of a path-following run (``sgda``'s λ path) scored on ``data``.

        Returns a :class:`privfair.results.path.PathTable` (print it, ``to_markdown()``, ``plot()``):
        λ, error, demographic-parity and equalized-odds gaps of each checkpoint's prediction
        on ``data``, the chosen checkpoints marked with their mixture weight, and a last row
        with the released classifier's own metrics (``metrics(data)``).  Pass held-out
        data (module docstring of :mod:`privfair.results.path`).

        After a held-out fallback (``status == "fallback: constant rule"``: the held-out check
        replaced the trained rule by a constant one, :mod:`privfair.planning.holdout`) this result is
        the constant rule, which has no path; the table is then the path of the trained result
        ``holdout.trained`` — its checkpoints, its choice and its released row — and its
        ``note`` (printed above the table and in the plot's title) says so and names the
        constant that was returned instead.

        Examples
        --------
        >>> res = prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend="sgda")  # doctest: +SKIP
        >>> print(res.path(test)); res.path(test).plot()            # doctest: +SKIP
        """
        from .path import PathPoint, PathTable

        _check_dataset(data)
        trained = self._fallback_trained()
        if trained is not None:
            # the constant rule has no path: its checkpoints are the trained run's, and the
            # table must not pass them off as what this result returns
            chk = self.holdout
            table = trained.path(data)
            how = ("replaced this run's rule by the constant rule" if chk.mix_weight is None
                   else f"mixed this run's rule (weight {chk.mix_weight:.3f}) with the constant "
                        "rule")
            table.note = (f"the held-out check {how} (always {chk.constant_label!r}; status "
                          f"{self.status!r}): this is the path of the trained rule, "
                          "result.holdout.trained, which was not returned")
            table.released_label = "trained (not returned)"
            return table
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

    def _fallback_trained(self):
        """The trained result a held-out fallback replaced (``holdout.trained``), else None."""
        chk = getattr(self, "holdout", None)
        if chk is None or not getattr(chk, "fallback", False):
            return None
        trained = getattr(chk, "trained", None)
        return trained if isinstance(trained, Result) and trained is not self else None

    def __repr__(self):
        eps = getattr(self.certificate, "epsilon", None)
        eps = f"{eps:.4g}" if isinstance(eps, float) else eps     # the certificate keeps all digits
        return (f"Result(backend={self.backend!r}, {len(self.decisions)} decision(s), "
                f"ε={eps}, status={getattr(self, 'status', None)!r})")


def coin_key(random_state) -> int:
    """A 64-bit key from an int seed or a numpy Generator (typed error otherwise)."""
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63))
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool) \
            and random_state >= 0:
        return int(np.random.SeedSequence(int(random_state)).generate_state(1, np.uint64)[0])
    raise InvalidInputError("random_state", random_state, "pass None, a non-negative int seed "
                            "or a numpy.random.Generator")


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(z):
    """splitmix64's finalizer on a uint64 array (a bijection with good avalanche)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def row_coins(X, key: int) -> np.ndarray:
    """u(x) ∈ [0, 1) per row: a pseudo-random function of ``key`` and the row's float64 bits
    (splitmix64 chained over the columns), so a row gets the same coin in any batch.

    Computed a block of rows at a time (each coin reads its own row only, so the coins are the
    same): the float64 copy that folds −0.0 into 0.0 is block-sized, not another X (#19: at
    2·10⁶ × 101 a whole-X copy made ``predict`` peak at +1.7 GB).
    """
    from ..data.passes import chunk_rows_for

    X = np.asarray(X)
    out = np.empty(X.shape[0])
    k = chunk_rows_for(X.shape[1]) if X.ndim == 2 and X.shape[1] else max(1, X.shape[0])
    for s in range(0, X.shape[0], k):
        out[s:s + k] = _row_coins(X[s:s + k], key)
    return out


def _row_coins(X, key: int) -> np.ndarray:
    rows = np.array(X, dtype=np.float64)              # a block-sized copy, modified in place
    rows[rows == 0.0] = 0.0                           # -0.0 and 0.0 are the same feature
    words = rows.view(np.uint64).reshape(rows.shape)
    with np.errstate(over="ignore"):
        h = np.full(len(rows), np.uint64(key), dtype=np.uint64)
        h = _mix(h + _GOLDEN)
        for j in range(rows.shape[1]):
            h = _mix(h + _GOLDEN + words[:, j])
    return (h >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def _check_dataset(data):
    """Scoring needs labels and groups as well as features: a Dataset, not an array."""
    from ..data.dataset import Dataset

    if not isinstance(data, Dataset):
        raise InvalidInputError("data", f"a {type(data).__name__}",
                                "pass a pf.Dataset with labels and the sensitive attribute "
                                "(e.g. pf.datasets.load_adult('test')); for predictions on "
                                "features alone use predict_proba(X)")

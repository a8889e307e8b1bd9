# Over 500 lines: the estimator's scikit-learn contract (fit/predict/get_params/tags) with its
#   validation in one class.
"""scikit-learn interface: :class:`PrivateFairClassifier`.

A scikit-learn classifier that states and solves a private fair problem —

    minimize error(ℓ)  subject to  gap(ℓ) ≤ level,

where ``gap`` is the equalized-odds gap (largest |ΔFPR| or |ΔTPR| over pairs of groups) or the
demographic-parity gap (largest |Δ selection rate|), under (ε, δ)-differential privacy — with
``fit(X, y, sensitive_features=...)`` as in fairlearn.  It needs scikit-learn, the ``sklearn``
extra (``pip install 'privfair[sklearn]'``); ``import privfair.sklearn`` (or ``pf.sklearn``)
loads it.  Without scikit-learn the module still imports, and building a
``PrivateFairClassifier`` raises :class:`ScikitLearnMissingError` (an ``ImportError``) saying
what to install.

Examples
--------
>>> import numpy as np
>>> from privfair.sklearn import PrivateFairClassifier
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(400, 3)); a = rng.choice(["F", "M"], 400)
>>> y = (X[:, 0] + 0.5 * (a == "M") + rng.normal(size=400) > 0).astype(int)
>>> clf = PrivateFairClassifier(groups=["F", "M"], decision_set="thresholds", epsilon=2.0,
...                             seed=0)
>>> clf.fit(X, y, sensitive_features=a).predict_proba(X[:2]).shape
(2, 2)
>>> clf.certificate_.epsilon <= 2.0
True

Design
------
* Hyper-parameters are only stored by ``__init__`` (scikit-learn convention) and validated in
  :meth:`~PrivateFairClassifier.fit`, which raises the typed errors of :mod:`privfair.errors`
  (``InvalidInputError``, ``InvalidPrivacyError`` — both ``ValueError``) before anything is
  released.
* ``X`` is validated by scikit-learn (numeric, finite, 2-D; pandas DataFrames keep their column
  names: ``feature_names_in_``); ``y`` has two labels (``classes_``, the positive class is
  ``classes_[1]``) or more (below); ``sensitive_features`` is anything
  :class:`privfair.Dataset` accepts as ``sensitive`` (an array, a pandas Series or DataFrame —
  several columns form intersectional groups).  The sensitive attribute is used only to fit: the fitted rule never reads it
  (except ``decision_set="group_thresholds"``, below).
* The schema is public.  The groups are the ``groups`` parameter, never read from the private
  ``sensitive_features``: a private fit (finite ε) with sensitive features and without
  ``groups`` raises :class:`~privfair.errors.InvalidInputError` naming ``groups``, and a
  declared group may have no rows in the data (whether a fit succeeds or is refused depends on
  the declared groups only).  Only the non-private reference fit (ε = ∞) reads them from the
  data.  ``classes`` declares the two labels ``[negative, positive]`` likewise; left out,
  ``classes_`` is ``np.unique(y)`` (scikit-learn's convention), which is public under
  ``protect="sensitive"`` (y is not protected) but read from protected data under
  ``protect="row"``, where ``fit`` warns (:class:`UndeclaredClassesWarning`).
* The privacy unit is ``protect="row"`` by default — standard differential privacy of whole
  records, what ``epsilon`` means in diffprivlib — and ``protect="sensitive"`` protects only
  the sensitive attribute (the private-fair-learning papers' notion; features and labels are
  then public).  ``decision_set="auto"`` (default) picks by unit: ``"linear"`` under ``"row"``,
  ``"cells"`` under ``"sensitive"`` with two groups.
* ``decision_set="linear"``: a group-blind linear rule (:class:`privfair.LinearClassifier`, the
  ``lagrangian_sgda`` backend; either unit, any number of groups — under
  ``protect="sensitive"`` with binary labels ``auto`` runs ``proxy_reductions``
  instead, docs/lagrangian.md, *Proxy reductions*).  On Adult (ε = 1, row,
  δ = 1/n², seeds 0–4, adult.test, expected prediction) equalized odds ≤ 0.03 errs
  0.1941 ± 0.0132 at a gap of 0.0296 (one rule in five mixed with the constant), demographic
  parity ≤ 0.03 0.1763 ± 0.0031 at 0.0161; the cells rules under ``protect="sensitive"``
  0.1663 / 0.0158 and 0.1708 / 0.0293 (docs/privacy.md, *The default unit*).
* ``decision_set="cells"``: randomized rules on the cells of a public score × a private
  proxy of the group (:class:`privfair.ProxyCells`, the ``cells`` backend; two groups,
  ``protect="sensitive"`` only: its score is fitted on X and y).
* ``decision_set="thresholds"``: thresholds on a score, on the fixed grid ``linspace(-4, 4,
  n_thresholds)`` (the score is a logit); the score is ``public_score`` (a callable
  ``X -> scores`` trained on public data) or, by default, a ridge logistic regression of y on
  X — public only under ``protect="sensitive"``, so ``protect="row"`` needs ``public_score``.
* ``decision_set="group_thresholds"``: the ``postprocessing`` backend's randomized group
  thresholds of a linear score (docs/trust.md, "Group thresholds") — under ``protect="row"``
  the score is trained privately with 70% of ε, so whole records are protected without a
  public score.  This rule *reads the group*: ``predict(X, sensitive_features=...)`` and
  ``predict_proba(X, sensitive_features=...)``, as fairlearn's ``ThresholdOptimizer``; without
  them a typed error names ``sensitive``.
* Without ``sensitive_features`` there are no groups and no constraint: ``fit`` warns
  (:class:`NoSensitiveFeaturesWarning`) and fits the *unconstrained* error minimizer.  Under
  ``protect="sensitive"`` nothing in such data is protected, so this fit is the non-private
  reference over thresholds of the score (ε = ∞, no budget spent, the certificate says so);
  under ``protect="row"`` it is private at ``epsilon``: over thresholds of ``public_score``
  when one is given, else a private linear rule (``lagrangian_sgda``).  The fallback exists so
  that the estimator works in generic scikit-learn tooling (``check_estimator``, pipelines that
  cannot route ``sensitive_features``); it is not a fair fit.
* The fitted classifier is randomized (a mixture of rules): ``predict_proba`` gives its
  expected prediction, and ``predict`` draws from it — the randomized predictions the fairness
  guarantees speak of (as fairlearn's reductions do), with per-row pseudo-random coins keyed by
  ``random_state`` (default: ``seed``), so a row gets the same prediction in every call and
  batch.  ``predict(X, randomized=False)`` thresholds the expected prediction at 1/2, which
  voids the fairness guarantee.
* Three labels and more (``classes_`` of size K ≥ 3): ``decision_set`` ``"auto"`` or
  ``"linear"`` fits the multi-class linear rule :class:`privfair.SoftmaxClassifier`
  (``lagrangian_sgda``, numpy, either unit); ``"equalized_odds"`` bounds every
  |P(ŷ = k | y = j, g) − P(ŷ = k | y = j, h)|, ``"demographic_parity"`` every
  |P(ŷ = k | g) − P(ŷ = k | h)|; ``predict_proba`` is (n, K) in the order of ``classes_``.
  ``pos_label`` and the binary decision sets are refused with an
  :class:`~privfair.errors.InvalidInputError` before anything is spent (docs/sklearn.md,
  *Three labels and more*).
* Every fit is checked out of sample (docs/trust.md): ``holdout`` of the rows are held out of
  training and, privately, the released rule's error and constraint are estimated on them with
  a confidence bound; ``status_`` is ``"certified"``, ``"constraint not certified at level c"``,
  ``"fallback: constant rule"`` (the rule was worse than always predicting one class, which is
  then returned), ``"fallback: mixed with a constant rule"`` (it confidently broke the
  constraint on the held-out rows, and is played with the largest probability that meets it,
  the constant otherwise; ``holdout_on_violation``) or ``"not checked: <why>"``, and ``fit`` warns (a
  :class:`privfair.errors.ResultStatusWarning`) unless it is ``"certified"``.
"""

from __future__ import annotations

import copy
import itertools
import math
import numbers
import warnings

import numpy as np

from .errors import BudgetExceededError, DataError, InvalidInputError, PrivfairError
from .privacy import check_delta, check_epsilon
from .planning.holdout import ON_VIOLATION, ON_VIOLATION_CHOICES

__all__ = ["PrivateFairClassifier", "NoSensitiveFeaturesWarning", "ConstantRuleWarning",
           "UndeclaredClassesWarning", "UnaccountedBudgetWarning", "ScikitLearnMissingError"]


class ScikitLearnMissingError(PrivfairError, ImportError):
    """scikit-learn is not installed: this module imports without it (so do its warning
    classes), but :class:`PrivateFairClassifier` cannot be built.  Install the extra:
    ``pip install 'privfair[sklearn]'``."""


try:  # scikit-learn is optional: the `sklearn` extra
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.utils.multiclass import check_classification_targets, type_of_target
    from sklearn.utils.validation import check_is_fitted
except ImportError as _missing:        # the class below is defined, building one raises
    _SKLEARN_MISSING = f"{type(_missing).__name__}: {_missing}"

    class ClassifierMixin:             # noqa: D101 - stand-ins so that the module imports
        pass

    class BaseEstimator:               # noqa: D101
        def __new__(cls, *args, **kwargs):
            raise ScikitLearnMissingError(
                "scikit-learn", "not installed",
                f"{cls.__name__} is a scikit-learn estimator: pip install 'privfair[sklearn]' "
                f"(or scikit-learn>=1.4) — import failed with {_SKLEARN_MISSING}")
else:
    _SKLEARN_MISSING = None
    try:  # scikit-learn >= 1.6
        from sklearn.utils.validation import validate_data as _validate_data
    except ImportError:  # pragma: no cover - older scikit-learn
        def _validate_data(estimator, *args, **kwargs):
            return estimator._validate_data(*args, **kwargs)

_CONSTRAINTS = ("equalized_odds", "demographic_parity", None)
#: what fit passes to Problem.solve itself (backend_options may not set them)
_OWN_SOLVE_ARGUMENTS = frozenset({"backend", "device", "seed", "progress", "alpha", "budget",
                                  "holdout", "holdout_on_violation", "holdout_certify",
                                  "privacy", "_warn_status"})
_DECISION_SETS = ("auto", "linear", "cells", "thresholds", "group_thresholds")


class NoSensitiveFeaturesWarning(UserWarning):
    """``fit`` was called without ``sensitive_features``: an unconstrained fit (see the module
    docstring)."""


class UndeclaredClassesWarning(UserWarning):
    """A private fit under ``protect="row"`` read its two classes from y, which that relation
    protects: which labels occur (and a refusal when only one does) depends on the private
    data.  Declare them: ``PrivateFairClassifier(classes=[negative, positive])``."""


class UnaccountedBudgetWarning(UserWarning):
    """A private fit without ``budget=``: it spends its (ε, δ) on the training rows, and every
    other fit on the same rows (each candidate × fold of a ``GridSearchCV``, each fold of
    ``cross_val_score``, a refit) spends again — k fits cost k·ε by composition, which no single
    ``certificate_`` shows.  Pass ``budget=pf.BudgetFilter(total_ε, total_δ)``, one object
    shared by all those fits, to have the fits refused once it is spent.  Python's default
    warning filter shows it once per calling line."""


class _DetachedBudget:
    """What a pickled (or process-copied) estimator holds instead of its ``budget``.

    A budget is an identity, not a value: a copy in another process could not see what the
    original spends, so parallel fits on copies would each spend the whole budget.  Pickling
    therefore detaches it; predicting with the unpickled estimator works, fitting it is refused
    (:class:`~privfair.errors.InvalidInputError` naming ``budget``)."""

    def __init__(self, shown):
        self.shown = shown

    def __repr__(self):
        return f"<budget detached by pickling: {self.shown}>"


class ConstantRuleWarning(UserWarning):
    """The private fit returned a rule that predicts the same for every row: at this n, ε and
    level the noise left no room for another (the backend's note says what to change)."""


class _PublicScore:
    """The logit of a ridge logistic regression of y on X (picklable callable X -> scores)."""

    def __init__(self, coef):
        self.coef = np.asarray(coef, dtype=float)

    def __call__(self, X):
        return self.coef[0] + np.asarray(X, dtype=float) @ self.coef[1:]

    def __repr__(self):
        return f"_PublicScore(<{self.coef.size - 1} features>)"


def _sensitive(sensitive_features):
    """``sensitive_features`` at prediction time as the rule's ``sensitive`` (a pandas Series or
    DataFrame as its values; several columns form the intersectional names as in ``fit``)."""
    if sensitive_features is None:
        return None
    values = getattr(sensitive_features, "to_numpy", None)
    return values() if callable(values) else sensitive_features


def _check_choice(name, value, choices):
    if not any(value is c or (c is not None and value == c) for c in choices):
        raise InvalidInputError(name, value, f"choose one of {list(choices)}")


def _check_real(name, value, low, high, *, low_open=False):
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and not math.isnan(value)
    if ok:
        v = float(value)
        ok = (v > low if low_open else v >= low) and v <= high and math.isfinite(v)
    if not ok:
        bound = f"{'>' if low_open else '≥'} {low:g}" + (f" and ≤ {high:g}" if math.isfinite(high)
                                                       else "")
        raise InvalidInputError(name, value, f"pass a number {bound}")


def _check_sample_weight(sample_weight, n):
    """Accept uniform weights (the unweighted fit); refuse others, saying why."""
    try:
        w = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidInputError("sample_weight", type(sample_weight).__name__,
                                "pass numbers, one per row, or None") from None
    if w.ndim != 1 or w.shape[0] != n:
        raise InvalidInputError("sample_weight", f"shape {w.shape}",
                                f"pass one weight per row of X ({n}), or None")
    if not np.isfinite(w).all() or (w < 0).any():
        raise InvalidInputError("sample_weight", "negative or non-finite weights",
                                "weights must be finite and ≥ 0")
    if not (w > 0).any():
        raise InvalidInputError("sample_weight", "all zero",
                                "every sample weight is zero: at least one must be non-zero")
    if not (w == w[0]).all():
        raise InvalidInputError(
            "sample_weight", "non-uniform weights",
            "cannot be honoured privately: the privacy proofs bound what one row moves the "
            "statistics (1/n) — unit weights — and a row of weight w moves them w times as "
            "much, so the sensitivity (and the noise) would be wrong; drop sample_weight (a "
            "uniform weight is accepted: it is the unweighted fit)")


def _check_int(name, value, low, optional=False):
    if optional and value is None:
        return
    if not (isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= low):
        raise InvalidInputError(name, value, f"pass an integer ≥ {low}"
                                + (" or None" if optional else ""))


class PrivateFairClassifier(ClassifierMixin, BaseEstimator):
    """A differentially private, fairness-constrained classifier (two labels, or more: the
    softmax rule — see the module docstring).

    Parameters
    ----------
    constraint : {"equalized_odds", "demographic_parity", None}, default "equalized_odds"
        The fairness constraint: the largest |ΔFPR| or |ΔTPR| (equalized odds), or the largest
        |Δ selection rate| (demographic parity), over all pairs of groups, is ≤ ``level``.
        ``None``: minimize the error only.
    level : float, default 0.03
        The constraint's bound (≥ 0).
    epsilon : float, default 1.0
        Privacy budget ε (> 0); ``float("inf")`` gives the non-private reference fit.
    delta : float or None, default None
        δ in [0, 1); ``None`` means 1/n² for n training rows.
    protect : {"row", "sensitive"}, default "row"
        Neighbouring relation: one whole row replaced (standard DP), or only one row's
        sensitive attribute changed (features and labels public).  The default was
        ``"sensitive"`` until 2026-11-27 (docs/privacy.md, *The default unit*).
    backend : str, default "auto"
        ``"auto"`` (the planner's choice) or a name from ``privfair.backends.BACKENDS``.
    decision_set : {"auto", "linear", "cells", "thresholds", "group_thresholds"}, default "auto"
        ``"auto"``: ``"linear"`` under ``protect="row"``, ``"cells"`` under ``"sensitive"``
        with two groups (else ``"linear"``).  A group-blind :class:`privfair.LinearClassifier`
        (``lagrangian_sgda``; either unit; ``proxy_reductions`` under ``"sensitive"`` with
        binary labels), :class:`privfair.ProxyCells` rules (two groups,
        ``protect="sensitive"``), thresholds of a score, or randomized thresholds of a linear
        score *per group* (``pf.PostProcessed(pf.LinearClassifier(d))``: under
        ``protect="row"`` the score is trained privately; any number of groups) — whose
        ``predict`` and ``predict_proba`` need ``sensitive_features`` (see the module
        docstring).
    score_bins, proxy_bins : int or None, default None
        Cells of ``decision_set="cells"``; ``None``: (20, 8) from 20,000 rows on, else (10, 4).
    n_thresholds : int, default 50
        Size of the threshold grid of ``decision_set="thresholds"``.
    public_score : callable or None, default None
        The score of ``decision_set="thresholds"``: ``X -> (n,)`` logits trained on public data;
        ``None`` fits a ridge logistic regression of y on X (public under
        ``protect="sensitive"`` only).
    group_mass_bound : float or None, default None
        A public lower bound on every group's share of each label (for conditional rates); ``None``
        lets the backend estimate it privately or not need it.
    alpha : float, default 0.05
        Target accuracy of the solve (sets the penalty G and iteration counts).
    seed : int or None, default None
        Seed for reproducible noise (tests and examples, not real releases); ``None`` draws from
        the operating system.
    groups : list or None, default None
        The public list of groups (the values of the sensitive attribute, e.g. ``["F", "M"]``
        or ``[0, 1]``; several attributes: ``"v1|v2"`` or a tuple of values), in the order the
        problem uses.  Required for a private fit
        with ``sensitive_features`` (the set of groups is part of the public schema and is never
        read from the private column); a declared group may have no rows.  ``None`` is allowed
        for the non-private reference fit (``epsilon=inf``), which reads them from the data.
    classes : sequence of labels or None, default None
        The public labels ``[negative, positive]`` (``classes_``; the positive class is
        ``classes[1]``), or three and more in order (a multi-class fit); every y must be one of
        them, and y may hold only some of them.
        ``None``: ``np.unique(y)``, which must have two values or more (warns under
        ``protect="row"`` with a finite ε, where y is private: :class:`UndeclaredClassesWarning`).
    pos_label : label or None, default None
        The positive class (the one fpr, tpr and selection rates count, and
        ``predict_proba[:, list(classes_).index(pos_label)]``): one of ``classes`` (or of the
        labels in y).  ``None``: ``classes[1]``, or the larger of ``np.unique(y)``.  It maps to
        :class:`privfair.Dataset`'s ``pos_label``; ``classes_`` keeps its order.
    holdout : float, default 0.2
        The fraction of rows held out of training for the out-of-sample check
        (:mod:`privfair.planning.holdout`; 0 turns it off; fewer than 200 held-out rows: no check).
    holdout_on_violation : {"mix", "fallback", "warn"}, default "mix"
        When the held-out rows show the constraint confidently violated: ``"mix"`` plays the
        trained rule with the largest probability whose estimated constraint values meet the
        levels and the best constant rule otherwise (``status_`` "fallback: mixed with a
        constant rule"), ``"fallback"`` fits that constant rule (``status_`` "fallback:
        constant rule"), ``"warn"`` keeps the trained rule with a warning (docs/trust.md).
    holdout_certify : bool, default False
        True: where the held-out check does not certify the rule, mix it with the best constant
        rule at the largest weight whose held-out upper bounds meet the level + tolerance
        (``status_`` "certified (mixed with a constant rule)"): a certified rule, paid in error
        (docs/trust.md, *Certified on request*).
    backend_options : dict or None, default None
        Options of the backend that runs, as ``Problem.solve(..., **options)`` takes them
        (``privfair backends`` and docs/backends.md list each backend's), e.g.
        ``{"objective_surrogate": "cost_log"}`` or ``{"epochs": 20}`` for ``lagrangian_sgda``.
        Validated by the solve before anything is released: an unknown name or a bad value
        raises :class:`~privfair.errors.InvalidInputError` naming it.  ``None``: the defaults.
    budget : privfair.BudgetFilter or None, default None
        The running budget of the training rows, shared by every fit on them: each private fit
        reserves its (ε, δ) from it before drawing any noise, and a fit that would overspend it
        raises :class:`~privfair.errors.BudgetExceededError` having spent nothing (e.g. the
        third fit of a ``GridSearchCV`` at ε = 1 under ``BudgetFilter(2.0, ...)``).  Any object
        with BudgetFilter's ``reserve`` works.  The budget is shared, never copied: ``clone``
        (``GridSearchCV``, ``cross_val_score``) and ``copy.deepcopy`` keep the same object;
        pickling detaches it (a copy in another process cannot account for the original), so an
        unpickled estimator predicts but refuses to fit — run searches with a budget in one
        process (``n_jobs=None`` or joblib's threading backend).  ``None``: each private fit
        spends afresh, with an :class:`UnaccountedBudgetWarning`.

    Attributes
    ----------
    classes_ : ndarray of shape (K,) -- ``classes`` when declared, else ``np.unique(y)``
    n_features_in_ : int
    feature_names_in_ : ndarray of str (only when X was a DataFrame with string column names)
    groups_ : list -- the declared ``groups`` as given (``[0, 1]`` stays ``[0, 1]``; read from
        the data only when ε = ∞ and ``groups`` is None; ``["all"]`` without sensitive features)
    problem_ : privfair.Problem -- the problem solved
    result_ : privfair.Result -- the fitted (randomized) decision
    certificate_ : privfair.privacy.Certificate -- the privacy proof of the fit
    backend_ : str -- the backend that ran
    pos_label_ : the positive class
    status_ : str -- the held-out check's verdict (``result_.status``; docs/trust.md)
    """

    def __init__(self, constraint="equalized_odds", level=0.03, epsilon=1.0, delta=None,
                 protect="row", backend="auto", decision_set="auto", score_bins=None,
                 proxy_bins=None, n_thresholds=50, public_score=None, group_mass_bound=None, alpha=0.05,
                 seed=None, groups=None, classes=None, budget=None, pos_label=None,
                 holdout=0.2, holdout_on_violation=ON_VIOLATION, holdout_certify=False,
                 backend_options=None):
        self.backend_options = backend_options
        self.groups = groups
        self.holdout_certify = holdout_certify
        self.holdout_on_violation = holdout_on_violation
        self.classes = classes
        self.pos_label = pos_label
        self.holdout = holdout
        self.budget = budget
        self.constraint = constraint
        self.level = level
        self.epsilon = epsilon
        self.delta = delta
        self.protect = protect
        self.backend = backend
        self.decision_set = decision_set
        self.score_bins = score_bins
        self.proxy_bins = proxy_bins
        self.n_thresholds = n_thresholds
        self.public_score = public_score
        self.group_mass_bound = group_mass_bound
        self.alpha = alpha
        self.seed = seed

    # ------------------------------------------------------------------ validation
    def _check_params(self):
        _check_choice("constraint", self.constraint, _CONSTRAINTS)
        _check_real("level", self.level, 0.0, math.inf)
        # ε > 0 or inf (the non-private reference fit), δ in [0, 1) or None (1/n²): the
        # privacy core's rules and messages, as pf.DP's
        check_epsilon(self.epsilon, "epsilon", allow_inf=True)
        if self.delta is not None:
            check_delta(self.delta, "delta")
        _check_choice("protect", self.protect, ("row", "sensitive"))
        if not isinstance(self.backend, str):
            raise InvalidInputError("backend", self.backend, "pass 'auto' or a backend name")
        _check_choice("decision_set", self.decision_set, _DECISION_SETS)
        _check_int("score_bins", self.score_bins, 1, optional=True)
        _check_int("proxy_bins", self.proxy_bins, 1, optional=True)
        _check_int("n_thresholds", self.n_thresholds, 2)
        if self.public_score is not None and not callable(self.public_score):
            raise InvalidInputError("public_score", self.public_score,
                                    "pass a callable X -> scores, or None")
        if self.group_mass_bound is not None:
            _check_real("group_mass_bound", self.group_mass_bound, 0.0, 1.0, low_open=True)
        _check_real("alpha", self.alpha, 0.0, math.inf, low_open=True)
        if self.seed is not None:
            _check_int("seed", self.seed, 0)
        if isinstance(self.budget, _DetachedBudget):
            raise InvalidInputError(
                "budget", self.budget, "this estimator was pickled (e.g. sent to a worker "
                "process by GridSearchCV(n_jobs=...)), which detaches its budget: a copy cannot "
                "spend from the original, so it may not fit; fit in the process that holds the "
                "budget (n_jobs=None, or joblib.parallel_backend('threading')), or "
                "set_params(budget=...) again")
        if (isinstance(self.holdout, bool) or not isinstance(self.holdout, (int, float))
                or not 0 <= self.holdout < 1):
            raise InvalidInputError("holdout", self.holdout, "pass the fraction of rows held out "
                                    "for the out-of-sample check, in [0, 1), e.g. 0.2")
        if self.holdout_on_violation not in ON_VIOLATION_CHOICES:
            raise InvalidInputError("holdout_on_violation", self.holdout_on_violation,
                                    "pass 'mix' (the trained rule mixed with a constant rule "
                                    "that keeps the constraint, when the held-out rows show it "
                                    "violated), 'fallback' (the constant rule) or 'warn'")
        if self.backend_options is not None and not (
                isinstance(self.backend_options, dict)
                and all(isinstance(k, str) for k in self.backend_options)):
            raise InvalidInputError("backend_options", self.backend_options,
                                    "pass a dict of option names to values, e.g. "
                                    "{'epochs': 20}, or None")
        clash = sorted(set(self.backend_options or {}) & _OWN_SOLVE_ARGUMENTS)
        if clash:
            raise InvalidInputError("backend_options", clash[0],
                                    f"{clash[0]!r} is the estimator's own parameter or set by "
                                    "fit: pass it as PrivateFairClassifier("
                                    f"{clash[0]}=...), not in backend_options"
                                    if clash[0] in self.get_params() else
                                    f"{clash[0]!r} is set by fit, not a backend option")
        if not isinstance(self.holdout_certify, bool):
            raise InvalidInputError("holdout_certify", self.holdout_certify, "pass True or False")
        if self.budget is not None and not callable(getattr(self.budget, "reserve", None)):
            raise InvalidInputError("budget", self.budget, "pass a pf.BudgetFilter(total_epsilon, "
                                    "total_delta) shared by every fit on these rows, or None")
        for name in ("groups", "classes"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
                raise InvalidInputError(name, value, f"pass a list, e.g. {name}="
                                        + ("['F', 'M']" if name == "groups" else "[0, 1]"))
            items = list(value)
            if name == "groups":
                names = [str(g) for g in items]
                if len(names) < 2 or len(set(names)) != len(names):
                    raise InvalidInputError("groups", value, "declare at least two distinct "
                                            "groups, e.g. groups=['F', 'M']")
            elif len(items) < 2 or len({repr(c) for c in items}) != len(items):
                raise InvalidInputError("classes", value, "declare the distinct labels in order "
                                        "— two as [negative, positive], e.g. classes=[0, 1], "
                                        "or three and more, e.g. classes=[0, 1, 2]")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # three labels and more: the softmax rule (decision_set "auto" or "linear") only
        tags.classifier_tags.multi_class = self.decision_set in ("auto", "linear")
        # a private fit on the checks' tiny data sets is noisy by design
        tags.classifier_tags.poor_score = True
        tags.non_deterministic = self.seed is None
        return tags

    # ------------------------------------------------------------------ the budget is shared
    def __sklearn_clone__(self):
        """scikit-learn's ``clone`` with the ``budget`` shared, not deep-copied: a budget is an
        identity (what the fits on these rows have spent), not a value; every other parameter
        is cloned as ``sklearn.base.clone`` does."""
        from sklearn.base import clone

        params = self.get_params(deep=False)
        budget = params.pop("budget")
        new = type(self)(budget=budget, **{k: clone(v, safe=False) for k, v in params.items()})
        if hasattr(self, "_metadata_request"):
            new._metadata_request = copy.deepcopy(self._metadata_request)
        if hasattr(self, "_sklearn_output_config"):
            new._sklearn_output_config = copy.deepcopy(self._sklearn_output_config)
        if hasattr(self, "_skl_callbacks"):
            new._skl_callbacks = self._skl_callbacks
        return new

    def __deepcopy__(self, memo):
        """A deep copy that shares ``budget`` (see :meth:`__sklearn_clone__`)."""
        if self.budget is not None:
            memo.setdefault(id(self.budget), self.budget)
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new

    def __getstate__(self):
        """Pickling detaches the budget (:class:`_DetachedBudget`): the copy predicts, but a
        fit of it is refused, since it could not spend from the original."""
        state = dict(super().__getstate__())
        budget = state.get("budget")
        if budget is not None and not isinstance(budget, _DetachedBudget):
            state["budget"] = _DetachedBudget(repr(budget))
        return state

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, sensitive_features=None, sample_weight=None):
        """Fit privately.

        Parameters
        ----------
        X : array-like or pandas.DataFrame of shape (n, d) -- numeric features.
        y : array-like of shape (n,) -- binary labels (any two values).
        sensitive_features : array-like, pandas.Series or DataFrame of length n, optional
            The sensitive attribute(s); several columns form intersectional groups.  Without
            it, an unconstrained fit with a warning (see the module docstring).
        sample_weight : array-like of shape (n,) or None
            Honoured only when it is uniform (every weight the same positive number, which is
            the unweighted fit).  Other weights raise
            :class:`~privfair.errors.InvalidInputError` naming ``sample_weight``: the privacy
            proofs bound what *one row* moves the statistics (1/n), i.e. they assume unit
            weights; a row of weight w moves them w times as much.

        Returns
        -------
        self

        Raises
        ------
        BudgetExceededError
            The shared ``budget`` cannot cover this fit's (ε, δ); nothing was spent.
        """
        import privfair as pf

        self._check_params()
        private = not math.isinf(float(self.epsilon))
        if sensitive_features is not None and self.groups is None and private:
            # the set of groups is public schema: never read it from the private column
            raise InvalidInputError(
                "groups", None, "a private fit needs the public list of groups, declared — it is "
                "never read from the private sensitive_features (which groups occur is private): "
                "pass PrivateFairClassifier(groups=[...], ...), e.g. groups=['F', 'M'] (a "
                "declared group may have no rows), or epsilon=float('inf') for a non-private "
                "reference fit")
        X, y = _validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        if sample_weight is not None:
            _check_sample_weight(sample_weight, X.shape[0])
        if self.classes is not None:
            classes = np.asarray(list(self.classes))
            outside = ~np.isin(y, classes)
            if outside.any():
                i = int(np.flatnonzero(outside)[0])
                raise DataError("y", y[i], f"row {i} has a label outside the declared classes "
                                f"{list(self.classes)}; fix it or declare classes=[...] with it")
        else:
            classes = np.unique(y)
            if classes.size < 2:
                raise ValueError(f"y has only one class ({classes[0]!r}); PrivateFairClassifier "
                                 "needs samples of both classes, or declared classes=[...]")
            if private and self.protect == "row":
                warnings.warn("the classes were read from y, which protect='row' protects: which "
                              "labels occur (the model's classes, and a refusal when only one "
                              "does or when a binary-only option meets three) depends on the "
                              "private data; declare them: PrivateFairClassifier(classes="
                              f"{classes.tolist()!r})", UndeclaredClassesWarning,
                              stacklevel=2)
        self.classes_ = classes
        multiclass = classes.size > 2
        if multiclass:
            self._check_multiclass(classes)
            # the dataset's labels are classes_ in order (code k = classes_[k]); no positive
            # class: the rates are P(ŷ = k | group, y = j) for every pair of labels
            pos_index, labels = None, classes.tolist()
            code = {repr(c): k for k, c in enumerate(labels)}
            y01 = np.array([code[repr(v)] for v in y.tolist()], dtype=np.int64)
        elif self.pos_label is None:
            pos_index = 1
        else:
            hits = [i for i, c in enumerate(classes.tolist()) if c == self.pos_label]
            if not hits:
                raise InvalidInputError("pos_label", self.pos_label,
                                        f"choose one of the classes {classes.tolist()}")
            pos_index = hits[0]
        self._pos_index = pos_index
        self.pos_label_ = None if multiclass else classes[pos_index]
        if not multiclass:
            y01 = (y == classes[pos_index]).astype(np.int64)
            # the dataset's labels are [negative, positive] (code 1 = the positive class), so
            # result_.predict and result_.sample speak them too
            labels = [classes[1 - pos_index], classes[pos_index]]
        y_lab = np.empty(len(y01), dtype=object)
        y_lab[:] = [labels[k] for k in y01]
        positive = None if multiclass else labels[1]
        names = getattr(self, "feature_names_in_", None)
        names = None if names is None else [str(c) for c in names]
        n = X.shape[0]

        if sensitive_features is None:
            warnings.warn("fit() without sensitive_features: no groups, so no fairness "
                          "constraint — fitting the unconstrained error minimizer over "
                          "thresholds of the score (non-private under protect='sensitive', "
                          "where nothing in this data is protected); pass "
                          "sensitive_features=... for a private fair fit",
                          NoSensitiveFeaturesWarning, stacklevel=2)
            data = pf.Dataset(X, y_lab, np.full(n, "all", dtype=object), labels=labels,
                              pos_label=positive, feature_names=names, group_names=["all"])
        else:
            declared = None if self.groups is None else list(self.groups)
            try:
                data = pf.Dataset(X, y_lab, sensitive_features, labels=labels,
                                  pos_label=positive, feature_names=names,
                                  group_names=declared)
            except DataError as err:
                if err.field != "sensitive":
                    raise
                # the Dataset's own reason (a length mismatch, an undeclared group), in the
                # estimator's names: its parameter is groups=, its argument sensitive_features=
                fix = err.fix.replace("group_names", "groups")
                raise DataError("sensitive_features", err.value, fix) from None
            if data.n_groups < 2:       # inferred groups only (declared ones are checked ≥ 2)
                raise DataError("sensitive_features", f"one group {data.groups}",
                                "a fairness constraint needs at least two groups; omit "
                                "sensitive_features for an unconstrained fit")
        fallback = sensitive_features is None
        self.groups_ = list(data.group_values)     # the user's values (0 stays 0)

        decision_set = self._decision_set(fallback, data.n_groups)
        if decision_set == "cells" and data.n_groups > 2:
            raise InvalidInputError("decision_set", "cells",
                                    f"the cells rules (ProxyCells) take two groups, the data has "
                                    f"{data.n_groups} ({', '.join(map(str, data.groups))}): pass "
                                    "decision_set='linear' or 'thresholds'")
        if decision_set == "cells" and self.protect == "row":
            raise InvalidInputError("decision_set", "cells",
                                    "the cells rules read a public score fitted on X and y, which "
                                    "protect='row' protects: pass decision_set='linear' (or "
                                    "'auto'), or protect='sensitive'")
        if decision_set == "linear":
            rule = (pf.SoftmaxClassifier(X.shape[1], classes.size) if multiclass
                    else pf.LinearClassifier(X.shape[1]))
            r = pf.rates(rule, data, group_mass_bound=None if fallback else self.group_mass_bound)
        elif decision_set == "group_thresholds":
            r = pf.rates(pf.PostProcessed(pf.LinearClassifier(X.shape[1])), data,
                         group_mass_bound=self.group_mass_bound)
        elif decision_set == "cells":
            big = n >= 20_000
            bins = (self.score_bins or (20 if big else 10), self.proxy_bins or (8 if big else 4))
            r = pf.rates(pf.ProxyCells(*bins), data, group_mass_bound=self.group_mass_bound)
        else:
            score = self.public_score
            if score is None:
                if self.protect == "row":
                    raise InvalidInputError(
                        "public_score", None, "decision_set='thresholds' fits its score on X and y, "
                        "which protect='row' protects: pass public_score=<a callable trained on public "
                        "data>, or use protect='sensitive'")
                score = _PublicScore(pf.scores.fit_score(X, y01))
            grid = np.linspace(-4.0, 4.0, int(self.n_thresholds))
            r = pf.rates(pf.Thresholds(grid, score=score), data,
                         group_mass_bound=None if fallback else self.group_mass_bound)

        constraints = []
        if not fallback and self.constraint is not None:
            terms = []
            for g, h in itertools.combinations(data.groups, 2):
                if multiclass and self.constraint == "equalized_odds":
                    # every P(ŷ = k | y = j), j and k labels
                    terms += [pf.abs(r.rate(g, j, k) - r.rate(h, j, k))
                              for j in labels for k in labels]
                elif multiclass:    # demographic parity: every P(ŷ = k | group)
                    terms += [pf.abs(r.selection_rate(g, k) - r.selection_rate(h, k))
                              for k in labels]
                elif self.constraint == "equalized_odds":
                    terms += [pf.abs(r.fpr[g] - r.fpr[h]), pf.abs(r.tpr[g] - r.tpr[h])]
                else:
                    terms.append(pf.abs(r.selection[g] - r.selection[h]))
            gap = terms[0] if len(terms) == 1 else pf.maximum(*terms)
            constraints.append(gap <= float(self.level))
        problem = pf.Problem(pf.minimize(r.error()), constraints)

        epsilon = float(self.epsilon)
        if fallback and self.protect == "sensitive":
            epsilon = math.inf     # one group: nothing is protected by this relation
        if math.isinf(epsilon):
            delta = 0.0
        else:
            delta = 1.0 / n ** 2 if self.delta is None else float(self.delta)
        privacy = pf.DP(epsilon, delta, protect=self.protect)
        budget = self.budget if privacy.is_private else None
        if privacy.is_private and budget is None:
            warnings.warn(f"this private fit spends ε={epsilon:g}, δ={delta:.3g} on these rows, "
                          "and every other fit on them (each candidate and fold of a "
                          "GridSearchCV, cross_val_score, a refit) spends as much again: k fits "
                          "cost k·ε, which no certificate_ shows; pass budget=pf.BudgetFilter("
                          "total_epsilon, total_delta), shared by all of them, to have fits "
                          "refused once it is spent", UnaccountedBudgetWarning, stacklevel=2)
        can_spend = getattr(budget, "can_spend", None)
        if callable(can_spend) and not can_spend(epsilon, delta):
            remaining = getattr(budget, "remaining", None)
            raise BudgetExceededError(
                "budget", budget, f"this fit needs ε={epsilon:g}, δ={delta:.3g} and the shared "
                f"budget has {remaining} (ε, δ) left; nothing was spent and no noise was drawn "
                "(earlier fits on these rows — e.g. a GridSearchCV's candidates and folds — "
                "used the rest)")
        result = problem.solve(privacy, backend=self.backend, seed=self.seed, progress=False,
                               alpha=float(self.alpha), budget=budget,
                               holdout=float(self.holdout),
                               holdout_on_violation=self.holdout_on_violation,
                               holdout_certify=self.holdout_certify, _warn_status=False,
                               **(self.backend_options or {}))
        # the status warning points at the caller's fit (the solve's own would point here,
        # and Python's default filter would show it once per process)
        from privfair.planning.planner import warn_status

        warn_status(result, stacklevel=2)
        if result.info.get("note") and "constant rule" in result.info["note"]:
            # a constant classifier scores the base rate: say so where a user looks, not only in
            # result_.info (cross-validation would otherwise average it in silently)
            warnings.warn(f"privfair: {result.info['note']}", ConstantRuleWarning, stacklevel=2)
        self.problem_ = problem
        self.result_ = result
        self.certificate_ = result.certificate
        self.backend_ = result.backend
        self.status_ = result.status
        return self

    def _check_multiclass(self, classes):
        """Refuse, before anything is released, what has no multi-class form: a positive class
        and the decision sets other than the softmax rule (cells and thresholds rank one binary
        score)."""
        shown = classes.tolist()
        if self.pos_label is not None:
            raise InvalidInputError("pos_label", self.pos_label, f"y has {len(shown)} classes "
                                    f"{shown}, which have no positive class (the rates are "
                                    "P(ŷ = k | group, y = j) for every pair of labels): drop "
                                    "pos_label")
        if self.decision_set not in ("auto", "linear"):
            raise InvalidInputError(
                "decision_set", self.decision_set, "Only binary classification is supported "
                f"by the {self.decision_set} rules (they rank one binary score), and y has "
                f"{len(shown)} classes {shown}: pass decision_set='linear' (or 'auto'), a "
                "multi-class linear rule (pf.SoftmaxClassifier) trained by lagrangian_sgda")

    def _decision_set(self, fallback, n_groups):
        """The decision set a fit uses: ``decision_set``, with ``"auto"`` resolved.

        ``"auto"``: the cells rules under ``protect="sensitive"`` with two groups (their public
        score reads X and y, which that relation leaves public), else a linear rule (the
        ``lagrangian_sgda`` backend: whole-row DP, any number of groups).  Without sensitive
        features (no constraint) the unconstrained fit is over thresholds of the score where the
        score is public (``protect="sensitive"``, or a ``public_score``), else a private linear
        rule."""
        if fallback:
            public = self.protect == "sensitive" or self.public_score is not None
            return "thresholds" if public and self.classes_.size == 2 else "linear"
        if self.decision_set != "auto":
            return self.decision_set
        binary = self.classes_.size == 2
        return "cells" if self.protect == "sensitive" and n_groups == 2 and binary else "linear"

    # ------------------------------------------------------------------ predict
    def _expected(self, X, sensitive_features=None):
        check_is_fitted(self, "result_")
        X = _validate_data(self, X, reset=False, dtype=np.float64)
        return np.clip(self.result_.predict_proba(X, _sensitive(sensitive_features)), 0.0, 1.0)

    def predict_proba(self, X, sensitive_features=None):
        """``[P(ŷ = classes_[0]), P(ŷ = classes_[1]), …]`` of the randomized classifier, (n, K).

        ``sensitive_features`` (as given to ``fit``) is read by ``decision_set=
        "group_thresholds"`` only, whose rule decides with the group."""
        p = self._expected(X, sensitive_features)
        if p.ndim == 2:             # multi-class: (n, K), already in the order of classes_
            return p
        out = np.column_stack([1.0 - p, p])
        return out if self._positive() == 1 else out[:, ::-1]

    def _positive(self) -> int:
        return getattr(self, "_pos_index", 1)       # (an estimator pickled before pos_label)

    def predict(self, X, random_state=None, randomized=True, sensitive_features=None):
        """Predictions drawn from the randomized classifier (what its fairness guarantee
        speaks of).

        Parameters
        ----------
        X : array-like of shape (n, d)
        sensitive_features : array-like of length n, optional
            The rows' sensitive features, as given to ``fit``: needed by
            ``decision_set="group_thresholds"`` (its rule reads the group), ignored otherwise.
        random_state : None, int or numpy.random.Generator
            Key of the per-row pseudo-random coins (:meth:`privfair.Result.predict`): a row
            gets the positive class when its coin is below its expected prediction.  None:
            ``seed`` when set (reproducible), else the fitted result's own key — either way the
            same row gets the same prediction in every call and batch.
        randomized : bool, default True
            False: ``pos_label_`` where the expected prediction is ≥ 1/2.  **This voids the
            fairness guarantee** (the thresholded rule can violate the constraint by far).
        """
        check_is_fitted(self, "result_")
        X = _validate_data(self, X, reset=False, dtype=np.float64)
        if random_state is None and self.seed is not None:
            random_state = self.seed
        codes = self.result_.predict_codes(X, _sensitive(sensitive_features),
                                           random_state=random_state, randomized=randomized)
        if self.classes_.size > 2:                  # code k = classes_[k]
            return self.classes_[codes]
        ip = self._positive()
        pair = self.classes_[[1 - ip, ip]]          # code 0 = negative, 1 = positive
        return pair[codes]

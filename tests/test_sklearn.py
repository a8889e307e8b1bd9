"""privfair.sklearn.PrivateFairClassifier: scikit-learn's estimator checks, fair private fits with
sensitive features, pandas inputs, typed validation errors."""

import pickle
import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="scikit-learn is a dev extra")

from sklearn.base import clone  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import privfair as pf  # noqa: E402
from privfair.errors import (BudgetExceededError, DataError,  # noqa: E402
                             InvalidInputError, InvalidPrivacyError)
from privfair.sklearn import (NoSensitiveFeaturesWarning, PrivateFairClassifier,  # noqa: E402
                              UnaccountedBudgetWarning)


class RowSum:
    """A public score: picklable, and with a stable repr (pytest-xdist ids must match)."""

    def __call__(self, X):
        return np.asarray(X, dtype=float).sum(axis=1)

    def __repr__(self):
        return "RowSum()"


row_sum = RowSum()


# ------------------------------------------------------------------ scikit-learn's checks
# The checks call fit(X, y) without sensitive_features: the documented fallback (an
# unconstrained threshold fit, non-private under protect="sensitive").  The second instance runs
# the same checks through a private solve (protect="row", a public score, ε = 1); the checks vary
# the labels, so it cannot declare classes=[...] and warns that they were read from y.  The third
# is the defaults: protect="row" without a public score, a private linear rule (lagrangian_sgda).
# The expected failures: fit refuses non-uniform sample weights (InvalidInputError naming
# sample_weight: the sensitivity assumes unit weights), and these three checks fit with them
# (integer weights ≡ repeated rows; a weight of 10 on one row; 0/1 weights leaving one class).
_REFUSED = "non-uniform sample_weight is refused: the privacy proofs assume unit weights"


# The default instance (row DP, a private linear rule) releases a randomized classifier: a
# mixture of checkpoints.  Its predict draws from the mixture (what the guarantees speak of),
# so it differs from argmax(predict_proba) on rows where the checkpoints disagree, which
# check_classifiers_train asserts never happens (fairlearn's randomized reductions share this).
_RANDOMIZED = ("predict draws from the randomized rule, so it equals argmax(predict_proba) only "
               "where the mixture's rules agree")


def expected_failures(estimator):
    out = {name: _REFUSED for name in ("check_sample_weight_equivalence_on_dense_data",
                                       "check_sample_weights_not_overwritten",
                                       "check_classifiers_one_label_sample_weights")}
    if estimator.public_score is None:
        # (protect="sensitive": the checks' multi-class data is fitted by the softmax rule, a
        # mixture of checkpoints too, even where nothing is private)
        out["check_classifiers_train"] = _RANDOMIZED
    return out


@pytest.mark.filterwarnings("ignore::privfair.sklearn.NoSensitiveFeaturesWarning")
@pytest.mark.filterwarnings("ignore::privfair.sklearn.UndeclaredClassesWarning")
@pytest.mark.filterwarnings("ignore::privfair.sklearn.UnaccountedBudgetWarning")
@parametrize_with_checks([
    PrivateFairClassifier(seed=0, protect="sensitive"),
    PrivateFairClassifier(protect="row", decision_set="thresholds", public_score=row_sum,
                          backend="exponential", seed=0),
    PrivateFairClassifier(seed=0),      # the defaults: row DP, a private linear rule
], expected_failed_checks=expected_failures)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# ------------------------------------------------------------------ data
def synthetic(n=1500, seed=0, groups=("F", "M"), labels=(0, 1)):
    rng = np.random.default_rng(seed)
    a = rng.choice(list(groups), n)
    X = rng.normal(size=(n, 4))
    shift = 0.6 * (a == groups[-1])
    y = (X[:, 0] + 0.5 * X[:, 1] + shift + 0.7 * rng.normal(size=n) > 0.3).astype(int)
    X[:, 3] += 1.5 * shift                       # a proxy of the group among the features
    return X, np.asarray(labels)[y], a


@pytest.fixture(scope="module")
def data():
    return synthetic()


# ------------------------------------------------------------------ fits with sensitive features
@pytest.mark.parametrize("decision_set,constraint", [
    ("cells", "equalized_odds"), ("cells", "demographic_parity"),
    ("thresholds", "equalized_odds"), ("thresholds", None),
])
def test_private_fair_fit(data, decision_set, constraint):
    X, y, a = data
    clf = PrivateFairClassifier(groups=["F", "M"], decision_set=decision_set,
                                constraint=constraint, epsilon=2.0, seed=0, protect="sensitive")
    assert clf.fit(X, y, sensitive_features=a) is clf
    proba = clf.predict_proba(X)
    assert proba.shape == (len(X), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert ((proba >= 0) & (proba <= 1)).all()
    pred = clf.predict(X)
    assert set(pred) <= set(clf.classes_)
    # predict draws from the randomized rule (#18 item 4): certain rows follow their
    # probability, and a row's draw does not depend on the call or the batch
    sure = (proba[:, 1] == 0) | (proba[:, 1] == 1)
    np.testing.assert_array_equal(pred[sure], clf.classes_[proba[sure, 1].astype(int)])
    np.testing.assert_array_equal(clf.predict(X[::-1])[::-1], pred)
    np.testing.assert_array_equal(clf.predict(X, randomized=False),
                                  clf.classes_[(proba[:, 1] >= 0.5).astype(int)])
    assert 0.0 <= clf.score(X, y) <= 1.0
    assert clf.certificate_.is_private and clf.certificate_.epsilon <= 2.0 * (1 + 1e-9)
    assert clf.certificate_.delta <= 1.0 / len(X) ** 2 * (1 + 1e-9)
    assert clf.groups_ == ["F", "M"] and clf.n_features_in_ == 4
    assert isinstance(clf.result_, pf.Result) and clf.backend_ == clf.result_.backend
    if decision_set == "cells":
        assert clf.backend_ == "cells"
    if constraint is not None:
        assert len(clf.problem_.constraints) == 1


def test_string_labels_and_positive_class(data):
    X, y, a = data
    labels = np.where(y == 1, "yes", "no")
    clf = PrivateFairClassifier(groups=["F", "M"], decision_set="thresholds",
                                backend="exponential", seed=0, protect="sensitive")
    clf.fit(X, labels, sensitive_features=a)
    assert list(clf.classes_) == ["no", "yes"]
    p = clf.predict_proba(X)[:, 1]
    np.testing.assert_array_equal(clf.predict(X, randomized=False) == "yes", p >= 0.5)


def test_integer_groups_stay_integers(data):
    # issue #20: groups [0, 1] came back as ['0', '1']
    X, y, a = data
    a01 = (a == "M").astype(int)
    clf = PrivateFairClassifier(groups=[0, 1], decision_set="thresholds", backend="exponential",
                                constraint="demographic_parity", seed=0, protect="sensitive")
    assert clf.fit(X, y, sensitive_features=a01).groups_ == [0, 1]


def test_seed_makes_fits_reproducible(data):
    X, y, a = data
    kw = dict(groups=["F", "M"], decision_set="cells", seed=3, protect="sensitive")
    p1 = PrivateFairClassifier(**kw).fit(X, y, sensitive_features=a).predict_proba(X)
    p2 = PrivateFairClassifier(**kw).fit(X, y, sensitive_features=a).predict_proba(X)
    np.testing.assert_array_equal(p1, p2)


def test_non_private_reference_and_row_privacy(data):
    X, y, a = data
    ref = PrivateFairClassifier(decision_set="thresholds", epsilon=float("inf"),
                                backend="exponential", protect="sensitive").fit(X, y, sensitive_features=a)
    assert not ref.certificate_.is_private and ref.groups_ == ["F", "M"]   # ε = ∞: inferred
    row = PrivateFairClassifier(groups=["F", "M"], classes=[0, 1], decision_set="thresholds",
                                protect="row", public_score=row_sum, backend="exponential",
                                seed=0).fit(X, y, sensitive_features=a)
    assert row.certificate_.relation == "row"


def test_three_groups_thresholds_constrain_every_pair():
    X, y, a = synthetic(n=900, groups=("a", "b", "c"))
    clf = PrivateFairClassifier(groups=["a", "b", "c"], decision_set="thresholds",
                                constraint="demographic_parity", backend="exponential",
                                seed=0, protect="sensitive").fit(X, y, sensitive_features=a)
    assert clf.groups_ == ["a", "b", "c"]
    assert str(clf.problem_.g[0]).count("selection") == 6        # 3 pairs × 2 terms
    with pytest.raises(InvalidInputError, match="decision_set='linear'"):   # cells: 2 groups
        PrivateFairClassifier(groups=["a", "b", "c"], seed=0, protect="sensitive",
                              decision_set="cells").fit(X, y, sensitive_features=a)


# ------------------------------------------------------------------ pandas
def test_pandas_inputs_keep_column_names(data):
    pd = pytest.importorskip("pandas")
    X, y, a = data
    cols = ["age", "hours", "score", "zip_income"]
    Xdf = pd.DataFrame(X, columns=cols)
    clf = PrivateFairClassifier(groups=["F", "M"], decision_set="thresholds",
                                backend="exponential", seed=0, protect="sensitive")
    clf.fit(Xdf, pd.Series(y, name="label"), sensitive_features=pd.Series(a, name="sex"))
    assert list(clf.feature_names_in_) == cols
    assert clf.problem_.rates.data.feature_names == cols
    assert clf.problem_.rates.data.sensitive_names == ["sex"]
    with pytest.warns(UserWarning, match="valid feature names"):
        np.testing.assert_array_equal(clf.predict(Xdf), clf.predict(Xdf.to_numpy()))
    with pytest.raises(ValueError, match="feature names"):
        clf.predict(Xdf[cols[::-1]])                           # columns in another order


def test_pandas_dataframe_of_sensitive_features_is_intersectional(data):
    pd = pytest.importorskip("pandas")
    X, y, a = data
    race = np.where(np.arange(len(a)) % 3 == 0, "B", "W")
    sf = pd.DataFrame({"sex": a, "race": race})
    clf = PrivateFairClassifier(groups=["F|B", "F|W", "M|B", "M|W"], decision_set="thresholds",
                                constraint="demographic_parity", backend="exponential",
                                seed=0, protect="sensitive").fit(X, y, sensitive_features=sf)
    assert clf.groups_ == ["F|B", "F|W", "M|B", "M|W"]


def test_pipeline_routes_sensitive_features(data):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y, a = data
    pipe = make_pipeline(StandardScaler(), PrivateFairClassifier(groups=["F", "M"], seed=0, protect="sensitive"))
    pipe.fit(X, y, privatefairclassifier__sensitive_features=a)
    assert pipe.predict_proba(X).shape == (len(X), 2)
    assert pipe[-1].certificate_.is_private


# ------------------------------------------------------------------ sklearn conventions
def test_get_params_set_params_clone_and_pickle(data):
    X, y, a = data
    clf = PrivateFairClassifier(constraint="demographic_parity", level=0.05, epsilon=0.5, seed=1,
                                groups=["F", "M"], protect="sensitive")
    params = clf.get_params()
    assert params["constraint"] == "demographic_parity" and params["level"] == 0.05
    assert params["groups"] == ["F", "M"] and params["classes"] is None
    assert params["epsilon"] == 0.5 and params["decision_set"] == "auto"
    assert clf.set_params(level=0.1) is clf and clf.level == 0.1
    twin = clone(clf)
    assert twin.get_params() == clf.get_params() and not hasattr(twin, "result_")
    clf.fit(X, y, sensitive_features=a)
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(restored.predict_proba(X), clf.predict_proba(X))


def test_missing_sensitive_features_warns_and_spends_nothing(data):
    X, y, _ = data
    with pytest.warns(NoSensitiveFeaturesWarning, match="sensitive_features"):
        clf = PrivateFairClassifier(seed=0, protect="sensitive").fit(X, y)
    assert clf.groups_ == ["all"] and clf.problem_.constraints == []
    assert not clf.certificate_.is_private


# ------------------------------------------------------------------ typed errors in fit
@pytest.mark.parametrize("params,error,field", [
    ({"constraint": "calibration"}, InvalidInputError, "constraint"),
    ({"level": -0.1}, InvalidInputError, "level"),
    ({"epsilon": 0}, InvalidPrivacyError, "epsilon"),
    ({"epsilon": "1"}, InvalidPrivacyError, "epsilon"),
    ({"delta": 1.0}, InvalidPrivacyError, "delta"),
    ({"protect": "everything"}, InvalidInputError, "protect"),
    ({"decision_set": "trees"}, InvalidInputError, "decision_set"),
    ({"score_bins": 0}, InvalidInputError, "score_bins"),
    ({"n_thresholds": 1}, InvalidInputError, "n_thresholds"),
    ({"public_score": "logit"}, InvalidInputError, "public_score"),
    ({"group_mass_bound": 0.0}, InvalidInputError, "group_mass_bound"),
    ({"alpha": -1}, InvalidInputError, "alpha"),
    ({"seed": -1}, InvalidInputError, "seed"),
    ({"backend": "nope"}, InvalidInputError, "backend"),
    ({"decision_set": "thresholds", "protect": "row"}, InvalidInputError, "public_score"),
    ({"groups": "FM"}, InvalidInputError, "groups"),
    ({"groups": ["F"]}, InvalidInputError, "groups"),
    ({"groups": ["F", "F"]}, InvalidInputError, "groups"),
    ({"groups": None}, InvalidInputError, "groups"),              # private fit: groups needed
    ({"classes": [0, 1, 1]}, InvalidInputError, "classes"),
    ({"classes": [0]}, InvalidInputError, "classes"),
    ({"classes": 1}, InvalidInputError, "classes"),
])
def test_bad_hyper_parameters_raise_typed_errors_in_fit(data, params, error, field):
    X, y, a = data
    clf = PrivateFairClassifier(**{"groups": ["F", "M"], "protect": "sensitive", **params})   # __init__ only stores
    with pytest.raises(error, match=field):
        clf.fit(X, y, sensitive_features=a)
    assert not hasattr(clf, "result_")


def test_bad_data_raises_typed_errors(data):
    X, y, a = data
    fm = PrivateFairClassifier(groups=["F", "M"], protect="sensitive")
    with pytest.raises(DataError, match="sensitive_features") as e:       # one row short
        fm.fit(X, y, sensitive_features=a[:-1])
    assert "one sensitive value per row" in e.value.fix and "groups" not in e.value.fix
    with pytest.raises(DataError, match="sensitive_features") as e:       # outside the schema
        fm.fit(X, y, sensitive_features=np.where(a == "M", "X", a))
    assert "add it to groups" in e.value.fix and "group_names" not in e.value.fix
    with pytest.raises(DataError, match="two groups"):      # inferred (ε = ∞): one group found
        PrivateFairClassifier(epsilon=float("inf"), protect="sensitive").fit(X, y, sensitive_features=np.full(len(a), "F"))
    with pytest.raises(ValueError, match="Only binary"):    # three labels, a binary rule
        PrivateFairClassifier(groups=["F", "M"], protect="sensitive", decision_set="cells").fit(
            X, np.arange(len(X)) % 3, sensitive_features=a)
    with pytest.raises(DataError, match="classes"):         # a label outside declared classes
        PrivateFairClassifier(groups=["F", "M"], classes=[0, 1], protect="sensitive").fit(
            X, np.arange(len(X)) % 3, sensitive_features=a)


def test_lazy_attribute_on_the_package():
    assert pf.sklearn.PrivateFairClassifier is PrivateFairClassifier


def test_a_constant_private_fit_warns():
    # few rows at a small ε: the cells backend's noise margin leaves only a constant rule, which
    # scores the base rate — fit says so instead of leaving it in result_.info
    from privfair.sklearn import ConstantRuleWarning

    X, y, a = synthetic(n=1500, seed=3)
    with pytest.warns(ConstantRuleWarning, match="constant rule"):
        clf = PrivateFairClassifier(groups=["F", "M"], epsilon=0.2, level=0.01, seed=0, protect="sensitive").fit(
            X, y, sensitive_features=a)
    assert np.ptp(clf.predict_proba(X)[:, 1]) < 1e-9


# ------------------------------------------------------------------ budget (#20)
def _fast(**kw):
    return PrivateFairClassifier(groups=["F", "M"], decision_set="thresholds",
                                 backend="exponential", constraint="demographic_parity",
                                 epsilon=1.0, seed=0, **{"protect": "sensitive", **kw})


def test_grid_search_with_a_shared_budget_is_refused_once_spent(data):
    # issue #20: a GridSearchCV over 18 fits spent ε = 1 nineteen times on the same rows
    from sklearn.model_selection import GridSearchCV

    X, y, a = data
    budget = pf.BudgetFilter(2.0, 1e-3)
    search = GridSearchCV(_fast(budget=budget), {"level": [0.02, 0.05, 0.1]}, cv=3,
                          error_score="raise")
    with pytest.raises(BudgetExceededError, match="nothing was spent"):
        search.fit(X, y, sensitive_features=a)
    assert budget.spent[0] == pytest.approx(2.0) and len(budget.history) == 2  # third refused
    # without error_score="raise" the failed fits are scored NaN, and the refit is refused
    budget = pf.BudgetFilter(2.0, 1e-3)
    search = GridSearchCV(_fast(budget=budget), {"level": [0.02, 0.05]}, cv=3)
    with pytest.warns(UserWarning), pytest.raises(BudgetExceededError):
        search.fit(X, y, sensitive_features=a)
    assert budget.spent[0] == pytest.approx(2.0)


def test_the_budget_is_shared_by_clones_and_copies_and_detached_by_pickling(data):
    import copy

    X, y, a = data
    budget = pf.BudgetFilter(5.0, 1e-3)
    est = _fast(budget=budget)
    assert clone(est).budget is budget and copy.deepcopy(est).budget is budget
    assert clone(est).get_params()["level"] == est.level
    est.fit(X, y, sensitive_features=a)
    assert budget.spent[0] == pytest.approx(1.0) and copy.deepcopy(est).budget is budget
    twin = pickle.loads(pickle.dumps(est))        # e.g. sent to a worker process
    np.testing.assert_array_equal(twin.predict_proba(X), est.predict_proba(X))
    with pytest.raises(InvalidInputError, match="budget") as e:
        twin.fit(X, y, sensitive_features=a)
    assert "pickled" in e.value.fix and budget.spent[0] == pytest.approx(1.0)
    with pytest.raises(InvalidInputError, match="budget"):
        _fast(budget=2.0).fit(X, y, sensitive_features=a)


def test_a_private_fit_without_a_budget_warns_that_it_spends_afresh(data):
    X, y, a = data
    with pytest.warns(UnaccountedBudgetWarning, match="budget=pf.BudgetFilter"):
        _fast().fit(X, y, sensitive_features=a)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", UnaccountedBudgetWarning)
        _fast(budget=pf.BudgetFilter(1.0, 1e-3)).fit(X, y, sensitive_features=a)
        PrivateFairClassifier(epsilon=float("inf"), decision_set="thresholds",
                              backend="exponential", protect="sensitive").fit(X, y, sensitive_features=a)


def test_sample_weight_is_honoured_only_when_uniform(data):
    X, y, a = data
    budget = pf.BudgetFilter(10.0, 1e-3)
    plain = _fast(budget=budget).fit(X, y, sensitive_features=a)
    uniform = _fast(budget=budget).fit(X, y, sensitive_features=a,
                                       sample_weight=np.full(len(y), 3.0))
    np.testing.assert_array_equal(uniform.predict_proba(X), plain.predict_proba(X))
    spent = budget.spent
    w = np.ones(len(y))
    w[0] = 2.0
    for bad, what in ((w, "unit weights"), (np.zeros(len(y)), "zero"), (w[:5], "one weight")):
        with pytest.raises(InvalidInputError, match="sample_weight") as e:
            _fast(budget=budget).fit(X, y, sensitive_features=a, sample_weight=bad)
        assert what in e.value.fix
    assert budget.spent == spent                            # refused before anything is spent


# ------------------------------------------------------------------ pos_label (#20), status (#18)
def test_pos_label_maps_to_the_datasets_positive_class(data):
    X, y, a = data
    labels = np.where(y == 1, "yes", "no")
    kw = dict(groups=["F", "M"], decision_set="thresholds", backend="exponential",
              constraint="demographic_parity", seed=0, classes=["no", "yes"], protect="sensitive")
    for pos in ("yes", "no"):
        clf = PrivateFairClassifier(pos_label=pos, **kw).fit(X, labels, sensitive_features=a)
        assert clf.pos_label_ == pos and list(clf.classes_) == ["no", "yes"]
        assert clf.problem_.rates.label_values[1] == pos          # the rates count pos
        proba = clf.predict_proba(X)
        p_pos = clf.result_.predict_proba(X)
        np.testing.assert_allclose(proba[:, list(clf.classes_).index(pos)], p_pos)
        np.testing.assert_array_equal(clf.predict(X, randomized=False) == pos, p_pos >= 0.5)
    with pytest.raises(InvalidInputError, match="pos_label"):
        PrivateFairClassifier(pos_label="maybe", **kw).fit(X, labels, sensitive_features=a)


def test_pos_label_with_classes_read_from_y_and_the_cells_rules(data):
    """pos_label picks the positive class among np.unique(y) too (classes_ keeps sorted order,
    as scikit-learn's), for the default cells rules as for thresholds."""
    X, y, a = data
    labels = np.where(y == 1, "approved", "denied")          # sorted: approved is classes_[0]
    for pos in ("approved", "denied"):
        clf = PrivateFairClassifier(groups=["F", "M"], epsilon=float("inf"), seed=0,
                                    pos_label=pos, protect="sensitive").fit(X, labels, sensitive_features=a)
        assert list(clf.classes_) == ["approved", "denied"] and clf.pos_label_ == pos
        assert clf.result_.labels == [l for l in clf.classes_ if l != pos] + [pos]
        np.testing.assert_allclose(clf.predict_proba(X)[:, list(clf.classes_).index(pos)],
                                   np.clip(clf.result_.predict_proba(X), 0, 1))
        assert set(clf.predict(X)) <= {"approved", "denied"} and clf.score(X, labels) > 0.6


def test_fit_sets_status_and_warns_at_the_callers_line(data):
    from privfair.errors import ResultStatusWarning

    X, y, a = data
    clf = _fast(holdout=0.2)
    with pytest.warns(ResultStatusWarning) as record:
        clf.fit(X, y, sensitive_features=a)
    status = [w for w in record if issubclass(w.category, ResultStatusWarning)]
    assert status and all(w.filename == __file__ for w in status)
    assert clf.status_ == clf.result_.status != "certified"
    assert clf.result_.holdout.n_held_out == 300                 # 20% of 1,500 rows
    with pytest.raises(InvalidInputError, match="holdout"):
        _fast(holdout=1.5).fit(X, y, sensitive_features=a)


def test_holdout_on_violation_reaches_the_solve_and_is_checked(data, monkeypatch):
    """The estimator passes ``holdout_on_violation`` to the solve (a clone keeps it), and a bad
    value is refused before anything is fitted."""
    import privfair.analysis.problem as problem_module

    X, y, a = data
    seen = []
    original = problem_module.Problem.solve

    def spy(self, *args, **kw):
        seen.append(kw.get("holdout_on_violation"))
        return original(self, *args, **kw)

    monkeypatch.setattr(problem_module.Problem, "solve", spy)
    clf = clone(_fast(holdout_on_violation="warn"))
    assert clf.get_params()["holdout_on_violation"] == "warn"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y, sensitive_features=a)
    assert seen == ["warn"]
    with pytest.raises(InvalidInputError, match="holdout_on_violation"):
        _fast(holdout_on_violation="ignore").fit(X, y, sensitive_features=a)
    assert seen == ["warn"]


# ------------------------------------------------------------------ group thresholds (#18)
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("protect", ["row", "sensitive"])
def test_group_thresholds_fit_reads_the_group_at_prediction(protect):
    """decision_set="group_thresholds": the postprocessing backend (a private linear score under
    row), randomized thresholds per group; predict and predict_proba need sensitive_features
    and use them (swapping every row's group changes the predictions)."""
    X, y, a = synthetic(n=3000, seed=3)
    clf = PrivateFairClassifier(groups=["F", "M"], classes=[0, 1], protect=protect,
                                decision_set="group_thresholds", constraint="equalized_odds",
                                level=0.05, delta=1e-5, seed=0,
                                # 600 held-out rows cannot check a 0.05 gap: keep the rule
                                holdout_on_violation="warn")
    clf.fit(X, y, sensitive_features=a)
    assert clf.backend_ == "postprocessing" and not clf.status_.startswith("fallback")
    cert = clf.certificate_
    assert cert.epsilon <= 1.0 + 1e-9 and cert.delta <= 1e-5
    kinds = {e.mechanism for e in cert.releases}
    assert "laplace" in kinds and (len(kinds) == 2) == (protect == "row")  # + the base's steps
    proba = clf.predict_proba(X, sensitive_features=a)
    assert proba.shape == (len(y), 2) and np.allclose(proba.sum(axis=1), 1.0)
    swapped = np.where(a == "F", "M", "F")
    assert not np.allclose(proba, clf.predict_proba(X, sensitive_features=swapped))
    pred = clf.predict(X, sensitive_features=a)
    assert set(np.unique(pred)) <= {0, 1} and np.array_equal(
        pred, clf.predict(X, sensitive_features=a))            # the same coins every call
    with pytest.raises(InvalidInputError, match="sensitive"):
        clf.predict(X)
    import pandas as pd
    assert np.allclose(clf.predict_proba(X, sensitive_features=pd.Series(a)), proba)


# ------------------------------------------------------------------ the default unit (#18)
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_defaults_are_whole_row_dp_with_a_linear_rule(data):
    """The default unit is ``protect="row"`` (standard DP, what ``epsilon`` means in
    diffprivlib) and ``decision_set="auto"`` resolves by unit: a linear rule trained by
    ``lagrangian_sgda`` under "row", the cells rules under "sensitive" with two groups."""
    X, y, a = data
    clf = PrivateFairClassifier(groups=["F", "M"], classes=[0, 1], seed=0)
    assert clf.protect == "row" and clf.decision_set == "auto"
    clf.fit(X, y, sensitive_features=a)
    assert clf.backend_ == "lagrangian_sgda" and clf.certificate_.relation == "row"
    assert isinstance(clf.problem_.rates.decisions, pf.LinearClassifier)
    assert clf.certificate_.is_private and clf.certificate_.epsilon <= 1.0 + 1e-9
    sens = PrivateFairClassifier(groups=["F", "M"], seed=0, protect="sensitive")
    assert sens.fit(X, y, sensitive_features=a).backend_ == "cells"
    assert sens.certificate_.relation == "sensitive"
    # cells read a score fitted on X and y: refused under row, naming the way out, before any draw
    with pytest.raises(InvalidInputError, match="decision_set='linear'"):
        PrivateFairClassifier(groups=["F", "M"], classes=[0, 1], decision_set="cells",
                              seed=0).fit(X, y, sensitive_features=a)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_three_groups_under_sensitive_auto_is_linear():
    """The cells rules take two groups; with three, auto's decision set is a linear rule, which
    under protect="sensitive" with binary labels proxy_reductions fits (any number of groups)."""
    X, y, a = synthetic(n=900, groups=("a", "b", "c"))
    clf = PrivateFairClassifier(groups=["a", "b", "c"], seed=0, protect="sensitive",
                                constraint="demographic_parity").fit(X, y, sensitive_features=a)
    assert clf.backend_ == "proxy_reductions"
    assert str(clf.problem_.g[0]).count("selection") == 6


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_without_sensitive_features_the_row_default_fits_privately(data):
    """No groups, no constraint: under the row default (and no public score) the unconstrained
    fit is a private linear rule, never a score fitted on the protected X and y."""
    X, y, _ = data
    with pytest.warns(NoSensitiveFeaturesWarning):
        clf = PrivateFairClassifier(classes=[0, 1], seed=0).fit(X, y)
    assert clf.backend_ == "lagrangian_sgda" and clf.certificate_.is_private
    assert clf.certificate_.relation == "row" and clf.problem_.constraints == []

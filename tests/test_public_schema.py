"""The schema is public (issue #16, item 6): the groups and labels are declared, never read from
the private data.

* a :class:`pf.Dataset` may declare groups with no rows, and every solve on it succeeds or is
  refused exactly as on its neighbour with one row in that group (the refusal is decided from
  public quantities);
* a private solve refuses a dataset whose groups (or, under ``protect="row"``, labels) were
  read from the data, with a typed error naming the field, before anything is spent;
* ``PrivateFairClassifier`` takes ``groups`` (and ``classes``) as parameters: a private fit
  without ``groups`` is refused naming it, and with them the fit behaves the same on neighbours
  where a rare group value appears once or not at all.
"""

from __future__ import annotations

import importlib.util
import math
import warnings

import numpy as np
import pytest

import privfair as pf
from privfair.backends import BACKENDS
from privfair.errors import BackendRefusedError, InvalidInputError, PrivfairError


def _data(n_rare, groups=("a", "b", "c"), n=600, seed=0, **kw):
    """Rows in every group but the last, which holds the first ``n_rare`` rows (0 or 1)."""
    rng = np.random.default_rng(seed)
    a = rng.choice(list(groups[:-1]), n).astype(object)
    a[:n_rare] = groups[-1]
    y = (rng.random(n) < 0.4 + 0.2 * (a == groups[0])).astype(int)
    X = np.column_stack([y + rng.normal(size=n), rng.normal(size=n)]) / 3
    kw.setdefault("group_names", list(groups))
    return pf.Dataset(X, y, a, labels=[0, 1], **kw)


# ------------------------------------------------------------------ Dataset
def test_a_declared_group_may_have_no_rows():
    d = _data(0)
    assert d.groups == ["a", "b", "c"] and d.n_groups == 3
    assert d.counts()[2].tolist() == [0, 0]
    assert d.groups_declared and d.labels_declared
    # its neighbour with one row in the empty group (the "sensitive" relation)
    nb = d.with_row(0, group="c")
    assert nb.counts()[2].sum() == 1 and nb.sensitive[0] == "c" and nb.groups == d.groups
    assert nb.groups_declared
    # the schema survives take / subsample / split, even when groups empty out
    assert d.take(d.group == 0).groups == d.groups and d.subsample(5, rng=0).groups_declared
    # the statistics of an empty group are those of an empty group, not an error
    r = pf.rates(pf.Thresholds([0.0], score=0), d, group_mass_bound=0.01)
    ell = r.evaluate(0.0)
    assert np.isfinite(ell).all() and ell[r.fpr.index("c")] == 0.0
    q = pf.estimate_group_mass_bound(d, 1.0, rng=0)
    assert set(q) == {(g, lab) for g in d.groups for lab in (0, 1)}
    assert all(0 < v <= 1 for v in q.values())


def test_empty_group_raw_values_fit_the_column():
    d = pf.Dataset(np.zeros((3, 1)), [0, 1, 0], np.array([1, 2, 1]), group_names=["1", "2", "3"])
    nb = d.with_row(0, group="3")
    assert nb.sensitive.tolist() == [3, 2, 1] and nb.group.tolist() == [2, 1, 0]
    d = pf.Dataset(np.zeros((2, 1)), [0, 1], np.array(["F", "M"]), group_names=["F", "M", "Other"])
    assert d.with_row(1, group="Other").sensitive.tolist() == ["F", "Other"]


def _problems(d):
    G, out = d.groups, {}
    for name, q in (("thresholds_private_mass", None), ("thresholds_public_mass", 0.01)):
        r = pf.rates(pf.Thresholds(np.linspace(-1, 1, 21), score=0), d, group_mass_bound=q)
        gaps = [pf.abs(r.fpr[g] - r.fpr[h]) for i, g in enumerate(G) for h in G[i + 1:]]
        out[name] = pf.Problem(pf.minimize(r.error()), [pf.maximum(*gaps) <= 0.1])
    r = pf.rates(pf.LinearClassifier(d.n_features, radius=1.0), d, surrogate="logistic",
                 group_mass_bound=0.01)
    gaps = [pf.abs(r.fpr[g] - r.fpr[h]) for i, g in enumerate(G) for h in G[i + 1:]]
    out["linear_lse"] = pf.Problem(pf.minimize(r.error()), [pf.lse(*gaps, eta=50) <= 0.05])
    r = pf.rates(pf.LinearClassifier(d.n_features, radius=1.0), d, group_mass_bound=0.01)
    gaps = [pf.abs(r.selection[g] - r.selection[h]) for i, g in enumerate(G) for h in G[i + 1:]]
    out["linear_hard"] = pf.Problem(pf.minimize(r.error()), [pf.maximum(*gaps) <= 0.1])
    r = pf.rates(pf.Thresholds(np.linspace(-1, 1, 21), score=0), d, group_mass_bound=0.01)
    sq = [pf.square(r.selection[g] - r.selection[h]) for i, g in enumerate(G) for h in G[i + 1:]]
    out["thresholds_penalty"] = pf.Problem(pf.minimize(r.error() + 2.0 * pf.sum(pf.hstack(sq))))
    r = pf.rates(pf.PostProcessed(lambda X: 1.0 / (1.0 + np.exp(-3.0 * X[:, 0]))), d)
    gaps = [pf.abs(r.fpr[g] - r.fpr[h]) for i, g in enumerate(G) for h in G[i + 1:]]
    out["postprocessed"] = pf.Problem(pf.minimize(r.error()), [pf.maximum(*gaps) <= 0.05])
    sparse = pf.SparseLinear(d.n_features, norm=pf.norms.l1(d.n_features), radius=2.0, l2=1e-3,
                             intercept_bound=1.0)
    r = pf.rates(sparse, d, surrogate="logistic", group_mass_bound=0.05)
    gaps = [pf.abs(r.selection[g] - r.selection[h]) for i, g in enumerate(G) for h in G[i + 1:]]
    out["sparse_linear"] = pf.Problem(pf.minimize(r.error()), [pf.maximum(*gaps) <= 0.1])
    out["sparse_unconstrained"] = pf.Problem(pf.minimize(r.error()))
    if len(G) == 2:
        r = pf.rates(pf.ProxyCells(6, 3), d)
        out["cells"] = pf.Problem(pf.minimize(r.error()),
                                  [pf.abs(r.selection[G[0]] - r.selection[G[1]]) <= 0.05])
    return out


def _outcome(problem, privacy, backend):
    try:
        res = problem.solve(privacy, backend=backend, seed=0, progress=False)
    except PrivfairError as err:
        return type(err).__name__, err.field, str(err)
    return "solved", res.backend, res.certificate.is_private


@pytest.mark.parametrize("groups", [("a", "b"), ("a", "b", "c")], ids=["2 groups", "3 groups"])
@pytest.mark.parametrize("privacy", [pf.DP(1.0, 1e-6, protect="sensitive"), pf.DP(1.0, 1e-6, protect="row"),
                                     pf.DP(math.inf, protect="sensitive")], ids=["sensitive", "row", "inf"])
def test_solves_on_an_empty_group_match_its_neighbour_with_one_row(groups, privacy):
    """Every backend (and "auto") on every problem: the same success, or the same refusal with
    the same message, whether the last declared group is empty or holds one row."""
    empty, one = _problems(_data(0, groups)), _problems(_data(1, groups))
    seen, solved_by = set(), set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in empty:
            for backend in ["auto", *BACKENDS]:
                o0 = _outcome(empty[name], privacy, backend)
                o1 = _outcome(one[name], privacy, backend)
                assert o0 == o1, (name, backend, o0, o1)
                seen.add(o0[0])
                if o0[0] == "solved":
                    solved_by.add(o0[1])
    assert "solved" in seen and "BackendRefusedError" in seen
    if privacy.is_private and privacy.protect == "sensitive" and len(groups) == 2:
        # every backend ran on an empty declared group (sgda needs the optional torch)
        expected = set(BACKENDS) - (set() if importlib.util.find_spec("torch") else {"sgda"})
        assert solved_by == expected


def _inferred(n_rare):
    """Groups read from the data: the rare group "c" exists only when it has a row."""
    return _data(n_rare, group_names=None)


def test_a_private_solve_refuses_groups_read_from_the_data():
    assert _inferred(0).groups == ["a", "b"] and _inferred(1).groups == ["a", "b", "c"]
    assert not _inferred(0).groups_declared
    for privacy in (pf.DP(1.0, 1e-6, protect="sensitive"), pf.DP(1.0, 1e-6, protect="row")):
        refusals = set()
        for n_rare in (0, 1):
            prob = _problems(_inferred(n_rare))["thresholds_public_mass"]
            budget = pf.BudgetFilter(1.0, 1e-6)
            with pytest.raises(InvalidInputError) as e:
                prob.solve(privacy, budget=budget, seed=0, progress=False)
            assert e.value.field == "group_names" and "group_names=[...]" in e.value.fix
            assert budget.spent == (0.0, 0.0)                      # refused before any release
            with pytest.raises(InvalidInputError, match="group_names"):
                prob.plan(privacy)
            refusals.add((type(e.value), e.value.field, e.value.fix))
        assert len(refusals) == 1                                  # the same on both neighbours
    # the non-private reference may read its schema from the data
    res = _problems(_inferred(1))["thresholds_public_mass"].solve(pf.DP(math.inf, protect="sensitive"), progress=False)
    assert not res.certificate.is_private


def test_labels_read_from_y_are_refused_where_y_is_protected():
    rng = np.random.default_rng(0)
    X, a = rng.normal(size=(200, 1)), rng.choice(["F", "M"], 200)
    y = np.where(X[:, 0] + rng.normal(size=200) > 0, "yes", "no")
    d = pf.Dataset(X, y, a, group_names=["F", "M"], pos_label="yes")   # set read from y
    assert d.groups_declared and not d.labels_declared
    assert pf.Dataset(X, (y == "yes").astype(int), a, group_names=["F", "M"]).labels_declared
    d.check_public_schema(pf.DP(1.0, protect="sensitive"))                # protect="sensitive": y is public
    with pytest.raises(InvalidInputError) as e:
        d.check_public_schema(pf.DP(1.0, protect="row"))
    assert e.value.field == "labels" and "labels=[...]" in e.value.fix
    d.check_public_schema(pf.DP(math.inf, protect="row"))
    pf.Dataset(X, y, a, group_names=["F", "M"], labels=["no", "yes"]).check_public_schema(
        pf.DP(1.0, protect="row"))


def test_bundled_datasets_declare_their_schema_from_public_metadata():
    for d in (pf.datasets.load_adult("test"), pf.datasets.load_compas("all"),
              pf.datasets.load_compas("binary")):
        assert d.groups_declared and d.labels_declared
        d.check_public_schema(pf.DP(1.0, 1e-6, protect="row"))


# ------------------------------------------------------------------ PrivateFairClassifier
sk = pytest.importorskip("privfair.sklearn", reason="scikit-learn is a dev extra")


def _xy(n_rare, n=900, seed=0):
    d = _data(n_rare, n=n, seed=seed)
    return d.X, d.y, np.asarray(d.sensitive)


def _fit(n_rare, **params):
    X, y, a = _xy(n_rare)
    clf = sk.PrivateFairClassifier(**{"seed": 0, "protect": "sensitive", **params})
    try:
        clf.fit(X, y, sensitive_features=a)
    except PrivfairError as err:
        return type(err).__name__, err.field, str(err)
    return "fitted", clf.groups_, clf.backend_, clf.problem_.rates.K


@pytest.mark.parametrize("params", [
    dict(groups=["a", "b", "c"], decision_set="thresholds", constraint="demographic_parity"),
    dict(groups=["a", "b", "c"], decision_set="cells"),                  # refused: 3 groups
    dict(groups=["a", "b", "c"], decision_set="thresholds", protect="row", classes=[0, 1],
         public_score=lambda X: X[:, 0]),
], ids=["thresholds", "cells", "row"])
def test_estimator_with_declared_groups_acts_alike_whether_a_rare_value_occurs(params):
    assert set(_xy(0)[2]) == {"a", "b"} and set(_xy(1)[2]) == {"a", "b", "c"}
    assert _fit(0, **params) == _fit(1, **params)


@pytest.mark.filterwarnings("ignore::privfair.sklearn.ConstantRuleWarning")
def test_estimator_cells_fits_two_declared_groups_with_one_empty():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 3))
    y = (X[:, 0] > 0).astype(int)
    for a in (np.full(600, "F", dtype=object), np.r_[["M"], np.full(599, "F")].astype(object)):
        clf = sk.PrivateFairClassifier(groups=["F", "M"], seed=0, protect="sensitive").fit(X, y, sensitive_features=a)
        assert clf.groups_ == ["F", "M"] and clf.backend_ == "cells"


@pytest.mark.parametrize("protect", ["sensitive", "row"])
def test_estimator_without_groups_under_privacy_names_groups(protect):
    X, y, a = _xy(1)
    clf = sk.PrivateFairClassifier(protect=protect, decision_set="thresholds",
                                   public_score=lambda X: X[:, 0], classes=[0, 1])
    with pytest.raises(InvalidInputError) as e:
        clf.fit(X, y, sensitive_features=a)
    assert e.value.field == "groups" and "groups=[" in e.value.fix
    assert not hasattr(clf, "result_") and not hasattr(clf, "groups_")
    # the non-private reference fit may read them from the data
    ref = sk.PrivateFairClassifier(epsilon=float("inf"), decision_set="thresholds",
                                   backend="exponential", protect="sensitive").fit(X, y, sensitive_features=a)
    assert ref.groups_ == ["a", "b", "c"]


def test_estimator_classes_declare_the_positive_class():
    X, y, a = _xy(1)
    labels = np.where(y == 1, "yes", "no")
    kw = dict(groups=["a", "b", "c"], decision_set="thresholds", backend="exponential", seed=0,
              protect="row", public_score=lambda X: X[:, 0])
    with pytest.warns(sk.UndeclaredClassesWarning, match="classes="):
        sk.PrivateFairClassifier(**kw).fit(X, labels, sensitive_features=a)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sk.UndeclaredClassesWarning)
        clf = sk.PrivateFairClassifier(classes=["no", "yes"], **kw).fit(
            X, labels, sensitive_features=a)
        assert list(clf.classes_) == ["no", "yes"]
        # declared classes: a y that shows only one of them is fitted, not refused
        one = sk.PrivateFairClassifier(classes=["no", "yes"], **kw).fit(
            X, np.full(len(y), "no"), sensitive_features=a)
        assert list(one.classes_) == ["no", "yes"]
        assert set(one.predict(X)) <= {"no", "yes"}


# ------------------------------------------------------------------ coarser groups
def test_merged_groups_keep_rows_features_lineage_and_neighbours():
    """Dataset.merge_groups (the held-out check's advice for groups too small to check): the
    same rows, X shared, the groups mapped, declared iff the original's were; a neighbour in
    the original relation stays a neighbour (or becomes identical) after the merge."""
    d = _data(1, groups=("a", "b", "c"))
    m = d.merge_groups({"bc": ["b", "c"]})
    assert m.groups == ["a", "bc"] and m.group_values == ["a", "bc"] and m.groups_declared
    assert np.shares_memory(m.X, d.X) and np.array_equal(m.y, d.y)
    assert m.group.tolist() == [0 if g == 0 else 1 for g in d.group.tolist()]
    assert m.shares_rows_with(d)                    # a score fitted on d is still d's
    # one row's group changing: between merged members it vanishes, else it stays one row
    inside = d.with_row(0, group="b").merge_groups({"bc": ["b", "c"]})
    assert np.array_equal(inside.group, m.group)
    across = d.with_row(0, group="a").merge_groups({"bc": ["b", "c"]})
    assert np.flatnonzero(across.group != m.group).tolist() == [0]
    # a view by index keeps sharing its parent's features
    view = d.take(np.arange(0, 600, 2), copy=False).merge_groups({"bc": ["b", "c"]})
    assert view.n == 300 and np.array_equal(view.X, d.X[::2])
    # groups read from the data stay undeclared: a private solve still refuses them
    undeclared = _data(1, group_names=None).merge_groups({"bc": ["b", "c"]})
    assert not undeclared.groups_declared
    with pytest.raises(InvalidInputError, match="group_names"):
        undeclared.check_public_schema(pf.DP(1.0))


def test_merged_groups_solve_and_bad_merges_are_refused_naming_the_field():
    d = _data(1, groups=("a", "b", "c"))
    m = d.merge_groups({"bc": ["b", "c"]})
    r = pf.rates(pf.LinearClassifier(2), m)
    prob = pf.Problem(pf.minimize(r.error()), [pf.abs(r.selection["a"] - r.selection["bc"])
                                               <= 0.1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = prob.solve(pf.DP(1.0, 1e-6), seed=0, progress=False)
    assert res.certificate.epsilon <= 1.0 + 1e-9
    for bad, field in [({}, "merges"), ({"x": "b"}, "merges['x']"), ({"x": []}, "merges['x']"),
                       ({"x": ["b"], "y": ["b", "c"]}, "merges['y']"), ({"a": ["b"]}, "merges")]:
        with pytest.raises(InvalidInputError) as err:
            d.merge_groups(bad)
        assert err.value.field == field
    with pytest.raises(pf.errors.DataError, match="not a group"):
        d.merge_groups({"x": ["zz"]})

"""The default privacy unit is whole-row DP (``protect="row"``, #18, docs/privacy.md *The default
unit*): pf.DP, the command line and the estimator share it; the methods that only the sensitive
unit allows are refused under it before anything is drawn, saying how to ask for that unit; a
score fitted on the problem's own rows is refused under it (it read what the unit protects)."""

import numpy as np
import pytest

import privfair as pf
from privfair.cli.commands import build_parser
from privfair.errors import BackendRefusedError, InvalidPrivacyError


def _data(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    a = rng.integers(0, 2, n)
    y = (X[:, 0] + 0.5 * a + rng.normal(size=n) > 0).astype(int)
    return pf.Dataset(X, y, np.where(a == 1, "M", "F"), group_names=["F", "M"])


def _thresholds_problem(data, score):
    r = pf.rates(pf.Thresholds(np.linspace(-3, 3, 20), score=score), data)
    return pf.Problem(pf.minimize(r.error()), [pf.abs(r.selection["F"] - r.selection["M"]) <= 0.05])


def test_the_default_unit_is_row_everywhere():
    assert pf.DP(1.0, 1e-6).protect == "row"
    assert pf.DP(1.0).relation == pf.privacy.spec.RELATIONS["row"]
    args = build_parser().parse_args(["solve", "p.py", "--epsilon", "1"])
    assert args.protect == "row"
    sk = pytest.importorskip("privfair.sklearn", reason="scikit-learn is a dev extra")
    assert sk.PrivateFairClassifier().protect == "row"


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_score_fitted_on_the_private_rows_is_refused_under_row_before_any_draw():
    data = _data()
    prob = _thresholds_problem(data, pf.scores.public_score(data))
    budget = pf.BudgetFilter(2.0, 1e-5)
    with pytest.raises(InvalidPrivacyError, match="protect='sensitive'") as err:
        prob.solve(pf.DP(1.0, 1e-6), seed=0, progress=False, budget=budget)
    assert err.value.field == "protect"
    assert budget.spent == (0.0, 0.0) and budget.reserved == (0.0, 0.0)
    with pytest.raises(InvalidPrivacyError, match="public_score"):
        prob.plan(pf.DP(1.0, 1e-6))
    # the same score is public under "sensitive" (X and y are not protected) ...
    res = prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), seed=0, progress=False)
    assert res.certificate.relation == "sensitive"
    # ... and a score fitted on other (public) rows is public under "row" too
    public = _data(seed=1)
    res = _thresholds_problem(data, pf.scores.public_score(public)).solve(
        pf.DP(1.0, 1e-6), seed=0, progress=False)
    assert res.certificate.relation == "row" and res.certificate.is_private


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_score_fitted_on_rows_cut_from_the_same_data_is_refused_under_row():
    """A score fitted on the whole data and a problem on its training split (or the other way,
    or a subsample) share rows: refused.  Disjoint parts of one dataset share none: a score
    fitted on the test split reads no training row, and is accepted."""
    data = _data(n=2000)
    train, test = data.split(0.25, rng=0)
    for fitted, solved in ((data, train), (train, data), (train, train.subsample(500, rng=1))):
        prob = _thresholds_problem(solved, pf.scores.public_score(fitted))
        with pytest.raises(InvalidPrivacyError, match="public_score"):
            prob.solve(pf.DP(1.0, 1e-6), seed=0, progress=False)
    assert not train.shares_rows_with(test) and data.shares_rows_with(test)
    res = _thresholds_problem(train, pf.scores.public_score(test)).solve(
        pf.DP(1.0, 1e-6), seed=0, progress=False)
    assert res.certificate.relation == "row"


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_sensitive_only_method_under_row_says_how_to_ask_for_that_unit():
    data = _data()
    r = pf.rates(pf.ProxyCells(4, 2), data)
    prob = pf.Problem(pf.minimize(r.error()), [pf.abs(r.selection["F"] - r.selection["M"]) <= 0.05])
    with pytest.raises(BackendRefusedError, match="cells") as err:
        prob.solve(pf.DP(1.0, 1e-6), seed=0, progress=False)
    assert "protect='sensitive'" in str(err.value) and "--protect sensitive" in str(err.value)
    res = prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), seed=0, progress=False)
    assert res.backend == "cells"
    # a backend that takes the problem under neither unit gets no such hint
    with pytest.raises(BackendRefusedError) as err:
        prob.solve(pf.DP(1.0, 1e-6), backend="exponential", seed=0, progress=False)
    assert "--protect sensitive" not in str(err.value)


def test_a_delta_of_1_over_n_or_more_warns_before_anything_is_drawn():
    """δ ≥ 1/n does not rule out publishing a random row: the solve warns (and still runs);
    δ = 1/n² does not warn."""
    import warnings as _w

    from privfair.errors import WeakPrivacyWarning

    rng = np.random.default_rng(0)
    n = 1200
    a = rng.choice(["a", "b"], n)
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] > 0).astype(int)
    data = pf.Dataset(X, y, a, group_names=["a", "b"], labels=[0, 1])
    r = pf.rates(pf.Thresholds(np.linspace(-1, 1, 9), score=0), data)
    prob = pf.Problem(pf.minimize(r.error()), [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.1])
    with pytest.warns(WeakPrivacyWarning, match=r"1/n = 0.000833 for n = 1200"):
        prob.solve(pf.DP(1.0, 1.0 / n), backend="exponential", seed=0, progress=False)
    with _w.catch_warnings():
        _w.simplefilter("error", WeakPrivacyWarning)
        _w.simplefilter("ignore", pf.errors.ResultStatusWarning)
        prob.solve(pf.DP(1.0, 1.0 / n ** 2), backend="exponential", seed=0, progress=False)
        prob.solve(pf.DP(1.0), backend="exponential", seed=0, progress=False)

"""lagrangian_sgda's default recipe (backends/lagrangian/recipe.py, issue #18).

Fast: "auto" trains the cost-sensitive row term for a parity problem over a binary
LinearClassifier and the soft one when a label-conditional rate is read (equalized odds), for a
surrogate or a TorchModel; options the user passes win over the recipe; the clip scale is the
median row norm on the public grid — exact under protect="sensitive" (no release), an
exponential mechanism scheduled before the steps under "row" whose score moves by ≤ 1 when a row
is replaced (property check, with a control score that moves by more); ε_m follows its public
rule.  Statistical (slow): the private median passes the neighbouring-dataset tester, and a
control that claims a 4× larger ε is refuted.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import privfair as pf
from backends.lagrangian import recipe
from privfair.backends import BACKENDS
from privfair.privacy import Accountant
from privfair.privacy.testing import check_dp_heldout

from _synthetic import binary


def _problem(data, notion="dp", level=0.05):
    r = pf.rates(pf.LinearClassifier(data.n_features, radius=1.0), data)
    if notion == "dp":
        c = [pf.abs(r.selection["a"] - r.selection["b"]) <= level]
    else:
        c = [pf.maximum(pf.abs(r.fpr["a"] - r.fpr["b"]), pf.abs(r.tpr["a"] - r.tpr["b"]))
             <= level]
    return pf.Problem(pf.Minimize(r.error()), c)


def _plan(prob, privacy, **opts):
    b = BACKENDS["lagrangian_sgda"]
    return b.plan(prob, prob.analyze(privacy), privacy, opts)


def test_auto_is_cost_sensitive_for_parity_and_soft_for_equalized_odds():
    data = binary(1000, 0)
    priv = pf.DP(1.0, 1e-5, protect="row")
    dp = _plan(_problem(data, "dp"), priv).params
    eo = _plan(_problem(data, "eo"), priv).params
    assert (dp["objective_surrogate"], dp["lr"], dp["lr_dual"], dp["lr_schedule"]) == \
        ("cost_log", 1.0, 0.03, "cosine")
    assert (eo["objective_surrogate"], eo["lr"], eo["lr_dual"], eo["lr_schedule"]) == \
        ("log", 2.0, 1.0, "constant")
    assert eo["clip"] == 1.0 and eo["clip_rule"] == "fixed" and eo["median_epsilon"] == 0.0
    # surrogate rates read their own masses: the soft recipe
    r = pf.rates(pf.LinearClassifier(data.n_features, radius=1.0), data, surrogate="logistic")
    sur = pf.Problem(pf.Minimize(r.error()),
                     [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.05])
    assert _plan(sur, priv).params["objective_surrogate"] == "log"
    # an unconstrained fit of the error (e.g. postprocessing's private score) keeps the soft
    # term; an unconstrained minimax objective trains the cost-sensitive one (docs/lagrangian.md)
    r = pf.rates(pf.LinearClassifier(data.n_features, radius=1.0), data)
    assert _plan(pf.Problem(pf.Minimize(r.error())), priv).params["objective_surrogate"] == "log"
    worst = pf.maximum(*[0.5 * (r.fpr[g] + r.fnr[g]) for g in ("a", "b")])
    assert _plan(pf.Problem(pf.Minimize(worst)), priv).params["objective_surrogate"] == "cost_log"
    # ... but with a label-conditional objective and a constraint, the soft term as before
    withc = pf.Problem(pf.Minimize(worst), [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.05])
    assert _plan(withc, priv).params["objective_surrogate"] == "log"


def test_options_passed_by_the_user_win_over_the_recipe():
    data = binary(1000, 0)
    priv = pf.DP(1.0, 1e-5, protect="row")
    P = _plan(_problem(data), priv, lr=0.5, clip=2.0, dual_schedule="constant").params
    assert P["objective_surrogate"] == "cost_log"
    assert (P["lr"], P["clip"], P["clip_rule"], P["dual_schedule"], P["lr_dual"]) == \
        (0.5, 2.0, "fixed", "constant", 0.03)
    assert P["median_epsilon"] == 0.0                    # a fixed clip costs nothing
    P = _plan(_problem(data), priv, objective_surrogate="log").params
    assert (P["objective_surrogate"], P["lr"], P["clip"]) == ("log", 2.0, 1.0)


def test_the_clip_scale_is_private_under_row_and_exact_under_sensitive():
    data = binary(3000, 1)
    prob = _problem(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row = prob.solve(pf.DP(1.0, 1e-5, protect="row"), backend="lagrangian_sgda", seed=0,
                         progress=False, epochs=2, holdout=0)
        sens = prob.solve(pf.DP(1.0, 1e-5, protect="sensitive"), backend="lagrangian_sgda",
                          seed=0, progress=False, epochs=2, holdout=0)
    assert row.plan.params["clip_rule"] == "private median"
    assert sens.plan.params["clip_rule"] == "median"
    assert sens.plan.params["median_epsilon"] == 0.0
    assert [e.mechanism for e in sens.plan.schedule.events()] == ["subsampled_gaussian"]
    # the exact median is the grid point nearest (in rows) to half of them
    X = np.asarray(data.X, dtype=float)
    nrm = np.sqrt((X ** 2).sum(axis=1) + 1.0)
    below = np.array([(nrm <= c).sum() for c in recipe.GRID])
    assert sens.info["clip"] == recipe.GRID[int(np.argmin(np.abs(below - data.n / 2)))]
    assert sens.info["clip"] == pytest.approx(np.median(nrm), rel=0.2)   # a 2^(1/4) grid
    assert row.info["clip"] in set(recipe.GRID.tolist())
    # the run's certificate holds both releases; their composition fits the budget
    acc = Accountant(delta=1e-5)
    acc.extend(row.plan.schedule.events())
    assert acc.total(1e-5).epsilon <= 1.0 * (1 + 1e-9)
    assert row.certificate.epsilon <= 1.0 * (1 + 1e-9)
    assert any(e.mechanism == "exponential" for e in row.certificate.releases)


def test_the_median_score_moves_by_at_most_one_when_a_row_is_replaced():
    rng = np.random.default_rng(0)

    class Chunk:
        def __init__(self, X):
            self.X = X

    for trial in range(50):
        n, d = int(rng.integers(2, 60)), int(rng.integers(1, 5))
        X = rng.normal(scale=rng.uniform(0.1, 20), size=(n, d))
        Y = X.copy()
        Y[int(rng.integers(n))] = rng.normal(scale=rng.uniform(0.1, 50), size=d)
        u = recipe.median_scores(recipe.norm_counts(Chunk(X)), n)
        v = recipe.median_scores(recipe.norm_counts(Chunk(Y)), n)
        assert np.max(np.abs(u - v)) <= 1.0
    # control: a score that counts the rows twice moves by 2 — the check can fail
    X = np.zeros((10, 1))
    Y = X.copy()
    Y[0] = 100.0
    u = 2 * recipe.median_scores(recipe.norm_counts(Chunk(X)), 10)
    v = 2 * recipe.median_scores(recipe.norm_counts(Chunk(Y)), 10)
    assert np.max(np.abs(u - v)) == 2.0


def test_median_epsilon_is_a_public_rule_within_a_tenth_of_epsilon():
    assert recipe.median_epsilon(1.0, 24_000) == pytest.approx(0.01)
    assert recipe.median_epsilon(1.0, 1_000) == pytest.approx(0.06)
    assert recipe.median_epsilon(1.0, 100) == pytest.approx(0.1)
    assert recipe.median_epsilon(4.0, 10 ** 7) == pytest.approx(0.04)


def test_the_cost_recipe_enforces_parity_on_a_fifty_feature_problem():
    # rows of norm ~7: the fixed C = 3 of the old recipe normalised them all (docs/lagrangian.md)
    from test_lagrangian_soft_scale import _synthetic

    train, fresh = _synthetic(10_000, 50, 0), _synthetic(20_000, 50, 1)
    r = pf.rates(pf.LinearClassifier(50, radius=100.0), train)
    prob = pf.Problem(pf.Minimize(r.error()),
                      [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.02])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = prob.solve(pf.DP(1.0, 1e-6, protect="row"), backend="lagrangian_sgda", seed=0,
                         progress=False, holdout_on_violation="warn")
    assert res.plan.params["objective_surrogate"] == "cost_log"
    assert 4.0 <= res.info["clip"] <= 10.0
    m = res.metrics(fresh)
    assert m["dp_violation"] <= 0.05 and m["error"] < 0.45


def _median_runs(X, runs, eps_m, seed0):
    from privfair.privacy import Schedule, Scheduled

    class Rows:
        def map_sum(self, fn):
            class C:
                pass
            c = C()
            c.X = X
            return fn(c)

    sched = Schedule([Scheduled("clip_scale", recipe.median_event(eps_m))], eps_m, 0.0)
    out = []
    for s in range(runs):
        draws = sched.open(Accountant(), np.random.default_rng(seed0 + s))
        out.append(recipe.clip_scale(Rows(), len(X), draws))
    return np.log2(np.asarray(out))


@pytest.mark.slow
def test_private_median_passes_the_neighbouring_tester_and_a_4x_control_is_refuted():
    # 40 rows spread over the grid; the neighbour replaces one small row by a huge one, which
    # moves the median count of every grid point in between by 1
    X = np.linspace(0.5, 30, 40)[:, None]
    Y = X.copy()
    Y[0] = 1000.0
    eps = 1.0
    A, B = _median_runs(X, 4000, eps, 0), _median_runs(Y, 4000, eps, 10 ** 6)
    assert check_dp_heldout(A, B, eps, 1e-3).passed
    # control: the same outputs claimed at ε/4 must be refuted
    assert not check_dp_heldout(A, B, eps / 4, 1e-3).passed

"""The ``proxy_reductions`` backend: what it accepts (and why not), that ``auto`` chooses it
under ``protect="sensitive"`` with two groups, that its certificate is its two releases, that it
lowers the violation against the unconstrained fit, and that a refused solve spends nothing.
Its neighbouring-dataset audit (with the half-noise and 2ε controls) is in test_audit.py
(``proxy_counts``)."""

import math
import warnings

import numpy as np
import pytest

import privfair as pf
from privfair.errors import BackendRefusedError


def two_groups(n, seed, gap=1.0):
    """Two groups whose positive rate differs through the features (a parity gap to close)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 4)) + gap * a[:, None] * (np.arange(4) < 2)
    y = (X[:, 0] + X[:, 2] + rng.normal(scale=0.7, size=n) > 0.6).astype(int)
    return pf.Dataset(X, y, sensitive=np.where(a == 1, "b", "a"), group_names=["a", "b"])


def dp_problem(data, level=0.03):
    r = pf.rates(pf.LinearClassifier(data.n_features, radius=5.0), data)
    return pf.Problem(pf.minimize(r.error()), [pf.abs(r.selection["a"] - r.selection["b"]) <= level])


def solve(prob, privacy, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")            # the held-out check's status warnings
        return prob.solve(privacy, progress=False, **kw)


SENS = pf.DP(1.0, 1e-6, protect="sensitive")


@pytest.fixture(scope="module")
def data():
    return two_groups(3000, 0)


def test_auto_chooses_it_under_sensitive_and_lagrangian_sgda_under_row(data):
    prob = dp_problem(data)
    plans = prob.plan(SENS)
    assert plans.chosen.backend == "proxy_reductions"
    assert "proxy" in plans.chosen.rank_reason
    assert prob.plan(pf.DP(1.0, 1e-6, protect="row")).chosen.backend == "lagrangian_sgda"


@pytest.mark.parametrize("case, reason", [
    ("row", "protect='sensitive'"),
    ("three_groups", "exactly two groups"),
    ("three_labels", "binary labels"),
    ("thresholds", "pf.LinearClassifier"),
    ("surrogate", "surrogate=None"),
])
def test_it_refuses_what_it_cannot_do_with_the_reason(data, case, reason):
    privacy = SENS
    if case == "row":
        prob, privacy = dp_problem(data), pf.DP(1.0, 1e-6, protect="row")
    elif case == "three_groups":
        rng = np.random.default_rng(1)
        d3 = pf.Dataset(rng.normal(size=(600, 2)), rng.integers(0, 2, 600),
                        sensitive=rng.choice(["a", "b", "c"], 600), group_names=["a", "b", "c"])
        r = pf.rates(pf.LinearClassifier(2), d3)
        prob = pf.Problem(pf.minimize(r.error()), [pf.abs(r.selection["a"] - r.selection["c"]) <= 0.1])
    elif case == "three_labels":
        rng = np.random.default_rng(2)
        d3 = pf.Dataset(rng.normal(size=(600, 2)), rng.integers(0, 3, 600),
                        sensitive=rng.choice(["a", "b"], 600), group_names=["a", "b"])
        r = pf.rates(pf.LinearClassifier(2), d3)
        prob = pf.Problem(pf.minimize(r.error()))
    elif case == "surrogate":
        r = pf.rates(pf.LinearClassifier(data.n_features), data, surrogate="logistic")
        prob = pf.Problem(pf.minimize(r.error()), [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.1])
    else:
        r = pf.rates(pf.Thresholds(np.linspace(-1, 1, 5), score=0), data)
        prob = pf.Problem(pf.minimize(r.error()))
    verdicts = prob.plan(privacy).refused
    assert reason in verdicts["proxy_reductions"]
    budget = pf.BudgetFilter(1.0, 1e-5)
    with pytest.raises(BackendRefusedError):
        prob.solve(privacy, backend="proxy_reductions", budget=budget, progress=False)
    assert budget.spent == (0.0, 0.0)


def test_the_certificate_is_the_proxy_release_and_the_counts_release(data):
    res = solve(dp_problem(data), SENS, backend="proxy_reductions", seed=0)
    cert = res.certificate
    assert cert.epsilon <= 1.0 * (1 + 1e-9) and cert.delta <= 1e-6 * (1 + 1e-9)
    mechanisms = [e.mechanism for e in cert.releases if "held-out" not in str(e.label)]
    assert mechanisms[:2] == ["gaussian", "laplace"]
    shares = [e.epsilon for e in cert.releases][:2]
    assert shares[0] == pytest.approx(0.5) and shares[1] == pytest.approx(0.5)
    # the released counts are exposed: one per (label, prediction pattern) of ≤ 4 rules
    counts = np.asarray(res.info["pattern_counts"])
    assert counts.shape[0] == 2 and counts.shape[1] == 2 ** res.info["support"]
    assert np.all(counts >= 0)
    assert math.isclose(sum(res.weights), 1.0)


def test_the_proxy_ridge_is_m1_noise_scale_unless_given(data):
    """The default ridge is M1's (public) noise scale, at least 1; ``proxy_ridge`` overrides it;
    without privacy (no noise) it is pf.ProxyCells()'s 1."""
    prob = dp_problem(data)
    res = solve(prob, SENS, backend="proxy_reductions", seed=0)
    scale = res.info["proxy_scale"]
    assert scale > 1.0
    assert res.plan.params["ridge"] == pytest.approx(scale)
    given = solve(prob, SENS, backend="proxy_reductions", seed=0, proxy_ridge=3.0)
    assert given.plan.params["ridge"] == 3.0
    exact = solve(prob, pf.DP(math.inf, protect="sensitive"), backend="proxy_reductions", seed=0)
    assert exact.plan.params["ridge"] == pf.ProxyCells().ridge


def test_it_lowers_the_violation_against_the_unconstrained_fit(data):
    """Held-in rates of the released rule (holdout=0, so the trained mixture itself), three
    seeds: the parity gap falls well below the unconstrained fit's at a bounded cost in error."""
    r = pf.rates(pf.LinearClassifier(data.n_features, radius=5.0), data)
    free = solve(pf.Problem(pf.minimize(r.error())), SENS, backend="lagrangian_sgda", seed=0,
                 holdout=0).metrics(data)
    assert free["dp_violation"] > 0.15          # the data's gap, what the constraint must close
    for seed in range(3):
        fair = solve(dp_problem(data), SENS, backend="proxy_reductions", seed=seed,
                     holdout=0).metrics(data)
        assert fair["dp_violation"] < 0.06, (seed, fair)
        assert fair["error"] < 0.5 and fair["error"] < free["error"] + 0.15, (seed, fair, free)


def test_a_rule_is_a_mixture_of_linear_rules_in_the_ball(data):
    res = solve(dp_problem(data), SENS, backend="proxy_reductions", seed=1, holdout=0)
    for theta in res.decisions:
        assert np.linalg.norm(theta) <= 5.0 * (1 + 1e-9)
    p = res.predict_proba(data.X)
    assert p.shape == (data.n,) and np.all((0 <= p) & (p <= 1))

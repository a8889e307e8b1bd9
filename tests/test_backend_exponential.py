"""Exponential sampling backend: utility within its theorem, privacy end to end, refusals."""

import math

import numpy as np
import pytest

import privfair as pf
from privfair.errors import BackendRefusedError
from privfair.privacy.testing import check_dp


def small_problem(seed=0, n=200, grid=15, q=0.1, data=None):
    rng = np.random.default_rng(seed)
    if data is None:
        a = rng.choice(["a", "b"], n)
        x = rng.normal(size=n) + 0.8 * (a == "a")
        y = (x + rng.normal(scale=0.8, size=n) > 0.5).astype(int)
        data = pf.Dataset(x[:, None], y, sensitive=a, group_names=["a", "b"])
    ds = pf.Thresholds(np.linspace(-1.5, 2.0, grid), score=0)
    r = pf.rates(ds, data, group_mass_bound=q)
    prob = pf.Problem(pf.minimize(r.error()),
                      [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.1])
    return prob, data


def test_utility_within_theorem_bound_in_90_percent_of_seeds():
    prob, _ = small_problem()
    privacy = pf.DP(2.0, protect="sensitive")
    analysis = prob.analyze(privacy, alpha=0.1)
    h_all = analysis.h_value(prob.rates.evaluate_all())
    plan = prob.plan(privacy, backend="exponential", alpha=0.1).chosen
    bound = plan.predicted_excess_risk      # (2Δh/ε) log(|C|/ρ), ρ = 0.05
    hits = 0
    for seed in range(40):
        res = prob.solve(privacy, backend="exponential", seed=seed, alpha=0.1)
        h = analysis.h_value(prob.rates.evaluate(res.decision))
        hits += h - h_all.min() <= bound
    assert hits >= 36


def test_non_private_reference_returns_the_argmin():
    prob, _ = small_problem()
    analysis = prob.analyze(pf.DP(math.inf, protect="sensitive"))
    res = prob.solve(pf.DP(math.inf, protect="sensitive"), backend="exponential")
    h_all = analysis.h_value(prob.rates.evaluate_all())
    assert analysis.h_value(prob.rates.evaluate(res.decision)) == pytest.approx(h_all.min())
    assert not res.certificate.is_private


def _scores(data, eps):
    prob, _ = small_problem(data=data, grid=5, q=0.2)
    an = prob.analyze(pf.DP(eps, protect="sensitive"), alpha=0.2)
    return -an.h_value(prob.rates.evaluate_all()), an.sensitivity_h, prob


def _sample_outputs(data, eps, n_runs, seed, multiplier=1.0):
    """Run the backend n_runs times; ``multiplier`` > 1 is an under-noised control: the runs
    draw inside ``reduced_noise(1/multiplier)`` (the audit's wrapper), while the plan and its
    scheduled event still claim ε."""
    from privfair.backends import get
    from privfair.privacy import Accountant, reduced_noise
    from privfair.privacy.randomness import as_source

    prob, _ = small_problem(data=data, grid=5, q=0.2)
    b = get("exponential")
    final = b.plan(prob, prob.analyze(pf.DP(eps, protect="sensitive"), alpha=0.2), pf.DP(eps, protect="sensitive"), {})
    src = as_source(seed)
    grid = np.asarray(prob.rates.decisions.grid)
    out = np.empty(n_runs, dtype=int)
    with reduced_noise(1.0 / multiplier):
        for k in range(n_runs):
            acc = Accountant() if k == 0 else None
            out[k] = int(np.argmin(np.abs(grid - b.run(final, rng=src, accountant=acc).decision)))
            if acc is not None:      # the record claims ε whatever the noise drawn
                assert [e.epsilon for e in acc.events] == [eps]
    return out


def _neighbours_pair():
    rng = np.random.default_rng(3)
    n = 12
    x = rng.normal(size=n)
    y = (x > 0).astype(int)
    a = np.array(["a", "b"] * (n // 2))
    D = pf.Dataset(x[:, None], y, sensitive=a, group_names=["a", "b"])
    i = int(np.argmax(x))
    return D, D.with_row(i, group="a" if a[i] == "b" else "b")


def test_exact_output_probabilities_satisfy_the_ratio_for_every_neighbour():
    from privfair.privacy import exponential_mechanism_probabilities

    eps = 0.5
    D, _ = _neighbours_pair()
    sD, delta_h, _ = _scores(D, eps)
    pD = exponential_mechanism_probabilities(sD, delta_h, eps)
    for i in range(D.n):
        for g in ("a", "b"):
            if D.groups[D.group[i]] == g:
                continue
            sDp, delta_hp, _ = _scores(D.with_row(i, group=g), eps)
            assert delta_hp == delta_h               # Δh depends on public quantities only
            assert np.max(np.abs(sD - sDp)) <= delta_h + 1e-12
            pDp = exponential_mechanism_probabilities(sDp, delta_h, eps)
            assert np.all(pD <= np.exp(eps) * pDp * (1 + 1e-9))


@pytest.mark.slow
def test_end_to_end_privacy_with_negative_control():
    """Neighbouring datasets (one row's group changes): the sampled outputs pass at ε; a control
    whose noise is shrunk until its *realized* privacy loss is about 3ε is refuted."""
    from privfair.privacy import exponential_mechanism_probabilities

    eps = 0.5
    # 5,000 runs a side: the control's δ̂ at ε is ~0.29 with a standard error of ~0.012
    # (refuted by > 20 s.e.; seeds 1-3 measured), so 20,000 bought nothing but time
    runs = 5000
    D, Dp = _neighbours_pair()
    assert check_dp(_sample_outputs(D, eps, runs, 1), _sample_outputs(Dp, eps, runs, 2),
                    eps, bins="discrete").passed
    # Δh is a worst case over all datasets; on this pair the realized loss is smaller, so the
    # control must shrink the noise by the measured slack to be a real test of power.
    sD, delta_h, _ = _scores(D, eps)
    sDp, _, _ = _scores(Dp, eps)
    pD = exponential_mechanism_probabilities(sD, delta_h, eps)
    pDp = exponential_mechanism_probabilities(sDp, delta_h, eps)
    realized = np.max(np.abs(np.log(pD / pDp)))
    assert 0 < realized <= eps
    k = 3 * eps / realized
    cheat_D = _sample_outputs(D, eps, runs, 3, multiplier=k)
    cheat_Dp = _sample_outputs(Dp, eps, runs, 4, multiplier=k)
    assert not check_dp(cheat_D, cheat_Dp, eps, bins="discrete").passed


def test_refusal_spends_nothing():
    data = pf.datasets.load_adult("train").subsample(500, rng=0)
    r = pf.rates(pf.LinearClassifier(data.n_features), data, surrogate="logistic",
                 group_mass_bound=0.02)
    prob = pf.Problem(pf.minimize(r.error()))
    budget = pf.BudgetFilter(1.0, 1e-6)
    with pytest.raises(BackendRefusedError, match="finite decision set"):
        prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend="exponential", budget=budget)
    assert budget.spent == (0.0, 0.0)


def test_budget_filter_is_charged_once_per_solve_and_refuses_overspend():
    prob, _ = small_problem()
    budget = pf.BudgetFilter(1.5)
    prob.solve(pf.DP(1.0, protect="sensitive"), backend="exponential", seed=0, budget=budget)
    assert budget.spent[0] == pytest.approx(1.0)
    with pytest.raises(pf.errors.BudgetExceededError):
        prob.solve(pf.DP(1.0, protect="sensitive"), backend="exponential", seed=1, budget=budget)
    assert budget.spent[0] == pytest.approx(1.0)


def test_smax_runs_on_exponential_only():
    prob, data = small_problem()
    r = prob.rates
    nonconvex = pf.Problem(pf.minimize(r.error()),
                           [pf.smax(r.selection["a"] - r.selection["b"],
                                    r.selection["b"] - r.selection["a"], eta=20) <= 0.1])
    plans = nonconvex.plan(pf.DP(1.0, protect="sensitive"))
    assert plans.chosen.backend == "exponential"
    res = nonconvex.solve(pf.DP(1.0, protect="sensitive"), seed=0)
    assert res.certificate.epsilon <= 1.0 + 1e-9


@pytest.mark.parametrize("relation", ["sensitive", "row"])
def test_multiclass_parity_exact_probabilities_satisfy_the_ratio_for_every_neighbour(relation):
    """Three labels, a parity constraint on the selection rates P(ŷ = k | g) (ℓ's multi-class
    selection block): the exponential mechanism's exact output probabilities on D and on every
    neighbour D' (one row's group changed; or the whole row replaced, from a small pool of
    values) are within e^ε of each other — the analysis' Δh, read off the selection rates'
    sensitivity, covers the realized score change (here up to 0.43·Δh: Δh is a worst case over
    all datasets; that the selection rates' own bound is attained, so not loose, is
    tests/test_stats_sensitivity.py's multi-class test, and this mechanism's refuted control is
    test_end_to_end_privacy_with_negative_control)."""
    from privfair.privacy import exponential_mechanism_probabilities

    eps = 0.5
    rng = np.random.default_rng(5)
    n = 12
    x = rng.normal(size=n)
    y = np.digitize(x + 0.3 * rng.normal(size=n), [-0.4, 0.4])
    a = np.array(["a", "b"] * (n // 2))
    D = pf.Dataset(x[:, None], y, sensitive=a, group_names=["a", "b"], labels=[0, 1, 2])
    cuts = [(-1.0, 0.0), (-0.4, 0.4), (0.0, 1.0), (-2.0, 2.0), (0.5, 0.6)]
    rules = pf.FiniteSet([(lambda X, lo=lo, hi=hi: np.digitize(X[:, 0], [lo, hi]))
                          for lo, hi in cuts])

    def scores(data):
        r = pf.rates(rules, data, group_mass_bound=0.1)
        parity = pf.maximum(*[pf.abs(r.selection_rate("a", k) - r.selection_rate("b", k))
                              for k in range(3)])
        prob = pf.Problem(pf.minimize(r.error()), [parity <= 0.1])
        an = prob.analyze(pf.DP(eps, protect=relation), alpha=0.2)
        assert set(parity.support()) <= set(r.layout.class_selection.ravel().tolist())
        return -an.h_value(r.evaluate_all()), an.sensitivity_h

    sD, delta_h = scores(D)
    assert delta_h > 0
    pD = exponential_mechanism_probabilities(sD, delta_h, eps)
    for i in range(n):
        values = ([(x[i], g, y[i]) for g in ("a", "b")] if relation == "sensitive" else
                  [(v, g, lab) for v in (-1.0, 0.0, 1.0) for g in ("a", "b") for lab in (0, 1, 2)])
        for v, g, lab in values:
            if (v, g, lab) == (x[i], a[i], y[i]):
                continue
            sDp, delta_hp = scores(D.with_row(i, x=[v], group=g, label=lab))
            assert delta_hp == delta_h               # Δh depends on public quantities only
            assert np.max(np.abs(sD - sDp)) <= delta_h + 1e-12
            pDp = exponential_mechanism_probabilities(sDp, delta_h, eps)
            assert np.all(pD <= np.exp(eps) * pDp * (1 + 1e-9))
            assert np.all(pDp <= np.exp(eps) * pD * (1 + 1e-9))

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
from privfair.errors import BackendRefusedError, InvalidInputError


def groups_of(n, seed, G, gap=1.0):
    """G groups whose positive rate grows with the group through two features (a parity gap)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, G, n)
    X = rng.normal(size=(n, 4)) + gap * (a / (G - 1))[:, None] * (np.arange(4) < 2)
    y = (X[:, 0] + X[:, 2] + rng.normal(scale=0.7, size=n) > 0.6).astype(int)
    names = [chr(ord("a") + g) for g in range(G)]
    return pf.Dataset(X, y, sensitive=np.array(names)[a], group_names=names)


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
    ("three_labels", "binary labels"),
    ("thresholds", "pf.LinearClassifier"),
    ("surrogate", "surrogate=None"),
])
def test_it_refuses_what_it_cannot_do_with_the_reason(data, case, reason):
    privacy = SENS
    if case == "row":
        prob, privacy = dp_problem(data), pf.DP(1.0, 1e-6, protect="row")
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
    # the plan lists both releases whatever the ridge (29f7d1f had listed them only when
    # proxy_ridge was given, and failed on proxy_ridge at ε = ∞)
    for opts in ({}, {"proxy_ridge": 3.0}):
        budget = prob.plan(SENS, backend="proxy_reductions", **opts).chosen.budget
        assert [b[0][:3] for b in budget] == ["M1:", "M2:"], budget
        assert sum(b[1] for b in budget) == pytest.approx(1.0)
    free = prob.plan(pf.DP(math.inf, protect="sensitive"), backend="proxy_reductions",
                     proxy_ridge=3.0).chosen
    assert free.params["ridge"] == 3.0 and free.budget == []
    budget = pf.BudgetFilter(1.0, 1e-5)              # a ridge of 0 is refused up front, free
    with pytest.raises(InvalidInputError, match="proxy_ridge"):
        prob.solve(SENS, backend="proxy_reductions", proxy_ridge=0.0, budget=budget,
                   progress=False)
    assert budget.spent == (0.0, 0.0)


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


# -- more than two groups: the multinomial proxy -------------------------------------------------
def parity_over_pairs(data, level):
    r = pf.rates(pf.LinearClassifier(data.n_features, radius=5.0), data)
    gaps = [pf.abs(r.selection[a] - r.selection[b])
            for i, a in enumerate(data.groups) for b in data.groups[i + 1:]]
    return pf.Problem(pf.minimize(r.error()), [pf.maximum(*gaps) <= level])


@pytest.fixture(scope="module")
def data3():
    return groups_of(3000, 0, 3)


def test_three_groups_auto_chooses_it_and_the_events_carry_the_moved_rows_sensitivity(data3):
    """With G > 2 every group's statistics and counts are released: a row moved between two
    groups moves two blocks (Δ₂ = √2·max‖u‖) and two counts (Δ₁ = 2); with two groups only
    the first group's are released, and a flip moves one block and one count."""
    prob = parity_over_pairs(data3, 0.05)
    assert prob.plan(SENS).chosen.backend == "proxy_reductions"
    res = solve(prob, SENS, backend="proxy_reductions", seed=0)
    m1, m2 = [e for e in res.certificate.releases if "held-out" not in str(e.label)][:2]
    two = solve(dp_problem(two_groups(3000, 0)), SENS, backend="proxy_reductions", seed=0)
    m1_two, m2_two = [e for e in two.certificate.releases if "held-out" not in str(e.label)][:2]
    # the same feature map and clip on both data sets: max‖u‖ is the clip's bound
    assert m1.sensitivity == pytest.approx(math.sqrt(2) * m1_two.sensitivity)
    assert m2.sensitivity == 2.0 and m2_two.sensitivity == 1.0
    counts = np.asarray(res.info["pattern_counts"])
    assert counts.shape == (3, 2, 2 ** res.info["support"]) and np.all(counts >= 0)
    assert m1.dimension == 3 * m1_two.dimension and m2.dimension == 3 * m2_two.dimension
    assert res.certificate.epsilon <= 1.0 * (1 + 1e-9)


def test_completed_counts_sum_to_the_public_totals_and_project_least_squares():
    from privfair.backends.reductions.proxy_reductions import (completed_counts,
                                                               project_onto_totals)

    rng = np.random.default_rng(0)
    N = rng.integers(0, 50, size=(2, 8)).astype(float)
    noisy = rng.normal(N / 3, 4.0, size=(3, 2, 8))
    proj = project_onto_totals(noisy, N)
    assert np.allclose(proj.sum(axis=0), N)
    # the least-squares projection moves every group by the same amount
    assert np.allclose(np.diff(proj - noisy, axis=0), 0.0)
    full = completed_counts(noisy, N, 3)
    assert full.shape == (3, 2, 8) and np.all(full >= 0) and np.allclose(full.sum(axis=0), N)
    # two groups: the first group's count clipped to [0, N], the second's the rest
    N2 = np.array([[40.0, 50.0], [10.0, 20.0]])
    two = completed_counts(np.array([[[-3.0, 60.0], [5.0, 5.0]]]), N2, 2)
    assert np.allclose(two, [[[0.0, 50.0], [5.0, 5.0]], [[40.0, 0.0], [5.0, 15.0]]])


@pytest.mark.slow
def test_the_projected_counts_have_two_thirds_of_one_release_variance(data3):
    """With three groups every released count carries Lap(2/ε₂) (variance 8/ε₂²); projected
    onto the public totals each group's estimate has (1 − 1/3) of that, where the third group
    read as the residual would carry twice it (the design before 2026-11-27)."""
    from privfair.backends.reductions.proxy_reductions import project_onto_totals

    sched, counts, _, _ = _releases_on_neighbours(data3)
    N = counts.reshape(3, 2, -1).sum(axis=0)
    one = 2 * sched["M2"].event.scale ** 2              # one Laplace count's variance
    src = pf.privacy.as_source(0)
    draws = np.array([sched.open(None, src).laplace("M2", counts) for _ in range(4000)])
    draws = draws.reshape(4000, 3, 2, -1)
    proj = np.array([project_onto_totals(d, N) for d in draws])
    var_proj = proj[:, 2].var(axis=0).mean()
    var_resid = (N - draws[:, :2].sum(axis=1)).var(axis=0).mean()
    assert var_proj == pytest.approx(2 / 3 * one, rel=0.1)
    assert var_resid == pytest.approx(2 * one, rel=0.1)


def test_three_groups_lower_the_largest_gap_against_the_unconstrained_fit(data3):
    r = pf.rates(pf.LinearClassifier(data3.n_features, radius=5.0), data3)
    free = solve(pf.Problem(pf.minimize(r.error())), SENS, backend="lagrangian_sgda", seed=0,
                 holdout=0).metrics(data3)
    assert free["dp_violation"] > 0.15          # the data's largest gap, to be closed
    constant = min(data3.y.mean(), 1 - data3.y.mean())  # the best constant rule (gap 0)
    for seed in range(2):
        fair = solve(parity_over_pairs(data3, 0.03), SENS, backend="proxy_reductions",
                     seed=seed, holdout=0).metrics(data3)
        assert fair["dp_violation"] < 0.08, (seed, fair)
        assert fair["error"] < constant - 0.02, (seed, fair, constant)


# -- the three-group releases on neighbours (the mechanisms themselves, drawn as the backend
#    draws them; the end-to-end audit instance proxy_counts_3groups needs 2,000 runs to refute
#    half the noise and does not refute 2ε there: a move between two groups spreads its loss
#    over two coordinates)
def _releases_on_neighbours(data3, share=0.5, delta=0.0):
    """(schedule, N on D and on D′ as exact values, the moved coordinates) for M2: the counts of
    the three groups per (label, pattern) under two fixed public rules; D′ moves row i from
    group a to b."""
    from privfair.backends.reductions.proxy_reductions import pattern_counts, release_schedule

    i = int(np.flatnonzero(data3.group == 0)[0])
    Dp = data3.with_row(i, group="b")
    W = np.array([[1.0, 0.0, 1.0, 0.0, -0.5], [0.0, 1.0, 0.0, 0.0, 0.0]])
    _, N0 = pattern_counts(data3, W, 3)
    _, N0p = pattern_counts(Dp, W, 3)
    moved = np.flatnonzero((N0 != N0p).ravel())
    sched, _ = release_schedule(dp_problem_of(data3).rates,
                                pf.DP(1.0, delta, protect="sensitive"), share)
    return sched, N0.ravel(), N0p.ravel(), moved


def dp_problem_of(data3):
    return parity_over_pairs(data3, 0.05)


def _m2_samples(sched, counts, moved, n, seed, mult=1.0):
    """M2 drawn through the schedule's Draws (inside reduced_noise(mult) for a control), the
    difference of the two moved coordinates (where the move's whole loss shows on one axis)."""
    from privfair.privacy import reduced_noise

    src = pf.privacy.as_source(seed)
    out = np.empty(n)
    with reduced_noise(mult):
        for k in range(n):
            v = sched.open(None, src).laplace("M2", counts)
            out[k] = v[moved[0]] - v[moved[1]]
    return out


@pytest.mark.slow
def test_three_group_counts_pass_the_neighbour_tester_and_half_noise_is_refuted(data3):
    from privfair.privacy.testing import check_dp

    sched, N0, N0p, moved = _releases_on_neighbours(data3)
    assert len(moved) == 2 and np.abs(N0 - N0p).sum() == 2.0    # ∓1 in two released counts
    event = sched["M2"].event
    assert event.sensitivity == 2.0
    eps2, n = event.epsilon, 12000
    honest = check_dp(_m2_samples(sched, N0, moved, n, 1), _m2_samples(sched, N0p, moved, n, 2),
                      eps2)
    assert honest.passed
    cheat = check_dp(_m2_samples(sched, N0, moved, n, 3, mult=0.5),
                     _m2_samples(sched, N0p, moved, n, 4, mult=0.5), eps2)
    assert not cheat.passed


@pytest.mark.slow
def test_three_group_proxy_statistics_pass_the_neighbour_tester_and_the_two_group_sigma_fails(
        data3):
    """M1 with G = 3 (T of groups a and b, stacked): the move a → b shifts the two blocks by
    (−u_i, +u_i), ‖·‖₂ = √2‖u_i‖.  Projected on that direction the release is a 1-D Gaussian;
    at the event's σ it passes (ε₁, δ); at the σ a two-group event would use (Δ₂ = max‖u‖,
    missing the √2) it is refuted."""
    from privfair.backends.cells import proxy as _proxy
    from privfair.models.cells import ProxyCells
    from privfair.privacy.testing import check_dp

    from privfair.backends.cells.cells import extreme_design_rows, singles_within_clip

    delta = 0.02                                   # a δ large enough to see with 10⁵ draws
    sched, *_ = _releases_on_neighbours(data3, delta=delta)
    event = sched["M1"].event
    proxy = ProxyCells()
    feats = proxy.features_for(data3)
    U = extreme_design_rows(data3, feats, False, not singles_within_clip(proxy, feats))
    s = _proxy.proxy_sensitivity(U, "l2")
    assert event.sensitivity == pytest.approx(math.sqrt(2) * s)
    shift = math.sqrt(2) * s                       # the worst row's move, projected
    rng = np.random.default_rng(0)
    n = 100_000
    for sigma, passes in ((event.scale, True),
                          (_proxy.proxy_event(U, event.epsilon, delta).scale, False)):
        a, b = rng.normal(0.0, sigma, n), rng.normal(shift, sigma, n)
        assert check_dp(a, b, event.epsilon, delta).passed == passes, sigma


def test_the_multinomial_proxy_with_a_subsampled_hessian_reaches_the_same_fit():
    """The Newton Hessian on a stride of rows (sub-sampled Newton) changes the path, not the
    optimum: the exact gradient and line search end at the all-row fit's memberships."""
    from privfair.backends.reductions.proxy_reductions import multinomial_proxy

    rng = np.random.default_rng(0)
    m, d, G = 3000, 6, 4
    U = np.c_[rng.normal(size=(m, d - 1)), np.ones(m)]
    logits = np.c_[U @ rng.normal(size=(G - 1, d)).T, np.zeros(m)]
    P = np.exp(logits - logits.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    a = (P.cumsum(axis=1) < rng.random(m)[:, None]).sum(axis=1)
    T = np.stack([U[a == g].sum(axis=0) for g in range(G - 1)]) + rng.normal(0, 5, (G - 1, d))
    exact = multinomial_proxy(U, T, 1.0, hessian_rows=10 ** 9)
    sub = multinomial_proxy(U, T, 1.0, hessian_rows=300)
    assert np.abs(exact - sub).max() < 1e-4
    # the score equations Σ_i u_i P_ig + ridge·β_g = T_g hold at the fit (what makes the
    # statistics sufficient); through the constant column: each group's total membership is its
    # released count up to ridge·β (≈ 1 here), where the start β = 0 gives m/G = 750 to all
    assert np.abs(exact[:, :G - 1].sum(axis=0) - T[:, -1]).max() < 3.0

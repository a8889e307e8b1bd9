"""Frank–Wolfe backend ([A] Alg. 4): convergence within its bound, privacy end to end, refusals."""

import math

import numpy as np
import pytest

import privfair as pf
from privfair.backends import get
from privfair.backends.loss_vector.frank_wolfe import Constants, hull_diameter, score_sensitivity
from privfair.errors import BackendRefusedError
from privfair.privacy.randomness import as_source
from privfair.privacy.testing import check_dp

FW = "frank_wolfe"


def synthetic(seed=0, n=200):
    rng = np.random.default_rng(seed)
    a = rng.choice(["a", "b"], n)
    x = rng.normal(size=n) + 0.8 * (a == "a")
    y = (x + rng.normal(scale=0.8, size=n) > 0.5).astype(int)
    return pf.Dataset(x[:, None], y, sensitive=a, group_names=["a", "b"])


def lse_problem(data, grid=15, q=0.1):
    """error subject to a demographic-parity gap, smoothed by log-sum-exp (convex, smooth)."""
    r = pf.rates(pf.Thresholds(np.linspace(-1.5, 2.0, grid), score=0), data, group_mass_bound=q)
    gap = pf.lse(r.selection["a"] - r.selection["b"], r.selection["b"] - r.selection["a"], eta=20)
    return pf.Problem(pf.minimize(r.error()), [gap <= 0.1])


def smooth_problem(data, lam=2.0, grid=15, q=0.1):
    """error + λ·(DP gap)²: small curvature, and its optimum over mixtures is not a vertex."""
    r = pf.rates(pf.Thresholds(np.linspace(-1.5, 2.0, grid), score=0), data, group_mass_bound=q)
    return pf.Problem(pf.minimize(r.error() + lam * pf.square(r.selection["a"] - r.selection["b"])))


def hull_optimum(prob, analysis):
    """min of h_smooth over all mixtures of the candidates (cvxpy over the simplex)."""
    cp = pytest.importorskip("cvxpy")
    L = prob.rates.evaluate_all()
    w = cp.Variable(L.shape[0], nonneg=True)
    x = L.T @ w
    obj = analysis.f_smooth.to_cvxpy(x)
    for g in analysis.g_smooth:
        s = analysis.smoothing
        obj = obj + analysis.G * s * cp.logistic(g.to_cvxpy(x) / s)
    cp.Problem(cp.Minimize(obj), [cp.sum(w) == 1]).solve(solver="CLARABEL")
    wv = np.clip(w.value, 0, None)
    best_mixture = float(analysis.h_smooth_value(wv / wv.sum() @ L))
    return best_mixture, float(analysis.h_smooth_value(L).min())


def mixture_h_smooth(prob, analysis, res):
    return float(analysis.h_smooth_value(prob.rates.evaluate_mixture(res.decisions, res.weights)))


# ------------------------------------------------------------------------------ constants
def test_hull_diameter_bounds_every_pair_of_candidates():
    data = synthetic(1, n=300)
    for prob in (lse_problem(data), smooth_problem(data)):
        an = prob.analyze(pf.DP(1.0, protect="sensitive"))
        S = list(an.support)
        LS = prob.rates.evaluate_all()[:, S]
        D = hull_diameter(prob.rates, S)
        diff = LS[:, None, :] - LS[None, :, :]          # a hull's diameter is attained at vertices
        assert np.abs(diff).sum(-1).max() <= D["l1"] + 1e-12
        assert np.sqrt((diff ** 2).sum(-1)).max() <= D["l2"] + 1e-12
        assert np.abs(diff).max() <= D["linf"] + 1e-12
        assert D["l2"] < math.sqrt(len(S))              # tighter than the box ([A]'s √K)
    # all joint cells: ℓ1 diameter 2 whatever the number of groups and labels
    r = pf.rates(pf.Thresholds(np.linspace(-1, 1, 9), score=0), data)
    assert hull_diameter(r, range(r.K_joint))["l1"] == 2.0


def test_score_sensitivity_bounds_every_neighbour():
    """max_c |⟨ℓ_S(c,D) − ℓ_S(c,D'), r⟩| ≤ min_p ‖r‖_{p*}·Δℓ(p), for all one-row group changes."""
    rng = np.random.default_rng(0)
    data = synthetic(2, n=16)
    prob = lse_problem(data, grid=6, q=0.2)
    an = prob.analyze(pf.DP(1.0, protect="sensitive"))
    c = Constants(prob, an)
    S = c.support
    LD = prob.rates.evaluate_all()[:, S]
    for i in range(data.n):
        other = "a" if data.groups[data.group[i]] == "b" else "b"
        LDp = lse_problem(data.with_row(i, group=other), grid=6, q=0.2).rates.evaluate_all()[:, S]
        for _ in range(20):
            r = rng.normal(size=S.size) * rng.exponential(size=S.size)
            sens, _ = score_sensitivity(r, c.delta_l.get)
            assert np.max(np.abs((LD - LDp) @ r)) <= sens * (1 + 1e-12)


# ------------------------------------------------------------------------------ ε = ∞
@pytest.mark.parametrize("make", [lse_problem, smooth_problem])
def test_non_private_reaches_the_theorem_bound_at_several_T(make):
    prob = make(synthetic(0, n=2000))
    an = prob.analyze(pf.DP(math.inf, protect="sensitive"), alpha=0.1)
    opt, best_vertex = hull_optimum(prob, an)
    gaps = {}
    for T in (1, 3, 10, 50, 300):
        res = prob.solve(pf.DP(math.inf, protect="sensitive"), backend=FW, alpha=0.1, T=T, progress=False,
                         holdout=0)       # the theorem is about the training rows, all of them
        params = res.plan.params
        gap = mixture_h_smooth(prob, an, res) - opt
        assert -1e-6 <= gap <= params["bound_h_smooth"] + 1e-9
        if T >= 3:   # the derived constant is never worse than Cor B.5's 2Kβ log T / T
            assert params["bound_h_smooth"] <= params["cor_b5_bound"]
        # the mixture's loss vector is exactly l_T (linearity), weights are FW's
        np.testing.assert_allclose(prob.rates.evaluate_mixture(res.decisions, res.weights),
                                   res.info["loss_vector"], atol=1e-12)
        assert len(set(res.decisions)) == len(res.decisions)      # repeats merged
        gaps[T] = gap
    assert gaps[300] <= 0.01 and gaps[300] <= gaps[1]
    assert not res.certificate.is_private


def test_non_private_default_T_reaches_half_alpha():
    prob = smooth_problem(synthetic(0, n=20_000))
    an = prob.analyze(pf.DP(math.inf, protect="sensitive"), alpha=0.1)
    opt, best_vertex = hull_optimum(prob, an)
    assert opt < best_vertex - 1e-3                 # the optimum is a genuine mixture
    res = prob.solve(pf.DP(math.inf, protect="sensitive"), backend=FW, alpha=0.1, progress=False)
    T = res.plan.params["T"]
    assert 1 <= T <= 2000 and res.plan.params["bound_h_smooth"] <= 0.05
    assert mixture_h_smooth(prob, an, res) - opt <= 0.05
    assert mixture_h_smooth(prob, an, res) < best_vertex   # beats every single decision


# ------------------------------------------------------------------------------ private utility
def test_private_within_predicted_bound_in_90_percent_of_seeds():
    prob = smooth_problem(synthetic(0, n=100_000))
    privacy = pf.DP(1.0, 1e-6, protect="sensitive")
    an = prob.analyze(privacy, alpha=0.1)
    opt, _ = hull_optimum(prob, an)
    plan = prob.plan(privacy, backend=FW, alpha=0.1).chosen
    bound = plan.params["bound_h_smooth"]           # (★) w.p. ≥ 1 − ρ, ρ = 0.05
    assert bound < 1.0 and 5 <= plan.params["T"] <= 200
    gaps = []
    for seed in range(20):
        res = prob.solve(privacy, backend=FW, alpha=0.1, seed=seed, progress=False)
        gaps.append(mixture_h_smooth(prob, an, res) - opt)
    assert sum(g <= bound for g in gaps) >= 18
    assert np.median(gaps) < 0.05                   # far inside the worst-case bound


def test_plan_depends_on_public_inputs_only():
    p1 = lse_problem(synthetic(0, n=500)).plan(pf.DP(1.0, 1e-6, protect="sensitive"), backend=FW, alpha=0.1).chosen
    p2 = lse_problem(synthetic(7, n=500)).plan(pf.DP(1.0, 1e-6, protect="sensitive"), backend=FW, alpha=0.1).chosen
    for key in ("T", "mechanism", "selection_share", "calibration", "bound_h_smooth"):
        assert p1.params[key] == p2.params[key]
    assert p1.predicted_excess_risk == p2.predicted_excess_risk
    # more data → smaller predicted risk (the noise terms shrink as 1/n)
    p3 = lse_problem(synthetic(0, n=50_000)).plan(pf.DP(1.0, 1e-6, protect="sensitive"), backend=FW, alpha=0.1).chosen
    assert p3.predicted_excess_risk < p1.predicted_excess_risk


# ------------------------------------------------------------------------------ privacy
def _dp_problem(data):
    r = pf.rates(pf.Thresholds(np.linspace(-1.0, 1.0, 5), score=0), data)
    return pf.Problem(pf.minimize(pf.square(r.fp["a"]) + r.fn["a"]))


def _neighbours():
    xa = np.array([-0.75, -0.25, 0.25, 0.75, -0.8, 0.3, 0.9, 0.4, -0.3, 0.8])
    ya = np.array([0, 0, 0, 0, 0, 0, 1, 1, 1, 1])
    xb = np.linspace(-1.2, 1.2, 10)
    D = pf.Dataset(np.concatenate([xa, xb])[:, None], np.concatenate([ya, (xb > 0).astype(int)]),
                   sensitive=np.array(["a"] * 10 + ["b"] * 10), group_names=["a", "b"])
    return D, D.with_row(1, group="b")           # one row's sensitive attribute changes


def _outputs(data, privacy, n_runs, seed, multiplier=None):
    """The pair of chosen decisions (T = 2) of n_runs runs, as one discrete outcome;
    ``multiplier``: the runs draw inside the audit's ``reduced_noise(multiplier)``."""
    from privfair.privacy import reduced_noise

    b = get(FW)
    prob = _dp_problem(data)
    plan = b.plan(prob, prob.analyze(privacy), privacy, {"T": 2})
    src = as_source(seed)
    out = np.empty(n_runs, dtype=np.int64)
    with reduced_noise(1.0 if multiplier is None else multiplier):
        for i in range(n_runs):
            trace = b.run(plan, rng=src, accountant=None, progress=False).trace
            out[i] = 5 * trace[0]["index"] + trace[1]["index"]
    return out


@pytest.mark.slow
def test_end_to_end_privacy_with_negative_control():
    D, Dp = _neighbours()
    privacy = pf.DP(2.0, protect="sensitive")
    cert = _dp_problem(D).solve(privacy, backend=FW, seed=0, T=2, progress=False).certificate
    assert cert.epsilon <= 2.0 and [e.count for e in cert.releases] == [2, 1]   # 2 selections + 1 release
    eps = cert.epsilon
    honest = check_dp(_outputs(D, privacy, 6000, 1), _outputs(Dp, privacy, 6000, 2), eps,
                      cert.delta, bins="discrete")
    assert honest.passed
    cheat = check_dp(_outputs(D, privacy, 4000, 3, 0.1), _outputs(Dp, privacy, 4000, 4, 0.1), eps,
                     cert.delta, bins="discrete")
    assert not cheat.passed


def test_the_plan_is_final_and_no_noise_knob_remains():
    """Issue #17: the releases are fixed at plan time; the run records exactly those events;
    the test-only option is gone (the audit wraps a solve in reduced_noise instead)."""
    import dataclasses

    prob = _dp_problem(_neighbours()[0])
    plan = prob.plan(pf.DP(1.0, 1e-6, protect="sensitive"), backend=FW, T=4).chosen
    res = prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend=FW, T=4, seed=0, progress=False)
    assert list(res.certificate.releases) == [
        dataclasses.replace(e, seeded=True) for e in plan.schedule.events()]
    assert res.info["calibration"] == plan.params["calibration"]
    budget = pf.BudgetFilter(1.0)
    with pytest.raises(pf.errors.InvalidInputError, match="_noise_multiplier"):
        prob.solve(pf.DP(1.0, protect="sensitive"), backend=FW, T=2, _noise_multiplier=0.1, budget=budget,
                   progress=False)
    assert budget.spent == (0.0, 0.0)


@pytest.mark.parametrize("privacy", [pf.DP(1.0, 1e-6, protect="sensitive"), pf.DP(0.5, protect="sensitive")])
def test_certificate_within_request_and_equal_to_the_accountant_total(privacy):
    prob = lse_problem(synthetic(3, n=2000))
    res = prob.solve(privacy, backend=FW, seed=0, alpha=0.1, progress=False)
    cert = res.certificate
    assert cert.epsilon <= privacy.epsilon and cert.delta <= privacy.delta
    acc = pf.Accountant(delta=privacy.delta or None)
    acc.extend(cert.releases)
    assert acc.total().epsilon == pytest.approx(cert.epsilon, rel=1e-12)
    T = res.plan.params["T"]
    counts = {}
    for ev in cert.releases:
        counts[ev.mechanism] = counts.get(ev.mechanism, 0) + ev.count
    kinds = list(counts)
    assert counts["exponential"] == T and sum(counts.values()) == 2 * T - 1
    if privacy.delta == 0:
        assert set(kinds) == {"exponential", "laplace"} and cert.rule == "basic"


def test_private_group_mass_estimate_is_composed_with_the_run():
    data = synthetic(4, n=5000)
    r = pf.rates(pf.Thresholds(np.linspace(-1.5, 2.0, 10), score=0), data)   # q estimated privately
    gap = pf.lse(r.selection["a"] - r.selection["b"], r.selection["b"] - r.selection["a"], eta=20)
    prob = pf.Problem(pf.minimize(r.error()), [gap <= 0.1])
    for privacy in (pf.DP(1.0, 1e-6, protect="sensitive"), pf.DP(1.0, protect="sensitive")):
        res = prob.solve(privacy, backend=FW, seed=0, alpha=0.1, progress=False, T=20)
        cert = res.certificate
        assert cert.epsilon <= privacy.epsilon * (1 + 1e-9) and cert.delta <= privacy.delta
        assert cert.releases[0].label == "group-mass lower bound"


# ------------------------------------------------------------------------------ refusals
def test_refusals_name_the_reason_and_spend_nothing():
    data = synthetic(0)
    r = pf.rates(pf.Thresholds(np.linspace(-1.5, 2.0, 15), score=0), data, group_mass_bound=0.1)
    smax = pf.Problem(pf.minimize(r.error()),
                      [pf.smax(r.selection["a"] - r.selection["b"],
                               r.selection["b"] - r.selection["a"], eta=20) <= 0.1])
    budget = pf.BudgetFilter(1.0, 1e-6)
    with pytest.raises(BackendRefusedError, match="smax") as info:
        smax.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend=FW, budget=budget)
    assert "exponential" in str(info.value)
    assert budget.spent == (0.0, 0.0)

    two = pf.Problem(pf.minimize(r.error()), [r.selection["a"] - r.selection["b"] <= 0.1,
                                              r.selection["b"] - r.selection["a"] <= 0.1])
    with pytest.raises(BackendRefusedError, match="smoothness"):
        two.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend=FW, budget=budget)

    adult = pf.datasets.load_adult("train").subsample(500, rng=0)
    rl = pf.rates(pf.LinearClassifier(adult.n_features), adult, surrogate="logistic",
                  group_mass_bound=0.02)
    with pytest.raises(BackendRefusedError, match="finite decision set"):
        pf.Problem(pf.minimize(rl.error())).solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend=FW, budget=budget)
    assert budget.spent == (0.0, 0.0)


# ------------------------------------------------------------------------------ devices
def test_torch_device_matches_numpy():
    pytest.importorskip("torch", reason="torch is optional")
    prob = lse_problem(synthetic(5, n=1000))
    # holdout=0: an unseeded reference run would hold out a different random part each time
    a = prob.solve(pf.DP(math.inf, protect="sensitive"), backend=FW, alpha=0.1, T=100, progress=False, holdout=0)
    b = prob.solve(pf.DP(math.inf, protect="sensitive"), backend=FW, alpha=0.1, T=100, progress=False, device="torch",
                   holdout=0)
    assert a.decisions == b.decisions and np.allclose(a.weights, b.weights)
    a = prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend=FW, alpha=0.1, T=10, seed=3, progress=False)
    b = prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend=FW, alpha=0.1, T=10, seed=3, progress=False,
                   device="torch")
    assert a.decisions == b.decisions and np.allclose(a.weights, b.weights)

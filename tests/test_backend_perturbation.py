"""Output and objective perturbation: the sensitivity theorem on neighbouring datasets, the
neighbouring-dataset tester with under-noised negative controls, fairness problems end to end
(unconstrained, penalty form, constraint form), refusals before any budget is spent, and support
recovery against an ℓ2 baseline."""

import math

import numpy as np
import pytest

import privfair as pf
from privfair.backends import get
from privfair.backends.erm.constraint import lagrange_setup, nu_interval
from privfair.backends.erm.reduction import erm_from_problem, objective_gradient
from privfair.backends.erm.releases import ERMBudget, schedule_for
from privfair.backends.erm.repair import repair_weights
from privfair.backends.erm.solver import solve, solve_certified
from privfair.errors import BackendRefusedError, InvalidInputError
from privfair.privacy.randomness import as_source
from privfair.privacy.testing import check_dp


# ------------------------------------------------------------------------------- fixtures
def tiny(flip=False):
    X = np.array([[0.9], [-0.4], [0.7], [0.2], [-0.8], [0.5], [-0.1], [0.3]])
    y = np.array([1, 0, 1, 0, 0, 1, 0, 1])
    if flip:                        # replace row 0 by a row with the opposite label
        y = y.copy()
        y[0] = 0
    return X, y


def tiny_erm(flip=False, l2=0.5, loss="logistic"):
    ds = pf.SparseLinear(1, norm=pf.norms.l1(1), radius=2.0, l2=l2, intercept=False)
    return pf.sparse.glm(*tiny(flip), ds, loss)


def fairness_data(n=2400, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.choice(["a", "b"], n, p=[0.35, 0.65])
    X = rng.normal(size=(n, 5)) * 0.5
    X[:, 0] += 0.8 * (a == "b")
    y = (X[:, 0] + X[:, 1] - 0.3 + rng.logistic(size=n) * 0.4 > 0).astype(int)
    return pf.Dataset(X, y, sensitive=a, group_names=["a", "b"])


def fairness_problem(data, l2=1e-3, norm="l1", constraint=None, objective=None, surrogate="logistic"):
    N = pf.norms.l1(5) if norm == "l1" else norm
    # Λ in the rates' scaled units (the values below were chosen in them)
    ds = pf.SparseLinear(5, norm=N, radius=4.0, l2=l2, intercept_bound=2.0, l2_units="scaled")
    r = pf.rates(ds, data, surrogate=surrogate, group_mass_bound=0.05)
    f = r.error() if objective is None else objective(r)
    cons = [] if constraint is None else [pf.abs(r.selection["a"] - r.selection["b"]) <= constraint]
    return pf.Problem(pf.minimize(f), cons), r


def train_gap(res, data):
    p = res.predict(data.X)
    return abs(p[data.group == 0].mean() - p[data.group == 1].mean())


# ------------------------------------------------------------------------------- sensitivity
def test_minimizers_of_neighbours_are_within_the_gradient_sensitivity_over_lambda():
    rng = np.random.default_rng(0)
    for trial in range(12):
        n, d = 12, 3
        X = rng.normal(size=(n, d))
        y = rng.integers(0, 2, n)
        X2, y2 = X.copy(), y.copy()
        X2[3], y2[3] = rng.normal(size=d) * 3, 1 - y[3]            # one row replaced
        loss = ["logistic", "smoothed_hinge", "squared"][trial % 3]
        ds = pf.SparseLinear(d, norm=pf.norms.l1(d), radius=1.5, l2=0.3, feature_bound=1.0)
        e1, e2 = pf.sparse.glm(X, y, ds, loss), pf.sparse.glm(X2, y2, ds, loss)
        t1, t2 = solve_certified(e1).theta, solve_certified(e2).theta
        bound = e1.grad_sensitivity / e1.l2
        assert np.linalg.norm(t1 - t2) <= bound * (1 + 1e-6)


def test_fairness_weighted_minimizers_respect_the_same_bound():
    data = fairness_data(n=40, seed=3)
    prob, r = fairness_problem(data, l2=0.05, objective=lambda r: r.error()
                               + 0.03 * (r.selection["b"] - r.selection["a"]))
    i = 5
    data2 = data.with_row(i, group="a" if data.group[i] == 1 else "b")
    prob2, _ = fairness_problem(data2, l2=0.05, objective=lambda r: r.error()
                                + 0.03 * (r.selection["b"] - r.selection["a"]))
    g = objective_gradient(prob)
    e1, e2 = erm_from_problem(prob, g), erm_from_problem(prob2, g)
    assert e1.zeta == e2.zeta                  # public constants
    d = np.linalg.norm(solve_certified(e1).theta - solve_certified(e2).theta)
    assert 0 < d <= e1.grad_sensitivity / e1.l2 * (1 + 1e-6)


def test_solver_certificate_is_honest():
    erm = tiny_erm()
    sol = solve(erm, tau=1e-10)
    ref = solve(erm, tau=1e-14).theta
    assert sol.certified and np.linalg.norm(sol.theta - ref) <= sol.tau + 1e-13


# ------------------------------------------------------------------------------- DP tester
def _outputs(method, flip, n, seed, spec=(1.0, 1e-3), multiplier=None):
    """n releases of ``method`` on the tiny ERM (row 0 relabelled when ``flip``), each through a
    fresh draw of the plan-time schedule; ``multiplier``: inside ``reduced_noise`` (a control)."""
    from privfair.privacy import reduced_noise

    b = get(method)
    erm = tiny_erm(flip)
    src = as_source(seed)
    opts = b.options_from({})            # the defaults, as a plan passes them
    rel = schedule_for(b, erm, ERMBudget(*spec), "row", opts, "t")

    def one():
        return b.private_erm(erm, rel.budget, draws=rel.schedule.open(None, src),
                             options=opts)[0]
    if multiplier is None:
        return np.array([one() for _ in range(n)])
    with reduced_noise(multiplier):
        return np.array([one() for _ in range(n)])


def test_output_perturbation_passes_the_tester_and_an_under_noised_control_fails():
    D, Dp = _outputs("output_perturbation", False, 6000, 1), _outputs("output_perturbation", True, 6000, 2)
    assert check_dp(D, Dp, 1.0, 1e-3, bins=20).passed
    D, Dp = (_outputs("output_perturbation", False, 3000, 3, multiplier=0.02),
             _outputs("output_perturbation", True, 3000, 4, multiplier=0.02))
    assert not check_dp(D, Dp, 1.0, 1e-3, bins=20).passed


def test_objective_perturbation_passes_the_tester_and_an_under_noised_control_fails():
    D, Dp = _outputs("objective_perturbation", False, 2000, 5), _outputs("objective_perturbation", True, 2000, 6)
    assert check_dp(D, Dp, 1.0, 1e-3, bins=12).passed
    D, Dp = (_outputs("objective_perturbation", False, 800, 7, multiplier=0.02),
             _outputs("objective_perturbation", True, 800, 8, multiplier=0.02))
    assert not check_dp(D, Dp, 1.0, 1e-3, bins=12).passed


def test_objective_perturbation_noise_matches_kifer_et_al_for_replacement():
    """KST's σ = ζ√(8 log(2/δ) + 4ε)/ε (add/remove, ε/2 of it for the noise) with ζ → 2ζ under
    replacement is, up to the tail constant, our σ = ζ/u, u = (√(t² + 2ε₂) − t)/2 at ε₂ = ε/2."""
    for eps in (0.1, 0.5, 1.0, 3.0):
        for delta in (1e-5, 1e-9):
            t = math.sqrt(2 * math.log(1 / delta))
            ours = 1.0 / ((math.sqrt(t * t + eps) - t) / 2)
            kst = 2 * math.sqrt(8 * math.log(2 / delta) + 4 * eps) / eps
            assert abs(ours / kst - 1) < 0.12


# ------------------------------------------------------------------------------- end to end
@pytest.mark.parametrize("method", ["output_perturbation", "objective_perturbation"])
def test_unconstrained_fairness_problem_end_to_end(method):
    data = fairness_data()
    prob, r = fairness_problem(data)
    privacy = pf.DP(1.0, 1e-6, protect="row")
    plan = prob.plan(privacy, backend=method).chosen
    assert plan is not None and math.isfinite(plan.predicted_excess_risk)
    # holdout=0: the test is about the private fit on the rows it trained on (its error is
    # measured on `data`); with #18's default 20% hold-out it trains on a random 80% and the
    # held-out check may return the constant rule instead (its own tests: test_holdout.py)
    res = prob.solve(privacy, backend=method, seed=0, progress=False, holdout=0)
    assert res.certificate.epsilon <= 1.0 + 1e-9 and res.certificate.delta <= 1e-6
    assert r.decisions.contains(res.decision)
    base = min(data.y.mean(), 1 - data.y.mean())
    assert res.metrics(data)["error"] < base
    ref = prob.solve(pf.DP(math.inf, protect="row"), backend=method, holdout=0)
    assert not ref.certificate.is_private


def test_penalty_form_and_constraint_form_reduce_the_parity_gap():
    """Every solve passes holdout=0: the gaps compared are training gaps (on ``data``, the rows
    the constraint form's releases and repair guarantee speak about); #18's default hold-out
    would train on a random 80% and may replace the rule by the constant one."""
    data = fairness_data()
    plain, _ = fairness_problem(data)
    g0 = train_gap(plain.solve(pf.DP(math.inf, protect="row"), backend="objective_perturbation",
                               holdout=0), data)
    pen, _ = fairness_problem(data, objective=lambda r: r.error()
                              + 0.03 * (r.selection["b"] - r.selection["a"]))
    res = pen.solve(pf.DP(4.0, 1e-6, protect="row"), backend="objective_perturbation", seed=1,
                    holdout=0)
    assert train_gap(res, data) < g0 - 0.05
    con, _ = fairness_problem(data, constraint=0.05)
    for seed in (2, 3):
        res = con.solve(pf.DP(4.0, 1e-6, protect="row"), backend="objective_perturbation",
                        seed=seed, release_share=0.5, holdout=0)   # margin < level, 2,400 rows
        assert 0 < res.info["slack"] < 0.05
        assert res.certificate.epsilon <= 4.0 + 1e-9
        assert len(res.certificate.releases) == 3        # labels' u, final ERM, final u
        assert res.trace[0]["labels"] and res.trace[1]["final"] and "repair" in res.trace[2]
        # the repaired mixture's expected training gap is within the level (w.p. ≥ 1 − ρ)
        p = res.predict_proba(data.X)
        gap = abs(p[data.group == 0].mean() - p[data.group == 1].mean())
        assert gap <= 0.05 and gap < g0 - 0.05
    plan = con.plan(pf.DP(4.0, 1e-6, protect="row"), backend="output_perturbation").chosen
    assert plan.params["erm_calls"] == 1 and len(plan.budget) == 2
    probe = con.plan(pf.DP(4.0, 1e-6, protect="row"), backend="output_perturbation",
                     probe_share=0.2).chosen
    assert probe.params["erm_calls"] == 2 and len(probe.budget) == 3


def test_repair_weights_meet_the_level_minus_the_margin():
    phi = lambda u: abs(u) - 0.05                   # noqa: E731
    assert repair_weights(phi, 0.02, [0.0], 0.01) == (1.0, None, 0.0)
    w, j, wj = repair_weights(phi, 0.12, [0.0, -0.2], 0.01)
    assert j == 1 and phi(w * 0.12 + wj * -0.2) <= -0.01 + 1e-9   # the better partner
    w0, j0, _ = repair_weights(phi, 0.12, [0.0], 0.01)
    assert j0 == 0 and abs(w0 * 0.12 - 0.04) <= 1e-4 and w0 < w
    assert repair_weights(phi, 0.3, [0.2], 0.01) is None


# ------------------------------------------------------------------------------- refusals
def test_refusals_are_typed_and_spend_nothing():
    data = fairness_data(n=300)
    budget = pf.BudgetFilter(1.0, 1e-6)
    no_l2, _ = fairness_problem(data, l2=0.0)
    with pytest.raises(BackendRefusedError, match="explicit ℓ2 term"):
        no_l2.solve(pf.DP(1.0, 1e-6, protect="row"), backend="output_perturbation", budget=budget)
    hinge, _ = fairness_problem(data, surrogate="smoothed_hinge")
    with pytest.raises(BackendRefusedError, match="twice continuously differentiable"):
        hinge.solve(pf.DP(1.0, 1e-6, protect="row"), backend="objective_perturbation", budget=budget)
    rough, _ = fairness_problem(data, surrogate="hinge")
    for m in ("output_perturbation", "objective_perturbation", "dual_frank_wolfe"):
        with pytest.raises(BackendRefusedError, match="not smooth"):
            rough.solve(pf.DP(1.0, 1e-6, protect="row"), backend=m, budget=budget)
    too_fair, _ = fairness_problem(data, objective=lambda r: r.error()
                                   + 0.2 * (r.selection["b"] - r.selection["a"]))
    with pytest.raises(BackendRefusedError, match="not convex"):
        too_fair.solve(pf.DP(1.0, 1e-6, protect="row"), backend="objective_perturbation",
                       budget=budget)
    r = pf.rates(pf.LinearClassifier(5, radius=2.0), data, surrogate="logistic")
    with pytest.raises(BackendRefusedError, match="SparseLinear"):
        pf.Problem(pf.minimize(r.error())).solve(pf.DP(1.0, 1e-6, protect="row"),
                                                 backend="objective_perturbation", budget=budget)
    ds = pf.SparseLinear(5, norm=pf.norms.l1(5), radius=2.0, l2=1e-3, feature_bound=2.0)
    r = pf.rates(ds, data, surrogate="logistic")      # rates clip at 1.0, the set at 2.0
    with pytest.raises(BackendRefusedError, match="feature_bound"):
        pf.Problem(pf.minimize(r.error())).solve(pf.DP(1.0, 1e-6, protect="row"),
                                                 backend="output_perturbation", budget=budget)
    assert budget.spent == (0.0, 0.0) and budget.history == []


def test_unbounded_features_under_row_privacy_are_refused_before_spending():
    ds = pf.SparseLinear(1, norm=pf.norms.l1(1), radius=2.0, l2=0.1, feature_bound=None)
    erm = pf.sparse.glm(*tiny(), ds)
    with pytest.raises(InvalidInputError, match="bounded features"):
        pf.sparse.fit(erm, pf.DP(1.0, 1e-6, protect="row"), "output_perturbation")
    pf.sparse.fit(erm, pf.DP(math.inf, protect="row"), "output_perturbation")   # ε = ∞ is fine


def test_direct_glm_api_with_squared_loss_and_pure_epsilon():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(3000, 6)) / 2
    y = np.clip(X @ np.array([1.0, -1.0, 0, 0, 0, 0]) + 0.1 * rng.normal(size=3000), -1, 1)
    ds = pf.SparseLinear(6, norm=pf.norms.l1(6), radius=3.0, l2=0.05, feature_bound=2.0)
    erm = pf.sparse.glm(X, y, ds, "squared")
    for m in ("output_perturbation", "objective_perturbation"):
        res = pf.sparse.fit(erm, pf.DP(2.0, protect="row"), m, seed=0)       # pure ε
        assert res.certificate.epsilon <= 2.0 + 1e-9 and res.certificate.delta == 0
        assert res.certificate.idealized_numerics          # Gamma-norm noise: float samplers
        assert np.isfinite(res.info["predicted_excess_risk"])


# ------------------------------------------------------------------------------- sparsity
def test_l1_constrained_private_solutions_recover_the_support_better_than_l2():
    rng = np.random.default_rng(11)
    n, d, k = 6000, 30, 3
    f1 = {"l1": [], "l2": []}
    for seed in range(3):
        X = rng.normal(size=(n, d)) / math.sqrt(d) * 1.5
        beta = np.zeros(d)
        beta[:k] = [4.0, -4.0, 3.0]
        y = (X @ beta + rng.logistic(size=n) * 0.5 > 0).astype(int)
        for name, N, rad in (("l1", pf.norms.l1(d), 12.0), ("l2", None, 8.0)):
            ds = pf.SparseLinear(d, norm=N, radius=rad, l2=0.0, intercept_bound=1.0)
            res = pf.sparse.fit(pf.sparse.glm(X, y, ds), pf.DP(1.0, 1e-6, protect="row"),
                                "objective_perturbation", seed=seed)
            w = res.decision[:-1]
            sup = np.abs(w) > 1e-6 * np.abs(w).max()
            tp = sup[:k].sum()
            f1[name].append(2 * tp / (sup.sum() + k))
    assert np.mean(f1["l1"]) > np.mean(f1["l2"]) + 0.3


def test_final_erm_release_covers_the_multiplier_chosen_at_run_time():
    """The final ERM's multiplier ν₁ is picked at run time from the released ũ₀, but its release
    is scheduled at plan time: the schedule is calibrated for the largest row weight any
    reachable ν₁ gives, so the sensitivity of the ERM actually solved never exceeds the one its
    event claims (before the fix the plan used the ν = 0 ERM's)."""
    data = fairness_data(n=800, seed=4)
    con, _ = fairness_problem(data, constraint=0.02)
    privacy = pf.DP(4.0, 1e-6, protect="row")
    b = get("output_perturbation")
    setup = lagrange_setup(con, con.analyze(privacy))
    lo, hi = nu_interval(setup)
    omegas = [erm_from_problem(con, setup.r_f + nu * setup.d).row_weight_bound
              for nu in np.linspace(lo, hi, 41)]
    # holdout=0: the ERM rebuilt below from `con` must be the one the run solved (all rows)
    res = con.solve(privacy, backend="output_perturbation", seed=5, release_share=0.5,
                    progress=False, holdout=0)
    claimed = [ev for ev in res.certificate.releases if ev.mechanism == "gaussian"][0]
    nu1 = [t for t in res.trace if t.get("final")][0]["nu"]
    erm1 = erm_from_problem(con, setup.r_f + nu1 * setup.d)
    assert b.sensitivity(erm1)[0] <= claimed.sensitivity * (1 + 1e-12)
    assert res.info["budget"].final_weight_bound >= max(omegas) * (1 - 1e-12)

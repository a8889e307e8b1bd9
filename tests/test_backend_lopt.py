"""LOPT backend ([A] Algorithm 2, corrected): convergence without noise, utility within the
plan's bound, the linear-classifier oracle (sensitivity by brute force), end-to-end privacy with
a negative control, certificates and refusals."""

import dataclasses
import itertools
import math
import time

import cvxpy as cp
import numpy as np
import pytest

import privfair as pf
from privfair.backends.loss_vector import oracles as O
from privfair.backends import get
from privfair.errors import BackendRefusedError
from privfair.privacy import Accountant, Schedule
from privfair.privacy.randomness import as_source
from privfair.privacy.testing import check_dp


def threshold_data(n, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.choice(["a", "b"], n)
    x = rng.normal(size=n) + 0.8 * (a == "a")
    y = (x + rng.normal(scale=0.8, size=n) > 0.5).astype(int)
    return pf.Dataset(x[:, None], y, sensitive=a, group_names=["a", "b"])


def mixture_optimum(prob, analysis):
    """min over the simplex of h(Σ p_c ℓ(c)) with cvxpy (the expressions' to_cvxpy)."""
    L = prob.rates.evaluate_all()
    p = cp.Variable(L.shape[0], nonneg=True)
    lv = L.T @ p
    obj = prob.f.to_cvxpy(lv)
    if prob.g:
        obj = obj + analysis.G * cp.pos(prob.g[0].to_cvxpy(lv))
    cp.Problem(cp.Minimize(obj), [cp.sum(p) == 1]).solve()
    return float(obj.value)


def h_of(res, prob, analysis):
    return float(analysis.h_value(prob.rates.evaluate_mixture(res.decisions, res.weights)))


# ------------------------------------------------------------------------------ no noise
def test_non_private_lopt_approaches_the_mixture_optimum():
    data = threshold_data(400)
    r = pf.rates(pf.Thresholds(np.linspace(-1.5, 2.0, 12), score=0), data, group_mass_bound=0.1)
    u = r.selection["a"] - r.selection["b"]
    prob = pf.Problem(pf.minimize(r.error()), [pf.lse(u, -u, eta=50) <= 0.05])
    alpha = 0.05
    an = prob.analyze(pf.DP(math.inf, protect="sensitive"), alpha=alpha)
    hstar = mixture_optimum(prob, an)
    assert hstar < an.h_value(r.evaluate_all()).min() - 0.02      # randomizing pays here
    excess = [h_of(prob.solve(pf.DP(math.inf, protect="sensitive"), backend="lopt", alpha=alpha, T=T, progress=False),
                   prob, an) - hstar for T in (10, 100, 1000)]
    assert excess[0] > excess[1] > excess[2] >= -1e-9
    assert excess[2] <= alpha / 2                  # the softplus surrogate is within α/2 of h
    # Algorithm 2 as printed (weights at the last iterate) cycles instead of converging
    last = prob.solve(pf.DP(math.inf, protect="sensitive"), backend="lopt", alpha=alpha, T=1000, anchor="last",
                      progress=False)
    assert h_of(last, prob, an) - hstar > 10 * excess[2] + 0.1


def test_non_private_interior_optimum_and_predicted_bound():
    data = threshold_data(400)
    r = pf.rates(pf.Thresholds(np.linspace(-1.5, 2.0, 12), score=0), data)
    prob = pf.Problem(pf.minimize(pf.square(r.selection["a"] - 0.5)
                                  + pf.square(r.selection["b"] - 0.3)))
    an = prob.analyze(pf.DP(math.inf, protect="sensitive"))
    hstar = mixture_optimum(prob, an)
    assert an.h_value(r.evaluate_all()).min() > hstar + 1e-3       # no single threshold is optimal
    for T in (10, 300):
        plan = prob.plan(pf.DP(math.inf, protect="sensitive"), backend="lopt", T=T).chosen
        res = prob.solve(pf.DP(math.inf, protect="sensitive"), backend="lopt", T=T, progress=False)
        assert 0 <= h_of(res, prob, an) - hstar <= plan.predicted_excess_risk
    assert h_of(res, prob, an) - hstar < 1e-4


# ------------------------------------------------------------------------------ finite, private
def test_private_finite_oracle_within_predicted_bound_in_90_percent_of_seeds():
    data = threshold_data(5000)
    r = pf.rates(pf.Thresholds(np.linspace(-1.5, 2.0, 10), score=0), data)
    u = r.fp["a"] + r.fn["a"] - r.fp["b"] - r.fn["b"]
    prob = pf.Problem(pf.minimize(r.error() + 0.25 * pf.square(u)))
    privacy = pf.DP(4.0, protect="sensitive")
    an = prob.analyze(privacy)
    hstar = mixture_optimum(prob, an)
    plan = prob.plan(privacy, backend="lopt").chosen
    bound, h_all = plan.predicted_excess_risk, an.h_value(r.evaluate_all())
    assert plan.params["T"] > 1 and bound < h_all.max() - hstar     # T chosen; not vacuous
    hits = 0
    for seed in range(20):
        res = prob.solve(privacy, backend="lopt", seed=seed, progress=False)
        hits += h_of(res, prob, an) - hstar <= bound
    assert hits >= 18


def test_certificate_within_request_and_equal_to_the_accountant_total():
    data = threshold_data(2000)
    r = pf.rates(pf.Thresholds(np.linspace(-1.5, 2.0, 10), score=0), data, group_mass_bound=0.1)
    prob = pf.Problem(pf.minimize(r.error() + pf.square(r.fpr["a"] - r.fpr["b"])))
    for privacy in (pf.DP(1.0, protect="sensitive"), pf.DP(1.0, 1e-6, protect="sensitive"), pf.DP(0.5, 1e-5, protect="row")):
        res = prob.solve(privacy, backend="lopt", seed=0, progress=False, T=8)
        cert = res.certificate
        assert cert.epsilon <= privacy.epsilon * (1 + 1e-9) and cert.delta <= privacy.delta
        acc = Accountant(delta=privacy.delta or None)
        acc.extend(cert.releases)
        assert acc.total().epsilon == pytest.approx(cert.epsilon, rel=1e-9)
        # T oracle calls, T − 1 releases: each scheduled release recorded once, with its count
        assert [e.count for e in cert.releases] == [8, 7]
        assert cert.epsilon >= 0.97 * privacy.epsilon          # the budget is used, not wasted
        notes = " ".join(res.plan.notes)
        assert "Lemma 5.8" in notes and "this run, by" in notes
    # the accountant's composition gives each call at least [A] Lemma 5.8's ε'
    from privfair.privacy import calibrate_advanced
    cal = res.plan.params["calibration"]
    assert cal.oracle_epsilon >= calibrate_advanced(0.5, 1e-5, 8).epsilon


# ------------------------------------------------------------------------------ ERM oracle
def _tiny(seed=0, n=6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return pf.Dataset(X, rng.integers(0, 2, n), sensitive=np.array(["a", "b"] * (n // 2)),
                      group_names=["a", "b"])


def _rates(data):
    return pf.rates(pf.LinearClassifier(2, radius=2.0), data, surrogate="logistic",
                    group_mass_bound=0.2, feature_bound=1.5)


def test_erm_gradient_sensitivity_by_brute_force_over_all_neighbours():
    data = _tiny()
    rt = _rates(data)
    rng = np.random.default_rng(1)
    xs = [np.array(v) for v in ([0.0, 0.0], [3.0, -2.0], [-1.0, 0.5], [0.2, 1.4])]
    worst_ratio = 0.0
    for _ in range(4):
        r = rng.normal(size=rt.K) * (rng.random(rt.K) < 0.6)
        thetas = [rt.decisions.project(rng.normal(size=3) * 1.5) for _ in range(4)]
        for relation in ("sensitive", "row"):
            bound = O.erm_sensitivity(rt, r, relation)
            worst = O.erm_sensitivity_worst(rt, relation, np.abs(r).sum(), range(rt.K))
            assert bound <= worst + 1e-15
            nbrs = []
            for i in range(data.n):
                groups = [g for g in data.groups if g != data.groups[data.group[i]]]
                if relation == "sensitive":
                    nbrs += [data.with_row(i, group=g) for g in groups]
                else:
                    nbrs += [data.with_row(i, x=x, group=g, label=lab)
                             for x, g, lab in itertools.product(xs, data.groups, (0, 1))]
            for th in thetas:
                g0 = rt.weighted_value_and_grad(th, r)[1]
                assert np.linalg.norm(g0) <= O.erm_lipschitz(rt, r) + 1e-12
                for Dp in nbrs:
                    diff = np.linalg.norm(_rates(Dp).weighted_value_and_grad(th, r)[1] - g0)
                    assert diff <= bound * (1 + 1e-9) + 1e-15
                    worst_ratio = max(worst_ratio, diff / bound)
    assert worst_ratio > 0.2            # the bound is not vacuous on these neighbours


def _erm_setup(n=2000):
    rng = np.random.default_rng(1)
    a = rng.choice(["a", "b"], n)
    X = rng.normal(size=(n, 2)) + 0.5 * (a == "a")[:, None]
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=n) > 0.3).astype(int)
    data = pf.Dataset(X, y, sensitive=a, group_names=["a", "b"])
    return pf.rates(pf.LinearClassifier(2, radius=2.0), data, surrogate="logistic",
                    feature_bound=3.0)


def _gd_draws(mu, steps, acc):
    """Draws for one noisy-GD call at μ-GDP, as a plan schedules it (T = 1)."""
    from privfair.privacy import Schedule

    cal = O.lopt_budget("gdp", 1, mu, 1e-6)
    return Schedule(O.lopt_releases(cal, dim=1, steps=steps), 1e9, 1e-6).open(acc, 0)


def test_private_weighted_erm_at_large_budget_matches_the_exact_objective():
    rt = _erm_setup()
    r = np.zeros(rt.K)
    r[[rt.fp.index("a"), rt.fn.index("a")]] = 1.0
    r[[rt.fp.index("b"), rt.fn.index("b")]] = 0.5             # group-dependent: Δ > 0
    F = lambda th: float(r @ rt.evaluate(th))                   # noqa: E731
    exact = F(O.erm_exact(rt, r))
    acc = Accountant(delta=1e-6)
    th, sens = O.erm_oracle(rt, r, 100, "sensitive", draws=_gd_draws(50.0, 100, acc))
    assert sens > 0 and len(acc.events) == 1 and acc.events[0].count == 100
    assert F(th) - exact <= 2e-3 and F(th) >= exact - 1e-9
    th_small, _ = O.erm_oracle(rt, r, 100, "sensitive", draws=_gd_draws(0.05, 100, None))
    assert F(th_small) - exact > F(th) - exact                  # noise costs utility


def test_torch_erm_gradient_equals_numpy():
    """The torch gradient (device="torch"/"cuda") equals the numpy one, for any weights."""
    pytest.importorskip("torch", reason="device='torch' needs the optional torch extra")
    rt = _erm_setup(60)
    rng = np.random.default_rng(2)
    for _ in range(5):
        r, th = rng.normal(size=rt.K), rng.normal(size=3)
        np.testing.assert_allclose(O.erm_gradient_fn(rt, r, device="torch")(th).numpy(),
                                   O.erm_gradient_fn(rt, r)(th), rtol=1e-10, atol=1e-14)


def test_exact_oracle_on_a_sparse_set_solves_over_that_set():
    """Regression: the ε = ∞ oracle once minimized over the ℓ2 ball and then projected onto the
    ℓ1 ball, which soft-thresholded the minimizer into an intercept-only rule worse than θ = 0.
    Checked against cvxpy's minimum of the same balanced surrogate objective over the ℓ1 ball."""
    rng = np.random.default_rng(3)
    n, p = 600, 6
    a = rng.choice(["a", "b"], n)
    X = rng.normal(size=(n, p))
    y = (X @ np.array([2.0, -1.5, 1.0, 0, 0, 0]) + rng.normal(size=n) > 1.0).astype(int)
    data = pf.Dataset(X, y, sensitive=a, group_names=["a", "b"])
    ds = pf.SparseLinear(p, norm=pf.norms.l1(p), radius=3.0, intercept_bound=2.0, feature_bound=3.0)
    rt = pf.rates(ds, data, surrogate="logistic", feature_bound=3.0)
    r = np.zeros(rt.K)
    r[[rt.names.index("fpr[a]"), rt.names.index("fnr[a]")]] = 1.0
    F = lambda th: float(r @ rt.evaluate(th))                   # noqa: E731
    got = F(O.erm_exact(rt, r))
    # independent: Σ_{y=0,a} φ(z)/n_a0 + Σ_{y=1,a} φ(−z)/n_a1, all over φ(B), in cvxpy
    U, m0, m1 = rt.clipped_rows, (a == "a") & (y == 0), (a == "a") & (y == 1)
    w, b = cp.Variable(p), cp.Variable()
    z = U @ w + b
    obj = (cp.sum(cp.logistic(z[m0])) / m0.sum() + cp.sum(cp.logistic(-z[m1])) / m1.sum())
    cp.Problem(cp.Minimize(obj), [cp.norm1(w) <= 3.0, cp.abs(b) <= 2.0]).solve()
    ref = F(np.r_[w.value, b.value])
    assert got <= F(np.zeros(p + 1)) - 0.1 * (F(np.zeros(p + 1)) - ref)   # far from θ = 0
    assert got == pytest.approx(ref, rel=1e-4, abs=1e-9)


def test_lopt_with_linear_classifier_end_to_end():
    rt = _erm_setup()
    prob = pf.Problem(pf.minimize(2 * (rt.fp["a"] + rt.fn["a"]) + rt.fp["b"] + rt.fn["b"]),
                      [rt.fn["a"] <= 0.08])
    privacy = pf.DP(2.0, 1e-6, protect="sensitive")
    res = prob.solve(privacy, backend="lopt", seed=0, progress=False, T=5, gd_steps=50)
    assert res.certificate.epsilon <= 2.0 * (1 + 1e-9)
    assert res.certificate.rule == "gdp"
    ref = prob.solve(pf.DP(math.inf, protect="sensitive"), backend="lopt", progress=False, T=5)
    an = prob.analyze(privacy)
    assert h_of(res, prob, an) <= h_of(ref, prob, an) + 0.05


def test_lopt_with_linear_classifier_on_torch():
    pytest.importorskip("torch", reason="device='torch' needs the optional torch extra")
    rt = _erm_setup()
    prob = pf.Problem(pf.minimize(2 * (rt.fp["a"] + rt.fn["a"]) + rt.fp["b"] + rt.fn["b"]),
                      [rt.fn["a"] <= 0.08])
    privacy = pf.DP(2.0, 1e-6, protect="sensitive")
    ref = prob.solve(pf.DP(math.inf, protect="sensitive"), backend="lopt", progress=False, T=5)
    an = prob.analyze(privacy)
    res_t = prob.solve(privacy, backend="lopt", seed=0, progress=False, T=5, gd_steps=50,
                       device="torch")
    assert h_of(res_t, prob, an) <= h_of(ref, prob, an) + 0.05


# ------------------------------------------------------------------------------ privacy
def _pair():
    rng = np.random.default_rng(4)
    n = 20
    x = rng.normal(size=n)
    y = (x + 0.3 * rng.normal(size=n) > 0).astype(int)
    D = pf.Dataset(x[:, None], y, sensitive=np.array(["a", "b"] * (n // 2)),
                   group_names=["a", "b"])
    return D, D.with_row(10, group="b")          # a row whose move changes the scores most


def _problem(data):
    r = pf.rates(pf.Thresholds(np.linspace(-1, 1, 5), score=0), data)
    return pf.Problem(pf.minimize(r.fp["a"] + r.fn["a"] + 4 * pf.square(r.fp["a"] - r.fn["a"])))


def _outputs(data, eps, n_runs, seed, mult=None):
    """(c_1, c_2) of n_runs runs with T = 2, coded 5·c_1 + c_2; ``mult``: the runs draw inside
    the audit's ``reduced_noise(mult)``."""
    from privfair.privacy import reduced_noise

    b = get("lopt")
    prob = _problem(data)
    plan = b.plan(prob, prob.analyze(pf.DP(eps, protect="sensitive"), alpha=0.2), pf.DP(eps, protect="sensitive"), {"T": 2})
    src = as_source(seed)
    out = np.empty(n_runs, dtype=int)
    with reduced_noise(1.0 if mult is None else mult):
        for k in range(n_runs):
            tr = b.run(plan, rng=src, accountant=None, progress=False).trace
            out[k] = 5 * tr[0]["index"] + tr[1]["index"]
    return out


@pytest.mark.slow
def test_end_to_end_privacy_with_negative_control():
    D, Dp = _pair()
    cert = _problem(D).solve(pf.DP(1.0, protect="sensitive"), backend="lopt", T=2, seed=0, progress=False).certificate
    assert sum(e.count for e in cert.releases) == 3 and cert.epsilon <= 1.0
    eps = cert.epsilon
    assert check_dp(_outputs(D, eps, 2000, 1), _outputs(Dp, eps, 2000, 2), eps,
                    bins="discrete").passed
    # the same run with a tenth of the noise the certificate records is caught
    assert not check_dp(_outputs(D, eps, 2000, 3, 0.1), _outputs(Dp, eps, 2000, 4, 0.1), eps,
                        bins="discrete").passed


def test_the_plan_is_final_and_no_noise_knob_remains():
    """Issue #17: the releases are fixed at plan time; the run records exactly those events
    (no re-calibration against the accountant); the test-only option is gone."""
    D, _ = _pair()
    prob = _problem(D)
    plan = prob.plan(pf.DP(1.0, protect="sensitive"), backend="lopt", T=3).chosen
    res = prob.solve(pf.DP(1.0, protect="sensitive"), backend="lopt", T=3, seed=0, progress=False)
    assert list(res.certificate.releases) == [
        dataclasses.replace(e, seeded=True) for e in plan.schedule.events()]
    assert res.info["calibration"] == plan.params["calibration"]
    with pytest.raises(pf.errors.InvalidInputError, match="_noise_multiplier"):
        prob.plan(pf.DP(1.0, protect="sensitive"), backend="lopt", _noise_multiplier=0.5)


# ------------------------------------------------------------------------------ refusals
def test_refusals_name_the_atom_and_spend_nothing():
    data = threshold_data(300)
    r = pf.rates(pf.Thresholds(np.linspace(-1.5, 2.0, 8), score=0), data, group_mass_bound=0.1)
    u = r.selection["a"] - r.selection["b"]
    smax = pf.Problem(pf.minimize(r.error()), [pf.smax(u, -u, eta=20) <= 0.1])
    budget = pf.BudgetFilter(1.0, 1e-6)
    with pytest.raises(BackendRefusedError, match="smax.*exponential"):
        smax.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend="lopt", budget=budget)
    assert budget.spent == (0.0, 0.0)
    assert smax.plan(pf.DP(1.0, protect="sensitive")).chosen.backend == "exponential"

    rt = _erm_setup(300)
    mixed = pf.Problem(pf.minimize(rt.error()), [pf.abs(rt.fp["a"] - rt.fp["b"]) <= 0.05])
    with pytest.raises(BackendRefusedError, match=r"fp\[.\].*not convex"):
        mixed.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend="lopt", budget=budget)
    with pytest.raises(BackendRefusedError, match="delta > 0"):
        pf.Problem(pf.minimize(rt.fp["a"])).solve(pf.DP(1.0, protect="sensitive"), backend="lopt", budget=budget)
    zero_one = pf.rates(pf.LinearClassifier(2), rt.data)
    with pytest.raises(BackendRefusedError, match="surrogate"):
        pf.Problem(pf.minimize(zero_one.error())).solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend="lopt",
                                                         budget=budget)
    assert budget.spent == (0.0, 0.0)


def test_torch_scores_give_the_same_run_as_numpy():
    pytest.importorskip("torch", reason="device='torch' needs the optional torch extra")
    data = threshold_data(500)
    r = pf.rates(pf.Thresholds(np.linspace(-1.5, 2.0, 10), score=0), data)
    prob = pf.Problem(pf.minimize(r.error() + pf.square(r.fp["a"] - r.fp["b"])))
    a = prob.solve(pf.DP(1.0, protect="sensitive"), backend="lopt", seed=3, T=6, progress=False)
    b = prob.solve(pf.DP(1.0, protect="sensitive"), backend="lopt", seed=3, T=6, progress=False, device="torch")
    assert [t["index"] for t in a.trace] == [t["index"] for t in b.trace]


# ------------------------------------------------------------------------------ protect="row"
def _row_data(n=8, flip=False):
    X = np.array([[0.9], [-0.4], [0.7], [0.2], [-0.8], [0.5], [-0.1], [0.3]])[:n]
    y = np.array([1, 0, 1, 0, 0, 1, 0, 1])[:n]
    a = np.array(["a", "b"] * (n // 2))
    if flip:                                   # one row replaced: its label flips
        y = y.copy()
        y[0] = 0
    return pf.Dataset(X, y, sensitive=a, group_names=["a", "b"])


def _row_problem(data, feature_bound=1.0, set_bound=1.0):
    ds = pf.SparseLinear(1, norm=pf.norms.l1(1), radius=2.0, intercept=False,
                         feature_bound=set_bound)
    r = pf.rates(ds, data, surrogate="logistic", feature_bound=feature_bound,
                 group_mass_bound=0.2)
    return pf.Problem(pf.minimize(r.fp["a"] + r.fn["a"] + 0.5 * (r.fp["b"] + r.fn["b"])))


def _row_outputs(flip, n_runs, seed, mult=1.0):
    """θ of n_runs T = 1 runs; ``mult`` < 1: inside the audit's ``reduced_noise(mult)``, which
    reaches the row-private ERM's own draws."""
    from privfair.privacy import reduced_noise

    b = get("lopt")
    prob = _row_problem(_row_data(flip=flip))
    privacy = pf.DP(1.0, 1e-3, protect="row")
    plan = b.plan(prob, prob.analyze(privacy), privacy, {"T": 1})
    src = as_source(seed)
    with reduced_noise(mult):
        return np.array([b.run(plan, rng=src, accountant=None, progress=False).decisions[0][0]
                         for _ in range(n_runs)])


@pytest.mark.slow
def test_lopt_row_oracle_passes_the_tester_and_an_under_noised_control_fails():
    plan = _row_problem(_row_data()).plan(pf.DP(1.0, 1e-3, protect="row"), backend="lopt",
                                          T=1).chosen
    assert plan.params["oracle_method"] == "objective_perturbation"
    D, Dp = _row_outputs(False, 2000, 1), _row_outputs(True, 2000, 2)
    assert check_dp(D, Dp, 1.0, 1e-3, bins=12).passed
    D, Dp = _row_outputs(False, 800, 3, 0.02), _row_outputs(True, 800, 4, 0.02)
    assert not check_dp(D, Dp, 1.0, 1e-3, bins=12).passed


def test_lopt_row_certificate_equals_the_accountant_total():
    rt = _erm_setup(1500)
    ds = pf.SparseLinear(2, norm=pf.norms.l1(2), radius=3.0, intercept_bound=2.0,
                         feature_bound=3.0)
    r = pf.rates(ds, rt.data, surrogate="logistic", feature_bound=3.0, group_mass_bound=0.1)
    prob = pf.Problem(pf.minimize(pf.maximum(r.fpr["a"] + r.fnr["a"], r.fpr["b"] + r.fnr["b"])))
    privacy = pf.DP(1.0, 1e-6, protect="row")
    res = prob.solve(privacy, backend="lopt", seed=0, progress=False, T=3)
    cert = res.certificate
    assert cert.epsilon <= 1.0 * (1 + 1e-9) and cert.delta <= 1e-6 * (1 + 1e-9)
    assert cert.epsilon >= 0.97                              # the budget is used
    assert [e.count for e in cert.releases] == [3, 2]        # T ERM calls, T − 1 releases
    acc = Accountant(delta=1e-6)
    acc.extend(cert.releases)
    assert acc.total().epsilon == pytest.approx(cert.epsilon, rel=1e-9)
    assert "objective" in cert.releases[0].theorem and cert.releases[0].count == 3
    assert res.plan.params["oracle_method"] == "objective_perturbation"
    assert any("private_weighted_erm" in n for n in res.plan.notes)


def test_lopt_row_refuses_unbounded_or_mismatched_features_before_spending():
    data = _row_data()
    budget = pf.BudgetFilter(1.0, 1e-6)
    for set_bound in (None, 2.0):                            # rates clip at 1.0
        prob = _row_problem(data, feature_bound=1.0, set_bound=set_bound)
        with pytest.raises(BackendRefusedError, match="unbounded or mismatched features"):
            prob.solve(pf.DP(1.0, 1e-6, protect="row"), backend="lopt", budget=budget)
    lc = pf.rates(pf.LinearClassifier(1, radius=2.0), data, surrogate="logistic")
    prob = pf.Problem(pf.minimize(lc.fp["a"]))
    with pytest.raises(BackendRefusedError, match="SparseLinear"):   # asked for explicitly
        prob.solve(pf.DP(1.0, 1e-6, protect="row"), backend="lopt", budget=budget,
                   oracle="objective_perturbation")
    assert budget.spent == (0.0, 0.0)
    # protect="sensitive" keeps the noisy-GD oracle
    plan = _row_problem(data).plan(pf.DP(1.0, 1e-6, protect="sensitive"), backend="lopt", T=2).chosen
    assert plan.params["oracle"] == "noisy projected GD"


# ------------------------------------------------------------------------------ the reduction
def _soft_counts(rt, theta):
    s = rt.soft(theta)[0]
    C = np.zeros((rt.G, 2, 2))
    for i in range(rt.n):
        g, y = rt.data.group[i], rt.data.y[i]
        C[g, y, 1] += s[i]
        C[g, y, 0] += 1 - s[i]
    return C


def _brute_linear(rt, r, C, den, den_g):
    """r·ℓ from counts C with the given conditional denominators (loops, no shared code)."""
    total = 0.0
    for g in range(rt.G):
        for y in (0, 1):
            for j in (0, 1):
                total += r[rt.layout.joint[g, y, j]] * C[g, y, j] / rt.n
                total += r[rt.layout.rate[g, y, j]] * C[g, y, j] / den[g, y]
        total += r[rt.layout.selection[g]] * (C[g, 0, 1] + C[g, 1, 1]) / den_g[g]
    return total


def test_merged_reduction_weights_against_brute_force():
    from privfair.backends.erm import reduction as E

    rt = _erm_setup(60)
    q = 0.05
    rt = rt.with_group_mass_bound(q, source="public")
    rng = np.random.default_rng(2)
    n_gy = np.array([[np.sum((rt.data.group == g) & (rt.data.y == y)) for y in (0, 1)]
                     for g in range(rt.G)], float)
    q_arr, qg_arr = rt.group_mass()
    public = (rt.n * np.asarray(q_arr), rt.n * np.asarray(qg_arr))
    clamp = (np.maximum(n_gy, public[0]), np.maximum(n_gy.sum(axis=1), public[1]))
    for _ in range(5):
        r = rng.normal(size=rt.K)
        th1, th2 = rng.normal(size=3), rng.normal(size=3)
        s1, s2 = rt.soft(th1)[0], rt.soft(th2)[0]
        C1, C2 = _soft_counts(rt, th1), _soft_counts(rt, th2)
        for mode, (den, den_g) in (("clamped", clamp), ("public", public)):
            coef = E.row_coefficients(rt, r, mode)
            brute = _brute_linear(rt, r, C1, den, den_g) - _brute_linear(rt, r, C2, den, den_g)
            assert float(coef @ (s1 - s2)) == pytest.approx(brute, rel=1e-10, abs=1e-13)
        # "clamped" is exactly r·ℓ as Rates defines it (and its gradient), and Rates' own map
        assert float(E.row_coefficients(rt, r, "clamped") @ (s1 - s2)) == pytest.approx(
            float(r @ (rt.evaluate(th1) - rt.evaluate(th2))), rel=1e-10, abs=1e-13)
        np.testing.assert_allclose(rt.row_coefficients(r), E.row_coefficients(rt, r, "clamped"),
                                   rtol=1e-12, atol=1e-15)
    # the ERM's labels and weights: loss weight a·1[y=0] − a·1[y=1] ≥ 0 for sign-correct r
    r = np.zeros(rt.K)
    r[[rt.fp.index("a"), rt.fn.index("b")]] = [1.0, 2.0]
    r[rt.fpr.index("b")] = 0.5
    erm = E.erm_from_rates(rt, r, "public")
    a = E.cell_coefficients(rt, r, "public")
    cells = rt.data.group * 2 + rt.data.y
    want = np.where(rt.data.y == 0, a.ravel()[cells], -a.ravel()[cells]) / rt.phi_at_bound / rt.n
    np.testing.assert_allclose(erm.w, want, rtol=1e-12)
    np.testing.assert_array_equal(erm.y, np.where(rt.data.y == 1, 1.0, -1.0))
    assert (E.rescaling(rt) >= 1 - 1e-12).all()


# ------------------------------------------------------------------------------ the budget (#17)
# One calibration through privfair.privacy.calibrate with exact closed forms as its start,
# typed frozen results, and one home for the linear score's sensitivity (LOPT and Frank–Wolfe
# disagreed at r = 0).
def _total(cal, dim=3, steps=1, delta=None):
    acc = Accountant(delta=delta or None)
    acc.extend([r.event for r in O.lopt_releases(cal, dim=dim, steps=steps)])
    return acc.total().epsilon


def test_pure_budget_at_delta_zero_is_basic_composition_exactly():
    cal = O.calibrate_lopt("pure", 5, 1.0, 0.0, 0.5, dim=3)
    assert cal.oracle_epsilon == pytest.approx((1 - 1e-6) / (5 + 4 * 0.5), rel=1e-12)
    assert cal.release.epsilon == pytest.approx(0.5 * cal.oracle_epsilon, rel=1e-12)
    assert _total(cal) <= 1.0 and cal.rule.startswith("basic")


def test_gdp_budget_is_the_exact_composition_and_steps_do_not_change_it():
    cal = O.calibrate_lopt("gdp", 4, 1.0, 1e-6, dim=3)
    assert cal.rule.startswith("gdp")
    for steps in (1, 50):              # a call of z = √steps/μ is μ-GDP whatever its steps
        assert 0.999 <= _total(cal, steps=steps, delta=1e-6) <= 1.0


def test_gaussian_budget_refines_rdp_with_pld_and_stays_within():
    fast = O.calibrate_lopt("gaussian", 6, 1.0, 1e-6, dim=3)
    tight = O.calibrate_lopt("gaussian", 6, 1.0, 1e-6, dim=3, thorough=True)
    assert tight.oracle_epsilon >= fast.oracle_epsilon
    assert _total(tight, delta=1e-6) <= 1.0
    # a schedule of it is accepted by its own check (plan time, nothing drawn)
    Schedule(O.lopt_releases(tight, dim=3), 1.0, 1e-6)


def test_spent_events_are_fitted_beside():
    from privfair.privacy import laplace_event

    spent = [laplace_event(1.0, 0.3)]
    cal = O.calibrate_lopt("pure", 4, 1.0, 0.0, dim=2, spent=spent)
    acc = Accountant()
    acc.extend(spent + [r.event for r in O.lopt_releases(cal, dim=2)])
    assert 0.99 * 1.0 <= acc.total().epsilon <= 1.0


def test_budgets_are_frozen_typed_records():
    cal = O.calibrate_lopt("pure", 3, 1.0, 0.0, dim=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cal.oracle_epsilon = 2.0
    assert isinstance(cal.release, O.ReleaseBudget) and cal.scale == cal.oracle_epsilon


@pytest.mark.parametrize("eps", [1e-50, 1e-100, 1e-300, 1e-320])
@pytest.mark.parametrize("T", [2, 20])
def test_gaussian_calibration_refuses_or_fits_without_looping(eps, T):
    """Tiny ε: the Gaussian releases' ε has a floor, so nothing may fit — a public refusal,
    quickly; what is returned composes to ≤ ε by the accountant's rules."""
    t0 = time.perf_counter()
    try:
        cal = O.calibrate_lopt("gaussian", T, eps, 1e-6, dim=2)
    except BackendRefusedError as err:
        assert "too small" in str(err)
    else:
        assert 0 < cal.oracle_epsilon and _total(cal, dim=2, delta=1e-6) <= eps
    assert time.perf_counter() - t0 < 10


# ------------------------------------------------------------------------- score sensitivity
_DL = {"l1": 0.2, "l2": 0.15, "linf": 0.1}


def test_score_sensitivity_is_hoelder_at_the_best_norm():
    rng = np.random.default_rng(0)
    for _ in range(20):
        r = rng.normal(size=5)
        want = min(np.abs(r).max() * _DL["l1"], np.linalg.norm(r) * _DL["l2"],
                   np.abs(r).sum() * _DL["linf"])
        got, q = O.score_sensitivity(r, _DL.get)
        assert got == pytest.approx(want) and q in _DL


def test_score_sensitivity_is_zero_at_zero_weights_and_the_argmax_is_free():
    """LOPT returned 0 at r = 0, Frank–Wolfe substituted Δℓ to keep its mechanism's Δ > 0.
    0 is right: every score is 0 on every dataset, so the argmax is a constant."""
    assert O.score_sensitivity(np.zeros(4), _DL.get)[0] == 0.0
    assert O.score_sensitivity(np.zeros(0), _DL.get)[0] == 0.0
    assert O.score_sensitivity(np.ones(3), lambda q: None) == (None, None)

    class _An:
        delta_l = staticmethod(_DL.get)
    L = np.random.default_rng(1).random((6, 4))
    acc = Accountant()
    cal = O.lopt_budget("pure", 1, 0.5, 0.0)
    draws = Schedule(O.lopt_releases(cal, dim=4), 1.0, 0.0).open(acc, 0)
    idx, sens = O.finite_oracle(L, np.zeros(4), _An, draws=draws)
    assert sens == 0.0 and idx == 0 and acc.events == ()      # nothing drawn, nothing charged
    idx, sens = O.finite_oracle(L, np.ones(4), _An, draws=draws)
    assert sens > 0 and len(acc.events) == 1 and math.isfinite(acc.total().epsilon)

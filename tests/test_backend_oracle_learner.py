"""DP oracle learner ([J] Algorithm 3 + Subroutine 2): the proven sensitivities (brute force),
the knob mapping, utility, the neighbouring-dataset tester with a negative control, the
certificate, refusals."""

import math

import numpy as np
import pytest

import privfair as pf
from privfair.analysis import gap_terms as GT
from privfair.backends.reductions import jagielski as J
from privfair.errors import BackendRefusedError
from privfair.privacy.testing import check_dp


def make(n, seed, shift=0.8):
    rng = np.random.default_rng(seed)
    a = rng.choice(["a", "b"], n, p=[0.6, 0.4])
    y = rng.binomial(1, np.where(a == "a", 0.5, 0.35))
    x1 = 1.5 * y + rng.normal(size=n) + shift * (a == "a")
    x2 = y + rng.normal(size=n)
    return pf.Dataset(np.c_[x1, x2], y, sensitive=a, group_names=["a", "b"])


def linear_class():
    return pf.FiniteSet(np.array([[math.cos(t), math.sin(t), b]
                                  for t in np.linspace(-0.3, 1.8, 8)
                                  for b in np.linspace(-2.0, 1.0, 10)]))


def eo(r, level=0.05):
    return pf.maximum(pf.abs(r.fpr["a"] - r.fpr["b"]), pf.abs(r.tpr["a"] - r.tpr["b"])) <= level


# --------------------------------------------------------------------------- sensitivities
def _tiny(seed, n=7, groups=("a", "b")):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = rng.integers(0, 2, n)
    g = rng.choice(groups, n)
    g[: len(groups)] = groups
    return pf.Dataset(x[:, None], y, sensitive=g, group_names=list(groups))


def _neighbours(D, relation):
    for i in range(D.n):
        for g in D.groups:
            if relation == "sensitive":
                if g != D.groups[D.group[i]]:
                    yield D.with_row(i, group=g)
                continue
            for lab in D.label_values:
                for x in (-3.0, 3.0):
                    yield D.with_row(i, group=g, label=lab, x=[x])


@pytest.mark.parametrize("relation", ["sensitive", "row"])
@pytest.mark.parametrize("seed", range(4))
def test_linear_sensitivity_bounds_every_neighbour(relation, seed):
    rng = np.random.default_rng(100 + seed)
    groups = ("a", "b") if seed % 2 == 0 else ("a", "b", "c")
    D = _tiny(seed, groups=groups)
    ds = pf.Thresholds(np.array([-0.5, 0.0, 0.7]), score=0)
    q = {(g, y): float(v) for g in groups for y in (0, 1)
         for v in [rng.uniform(0.02, 0.9 / (2 * len(groups)))]}
    rD = pf.rates(ds, D, group_mass_bound=q)
    ws = [rng.normal(size=rD.K) for _ in range(3)]
    ws.append(np.asarray(rD.error().grad(np.zeros(rD.K))))
    a = np.zeros(rD.K)
    a[rD.fpr.index("a")], a[rD.fpr.index("b")] = 1.0, -1.0
    ws.append(a)
    bounds = [J.linear_sensitivity(rD, w, relation, None) for w in ws]
    LD = rD.evaluate_all()
    worst = np.zeros(len(ws))
    for Dp in _neighbours(D, relation):
        LDp = pf.rates(ds, Dp, group_mass_bound=q).evaluate_all()
        for k, w in enumerate(ws):
            worst[k] = max(worst[k], float(np.max(np.abs((LD - LDp) @ w))))
    assert np.all(worst <= np.array(bounds) * (1 + 1e-9) + 1e-12)
    assert worst[-1] >= 0.3 * bounds[-1]          # not vacuous on a gap weight
    if relation == "sensitive":                   # the error does not depend on the group
        assert bounds[-2] == 0.0


@pytest.mark.parametrize("seed", range(3))
def test_regression_sensitivity_bounds_every_neighbour(seed):
    rng = np.random.default_rng(200 + seed)
    D = _tiny(seed, n=8)
    D = pf.Dataset(np.c_[D.X, rng.normal(size=D.n)], D.y, sensitive=D.sensitive,
                   group_names=D.groups)
    q = 0.08
    rD = pf.rates(pf.LinearClassifier(2), D, group_mass_bound=q)
    X1 = np.abs(D.X).sum(axis=1).max() + 1.0
    Xh = np.c_[D.X, np.ones(D.n)]
    for _ in range(4):
        w = rng.normal(size=rD.K)
        bound = J.regression_sensitivity(rD, w, X1, None)
        v = Xh.T @ J.regression_coefficients(rD, w)
        worst = 0.0
        for Dp in _neighbours(D, "sensitive"):
            vp = Xh.T @ J.regression_coefficients(pf.rates(pf.LinearClassifier(2), Dp,
                                                           group_mass_bound=q), w)
            worst = max(worst, float(np.abs(v - vp).sum()))
        assert worst <= bound * (1 + 1e-9)


def test_release_sensitivity_is_the_compilers_bound():
    D = _tiny(0, n=40)
    r = pf.rates(pf.Thresholds(np.linspace(-1, 1, 5)), D, group_mass_bound=0.1)
    prob = pf.Problem(pf.minimize(r.error()), [eo(r)])
    plan = prob.plan(pf.DP(1.0, protect="sensitive"), backend="oracle_learner", T=3, B=2.0).chosen
    S = [r.fpr.index("a"), r.fpr.index("b"), r.tpr.index("a"), r.tpr.index("b")]
    assert plan.params["release_sensitivity_l1"] == pytest.approx(
        r.delta_l("l1", "sensitive", support=S))


# --------------------------------------------------------------------------- knob mapping
def test_knob_mapping_rules():
    D = _tiny(0, n=40)
    r = pf.rates(pf.Thresholds(np.linspace(-1, 1, 5)), D, group_mass_bound=0.1)
    d_f, d_t = r.fpr["a"] - r.fpr["b"], r.tpr["a"] - r.tpr["b"]
    cases = [(pf.abs(d_f) <= 0.1, "abs", 0.1, 2),
             (pf.maximum(pf.abs(d_f), pf.abs(d_t)) <= 0.1, "maximum", 0.1, 4),
             (pf.norm_inf(pf.hstack(d_f, d_t)) <= 0.1, "norm_inf", 0.1, 4),
             (pf.lse(pf.abs(d_f), pf.abs(d_t), eta=100) <= 0.1, "lse", 0.1 - math.log(2) / 100, 4),
             (d_f <= 0.1, "affine", 0.1, 1)]
    for con, form, gamma, k in cases:
        terms, knobs = GT.extract_terms(pf.Problem(pf.minimize(r.error()), [con]))
        assert knobs[0].form == form and knobs[0].gamma == pytest.approx(gamma)
        assert len(terms) == k
        for seed in range(20):
            l = np.random.default_rng(seed).uniform(size=r.K)
            worst, g = max(t.a @ l - t.c for t in terms), con.expr.value(l)
            if form == "lse":       # terms ≤ 0 imply g ≤ 0: g ≤ max_k r_k ≤ g + log(2)/η
                assert g - 1e-12 <= worst <= g + math.log(2) / 100 + 1e-12
            else:                   # the same constraint
                assert worst == pytest.approx(g)


# --------------------------------------------------------------------------- utility
@pytest.fixture(scope="module")
def fair_problem():
    data = make(3000, 0)
    r = pf.rates(linear_class(), data, group_mass_bound=0.1)
    return pf.Problem(pf.minimize(r.error()), [eo(r)]), data


def _err_gap(prob, res):
    r = prob.rates
    l = r.evaluate_mixture(res.decisions, res.weights)
    return float(r.error().value(l)), float(prob.g[0].value(l)) + 0.05


def test_non_private_reference_approaches_the_fair_optimum(fair_problem):
    prob, _ = fair_problem
    r = prob.rates
    L = r.evaluate_all()
    err = L @ np.asarray(r.error().grad(np.zeros(r.K)))
    gaps = np.array([float(prob.g[0].value(l)) for l in L]) + 0.05
    # B (Remark 4.1) trades fairness for error and speed; a small B converges in few rounds
    res = prob.solve(pf.DP(math.inf, protect="sensitive"), backend="oracle_learner", B=3.0, T=2000, seed=0)
    e, g = _err_gap(prob, res)
    assert gaps[np.argmin(err)] > 0.15                      # the unconstrained optimum is unfair
    assert g <= 0.05 + 0.01
    assert e <= err[gaps <= 0.05].min() + 0.005             # a mixture, at least as good
    # the default B = G (the penalty form) is conservative: fairer, at a higher error
    d = prob.solve(pf.DP(math.inf, protect="sensitive"), backend="oracle_learner")
    assert d.plan.params["B"] == pytest.approx(d.plan.params["G"]) and _err_gap(prob, d)[1] <= g
    assert not res.certificate.is_private
    pred = res.predict(make(50, 9).X)                        # A-blind: no sensitive needed
    assert pred.shape == (50,)


def test_private_run_reduces_the_gap(fair_problem):
    prob, _ = fair_problem
    r = prob.rates
    L = r.evaluate_all()
    err = L @ np.asarray(r.error().grad(np.zeros(r.K)))
    unconstrained_gap = float(prob.g[0].value(L[np.argmin(err)])) + 0.05
    res = prob.solve(pf.DP(20.0, 1e-6, protect="sensitive"), backend="oracle_learner", seed=0, T=12)
    e, g = _err_gap(prob, res)
    assert g < 0.5 * unconstrained_gap
    assert res.certificate.epsilon <= 20.0


def test_plan_reports_thm_4_4_quantities(fair_problem):
    prob, _ = fair_problem
    plan = prob.plan(pf.DP(1.0, 1e-6, protect="sensitive"), backend="oracle_learner").chosen
    p = plan.params
    nu, _ = J.oracle_nu(T=p["T"], B=p["B"], n_terms=4, n_candidates=80,
                        geometry=J.term_geometry(plan.oracle_setup.terms, plan.oracle_setup.S),
                        eps_oracle=p["epsilon_per_mechanism"],
                        s_learner=plan.oracle_setup.s_learner(p["B"]), b=p["release_scale"],
                        n_support=4)
    assert p["nu"] == pytest.approx(nu)
    assert plan.predicted_excess_risk == pytest.approx(
        J.penalty_excess(nu, p["B"], p["G"], 1.0))          # the error's achievable range is 1
    assert p["violation_bound"] == pytest.approx((1.0 + 2 * nu) / p["B"])
    bigger = prob.plan(pf.DP(50.0, 1e-6, protect="sensitive"), backend="oracle_learner").chosen
    assert bigger.predicted_excess_risk < plan.predicted_excess_risk


# --------------------------------------------------------------------------- privacy
def test_certificate_total_equals_accountant_and_stays_within_budget(fair_problem):
    prob, _ = fair_problem
    budget = pf.BudgetFilter(3.0, 1e-5)
    res = prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend="oracle_learner", seed=1, T=5, budget=budget)
    cert = res.certificate
    T = res.plan.params["T"]
    counts = {}
    for ev in cert.releases:
        counts[ev.mechanism] = counts.get(ev.mechanism, 0) + ev.count
    assert counts.get("laplace") == T - 1 and counts.get("exponential", 0) <= T
    acc = pf.Accountant(delta=1e-6)
    acc.extend(cert.releases)
    assert acc.total().epsilon == pytest.approx(cert.epsilon)
    assert cert.epsilon <= 1.0 and cert.delta <= 1e-6
    assert budget.spent == pytest.approx((1.0, 1e-6))


def test_group_mass_estimated_privately_is_in_the_certificate():
    data = make(2000, 3)
    r = pf.rates(linear_class(), data)                      # no public bound: estimated
    prob = pf.Problem(pf.minimize(r.error()), [eo(r)])
    res = prob.solve(pf.DP(2.0, 1e-6, protect="sensitive"), backend="oracle_learner", seed=2, T=3)
    labels = [ev.label for ev in res.certificate.releases]
    assert labels[0] == "group-mass lower bound"
    assert res.certificate.epsilon <= 2.0 * (1 + 1e-9)
    assert res.plan.params["group_mass_bound"] is not None


def _pair():
    """Neighbours differing in one row's group.  Both y = 0 blocks are clamped at Q = n·q = 4
    rows, so moving a row predicted 1 from a to b moves fpr_a and fpr_b by exactly 1/4 each:
    the release's sensitivity bound is attained."""
    x = np.array([-1, -1, -1, 1, 1, 1, 1, -1,          # group a: y = 0 (row 3 moves), y = 1
                  -1, -1, -1, 1, 1, 1, 1, -1, ], dtype=float)
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1])
    a = np.array(["a"] * 8 + ["b"] * 8)
    D = pf.Dataset(x[:, None], y, sensitive=a, group_names=["a", "b"])
    return D, D.with_row(3, group="b"), 0.25


def _problem(data, q):
    r = pf.rates(pf.Thresholds(np.array([-2.0, 0.0, 2.0]), score=0), data, group_mass_bound=q)
    return pf.Problem(pf.minimize(r.error()), [pf.abs(r.fpr["a"] - r.fpr["b"]) <= 0.1])


def _outputs(data, q, eps, runs, seed, mult=1.0):
    """(h_1, h_2, released rates of round 1) of ``runs`` end-to-end runs of ``run``; ``mult``
    < 1 runs them inside the audit's ``reduced_noise(mult)``."""
    from privfair.backends import get
    from privfair.privacy import reduced_noise
    from privfair.privacy.randomness import as_source

    prob = _problem(data, q)
    b = get("oracle_learner")
    plan = b.plan(prob, prob.analyze(pf.DP(eps, protect="sensitive")), pf.DP(eps, protect="sensitive"), {"T": 2, "B": 1.0})
    src = as_source(seed)
    out = []
    with reduced_noise(mult):
        for _ in range(runs):
            tr = b.run(plan, rng=src, accountant=None).trace
            out.append([tr[0]["chosen_index"], tr[1]["chosen_index"]] + tr[0]["released_rates"])
    return np.array(out), plan


@pytest.mark.slow
def test_neighbouring_datasets_pass_and_half_noise_is_refuted():
    eps, runs = 3.0, 1200
    D, Dp, q = _pair()
    oD, plan = _outputs(D, q, eps, runs, 21)
    oDp, _ = _outputs(Dp, q, eps, runs, 22)
    # μ(h) of the released rates on both datasets, and the noise scale of the plan
    S = plan.oracle_setup.S
    muD = pf.rates(plan.oracle_setup.rates.decisions, D, group_mass_bound=q).evaluate_all()[:, S]
    muDp = pf.rates(plan.oracle_setup.rates.decisions, Dp, group_mass_bound=q).evaluate_all()[:, S]
    b = plan.params["release_scale"]
    eps_each = plan.params["epsilon_per_mechanism"]
    assert np.abs(muD - muDp).sum(axis=1).max() == pytest.approx(
        plan.params["release_sensitivity_l1"])

    def llr(o):
        h1 = o[:, 0].astype(int)
        x = o[:, 2:]
        return ((np.abs(x - muDp[h1]) - np.abs(x - muD[h1])) / b).sum(axis=1)

    def code(o, edges):
        return (o[:, 0] * 3 + o[:, 1]) * (len(edges) + 1) + np.searchsorted(edges, llr(o))

    edges = np.linspace(-eps_each, eps_each, 9)
    # the whole output (h_1, h_2, binned likelihood ratio of the release) at the certificate's ε
    from privfair.privacy import Accountant, exponential_event, laplace_event

    acc = Accountant()
    acc.extend([exponential_event(1.0, eps_each), laplace_event(1.0, eps_each)])
    eps_cert = acc.total().epsilon                # round 1's best response is free (λ₊ = λ₋)
    assert eps_cert <= eps
    assert check_dp(code(oD, edges), code(oDp, edges), eps_cert, bins="discrete").passed
    # the release at its own ε passes; with half the noise it is refuted
    assert check_dp(llr(oD), llr(oDp), eps_each, bins=20).passed
    cD, _ = _outputs(D, q, eps, runs, 23, mult=0.5)
    cDp, _ = _outputs(Dp, q, eps, runs, 24, mult=0.5)
    assert not check_dp(llr(cD), llr(cDp), eps_each, bins=20).passed


def test_first_best_response_is_free_and_recorded_events_match_the_plan():
    D, _, q = _pair()
    prob = _problem(D, q)
    res = prob.solve(pf.DP(1.0, protect="sensitive"), backend="oracle_learner", seed=0, T=3, B=1.0)
    evs = res.certificate.releases
    # λ₁ = (B/3, B/3) on ±(fpr_a − fpr_b) cancels: w₁ = ∇error, whose score is group-free
    assert res.trace[0]["oracle_sensitivity"] == 0.0
    # each scheduled release is recorded once, at its first draw, for all its rounds: round
    # 1's auditor release comes first (its best response drew nothing), then the best
    # responses — the plan's events exactly
    assert [(ev.mechanism, ev.count) for ev in evs] == [("laplace", 2), ("exponential", 3)]
    assert [ev.scale for ev in evs] == [res.plan.schedule["auditor"].event.scale,
                                        res.plan.schedule["best responses"].event.scale]
    assert all(ev.epsilon == pytest.approx(res.plan.params["epsilon_per_mechanism"]) for ev in evs)
    with pytest.raises(pf.errors.InvalidInputError, match="_noise_multiplier"):
        prob.plan(pf.DP(1.0, protect="sensitive"), backend="oracle_learner", _noise_multiplier=0.5)


# --------------------------------------------------------------------------- refusals
def _refused(prob, privacy, match, **kw):
    budget = pf.BudgetFilter(5.0, 1e-5)
    with pytest.raises(BackendRefusedError, match=match):
        prob.solve(privacy, backend="oracle_learner", seed=0, budget=budget, **kw)
    assert budget.spent == (0.0, 0.0)


def test_refusals_spend_nothing():
    data = make(300, 4)
    rl = pf.rates(pf.LinearClassifier(2), data, group_mass_bound=0.1)
    _refused(pf.Problem(pf.minimize(rl.error()), [eo(rl)]), pf.DP(1.0, protect="row"),
             "protect='sensitive'")
    rs = pf.rates(pf.LinearClassifier(2), data, surrogate="logistic", group_mass_bound=0.1)
    _refused(pf.Problem(pf.minimize(rs.error()), [eo(rs)]), pf.DP(1.0, protect="sensitive"), "surrogate=None")
    rf = pf.rates(linear_class(), data, group_mass_bound=0.1)
    _refused(pf.Problem(pf.minimize(pf.square(rf.fp["a"])), [eo(rf)]), pf.DP(1.0, protect="sensitive"), "not affine")
    _refused(pf.Problem(pf.minimize(rf.error()), [pf.square(rf.fpr["a"] - rf.fpr["b"]) <= 0.01]),
             pf.DP(1.0, protect="sensitive"), "not built from")
    rp = pf.rates(pf.PostProcessed(lambda X: X[:, 0]), data)
    _refused(pf.Problem(pf.minimize(rp.error()), [eo(rp)]), pf.DP(1.0, protect="sensitive"), "finite decision set")
    with pytest.raises(pf.errors.InvalidInputError, match="T"):
        pf.Problem(pf.minimize(rf.error()), [eo(rf)]).solve(pf.DP(1.0, protect="sensitive"), backend="oracle_learner",
                                                              T=0)


def test_row_privacy_with_a_finite_class(fair_problem):
    _, data = fair_problem
    r = pf.rates(linear_class(), data, group_mass_bound=0.1)
    prob = pf.Problem(pf.minimize(r.error()), [eo(r)])
    res = prob.solve(pf.DP(2.0, 1e-6, protect="row"), backend="oracle_learner", seed=0, T=3)
    assert res.certificate.relation == "row" and res.certificate.epsilon <= 2.0
    # under protect="row" the error's score moves with one row: the oracle pays for it
    assert all(t["oracle_sensitivity"] > 0 for t in res.trace)


def test_least_squares_oracle_for_linear_classifiers(fair_problem):
    _, data = fair_problem
    r = pf.rates(pf.LinearClassifier(2, radius=2.0), data, group_mass_bound=0.1)
    prob = pf.Problem(pf.minimize(r.error()), [eo(r)])
    unconstrained = pf.Problem(pf.minimize(r.error())).solve(pf.DP(math.inf, protect="sensitive"),
                                                             backend="oracle_learner")
    assert _err_gap(prob, unconstrained)[1] > 0.15
    ref = prob.solve(pf.DP(math.inf, protect="sensitive"), backend="oracle_learner", T=300, B=3.0)
    e_ref, g_ref = _err_gap(prob, ref)
    assert g_ref < 0.07 and e_ref < 0.35
    res = prob.solve(pf.DP(5.0, 1e-6, protect="sensitive"), backend="oracle_learner", seed=0, T=5, B=3.0)
    assert math.isinf(res.plan.predicted_excess_risk)
    assert all(np.linalg.norm(d) <= 2.0 + 1e-9 for d in res.decisions)
    kinds = {ev.mechanism for ev in res.certificate.releases}
    assert kinds == {"laplace"} and res.certificate.epsilon <= 5.0

"""Dual Frank–Wolfe ([K] Algorithm 2): the exact product sampler is the exponential mechanism over
all vertices, the selection passes the neighbouring-dataset tester (with an under-noised control),
the non-private iteration reaches the penalized optimum, and the refusals."""

import math

import networkx as nx
import numpy as np
import pytest

import privfair as pf
from privfair.backends import get
from privfair.backends.erm.releases import ERMBudget
from privfair.backends.erm.solver import solve_certified
from privfair.errors import BackendRefusedError
from privfair.privacy.randomness import as_source
from privfair.privacy.testing import check_dp, goodness_of_fit


def small_erm(flip=False, d=3, l2=0.3, norm=None, n=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 0.6
    y = (X[:, 0] - X[:, 1] > 0).astype(int)
    if flip:
        y = y.copy()
        y[0] = 1 - y[0]
    N = pf.norms.l1(d) if norm is None else norm
    ds = pf.SparseLinear(d, norm=N, radius=3.0, l2=l2, intercept_bound=1.0)
    return pf.sparse.glm(X, y, ds, "logistic")


def test_product_sampler_is_the_exponential_mechanism_over_all_vertices():
    b = get("dual_frank_wolfe")
    erm = small_erm()
    ds = erm.decisions
    c = b.constants(erm, ERMBudget(1.0, 1e-6), b.options_from({"penalty": 1.0}))
    w = np.array([0.02, -0.05, 0.01]) * c["score_sens"] / 0.05 * 3
    blocks = ds.norm.blocks()
    verts = np.array([[s0, s1, s2] for s0 in (1, -1) for s1 in (1, -1) for s2 in (1, -1)], float)
    eps = 0.8
    logits = eps * (verts @ w) * c["penalty"] / (2 * c["score_sens"])
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    src = as_source(3)
    code = {tuple(v): k for k, v in enumerate(verts)}
    draws = [code[tuple(np.sign(b.sample_vertex(blocks, w, c["penalty"], c, eps, src, ds)))]
             for _ in range(5000)]
    assert goodness_of_fit(np.array(draws), probabilities=probs) > 1e-3
    assert probs.max() > 2 * probs.min()          # the scores matter at this temperature


def _selections(flip, n, seed, scale=1.0):
    b = get("dual_frank_wolfe")
    erm = small_erm(flip)
    c = b.constants(erm, ERMBudget(1.0, 1e-6), b.options_from({"penalty": 1.0}))
    c = dict(c, score_sens=c["score_sens"] * scale)
    w = solve_certified(erm).theta[:-1]
    src = as_source(seed)
    blocks = erm.decisions.norm.blocks()
    out = []
    for _ in range(n):
        v = b.sample_vertex(blocks, w, c["penalty"], c, 1.0, src, erm.decisions)
        out.append(int(((np.sign(v) > 0) * np.array([1, 2, 4])).sum()))
    return np.array(out)


def test_selection_passes_the_tester_and_an_under_noised_control_fails():
    D, Dp = _selections(False, 3000, 1), _selections(True, 3000, 2)
    assert check_dp(D, Dp, 1.0, 0.0, bins="discrete").passed
    D, Dp = _selections(False, 1500, 3, scale=0.01), _selections(True, 1500, 4, scale=0.01)
    assert not check_dp(D, Dp, 1.0, 0.0, bins="discrete").passed


def test_non_private_dual_frank_wolfe_reaches_the_penalized_optimum():
    import cvxpy as cp

    erm = small_erm(n=200, d=4, l2=0.05, seed=5)
    lam = 0.05
    res = pf.sparse.fit(erm, pf.DP(math.inf, protect="row"), "dual_frank_wolfe", T=30,
                        penalty=lam, project=False)
    th = cp.Variable(5)
    z = erm.U @ th
    obj = (cp.sum(cp.multiply(erm.w, cp.logistic(-cp.multiply(erm.y, z))))
           + erm.l2 / 2 * cp.sum_squares(th) + lam * cp.norm1(th[:4]))
    cp.Problem(cp.Minimize(obj), [cp.norm1(th[:4]) <= 3.0, cp.abs(th[4]) <= 1.0]).solve()
    mine = erm.objective(res.decision) + lam * np.abs(res.decision[:4]).sum()
    assert mine - obj.value <= 0.02 * abs(obj.value)


def test_private_run_end_to_end_and_plan():
    rng = np.random.default_rng(2)
    n, d = 3000, 8
    X = rng.normal(size=(n, d)) / 2
    y = (X[:, 0] - X[:, 1] + 0.3 * rng.logistic(size=n) > 0).astype(int)
    data = pf.Dataset(X, y, sensitive=rng.choice(["a", "b"], n), group_names=["a", "b"])
    ds = pf.SparseLinear(d, norm=pf.norms.group([[0, 1], [2, 3], [4, 5, 6, 7]]), radius=4.0,
                         l2=0.01, intercept_bound=1.0)
    r = pf.rates(ds, data, surrogate="logistic")
    prob = pf.Problem(pf.minimize(r.error()))
    privacy = pf.DP(2.0, 1e-6, protect="row")
    plan = prob.plan(privacy, backend="dual_frank_wolfe").chosen
    assert plan.params["T"] >= 5 and any("Thm 4" in note for note in plan.notes)
    res = prob.solve(privacy, backend="dual_frank_wolfe", seed=0, T=6)
    cert = res.certificate
    assert cert.epsilon <= 2.0 + 1e-9 and cert.delta <= 1e-6 + 1e-15
    kinds = [ev.mechanism for ev in cert.releases]
    assert kinds == ["exponential", "gaussian"] and cert.releases[0].count == 6
    assert ds.contains(res.decision)


def test_pure_epsilon_certificate_counts_the_primal_recovery_release():
    # regression: at δ = 0 the Gamma-norm release of θ(ŝ) was drawn but never recorded, so the
    # certificate claimed only the selections' half of ε (found by `privfair audit`)
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 3)) / 2
    data = pf.Dataset(X, (X[:, 0] > 0).astype(int), sensitive=rng.choice(["a", "b"], 400),
                      group_names=["a", "b"])
    ds = pf.SparseLinear(3, norm=pf.norms.l1(3), radius=2.0, l2=0.01, intercept_bound=1.0)
    prob = pf.Problem(pf.minimize(pf.rates(ds, data, surrogate="logistic").error()))
    cert = prob.solve(pf.DP(2.0, 0.0, protect="row"), backend="dual_frank_wolfe", seed=0,
                      T=4).certificate
    kinds = [(ev.mechanism, ev.count) for ev in cert.releases]
    assert kinds == [("exponential", 4), ("pure", 1)]
    assert sum(ev.epsilon * ev.count for ev in cert.releases) == pytest.approx(2.0, rel=1e-6)
    assert cert.epsilon == pytest.approx(2.0, rel=1e-6) and cert.delta == 0.0


def test_refusals():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 4))
    data = pf.Dataset(X, (X[:, 0] > 0).astype(int), sensitive=rng.choice(["a", "b"], 100),
                      group_names=["a", "b"])
    privacy = pf.DP(1.0, 1e-6, protect="row")
    for N, why in ((pf.norms.group([[0, 1, 2], [2, 3]]), "not a product"),
                   (pf.norms.graph_tv(nx.path_graph(4), l1=0.5), "not a product"),
                   (None, "not a product")):
        ds = pf.SparseLinear(4, norm=N, radius=2.0, l2=0.01)
        r = pf.rates(ds, data, surrogate="logistic")
        with pytest.raises(BackendRefusedError, match=why):
            pf.Problem(pf.minimize(r.error())).solve(privacy, backend="dual_frank_wolfe")
    ds = pf.SparseLinear(4, norm=pf.norms.l1(4), radius=2.0, l2=0.0)
    r = pf.rates(ds, data, surrogate="logistic")
    with pytest.raises(BackendRefusedError, match="explicit ℓ2"):
        pf.Problem(pf.minimize(r.error())).solve(privacy, backend="dual_frank_wolfe")
    ds = pf.SparseLinear(4, norm=pf.norms.l1(4), radius=2.0, l2=0.01)
    r = pf.rates(ds, data, surrogate="logistic", group_mass_bound=0.05)
    prob = pf.Problem(pf.minimize(r.error()), [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.1])
    with pytest.raises(BackendRefusedError, match="unconstrained"):
        prob.solve(privacy, backend="dual_frank_wolfe")

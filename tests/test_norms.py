"""privfair.models.norms: Lovász extensions, dual norms, greedy LMOs and projections against brute force
over all subsets / LPs (p ≤ 8), Gaussian widths against known values, and the errors."""

import doctest
import itertools
import math

import networkx as nx
import numpy as np
import pytest
from scipy.optimize import linprog

import privfair as pf
from privfair.models import norms
from privfair.errors import InvalidInputError, ModelingError


def subsets(p):
    return [list(A) for k in range(p + 1) for A in itertools.combinations(range(p), k)]


def concave_card(p, h=(0.0, 1.0, 1.6, 2.0, 2.3, 2.5, 2.6, 2.65, 2.7)):
    return norms.lovasz(lambda A: h[len(A)], p)


def weighted_coverage(p, rng):
    sets = [set(rng.choice(6, size=rng.integers(1, 4), replace=False)) for _ in range(p)]
    wt = rng.random(6) + 0.1
    return norms.lovasz(lambda A: float(sum(wt[list(set().union(*[sets[j] for j in A]))]))
                        if A else 0.0, p)


def all_norms(p=6):
    rng = np.random.default_rng(0)
    g = nx.cycle_graph(p)
    for u, v in g.edges:
        g[u][v]["weight"] = 0.5 + rng.random()
    return [norms.l1(p), norms.linf(p), norms.group([[0, 1, 2], [2, 3], [3, 4, 5]], [1.0, 2.0, 0.5]),
            norms.group([[0, 1], [2, 3, 4], [5]], [1.5, 1.0, 2.0]), concave_card(p),
            weighted_coverage(p, rng), norms.graph_tv(g), norms.graph_tv(g, l1=0.3)]


# ------------------------------------------------------------------------------- brute force
def lovasz_bruteforce(N, v):
    """f(v) = max <v, s> over the base polytope {s(A) ≤ F(A) ∀A, s(V) = F(V)} (an LP over all
    2^p subset constraints): the Lovász extension of a submodular F."""
    p = N.p
    S = subsets(p)[1:-1]
    A_ub = np.array([[1.0 if j in A else 0.0 for j in range(p)] for A in S])
    b_ub = np.array([N.F(A) for A in S])
    res = linprog(-v, A_ub=A_ub, b_ub=b_ub, A_eq=np.ones((1, p)), b_eq=[N.F(list(range(p)))],
                  bounds=[(None, None)] * p, method="highs")
    assert res.status == 0
    return -res.fun


def dual_ball_lp(N, w):
    """max <w, s> over the dual ball: |P|(F) = {|s|(A) ≤ F(A)} (absolute) or B(F) + μ·cube."""
    p = N.p
    S = subsets(p)[1:]
    M = np.array([[1.0 if j in A else 0.0 for j in range(p)] for A in S])
    Fv = np.array([N.F(A) for A in S])
    if N.kind == "absolute":      # variables (s, t): t ≥ |s|, Σ_A t ≤ F(A)
        A_ub = np.vstack([np.hstack([np.zeros_like(M), M]),
                          np.hstack([np.eye(p), -np.eye(p)]), np.hstack([-np.eye(p), -np.eye(p)])])
        b_ub = np.concatenate([Fv, np.zeros(2 * p)])
        res = linprog(-np.concatenate([w, np.zeros(p)]), A_ub=A_ub, b_ub=b_ub,
                      bounds=[(None, None)] * p + [(0, None)] * p, method="highs")
    else:                         # variables (a, c): a ∈ B(F), |c| ≤ μ
        mu = N.l1_weight
        A_ub = np.hstack([M[:-1], np.zeros((len(S) - 1, p))])
        res = linprog(-np.concatenate([w, w]), A_ub=A_ub, b_ub=Fv[:-1],
                      A_eq=np.concatenate([np.ones(p), np.zeros(p)])[None, :], b_eq=[0.0],
                      bounds=[(None, None)] * p + [(-mu, mu)] * p, method="highs")
    assert res.status == 0
    return -res.fun


def dual_norm_bruteforce(N, s):
    p = N.p
    if N.kind == "absolute":
        return max(np.abs(s)[A].sum() / N.F(A) for A in subsets(p)[1:])
    # the dual of Ω(w) = f(w) + μ‖w‖₁ by its definition: max <s, w> s.t. Ω(w) ≤ 1 (an LP)
    e = N.edges
    m, mu = len(e), N.l1_weight
    # variables (w, t_e ≥ |w_i − w_j|, a ≥ |w|)
    nv = p + m + p
    rows, b = [], []
    for k, (i, j) in enumerate(e):
        for sg in (1, -1):
            r = np.zeros(nv)
            r[i], r[j], r[p + k] = sg, -sg, -1
            rows.append(r)
            b.append(0.0)
    for i in range(p):
        for sg in (1, -1):
            r = np.zeros(nv)
            r[i], r[p + m + i] = sg, -1
            rows.append(r)
            b.append(0.0)
    r = np.zeros(nv)
    r[p:p + m], r[p + m:] = N.c, mu
    rows.append(r)
    b.append(1.0)
    res = linprog(-np.concatenate([s, np.zeros(m + p)]), A_ub=np.array(rows), b_ub=b,
                  bounds=[(None, None)] * p + [(0, None)] * (m + p), method="highs")
    return -res.fun if res.status == 0 else math.inf


@pytest.mark.parametrize("k", range(8))
def test_lovasz_extension_against_base_polytope_lp(k):
    N = all_norms()[k]
    rng = np.random.default_rng(k)
    for _ in range(4):
        v = rng.normal(size=N.p)
        if N.kind == "absolute":
            v = np.abs(v)        # Ω(w) = f(|w|)
        assert N.lovasz(v) == pytest.approx(lovasz_bruteforce(N, v), rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("k", range(8))
def test_norm_dual_and_greedy_against_brute_force(k):
    N = all_norms()[k]
    rng = np.random.default_rng(10 + k)
    for _ in range(3):
        w = rng.normal(size=N.p)
        s = N.greedy(w)
        # the greedy vertex attains the support function (= the norm) and is dual-feasible
        assert float(s @ w) == pytest.approx(N(w), rel=1e-9)
        assert float(s @ w) == pytest.approx(dual_ball_lp(N, w), rel=1e-7, abs=1e-9)
        assert N.dual(s) <= 1 + 1e-6
        x = rng.normal(size=N.p)
        if N.kind == "symmetric" and N.l1_weight == 0:
            x -= x.mean()            # the cycle is connected: the dual is finite on Σx = 0
        assert N.dual(x) == pytest.approx(dual_norm_bruteforce(N, x), rel=1e-6, abs=1e-9)
        assert abs(float(x @ w)) <= N(w) * N.dual(x) * (1 + 1e-7) + 1e-9     # Hölder


def test_seminorm_dual_is_infinite_off_the_orthogonal_complement_of_constants():
    N = norms.graph_tv(nx.path_graph(5))
    assert N.dual(np.ones(5)) == math.inf
    assert N(np.full(5, 3.0)) == 0.0


@pytest.mark.parametrize("k", [0, 1, 2, 3, 4])
def test_primal_lmo_is_a_minimizing_vertex_of_the_ball(k):
    N = all_norms()[k]
    rng = np.random.default_rng(20 + k)
    g = rng.normal(size=N.p)
    v = N.lmo(g, radius=2.0)
    assert N(v) == pytest.approx(2.0, rel=1e-6)
    assert float(g @ v) == pytest.approx(-2.0 * N.dual(g), rel=1e-6)


@pytest.mark.parametrize("k", [0, 1, 3])
def test_exact_projections_match_a_qp(k):
    import cvxpy as cp

    N = all_norms()[k]
    assert N.exact_projection
    rng = np.random.default_rng(30 + k)
    for r in (0.3, 1.5):
        x = 2 * rng.normal(size=N.p)
        w = cp.Variable(N.p)
        cp.Problem(cp.Minimize(cp.sum_squares(w - x)), [N.cvxpy_expr(w) <= r]).solve()
        proj = N.project(x, r)
        assert N(proj) <= r * (1 + 1e-9)
        assert np.allclose(proj, w.value, atol=1e-5)


def test_group_norm_projection_has_one_home():
    """GroupNorm.project of disjoint groups is privfair.models.projections.project_disjoint_group_ball
    (bit for bit: the same function, the one the certified ERM solver calls through
    SparseLinear.project); ℓ1 and ℓ∞ keep their closed forms, which agree with it."""
    from privfair.models.projections import GroupLayout, project_disjoint_group_ball

    rng = np.random.default_rng(7)
    cases = [norms.group([[0, 1], [2, 3, 4], [5]], weights=[1.0, 2.0, 0.5]),
             norms.group([[3, 0], [1, 4], [2, 5]]), norms.l1(6), norms.linf(6)]
    for N in cases:
        layout = GroupLayout(N.groups, N.weights, N.p)
        for r in (0.05, 0.7, 3.0, 50.0):
            x = 2 * rng.normal(size=N.p)
            ref = project_disjoint_group_ball(x, layout, r)
            got = N.project(x, r)
            if N.name in ("l1", "linf"):
                np.testing.assert_allclose(got, ref, atol=1e-9)
            else:
                assert np.array_equal(got, ref)
            assert N(got) <= r * (1 + 1e-9)
    C = pf.SparseLinear(6, norm=cases[0], radius=0.7, l2=0.1)
    th = np.concatenate([2 * rng.normal(size=6), [0.3]])
    assert np.array_equal(C.project(th)[:-1], project_disjoint_group_ball(
        th[:-1], GroupLayout(cases[0].groups, cases[0].weights, 6), 0.7))


def test_generic_projection_by_qp_lies_in_the_ball():
    N = concave_card(5)
    x = np.array([2.0, -1.0, 0.5, 0.0, 3.0])
    proj = N.project(x, 1.0)
    assert N(proj) <= 1.0 + 1e-5 and not N.exact_projection


def test_l2_radius_is_attained_and_bounds_the_ball():
    rng = np.random.default_rng(1)
    for N in all_norms()[:6]:
        kappa = N.l2_radius
        for _ in range(50):
            w = rng.normal(size=N.p)
            assert np.linalg.norm(w) <= kappa * N(w) * (1 + 1e-9)
        assert kappa == pytest.approx(max(math.sqrt(len(A)) / N.F(A) for A in subsets(N.p)[1:]))
    assert norms.l1(7).l2_radius == 1.0 and norms.linf(9).l2_radius == 3.0


def test_lipschitz_l2_bounds_the_dual_ball():
    rng = np.random.default_rng(2)
    for N in all_norms():
        for _ in range(30):
            assert np.linalg.norm(N.greedy(rng.normal(size=N.p))) <= N.lipschitz_l2 * (1 + 1e-9)


# ------------------------------------------------------------------------------- widths
def test_gaussian_widths_of_the_l1_and_linf_balls_against_known_values():
    # ℓ∞ ball (dual ball of ℓ1): E‖g‖₁ = p√(2/π) exactly; ℓ1 ball: E‖g‖∞ (quadrature), and for
    # p = 2 the closed form E max(|g1|, |g2|) = E|g1 + g2| = 2/√π.
    assert norms.expected_max_abs_gaussian(1) == pytest.approx(math.sqrt(2 / math.pi), rel=1e-9)
    assert norms.expected_max_abs_gaussian(2) == pytest.approx(2 / math.sqrt(math.pi), rel=1e-9)
    for p in (2, 10, 50):
        cube = norms.l1(p).gaussian_width("dual", n_samples=0)
        assert cube.exact and cube.value == pytest.approx(p * math.sqrt(2 / math.pi))
        cross = norms.linf(p).gaussian_width("dual", n_samples=0)
        assert cross.value == pytest.approx(norms.expected_max_abs_gaussian(p))
        # primal balls: the ℓ1 ball of the ℓ1 norm has the width of the dual of ℓ∞, and back
        assert norms.l1(p).gaussian_width("primal", n_samples=0).value == pytest.approx(cross.value)
        for N, which, exact in ((norms.l1(p), "dual", cube.value), (norms.linf(p), "dual", cross.value),
                                (norms.l1(p), "primal", cross.value)):
            mc = N.gaussian_width(which, n_samples=3000, rng=p)
            assert not mc.exact and mc.stderr > 0
            assert abs(mc.value - exact) <= 4 * mc.stderr
    # asymptotics [K] quotes: O(p) for the cube, O(√log p) for the cross-polytope
    assert norms.expected_max_abs_gaussian(10 ** 4) < math.sqrt(2 * math.log(2 * 10 ** 4))


def test_monte_carlo_widths_of_structured_norms_match_their_closed_forms():
    for N in (all_norms()[2], all_norms()[6], all_norms()[7]):
        ex = N.gaussian_width("dual", n_samples=0).value
        mc = N.gaussian_width("dual", n_samples=3000, rng=5)
        assert abs(mc.value - ex) <= 4 * mc.stderr


# ------------------------------------------------------------------------------- errors
def test_non_submodular_F_is_refused_with_a_witness():
    with pytest.raises(ModelingError, match="not submodular: with A="):
        norms.lovasz(lambda A: len(A) ** 2, 4)
    with pytest.raises(ModelingError, match="not submodular"):    # random checks beyond p = 12
        norms.lovasz(lambda A: float(len(A) ** 1.5), 14)


def test_other_invalid_set_functions():
    with pytest.raises(ModelingError, match="F\\(∅\\) = 0"):
        norms.lovasz(lambda A: len(A) + 1.0, 3)
    with pytest.raises(ModelingError, match="F\\(\\{j\\}\\) > 0"):
        norms.lovasz(lambda A: float(len(A - {0}) > 0), 3)
    with pytest.raises(ModelingError, match="non-decreasing"):    # submodular, neither
        norms.lovasz(lambda A: float(len(A) * (4 - len(A)) + len(A)), 4, kind="absolute")
    with pytest.raises(ModelingError, match="in no group"):
        norms.group([[0, 1], [3]])
    with pytest.raises(InvalidInputError):
        norms.l1(0)


def test_symmetric_set_functions_give_seminorms():
    cut = nx.path_graph(4)
    N = norms.lovasz(lambda A: float(sum(1 for u, v in cut.edges if (u in A) != (v in A))), 4)
    assert N.kind == "symmetric"
    w = np.array([0.0, 2.0, -1.0, 1.0])
    assert N(w) == pytest.approx(norms.graph_tv(cut)(w))
    with pytest.raises(ModelingError, match="seminorm"):
        pf.SparseLinear(4, norm=norms.graph_tv(cut), radius=1.0)
    pf.SparseLinear(4, norm=norms.graph_tv(cut, l1=0.5), radius=1.0)


def test_doctests_of_the_new_modules():
    import privfair.models.norms
    import privfair.models.sparse

    for mod in (privfair.models.norms, privfair.models.sparse):
        res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
        assert res.failed == 0 and res.attempted > 0


def test_disjoint_group_projection_at_a_radius_equal_to_the_norm_up_to_one_ulp():
    """Regression (bench/group_sparsity.py, Adult, radius 3): Ω(x) was computed twice — once
    for the "already inside" test, once (a strided column, another summation order) as f(0) of
    the breakpoint search — and when the two disagreed by an ulp around the radius the search
    found no breakpoint above it and raised IndexError.  Radii at Ω(x) ± a few ulps must give a
    point of the ball."""
    from privfair.models.projections import GroupLayout, project_disjoint_group_ball

    rng = np.random.default_rng(0)
    p = 101
    groups = [list(range(k, min(k + 9, p))) for k in range(0, p, 9)]
    for _ in range(300):
        w = rng.uniform(0.5, 2.0, len(groups))
        layout = GroupLayout(groups, w, p)
        x = rng.normal(size=p) * rng.uniform(0.01, 0.2)
        omega = sum(wg * np.abs(x[g]).max() for wg, g in zip(w, groups))
        for r in (omega, np.nextafter(omega, 0), np.nextafter(np.nextafter(omega, 0), 0),
                  np.nextafter(omega, np.inf)):
            z = project_disjoint_group_ball(x, layout, r)
            assert sum(wg * np.abs(z[g]).max() for wg, g in zip(w, groups)) <= r * (1 + 1e-12)

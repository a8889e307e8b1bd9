"""The compiler: curvature, constants, sensitivities and refusals of whole problems."""

import itertools
import math

import numpy as np
import pytest

import privfair as pf
from privfair.errors import InvalidInputError, InvalidPrivacyError, ModelingError, PrivfairError


@pytest.fixture(scope="module")
def adult_rates():
    data = pf.datasets.load_adult("train").subsample(3000, rng=0)
    return pf.rates(pf.LinearClassifier(data.n_features, radius=1.0), data,
                    surrogate="logistic", group_mass_bound=0.02)


def eo_problem(r, atom):
    g = atom(pf.abs(r.fpr["Female"] - r.fpr["Male"]), pf.abs(r.tpr["Female"] - r.tpr["Male"]),
             eta=50)
    return pf.Problem(pf.minimize(r.error()), [g <= 0.02])


def test_adult_equalized_odds_with_lse_is_convex_with_finite_constants(adult_rates):
    a = eo_problem(adult_rates, pf.lse).analyze(pf.DP(1.0, 1e-6, protect="sensitive"))
    assert a.curvature == {"f": "affine", "g[0]": "convex"}
    assert a.is_convex
    for name in ("f", "g", "h"):
        for norm in ("l1", "l2", "linf"):
            L = a.lipschitz[name][norm]
            assert L is not None and math.isfinite(L) and L > 0
    for name in ("f", "g", "h_smooth"):
        for norm in ("l1", "l2", "linf"):
            beta = a.smoothness[name][norm]
            assert beta is not None and math.isfinite(beta)
    assert a.smoothness["g"]["linf"] > 0
    assert a.rewrites, "the |u| inside lse must be reported as rewritten to ±u"
    assert a.sensitivity_h is not None and a.sensitivity_h > 0
    assert "frank_wolfe_T" in a.iterations and "lopt_T" in a.iterations


def test_smax_is_not_convex_and_the_reason_names_it(adult_rates):
    a = eo_problem(adult_rates, pf.smax).analyze(pf.DP(1.0, 1e-6, protect="sensitive"))
    assert a.curvature["g[0]"] == "unknown"
    assert not a.is_convex
    assert "smax" in a.reason("convexity of g[0]")
    # [A] Thm 5.5 and Cor B.5 are convergence results for a convex h: no count is printed
    assert "lopt_T" not in a.iterations and "frank_wolfe_T" not in a.iterations
    assert "convex" in a.reason("iterations") and "lopt_T" not in str(a)


def test_penalty_weight_follows_the_range_of_f():
    l = pf.Variable(3)
    prob = pf.Problem(pf.minimize(l[0] + l[1]), [l[2] <= 0.1])
    a = prob.analyze(pf.DP(1.0, protect="sensitive"), alpha=0.1)
    lo, hi = prob.f.range()
    assert a.G == pytest.approx((0.1 + (hi - lo)) / 0.1)
    # no pf.rates behind the variable: no row-influence structure, honestly reported
    assert a.delta_l("l1") is None and "pf.rates" in a.reason("delta_l")


def test_h_constants_compose_from_f_and_g(adult_rates):
    a = eo_problem(adult_rates, pf.lse).analyze(pf.DP(1.0, 1e-6, protect="sensitive"), alpha=0.05)
    for norm in ("l1", "l2", "linf"):
        assert a.lipschitz["h"][norm] == pytest.approx(
            a.lipschitz["f"][norm] + a.G * a.lipschitz["g"][norm])


def test_private_group_mass_is_not_read_from_data():
    rng = np.random.default_rng(1)
    data = pf.Dataset(rng.normal(size=(60, 2)), rng.integers(0, 2, 60),
                      sensitive=np.repeat(["a", "b"], 30))
    r = pf.rates(pf.Thresholds(np.linspace(-1, 1, 5), score=0), data)   # no bound declared
    prob = pf.Problem(pf.minimize(r.error()), [pf.abs(r.fpr["a"] - r.fpr["b"]) <= 0.1])
    a = prob.analyze(pf.DP(1.0, protect="sensitive"))
    assert a.group_mass["source"] == "private" and a.group_mass["bound"] is None
    assert a.delta_l("l1") is None and "privately" in a.reason("delta_l")
    resolved = a.with_group_mass(0.2)
    assert resolved.delta_l("l1") is not None and resolved.group_mass["bound"] == 0.2


def _neighbours(data, relation, pool_x):
    grp = data.group
    for i in range(data.n):
        if relation == "sensitive":
            for g in data.groups:
                if g != data.groups[grp[i]]:
                    yield data.with_row(i, group=g)
        else:
            for x, g, lab in itertools.product(pool_x, data.groups, data.label_values):
                yield data.with_row(i, x=x, group=g, label=lab)


@pytest.mark.parametrize("relation", ["sensitive", "row"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sensitivity_of_h_holds_for_every_neighbour(relation, seed):
    """Brute force: |h(ℓ(c,D)) − h(ℓ(c,D'))| ≤ Δh for every decision and every neighbour."""
    rng = np.random.default_rng(seed)
    n = 7
    data = pf.Dataset(rng.normal(size=(n, 1)), rng.integers(0, 2, n),
                      sensitive=rng.choice(["a", "b", "c"], n), group_names=["a", "b", "c"])
    grid = np.linspace(-1.5, 1.5, 7)
    decisions = pf.Thresholds(grid, score=0)
    q = 0.1
    r = pf.rates(decisions, data, group_mass_bound=q)
    gap = pf.lse(pf.abs(r.fpr["a"] - r.fpr["b"]), pf.abs(r.tpr["a"] - r.selection["c"]), eta=5)
    prob = pf.Problem(pf.minimize(r.error() + 0.5 * r.fn["b"]), [gap <= 0.1])
    an = prob.analyze(pf.DP(1.0, protect=relation), alpha=0.2)
    G = an.G

    def h(l):
        f, gs = prob.evaluate(l)
        return f + G * max(0.0, max(gs))

    bound = an.sensitivity_h
    worst = 0.0
    pool = [np.array([-2.0]), np.array([0.3]), np.array([2.0])]
    for nb in _neighbours(data, relation, pool):
        r2 = pf.rates(decisions, nb, group_mass_bound=q)
        for t in grid:
            worst = max(worst, abs(h(r.evaluate(t)) - h(r2.evaluate(t))))
    assert worst <= bound + 1e-12
    assert worst > 0  # the check is not vacuous


@pytest.mark.parametrize("bad, field", [
    (lambda: pf.DP(0, protect="sensitive"), "epsilon"), (lambda: pf.DP(-1, protect="sensitive"), "epsilon"),
    (lambda: pf.DP(float("nan"), protect="sensitive"), "epsilon"), (lambda: pf.DP(1, 1.0, protect="sensitive"), "delta"),
    (lambda: pf.DP(1, -0.1, protect="sensitive"), "delta"), (lambda: pf.DP(1, protect="user"), "protect"),
])
def test_bad_privacy_requests_name_the_field(bad, field):
    with pytest.raises(InvalidPrivacyError) as exc:
        bad()
    assert exc.value.field == field and exc.value.fix


def test_bad_problems_raise_typed_errors():
    l = pf.Variable(4)
    with pytest.raises(ModelingError, match="scalar"):
        pf.minimize(l[0:2])
    with pytest.raises(ModelingError, match="constraints"):
        pf.Problem(pf.minimize(l[0]), [l[1]])
    with pytest.raises(ModelingError):
        pf.Problem(pf.minimize(l[0]), [pf.Variable(4)[0] <= 1])
    prob = pf.Problem(pf.minimize(l[0]), [l[1] <= 0.5])
    with pytest.raises(InvalidInputError, match="alpha"):
        prob.analyze(pf.DP(1.0, protect="sensitive"), alpha=0)
    with pytest.raises(InvalidPrivacyError):
        prob.analyze({"epsilon": 1})
    with pytest.raises(PrivfairError):
        prob.analyze(pf.DP(1.0, protect="sensitive")).delta_l("l3")


def test_analysis_renders_as_text_and_markdown(adult_rates):
    a = eo_problem(adult_rates, pf.lse).analyze(pf.DP(1.0, 1e-6, protect="sensitive"))
    text, md = str(a), a.to_markdown()
    assert "sensitivity of h" in text and "curvature g[0]" in text
    assert md.startswith("| property | value |")


# ------------------------------------------------------------------ first contact (#20 leftovers)
def _six_groups(n=600, seed=0):
    rng = np.random.default_rng(seed)
    groups = [f"group{i}" for i in range(6)]
    a = rng.choice(groups, n)
    x = rng.normal(size=n)
    data = pf.Dataset(x[:, None], (x > 0).astype(int), sensitive=a, group_names=groups)
    r = pf.rates(pf.Thresholds(np.linspace(-1, 1, 5), score=0), data, group_mass_bound=0.05)
    return r, groups


def test_maximizing_a_convex_function_says_minimize_not_smax():
    """The refusal named smax (absent) for Maximize(convex): it now names the slip and the fix."""
    r, G = _six_groups()
    gap = pf.square(r.selection[G[0]] - r.selection[G[1]])
    a = pf.Problem(pf.Maximize(gap)).analyze(pf.DP(1.0, 1e-6, protect="sensitive"))
    why = a.reason("convexity of f")
    assert "maximizing a convex function is not a convex problem" in why
    assert "did you mean pf.Minimize(" in why and "smax" not in why
    # the same expression minimized is convex: nothing to say
    assert pf.Problem(pf.Minimize(gap)).analyze(pf.DP(1.0, 1e-6, protect="sensitive")).curvature["f"] == "convex"
    # a non-convex constraint without smax gets no smax hint either; with smax it does
    concave = pf.Problem(pf.minimize(r.error()), [-gap <= -0.01]).analyze(pf.DP(1.0, 1e-6, protect="sensitive"))
    assert "smax" not in concave.reason("convexity of g[0]")
    assert "exponential" in concave.reason("convexity of g[0]")
    u = r.selection[G[0]] - r.selection[G[1]]
    sm = pf.Problem(pf.minimize(r.error()), [pf.smax(u, -u, eta=20) <= 0.1]).analyze(
        pf.DP(1.0, 1e-6, protect="sensitive"))
    assert "replace smax by pf.lse" in sm.reason("convexity of g[0]")


def test_str_of_a_big_problem_is_wrapped_without_losing_text():
    WIDTH = 100          # the project's line width for printed output (privfair/util/text.py)
    r, G = _six_groups()
    gaps = [pf.abs(r.fpr[g] - r.fpr[h]) for i, g in enumerate(G) for h in G[i + 1:]]
    prob = pf.Problem(pf.minimize(r.error()), [pf.smax(*gaps, eta=50) <= 0.05,
                                               r.selection[G[0]] <= 0.9])
    text = str(prob)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= WIDTH
    assert len(lines) > 3                        # 15 gaps do not fit on one line
    # one entry per constraint, continuation lines indented below it
    assert [line for line in lines if line.startswith("  subject to")] == [
        line for line in lines if not line.startswith(("minimize", "      ", "    "))]
    assert sum(line.startswith("  subject to") for line in lines) == 2
    flat = " ".join(text.split())
    expected = " ".join((f"minimize {prob.objective.target} "
                         + " ".join(f"subject to {g} <= 0" for g in prob.g)).split())
    assert flat == expected


def test_value_on_evaluates_a_constant_fallback_rule():
    """A held-out check's fallback returns a constant rule (another decision set than the
    problem's): value_on evaluated it as a (w, b) vector and raised (found running
    docs/language.md); it is evaluated by its own 0-1 rates."""
    from privfair.planning.holdout import constant_result

    r, G = _six_groups()
    test = _six_groups(n=400, seed=1)[0].data
    prob = pf.Problem(pf.Maximize(r.tpr[G[0]]), [r.fpr[G[0]] <= 0.5])
    res = prob.solve(pf.DP(2.0, protect="sensitive"), backend="exponential", seed=0, progress=False)
    assert 0 <= prob.value_on(test) <= 1
    assert prob.value_on(test, result=constant_result(res, 1)) == 1.0     # tpr of "always 1"
    assert prob.value_on(test, result=constant_result(res, 0)) == 0.0

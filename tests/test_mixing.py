"""A trained rule that confidently breaks its constraint on held-out rows, mixed with the best
constant rule at the largest weight whose estimates meet the levels (holdout_on_violation="mix";
privfair/planning/mixing.py, docs/trust.md "Mixing with the constant")."""

import math
import warnings

import numpy as np
import pytest

import privfair as pf
from privfair.errors import FallbackWarning, InvalidInputError, ResultStatusWarning
from privfair.expr import Variable
from privfair.planning.holdout import MIXED, HoldoutOptions, check
from privfair.planning.mixing import ConstantDecision, MixedWithConstant, mix_weight
from privfair.results.result import Result
from privfair.privacy.randomness import as_source
from test_holdout import _unfair_problem


def _unfair(n=4000, shift=1.5, extra=()):
    """test_holdout's rule 1[x₀ > 0] on data where group b's x₀ is shifted by ``shift``: a
    selection gap of ~0.5 against an asked 0.02, at an error well below the constant's (~0.42);
    ``extra``: more constraints, each built from the rates."""
    prob = _unfair_problem(n, shift)
    r = prob.rates
    if extra:
        prob = pf.Problem(pf.minimize(r.error()), list(prob.constraints) + [c(r) for c in extra])
    return prob, r.data


def _privacy(epsilon):
    return (pf.DP(epsilon, 1e-6, protect="sensitive") if math.isfinite(epsilon)
            else pf.DP(epsilon, protect="sensitive"))


def test_the_weight_is_the_largest_that_meets_every_constraint():
    v = Variable(3)
    gs = [pf.abs(v[0] - v[1]) - 0.02, pf.abs(v[0] - v[2]) - 0.05]
    ell, ell_c = np.array([0.5, 0.1, 0.3]), np.zeros(3)
    p = mix_weight(gs, ell, ell_c)
    assert p == pytest.approx(0.05, abs=1e-9)            # the first gap binds: 0.4·p ≤ 0.02
    point = p * ell + (1 - p) * ell_c
    assert max(float(g.value(point)) for g in gs) <= 1e-9
    nudged = (p + 1e-6) * ell + (1 - p - 1e-6) * ell_c    # maximal: a bit more breaks it
    assert float(gs[0].value(nudged)) > 0
    assert mix_weight(gs, np.array([0.11, 0.1, 0.1]), ell_c) == 1.0   # already meets them


@pytest.mark.parametrize("epsilon", [1.0, math.inf])
def test_a_violating_rule_is_mixed_with_the_constant_and_keeps_the_level(epsilon):
    prob, data = _unfair()
    with pytest.warns(FallbackWarning, match="with probability"):
        res = prob.solve(_privacy(epsilon), seed=0, progress=False, holdout_on_violation="mix")
    chk = res.holdout
    assert res.status == MIXED and chk.fallback and chk.fallback_reason == "violation"
    p = chk.mix_weight
    assert 0 < p < 0.2                                   # a gap of ~0.5 against 0.02
    (c,) = chk.constraints
    assert c.violated                                    # the trained rule's verdict is kept
    (m,) = chk.mixture
    assert m.estimate <= m.level + 1e-9 and not m.violated
    assert chk.error < chk.mixture_error < chk.constant_error
    # the returned rule is the mixture: p·(trained) + (1 − p)·(always the constant)
    X = np.random.default_rng(1).normal(size=(200, 2))
    const = float(chk.constant_label == 1)
    assert np.allclose(res.predict_proba(X),
                       p * chk.trained.predict_proba(X) + (1 - p) * const)
    # nothing more is spent: the certificate is the training's, the check made one release
    assert res.certificate == chk.trained.certificate
    assert res.decisions[:-1] == chk.trained.decisions          # kept as they were
    assert res.decisions[-1] == ConstantDecision(list(res.labels).index(chk.constant_label))
    if math.isfinite(epsilon):
        assert len(chk.certificate.releases) == 1
    # on the population the gap is p times the trained rule's (the constant has none)
    fresh = _unfair(n=40000)[1]
    gap_t = chk.trained.metrics(fresh)["dp_violation"]
    assert res.metrics(fresh)["dp_violation"] == pytest.approx(p * gap_t, rel=1e-9, abs=1e-12)
    err_t = chk.trained.metrics(fresh)["error"]
    err_c = float(np.mean(fresh.y != chk.constant_label))
    assert res.metrics(fresh)["error"] == pytest.approx(p * err_t + (1 - p) * err_c, rel=1e-9)
    assert err_t < res.metrics(fresh)["error"] < err_c
    assert "probability" in chk.summary() and "returned" in chk.summary()


def test_at_eps_inf_the_mixture_meets_the_level_exactly_on_the_held_out_rows():
    """No noise: the held-out gap of the mixture is p·(the trained rule's held-out gap), and p
    puts it on the level (0.02) — the bounds then hold for every p from the one event."""
    prob, data = _unfair()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultStatusWarning)
        res = prob.solve(_privacy(math.inf), seed=0, progress=False, holdout_on_violation="mix")
    (c,), (m,) = res.holdout.constraints, res.holdout.mixture
    assert m.estimate == pytest.approx(0.02, abs=1e-9)
    assert m.estimate == pytest.approx(res.holdout.mix_weight * c.estimate, rel=1e-9)
    assert m.upper - m.estimate == pytest.approx(res.holdout.mix_weight * (c.upper - c.estimate),
                                                 rel=1e-6, abs=1e-9)


def test_a_constant_whose_constraint_values_depend_on_the_data_is_not_mixed():
    """A constraint on the error reads label frequencies, which a constant's value depends on:
    the segment's estimates are no longer exact, so the constant itself is returned."""
    prob, _ = _unfair(extra=[lambda r: r.error() <= 0.5])
    with pytest.warns(FallbackWarning, match="violates its constraint"):
        res = prob.solve(_privacy(1.0), seed=0, progress=False, holdout_on_violation="mix")
    assert res.status == "fallback: constant rule" and res.holdout.mix_weight is None
    assert not res.holdout.constant_exact


def test_fallback_still_returns_the_constant_and_a_bad_choice_is_refused_before_any_draw():
    prob, _ = _unfair()
    with pytest.warns(FallbackWarning):
        res = prob.solve(_privacy(1.0), seed=0, progress=False, holdout_on_violation="fallback")
    assert res.status == "fallback: constant rule" and res.holdout.mix_weight is None
    budget = pf.BudgetFilter(2.0, 1e-5)
    with pytest.raises(InvalidInputError, match="holdout_on_violation.*'mix'"):
        prob.solve(_privacy(1.0), seed=0, progress=False, holdout_on_violation="blend",
                   budget=budget)
    assert budget.spent == (0.0, 0.0)


def test_the_mixture_decision_set_plays_each_part():
    ds = MixedWithConstant(pf.Thresholds([0.0], score=0))
    X = np.array([[-1.0], [1.0]])
    assert ds.predict(ConstantDecision(1), X).tolist() == [1, 1]
    assert ds.predict(0, X).tolist() == [0, 1]                 # the base's own decision 0
    res = Result("test", [0, ConstantDecision(0)], [0.25, 0.75], ds)
    assert res.predict_proba(X).tolist() == [0.0, 0.25]


def test_the_mixed_checks_bounds_hold_for_the_population_gap():
    """The mixture's upper bound comes from the trained rule's confidence event, for the p the
    same release chose: across seeds it stays above the mixture's population gap."""
    prob, _ = _unfair()
    fresh = _unfair(n=40000)[1]
    held = _unfair(n=1500)[1]
    trained = Result("test", [0], [1.0], prob.rates.decisions, labels=[0, 1])
    misses = 0
    for s in range(20):
        chk = check(prob, trained, held, epsilon=1.0, n_train=4000, rng=as_source(s),
                    options=HoldoutOptions(on_violation="mix"))
        assert chk.mix_weight is not None
        truth = chk.mix_weight * trained.metrics(fresh)["dp_violation"]
        misses += chk.mixture[0].upper < truth
    assert misses <= 2


def test_the_checks_plot_and_summary_show_the_returned_mixture():
    prob, _ = _unfair()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultStatusWarning)
        res = prob.solve(_privacy(1.0), seed=0, progress=False)      # "mix" is the default
    assert res.status == MIXED
    fig = res.holdout.plot()
    labels = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert any("returned mixture" in t for t in labels)
    assert "mixed with a constant rule" in fig._suptitle.get_text()
    line = [ln for ln in res.holdout.summary().splitlines() if ln.strip().startswith("returned")]
    assert f"{res.holdout.mix_weight:.4f}" in line[0]


def test_reports_evaluate_a_mixed_rule_by_its_own_decisions():
    """The Pareto and sample-complexity tables read ℓ of what a solve released: a mixture's
    decisions are not the problem's, so it is evaluated by its own rule (a constant's decision
    k read as the problem's decision k would score the wrong rule)."""
    prob, _ = _unfair()
    fresh = _unfair(n=20000)[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultStatusWarning)
        res = prob.solve(_privacy(1.0), seed=0, progress=False)
    assert res.status == MIXED
    f, (g,) = prob.evaluate(prob.ell_of(res, fresh))
    m = res.metrics(fresh)
    assert f == pytest.approx(m["error"], abs=1e-12)
    assert g + 0.02 == pytest.approx(m["dp_violation"], abs=1e-12)


def test_a_mixed_rule_travels_to_dask_workers(request):
    """On a Dask dataset the held-out check and ``Result.metrics`` are passes on the workers:
    the mixture's decision set travels there and gives the in-memory numbers."""
    pytest.importorskip("dask.dataframe", reason="the Dask engine is the optional extra "
                                                 "privfair[dask]")
    pytest.importorskip("distributed", reason="the Dask tests start a distributed.LocalCluster")
    import dask.dataframe as dd
    import pandas as pd

    request.getfixturevalue("client")
    rng = np.random.default_rng(5)
    n = 4000
    a = rng.choice(["a", "b"], n)
    x0 = rng.normal(size=n) + 1.5 * (a == "b")
    df = pd.DataFrame({"x0": x0, "x1": rng.normal(size=n), "g": a,
                       "y": (x0 + 0.5 * rng.normal(size=n) > 0.7).astype(int)})
    data = pf.Dataset.from_dask(dd.from_pandas(df, npartitions=3), label="y", sensitive="g",
                                groups=["a", "b"])
    mem = pf.Dataset(df[["x0", "x1"]], df["y"], df["g"], group_names=["a", "b"], labels=[0, 1])
    r = pf.rates(pf.Thresholds([0.0], score=0), data)
    prob = pf.Problem(pf.minimize(r.error()), [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.02])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultStatusWarning)
        res = prob.solve(_privacy(1.0), seed=0, progress=False)
    assert res.status == MIXED and 0 < res.holdout.mix_weight < 0.2
    got, want = res.metrics(data), res.metrics(mem)
    for key in ("error", "dp_violation", "eo_violation"):
        assert got[key] == pytest.approx(want[key], abs=1e-12)
    assert want["dp_violation"] == pytest.approx(
        res.holdout.mix_weight * res.holdout.trained.metrics(mem)["dp_violation"], rel=1e-9)


def test_three_labels_mix_on_every_conditional_rate():
    """Multi-class equalized odds (every P(ŷ = j | g, y) equal across groups): a constant's
    conditional rates are 1[j = c] on any data, so the segment is exact there too."""
    import itertools

    from test_holdout import _Rule

    def make(n, seed):
        rng = np.random.default_rng(seed)
        a = rng.choice(["a", "b"], n)
        y = rng.integers(0, 3, n)
        X = np.eye(3)[y] * 2.0 + rng.normal(size=(n, 3))
        X[a == "b", 0] += 1.5                   # group b leans to predicting label 0
        return pf.Dataset(X, y, a, group_names=["a", "b"], labels=[0, 1, 2])

    train, held = make(3000, 0), make(3000, 1)
    r = pf.rates(pf.FiniteSet([lambda X: np.argmax(X, axis=1)]), train)
    gaps = [pf.abs(r.rate("a", y, j) - r.rate("b", y, j)) for y, j in
            itertools.product(range(3), range(3))]
    prob = pf.Problem(pf.minimize(r.error()), [pf.maximum(*gaps) <= 0.05])
    rule = _Rule(lambda X: np.eye(3)[np.argmax(X, axis=1)], [0, 1, 2])
    out = check(prob, rule, held, epsilon=1.0, n_train=train.n, rng=as_source(0),
                options=HoldoutOptions(on_violation="mix"))
    assert out.fallback_reason == "violation" and out.constant_exact
    (c,), (m,) = out.constraints, out.mixture
    assert 0 < out.mix_weight < 1 and m.estimate <= m.level + 1e-9
    # every gap of the mixture is p times the rule's: so is their maximum
    assert m.estimate == pytest.approx(out.mix_weight * c.estimate, rel=1e-9)
    assert out.error < out.mixture_error < out.constant_error


# ----------------------------------------------------------- certified on request (holdout_certify)
def test_certify_mixes_an_uncertified_rule_until_its_bounds_meet_the_level():
    """A rule the check cannot certify (a gap near the level, a bound well above it) is mixed
    with the constant until every held-out upper bound is within level + tolerance: status
    "certified (mixed with a constant rule)", no warning, the weight the largest that does."""
    from privfair.planning.holdout import CERTIFIED_MIXED

    prob, _ = _unfair(shift=0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultStatusWarning)
        plain = prob.solve(_privacy(1.0), seed=0, progress=False, holdout_on_violation="warn")
    assert not plain.holdout.constraints[0].certified
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResultStatusWarning)        # certified: no warning
        res = prob.solve(_privacy(1.0), seed=0, progress=False, holdout_certify=True)
    chk = res.holdout
    assert res.status == CERTIFIED_MIXED and chk.fallback_reason == "certify"
    (m,) = chk.mixture
    assert m.certified and m.upper <= m.level + chk.tolerance
    assert 0 < chk.mix_weight < 1
    assert chk.error <= chk.mixture_error <= chk.constant_error


def test_the_certified_weight_is_the_largest_certified_one():
    from types import SimpleNamespace

    from privfair.planning.mixing import certify_weight

    def judged(p):                         # certified up to p = 0.37, as a monotone bound is
        return [SimpleNamespace(certified=p <= 0.37)]

    assert certify_weight(judged, 1.0) == pytest.approx(0.37, abs=1e-9)
    assert certify_weight(judged, 0.2) == 0.2              # already certified: kept
    assert certify_weight(lambda p: [SimpleNamespace(certified=p == 0)], 1.0) == 0.0


def test_certify_leaves_a_certified_rule_alone_and_refuses_a_non_boolean():
    r = _unfair(shift=0.0)[0].rates                      # no gap, a loose level: certified
    prob = pf.Problem(pf.minimize(r.error()), [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.3])
    res = prob.solve(pf.DP(math.inf, protect="sensitive"), seed=0, progress=False,
                     holdout_certify=True)
    assert res.status == "certified" and res.holdout.mix_weight is None
    budget = pf.BudgetFilter(2.0, 1e-5)
    with pytest.raises(InvalidInputError, match="holdout_certify"):
        prob.solve(_privacy(1.0), seed=0, progress=False, holdout_certify="yes", budget=budget)
    assert budget.spent == (0.0, 0.0)


def test_certified_mixtures_bound_the_population_gap():
    """The certified mixture's upper bound holds for its population gap (20 seeds, at most 2
    misses at 95%)."""
    prob, _ = _unfair(shift=0.3)
    fresh = _unfair(n=40000, shift=0.3)[1]
    held = _unfair(n=1500, shift=0.3)[1]
    trained = Result("test", [0], [1.0], prob.rates.decisions, labels=[0, 1])
    gap = trained.metrics(fresh)["dp_violation"]
    misses = 0
    for s in range(20):
        chk = check(prob, trained, held, epsilon=1.0, n_train=4000, rng=as_source(s),
                    options=HoldoutOptions(certify=True))
        if chk.mix_weight is not None:
            assert chk.mixture[0].certified
            misses += chk.mixture[0].upper < chk.mix_weight * gap
    assert misses <= 2

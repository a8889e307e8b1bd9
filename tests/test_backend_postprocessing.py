"""DP post-processing ([J] Algorithm 1): utility, the neighbouring-dataset tester with a
negative control, the certificate, refusals and prediction without the sensitive attribute."""

import math

import numpy as np
import pytest

import privfair as pf
from privfair.errors import BackendRefusedError, InvalidInputError
from privfair.statistics.metrics import summary
from privfair.privacy.testing import check_dp, goodness_of_fit, laplace_llr, repeated_releases
from scipy import stats


def make(n, seed):
    rng = np.random.default_rng(seed)
    a = rng.choice(["a", "b"], n, p=[0.6, 0.4])
    y = rng.binomial(1, np.where(a == "a", 0.45, 0.35))
    x = 1.6 * y + rng.normal(size=n) + 0.5 * (a == "a")     # the score favours group a
    return pf.Dataset(x[:, None], y, sensitive=a, group_names=["a", "b"])


def base(X):
    return 1.0 / (1.0 + np.exp(-3.0 * (X[:, 0] - 0.9)))


def eo_problem(data, level=0.02, base_fn=base, constraint="maximum"):
    r = pf.rates(pf.PostProcessed(base_fn), data)
    gaps = [pf.abs(r.fpr["a"] - r.fpr["b"]), pf.abs(r.tpr["a"] - r.tpr["b"])]
    g = {"maximum": pf.maximum(*gaps), "lse": pf.lse(*gaps, eta=200)}[constraint]
    return pf.Problem(pf.minimize(r.error()), [g <= level])


@pytest.fixture(scope="module")
def train_test():
    return make(6000, 0), make(6000, 1)


def test_reduces_eo_gap_of_unfair_base_at_small_error_cost(train_test):
    train, test = train_test
    prob = eo_problem(train)
    before = summary(test.y, (base(test.X) >= 0.5).astype(float), test.sensitive)
    res = prob.solve(pf.DP(1.0, protect="sensitive"), backend="postprocessing", seed=0)
    after = res.metrics(test)
    assert before["eo_violation"] > 0.12
    assert after["eo_violation"] < 0.06                       # gap cut by more than half
    assert after["error"] - before["error"] < 0.05            # at a small error cost
    assert res.certificate.epsilon == pytest.approx(1.0)


def test_in_sample_guarantees_of_thm_3_1(train_test):
    """err ≤ err(non-private γ-fair post-processing) + 24|A|ln(4|A|/β)/(mε) and every gap ≤ γ +
    8 ln(4|A|/β)/(q·m·ε − 4 ln(4|A|/β)), q the true smallest group-label mass (known to the test)."""
    from privfair.backends.reductions.jagielski import thm31_bounds

    train, _ = train_test
    prob = eo_problem(train)
    # holdout=0: the theorem is in-sample, on all m = n training rows
    ref = prob.solve(pf.DP(math.inf, protect="sensitive"), backend="postprocessing", holdout=0).metrics(train)
    assert ref["eo_violation"] <= 0.02 + 1e-9                  # the exact LP meets γ in-sample
    q = train.counts().min() / train.n
    err_b, gap_b = thm31_bounds(2, train.n, 1.0, 0.05, q)
    for seed in range(8):
        m = prob.solve(pf.DP(1.0, protect="sensitive"), backend="postprocessing", seed=seed,
                       holdout=0).metrics(train)
        assert m["error"] <= ref["error"] + err_b
        assert m["eo_violation"] <= 0.02 + gap_b


def test_lse_constraint_maps_to_a_smaller_gamma(train_test):
    train, _ = train_test
    prob = eo_problem(train, level=0.05, constraint="lse")
    plan = prob.plan(pf.DP(1.0, protect="sensitive"), backend="postprocessing").chosen
    assert plan.params["gamma"][0] == pytest.approx(0.05 - math.log(2) / 200)
    # with ε = ∞ the lse constraint itself holds in-sample (γ was shifted so that it is implied)
    res = prob.solve(pf.DP(math.inf, protect="sensitive"), backend="postprocessing", holdout=0)   # in-sample
    m = res.metrics(train)
    assert m["eo_violation"] <= 0.05 - math.log(2) / 200 + 1e-9


def test_predict_without_sensitive_raises_typed_error(train_test):
    train, test = train_test
    res = eo_problem(train).solve(pf.DP(1.0, protect="sensitive"), backend="postprocessing", seed=1)
    for call in (lambda: res.predict(test.X), lambda: res.predict_proba(test.X),
                 lambda: res.sample(test.X, rng=0)):
        with pytest.raises(InvalidInputError) as err:
            call()
        assert err.value.field == "sensitive"
        assert "sensitive=" in str(err.value) and "oracle_learner" in str(err.value)
    by_value = res.predict(test.X, sensitive=test.sensitive)
    by_name = res.predict(test.X, sensitive=np.asarray(test.groups)[test.group])
    assert by_value.shape == (test.n,) and np.array_equal(by_value, by_name)
    with pytest.raises(InvalidInputError, match="no group"):
        res.predict(test.X[:2], sensitive=["a", "zz"])


def test_certificate_total_equals_accountant_and_budget_is_charged(train_test):
    train, _ = train_test
    prob = eo_problem(train)
    budget = pf.BudgetFilter(2.0)
    res = prob.solve(pf.DP(0.7, protect="sensitive"), backend="postprocessing", seed=3, budget=budget)
    cert = res.certificate
    assert len(cert.releases) == 1 and cert.releases[0].mechanism == "laplace"
    assert cert.releases[0].sensitivity == 2.0 and cert.releases[0].dimension == 8
    assert cert.epsilon == pytest.approx(0.7) and cert.delta == 0.0
    assert budget.spent[0] == pytest.approx(cert.epsilon)
    assert cert.epsilon <= 0.7 + 1e-12
    acc = pf.Accountant()
    acc.extend(cert.releases)
    assert acc.total().epsilon == pytest.approx(cert.epsilon)


def test_output_is_post_processing_of_the_released_counts(train_test):
    """The rule is the LP solved on the released counts: re-solving from the trace reproduces it."""
    from privfair.backends.reductions import jagielski as J
    from privfair.backends.reductions.postprocessing import problem_shape

    train, _ = train_test
    prob = eo_problem(train)
    res = prob.solve(pf.DP(1.0, protect="sensitive"), backend="postprocessing", seed=5)
    pairs, _, w_joint = problem_shape(prob)
    Nt = np.maximum(res.info["released_counts"], 0.0)
    p, _ = J.solve_lp(Nt, train.n, w_joint, pairs, res.info["slack"])
    assert np.allclose(p, res.decision.p)


# --------------------------------------------------------------------------- neighbouring datasets
def _pair():
    rng = np.random.default_rng(7)
    n = 60
    a = np.array(["a", "b"] * (n // 2))
    y = rng.integers(0, 2, n)
    x = rng.normal(size=n) + y
    D = pf.Dataset(x[:, None], y, sensitive=a, group_names=["a", "b"])
    i = int(np.argmax(x))
    return D, D.with_row(i, group="b" if a[i] == "a" else "a")


def _released(data, eps, runs, seed, mult=1.0, monkeypatch=None):
    """End-to-end runs of the backend's ``run`` (the LP is replaced by a stub: it is
    post-processing, checked above) returning the released counts of every run; ``mult`` < 1
    runs them inside the audit's ``reduced_noise(mult)``."""
    from privfair.backends import get

    prob = eo_problem(data, level=0.05)
    b = get("postprocessing")
    plan = b.plan(prob, prob.analyze(pf.DP(eps, protect="sensitive")), pf.DP(eps, protect="sensitive"), {})
    return repeated_releases(b, plan, "released_counts", runs, seed, mult)


_llr = laplace_llr      # log p_D(x)/p_D′(x) of the Laplace release


@pytest.mark.slow
def test_neighbouring_datasets_pass_and_half_noise_is_refuted(monkeypatch):
    from privfair.backends.reductions import jagielski as J

    monkeypatch.setattr(J, "solve_lp", lambda Nt, n, *a: (np.zeros((2, Nt.shape[1])), "stub"))
    eps = 1.0
    D, Dp = _pair()
    mu = J.cell_counts((base(D.X) >= 0.5), D.group, D.y, 2).ravel()
    mu_p = J.cell_counts((base(Dp.X) >= 0.5), Dp.group, Dp.y, 2).ravel()
    assert np.abs(mu - mu_p).sum() == 2.0                      # the worst case of ‖ΔN‖₁
    scale = 2.0 / eps
    runs = 3000
    rel = _released(D, eps, runs, 11)
    # the trap of the authors' code (scale passed as the location): the noise is Lap(2/ε)
    noise = (rel - mu).ravel()
    assert goodness_of_fit(noise, cdf=stats.laplace(scale=scale).cdf) > 1e-3
    assert goodness_of_fit(noise, cdf=stats.laplace(loc=scale, scale=1.0).cdf) < 1e-6
    xs = _llr(rel, mu, mu_p, scale)
    ys = _llr(_released(Dp, eps, runs, 12), mu, mu_p, scale)
    assert check_dp(xs, ys, eps, bins=20).passed
    cx = _llr(_released(D, eps, runs, 13, mult=0.5), mu, mu_p, scale)
    cy = _llr(_released(Dp, eps, runs, 14, mult=0.5), mu, mu_p, scale)
    assert not check_dp(cx, cy, eps, bins=20).passed


def test_the_release_is_scheduled_at_plan_time_and_no_noise_knob_remains():
    """Issue #17: the plan carries the count release's event; the run records exactly it (its
    scale is the info's laplace_scale); the test-only noise option is gone."""
    D, _ = _pair()
    prob = eo_problem(D, level=0.05)
    plan = prob.plan(pf.DP(1.0, protect="sensitive"), backend="postprocessing").chosen
    (ev,) = plan.schedule.events()
    assert (ev.epsilon, ev.sensitivity, ev.scale, ev.dimension) == (1.0, 2.0, 2.0, 8)
    res = prob.solve(pf.DP(1.0, protect="sensitive"), backend="postprocessing", seed=0)
    assert [e.scale for e in res.certificate.releases] == [res.info["laplace_scale"]] == [2.0]
    with pytest.raises(pf.errors.InvalidInputError, match="_noise_multiplier"):
        prob.plan(pf.DP(1.0, protect="sensitive"), backend="postprocessing", _noise_multiplier=0.5)


# --------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("make_problem, match", [
    # a parity gap is accepted (tests/test_postprocess_levels.py); a selection rate against
    # another rate is no gap of one rate
    (lambda r: pf.Problem(pf.minimize(r.error()), [pf.abs(r.selection["a"] - r.fpr["b"]) <= 0.1]),
     "selection"),
    (lambda r: pf.Problem(pf.minimize(r.error()), [pf.abs(r.fp["a"] - r.fp["b"]) <= 0.1]),
     "reads fp"),
    (lambda r: pf.Problem(pf.minimize(r.error()), [pf.abs(r.fpr["a"] - r.tpr["b"]) <= 0.1]),
     "gap"),
    (lambda r: pf.Problem(pf.minimize(r.error()), [pf.square(r.fpr["a"] - r.fpr["b"]) <= 0.01]),
     "not built from"),
    (lambda r: pf.Problem(pf.minimize(pf.square(r.fp["a"])), [pf.abs(r.fpr["a"] - r.fpr["b"]) <= 0.1]),
     "not affine"),
    (lambda r: pf.Problem(pf.minimize(r.error()),
                          [pf.lse(pf.abs(r.fpr["a"] - r.fpr["b"]), pf.abs(r.tpr["a"] - r.tpr["b"]),
                                  eta=10) <= 0.05]), "γ ="),
])
def test_other_shapes_are_refused_with_a_reason_and_spend_nothing(make_problem, match):
    D, _ = _pair()
    prob = make_problem(pf.rates(pf.PostProcessed(base), D))
    budget = pf.BudgetFilter(1.0)
    with pytest.raises(BackendRefusedError, match=match):
        prob.solve(pf.DP(1.0, protect="sensitive"), backend="postprocessing", seed=0, budget=budget)
    assert budget.spent == (0.0, 0.0)


def test_row_privacy_needs_a_public_base_predictor():
    D, _ = _pair()
    prob = eo_problem(D, base_fn=None)
    budget = pf.BudgetFilter(1.0)
    with pytest.raises(BackendRefusedError, match="public data"):
        prob.solve(pf.DP(1.0, protect="row"), backend="postprocessing", seed=0, budget=budget)
    assert budget.spent == (0.0, 0.0)
    res = prob.solve(pf.DP(1.0, protect="row"), backend="postprocessing", seed=0, budget=budget,
                     base=base)
    assert budget.spent[0] == pytest.approx(1.0)
    assert res.certificate.relation == "row"
    assert any("public data" in n for n in res.plan.notes)


def test_sensitive_privacy_fits_the_base_on_x_and_y(train_test):
    train, test = train_test
    prob = eo_problem(train, base_fn=None)
    res = prob.solve(pf.DP(1.0, protect="sensitive"), backend="postprocessing", seed=0)
    assert res.plan.params["base"].startswith("logistic")
    assert res.metrics(test)["eo_violation"] < 0.08


def test_other_backends_refuse_post_processed_rules():
    D, _ = _pair()
    plans = eo_problem(D).plan(pf.DP(1.0, protect="sensitive"))
    assert plans.chosen.backend == "postprocessing"
    assert "oracle_learner" in plans.refused and "exponential" in plans.refused

"""Score levels of the ``postprocessing`` backend (issue #18): the public cut points and the level
map, a ``pf.LinearClassifier`` base trained privately under ``protect="row"`` (two releases, one
certificate) or fitted publicly under ``protect="sensitive"`` (one release), the monotone LP
(randomized group thresholds), parity gaps, the ``margin`` option, typed refusals before anything
is spent, and the neighbouring-dataset tester on the 2·K·|A| level counts with a refuted
half-noise control."""

import math
import warnings

import numpy as np
import pytest
from scipy import stats

import privfair as pf
from privfair.backends import get as get_backend
from privfair.backends.reductions import jagielski as J
from privfair.backends.reductions.postprocessing import problem_shape, public_base
from privfair.errors import BackendRefusedError, InvalidInputError
from privfair.models.postprocess import (DEFAULT_MARGIN_CUTS, DEFAULT_PROBABILITY_LEVELS,
                                         LinearScore, LogisticBase, check_cuts, default_cuts,
                                         score_levels, threshold_labels)
from privfair.privacy import Accountant
from privfair.privacy.testing import check_dp, goodness_of_fit, laplace_llr, repeated_releases

ROW = pf.DP(1.0, 1e-5, protect="row")


def make(n, seed, d=3):
    """Two groups, binary labels, d features; feature 0 carries the label and favours group a."""
    rng = np.random.default_rng(seed)
    a = rng.choice(["a", "b"], n, p=[0.6, 0.4])
    y = rng.binomial(1, np.where(a == "a", 0.45, 0.35))
    X = 0.5 * rng.normal(size=(n, d))
    X[:, 0] += 0.8 * y + 0.3 * (a == "a")
    return pf.Dataset(X, y, sensitive=a, group_names=["a", "b"])


def eo_problem(data, level=0.05, decisions=None):
    r = pf.rates(decisions or pf.PostProcessed(pf.LinearClassifier(data.n_features)), data)
    gap = pf.maximum(pf.abs(r.fpr["a"] - r.fpr["b"]), pf.abs(r.tpr["a"] - r.tpr["b"]))
    return pf.Problem(pf.minimize(r.error()), [gap <= level])


def parity_problem(data, level=0.03, decisions=None):
    r = pf.rates(decisions or pf.PostProcessed(pf.LinearClassifier(data.n_features)), data)
    return pf.Problem(pf.minimize(r.error()),
                      [pf.abs(r.selection["a"] - r.selection["b"]) <= level])


def solve(prob, privacy, **kw):
    """A solve whose held-out check is not the subject (holdout=0 warns that it is unchecked)."""
    kw.setdefault("holdout", 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return prob.solve(privacy, backend="postprocessing", **kw)


def lp_rates(Nt, p):
    """The LP's own view of the rates of rule p on the counts Nt (K, G, 2): per group the
    false-positive, true-positive and selection rates with its denominators max(Σ_k Nt, 1)."""
    den = np.maximum(Nt.sum(axis=0), 1.0)                       # (G, 2)
    fpr = (Nt[:, :, 0] * p).sum(axis=0) / den[:, 0]
    tpr = (Nt[:, :, 1] * p).sum(axis=0) / den[:, 1]
    sel = (Nt.sum(axis=2) * p).sum(axis=0) / den.sum(axis=1)
    return fpr, tpr, sel


@pytest.fixture(scope="module")
def data():
    return make(3000, 0)


@pytest.fixture(scope="module")
def row_result(data):
    return solve(eo_problem(data), ROW, seed=0)


# --------------------------------------------------------------------------- levels and cuts
def test_levels_at_and_around_the_cut_points():
    cuts = (-1.0, 0.0, 1.5)
    s = np.array([-2.0, -1.0, np.nextafter(-1.0, -2), -1e-12, 0.0, 0.5,
                  np.nextafter(1.5, 0), 1.5, 3.0])
    got = score_levels(lambda X: X[:, 0], s[:, None], cuts)
    # side='right': a score equal to a cut goes up
    assert got.tolist() == [0, 1, 0, 1, 2, 2, 2, 3, 3]
    assert got.dtype == np.int64


def test_one_cut_is_the_binary_threshold():
    X = np.random.default_rng(0).normal(size=(500, 1))
    X[:5, 0] = [0.3, 0.3, -0.3, 0.0, 1.0]                    # ties with the threshold
    base = lambda Z: Z[:, 0]                                  # noqa: E731
    for t in (0.3, 0.0, -0.3):
        lab = threshold_labels(base, X, t)
        assert lab.dtype == np.uint8
        assert np.array_equal(lab, (X[:, 0] >= t).astype(np.uint8))
        assert np.array_equal(lab, score_levels(base, X, (t,)))
    # a given base keeps the binary Ŷ by default ([J] Algorithm 1): one cut, the threshold
    assert pf.PostProcessed(base).cuts() == (0.5,)
    assert pf.PostProcessed(base, threshold=0.2, bins=None).cuts() == (0.2,)


def test_predict_proba_like_output_reads_column_one():
    X = np.linspace(0, 1, 7)[:, None]
    two = lambda Z: np.column_stack([1 - Z[:, 0], Z[:, 0]])   # noqa: E731
    assert np.array_equal(score_levels(two, X, (0.5,)), (X[:, 0] >= 0.5).astype(int))
    with pytest.raises(InvalidInputError) as err:
        score_levels(lambda Z: np.zeros((len(Z), 3)), X, (0.5,))
    assert err.value.field == "base"


def test_non_finite_scores_raise_by_default_and_go_to_level_zero_when_negative():
    s = np.array([0.7, np.nan, np.inf, -np.inf, 0.2])[:, None]
    base = lambda Z: Z[:, 0]                                  # noqa: E731
    with pytest.raises(InvalidInputError) as err:
        score_levels(base, s, (0.1, 0.5))
    assert err.value.field == "base"
    with pytest.raises(InvalidInputError):
        threshold_labels(base, s, 0.5)
    # +inf too: a non-finite score is level 0, not the top level
    assert score_levels(base, s, (0.1, 0.5), nonfinite="negative").tolist() == [2, 0, 0, 0, 1]
    assert threshold_labels(base, s, 0.5, nonfinite="negative").tolist() == [1, 0, 0, 0, 0]


@pytest.mark.parametrize("bins", [[0.5, 0.2], [0.1, 0.1], [0.1, float("nan")],
                                  [0.0, float("inf")], [], 2, 1, 0, -3, 257, 1000, "many",
                                  "Default", True, object()])
def test_bad_bins_are_refused_with_a_typed_error(bins):
    with pytest.raises(InvalidInputError) as err:
        check_cuts(bins)
    assert err.value.field == "bins"
    with pytest.raises(InvalidInputError) as err:
        pf.PostProcessed(pf.LinearClassifier(2), bins=bins)
    assert err.value.field == "bins"


def test_good_bins_are_kept():
    assert check_cuts(None) is None and check_cuts("default") == "default"
    assert check_cuts(3) == 3 and check_cuts(256) == 256 and check_cuts(np.int64(5)) == 5
    assert check_cuts([-1, 0.5, 2]) == (-1.0, 0.5, 2.0)
    assert check_cuts(np.array([0.25])) == (0.25,)


def test_default_cuts_are_public_and_scale_with_the_radius():
    assert default_cuts("default", "margin") == DEFAULT_MARGIN_CUTS
    assert default_cuts("default", "margin", 2.5) == pytest.approx(
        [2.5 * c for c in DEFAULT_MARGIN_CUTS])
    assert len(default_cuts("default", "probability")) == DEFAULT_PROBABILITY_LEVELS - 1
    assert default_cuts(5, "margin", 2.0) == pytest.approx([-4.0, -4 / 3, 4 / 3, 4.0])
    assert default_cuts(4, "probability") == pytest.approx([0.25, 0.5, 0.75])
    for K in (3, 9, 64):
        c = default_cuts(K, "probability")
        assert len(c) == K - 1 and all(0 < a < b < 1 for a, b in zip(c, c[1:]))
    pp1 = pf.PostProcessed(pf.LinearClassifier(3))
    pp3 = pf.PostProcessed(pf.LinearClassifier(3, radius=3.0))
    assert pp3.cuts("margin") == pytest.approx([3 * c for c in pp1.cuts("margin")])
    assert pp1.cuts("margin") == DEFAULT_MARGIN_CUTS


def test_planned_cuts_read_no_data():
    """The plan's cut points are the same for datasets of any size and distribution (under
    both units: the margin grid × radius, the probability grid)."""
    shifted = make(1500, 5)
    shifted = pf.Dataset(3.0 * shifted.X + 2.0, shifted.y, sensitive=shifted.sensitive,
                         group_names=["a", "b"])
    for privacy, want in ((ROW, list(DEFAULT_MARGIN_CUTS)),
                          (pf.DP(1.0, protect="sensitive"), list(default_cuts("default", "probability")))):
        got = [eo_problem(D).plan(privacy, backend="postprocessing").chosen.params["cuts"]
               for D in (make(2000, 1), shifted)]
        assert got[0] == got[1] == pytest.approx(want)


# --------------------------------------------------------------------------- private base (row)
def test_row_certificate_is_the_composition_of_the_base_and_count_releases(row_result):
    res = row_result
    cert, plan = res.certificate, res.plan
    K, G = plan.params["levels"], 2
    assert K == len(DEFAULT_MARGIN_CUTS) + 1
    *first, last = cert.releases
    assert first and all(e.mechanism == "subsampled_gaussian" for e in first)
    assert last.mechanism == "laplace" and last.sensitivity == 2.0
    assert last.dimension == 2 * K * G
    assert last.scale == pytest.approx(2.0 / last.epsilon) == res.info["laplace_scale"]
    assert cert.relation == "row"
    assert cert.epsilon <= 1.0 + 1e-9 and cert.delta <= 1e-5
    acc = Accountant(delta=1e-5, relation="row")
    acc.extend(cert.releases)
    assert acc.total(1e-5).epsilon == pytest.approx(cert.epsilon, rel=1e-6)
    # the counts get the largest ε that fits beside the base's events: little is left over
    assert cert.epsilon > 0.95
    # the plan's budget lists both releases: the base at base_share·ε with the whole δ, then
    # the counts at the event's ε
    (b_text, b_eps, b_delta), (c_text, c_eps, c_delta) = plan.budget
    assert (b_eps, b_delta) == (pytest.approx(0.7), 1e-5) and "Gaussian" in b_text
    assert c_eps == pytest.approx(last.epsilon) and c_delta == 0.0
    assert f"{2 * K * G} cell counts" in c_text


def test_row_rule_is_a_monotone_threshold_table_of_the_released_margin(data, row_result):
    res = row_result
    rule = res.decision
    K = res.plan.params["levels"]
    assert rule.p.shape == (K, 2)
    assert np.all(np.diff(rule.p, axis=0) >= -1e-12)         # non-decreasing in the level
    assert rule.cuts == tuple(res.info["cuts"]) == DEFAULT_MARGIN_CUTS
    assert isinstance(rule.base, LinearScore)
    theta = res.info["base_theta"]
    assert np.array_equal(np.asarray(rule.base.theta), theta) and theta.shape == (4,)
    assert np.linalg.norm(theta) <= 1.0 + 1e-9                # the LinearClassifier's ball
    # the rule is the monotone LP on the *unclamped* released counts (post-processing)
    Nt = res.info["released_counts"]
    assert Nt.shape == (K, 2, 2)
    assert (Nt < 0).any()       # seed 0 draws negative counts: clamping them would change p
    pairs, _, w_joint = problem_shape(res.plan.problem)
    p, status = J.solve_lp(Nt, data.n, w_joint, pairs, res.info["slack"], True)
    assert status == "optimal" and np.allclose(p, rule.p)
    # slack 'auto' → 'none' for K > 2; the default margin tightens every gap by one s.e.
    den = np.maximum(Nt.sum(axis=0), 1.0)
    assert res.plan.params["slack"] == "none" and res.plan.params["margin"] == 1.0
    assert np.allclose(res.info["slack"], [-math.sqrt(0.25 / J.pair_den(den, q.a, q.y)
                                                      + 0.25 / J.pair_den(den, q.b, q.y))
                                           for q in pairs])
    assert {"base_theta", "cuts"} <= set(get_backend("postprocessing").exposes)


def test_row_counts_are_the_levels_of_the_released_theta():
    """With the noise scaled to nothing (the audit's ``reduced_noise``), the released counts are
    exactly N[k, a, y] of the levels of the released θ's margin: the second release reads the
    first one's output, not some other fit."""
    from privfair.privacy import reduced_noise

    D = make(2000, 8)
    with reduced_noise(1e-9):
        res = solve(eo_problem(D), ROW, seed=1)
    theta = res.info["base_theta"]
    levels = score_levels(LinearScore(tuple(theta)), D.X, DEFAULT_MARGIN_CUTS)
    N = J.cell_counts(levels, D.group, D.y, 2, len(DEFAULT_MARGIN_CUTS) + 1)
    assert np.abs(res.info["released_counts"] - N).max() < 1e-3
    assert (N.sum(axis=(1, 2)) > 0).sum() >= 5                # the rows spread over the levels


def test_row_prediction_reads_the_group(data, row_result):
    res = row_result
    X = data.X[:50]
    got = res.predict_proba(X, sensitive=data.sensitive[:50])
    theta = res.info["base_theta"]
    level = np.searchsorted(np.asarray(DEFAULT_MARGIN_CUTS), X @ theta[:-1] + theta[-1],
                            side="right")
    assert np.allclose(got, res.decision.p[level, data.group[:50]])
    with pytest.raises(InvalidInputError) as err:
        res.predict_proba(X)
    assert err.value.field == "sensitive"
    with pytest.raises(InvalidInputError) as err:
        res.predict(X)
    assert err.value.field == "sensitive"


def test_a_refused_solve_spends_nothing(data):
    prob = eo_problem(data, decisions=pf.PostProcessed(pf.LinearClassifier(data.n_features + 2)))
    v = get_backend("postprocessing").accepts(prob, prob.analyze(ROW))
    assert not v and "features" in v.reason
    budget = pf.BudgetFilter(2.0, 1e-4)
    with pytest.raises(BackendRefusedError, match="features"):
        solve(prob, ROW, seed=0, budget=budget)
    assert budget.spent == (0.0, 0.0)


def test_pure_dp_with_a_private_base_is_refused_naming_delta_and_spends_nothing(data):
    """lagrangian_sgda's Gaussian steps need δ > 0: the refusal says so (not "ε too small")."""
    prob = eo_problem(data)
    budget = pf.BudgetFilter(2.0)
    with pytest.raises(BackendRefusedError, match="δ > 0"):
        solve(prob, pf.DP(1.0, protect="row"), seed=0, budget=budget)
    assert budget.spent == (0.0, 0.0)
    assert "δ > 0" in prob.plan(pf.DP(1.0, protect="row")).refused["postprocessing"]


def test_binary_cut_of_a_trainable_base_is_its_own_prediction():
    """bins=None with a LinearClassifier base: Ŷ is the classifier's own 1[margin ≥ 0] (row) or
    1[σ ≥ ½] (sensitive) — the same rule in both units, whatever ``threshold`` says."""
    ds = pf.PostProcessed(pf.LinearClassifier(3), threshold=0.9, bins=None)
    assert ds.cuts("margin") == (0.0,) and ds.cuts("probability") == (0.5,)
    given = pf.PostProcessed(lambda X: X[:, 0], threshold=0.9, bins=None)     # control
    assert given.cuts("margin") == (0.9,)


# --------------------------------------------------------------------------- public base (sensitive)
def test_sensitive_unit_spends_everything_on_one_count_release(data):
    res = solve(eo_problem(data), pf.DP(1.0, protect="sensitive"), seed=0)
    K = DEFAULT_PROBABILITY_LEVELS
    (ev,) = res.certificate.releases
    assert ev.mechanism == "laplace" and ev.dimension == 2 * K * 2 and ev.sensitivity == 2.0
    assert ev.epsilon == pytest.approx(1.0) and res.certificate.epsilon == pytest.approx(1.0)
    assert res.plan.params["levels"] == K and res.plan.params["base"].startswith("logistic")
    rule = res.decision
    assert isinstance(rule.base, LogisticBase) and rule.p.shape == (K, 2)
    assert np.all(np.diff(rule.p, axis=0) >= -1e-12)
    assert rule.base == public_base(data)      # the public fit of y on X (holdout=0: all rows)
    assert np.allclose(res.info["base_theta"], list(rule.base.coef) + [rule.base.intercept])


def test_sensitive_unit_base_is_identical_on_neighbouring_datasets():
    D = make(800, 3)
    i = int(np.argmax(D.X[:, 0]))
    Dp = D.with_row(i, group="b" if D.group[i] == 0 else "a")
    assert not np.array_equal(D.group, Dp.group)
    bases = [solve(eo_problem(E), pf.DP(1.0, protect="sensitive"), seed=s).decision.base
             for E, s in ((D, 0), (Dp, 1))]
    assert bases[0] == bases[1]                               # X and y only: deterministic


# --------------------------------------------------------------------------- the monotone LP
def _hand_counts():
    """K = 4 levels, 2 groups.  Level 1 holds more negatives than positives between levels
    that hold more positives: the error-minimising table without the monotone constraint picks
    levels 0 and 2–3 and skips level 1, which is no threshold of the score."""
    Nt = np.zeros((4, 2, 2))
    Nt[:, 0, :] = [[10, 40], [50, 10], [10, 40], [5, 60]]     # group a: (negatives, positives)
    Nt[:, 1, :] = [[60, 10], [40, 20], [20, 15], [10, 50]]    # group b: positives at the top
    return Nt


def _error_weights():
    w = np.zeros((2, 2, 2))          # joint[g, y, ŷ]: false positives and false negatives
    w[:, 0, 1] = w[:, 1, 0] = 1.0
    return w


def test_monotone_lp_gives_thresholds_and_the_unconstrained_lp_does_not():
    Nt, w = _hand_counts(), _error_weights()
    n = float(Nt.sum())
    free, status = J.solve_lp(Nt, n, w, [], [])
    assert status == "optimal"
    assert free[:, 0].tolist() == [1.0, 0.0, 1.0, 1.0]        # the negative control: not monotone
    mono, status = J.solve_lp(Nt, n, w, [], [], True)
    assert status == "optimal" and np.all(np.diff(mono, axis=0) >= -1e-9)
    err = lambda p: float((Nt[:, :, 0] * p).sum() + (Nt[:, :, 1] * (1 - p)).sum())  # noqa: E731
    assert err(free) <= err(mono)                             # a constraint costs, never helps


@pytest.mark.parametrize("y", [0, 1, J.SELECTION])
def test_monotone_lp_meets_each_gap_on_its_counts(y):
    Nt, w = _hand_counts(), _error_weights()
    n = float(Nt.sum())
    gamma = 0.02
    pairs = [J.Pair(y, 0, 1, gamma, 0, "a − b"), J.Pair(y, 1, 0, gamma, 0, "b − a")]
    p, status = J.solve_lp(Nt, n, w, pairs, [0.0, 0.0], True)
    assert status == "optimal" and p.shape == (4, 2)
    assert np.all(np.diff(p, axis=0) >= -1e-9)
    fpr, tpr, sel = lp_rates(Nt, p)
    rate = {0: fpr, 1: tpr, J.SELECTION: sel}[y]
    assert abs(rate[0] - rate[1]) <= gamma + 1e-7
    # the monotone optimum without the gap violates it (so the constraint bound the LP)
    free, _ = J.solve_lp(Nt, n, w, [], [], True)
    free_rate = dict(zip((0, 1, J.SELECTION), lp_rates(Nt, free)))[y]
    assert abs(free_rate[0] - free_rate[1]) > gamma + 0.05


def test_monotonicity_is_imposed_not_incidental():
    """Many levels on few rows: the released counts are noisy enough that the LP without the
    monotone constraint picks a non-threshold table, and the released rule is still monotone —
    the monotone LP on exactly those counts."""
    D = make(1200, 6)
    prob = eo_problem(D, 0.1, decisions=pf.PostProcessed(pf.LinearClassifier(3), bins=48))
    res = solve(prob, pf.DP(0.5, protect="sensitive"), seed=3)
    Nt = res.info["released_counts"]
    assert Nt.shape == (48, 2, 2)
    pairs, _, w_joint = problem_shape(prob)
    free, _ = J.solve_lp(Nt, D.n, w_joint, pairs, res.info["slack"])
    assert np.any(np.diff(free, axis=0) < -0.5)               # the control: no threshold
    assert np.all(np.diff(res.decision.p, axis=0) >= -1e-12)
    mono, _ = J.solve_lp(Nt, D.n, w_joint, pairs, res.info["slack"], True)
    assert np.allclose(mono, res.decision.p)


# --------------------------------------------------------------------------- parity and slack
@pytest.mark.parametrize("privacy", [ROW, pf.DP(1.0, protect="sensitive")], ids=["row", "sensitive"])
def test_parity_gap_of_the_released_rule_holds_on_the_released_counts(data, privacy):
    c = 0.03
    res = solve(parity_problem(data, c), privacy, seed=2)
    assert res.plan.params["slack"] == "none"
    assert math.isinf(res.plan.predicted_excess_risk)         # Thm 3.1 covers equalized odds only
    assert any("parity" in n for n in res.plan.notes)
    _, _, sel = lp_rates(res.info["released_counts"], res.decision.p)
    assert abs(sel[0] - sel[1]) <= c + 1e-9
    # the unconstrained rule of the same counts is further apart (the constraint was active)
    pairs, _, w_joint = problem_shape(res.plan.problem)
    free, _ = J.solve_lp(res.info["released_counts"], data.n, w_joint, [], [], True)
    _, _, sel_free = lp_rates(res.info["released_counts"], free)
    assert abs(sel_free[0] - sel_free[1]) > c


@pytest.mark.parametrize("case", ["parity, binary base", "parity, levels", "eo, levels",
                                  "eo, levels, row"])
def test_paper_slack_is_refused_where_thm_3_1_does_not_apply(data, case):
    binary = pf.PostProcessed(lambda X: 1 / (1 + np.exp(-3 * X[:, 0])))
    prob = {"parity, binary base": lambda: parity_problem(data, decisions=binary),
            "parity, levels": lambda: parity_problem(data),
            "eo, levels": lambda: eo_problem(data),
            "eo, levels, row": lambda: eo_problem(data)}[case]()
    privacy = ROW if case.endswith("row") else pf.DP(1.0, protect="sensitive")
    budget = pf.BudgetFilter(2.0, 1e-4)
    with pytest.raises(InvalidInputError) as err:
        solve(prob, privacy, seed=0, budget=budget, slack="paper")
    assert err.value.field == "slack" and "slack='none'" in str(err.value)
    assert budget.spent == (0.0, 0.0)


def test_paper_slack_is_kept_for_equalized_odds_of_a_binary_base(data):
    binary = pf.PostProcessed(lambda X: 1 / (1 + np.exp(-3 * X[:, 0])))
    plan = eo_problem(data, decisions=binary).plan(pf.DP(1.0, protect="sensitive"), backend="postprocessing").chosen
    assert plan.params["slack"] == "paper" and plan.params["levels"] == 2
    assert math.isfinite(plan.params["error_bound"])
    # a parity gap of the same binary base: 'auto' gives no slack and predicts no bound
    plan = parity_problem(data, decisions=binary).plan(pf.DP(1.0, protect="sensitive"),
                                                       backend="postprocessing").chosen
    assert plan.params["slack"] == "none" and math.isinf(plan.predicted_excess_risk)


def test_margin_tightens_each_gap_by_its_released_standard_error(data):
    m = 1.5
    res = solve(parity_problem(data, 0.05), pf.DP(1.0, protect="sensitive"), seed=4, margin=m)
    Nt = res.info["released_counts"]
    den = np.maximum(Nt.sum(axis=0), 1.0).sum(axis=1)          # the groups' released totals
    se = math.sqrt(0.25 / den[0] + 0.25 / den[1])
    assert res.info["slack"] == pytest.approx([-m * se] * 2)
    _, _, sel = lp_rates(Nt, res.decision.p)
    assert abs(sel[0] - sel[1]) <= 0.05 - m * se + 1e-9


# --------------------------------------------------------------------------- neighbouring datasets
CUTS = (-1.0, -0.4, 0.0, 0.4, 1.0, 1.6)                     # K = 7 levels of the score x


def _score(X):
    return X[:, 0]


def _pair(protect):
    """D and a neighbour under ``protect``: a row in a middle level changes group (sensitive),
    or group, level and label (row: X private, the base public)."""
    rng = np.random.default_rng(7)
    n = 60
    a = np.array(["a", "b"] * (n // 2))
    y = rng.integers(0, 2, n)
    x = rng.normal(size=n) + 0.5 * y
    D = pf.Dataset(x[:, None], y, sensitive=a, group_names=["a", "b"])
    i = int(np.argmin(np.abs(x - 0.2)))                      # level 3: between 0.0 and 0.4
    other = "b" if a[i] == "a" else "a"
    if protect == "sensitive":
        return D, D.with_row(i, group=other)
    return D, D.with_row(i, x=[-2.0], group=other, label=1 - y[i])


def _released(data, protect, eps, runs, seed, mult=1.0):
    """``runs`` end-to-end runs of the backend's ``run`` (the LP stubbed: post-processing)
    returning the released counts; ``mult`` < 1 runs them inside ``reduced_noise(mult)``."""
    from privfair.backends import get

    privacy = pf.DP(eps, protect=protect)
    prob = eo_problem(data, decisions=pf.PostProcessed(_score, bins=list(CUTS)))
    b = get("postprocessing")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        plan = b.plan(prob, prob.analyze(privacy), privacy, {"slack": "none"})
    assert plan.params["levels"] == len(CUTS) + 1
    (ev,) = plan.schedule.events()
    assert ev.dimension == 2 * (len(CUTS) + 1) * 2 and ev.epsilon == eps
    return repeated_releases(b, plan, "released_counts", runs, seed, mult)


_llr = laplace_llr      # log p_D(x)/p_D′(x) of the Laplace release


@pytest.mark.slow
@pytest.mark.parametrize("protect", ["sensitive", "row"])
def test_level_counts_pass_the_neighbour_tester_and_half_noise_is_refuted(monkeypatch, protect):
    monkeypatch.setattr(J, "solve_lp",
                        lambda Nt, n, *a: (np.zeros((Nt.shape[0], Nt.shape[1])), "stub"))
    eps = 1.0
    D, Dp = _pair(protect)
    K = len(CUTS) + 1
    mu = J.cell_counts(score_levels(_score, D.X, CUTS), D.group, D.y, 2, K).ravel()
    mu_p = J.cell_counts(score_levels(_score, Dp.X, CUTS), Dp.group, Dp.y, 2, K).ravel()
    moved = np.flatnonzero(mu != mu_p)
    assert np.abs(mu - mu_p).sum() == 2.0 and moved.size == 2  # one row, two cells
    levels = {int(c) // 4 for c in moved}                      # cell = (k·G + g)·2 + y
    assert 3 in levels and (len(levels) == 2) == (protect == "row")
    scale = 2.0 / eps
    runs = 2000
    rel = _released(D, protect, eps, runs, 11)
    noise = (rel - mu).ravel()                                # Laplace(2/ε) about the counts
    assert goodness_of_fit(noise, cdf=stats.laplace(scale=scale).cdf) > 1e-3
    assert goodness_of_fit(noise, cdf=stats.laplace(scale=scale / 2).cdf) < 1e-6
    xs = _llr(rel, mu, mu_p, scale)
    ys = _llr(_released(Dp, protect, eps, runs, 12), mu, mu_p, scale)
    assert check_dp(xs, ys, eps, bins=20).passed
    cx = _llr(_released(D, protect, eps, runs, 13, mult=0.5), mu, mu_p, scale)
    cy = _llr(_released(Dp, protect, eps, runs, 14, mult=0.5), mu, mu_p, scale)
    assert not check_dp(cx, cy, eps, bins=20).passed

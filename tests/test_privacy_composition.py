"""Composition rules against closed forms and brute force, and calibrations that never
overshoot."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

import privfair.privacy as pp
from privfair.privacy import composition as comp


def _rr(eps, delta=0.0):
    """The randomized-response pair RR_{ε,δ} (Kairouz et al. 2017): outcomes (P, Q)."""
    a = (1 - delta) * math.exp(eps) / (1 + math.exp(eps))
    b = (1 - delta) / (1 + math.exp(eps))
    return np.array([delta, a, b, 0.0]), np.array([0.0, b, a, delta])


def _brute_delta(eps_total, pairs):
    """max_S P(S) − e^ε Q(S) for the product of RR pairs, by enumerating every outcome."""
    ps, qs = zip(*(_rr(e, d) for e, d in pairs))
    total = 0.0
    for outcome in itertools.product(range(4), repeat=len(pairs)):
        p = math.prod(ps[j][o] for j, o in enumerate(outcome))
        q = math.prod(qs[j][o] for j, o in enumerate(outcome))
        total += max(0.0, p - math.exp(eps_total) * q)
    return total


def _events(pairs):
    return [pp.approximate_event(e, d, theorem="test") for e, d in pairs]


# ------------------------------------------------------------------ closed forms


def test_basic_composition():
    evs = _events([(0.1, 0.0)] * 3 + [(0.5, 1e-7)])
    assert comp.basic_epsilon(evs, 1e-6) == (pytest.approx(0.8), None)
    eps, why = comp.basic_epsilon(evs, 1e-8)
    assert eps is None and "δ add up" in why
    acc = pp.Accountant()
    for ev in _events([(0.25, 0.0)] * 4):
        acc.record(ev)
    assert acc.total() == (1.0, 0.0, "basic")


def test_advanced_composition_formula():
    # ε̄ = ε'√(2k ln(1/δ̄)) + kε'(e^{ε'} − 1)     ([A] Lemma A.4)
    eps_p, k, d_bar = 0.1, 100, 1e-6
    expected = eps_p * math.sqrt(2 * k * math.log(1 / d_bar)) + k * eps_p * (math.exp(eps_p) - 1)
    assert pp.advanced_composition(eps_p, k, d_bar) == pytest.approx(expected, rel=1e-15)
    assert expected == pytest.approx(6.3082, abs=1e-4)
    # through the rule: 100 pure events, total δ = δ̄
    eps, _ = comp.advanced_epsilon(_events([(0.1, 0.0)] * 100), 1e-6)
    assert eps == pytest.approx(expected)
    # approximate events: δ̄ = δ − kδ'
    eps, _ = comp.advanced_epsilon(_events([(0.1, 1e-9)] * 100), 1e-6)
    assert eps == pytest.approx(pp.advanced_composition(0.1, 100, 1e-6 - 100e-9))
    assert comp.advanced_epsilon(_events([(0.1, 1e-8)] * 100), 1e-6)[0] is None


@pytest.mark.parametrize("pairs", [
    [(0.5, 0.0)] * 4,
    [(1.0, 0.0)] * 6,
    [(0.3, 0.0), (0.7, 0.0), (1.1, 0.0), (0.3, 0.0)],
    [(0.4, 0.01)] * 3,
    [(0.2, 0.0), (0.9, 0.02), (0.5, 0.001)],
])
def test_optimal_composition_matches_brute_force(pairs):
    for eps in (0.0, 0.3, 0.9, 1.7, sum(e for e, _ in pairs) - 1e-9):
        exact = pp.optimal_delta(eps, [(e, d, 1) for e, d in pairs])
        assert exact == pytest.approx(_brute_delta(eps, pairs), rel=1e-9, abs=1e-15)


def test_optimal_composition_matches_kairouz_theorem_3_3():
    # at ε = (k − 2i)ε0: δ_i = Σ_{l<i} C(k,l)(e^{(k−l)ε0} − e^{(k−2i+l)ε0}) / (1 + e^{ε0})^k
    k, e0, d0 = 20, 0.3, 1e-5
    for i in range(0, k // 2 + 1):
        d_i = sum(special.binom(k, l) * (math.exp((k - l) * e0) - math.exp((k - 2 * i + l) * e0))
                  for l in range(i)) / (1 + math.exp(e0)) ** k
        thm = 1 - (1 - d0) ** k * (1 - d_i)
        assert pp.optimal_delta((k - 2 * i) * e0, [(e0, d0, k)]) == pytest.approx(thm, rel=1e-9,
                                                                                  abs=1e-15)


def test_optimal_epsilon_beats_the_grid_and_advanced():
    from dp_accounting.pld import accountant as pld_acc
    from dp_accounting.pld import common

    k, e0, delta = 50, 0.1, 1e-6
    evs = _events([(e0, 0.0)] * k)
    opt, _ = comp.optimal_epsilon(evs, delta)
    grid = pld_acc.advanced_composition(common.DifferentialPrivacyParameters(e0, 0.0), k, delta)
    assert opt <= grid and opt > grid - 2 * e0 - 1e-9   # Kairouz's grid is one step coarser
    assert pp.optimal_delta(opt, [(e0, 0.0, k)]) <= delta
    assert pp.optimal_delta(opt * 0.999, [(e0, 0.0, k)]) > delta
    adv, _ = comp.advanced_epsilon(evs, delta)
    assert opt < adv < k * e0
    # PLD of randomized response is a pessimistic estimate of the same curve
    pld, _ = comp.pld_epsilon(evs, delta)
    assert opt <= pld <= opt + 0.01


def test_accountant_reports_min_for_pure_events():
    acc = pp.Accountant(delta=1e-6)
    for _ in range(200):
        acc.record(pp.pure_event(0.05, theorem="test"))
    tot = acc.total()
    cands = acc.candidates()
    valid = {r: e for r, (e, _) in cands.items() if e is not None}
    assert tot.epsilon == min(valid.values())
    assert valid["optimal"] <= valid["advanced"] <= valid["basic"]
    assert tot.rule in ("optimal", "pld")
    assert acc.total(delta=0.0) == (pytest.approx(10.0), 0.0, "basic")


def test_heterogeneous_optimal_is_exact_and_large_cases_fall_back():
    evs = _events([(0.1, 0.0)] * 30 + [(0.2, 0.0)] * 20)
    eps, _ = comp.optimal_epsilon(evs, 1e-5)
    d = pp.optimal_delta(eps, [(0.1, 0.0, 30), (0.2, 0.0, 20)])
    assert d <= 1e-5
    many = [pp.pure_event(0.01 + 1e-4 * i, theorem="t") for i in range(40)]
    assert comp.optimal_epsilon(many, 1e-5)[0] is None        # 2^40 loss values: use PLD
    acc = pp.Accountant(delta=1e-5)
    acc.extend(many)
    assert acc.total().rule in ("pld", "advanced") and acc.total().epsilon < sum(
        ev.epsilon for ev in many)


def test_gdp_is_exact_for_gaussians():
    evs = [pp.gaussian_event(1.0, 4.0, count=10), pp.gaussian_event(2.0, 5.0)]
    mu = math.sqrt(10 / 16 + 4 / 25)
    eps, _ = comp.gdp_epsilon(evs, 1e-5)
    assert eps == pytest.approx(pp.gaussian_epsilon(1e-5, mu))
    assert pp.gaussian_delta(eps, mu) <= 1e-5
    # one release with sensitivity Δ√T is the same thing
    assert comp.gdp_epsilon([pp.gaussian_event(1.0, 3.0, count=9)], 1e-5)[0] == pytest.approx(
        comp.gdp_epsilon([pp.gaussian_event(3.0, 3.0)], 1e-5)[0])
    # PLD and RDP are valid upper bounds of the exact value
    pld, _ = comp.pld_epsilon(evs, 1e-5)
    rdp, _ = comp.rdp_epsilon(evs, 1e-5)
    assert eps <= pld <= eps + 0.01 and eps < rdp
    acc = pp.Accountant(delta=1e-5)
    acc.extend(evs)
    assert acc.total().rule == "gdp"


def test_rdp_refuses_what_it_cannot_bound():
    ev = pp.subsampled_gaussian_event(1.0, 1.0, 0.01, count=10)    # substitution
    eps, why = comp.rdp_epsilon([ev], 1e-5)
    assert eps is None and "substitution" in why
    eps, why = comp.rdp_epsilon(_events([(0.5, 1e-7)]), 1e-5)
    assert eps is None


def test_substitution_costs_more_than_add_remove():
    rep = pp.subsampled_gaussian_event(1.0, 1.0, 0.02, count=100, neighbouring="replace")
    add = pp.subsampled_gaussian_event(1.0, 1.0, 0.02, count=100, neighbouring="add_remove")
    e_rep, _ = comp.pld_epsilon([rep], 1e-5)
    e_add, _ = comp.pld_epsilon([add], 1e-5)
    assert e_add < e_rep < 2.5 * e_add


def test_laplace_event_uses_the_laplace_curve_only_in_one_dimension():
    one = pp.laplace_event(1.0, 1.0, dimension=1, count=20)
    many = pp.laplace_event(1.0, 1.0, dimension=5, count=20)
    e1, _ = comp.pld_epsilon([one], 1e-6)
    e5, _ = comp.pld_epsilon([many], 1e-6)
    opt, _ = comp.optimal_epsilon([many], 1e-6)
    assert e1 < e5 and e5 >= opt - 1e-9


# ------------------------------------------------------------------ calibration


def test_calibrate_advanced_closed_forms():
    eps, delta, T = 1.0, 1e-6, 100
    c = pp.calibrate_advanced(eps, delta, T)                      # pure oracle
    assert c.epsilon == pytest.approx(eps / (2 * math.sqrt(2 * T * math.log(1 / delta))))
    assert c.delta == 0.0 and c.achieved_epsilon <= eps and not c.note
    c = pp.calibrate_advanced(eps, delta, T, delta_prime="paper")  # δ' = δ/(2T)
    assert c.delta == pytest.approx(delta / (2 * T))
    assert c.epsilon == pytest.approx(eps / (2 * math.sqrt(2 * T * math.log(2 / delta))))
    c2 = pp.calibrate_advanced(eps, delta, T, delta_prime="paper", form="paper")
    assert c2.epsilon == pytest.approx(eps / (2 * math.sqrt(2 * T * math.log(2 * T / delta))))
    assert c2.epsilon < c.epsilon
    # check with Lemma A.4: T (ε', δ') releases are (ε, Tδ' + δ̄)-DP
    assert pp.advanced_composition(c.epsilon, T, delta - T * c.delta) <= eps


def test_calibrate_advanced_repairs_the_closed_form_at_large_epsilon():
    c = pp.calibrate_advanced(50.0, 1e-6, 10)
    assert "overshoots" in c.note
    assert c.achieved_epsilon <= 50.0
    assert pp.advanced_composition(c.epsilon * 1.001, 10, 1e-6) > 50.0


@settings(max_examples=60, deadline=None)
@given(eps=st.floats(0.01, 20), log_delta=st.floats(-12, -2), T=st.integers(1, 3000),
       frac=st.floats(0.0, 0.9))
def test_calibrate_advanced_never_overshoots(eps, log_delta, T, frac):
    delta = 10.0 ** log_delta
    c = pp.calibrate_advanced(eps, delta, T, delta_prime=frac * delta / T)
    assert c.achieved_epsilon <= eps
    assert pp.advanced_composition(c.epsilon, T, delta - T * c.delta) <= eps * (1 + 1e-12)


def test_calibrate_optimal():
    eps, delta, T = 1.0, 1e-6, 100
    c = pp.calibrate_optimal(eps, delta, T)
    adv = pp.calibrate_advanced(eps, delta, T)
    assert c.epsilon >= eps / T and c.epsilon > adv.epsilon
    assert pp.optimal_delta(eps, [(c.epsilon, 0.0, T)]) <= delta
    assert pp.optimal_delta(eps, [(c.epsilon * 1.001, 0.0, T)]) > delta   # largest
    assert pp.calibrate_optimal(eps, 0.0, T).epsilon == pytest.approx(eps / T)
    c = pp.calibrate_optimal(eps, delta, 10, delta_prime=1e-8)
    assert pp.optimal_delta(eps, [(c.epsilon, 1e-8, 10)]) <= delta


@settings(max_examples=40, deadline=None)
@given(eps=st.floats(0.05, 5), log_delta=st.floats(-10, -3), T=st.integers(1, 400))
def test_calibrate_optimal_never_overshoots(eps, log_delta, T):
    delta = 10.0 ** log_delta
    c = pp.calibrate_optimal(eps, delta, T)
    assert c.epsilon >= eps / T * (1 - 1e-12)
    assert pp.optimal_delta(eps, [(c.epsilon, 0.0, T)]) <= delta
    acc = pp.Accountant(delta=delta, rules=("optimal",))
    acc.record(pp.pure_event(c.epsilon, theorem="t", count=T))
    assert acc.total().epsilon <= eps * (1 + 1e-9)


def test_calibrate_gaussian_without_subsampling_is_exact():
    s = pp.calibrate_gaussian(1.0, 1e-5, T=25, sensitivity=2.0)
    assert s == pytest.approx(pp.calibrate_gaussian_sigma(10.0, 1.0, 1e-5))
    acc = pp.Accountant(delta=1e-5)
    acc.record(pp.gaussian_event(2.0, s, count=25))
    assert acc.total().epsilon <= 1.0 and acc.total().epsilon > 0.999999


@pytest.mark.parametrize("neighbouring,method", [("replace", "pld"), ("add_remove", "rdp"),
                                                 ("add_remove", "auto")])
def test_calibrate_subsampled_gaussian(neighbouring, method):
    eps, delta, T, q = 2.0, 1e-5, 100, 0.05
    s = pp.calibrate_gaussian(eps, delta, T=T, sampling_rate=q, neighbouring=neighbouring,
                              method=method)
    ev = pp.subsampled_gaussian_event(s, 1.0, q, count=T, neighbouring=neighbouring)
    rule_eps = (comp.pld_epsilon if method == "pld" else comp.rdp_epsilon)([ev], delta)[0]
    if method == "auto":
        rule_eps = min(comp.pld_epsilon([ev], delta)[0], comp.rdp_epsilon([ev], delta)[0])
    assert rule_eps <= eps
    below = pp.subsampled_gaussian_event(s * (1 - 3e-4), 1.0, q, count=T,
                                         neighbouring=neighbouring)
    worse = (comp.pld_epsilon if method == "pld" else comp.rdp_epsilon)([below], delta)[0]
    if method != "auto":
        assert worse > eps          # the smallest σ, to the bisection tolerance
    acc = pp.Accountant(delta=delta)
    acc.record(ev)
    assert acc.total().epsilon <= eps


@settings(max_examples=6, deadline=None)
@given(eps=st.floats(0.5, 8), log_delta=st.floats(-8, -4), T=st.integers(1, 60),
       q=st.floats(0.01, 0.5))
def test_calibrate_gaussian_never_overshoots(eps, log_delta, T, q):
    delta = 10.0 ** log_delta
    s = pp.calibrate_gaussian(eps, delta, T=T, sampling_rate=q, pld_discretization=1e-3,
                              rtol=1e-3)
    acc = pp.Accountant(delta=delta, pld_discretization=1e-3)
    acc.record(pp.subsampled_gaussian_event(s, 1.0, q, count=T))
    assert acc.total().epsilon <= eps


# ------------------------------------------------------------------ tiny δ (issue #19, item 3)
def test_pld_is_not_trusted_below_its_float_floor():
    """Below comp.PLD_MIN_DELTA dp-accounting's FFT round-off exceeds δ (at 1e-14 its ε was not
    even monotone in the discretization): PLD declines, with the reason."""
    ev = pp.subsampled_gaussian_event(2.0, 1.0, 0.01, count=100)
    assert comp.pld_epsilon([ev], 1e-9)[0] is not None
    eps, why = comp.pld_epsilon([ev], 1e-14)
    assert eps is None and "round-off" in why


def test_rdp_curve_matches_dp_accounting_and_quadrature():
    """rdp_curve's quadrature against dp-accounting's closed-form RDP (add/remove, integer
    orders) and, for substitution, against scipy's adaptive quadrature; never below either."""
    import dp_accounting as dpa
    from dp_accounting.rdp import rdp_privacy_accountant as rdp
    from scipy import integrate
    from scipy.stats import norm

    orders = [2.0, 3.0, 8.0, 32.0]
    for sigma, q in [(1.0, 0.05), (4.0, 0.001)]:
        ours = comp.rdp_curve(sigma, q, orders, "add_remove")
        acc = rdp.RdpAccountant(orders)
        acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), 1)
        ref = np.array(acc._rdp)    # dp-accounting's curve (no public getter; its own array)
        finite = np.isfinite(ours)
        assert finite.sum() >= 2
        assert np.all(ours[finite] >= ref[finite] * (1 - 1e-6))
        assert np.allclose(ours[finite], ref[finite], rtol=1e-5)
    sigma, q, a = 1.5, 0.1, 4.0
    P = lambda x: (1 - q) * norm.pdf(x, 0, sigma) + q * norm.pdf(x, -1, sigma)  # noqa: E731
    Q = lambda x: (1 - q) * norm.pdf(x, 0, sigma) + q * norm.pdf(x, 1, sigma)  # noqa: E731
    J = integrate.quad(lambda x: Q(x) * np.expm1(a * np.log(P(x) / Q(x))), -20, 20,
                       epsabs=1e-16, epsrel=1e-12, limit=400)[0]
    ours = comp.rdp_curve(sigma, q, [a], "replace")[0]
    assert ours >= math.log1p(J) / (a - 1) and ours == pytest.approx(math.log1p(J) / (a - 1),
                                                                    rel=1e-5)


@pytest.mark.parametrize("delta", [1e-14, 1e-300])
def test_substituted_subsampled_gaussians_are_accounted_at_tiny_delta(delta):
    """At δ = 1e-14 (1/n² at n = 10⁷) and 1e-300 the accountant still proves a finite ε for
    DP-SGD-like steps under substitution (RDP of the PLD's dominating pair), monotone in σ
    and in the number of events — what a bisection and the accountant's prefix checks need."""
    q, T = 2048 / 10_000_000, 1000
    acc = pp.Accountant(delta=delta)
    acc.record(pp.subsampled_gaussian_event(2.0, 1.0, q, count=T))
    e1 = acc.total()
    assert e1.rule == "rdp" and 0 < e1.epsilon < math.inf
    acc.record(pp.pure_event(0.1, theorem="t"))
    assert acc.total().epsilon >= e1.epsilon
    acc2 = pp.Accountant(delta=delta)
    acc2.record(pp.subsampled_gaussian_event(2.5, 1.0, q, count=T))
    assert acc2.total().epsilon < e1.epsilon

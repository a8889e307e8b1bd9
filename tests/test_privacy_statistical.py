"""Neighbouring-dataset tests of every mechanism (Google-DP-style δ̂ estimates, 10⁵ samples per
side, fixed seeds): each passes at its claimed (ε, δ) and a negative control — the same sampler
with half the noise — is refuted.  Selection mechanisms are also checked exactly: their exact
output distributions respect the e^ε ratio on every candidate for worst-case neighbours."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privfair.privacy as pp
from privfair.privacy import exact
from privfair.privacy.randomness import GeneratorSource
from privfair.privacy.testing import check_dp, estimate_delta, goodness_of_fit

N = 100_000


def _src(seed):
    return GeneratorSource(np.random.default_rng(seed))


# ------------------------------------------------------------------ Laplace


@pytest.mark.slow
def test_laplace_neighbours_pass_and_half_noise_fails():
    eps, sens = 1.0, 1.0
    a = pp.laplace_mechanism(np.zeros(N), sens, eps, rng=201)      # f(D) = 0
    b = pp.laplace_mechanism(np.ones(N), sens, eps, rng=202)       # f(D') = 1 = f(D) + Δ
    assert check_dp(a, b, eps, 0.0, bins=20).passed
    # negative control: the same exact sampler with half the scale (truly 2ε-DP)
    scale = pp.laplace_scale(sens, eps) / 2
    a2 = exact.laplace_floats(np.zeros(N), scale, _src(203))
    b2 = exact.laplace_floats(np.ones(N), scale, _src(204))
    res = check_dp(a2, b2, eps, 0.0, bins=20)
    assert not res.passed
    # the estimate is close to the true δ of Lap with ε_true = 2 at ε = 1: 1 − e^{-1/2}
    assert res.delta == pytest.approx(1 - math.exp(-0.5), abs=0.02)


@pytest.mark.slow
def test_laplace_vector_l1_sensitivity():
    # two coordinates, neighbours move both by Δ/2: the ℓ1 sensitivity is Δ = 1
    a = pp.laplace_mechanism(np.zeros((N, 2)), 1.0, 1.0, rng=205)
    b = pp.laplace_mechanism(np.full((N, 2), 0.5), 1.0, 1.0, rng=206)
    # the post-processing "sum of coordinates" must stay within ε
    assert check_dp(a.sum(1), b.sum(1), 1.0, 0.0, bins=20).passed


# ------------------------------------------------------------------ Gaussian


@pytest.mark.slow
def test_gaussian_neighbours_pass_and_half_noise_fails():
    eps, delta, sens = 1.0, 1e-3, 1.0
    a = pp.gaussian_mechanism(np.zeros(N), sens, eps, delta, rng=211)
    b = pp.gaussian_mechanism(np.ones(N), sens, eps, delta, rng=212)
    assert check_dp(a, b, eps, delta, bins=20).passed
    sigma = pp.calibrate_gaussian_sigma(sens, eps, delta) / 2
    a2 = exact.gaussian_floats(np.zeros(N), sigma, _src(213))
    b2 = exact.gaussian_floats(np.ones(N), sigma, _src(214))
    res = check_dp(a2, b2, eps, delta, bins=20)
    assert not res.passed
    assert res.delta == pytest.approx(pp.gaussian_delta(eps, sens / sigma), abs=0.01)


# ------------------------------------------------------------------ selection


SCORES = np.array([0.0, 0.5, 1.0, 1.5, 2.0])


def _worst_neighbour(scores, i, sens):
    """u' with u'_i = u_i − Δ and u'_j = u_j + Δ: the ratio P[i]/P'[i] is maximal."""
    out = scores + sens
    out[i] = scores[i] - sens
    return out


def _draw_indices(sampler, scores, sens, eps, seed, n=N):
    return sampler(scores, sens, eps, rng=seed, size=n)


def test_exponential_mechanism_exact_ratios():
    eps, sens = 1.0, 1.0
    for i in range(SCORES.size):
        nb = _worst_neighbour(SCORES, i, sens)
        p = pp.exponential_mechanism_probabilities(SCORES, sens, eps)
        q = pp.exponential_mechanism_probabilities(nb, sens, eps)
        assert np.max(np.maximum(p / q, q / p)) <= math.exp(eps) * (1 + 1e-12)
        # negative control: the sampler's distribution at 2ε breaks the e^ε bound
        p2 = pp.exponential_mechanism_probabilities(SCORES, sens, 2 * eps)
        q2 = pp.exponential_mechanism_probabilities(nb, sens, 2 * eps)
        assert np.max(np.maximum(p2 / q2, q2 / p2)) > math.exp(eps)
    # the bound is nearly attained by a negligible candidate, so the grid costs < 0.2% of ε
    scores = np.array([-40.0, 0.0, 0.0, 0.0])
    p = pp.exponential_mechanism_probabilities(scores, sens, eps)
    q = pp.exponential_mechanism_probabilities(_worst_neighbour(scores, 0, sens), sens, eps)
    assert math.exp(eps * (1 - 2e-3)) < np.maximum(p / q, q / p).max() <= math.exp(eps) * (1 + 1e-12)
    # monotone utilities (all scores move together) need only Δ, not 2Δ
    p = pp.exponential_mechanism_probabilities(SCORES, sens, eps, monotone=True)
    q = pp.exponential_mechanism_probabilities(SCORES + sens, sens, eps, monotone=True)
    assert np.allclose(p, q)
    q = pp.exponential_mechanism_probabilities(np.where(SCORES > 1, SCORES + sens, SCORES),
                                               sens, eps, monotone=True)
    assert np.max(np.maximum(p / q, q / p)) <= math.exp(eps) * (1 + 1e-12)


def test_exponential_mechanism_is_softmax_of_scores():
    p = pp.exponential_mechanism_probabilities(SCORES, 1.0, 1.0)
    ideal = np.exp(SCORES / 2)
    assert np.allclose(p, ideal / ideal.sum(), rtol=2e-3)


def test_permute_and_flip_exact_ratios():
    eps, sens = 1.0, 1.0
    worst = 0.0
    for i in range(SCORES.size):
        p = pp.permute_and_flip_probabilities(SCORES, sens, eps)
        q = pp.permute_and_flip_probabilities(_worst_neighbour(SCORES, i, sens), sens, eps)
        assert abs(p.sum() - 1) < 1e-12
        worst = max(worst, np.max(np.maximum(p / q, q / p)))
        p2 = pp.permute_and_flip_probabilities(SCORES, sens, 2 * eps)
        q2 = pp.permute_and_flip_probabilities(_worst_neighbour(SCORES, i, sens), sens, 2 * eps)
        assert np.max(np.maximum(p2 / q2, q2 / p2)) > math.exp(eps)   # negative control
    assert worst <= math.exp(eps) * (1 + 1e-12)


@pytest.mark.slow
def test_permute_and_flip_probabilities_match_the_permutation_sum_and_scale():
    """Against the definition (every order of 6 candidates), and stable at 1000 candidates,
    where expanding Π(1 − a_j t) in monomials loses all precision."""
    import itertools

    from privfair.privacy.mechanisms import score_grid

    scores = np.array([0.0, -0.3, -1.0, -0.1, -2.0, -0.05])
    p = pp.permute_and_flip_probabilities(scores, 0.5, 1.0)
    g = score_grid(scores, 0.5, 1.0)
    a = np.exp(-g["eps_num"] * g["gap"].astype(float) / g["den"])
    want = np.zeros(a.size)
    for order in itertools.permutations(range(a.size)):
        reject = 1.0
        for i in order:
            want[i] += reject * a[i] / math.factorial(a.size)
            reject *= 1 - a[i]
    assert np.allclose(p, want, rtol=1e-12, atol=1e-15)
    big = pp.permute_and_flip_probabilities(np.random.default_rng(0).normal(size=1000), 0.1, 1.0)
    assert big.min() >= 0 and abs(big.sum() - 1) < 1e-9


@pytest.fixture(scope="module")
def em_draws():
    eps, sens, i = 1.0, 1.0, 0
    nb = _worst_neighbour(SCORES, i, sens)
    return {
        "D": _draw_indices(pp.exponential_mechanism, SCORES, sens, eps, 221),
        "D'": _draw_indices(pp.exponential_mechanism, nb, sens, eps, 222),
        "D2": _draw_indices(pp.exponential_mechanism, SCORES, sens, 2 * eps, 223),
        "D2'": _draw_indices(pp.exponential_mechanism, nb, sens, 2 * eps, 224),
    }


def test_exponential_mechanism_samples_its_distribution(em_draws):
    p = pp.exponential_mechanism_probabilities(SCORES, 1.0, 1.0)
    assert goodness_of_fit(em_draws["D"], probabilities=p) > 1e-3
    # power: the distribution at ε·1.3 (temperature 30% off) is rejected
    p_off = pp.exponential_mechanism_probabilities(SCORES, 1.0, 1.3)
    assert goodness_of_fit(em_draws["D"], probabilities=p_off) < 1e-8


def test_exponential_mechanism_neighbours(em_draws):
    assert check_dp(em_draws["D"], em_draws["D'"], 1.0, 0.0, bins="discrete").passed
    assert not check_dp(em_draws["D2"], em_draws["D2'"], 1.0, 0.0, bins="discrete").passed


@pytest.fixture(scope="module")
def pf_draws():
    eps, sens, i = 1.0, 1.0, 0
    nb = _worst_neighbour(SCORES, i, sens)
    return {
        "D": _draw_indices(pp.permute_and_flip, SCORES, sens, eps, 231),
        "D'": _draw_indices(pp.permute_and_flip, nb, sens, eps, 232),
        "D2": _draw_indices(pp.permute_and_flip, SCORES, sens, 2 * eps, 233),
        "D2'": _draw_indices(pp.permute_and_flip, nb, sens, 2 * eps, 234),
    }


def test_permute_and_flip_samples_its_distribution(pf_draws):
    p = pp.permute_and_flip_probabilities(SCORES, 1.0, 1.0)
    assert goodness_of_fit(pf_draws["D"], probabilities=p) > 1e-3
    p_off = pp.permute_and_flip_probabilities(SCORES, 1.0, 1.3)
    assert goodness_of_fit(pf_draws["D"], probabilities=p_off) < 1e-8
    # permute-and-flip is not the exponential mechanism (and is never worse in expectation)
    p_em = pp.exponential_mechanism_probabilities(SCORES, 1.0, 1.0)
    assert goodness_of_fit(pf_draws["D"], probabilities=p_em) < 1e-8
    assert p @ SCORES >= p_em @ SCORES


def test_report_noisy_max_neighbours(pf_draws):
    # report-noisy-max with exponential noise *is* permute-and-flip (Ding et al. 2021)
    assert check_dp(pf_draws["D"], pf_draws["D'"], 1.0, 0.0, bins="discrete").passed
    assert not check_dp(pf_draws["D2"], pf_draws["D2'"], 1.0, 0.0, bins="discrete").passed
    idx = [pp.report_noisy_max(SCORES, 1.0, 1.0, rng=s) for s in range(3)]
    assert idx == [pp.permute_and_flip(SCORES, 1.0, 1.0, rng=s) for s in range(3)]
    idx = [pp.report_noisy_max(SCORES, 1.0, 1.0, rng=s, noise="gumbel") for s in range(3)]
    assert idx == [pp.exponential_mechanism(SCORES, 1.0, 1.0, rng=s) for s in range(3)]


@pytest.mark.slow
def test_millions_of_candidates():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=2_000_000)
    scores[123_456] = 40.0          # one clearly best candidate
    assert pp.exponential_mechanism(scores, 1.0, 2.0, rng=1) == 123_456
    assert pp.permute_and_flip(scores, 1.0, 2.0, rng=1) == 123_456
    # with a flat landscape the choice is spread out (no normalisation overflow at huge scores)
    flat = np.full(1_000_000, 1e9)
    picks = {pp.exponential_mechanism(flat, 1.0, 1.0, rng=s) for s in range(5)}
    assert len(picks) == 5


def test_estimate_delta_api():
    a = np.zeros(1000)
    b = np.ones(1000)
    est = estimate_delta(a, b, 1.0, bins="discrete")
    assert est.delta == pytest.approx(1.0) and est.refutes(0.5)
    est = estimate_delta(lambda n: np.zeros(n), lambda n: np.zeros(n), 0.1, bins=5,
                         n_samples=100)
    assert est.delta == 0.0 and est.consistent_with(0.0)
    with pytest.raises(ValueError):
        estimate_delta(lambda n: np.zeros(n), a, 1.0)

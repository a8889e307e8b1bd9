"""The exact samplers draw the distributions they claim (and reject a scale 30% off), their
building blocks are exact, and randomness comes from the OS unless a seed is given."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import privfair.privacy as pp
from privfair.privacy import exact
from privfair.privacy.randomness import GeneratorSource, SystemSource
from privfair.errors import InvalidInputError
from privfair.privacy.testing import goodness_of_fit

N = 100_000


# ------------------------------------------------------------------ Laplace and Gaussian


@pytest.fixture(scope="module")
def laplace_draws():
    return pp.laplace_mechanism(np.full(N, 3.0), 2.0, 1.0, rng=101) - 3.0   # scale b = 2


@pytest.fixture(scope="module")
def gaussian_draws():
    src = GeneratorSource(np.random.default_rng(102))
    return exact.gaussian_floats(np.full(N, -1.5), 2.5, src) + 1.5


def test_laplace_goodness_of_fit_and_power(laplace_draws):
    assert goodness_of_fit(laplace_draws, stats.laplace(scale=2.0).cdf) > 1e-3
    for off in (0.7, 1.3):  # a scale 30% off is rejected
        assert goodness_of_fit(laplace_draws, stats.laplace(scale=2.0 * off).cdf) < 1e-8
    # moments
    assert abs(laplace_draws.mean()) < 0.05
    assert abs(np.abs(laplace_draws).mean() - 2.0) < 0.03


def test_gaussian_goodness_of_fit_and_power(gaussian_draws):
    assert goodness_of_fit(gaussian_draws, stats.norm(scale=2.5).cdf) > 1e-3
    for off in (0.7, 1.3):
        assert goodness_of_fit(gaussian_draws, stats.norm(scale=2.5 * off).cdf) < 1e-8
    # tails: the exact sampler reaches the far tail with the right frequency
    assert abs((np.abs(gaussian_draws) > 2.5 * 3).mean() - 2 * stats.norm.sf(3)) < 0.0012


def test_gaussian_mechanism_uses_analytic_sigma():
    rel = pp.gaussian_mechanism(np.zeros(20_000), 1.0, 1.0, 1e-5, rng=7, return_event=True)
    sigma = pp.calibrate_gaussian_sigma(1.0, 1.0, 1e-5)
    assert rel.event.scale == sigma
    assert goodness_of_fit(rel.value, stats.norm(scale=sigma).cdf) > 1e-3


@pytest.mark.slow
def test_exact_sampler_agrees_with_opendp():
    """Two-sample KS between our Laplace and OpenDP's (exact, OS-seeded, unseedable)."""
    dp = pytest.importorskip("opendp.prelude", reason="opendp is a dev extra")
    dp.enable_features("contrib")   # OpenDP's float Laplace is exact; no "floating-point" needed
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float)
    meas = dp.m.make_laplace(*space, scale=1.5)
    assert meas.map(1.0) == pytest.approx(1.0 / 1.5)
    theirs = np.asarray(meas([0.0] * 20_000))
    ours = pp.laplace_mechanism(np.zeros(20_000), 1.5, 1.0, rng=103)
    assert stats.ks_2samp(theirs, ours).pvalue > 1e-6


def test_release_is_correctly_rounded_post_processing():
    """round_release returns fl(value + sign·scale·(k + U)) for U's eventual bits."""
    src = GeneratorSource(np.random.default_rng(5))
    for value, scale in [(0.1, 3.0), (1e16, 1e-3), (-2.5, 7.25), (5e-324, 1.0)]:
        for _ in range(200):
            k = int(src.below(5))
            sign = 1 if src.word() >> 63 else -1
            u = [src.word(), 64]
            out = exact.round_release(value, scale, sign, k, u, src)
            m, n = u
            real = Fraction(value) + sign * Fraction(scale) * (k + Fraction(m, 2**n))
            # the returned float is the correctly rounded value of every point of U's interval
            assert out == float(real)
            assert out == float(real + sign * Fraction(scale) * Fraction(1, 2**n)) or \
                out == float(real + sign * Fraction(scale) * Fraction(1, 2**(n + 1)))


def test_large_value_small_noise_is_rounded_not_leaked():
    # the release of 1e16 + Laplace(1e-3) is exactly representable floats near 1e16, and the
    # noise cannot be recovered from low-order bits (they are those of the rounded sum)
    out = pp.laplace_mechanism(np.full(1000, 1e16), 1e-3, 1.0, rng=9)
    assert set(np.unique(out)) <= {1e16, np.nextafter(1e16, 0), np.nextafter(1e16, np.inf)}


# ------------------------------------------------------------------ building blocks


class ScriptedSource(pp.RandomSource):
    """Replays a list of 64-bit words (to force ties in lazy comparisons)."""

    def __init__(self, words):
        super().__init__()
        self.script = list(words)

    def words(self, n):
        out, self.script = self.script[:n], self.script[n:]
        if len(out) < n:
            raise AssertionError("script exhausted")
        return np.array(out, dtype=np.uint64)

    def word(self):
        return int(self.words(1)[0])


def test_lazy_comparison_extends_ties_exactly():
    # equal 64-bit prefixes; the next words (u: 7, v: 7) tie again; then u: 5 < v: 9
    src = ScriptedSource([7, 7, 5, 9])
    u, v = [123, 64], [123, 64]
    assert exact.less(u, v, src) is True
    assert u == [((123 << 64 | 7) << 64) | 5, 192] and v == [((123 << 64 | 7) << 64) | 9, 192]
    # and the comparison is consistent afterwards (no new bits needed)
    assert exact.less(v, u, ScriptedSource([])) is False


def test_lazy_comparison_matches_fractions():
    src = GeneratorSource(np.random.default_rng(3))
    for _ in range(2000):
        a = [int(src.below(2**20)) << 44, 64]
        b = [a[0] if src.word() >> 63 else int(src.word()), 64]
        res = exact.less(a, b, src)
        fa = Fraction(a[0], 2**a[1])
        fb = Fraction(b[0], 2**b[1])
        assert res == (fa < fb)


@pytest.mark.parametrize("num,den", [(0, 1), (1, 2), (1, 1), (7, 3), (25, 10), (3, 1000)])
def test_bernoulli_exp_frequency(num, den):
    src = GeneratorSource(np.random.default_rng(num * 31 + den))
    draws = exact.bernoulli_exp(np.full(200_000, num), den, src)
    p = math.exp(-num / den)
    assert abs(draws.mean() - p) < 5 * math.sqrt(p * (1 - p) / draws.size) + 1e-12


def test_bernoulli_exp_power():
    src = GeneratorSource(np.random.default_rng(11))
    draws = exact.bernoulli_exp(np.full(200_000, 1), 1, src)
    assert abs(draws.mean() - math.exp(-1.3)) > 0.05   # exp(-1) is distinguished from exp(-1.3)


def test_small_helpers_exact():
    src = GeneratorSource(np.random.default_rng(12))
    counts = np.bincount([exact.small_below(6, src) for _ in range(60_000)], minlength=6)
    assert stats.chisquare(counts).pvalue > 1e-4
    half = np.mean([exact.bernoulli_exp_minus_half(src) for _ in range(100_000)])
    assert abs(half - math.exp(-0.5)) < 0.006
    one = np.mean([exact.bernoulli_exp_minus_one(src) for _ in range(100_000)])
    assert abs(one - math.exp(-1.0)) < 0.006


def test_system_source_below_is_uniform():
    src = SystemSource()
    draws = src.below(np.array([3, 5, 1, 2**40]), size=None)
    assert draws.shape == (4,) and draws[2] == 0
    x = src.below(7, size=70_000)
    assert x.min() >= 0 and x.max() <= 6
    assert stats.chisquare(np.bincount(x, minlength=7)).pvalue > 1e-6


def test_uniform_permutation_is_uniform():
    src = GeneratorSource(np.random.default_rng(13))
    counts = {}
    for _ in range(24_000):
        key = tuple(exact.uniform_permutation(4, src))
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 24
    assert stats.chisquare(list(counts.values())).pvalue > 1e-4


def test_uniform_permutation_redraws_ties():
    # first 3 keys contain a tie → the whole draw is repeated
    src = ScriptedSource([5, 5, 1, 3, 2, 9])
    order = exact.uniform_permutation(3, src)
    assert list(order) == [1, 0, 2]   # keys 3, 2, 9


# ------------------------------------------------------------------ randomness sources


def test_default_randomness_is_the_os(monkeypatch):
    calls = []
    real = __import__("os").urandom

    def spy(n):
        calls.append(n)
        return real(n)

    monkeypatch.setattr("privfair.privacy.randomness.os.urandom", spy)
    a = pp.laplace_mechanism(0.0, 1.0, 1.0)
    b = pp.laplace_mechanism(0.0, 1.0, 1.0)
    assert calls and a != b
    assert pp.as_source(None).cryptographic


def test_seeds_reproduce():
    for mech in (lambda r: pp.laplace_mechanism(np.zeros(5), 1.0, 1.0, rng=r),
                 lambda r: pp.gaussian_mechanism(np.zeros(5), 1.0, 1.0, 1e-6, rng=r),
                 lambda r: np.array([pp.exponential_mechanism(np.arange(50.0), 1.0, 0.3, rng=r)]),
                 lambda r: np.array([pp.permute_and_flip(np.arange(50.0), 1.0, 0.3, rng=r)])):
        np.testing.assert_array_equal(mech(42), mech(42))
        np.testing.assert_array_equal(mech(np.random.default_rng(1)),
                                      mech(np.random.default_rng(1)))


def test_types_are_preserved():
    assert isinstance(pp.laplace_mechanism(1.0, 1.0, 1.0, rng=0), float)
    out = pp.gaussian_mechanism(np.zeros((2, 3)), 1.0, 1.0, 1e-6, rng=0)
    assert out.shape == (2, 3) and out.dtype == np.float64
    assert isinstance(pp.exponential_mechanism(np.zeros(3), 1.0, 1.0, rng=0), int)


@pytest.mark.slow
def test_torch_values_and_scores():
    torch = pytest.importorskip("torch", reason="torch is an optional extra")
    t = torch.zeros(4, dtype=torch.float32)
    out = pp.laplace_mechanism(t, 1.0, 1.0, rng=0)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32 and out.shape == (4,)
    scores = torch.arange(1000, dtype=torch.float32)
    idx = pp.exponential_mechanism(scores, 1.0, 50.0, rng=0)
    assert 990 <= idx <= 999
    assert pp.permute_and_flip(scores, 1.0, 50.0, rng=0) >= 990


def test_gaussian_noise_vector_fast_path():
    torch = pytest.importorskip("torch", reason="torch is an optional extra")
    z = pp.gaussian_noise_vector((200, 100), 2.0, rng=3)
    assert z.shape == (200, 100) and abs(z.std() - 2.0) < 0.03
    np.testing.assert_array_equal(z, pp.gaussian_noise_vector((200, 100), 2.0, rng=3))
    zt = pp.gaussian_noise_vector(20_000, 0.5, rng=4, namespace="torch")
    assert isinstance(zt, torch.Tensor) and abs(float(zt.std()) - 0.5) < 0.02
    assert torch.equal(zt, pp.gaussian_noise_vector(20_000, 0.5, rng=4, namespace="torch"))
    assert pp.gaussian_noise_vector(10, 1.0, namespace="torch", dtype=torch.float64).dtype == \
        torch.float64
    with pytest.raises(InvalidInputError):
        pp.gaussian_noise_vector(3, 1.0, namespace="jax")


def test_fast_paths_are_marked_idealized():
    r = pp.laplace_mechanism(np.zeros(3), 1.0, 1.0, rng=0, exact=False, return_event=True)
    assert r.event.idealized and "idealized" in r.event.sampler
    g = pp.gaussian_mechanism(np.zeros(3), 1.0, 1.0, 1e-6, rng=0, exact=False, return_event=True)
    assert g.event.idealized
    assert not pp.laplace_mechanism(0.0, 1.0, 1.0, rng=0, return_event=True).event.idealized


@pytest.mark.slow
def test_speed_of_exact_samplers():
    import time

    t = time.perf_counter()
    pp.laplace_mechanism(np.zeros(100_000), 1.0, 1.0, rng=0)
    pp.gaussian_mechanism(np.zeros(100_000), 1.0, 1.0, 1e-6, rng=0)
    assert time.perf_counter() - t < 10.0   # ~0.4 s + ~0.8 s here


def test_cuda_scores_and_noise():
    torch = pytest.importorskip("torch", reason="torch is an optional extra")
    if not torch.cuda.is_available():
        pytest.skip(reason="no CUDA device")
    scores = torch.arange(100_000, dtype=torch.float32, device="cuda")
    assert pp.exponential_mechanism(scores, 1.0, 100.0, rng=0) >= 99_990
    z = pp.gaussian_noise_vector((1000, 100), 1.5, rng=1, namespace="torch", device="cuda")
    assert z.device.type == "cuda" and abs(float(z.std()) - 1.5) < 0.02
    out = pp.laplace_mechanism(torch.zeros(3, device="cuda"), 1.0, 1.0, rng=2)
    assert out.device.type == "cuda"

"""The lagrangian_sgda step sampler (#19): ``solver.poisson`` is a Poisson sample of rate q —
every row in it independently with probability q — returned as unique indices in increasing
order (the gaps between members are i.i.d. Geometric(q), so the rows are gathered in memory
order at no sorting cost).

Fast, fixed seed: each row's inclusion frequency over many draws matches q within 5 standard
errors (and so does the mean batch size, to 5 standard errors of the Binomial(n, q) size);
pairs of rows are included together with frequency q² (independence, within 5 s.e.); the
indices are unique, sorted and in range; the draw is the partial sums of ``gen.geometric``
gaps below n, also when one block of gaps does not reach n.
"""

from __future__ import annotations

import math

import numpy as np

from privfair.backends.lagrangian.solver import poisson


def test_inclusion_frequencies_match_q_and_indices_are_unique():
    n, q, reps = 400, 0.1, 4000
    gen = np.random.default_rng(20261126)
    hits = np.zeros(n)
    pair = 0                                      # rows 0 and 1 together
    sizes = np.empty(reps)
    for r in range(reps):
        idx = poisson(gen, n, q)
        assert idx.dtype.kind in "iu"
        assert np.unique(idx).size == idx.size, "a row twice"
        assert idx.size == 0 or (idx.min() >= 0 and idx.max() < n)
        hits[idx] += 1
        pair += bool(np.isin([0, 1], idx).all())
        sizes[r] = idx.size
    se = math.sqrt(q * (1 - q) / reps)
    freq = hits / reps
    # every row: |f_i − q| ≤ 5 s.e. (a per-row false alarm ~6e-7, over 400 rows ~2e-4)
    assert np.max(np.abs(freq - q)) < 5 * se, np.max(np.abs(freq - q)) / se
    # the rows are exchangeable: the spread of the frequencies is the binomial one
    assert 0.8 < np.std(freq) / se < 1.2
    assert abs(sizes.mean() - n * q) < 5 * math.sqrt(n * q * (1 - q) / reps)
    se2 = math.sqrt(q * q * (1 - q * q) / reps)
    assert abs(pair / reps - q * q) < 5 * se2


def test_the_draws_are_geometric_gaps_and_sorted():
    n, q = 10_000, 0.016
    a, b = np.random.default_rng(7), np.random.default_rng(7)
    for _ in range(5):
        idx = poisson(a, n, q)
        assert np.all(np.diff(idx) > 0), "not sorted"
        rest = (n - 1 + 1) * q
        gaps = b.geometric(q, size=int(rest + 6.0 * math.sqrt(rest) + 16))
        ref = np.cumsum(gaps) - 1
        np.testing.assert_array_equal(idx, ref[ref < n])
    assert a.random() == b.random()       # the same number of draws from the generator


def test_a_sample_longer_than_one_block_of_gaps_continues():
    class Ones:
        """A generator whose gaps are all 1 (every row): more members than one block holds."""

        def __init__(self):
            self.calls = 0

        def geometric(self, q, size):
            self.calls += 1
            return np.ones(size, np.int64)

    gen = Ones()
    np.testing.assert_array_equal(poisson(gen, 1_000_000, 0.99), np.arange(1_000_000))
    assert gen.calls > 1


def test_edge_rates():
    gen = np.random.default_rng(0)
    np.testing.assert_array_equal(poisson(gen, 5, 1.0), np.arange(5))
    assert poisson(gen, 5, 0.0).size == 0
    assert poisson(gen, 0, 0.5).size == 0

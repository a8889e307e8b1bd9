"""The lagrangian_sgda step sampler (#19): ``solver.poisson`` is a Poisson sample of rate q —
every row in it independently with probability q — returned as unique indices (in the
generator's order: sorting was measured not to pay, and changes the batch sums' rounding).

Fast, fixed seed: each row's inclusion frequency over many draws matches q within 5 standard
errors (and so does the mean batch size, to 5 standard errors of the Binomial(n, q) size);
pairs of rows are included together with frequency q² (independence, within 5 s.e.); the
indices are unique and in range; the draw is the binomial size then ``gen.choice`` (the same
generator draws as before #19: fixed-seed runs unchanged).
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


def test_the_draws_are_a_binomial_size_then_a_uniform_subset():
    n, q = 10_000, 0.016
    a, b = np.random.default_rng(7), np.random.default_rng(7)
    for _ in range(5):
        idx = poisson(a, n, q)
        k = int(b.binomial(n, q))
        ref = b.choice(n, size=k, replace=False, shuffle=False)
        np.testing.assert_array_equal(idx, ref)
    assert a.random() == b.random()       # the same number of draws from the generator


def test_edge_rates():
    gen = np.random.default_rng(0)
    np.testing.assert_array_equal(poisson(gen, 5, 1.0), np.arange(5))
    assert poisson(gen, 5, 0.0).size == 0
    assert poisson(gen, 0, 0.5).size == 0

"""Exact order statistics and quantiles as passes (#19): ``passes.order_statistics`` finds
the values of given ranks from bucket counts and a few values, and ``passes.linear_quantiles``
applies numpy's quantile arithmetic to them — the bits ``np.quantile`` gives on the whole
column (the ``cells`` backend's edges on a Dask dataset, where no column is on the client)."""

import numpy as np
import pytest

from privfair.data import passes
from privfair.errors import InvalidInputError
from privfair.models.cells import quantile_edges


def _column(chunk, values):
    return (values[chunk.start:chunk.start + len(chunk)],)


def _edges(values, n_bins, **kw):
    n = values.size
    rows = passes.ArrayRows(np.zeros((n, 1)), chunk_rows=kw.pop("chunk_rows", 97))
    q = np.linspace(0.0, 1.0, n_bins + 1)[1:-1]
    calls = []

    def stat(ranks):
        calls.append(len(ranks))
        return passes.order_statistics(rows, _column, (values,), [ranks], (0.0, 1.0), **kw)[0]

    return passes.linear_quantiles(stat, n, q), calls


@pytest.mark.parametrize("kind", ["uniform", "ties", "skewed", "constant", "tiny"])
def test_quantile_edges_are_numpys_bits(kind):
    rng = np.random.default_rng(7)
    for trial in range(40):
        n = int(rng.integers(1, 2500)) if kind != "tiny" else int(rng.integers(1, 4))
        bins = int(rng.integers(2, 24))
        v = {"uniform": lambda: rng.random(n), "ties": lambda: np.round(rng.random(n), 2),
             "skewed": lambda: rng.random(n) ** 12, "constant": lambda: np.full(n, 0.3),
             "tiny": lambda: rng.random(n)}[kind]()
        # small buckets: several levels of splitting, ties resolved by min == max, gathers
        got, _ = _edges(v, bins, bins=32, sub_bins=4, gather=int(rng.integers(1, 40)))
        np.testing.assert_array_equal(got, quantile_edges(v, bins))
        got, _ = _edges(v, bins)                     # the defaults: one count pass, one gather
        np.testing.assert_array_equal(got, quantile_edges(v, bins))


def test_values_outside_the_bounds_are_refused():
    v = np.array([0.2, 1.5, 0.4])
    rows = passes.ArrayRows(np.zeros((3, 1)))
    with pytest.raises(InvalidInputError, match="bounds"):
        passes.order_statistics(rows, _column, (v,), [[1]], (0.0, 1.0))


def test_concat_partials_merge_by_concatenation():
    m = passes.merge(passes.Concat([1.0, 2.0]), passes.Concat([0.5]))
    assert isinstance(m, passes.Concat) and sorted(m.values) == [0.5, 1.0, 2.0]
    # sums and maxima merge as before beside them
    a, b = (np.ones(2), passes.Max(1.0, "a")), (np.ones(2), passes.Max(2.0, "b"))
    s = passes.merge(a, b)
    assert s[0].tolist() == [2.0, 2.0] and s[1].item == "b"

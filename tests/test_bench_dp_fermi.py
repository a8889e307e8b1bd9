"""bench/dp_fermi_adult.py's verdict and error bar: the exit status rests on the frontier rule
(reach = error ≤ and violation ≤ the stored point, rounded up to three decimals), and the
split's standard error is checked against the binomial formula."""

import importlib.util
import os
import sys

import numpy as np
import pytest

import privfair as pf

BENCH = os.path.join(os.path.dirname(__file__), os.pardir, "bench")


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, BENCH)
    try:
        spec = importlib.util.spec_from_file_location(
            "dp_fermi_adult", os.path.join(BENCH, "dp_fermi_adult.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.path.remove(BENCH)


def test_a_fixed_lambda_point_can_reach_the_target(bench):
    pts = [("level → λ", 0.1814, 0.0396), ("fixed λ = 32", 0.1800, 0.0324)]
    assert bench.frontier_point(pts, 0.1821, 0.0337) == ("fixed λ = 32", 0.1800, 0.0324, True)


def test_rounding_up_to_three_decimals_is_the_tolerance(bench):
    # 0.0337 rounds up to 0.034 and 0.1821 to 0.183: a point at exactly those passes, one above
    # either does not
    assert bench.frontier_point([("p", 0.183, 0.034)], 0.1821, 0.0337)[3]
    assert not bench.frontier_point([("p", 0.1831, 0.034)], 0.1821, 0.0337)[3]
    assert not bench.frontier_point([("p", 0.183, 0.0341)], 0.1821, 0.0337)[3]


def test_a_miss_reports_the_least_violation_within_the_error_bound(bench):
    # the sweep's λ = 64 has less violation but too much error: the reported miss is λ = 32's
    pts = [("level → λ", 0.1814, 0.0396), ("fixed λ = 32", 0.1781, 0.0420),
           ("fixed λ = 64", 0.1882, 0.0403), ("fixed λ = 8", 0.1609, 0.0412)]
    assert bench.frontier_point(pts, 0.1821, 0.0337) == ("level → λ", 0.1814, 0.0396, False)


def _data(n_per_cell, rng):
    # two groups × two labels, n_per_cell rows each
    a = np.repeat([0, 0, 1, 1], n_per_cell)
    y = np.repeat([0, 1, 0, 1], n_per_cell)
    X = rng.normal(size=(a.size, 2))
    return pf.Dataset(X, y, sensitive=np.where(a == 1, "b", "a"), group_names=["a", "b"])


def test_split_se_is_zero_when_every_cell_predicts_alike(bench):
    data = _data(200, np.random.default_rng(0))
    preds = np.full((3, data.n), 0.4)                 # constant: every rate 0.4 in every resample
    assert bench.split_se(preds, data, "eo") == pytest.approx(0.0, abs=1e-12)
    assert bench.split_se(preds, data, "dp") == pytest.approx(0.0, abs=1e-12)


def test_split_se_matches_the_binomial_error_of_a_large_gap(bench):
    # hard predictions with TPR 0.8 in group b and 0.5 in group a (FPR 0 in both): the TPR gap
    # 0.3 is far from 0, so |gap| is smooth there and its bootstrap s.d. is the binomial
    # √(0.8·0.2/m + 0.5·0.5/m)
    m = 400
    data = _data(m, np.random.default_rng(1))
    p = np.zeros(data.n)
    y, a = np.asarray(data.y), np.asarray(data.group)
    rng = np.random.default_rng(2)
    for g, tpr in ((0, 0.5), (1, 0.8)):
        idx = np.flatnonzero((a == g) & (y == 1))
        p[rng.choice(idx, int(tpr * m), replace=False)] = 1.0
    se = bench.split_se(p[None, :], data, "eo", n_boot=2000)
    assert se == pytest.approx(np.sqrt(0.16 / m + 0.25 / m), rel=0.1)

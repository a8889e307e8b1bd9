"""The frontier verdict of bench/dp_fermi_adult.py: the exit status of the DP-FERMI bench rests
on it, so its rule (reach = error ≤ and violation ≤ the stored point, rounded up to three
decimals) is pinned here."""

import importlib.util
import os
import sys

import pytest

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

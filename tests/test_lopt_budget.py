"""The loss-vector methods' budget and score sensitivity (issue #17): one calibration through
privfair.privacy.calibrate with exact closed forms as its start, typed frozen results, and one
home for the linear score's sensitivity (LOPT and Frank–Wolfe disagreed at r = 0)."""

import dataclasses
import math
import time

import numpy as np
import pytest

from privfair.backends import _oracles as O
from privfair.errors import BackendRefusedError
from privfair.privacy import Accountant, Schedule


def _total(cal, dim=3, steps=1, delta=None):
    acc = Accountant(delta=delta or None)
    acc.extend([r.event for r in O.lopt_releases(cal, dim=dim, steps=steps)])
    return acc.total().epsilon


def test_pure_budget_at_delta_zero_is_basic_composition_exactly():
    cal = O.calibrate_lopt("pure", 5, 1.0, 0.0, 0.5, dim=3)
    assert cal.oracle_epsilon == pytest.approx((1 - 1e-6) / (5 + 4 * 0.5), rel=1e-12)
    assert cal.release.epsilon == pytest.approx(0.5 * cal.oracle_epsilon, rel=1e-12)
    assert _total(cal) <= 1.0 and cal.rule.startswith("basic")


def test_gdp_budget_is_the_exact_composition_and_steps_do_not_change_it():
    cal = O.calibrate_lopt("gdp", 4, 1.0, 1e-6, dim=3)
    assert cal.rule.startswith("gdp")
    for steps in (1, 50):              # a call of z = √steps/μ is μ-GDP whatever its steps
        assert 0.999 <= _total(cal, steps=steps, delta=1e-6) <= 1.0


def test_gaussian_budget_refines_rdp_with_pld_and_stays_within():
    fast = O.calibrate_lopt("gaussian", 6, 1.0, 1e-6, dim=3)
    tight = O.calibrate_lopt("gaussian", 6, 1.0, 1e-6, dim=3, thorough=True)
    assert tight.oracle_epsilon >= fast.oracle_epsilon
    assert _total(tight, delta=1e-6) <= 1.0
    # a schedule of it is accepted by its own check (plan time, nothing drawn)
    Schedule(O.lopt_releases(tight, dim=3), 1.0, 1e-6)


def test_spent_events_are_fitted_beside():
    from privfair.privacy import laplace_event

    spent = [laplace_event(1.0, 0.3)]
    cal = O.calibrate_lopt("pure", 4, 1.0, 0.0, dim=2, spent=spent)
    acc = Accountant()
    acc.extend(spent + [r.event for r in O.lopt_releases(cal, dim=2)])
    assert 0.99 * 1.0 <= acc.total().epsilon <= 1.0


def test_budgets_are_frozen_typed_records():
    cal = O.calibrate_lopt("pure", 3, 1.0, 0.0, dim=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cal.oracle_epsilon = 2.0
    assert isinstance(cal.release, O.ReleaseBudget) and cal.scale == cal.oracle_epsilon


@pytest.mark.parametrize("eps", [1e-50, 1e-100, 1e-300, 1e-320])
@pytest.mark.parametrize("T", [2, 20])
def test_gaussian_calibration_refuses_or_fits_without_looping(eps, T):
    """Tiny ε: the Gaussian releases' ε has a floor, so nothing may fit — a public refusal,
    quickly; what is returned composes to ≤ ε by the accountant's rules."""
    t0 = time.perf_counter()
    try:
        cal = O.calibrate_lopt("gaussian", T, eps, 1e-6, dim=2)
    except BackendRefusedError as err:
        assert "too small" in str(err)
    else:
        assert 0 < cal.oracle_epsilon and _total(cal, dim=2, delta=1e-6) <= eps
    assert time.perf_counter() - t0 < 10


# ------------------------------------------------------------------------- score sensitivity
_DL = {"l1": 0.2, "l2": 0.15, "linf": 0.1}


def test_score_sensitivity_is_hoelder_at_the_best_norm():
    rng = np.random.default_rng(0)
    for _ in range(20):
        r = rng.normal(size=5)
        want = min(np.abs(r).max() * _DL["l1"], np.linalg.norm(r) * _DL["l2"],
                   np.abs(r).sum() * _DL["linf"])
        got, q = O.score_sensitivity(r, _DL.get)
        assert got == pytest.approx(want) and q in _DL


def test_score_sensitivity_is_zero_at_zero_weights_and_the_argmax_is_free():
    """LOPT returned 0 at r = 0, Frank–Wolfe substituted Δℓ to keep its mechanism's Δ > 0.
    0 is right: every score is 0 on every dataset, so the argmax is a constant."""
    assert O.score_sensitivity(np.zeros(4), _DL.get)[0] == 0.0
    assert O.score_sensitivity(np.zeros(0), _DL.get)[0] == 0.0
    assert O.score_sensitivity(np.ones(3), lambda q: None) == (None, None)

    class _An:
        delta_l = staticmethod(_DL.get)
    L = np.random.default_rng(1).random((6, 4))
    acc = Accountant()
    cal = O.lopt_budget("pure", 1, 0.5, 0.0)
    draws = Schedule(O.lopt_releases(cal, dim=4), 1.0, 0.0).open(acc, 0)
    idx, sens = O.finite_oracle(L, np.zeros(4), _An, draws=draws)
    assert sens == 0.0 and idx == 0 and acc.events == ()      # nothing drawn, nothing charged
    idx, sens = O.finite_oracle(L, np.ones(4), _An, draws=draws)
    assert sens > 0 and len(acc.events) == 1 and math.isfinite(acc.total().epsilon)

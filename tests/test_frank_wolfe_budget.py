"""Frank–Wolfe's budget (issue #17): the planner's closed-form split scaled by one
privacy.calibrate, a typed frozen FWBudget, and schedules the accountant accepts."""

import dataclasses

import pytest

from privfair.backends.loss_vector import frank_wolfe as FW
from privfair.privacy import Accountant, Schedule, laplace_event


def _total(cal, d, delta, spent=(), rules=None):
    z = cal.mu if cal.kind == "gaussian" else cal.eps_L
    acc = Accountant(delta=delta or None, rules=rules)
    acc.extend(list(spent) + [r.event for r in FW.fw_releases(cal.kind, cal.T, cal.eps_E, z, d)])
    return acc.total().epsilon


def test_laplace_at_delta_zero_is_basic_composition_exactly():
    e_E, e_L = FW.approx_params("laplace", 1.0, 0.0, 6, 0.3)
    cal = FW.calibrate("laplace", 6, e_E, e_L, 1.0, 0.0, 4)
    assert 6 * cal.eps_E + 5 * cal.eps_L == pytest.approx(1.0, rel=1e-5)
    assert _total(cal, 4, 0.0) <= 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        cal.eps_E = 1.0


def test_gaussian_split_is_scaled_up_to_the_budget_and_fits():
    e_E, mu = FW.approx_params("gaussian", 1.0, 1e-6, 10, 0.5)
    cal = FW.calibrate("gaussian", 10, e_E, mu, 1.0, 1e-6, 4)
    assert cal.scale_factor >= 1.0                   # the zCDP split is conservative
    # fitted with the fast rules (RDP): their total is the budget; PLD may prove less
    assert 0.999 <= _total(cal, 4, 1e-6, rules=FW.FAST_RULES) <= 1.0
    assert _total(cal, 4, 1e-6) <= 1.0
    Schedule(FW.fw_releases("gaussian", 10, cal.eps_E, cal.mu, 4), 1.0, 1e-6)


def test_spent_events_are_fitted_beside_and_nothing_fits_is_none():
    spent = [laplace_event(1.0, 0.4)]
    e_E, e_L = FW.approx_params("laplace", 1.0, 0.0, 4, 0.5)
    cal = FW.calibrate("laplace", 4, e_E, e_L, 1.0, 0.0, 2, spent)
    assert 0.99 <= _total(cal, 2, 0.0, spent) <= 1.0
    assert FW.calibrate("laplace", 4, e_E, e_L, 1.0, 0.0, 2, [laplace_event(1.0, 1.0)]) is None

"""The release plumbing (privfair.privacy.release): one calibration, draws only through events."""

import numpy as np
import pytest

from privfair.errors import BudgetExceededError, InvalidPrivacyError
from privfair.privacy import (Accountant, Schedule, Scheduled, calibrate, gaussian_event,
                              laplace_event, noise_multiplier, reduced_noise,
                              subsampled_gaussian_event)


def test_calibrate_is_the_largest_fitting_scale_and_is_checked():
    x = calibrate(lambda e: [laplace_event(1.0, e, count=4)], 2.0, 0.0)
    assert 4 * x <= 2.0 and 4 * x > 2.0 * (1 - 1e-6)     # basic composition is exact at δ = 0
    # with earlier spending, less is left
    y = calibrate(lambda e: [laplace_event(1.0, e, count=4)], 2.0, 0.0,
                  spent=[laplace_event(1.0, 1.0)])
    assert 4 * y <= 1.0 and 4 * y > 1.0 * (1 - 1e-6)


def test_calibrate_gaussian_refines_with_pld_and_the_accountant_accepts_it():
    def events(inv_sigma):
        return [subsampled_gaussian_event(1.0 / inv_sigma, 1.0, 0.01, count=500)]
    x = calibrate(events, 1.0, 1e-5)
    acc = Accountant(limit=(1.0, 1e-5))
    acc.extend(events(x))                       # never refused by its own accountant
    assert acc.total().epsilon <= 1.0
    acc2 = Accountant(delta=1e-5)
    acc2.extend(events(x * 1.2))                # and it is not far from the largest
    assert acc2.total().epsilon > 1.0 * 0.98


def test_calibrate_refuses_publicly_when_nothing_fits():
    with pytest.raises(InvalidPrivacyError, match="too small"):
        calibrate(lambda e: [laplace_event(1.0, e)], 1.0, 0.0,
                  spent=[laplace_event(1.0, 1.0)])


def test_schedule_refuses_releases_that_do_not_fit():
    with pytest.raises(InvalidPrivacyError, match="do not fit"):
        Schedule([Scheduled("a", laplace_event(1.0, 0.8)), Scheduled("b", laplace_event(1.0, 0.8))],
                 1.0, 0.0)


def test_draws_record_once_then_count_down():
    sched = Schedule([Scheduled("steps", gaussian_event(1.0, 2.0, count=3, idealized=True))],
                     10.0, 1e-5)
    acc = Accountant(delta=1e-5)
    d = sched.open(acc, rng=1)
    for _ in range(3):
        d.gaussian("steps", np.zeros(2))
    assert len(acc.events) == 1 and acc.events[0].count == 3 and acc.events[0].seeded
    with pytest.raises(RuntimeError, match="more often"):
        d.gaussian("steps", np.zeros(2))


def test_a_refused_event_draws_nothing():
    sched = Schedule([Scheduled("a", laplace_event(1.0, 1.0))], 1.0, 0.0)
    acc = Accountant(limit=(0.5, 0.0))
    d = sched.open(acc, rng=0)
    with pytest.raises(BudgetExceededError):
        d.laplace("a", 0.0)
    assert acc.events == ()


def test_reduced_noise_scales_the_draw_not_the_record():
    sched = Schedule([Scheduled("a", laplace_event(1.0, 1.0, count=1))], 1.0, 0.0)

    def spread(mult):
        acc = Accountant()
        with reduced_noise(mult):
            d = sched.open(acc, rng=np.random.default_rng(0))
            x = d.laplace("a", np.zeros(20000))
        return float(np.std(x)), acc.events[0].scale
    full, rec_full = spread(1.0)
    half, rec_half = spread(0.5)
    assert rec_full == rec_half == 1.0                    # the certificate's claim is unchanged
    assert abs(half / full - 0.5) < 0.02
    assert noise_multiplier() == 1.0                      # and it does not leak out of the block

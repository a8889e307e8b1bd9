"""The budget filter: refuses overspending before any randomness is drawn; a refused or failed
solve spends nothing."""

from __future__ import annotations

import numpy as np
import pytest

import privfair.privacy as pp
from privfair.errors import BackendRefusedError, BudgetExceededError, InvalidPrivacyError


class RecordingGenerator(np.random.Generator):
    """A numpy Generator that counts every draw made through it."""

    def __init__(self, seed=0):
        super().__init__(np.random.PCG64(seed))
        self.draws = 0

    def integers(self, *args, **kwargs):
        self.draws += 1
        return super().integers(*args, **kwargs)

    def standard_normal(self, *args, **kwargs):
        self.draws += 1
        return super().standard_normal(*args, **kwargs)

    def laplace(self, *args, **kwargs):
        self.draws += 1
        return super().laplace(*args, **kwargs)


def test_spend_and_refuse():
    b = pp.BudgetFilter(1.0, 1e-6, name="adult")
    b.spend(0.4)
    b.spend(0.3, 5e-7, label="second solve")
    assert b.spent == (pytest.approx(0.7), pytest.approx(5e-7))
    assert b.remaining == (pytest.approx(0.3), pytest.approx(5e-7))
    with pytest.raises(BudgetExceededError) as info:
        b.spend(0.31)
    assert info.value.field == "epsilon" and "adult" in str(info.value)
    with pytest.raises(BudgetExceededError) as info:
        b.spend(0.1, 6e-7)
    assert info.value.field == "delta"
    assert b.spent == (pytest.approx(0.7), pytest.approx(5e-7))   # refused: nothing spent
    b.spend(0.3, 5e-7)                                            # exactly the rest fits
    assert not b.can_spend(1e-9)
    assert [h[0] for h in b.history] == ["spend", "second solve", "spend"]


def test_many_small_spends_do_not_drift():
    b = pp.BudgetFilter(1.0)
    for _ in range(10):
        b.spend(0.1)
    assert not b.can_spend(0.01)


def test_reserve_commits_on_success():
    b = pp.BudgetFilter(2.0, 1e-6)
    with b.reserve(1.5, 1e-6, label="solve") as r:
        assert b.remaining == (pytest.approx(0.5), 0.0)
        assert not b.can_spend(0.6)                  # the reservation is held
        pp.laplace_mechanism(0.0, 1.0, 1.0, rng=0, accountant=r.accountant)
    assert r.state == "committed"
    assert b.spent == (pytest.approx(1.5), pytest.approx(1e-6))
    assert b.reserved == (0.0, 0.0)


def test_a_typed_refusal_before_any_release_spends_nothing():
    b = pp.BudgetFilter(1.0, 1e-6)
    with pytest.raises(BackendRefusedError):
        with b.reserve(0.8, 1e-6) as r:
            raise BackendRefusedError("backend", "x", "refused from public quantities")
    assert r.state == "cancelled" and r.charged_failure is None
    assert b.spent == (0.0, 0.0) and b.reserved == (0.0, 0.0)
    assert b.can_spend(1.0, 1e-6)
    # opt-out: every failure keeps the charge
    with pytest.raises(BackendRefusedError):
        with b.reserve(0.5, refund_on_error=False):
            raise BackendRefusedError("backend", "x", "late failure")
    assert b.spent[0] == pytest.approx(0.5)


def test_an_untyped_failure_is_charged_even_before_a_release():
    """An untyped failure (a solver that diverged on the data) is not proven to be decided
    from public quantities: charging it keeps repeated tries from being free (issue #16)."""
    b = pp.BudgetFilter(1.0, 1e-6)
    with pytest.raises(RuntimeError, match="solver diverged") as err:
        with b.reserve(0.8, 1e-6) as r:
            raise RuntimeError("solver diverged")
    assert r.state == "committed" and "typed" in r.charged_failure
    assert b.spent == (pytest.approx(0.8), 1e-6)
    assert any("charged" in note for note in err.value.__notes__)


def test_overspend_is_refused_before_any_randomness():
    b = pp.BudgetFilter(1.0, 1e-6)
    b.spend(0.9)
    rng = RecordingGenerator()

    def solve():
        with b.reserve(0.5, 0.0) as r:        # refused here
            return pp.laplace_mechanism(np.zeros(3), 1.0, 0.5, rng=rng,
                                        accountant=r.accountant)

    with pytest.raises(BudgetExceededError):
        solve()
    assert rng.draws == 0
    assert b.spent == (pytest.approx(0.9), 0.0) and b.reserved == (0.0, 0.0)


def test_reservation_accountant_caps_the_solve():
    b = pp.BudgetFilter(1.0, 1e-6)
    rng = RecordingGenerator()
    with pytest.raises(BudgetExceededError):
        with b.reserve(0.5, 0.0) as r:
            pp.laplace_mechanism(0.0, 1.0, 0.3, rng=rng, accountant=r.accountant)
            draws = rng.draws
            pp.laplace_mechanism(0.0, 1.0, 0.3, rng=rng, accountant=r.accountant)  # 0.6 > 0.5
    assert rng.draws == draws            # the refused release drew nothing
    # ... but the first one was drawn: the failed solve is charged, not rolled back (a refund
    # after a release would make repeated tries free — issue #16)
    assert b.spent == (pytest.approx(0.5), 0.0) and "release" in r.charged_failure
    assert len(r.accountant) == 1


def test_reservation_manual_close_and_errors():
    b = pp.BudgetFilter(1.0)
    r = b.reserve(0.4)
    r.cancel()
    with pytest.raises(BudgetExceededError):
        r.commit()
    r = b.reserve(0.4)
    r.commit()
    assert b.spent == (pytest.approx(0.4), 0.0)
    with pytest.raises(InvalidPrivacyError):
        b.reserve(0.0)
    with pytest.raises(InvalidPrivacyError) as info:
        b.spend(-0.1)
    assert info.value.field == "epsilon"
    with pytest.raises(InvalidPrivacyError):
        b.spend(float("nan"))
    assert "BudgetFilter" in repr(b) and "committed" in repr(r)


def test_budget_doctest_behaviour():
    b = pp.BudgetFilter(1.0, 1e-6)
    b.spend(0.4)
    assert b.remaining == (0.6, 1e-06)


def test_backend_flow_fits_its_reservation():
    """A DP-SGD-like backend: calibrate σ for T Poisson-subsampled steps to the reserved
    (ε, δ), record the planned event (accepted by the reservation), draw idealized noise."""
    b = pp.BudgetFilter(2.0, 1e-5)
    T, q, clip = 50, 0.05, 1.0
    with b.reserve(1.0, 1e-5, label="dp-sgd") as r:
        sigma = pp.Accountant.calibrate_gaussian(1.0, 1e-5, T=T, sensitivity=clip,
                                                 sampling_rate=q, pld_discretization=1e-3,
                                                 rtol=1e-3)
        r.accountant.pld_discretization = 1e-3
        r.accountant.record(pp.subsampled_gaussian_event(sigma, clip, q, count=T,
                                                         sensitivity_source="per-row clip"))
        noise = pp.gaussian_noise_vector((T, 4), sigma, rng=0)
        cert = r.accountant.certificate()
    assert noise.shape == (T, 4)
    assert cert.epsilon <= 1.0 and cert.delta == 1e-5 and cert.idealized_numerics
    assert b.spent == (pytest.approx(1.0), pytest.approx(1e-5))

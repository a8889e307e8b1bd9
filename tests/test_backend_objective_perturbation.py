"""Objective perturbation draws its noise in the coordinates the decision set lets move (issue
#16): the free coordinates are read from the declared set, the noise there has the density the
proof in backends/erm/objective_perturbation.py needs (a Laplace on one free coordinate at
δ = 0), and the released θ keeps a pinned intercept at exactly 0.  The statistical check that
half the noise is now seen by the audit is tests/test_audit.py's
test_audit_passes_honestly_and_refutes_both_controls[objective_perturbation] (slow)."""

import numpy as np
import pytest
from scipy import stats

import privfair as pf
from privfair.backends.erm.noise import (free_coordinates, gamma_norm_noise, gamma_norm_noise_in,
                                         gaussian_noise_in)
from privfair.audit.instances import audit_instances


def test_free_coordinates_come_from_the_declared_set():
    pinned = pf.SparseLinear(3, norm=pf.norms.l1(3), radius=1.0, intercept=False)
    bounded_zero = pf.SparseLinear(3, norm=pf.norms.l1(3), radius=1.0, intercept_bound=0.0)
    free = pf.SparseLinear(3, norm=pf.norms.l1(3), radius=1.0)
    assert free_coordinates(pinned, 4).tolist() == [0, 1, 2]
    assert free_coordinates(bounded_zero, 4).tolist() == [0, 1, 2]
    assert free_coordinates(free, 4).tolist() == [0, 1, 2, 3]


def test_noise_in_one_free_coordinate_is_a_laplace_and_zero_elsewhere():
    """exp(−‖b‖/κ) on a 1-D F is the Laplace of scale κ (the ε₂-DP noise of the proof); the old
    draw — the same density on R² and the first coordinate kept — has 1.5× its variance."""
    kappa, m = 2.0, 4000
    rng = np.random.default_rng(0)
    b = np.array([gamma_norm_noise_in(2, np.arange(1), kappa, rng) for _ in range(m)])
    assert np.all(b[:, 1] == 0.0)
    assert stats.kstest(b[:, 0], stats.laplace(scale=kappa).cdf).pvalue > 1e-3
    old = np.array([gamma_norm_noise(2, kappa, rng)[0] for _ in range(m)])
    assert np.var(b[:, 0]) == pytest.approx(2 * kappa ** 2, rel=0.1)
    assert np.var(old) == pytest.approx(3 * kappa ** 2, rel=0.1)
    g = np.array([gaussian_noise_in(3, np.arange(2), 1.5, rng) for _ in range(m)])
    assert np.all(g[:, 2] == 0.0) and np.std(g[:, :2]) == pytest.approx(1.5, rel=0.05)


@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_a_pinned_intercept_is_released_at_zero_with_the_claim_unchanged(delta):
    """The audit's ridge-logistic instance (intercept pinned): b and the smoothing are drawn in
    w only, so the released θ_b is exactly 0, w is noisy, and the certificate still claims
    the asked (ε, δ)."""
    inst = audit_instances("objective_perturbation")[0]
    assert inst.key == "ridge_logistic"
    D, _ = inst.pair()
    prob = inst.build(D)
    ws = []
    for seed in range(3):
        res = prob.solve(pf.DP(1.0, delta, protect="row"), backend="objective_perturbation",
                         seed=seed, progress=False, **inst.options)
        theta = np.asarray(res.decisions[0], dtype=float)
        assert theta.shape == (2,) and theta[1] == 0.0
        assert res.certificate.epsilon == pytest.approx(1.0)
        assert res.certificate.delta == pytest.approx(delta)
        ws.append(theta[0])
    assert len(set(ws)) == 3

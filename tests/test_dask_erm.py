"""Surrogate ``pf.rates``, the row-private ERM family and ``lopt``'s linear oracles on a Dask
dataset (#19).

The rows stay on the workers: a row's clip scale c_i = min(1, R/‖x_i‖) is computed from the
row in its chunk, the row weights of an ERM come from a public (group, label) table, and every
value, gradient and Hessian is a pass whose sums come back (``soft.surrogate_pass``,
``designs.glm_terms``).  Checked here against the in-memory path on the same rows: the rates'
values and gradients, the ERM's sums, and for ``objective_perturbation`` (with its constraint
form), ``output_perturbation``, ``dual_frank_wolfe`` and ``lopt`` the certificate of a private
solve and the numbers at ε = ∞ — and, since the noise is drawn once on the client from the
same seed, the private numbers too — up to float summation order.
"""

from __future__ import annotations

import importlib.util
import math
import warnings

import numpy as np
import pytest

pytest.importorskip("dask.dataframe", reason="the Dask engine is the optional extra "
                                              "privfair[dask]")
pytest.importorskip("distributed", reason="the Dask engine's tests start a "
                                          "distributed.LocalCluster")

import privfair as pf  # noqa: E402
from privfair.backends.erm.reduction import PassERM, erm_from_rates  # noqa: E402
from privfair.backends.erm.solver import solve  # noqa: E402
from privfair.errors import InvalidInputError  # noqa: E402
from _frames import in_memory, on_dask, sex_income_frame  # noqa: E402

N, D, PARTS = 3000, 4, 3


@pytest.fixture(scope="module")
def frame():
    # every 7th row scaled by 3: some rows beyond the feature bound, clipped
    return sex_income_frame(N, D, 21, 0.4, 0.6, (1.5, 0.5), 0.5, scale_every=7)


@pytest.fixture(scope="module")
def pair(client, frame):
    """(in-memory Dataset, Dask dataset) of the same rows in the same order."""
    return in_memory(frame), on_dask(frame, PARTS)


def _rates(ds, data, **kw):
    fb = ds.feature_bound if isinstance(ds, pf.SparseLinear) else 1.5
    return pf.rates(ds, data, surrogate="logistic", feature_bound=fb, group_mass_bound=0.05,
                    **kw)


def test_surrogate_rates_values_and_gradients_are_the_in_memory_ones(pair):
    mem, dk = pair
    ds = pf.LinearClassifier(D, radius=3.0)
    a, b = _rates(ds, mem), _rates(ds, dk)
    assert a.K == b.K and a.names == b.names
    rng = np.random.default_rng(3)
    for _ in range(3):
        theta, wts = rng.normal(size=ds.P), rng.normal(size=a.K)
        np.testing.assert_allclose(b.evaluate(theta), a.evaluate(theta), rtol=1e-12, atol=1e-14)
        (va, ga), (vb, gb) = a.weighted_value_and_grad(theta, wts), b.weighted_value_and_grad(
            theta, wts)
        assert np.abs(ga).max() > 1e-3
        assert vb == pytest.approx(va, rel=1e-12, abs=1e-14)
        np.testing.assert_allclose(gb, ga, rtol=1e-10, atol=1e-14)
    # per-row arrays never reach the client: asking for them is a typed refusal
    for ask in (lambda: b.clip_scale, lambda: b.soft(np.zeros(ds.P)), lambda: b.row_cell):
        with pytest.raises(InvalidInputError):
            ask()


def test_zero_one_rates_and_finite_sets_count_by_passes(pair):
    mem, dk = pair
    ds = pf.LinearClassifier(D, radius=3.0)
    theta = np.random.default_rng(4).normal(size=ds.P)
    assert np.array_equal(pf.rates(ds, dk).evaluate(theta), pf.rates(ds, mem).evaluate(theta))
    for fs in (pf.Thresholds(np.linspace(-2.0, 2.0, 9), score=0),
               pf.FiniteSet(np.random.default_rng(8).normal(size=(5, D + 1)))):
        want = pf.rates(fs, mem, group_mass_bound=0.05).evaluate_all()
        assert np.array_equal(pf.rates(fs, dk, group_mass_bound=0.05).evaluate_all(), want)


def test_the_erm_of_a_dask_dataset_sums_what_the_in_memory_erm_sums(pair):
    mem, dk = pair
    ds = pf.SparseLinear(D, norm=pf.norms.l1(D), radius=4.0, l2=0.01, intercept_bound=2.0,
                         feature_bound=2.0)
    r = np.zeros(_rates(ds, mem).K)
    r[[1, 2, 5, 6]] = 1.0                                  # fp and fn of both groups
    A, B = erm_from_rates(_rates(ds, mem), r, "empirical"), erm_from_rates(_rates(ds, dk), r,
                                                                          "empirical")
    assert isinstance(B, PassERM) and B.y is None and B.w.shape == (2, 2)
    # public constants: the same (so the same sensitivities and schedules)
    assert (B.n, B.P, B.row_weight_bound, B.zeta, B.beta_H) == (A.n, A.P, A.row_weight_bound,
                                                               A.zeta, A.beta_H)
    assert B.gradient_sensitivity("row") == A.gradient_sensitivity("row")
    theta = np.random.default_rng(5).normal(size=A.P) * 0.5
    fa, ga = A.value_and_grad(theta)
    fb, gb = B.value_and_grad(theta)
    assert fb == pytest.approx(fa, rel=1e-12)
    np.testing.assert_allclose(gb, ga, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(B.grad(theta), A.grad(theta), rtol=1e-10, atol=1e-15)
    f2, g2, H = B.newton_terms(theta)
    z = A.U @ theta
    Ha = (A.U * (A.w * A.loss.second(z, A.y))[:, None]).T @ A.U + A.l2 * np.eye(A.P)
    np.testing.assert_allclose(H, Ha, rtol=1e-10, atol=1e-15)
    assert B.smoothness() == pytest.approx(A.smoothness(), rel=1e-10)
    np.testing.assert_allclose(solve(B).theta, solve(A).theta, rtol=0, atol=1e-8)


def _sparse(l2):
    return pf.SparseLinear(D, norm=pf.norms.l1(D), radius=4.0, l2=l2, intercept_bound=2.0,
                           feature_bound=2.0)


CASES = {   # case: (backend, decision set, constrained, options)
    "objective_perturbation": ("objective_perturbation", lambda: _sparse(0.01), True, {}),
    "output_perturbation": ("output_perturbation", lambda: _sparse(0.5), False, {}),
    "dual_frank_wolfe": ("dual_frank_wolfe", lambda: _sparse(0.01), False, {"T": 3}),
    # lopt's noisy-GD oracle (a LinearClassifier) and its row-private weighted-ERM oracle
    # (objective perturbation of a SparseLinear under protect="row")
    "lopt/noisy_gd": ("lopt", lambda: pf.LinearClassifier(D, radius=3.0), False,
                      {"T": 3, "gd_steps": 10}),
    "lopt/row_oracle": ("lopt", lambda: _sparse(0.01), False, {"T": 3}),
}


def _solve(data, case, privacy, **kw):
    backend, make, constrained, opts = CASES[case]
    r = _rates(make(), data)
    cons = [pf.abs(r.selection["F"] - r.selection["M"]) <= 0.05] if constrained else []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)      # the held-out check's status
        return pf.Problem(pf.minimize(r.error()), cons).solve(
            privacy, backend=backend, seed=7, progress=False, **opts, **kw)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_dask_solve_has_the_in_memory_certificate_and_numbers(pair, case):
    mem, dk = pair
    for privacy in (pf.DP(2.0, 1e-6, protect="row"), pf.DP(math.inf, protect="sensitive")):
        want, got = _solve(mem, case, privacy, holdout=0), _solve(dk, case, privacy, holdout=0)
        assert got.backend == want.backend == CASES[case][0]
        assert got.plan.params.get("oracle_method") == want.plan.params.get("oracle_method")
        assert got.certificate.epsilon == want.certificate.epsilon
        assert got.certificate.delta == want.certificate.delta
        if privacy.is_private:
            assert want.certificate.epsilon > 0         # something was released
        # the noise is drawn on the client from the same seed, the sums differ by rounding
        np.testing.assert_allclose(np.asarray(got.decision, float),
                                   np.asarray(want.decision, float), rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("case", ["objective_perturbation", "output_perturbation"])
def test_under_protect_sensitive_too(pair, case):
    mem, dk = pair
    privacy = pf.DP(2.0, 1e-6, protect="sensitive")
    want, got = _solve(mem, case, privacy, holdout=0), _solve(dk, case, privacy, holdout=0)
    assert (got.certificate.epsilon, got.certificate.delta) == (want.certificate.epsilon,
                                                                want.certificate.delta)
    np.testing.assert_allclose(np.asarray(got.decision, float),
                               np.asarray(want.decision, float), rtol=1e-7, atol=1e-7)


def test_the_default_held_out_check_runs_on_the_workers(pair):
    mem, dk = pair
    got = _solve(dk, "output_perturbation", pf.DP(2.0, 1e-6, protect="row"))
    want = _solve(mem, "output_perturbation", pf.DP(2.0, 1e-6, protect="row"))
    # another split (a public coin per partition), the same plan and certificate
    assert got.certificate.epsilon == want.certificate.epsilon
    assert got.certificate.delta == want.certificate.delta
    assert np.all(np.isfinite(np.asarray(got.decision, float)))


def test_lopt_oracle_gradient_ignores_the_device_on_dask(pair):
    """On a Dask dataset the noisy-GD oracle's gradient is a pass on the workers whatever the
    device asked for (a torch device would need the rows on the client)."""
    from privfair.backends.loss_vector.oracles import erm_gradient_fn

    mem, dk = pair
    ds = pf.LinearClassifier(D, radius=3.0)
    r = np.zeros(_rates(ds, mem).K)
    r[[1, 2]] = 1.0
    theta = np.random.default_rng(6).normal(size=ds.P)
    want = erm_gradient_fn(_rates(ds, mem), r)(theta)
    for device in (None, "torch"):
        got = erm_gradient_fn(_rates(ds, dk), r, device)(theta)
        assert isinstance(got, np.ndarray)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-15)


def test_lopt_with_a_finite_set_on_dask(pair):
    mem, dk = pair
    out = []
    for data in (mem, dk):
        r = pf.rates(pf.Thresholds(np.linspace(-2.0, 2.0, 17), score=0), data,
                     group_mass_bound=0.05)
        prob = pf.Problem(pf.minimize(r.error()),
                          [pf.abs(r.selection["F"] - r.selection["M"]) <= 0.1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            out.append(prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend="lopt", seed=2, progress=False,
                                  holdout=0, T=5))
    want, got = out
    assert got.certificate.epsilon == want.certificate.epsilon > 0
    assert got.certificate.delta == want.certificate.delta
    np.testing.assert_array_equal(np.asarray(got.decisions, float),
                                  np.asarray(want.decisions, float))
    np.testing.assert_allclose(got.weights, want.weights, rtol=0, atol=1e-12)


def test_sgda_refuses_surrogate_rates_on_dask_at_plan_time(pair):
    # lagrangian_sgda runs surrogate rates on Dask (tests/test_dask_backends.py); the older
    # sgda reads its rows in memory and is refused before anything is spent, naming Dask
    _, dk = pair
    r = _rates(pf.LinearClassifier(D, radius=3.0), dk)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        plans = pf.Problem(pf.minimize(r.error()), []).plan(pf.DP(1.0, 1e-6, protect="sensitive"), backend="sgda")
    assert plans.chosen is None
    # refused for the Dask dataset (not for a missing torch)
    assert "sgda" in plans.refused
    if importlib.util.find_spec("torch") is not None:
        assert "Dask" in plans.refused["sgda"]

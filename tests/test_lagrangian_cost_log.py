"""lagrangian_sgda's cost-sensitive row term and step-size schedules (issue #18).

Fast: the "cost_log" row gradient is the exact gradient of |d|·CE(σ(z), 1[d < 0]) (finite
differences), equals the "log" form when there is no constraint, is clipped to C like the
others; "cost_log" on a TorchModel is refused with a typed error before anything is spent; the
cosine schedule decays from 1 to 0; and the recipe solves under both units with the certificate
equal to the accountant's composition of the one scheduled event.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import privfair as pf
from backends.lagrangian.models import LinearAdapter
from backends.lagrangian.solver import _schedule_factor
from privfair.backends import BACKENDS
from privfair.errors import InvalidInputError
from privfair.privacy import Accountant

from _synthetic import binary

RECIPE = dict(objective_surrogate="cost_log", lr=1.0, lr_dual=0.03, clip=3.0,
              lr_schedule="cosine", dual_schedule="cosine")


def _problem(data, level=0.05):
    r = pf.rates(pf.LinearClassifier(data.n_features, radius=1.0), data)
    return pf.Problem(pf.Minimize(r.error()),
                      [pf.abs(r.selection["a"] - r.selection["b"]) <= level])


def _adapter(data, **kw):
    return LinearAdapter(_problem(data).rates, **kw)


def test_cost_log_gradient_is_the_cost_sensitive_cross_entropy():
    data = binary(40, 3)
    ad = _adapter(data, cost_sensitive=True)
    rng = np.random.default_rng(0)
    theta = rng.normal(size=ad.P) * 0.3
    idx = np.arange(data.n)
    Uf = rng.normal(size=(data.n, 2))
    Ug = rng.normal(size=(data.n, 2))
    d = (Uf[:, 1] + Ug[:, 1]) - (Uf[:, 0] + Ug[:, 0])

    def loss(th):
        Xt = np.hstack([np.asarray(data.X, dtype=float), np.ones((data.n, 1))])
        s = 1.0 / (1.0 + np.exp(-(Xt @ th)))
        return float(np.sum(np.abs(d) * np.where(d < 0, -np.log(s), -np.log(1.0 - s))))

    got, clipped = ad.grad_sum(theta, idx, Uf, Ug, clip=None)
    eps = 1e-6
    num = np.array([(loss(theta + eps * e) - loss(theta - eps * e)) / (2 * eps)
                    for e in np.eye(ad.P)])
    assert clipped == 0
    np.testing.assert_allclose(got, num, rtol=1e-5, atol=1e-6)


def test_cost_log_without_a_constraint_is_the_log_objective():
    data = binary(60, 4)
    rng = np.random.default_rng(1)
    theta = rng.normal(size=data.n_features + 1) * 0.5
    idx = np.arange(data.n)
    y = np.asarray(data.y)
    Uf = np.stack([y.astype(float), 1.0 - y], axis=1)      # error: u_f = 1 − e_y
    Ug = np.zeros_like(Uf)
    a, _ = _adapter(data, cost_sensitive=True).grad_sum(theta, idx, Uf, Ug)
    b, _ = _adapter(data, log_objective=True).grad_sum(theta, idx, Uf, Ug)
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_cost_log_rows_are_clipped_to_c():
    data = binary(50, 5)
    ad = _adapter(data, cost_sensitive=True)
    theta = np.zeros(ad.P)
    Uf = np.full((data.n, 2), 0.0)
    Uf[:, 1] = 50.0                                       # a large cost: every row clipped
    for i in range(data.n):
        g, _ = ad.grad_sum(theta, np.array([i]), Uf[i:i + 1], np.zeros((1, 2)), clip=0.7)
        assert np.linalg.norm(g) <= 0.7 * (1 + 1e-12)


def test_cost_log_on_a_torch_model_is_refused_before_anything_is_spent():
    torch = pytest.importorskip("torch", reason="pf.TorchModel needs torch")
    data = binary(300, 6)
    model = pf.TorchModel(lambda: torch.nn.Linear(data.n_features, 2), data.n_features, 2)
    r = pf.rates(model, data)
    prob = pf.Problem(pf.Minimize(r.error()),
                      [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.05])
    privacy = pf.DP(1.0, 1e-5, protect="row")
    with pytest.raises(InvalidInputError, match="objective_surrogate"):
        BACKENDS["lagrangian_sgda"].plan(prob, prob.analyze(privacy), privacy,
                                         {"objective_surrogate": "cost_log"})


def test_cosine_schedule_decays_from_one_to_zero():
    T = 100
    f = [_schedule_factor("cosine", t, T) for t in range(T)]
    assert f[0] == 1.0 and 0 < f[-1] < 1e-3
    assert all(a >= b for a, b in zip(f, f[1:]))
    assert all(_schedule_factor("constant", t, T) == 1.0 for t in range(T))
    with pytest.raises(InvalidInputError, match="lr_schedule"):
        prob = _problem(binary(300, 7))
        privacy = pf.DP(1.0, 1e-5, protect="row")
        BACKENDS["lagrangian_sgda"].plan(prob, prob.analyze(privacy), privacy,
                                         {"lr_schedule": "linear"})


@pytest.mark.parametrize("unit", ["row", "sensitive"])
def test_the_recipe_solves_and_its_certificate_is_the_schedules_composition(unit):
    import warnings

    data = binary(2000, 8)
    prob = _problem(data)
    privacy = pf.DP(1.0, 1e-5, protect=unit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = prob.solve(privacy, backend="lagrangian_sgda", seed=0, progress=False, epochs=2,
                         holdout=0, **RECIPE)
    events = res.plan.schedule.events()
    assert len(events) == 1 and events[0].count == res.plan.params["T"]
    acc = Accountant(delta=privacy.delta)
    acc.extend(events)
    total = acc.total(privacy.delta)
    assert total.epsilon <= privacy.epsilon * (1 + 1e-9)
    assert res.certificate.epsilon == pytest.approx(total.epsilon, rel=1e-6)
    p = res.predict_proba(data.X)
    assert p.shape == (data.n,) and np.all((0 <= p) & (p <= 1))
    assert math.isfinite(res.metrics(data)["error"])

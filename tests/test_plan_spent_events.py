"""Plans are final and fitted beside what was already spent (issue #17 item 1).

Each loss-vector / selection backend's ``plan(problem, analysis, privacy, options, spent=...)``
fits its release schedule to ``privacy``'s (ε, δ) *together with* the events ``spent`` (e.g.
a private group-mass estimate), once; ``run`` draws through that schedule and never
re-calibrates, so an accountant holding ``spent`` and capped at (ε, δ) accepts every draw and
ends close to the cap.
"""

import dataclasses

import numpy as np
import pytest

import privfair as pf
from privfair.backends import get
from privfair.privacy import Accountant, laplace_event


def _rates(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.choice(["a", "b"], n)
    x = rng.normal(size=n) + 0.8 * (a == "a")
    y = (x + rng.normal(scale=0.8, size=n) > 0.5).astype(int)
    data = pf.Dataset(x[:, None], y, sensitive=a, group_names=["a", "b"])
    return pf.rates(pf.Thresholds(np.linspace(-1.5, 2.0, 8), score=0), data, group_mass_bound=0.1)


def _problem(backend):
    r = _rates()
    if backend == "frank_wolfe":                  # needs a smooth h: lse, not abs
        gap = pf.lse(r.selection["a"] - r.selection["b"], r.selection["b"] - r.selection["a"],
                     eta=20)
        return pf.Problem(pf.minimize(r.error()), [gap <= 0.1])
    return pf.Problem(pf.minimize(r.error()), [pf.abs(r.fpr["a"] - r.fpr["b"]) <= 0.05])


@pytest.mark.parametrize("delta", [0.0, 1e-6])
@pytest.mark.parametrize("backend, opts", [("lopt", {"T": 4}), ("frank_wolfe", {"T": 4}),
                                           ("oracle_learner", {"T": 3}), ("exponential", {})])
def test_the_schedule_fits_beside_spent_events_and_run_does_not_refit(backend, opts, delta):
    privacy = pf.DP(1.0, delta, protect="sensitive")
    spent = [laplace_event(1.0, 0.25, label="group-mass lower bound")]
    prob = _problem(backend)
    b = get(backend)
    plan = b.plan(prob, prob.analyze(privacy), privacy, opts, spent=spent)
    alone = b.plan(prob, prob.analyze(privacy), privacy, opts)
    # less is left beside the spent event: every planned release is at least as noisy
    # (scale: Laplace b, Gaussian σ, the exponential mechanism's temperature 2Δ/ε)
    for ev, ev_alone in zip(plan.schedule.events(), alone.schedule.events()):
        assert ev.scale >= ev_alone.scale
    acc = Accountant(delta=delta or None, limit=(1.0, delta))
    acc.extend(spent)
    b.run(plan, rng=0, accountant=acc, progress=False)
    recorded = acc.events[len(spent):]
    assert 0 < len(recorded) <= len(plan.schedule.events())
    planned = [dataclasses.replace(p, seeded=True) for p in plan.schedule.events()]
    assert all(e in planned for e in recorded)            # exactly the plan's events
    total = acc.total().epsilon
    assert total <= 1.0 * (1 + 1e-9)
    if len(recorded) == len(plan.schedule.events()):
        assert total >= 0.9                       # the budget is used, not wasted

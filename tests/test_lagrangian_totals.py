"""lagrangian_sgda under protect="sensitive": the group-free totals from every row each step
("exact", the default) or from the public batch B'_t ("batch", #19: one batch instead of n rows
a step).  Both are public under this unit (x, y, θ only), so the release — and the certificate —
is the same; only the rows read differ."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import privfair as pf
from privfair.backends.lagrangian import models

from _synthetic import binary


def _problem(n=3000):
    data = binary(n, 0)
    r = pf.rates(pf.LinearClassifier(data.n_features, radius=1.0), data)
    return pf.Problem(pf.minimize(r.error()),
                      [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.05])


@pytest.mark.parametrize("totals", ["exact", "batch"])
def test_batch_totals_read_no_full_pass_and_certify_the_same(totals, monkeypatch):
    calls = []
    original = models.LinearAdapter.label_totals

    def counted(self, theta, L):
        calls.append(1)
        return original(self, theta, L)

    monkeypatch.setattr(models.LinearAdapter, "label_totals", counted)
    prob = _problem()
    privacy = pf.DP(1.0, 1e-6, protect="sensitive")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = prob.solve(privacy, backend="lagrangian_sgda", seed=0, progress=False, epochs=2,
                         group_free_totals=totals, holdout=0)
    T = res.plan.params["T"]
    assert res.plan.params["group_free_totals"] == totals
    assert len(calls) == (T if totals == "exact" else 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        other = prob.solve(privacy, backend="lagrangian_sgda", seed=1, progress=False,
                           epochs=2, holdout=0,
                           group_free_totals="batch" if totals == "exact" else "exact")
    assert res.certificate.epsilon == pytest.approx(other.certificate.epsilon, rel=1e-12)
    assert [e.mechanism for e in res.certificate.releases] == \
        [e.mechanism for e in other.certificate.releases]
    assert np.isfinite(res.metrics(prob.rates.data)["error"])


def test_an_unknown_totals_mode_is_refused_before_anything_is_spent():
    budget = pf.BudgetFilter(1.0, 1e-6)
    with pytest.raises(pf.errors.InvalidInputError, match="group_free_totals"):
        _problem(500).solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend="lagrangian_sgda",
                            group_free_totals="sampled", budget=budget)
    assert budget.spent == (0.0, 0.0)

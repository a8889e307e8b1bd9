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
                         group_free_totals=totals, holdout=0, sensitive_algorithm="split")
    T = res.plan.params["T"]
    assert res.plan.params["group_free_totals"] == totals
    assert len(calls) == (T if totals == "exact" else 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        other = prob.solve(privacy, backend="lagrangian_sgda", seed=1, progress=False,
                           epochs=2, holdout=0, sensitive_algorithm="split",
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


def test_a_capped_public_batch_is_planned_from_public_quantities_and_certifies_the_same(
        monkeypatch):
    """``lagrangian.PUBLIC_ROWS`` (off by default) caps B'_t at a public number of rows:
    q' = min(q, PUBLIC_ROWS/n) in the plan, the run reads B'_t at q' (its sums scaled by q/q'),
    and the release — hence the certificate — is the default's."""
    from privfair.backends import lagrangian
    from privfair.backends.lagrangian import solver

    prob = _problem()
    privacy = pf.DP(1.0, 1e-6, protect="sensitive")
    sizes = []
    original = solver.poisson

    def counted(gen, n, q):
        idx = original(gen, n, q)
        sizes.append((q, idx.size))
        return idx

    def solve():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # the public batch B'_t belongs to the split steps
            return prob.solve(privacy, backend="lagrangian_sgda", seed=0, progress=False,
                              epochs=2, holdout=0, sensitive_algorithm="split")

    default = solve()
    q = default.plan.params["sampling_rate"]
    assert default.plan.params["public_rate"] == q          # off by default: q' = q
    monkeypatch.setattr(lagrangian, "PUBLIC_ROWS", 20)
    monkeypatch.setattr(solver, "poisson", counted)
    capped = solve()
    n = prob.rates.n
    assert capped.plan.params["public_rate"] == pytest.approx(20 / n) and 20 / n < q
    rates = sorted({r for r, _ in sizes})
    assert rates == sorted({q, 20 / n})                      # B_t at q, B'_t at q'
    public = [k for r, k in sizes if r < q]
    assert abs(np.mean(public) - 20) < 5 * np.sqrt(20 / len(public))
    assert capped.certificate.epsilon == pytest.approx(default.certificate.epsilon, rel=1e-12)
    assert np.isfinite(capped.metrics(prob.rates.data)["error"])

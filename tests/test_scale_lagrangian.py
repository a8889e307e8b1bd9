"""lagrangian_sgda at scale (issue #19): the numpy adapter reads rows through the data's row
source, never the whole X.

Fast: on a fixed seed the released rules are the same, bit for bit, as those of the adapter
that built the full design [X̃, 1] (the reference below reproduces it), under both units, with
and without a rate surrogate; a dataset taken by index (``take(rows, copy=False)``, the
held-out split's training part) is never gathered whole; and the memory a run allocates is a
batch and a chunk, far below one copy of X (tracemalloc).
"""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest

import privfair as pf
from privfair.backends.lagrangian import histogram as H
from privfair.backends.lagrangian import models
from privfair.backends import get
from privfair.privacy import Accountant
from privfair.privacy.randomness import as_source

from _synthetic import binary


class _FullDesign(models.LinearAdapter):
    """The adapter as it was before #19: the full design [X̃, 1] (an n×P copy) built once,
    batches indexed from it, the all-rows totals from every row's probabilities at once."""

    built = 0          # instances made: the comparison really ran the reference

    def __init__(self, rates, *args, **kw):
        super().__init__(rates, *args, **kw)
        type(self).built += 1
        X = rates.clipped_rows if self.surrogate is not None else rates.data.X
        self.Xt = np.hstack([np.asarray(X, dtype=float), np.ones((rates.n, 1))])

    def design(self, idx):
        return self.Xt[idx]

    def label_totals(self, theta, L):
        # the adapter's own soft prediction on the whole design (its soft_scale included)
        s = self._mass(theta, None, Z=self.Xt, y=self.y)[0]
        P = np.stack([1.0 - s, s], axis=1)
        return H.batch_counts(np.zeros(self.rates.n, np.int64), self.y, P, 1, L)[0]


def _solve(data, unit, surrogate=None, **opts):
    kw = {} if surrogate is None else dict(surrogate=surrogate, group_mass_bound=0.05)
    r = pf.rates(pf.LinearClassifier(data.n_features, radius=1.0), data, **kw)
    prob = pf.Problem(pf.Minimize(r.error()),
                      [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.05])
    opts.setdefault("epochs", 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return prob.solve(pf.DP(1.0, 1e-5, protect=unit), backend="lagrangian_sgda", seed=0,
                          progress=False, **opts)


@pytest.mark.parametrize("surrogate", [None, "logistic"])
@pytest.mark.parametrize("unit", ["row", "sensitive"])
def test_released_rules_are_those_of_the_full_design(monkeypatch, unit, surrogate):
    data = binary(3000, 7)
    new = _solve(data, unit, surrogate)
    monkeypatch.setattr(models, "LinearAdapter", _FullDesign)
    before = _FullDesign.built
    old = _solve(data, unit, surrogate)
    assert _FullDesign.built == before + 1
    assert len(new.decisions) == len(old.decisions) >= 1
    for a, b in zip(new.decisions, old.decisions):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(new.weights, old.weights)
    assert new.info["lambda"] == old.info["lambda"]
    assert new.certificate.epsilon == old.certificate.epsilon


def test_cost_log_and_randomized_rules_are_those_of_the_full_design(monkeypatch):
    data = binary(2000, 8)
    opts = dict(objective_surrogate="cost_log", randomize=3)
    new = _solve(data, "sensitive", **opts)
    monkeypatch.setattr(models, "LinearAdapter", _FullDesign)
    old = _solve(data, "sensitive", **opts)
    for a, b in zip(new.decisions, old.decisions):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_all_rows_totals_and_probs_match_every_row_at_once():
    data = binary(1500, 9)
    r = pf.rates(pf.LinearClassifier(data.n_features, radius=1.0), data)
    ad = models.LinearAdapter(r, sharpness=5.0)
    ad.rows.chunk_rows = 256                # several chunks, the last one short
    ref = _FullDesign(r, sharpness=5.0)
    theta = np.random.default_rng(0).normal(size=ad.P)
    np.testing.assert_array_equal(ad.label_totals(theta, 2), ref.label_totals(theta, 2))
    np.testing.assert_array_equal(ad.probs(theta, None), ref.probs(theta, np.arange(data.n)))


def test_a_dataset_taken_by_index_is_never_gathered_whole():
    full = binary(4000, 10)
    part = full.take(np.arange(0, 4000, 2), copy=False)
    res = _solve(part, "sensitive")
    assert res.backend == "lagrangian_sgda"
    assert not part.is_materialized, "the adapter gathered the whole X of a dataset taken by index"


def test_a_run_allocates_a_batch_and_a_chunk_not_a_copy_of_x():
    from privfair.backends.lagrangian import solver

    rng = np.random.default_rng(11)
    n, d = 200_000, 20
    a = np.where(rng.random(n) < 0.6, "a", "b")
    y = (rng.random(n) < np.where(a == "a", 0.5, 0.25)).astype(int)
    X = rng.normal(size=(n, d)) + y[:, None] * 0.3
    data = pf.Dataset(X, y, sensitive=a, group_names=["a", "b"])
    r = pf.rates(pf.LinearClassifier(d, radius=1.0), data)
    prob = pf.Problem(pf.Minimize(r.error()),
                      [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.05])
    plan = prob.plan(pf.DP(1.0, 1e-5, protect="sensitive"), backend="lagrangian_sgda",
                     epochs=0.1).chosen
    assert plan.backend == "lagrangian_sgda" and plan.params["T"] == 5
    x_bytes = data.X.nbytes                       # 32 MB
    tracemalloc.start()
    try:
        # the training loop over the rows (under "sensitive": a batch, a public batch and a
        # pass over every row each step), without noise: the accountant's first draw
        # allocates its own (n-independent) PLD arrays, not under test here
        adapter = models.LinearAdapter(r, sharpness=5.0)
        ck, _, state = solver.train(prob, adapter, plan.params, None,
                                    np.random.default_rng(0))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.all(np.isfinite(state["last"]))
    # before #19 the adapter's [X, 1] alone was 1.05·X; now a batch (n/50 rows), one chunk
    # (~8 MB: its design buffer) and its per-row temporaries
    assert peak < 0.5 * x_bytes, f"peak {peak / 2**20:.1f} MB for X of {x_bytes / 2**20:.1f} MB"


def test_torch_adapter_fills_its_tensor_chunk_by_chunk():
    torch = pytest.importorskip("torch", reason="pf.TorchModel needs torch")
    full = binary(3000, 12)
    part = full.take(np.arange(1, 3000, 3), copy=False)
    r = pf.rates(pf.TorchModel(torch.nn.Linear(2, 2), 2, 2), part)
    ad = models.TorchAdapter(r)
    ad_rows = np.asarray(full.X)[np.arange(1, 3000, 3)]
    assert not part.is_materialized, "the adapter gathered the whole X of a dataset taken by index"
    np.testing.assert_array_equal(ad.X.numpy(), ad_rows.astype(np.float32))
    theta = np.asarray(ad.theta0, dtype=float)
    got = ad.label_totals(theta, 2)
    ref = H.batch_counts(np.zeros(part.n, np.int64), np.asarray(part.y),
                         ad.probs(theta, None), 1, 2)[0]
    np.testing.assert_allclose(got, ref, rtol=1e-12)

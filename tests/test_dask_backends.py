"""Backends on a Dask dataset beyond the ERM family and 0-1 ``lagrangian_sgda`` (#19).

* ``lagrangian_sgda`` with surrogate rates: a pass clips its chunk's rows to the public
  feature bound on the worker (``models.RowTerms.clipped``, the arithmetic of the rates'
  ``clip_scale``) and computes the surrogate masses there; one step's passes are the in-memory
  sums on the same sampled rows, a q = 1, ε = ∞ solve is the in-memory solve, a private solve
  has the in-memory certificate.
* ``postprocessing`` (the public base's Newton passes, the level counts, the held-out check
  of a rule that reads the group) and ``oracle_learner``'s regression oracle (its row-norm
  bound a maximum pass, its best response a pass over the cells' coefficient table): the
  in-memory numbers at ε = ∞ and the in-memory certificate.
* ``sgda`` is refused at plan time on a Dask dataset, naming ``lagrangian_sgda``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

pytest.importorskip("dask.dataframe", reason="the Dask engine is the optional extra "
                                              "privfair[dask]")
pytest.importorskip("distributed", reason="the Dask engine's tests start a "
                                          "distributed.LocalCluster")

import privfair as pf  # noqa: E402
from privfair.backends.lagrangian import histogram as H  # noqa: E402
from privfair.backends.lagrangian import models, solver  # noqa: E402
from privfair.data import passes  # noqa: E402
from privfair.privacy.randomness import as_source  # noqa: E402
from _frames import in_memory, on_dask, sampled_rows, sex_income_frame  # noqa: E402

N, D, PARTS = 1500, 4, 3
R = 1.5          # the surrogate's feature bound: most rows (and every 7th, scaled by 3) clipped


@pytest.fixture(scope="module")
def frame():
    return sex_income_frame(N, D, 21, 0.4, 0.6, (1.5, 0.5), 0.5, scale_every=7)


@pytest.fixture(scope="module")
def pair(client, frame):
    """(in-memory Dataset, Dask dataset) of the same rows in the same order."""
    return in_memory(frame), on_dask(frame, PARTS)


def _quiet(fn, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **kw)


# -- lagrangian_sgda with surrogate rates -----------------------------------------------------
def _surrogate_problem(data):
    r = pf.rates(pf.LinearClassifier(D, radius=3.0), data, surrogate="logistic",
                 feature_bound=R, group_mass_bound=0.05)
    return pf.Problem(pf.minimize(r.error()),
                      [pf.abs(r.selection["F"] - r.selection["M"]) <= 0.05])


def _sgda(data, privacy, **kw):
    return _quiet(_surrogate_problem(data).solve, privacy, backend="lagrangian_sgda", seed=0,
                  progress=False, **kw)


def test_surrogate_steps_passes_are_the_in_memory_sums_on_the_same_rows(pair):
    mem, dk = pair
    rd, rm = _surrogate_problem(dk).rates, _surrogate_problem(mem).rates
    ad, am = models.LinearAdapter(rd), models.LinearAdapter(rm)
    assert ad.scale is None and am.scale is not None      # no per-row array on the client
    batches = solver.batches_for(ad, rd, None, as_source(7))
    assert isinstance(batches, solver.PassBatches)
    rng = np.random.default_rng(2)
    theta = rng.normal(size=D + 1)
    tf, tg = rng.normal(size=(2, 2, 2)), rng.normal(size=(2, 2, 2))   # (G, L, L) tables
    rf, rg = rng.normal(size=(2, 2)), rng.normal(size=(2, 2))         # (L, L): by label
    q, q_pub, CLIP = 0.3, 0.25, 0.3
    C, g, pub, tot = batches.read(theta, q, (tf, tg), CLIP, q_pub, (rf, rg), True)
    seeds = passes.poisson_seeds(as_source(7), 2 * PARTS)
    idx = sampled_rows(dk, q, seeds[:PARTS])
    idx2 = sampled_rows(dk, q_pub, seeds[PARTS:])
    gi, yi = mem.group[idx], mem.y[idx]
    P, g_want, clipped = am.step(theta, idx, tf[gi, yi], tg[gi, yi], clip=CLIP)
    assert clipped > 0 and np.abs(g_want).max() > 1e-3
    np.testing.assert_allclose(C, H.batch_counts(gi, yi, P, 2, 2), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g, g_want, rtol=1e-11, atol=1e-11)
    y2 = mem.y[idx2]
    P2, pub_want, _ = am.step(theta, idx2, rf[y2], rg[y2])
    np.testing.assert_allclose(pub, pub_want * (q / q_pub), rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(tot, H.batch_counts(np.zeros(idx2.size, np.int64), y2, P2, 1,
                                                   2)[0] * (q / q_pub), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(batches.label_totals(theta), am.label_totals(theta, 2),
                               rtol=1e-12, atol=1e-9)
    # control: the same rows unclipped (x, not x̃) give other masses — the clip is exercised
    P_raw = H.batch_counts(gi, yi, np.stack(
        [1 - (s := models.RowTerms(D + 1, 1.0, 10.0, "fixed", False, False, "logistic",
                                   rd.phi_at_bound, R).masses(
            mem.X[idx] @ theta[:-1] + theta[-1], 1.0, yi)[0]), s], axis=1), 2, 2)
    assert np.abs(P_raw - C).max() > 1.0


@pytest.mark.parametrize("unit,totals", [("row", "batch"), ("sensitive", "exact")])
def test_surrogate_solve_without_sampling_or_noise_is_the_in_memory_solve(pair, monkeypatch,
                                                                          unit, totals):
    mem, dk = pair
    inf = pf.DP(math.inf, protect=unit)
    opts = dict(holdout=0, batch_size=N, epochs=4, group_free_totals=totals,
                sensitive_algorithm="split")
    got, want = _sgda(dk, inf, **opts), _sgda(mem, inf, **opts)
    assert got.plan.params["T"] == want.plan.params["T"] == 4
    assert np.abs(np.array(want.decisions)).max() > 0.1
    np.testing.assert_allclose(np.array(got.decisions), np.array(want.decisions), rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_array_equal(got.weights, want.weights)
    # control: workers that do not clip their rows to R give another rule
    monkeypatch.setattr(models.RowTerms, "clipped", lambda self, X: X)
    raw = _sgda(dk, inf, **opts)
    assert np.abs(np.array(raw.decisions) - np.array(want.decisions)).max() > 1e-3


@pytest.mark.parametrize("unit", ["row", "sensitive"])
def test_private_surrogate_solve_has_the_in_memory_certificate(pair, unit):
    mem, dk = pair
    priv = pf.DP(2.0, 1e-5, protect=unit)
    got, want = _sgda(dk, priv, holdout=0, epochs=2), _sgda(mem, priv, holdout=0, epochs=2)
    assert got.certificate == want.certificate
    assert got.plan.params["noise_multiplier"] == want.plan.params["noise_multiplier"] > 0
    assert np.all(np.isfinite(np.array(got.decisions)))
    # the released θ is in the user's ball (projected every step, as in memory)
    assert max(np.linalg.norm(d) for d in got.decisions) <= 3.0 + 1e-9


# -- postprocessing ---------------------------------------------------------------------------
def _eo_problem(data, base=None):
    r = pf.rates(pf.PostProcessed(base if base is not None else pf.LinearClassifier(D)), data)
    return pf.Problem(pf.minimize(r.error()), [pf.abs(r.fpr["F"] - r.fpr["M"]) <= 0.1,
                                               pf.abs(r.tpr["F"] - r.tpr["M"]) <= 0.1])


def test_postprocessing_public_base_on_dask_is_the_in_memory_rule(pair):
    # protect="sensitive": the public logistic base (Newton passes) and the level counts are
    # passes on the workers; at ε = ∞ the same base, counts and table as in memory
    mem, dk = pair
    inf = pf.DP(math.inf, protect="sensitive")
    got, want = (_quiet(_eo_problem(d).solve, inf, backend="postprocessing", holdout=0,
                        progress=False) for d in (dk, mem))
    np.testing.assert_allclose(got.info["base_theta"], want.info["base_theta"], rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_array_equal(got.info["released_counts"], want.info["released_counts"])
    X, s = mem.X, np.asarray(["F", "M"])[mem.group]
    p_got, p_want = got.predict_proba(X, s), want.predict_proba(X, s)
    np.testing.assert_allclose(p_got, p_want, rtol=0, atol=1e-9)
    # control: another base (the first feature's sign) gives other predictions
    other = _quiet(_eo_problem(mem, base=lambda Z: Z[:, 0]).solve, inf,
                   backend="postprocessing", holdout=0, progress=False)
    assert np.abs(other.predict_proba(X, s) - p_want).max() > 0.1
    # the user's metrics of the group-reading rule on the Dask rows: one pass giving each row
    # its declared group, the in-memory metrics (before: a typed refusal)
    m_dk, m_mem = want.metrics(dk), want.metrics(mem)
    for k in ("error", "eo_violation"):
        assert m_dk[k] == pytest.approx(m_mem[k], abs=1e-9)
    assert abs(other.metrics(dk)["error"] - m_mem["error"]) > 1e-3      # control: another rule


def test_postprocessing_dask_solve_with_the_default_check(pair):
    # the default held-out check of a rule that reads the group: one pass on the workers,
    # each row given its declared group value — at ε = ∞ the in-memory counts of the same rows
    from privfair.planning.holdout import soft_counts

    mem, dk = pair
    inf = pf.DP(math.inf, protect="sensitive")
    got = _quiet(_eo_problem(dk).solve, inf, backend="postprocessing", seed=0, progress=False)
    assert got.holdout is not None and got.holdout.n_held_out == round(0.2 * N)
    _, held = dk.split_holdout(got.holdout.n_held_out, as_source(0))     # the solve's split
    trained = got.holdout.trained if got.holdout.trained is not None else got
    counts = soft_counts(trained, held.to_dataset())          # in memory, the same rows
    assert counts.sum() == pytest.approx(got.holdout.n_held_out)
    np.testing.assert_allclose(got.holdout.counts, counts, rtol=1e-12, atol=1e-9)
    # control: the same rule read with the groups swapped counts otherwise
    swapped = held.to_dataset()
    swapped = pf.Dataset(swapped.X, swapped.y, np.asarray(["M", "F"])[swapped.group],
                         group_names=["F", "M"], labels=[0, 1])
    assert np.abs(soft_counts(trained, swapped) - counts).max() > 0.5
    # private: the certificate of the in-memory solve (the same plan)
    priv = pf.DP(1.0, 1e-6, protect="sensitive")
    got, want = (_quiet(_eo_problem(d).solve, priv, backend="postprocessing", seed=0,
                        progress=False) for d in (dk, mem))
    assert got.certificate == want.certificate and got.holdout is not None


# -- oracle_learner (regression oracle) --------------------------------------------------------
def _ol_problem(data):
    r = pf.rates(pf.LinearClassifier(D, radius=3.0), data, group_mass_bound=0.05)
    return pf.Problem(pf.minimize(r.error()),
                      [pf.abs(r.selection["F"] - r.selection["M"]) <= 0.05])


def test_oracle_learner_regression_on_dask_is_the_in_memory_solve(pair):
    from privfair.backends.reductions.oracle_learner import max_row_l1

    mem, dk = pair
    assert max_row_l1(dk) == max_row_l1(mem) == float(np.abs(mem.X).sum(axis=1).max() + 1.0)
    for priv in (pf.DP(math.inf, protect="sensitive"), pf.DP(1.0, 1e-6, protect="sensitive")):
        got, want = (_quiet(_ol_problem(d).solve, priv, backend="oracle_learner", seed=3,
                            holdout=0, progress=False, T=5) for d in (dk, mem))
        assert got.certificate == want.certificate
        assert len(got.decisions) == len(want.decisions) == 5
        # the noise is drawn on the client from the same seed: equal up to summation order
        np.testing.assert_allclose(np.array(got.decisions), np.array(want.decisions),
                                   rtol=1e-7, atol=1e-9)
    # control: another seed of the private solve gives other decisions
    other = _quiet(_ol_problem(mem).solve, priv, backend="oracle_learner", seed=4, holdout=0,
                   progress=False, T=5)
    assert np.abs(np.array(other.decisions) - np.array(want.decisions)).max() > 1e-3


# -- refusals ------------------------------------------------------------------------------------
def test_sgda_is_refused_on_dask_at_plan_time_naming_lagrangian_sgda(pair):
    _, dk = pair
    for prob in (_ol_problem(dk), _surrogate_problem(dk)):
        plans = _quiet(prob.plan, pf.DP(1.0, 1e-6, protect="sensitive"), backend="sgda")
        assert plans.chosen is None
        why = plans.refused["sgda"]
        assert "Dask" in why and "lagrangian_sgda" in why
    # control: in memory sgda plans the same problem (its trainer is torch's)
    pytest.importorskip("torch")
    mem, _ = pair
    assert _quiet(_ol_problem(mem).plan, pf.DP(1.0, 1e-6, protect="sensitive"),
                  backend="sgda").chosen is not None


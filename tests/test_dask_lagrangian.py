"""``lagrangian_sgda`` with a ``pf.LinearClassifier`` on a Dask dataset (#19).

A step's batch reads are passes over Poisson samples drawn on the workers from per-partition
seeds (``solver.PassBatches``, ``models.batch_pass``): only the batch's histogram, its clipped
gradient sum and a count of clipped rows come back.  Checked here: one step's passes give the
sums the in-memory adapter computes on the same sampled rows; without sampling or noise (q = 1,
ε = ∞) a whole Dask solve gives the in-memory solve's rule up to float summation order; a
private Dask solve has the in-memory certificate and a useful rule under both units."""

import math

import numpy as np
import pytest

pytest.importorskip("dask.dataframe", reason="the Dask engine is the optional extra "
                                              "privfair[dask]")
distributed = pytest.importorskip("distributed", reason="the Dask engine's tests start a "
                                                        "distributed.LocalCluster")

import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402

import privfair as pf  # noqa: E402
from privfair.backends.lagrangian import histogram as H  # noqa: E402
from privfair.backends.lagrangian import models, solver  # noqa: E402
from privfair.data import dask_data, passes  # noqa: E402
from privfair.privacy.randomness import as_source  # noqa: E402
from _frames import GROUPS, on_dask, sex_income_frame, record_returned_sums  # noqa: E402
from _frames import parity_problem, solve_parity  # noqa: E402
from _frames import in_memory as _memory, sampled_rows as _sampled_rows  # noqa: E402

N, D, PARTS = 2000, 4, 3


@pytest.fixture(scope="module")
def frame():
    return sex_income_frame(N, D, 11, 0.35, 0.8, (1.5, 0.5), 0.8)


def _on_dask(df):
    return on_dask(df, PARTS)


def _problem(data):
    return parity_problem(data, D)


def _solve(data, privacy, **kw):
    return solve_parity(data, D, privacy, **kw)


@pytest.mark.parametrize("scale,objective", [("capped", "log"), ("fixed", "cost_log"),
                                             ("angle", "linear")])
def test_one_steps_passes_are_the_in_memory_sums_on_the_same_rows(client, frame, monkeypatch,
                                                                  scale, objective):
    data, mem = _on_dask(frame), _memory(frame)
    rd, rm = _problem(data).rates, _problem(mem).rates
    kw = dict(sharpness=5.0, soft_scale=scale, log_objective=objective == "log",
              cost_sensitive=objective == "cost_log")
    ad, am = models.LinearAdapter(rd, **kw), models.LinearAdapter(rm, **kw)
    batches = solver.batches_for(ad, rd, None, as_source(7))
    assert isinstance(batches, solver.PassBatches)          # a Dask row source cannot gather
    assert isinstance(solver.batches_for(am, rm, None), solver.GatheredBatches)
    back = record_returned_sums(monkeypatch)               # what comes back to the client
    rng = np.random.default_rng(2)
    theta = rng.normal(size=D + 1)
    tf, tg = rng.normal(size=(2, 2, 2)), rng.normal(size=(2, 2, 2))   # (G, L, L) tables
    rf, rg = rng.normal(size=(2, 2)), rng.normal(size=(2, 2))         # (L, L): by label
    q, q_pub, CLIP = 0.2, 0.15, 0.3
    C, g, pub, tot = batches.read(theta, q, (tf, tg), CLIP, q_pub, (rf, rg), True)
    # the same seeds, drawn again from the same source: B_t's, then B'_t's, one per partition
    seeds = passes.poisson_seeds(as_source(7), 2 * PARTS)
    idx, idx2 = _sampled_rows(data, q, seeds[:PARTS]), _sampled_rows(data, q_pub, seeds[PARTS:])
    assert 250 < idx.size < 550 and idx2.size > 200
    assert not np.array_equal(idx[:50], idx2[:50])         # independent samples
    gi, yi = mem.group[idx], mem.y[idx]
    P, g_want, clipped = am.step(theta, idx, tf[gi, yi], tg[gi, yi], clip=CLIP)
    assert clipped > 0                                     # the clipping is exercised
    np.testing.assert_allclose(C, H.batch_counts(gi, yi, P, 2, 2), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g, g_want, rtol=1e-11, atol=1e-11)
    y2 = mem.y[idx2]
    P2, pub_want, _ = am.step(theta, idx2, rf[y2], rg[y2])
    scale_ = q / q_pub
    np.testing.assert_allclose(pub, pub_want * scale_, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(tot, H.batch_counts(np.zeros(idx2.size, np.int64), y2, P2, 1,
                                                   2)[0] * scale_, rtol=1e-12, atol=1e-12)
    # the exact group-free totals: one pass over every row
    np.testing.assert_allclose(batches.label_totals(theta), am.label_totals(theta, 2),
                               rtol=1e-12, atol=1e-9)
    # only sums came back: a (G, L, L) histogram, a d-vector, numbers — nothing per row
    leaves = [np.asarray(v) for part in back for v in part]
    assert leaves and max(v.size for v in leaves) <= 2 * 2 * 2


@pytest.mark.parametrize("unit,totals", [("row", "batch"), ("sensitive", "batch"),
                                         ("sensitive", "exact")])
def test_without_sampling_or_noise_a_dask_solve_is_the_in_memory_solve(client, frame, unit,
                                                                       totals):
    # q = 1 (every row in every batch) and ε = ∞ (no noise, no clipping): the two paths read
    # the same rows, so the same rule up to float summation order
    data, mem = _on_dask(frame), _memory(frame)
    inf = pf.DP(math.inf, protect=unit)
    # "sensitive": its split steps (B'_t and the group-free totals; the default runs the row
    # steps, which the "row" case covers)
    opts = dict(holdout=0, batch_size=N, epochs=4, group_free_totals=totals,
                sensitive_algorithm="split")
    got, want = _solve(data, inf, **opts), _solve(mem, inf, **opts)
    assert got.plan.params["T"] == want.plan.params["T"] == 4
    np.testing.assert_allclose(np.array(got.decisions), np.array(want.decisions), rtol=1e-9,
                               atol=1e-10)
    np.testing.assert_array_equal(got.weights, want.weights)


def _error(res, df):
    X = df[[f"x{j}" for j in range(D)]].to_numpy()
    y = df["income"].to_numpy()
    return sum(w * np.mean(((X @ np.asarray(d)[:-1] + d[-1]) > 0).astype(int) != y)
               for d, w in zip(res.decisions, res.weights))


@pytest.fixture(scope="module")
def easy():
    """An easy problem: the label follows two features that do not depend on the group, so the
    accurate rule is nearly fair and the constant rule errs on ~half of the rows."""
    rng = np.random.default_rng(12)
    X = rng.normal(size=(N, D))
    sex = rng.choice(GROUPS, N, p=[0.35, 0.65])
    y = (2.0 * X[:, 0] + X[:, 1] + rng.logistic(size=N) > 0).astype(int)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(D)])
    df["sex"], df["income"] = sex, y
    return df


@pytest.mark.parametrize("unit,steps", [("row", "row"), ("sensitive", "row"),
                                        ("sensitive", "split")])
def test_private_dask_solve_has_the_in_memory_certificate_and_a_useful_rule(client, easy, unit,
                                                                           steps):
    data, mem = _on_dask(easy), _memory(easy)
    priv = pf.DP(2.0, 1e-5, protect=unit)
    opts = dict(holdout=0, epochs=3, sensitive_algorithm=steps)
    got, want = _solve(data, priv, **opts), _solve(mem, priv, **opts)
    assert got.info["algorithm_unit"] == ("sensitive" if steps == "split" else "row")
    # the same plan, so the same event: the certificates are equal
    assert got.certificate == want.certificate
    assert got.plan.params["noise_multiplier"] == want.plan.params["noise_multiplier"] > 0
    base = min(easy["income"].mean(), 1 - easy["income"].mean())
    assert base > 0.4
    assert _error(got, easy) < base - 0.15, (_error(got, easy), _error(want, easy), base)


def test_default_held_out_check_runs_on_the_workers(client, easy):
    # the default 20 % check: the training view's steps are passes on its rows, the check's
    # soft counts one pass on the held-out rows — those of the in-memory counts of the same rows
    from privfair.planning.holdout import soft_counts

    data = _on_dask(easy)
    got = _solve(data, pf.DP(math.inf, protect="sensitive"), epochs=2)
    assert got.holdout is not None and got.holdout.n_held_out == round(0.2 * N)
    _, held = data.split_holdout(round(0.2 * N), as_source(0))    # the solve's split
    trained = got.holdout.trained if got.holdout.trained is not None else got
    np.testing.assert_allclose(got.holdout.counts, soft_counts(trained, held.to_dataset()),
                               rtol=1e-12, atol=1e-9)


def test_metrics_on_a_dask_dataset_are_the_in_memory_metrics_of_the_same_rows(client, frame):
    """``Result.metrics`` of a Dask dataset is one pass of expected confusion counts on the
    workers: error, parity and equalized-odds gaps equal those computed in memory on the same
    rows (to float summation order) — for a trained mixture and for its held-out fallback
    kind, a constant rule — and a Dask dataset that declares the labels in the other order is
    scored in the result's labels (control: read without the remapping, its error is
    1 − the error)."""
    mem, dk = _memory(frame), _on_dask(frame)
    res = _solve(mem, pf.DP(2.0, 1e-6, protect="row"), holdout=0)
    want, got = res.metrics(mem), res.metrics(dk)
    assert want["dp_violation"] > 0 and want["eo_violation"] > 0 and 0.0 < want["error"] < 1.0
    for k in want:
        assert got[k] == pytest.approx(want[k], abs=1e-12)
    from privfair.planning.holdout import constant_result

    const = constant_result(res, 1)
    assert const.metrics(dk) == pytest.approx(const.metrics(mem), abs=1e-12)
    flipped = pf.Dataset.from_dask(dd.from_pandas(frame, npartitions=PARTS), label="income",
                                   sensitive="sex", groups=GROUPS, labels=[1, 0])
    assert res.metrics(flipped)["error"] == pytest.approx(want["error"], abs=1e-12)
    C = flipped.soft_counts(res)          # the flipped dataset's own codes: no remapping
    from privfair.statistics.metrics import summary_from_counts

    assert summary_from_counts(C)["error"] == pytest.approx(1.0 - want["error"], abs=1e-12)

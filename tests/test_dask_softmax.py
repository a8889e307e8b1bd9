"""``lagrangian_sgda`` with a ``pf.SoftmaxClassifier`` on a Dask dataset: multi-class labels
beyond one machine without torch.

Each step is a pass over a Poisson sample drawn on the workers (``solver.PassBatches``,
``models.softmax_batch_pass``): the workers run the in-memory adapter's arithmetic
(``models.SoftmaxTerms``, one home) on their sampled rows and send back the batch's histogram,
its clipped gradient sum and a count.  Checked: one step's passes give the sums the in-memory
adapter computes on the same sampled rows, and nothing per row comes back; without sampling or
noise (q = 1, ε = ∞) a Dask solve is the in-memory solve; a private Dask solve has the
in-memory certificate and a rule better than the constant one; an empty chunk adds nothing."""

import math
import warnings

import numpy as np
import pytest

pytest.importorskip("dask.dataframe", reason="the Dask engine is the optional extra "
                                              "privfair[dask]")
pytest.importorskip("distributed", reason="the Dask engine's tests start a "
                                          "distributed.LocalCluster")

import dask.dataframe as dd  # noqa: E402

import privfair as pf  # noqa: E402
from privfair.backends.lagrangian import histogram as H  # noqa: E402
from privfair.backends.lagrangian import models  # noqa: E402
from privfair.data import passes  # noqa: E402
from privfair.privacy.randomness import as_source  # noqa: E402
from _frames import GROUPS, sampled_rows, sex_income_frame  # noqa: E402
from _frames import assert_only_sums, pass_batches, record_returned_sums  # noqa: E402
from _frames import assert_public_batch  # noqa: E402

N, D, PARTS, LABELS = 1200, 4, 3, [0, 1, 2]


@pytest.fixture(scope="module")
def frame():
    df = sex_income_frame(N, D, 23, 0.4, 0.6, (2.0, 1.0), 0.5)
    df["income"] = np.digitize(df["x0"] + 0.5 * df["x1"], [-0.3, 0.7])     # three labels
    return df


def _data(df, dask):
    if dask:
        return pf.Dataset.from_dask(dd.from_pandas(df, npartitions=PARTS), label="income",
                                    sensitive="sex", groups=GROUPS, labels=LABELS)
    return pf.Dataset(df[[f"x{j}" for j in range(D)]].to_numpy(), df["income"].to_numpy(),
                      df["sex"].to_numpy(), group_names=GROUPS, labels=LABELS)


def _problem(data):
    r = pf.rates(pf.SoftmaxClassifier(D, 3), data)
    parity = pf.maximum(*[pf.abs(r.selection_rate("F", k) - r.selection_rate("M", k))
                          for k in LABELS])
    return pf.Problem(pf.minimize(r.error()), [parity <= 0.05])


def _solve(data, privacy, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _problem(data).solve(privacy, backend="lagrangian_sgda", seed=0, progress=False,
                                    **kw)


@pytest.mark.parametrize("capped,cost", [(True, False), (False, True)])
def test_one_steps_passes_are_the_in_memory_sums_on_the_same_rows(client, frame, monkeypatch,
                                                                  capped, cost):
    data, mem = _data(frame, True), _data(frame, False)
    rd, rm = _problem(data).rates, _problem(mem).rates
    kw = dict(sharpness=5.0, soft_scale="capped" if capped else "fixed", cost_sensitive=cost)
    ad, am = models.SoftmaxAdapter(rd, **kw), models.SoftmaxAdapter(rm, **kw)
    batches = pass_batches(ad, rd, am, rm)
    back = record_returned_sums(monkeypatch)               # what comes back to the client
    rng = np.random.default_rng(2)
    theta = 0.5 * rng.normal(size=am.P)
    tf, tg = rng.normal(size=(2, 2, 3, 3))                  # (G, L, L) coefficient tables
    rf, rg = rng.normal(size=(2, 3, 3))                     # (L, L): by label
    q, q_pub = 0.25, 0.2
    seeds = passes.poisson_seeds(as_source(7), 2 * PARTS)
    idx, idx2 = sampled_rows(data, q, seeds[:PARTS]), sampled_rows(data, q_pub, seeds[PARTS:])
    assert 200 < idx.size < 400 and idx2.size > 150
    gi, yi = mem.group[idx], mem.y[idx]
    _, g_free, _ = am.step(theta, idx, tf[gi, yi], tg[gi, yi])
    norms = [np.linalg.norm(am.step(theta, [i], tf[gi[k], yi[k]][None], tg[gi[k], yi[k]][None])[1])
             for k, i in enumerate(idx)]
    CLIP = float(np.median(norms))                          # about half of the rows clipped
    C, g, pub, tot = batches.read(theta, q, (tf, tg), CLIP, q_pub, (rf, rg), True)
    P, g_want, clipped = am.step(theta, idx, tf[gi, yi], tg[gi, yi], clip=CLIP)
    assert 0 < clipped < idx.size                           # the clipping is exercised
    np.testing.assert_allclose(C, H.batch_counts(gi, yi, P, 2, 3), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(g, g_want, rtol=1e-10, atol=1e-10)
    assert np.abs(g - g_free).max() > 1e-3                  # clipped ≠ unclipped: it bites
    assert_public_batch(am, theta, mem.y[idx2], idx2, (rf, rg), pub, tot, q / q_pub, 3, 1e-10)
    np.testing.assert_allclose(batches.label_totals(theta), am.label_totals(theta, 3),
                               rtol=1e-10, atol=1e-9)
    assert_only_sums(back, 2, 3, am.P)          # nothing per row came back


@pytest.mark.parametrize("unit,steps", [("row", "row"), ("sensitive", "split")])
def test_without_sampling_or_noise_a_dask_solve_is_the_in_memory_solve(client, frame, unit,
                                                                       steps):
    inf = pf.DP(math.inf, protect=unit)
    opts = dict(holdout=0, batch_size=N, epochs=4, sensitive_algorithm=steps,
                group_free_totals="exact")
    got, want = _solve(_data(frame, True), inf, **opts), _solve(_data(frame, False), inf, **opts)
    assert got.plan.params["T"] == want.plan.params["T"] == 4
    a, b = np.array(got.decisions), np.array(want.decisions)
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    assert np.abs(b).max() > 1e-2                           # the runs did train
    np.testing.assert_array_equal(got.weights, want.weights)


def test_private_dask_solve_has_the_in_memory_certificate_and_a_useful_rule(client, frame):
    priv = pf.DP(2.0, 1e-5, protect="row")
    got, want = _solve(_data(frame, True), priv, holdout=0), _solve(_data(frame, False), priv,
                                                                    holdout=0)
    assert got.certificate.epsilon == pytest.approx(want.certificate.epsilon, rel=1e-12)
    assert got.certificate.epsilon <= 2.0 * (1 + 1e-9)
    mem = _data(frame, False)
    P = got.predict_proba(mem.X)
    err = 1.0 - P[np.arange(N), mem.y].mean()
    constant = 1.0 - np.bincount(mem.y, minlength=3).max() / N
    assert np.isfinite(P).all() and err < constant


def test_a_chunk_without_rows_adds_nothing(frame):
    am = models.SoftmaxAdapter(_problem(_data(frame, False)).rates, sharpness=5.0)
    empty = passes.Chunk(np.zeros((0, D)), np.zeros(0, np.int64), np.zeros(0, np.int64))
    t = np.ones((2, 3, 3))
    assert models.softmax_batch_pass(empty, am.terms, am.theta0, t, t, True, 2, 3, 1.0) is None
    np.testing.assert_array_equal(
        models.softmax_label_totals_pass(empty, am.terms, am.theta0, 3), np.zeros((3, 3)))

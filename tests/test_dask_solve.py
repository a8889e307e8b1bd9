"""A whole private ``cells`` solve on a Dask dataset (#19): the per-row stage (quantile edges,
cell counts, the first group's counts) and the held-out check run as passes on the workers,
and the solve gives the in-memory solve's rule and certificate — exactly the same cells and
counts, float sums up to their order — with only sums, counts, maxima and the few values
that pin the released edges coming back to the client."""

import math
import warnings

import numpy as np
import pytest

pytest.importorskip("dask.dataframe", reason="the Dask engine is the optional extra "
                                              "privfair[dask]")
distributed = pytest.importorskip("distributed", reason="the Dask engine's tests start a "
                                                        "distributed.LocalCluster")

import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402

import privfair as pf  # noqa: E402
from privfair.data import dask_data, passes  # noqa: E402
from privfair.errors import InvalidInputError  # noqa: E402
from privfair.privacy.randomness import as_source  # noqa: E402

N, D = 4000, 5
GROUPS = ["F", "M"]


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(N, D))
    sex = rng.choice(GROUPS, N, p=[0.35, 0.65])
    X[:, 0] += 0.8 * (sex == "M")
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.logistic(size=N) > 0.6).astype(int)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(D)])
    df["x4"] = (df["x4"] > 0).astype(float)          # a 0/1 column (its own proxy block)
    df["sex"], df["income"] = sex, y
    return df


def _on_dask(df, parts=3):
    return pf.Dataset.from_dask(dd.from_pandas(df, npartitions=parts), label="income",
                                sensitive="sex", groups=GROUPS)


def _memory(df):
    return pf.Dataset(df[[f"x{j}" for j in range(D)]], df["income"], df["sex"],
                      group_names=GROUPS, labels=[0, 1])


def _problem(data):
    r = pf.rates(pf.ProxyCells(4, 3), data)
    return pf.Problem(pf.minimize(r.error()),
                      [pf.abs(r.selection["F"] - r.selection["M"]) <= 0.05])


def _solve(data, privacy, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")           # the held-out check's status warnings
        return _problem(data).solve(privacy, backend="cells", seed=0, progress=False, **kw)


def _same_rule(a, b, rtol=1e-9):
    ra, rb = a.decision, b.decision
    for name in ("score_coef", "proxy_coef", "score_edges", "proxy_edges"):
        np.testing.assert_allclose(getattr(ra, name), getattr(rb, name), rtol=rtol,
                                   atol=1e-12, err_msg=name)
    np.testing.assert_allclose(ra.q, rb.q, atol=1e-6)


def _releases(cert):
    return [(e.mechanism, e.epsilon, e.delta, e.sensitivity, e.scale, e.dimension)
            for e in cert.releases]


@pytest.fixture
def small_buckets(monkeypatch):
    """Tiny buckets, so that the edges' search splits, narrows and gathers on 4000 rows as
    it does on 10⁸ (the defaults resolve 4000 rows in one gather)."""
    monkeypatch.setattr(passes, "ORDER_BINS", 16)
    monkeypatch.setattr(passes, "ORDER_SUB_BINS", 4)
    monkeypatch.setattr(passes, "ORDER_GATHER", 20)


def test_dask_solve_gives_the_in_memory_rule_and_certificate(client, frame, small_buckets,
                                                             monkeypatch):
    data, mem = _on_dask(frame), _memory(frame)
    # every pass's merged result, as it comes back to the client
    back = []
    map_sum = dask_data.DaskRows.map_sum

    def recording(self, fn, *params):
        out = map_sum(self, fn, *params)
        back.append((getattr(fn, "__name__", repr(fn)), out))
        return out

    monkeypatch.setattr(dask_data.DaskRows, "map_sum", recording)
    inf = pf.DP(math.inf, protect="sensitive")
    got, want = _solve(data, inf, holdout=0), _solve(mem, inf, holdout=0)
    _same_rule(got, want)
    assert got.certificate == want.certificate
    # the per-row stage ran on the workers: bucket counts, a few values, the cell sums
    names = [name for name, _ in back]
    assert "bucket_pass" in names and "cell_sums" in names
    # ... and nothing per row came back: no leaf as long as a partition (≥ 1300 rows)
    def leaves(x):
        if isinstance(x, (tuple, list)):
            for v in x:
                yield from leaves(v)
        elif isinstance(x, passes.Max):
            yield np.asarray(x.item if x.item is not None else x.value)
        elif isinstance(x, passes.Concat):
            yield x.values
        elif x is not None:
            yield np.asarray(x)
    assert max(v.size for _, out in back for v in leaves(out)) < 200
    # ε = 1: the same releases (the scales come from public maxima found on the workers)
    priv = pf.DP(1.0, 1e-6, protect="sensitive")
    got, want = _solve(data, priv, holdout=0), _solve(mem, priv, holdout=0)
    assert _releases(got.certificate) == _releases(want.certificate)
    assert (got.certificate.epsilon, got.certificate.delta) == \
        (want.certificate.epsilon, want.certificate.delta)
    # the same seeded noise on the same counts: the same released rule, up to float order
    _same_rule(got, want, rtol=1e-6)


def test_held_out_split_is_a_uniform_subset_chosen_on_the_workers(client, frame):
    data = _on_dask(frame, parts=4)
    m = 800
    train, held = data.split_holdout(m, as_source(5))
    assert (train.n, held.n) == (N - m, m)
    np.testing.assert_array_equal(train.counts() + held.counts(), data.counts())
    a, b = train.to_dataset(), held.to_dataset()
    assert (a.n, b.n) == (N - m, m)
    rows = np.sort(np.concatenate([a.X[:, 0], b.X[:, 0]]))
    np.testing.assert_array_equal(rows, np.sort(frame["x0"].to_numpy()))   # a partition
    # the same coin, the same rows; another coin, other rows
    np.testing.assert_array_equal(data.split_holdout(m, as_source(5))[1].to_dataset().X, b.X)
    assert not np.array_equal(data.split_holdout(m, as_source(6))[1].to_dataset().X, b.X)
    with pytest.raises(InvalidInputError):
        held.split_holdout(10, as_source(1))


def test_default_solve_holds_out_rows_on_the_workers(client, frame):
    # the default 20% check on a Dask dataset: the backend trains on the training view, the
    # check's soft confusion counts are one pass over the held-out view
    data = _on_dask(frame)
    inf = pf.DP(math.inf, protect="sensitive")
    got = _solve(data, inf)
    assert got.holdout is not None and got.holdout.n_held_out == round(0.2 * N)
    assert got.holdout.n_train == N - round(0.2 * N)
    # the same rows in memory: the split the solve drew (its first use of the seed's source)
    train, held = data.split_holdout(round(0.2 * N), as_source(0))
    want = _solve(train.to_dataset(), inf, holdout=0)
    trained = got.holdout.trained if got.holdout.trained is not None else got
    _same_rule(trained, want)
    from privfair.planning.holdout import soft_counts

    np.testing.assert_allclose(got.holdout.counts, soft_counts(trained, held.to_dataset()),
                               rtol=1e-12, atol=1e-9)
    # private: the check's own release is recorded, the solve's certificate is the training's
    priv = _solve(data, pf.DP(1.0, 1e-6, protect="sensitive"))
    assert priv.holdout is not None and priv.holdout.certificate is not None
    # the labels are public under "sensitive": the floor read every row's label by passes
    assert priv.holdout.labels_public and got.holdout.labels_public


@pytest.mark.parametrize("label_split", [False, True])
def test_cell_tallies_on_the_workers_are_the_in_memory_ones(client, frame, small_buckets,
                                                          label_split):
    # the per-row stage alone (no pf.rates): the edges, N, the soft counts and the first
    # group's counts from passes on the workers against the n-vectors in memory
    from privfair.backends.cells import proxy as _proxy
    from privfair.backends.cells.cells import cell_tallies, per_row_scores
    from privfair.models.cells import bin_index, quantile_edges
    from privfair.statistics.scores import fit_score

    data, mem = _on_dask(frame), _memory(frame)
    ds = pf.ProxyCells(5, 4)
    features = ds.features_for(mem)
    theta = np.random.default_rng(1).normal(size=features.dim + 1) * 0.5
    rule = ds.rule(fit_score(mem), theta, features, False, [], [], np.zeros(ds.n_cells))
    s, p_xy, p = per_row_scores(mem, rule)
    se, pe = quantile_edges(s, ds.score_bins), quantile_edges(p, ds.proxy_bins)
    C = ds.n_cells
    cell = bin_index(s, se) * ds.proxy_bins + bin_index(p, pe)
    N = np.bincount(mem.y * C + cell, minlength=2 * C).reshape(2, C)
    soft = np.bincount(mem.y * C + cell, weights=p_xy, minlength=2 * C).reshape(2, C)
    counts = _proxy.group_counts((mem.group == 0).astype(float), mem.y, cell, C, label_split)
    got = cell_tallies(data, rule, ds, label_split)
    np.testing.assert_array_equal(got[0], se)           # the released edges: the same bits
    np.testing.assert_array_equal(got[1], pe)
    np.testing.assert_array_equal(got[2], N)            # counts: exact
    np.testing.assert_allclose(got[3], soft, rtol=1e-12)
    np.testing.assert_array_equal(got[4], counts)

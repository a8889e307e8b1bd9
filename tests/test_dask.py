"""The Dask engine (#19): passes on a LocalCluster give the in-memory numbers (ε = ∞) up to
float summation order; a private release merges the workers' sums and draws once."""

import numpy as np
import pytest

pytest.importorskip("dask.dataframe", reason="the Dask engine is the optional extra "
                                              "privfair[dask]")
distributed = pytest.importorskip("distributed", reason="the Dask engine's tests start a "
                                                        "distributed.LocalCluster")
pytest.importorskip("pyarrow", reason="Parquet files are read through pyarrow")

import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402

import privfair as pf  # noqa: E402
from privfair.data import passes  # noqa: E402
from privfair.errors import DataError, InvalidInputError  # noqa: E402
from privfair.statistics.scores import fit_score, logistic_from_statistic  # noqa: E402

N, D = 4000, 4


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, D))
    sex = rng.choice(["F", "M"], N, p=[0.3, 0.7])
    y = (X[:, 0] + 0.8 * (sex == "M") + rng.logistic(size=N) > 0.5).astype(int)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(D)])
    df["x3"] = (df["x3"] > 0).astype(float)          # a 0/1 column, as one-hot features are
    df["sex"], df["income"] = sex, y
    return df


def _memory(df):
    return pf.Dataset(df[[f"x{j}" for j in range(D)]], df["income"], df["sex"],
                      group_names=["F", "M"], labels=[0, 1])


@pytest.fixture(scope="module")
def on_disk(tmp_path_factory, frame):
    path = tmp_path_factory.mktemp("parquet") / "rows"
    dd.from_pandas(frame, npartitions=5).to_parquet(str(path))
    return str(path)


def test_parquet_dataset_gives_the_in_memory_numbers(client, frame, on_disk):
    data = pf.Dataset.from_parquet(on_disk, label="income", sensitive="sex", groups=["F", "M"])
    mem = _memory(frame)
    assert data.n == mem.n and data.groups == mem.groups and data.feature_names == \
        mem.feature_names
    assert data.ddf.npartitions >= 2                  # the pass really is split
    np.testing.assert_array_equal(data.counts(), mem.counts())        # integers: exact
    np.testing.assert_allclose(fit_score(data), fit_score(mem), rtol=1e-10, atol=1e-12)
    # Xᵀy and T = Σ aᵢuᵢ on the intercept design: sums, equal up to summation order
    for target in ("y", ("group", 0)):
        np.testing.assert_allclose(
            data.rows().map_sum(passes.weighted_sum, passes.INTERCEPT, target),
            mem.rows().map_sum(passes.weighted_sum, passes.INTERCEPT, target),
            rtol=1e-12, atol=1e-9)


def test_the_proxy_fit_runs_on_the_workers(client, frame):
    # the cells backend's proxy: T = Σ aᵢuᵢ over the clipped design, then Newton from T —
    # both passes on the workers, with the in-memory fit's numbers
    data = pf.Dataset.from_dask(dd.from_pandas(frame, npartitions=3), label="income",
                                sensitive="sex", groups=["F", "M"])
    mem = _memory(frame)
    features = pf.ProxyCells().features_for(mem.X)
    for inter in (False, True):
        design = passes.Mapped(passes.ProxyDesign(features, inter),
                               passes.ProxyDesign(features, inter).dim)
        U = features.design(mem.X, mem.y, interactions=inter)
        T_mem = U.T @ (mem.group == 0).astype(float)
        T = data.rows().map_sum(passes.weighted_sum, design, ("group", 0))
        np.testing.assert_allclose(T, T_mem, rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(logistic_from_statistic(data, T, design=design),
                                   logistic_from_statistic(U, T_mem), rtol=1e-9, atol=1e-11)


def test_a_private_count_release_draws_once_on_the_client(client, frame):
    data = pf.Dataset.from_dask(dd.from_pandas(frame, npartitions=4), label="income",
                                sensitive="sex", groups=["F", "M"])
    acc = pf.Accountant()
    q = pf.estimate_group_mass_bound(data, epsilon=1.0, rng=0, accountant=acc)
    assert len(acc.events) == 1 and set(q) == {(g, y) for g in ("F", "M") for y in (0, 1)}
    # the same release on the same counts in memory: same seed, same noise, same bound
    q_mem = pf.estimate_group_mass_bound(_memory(frame), epsilon=1.0, rng=0)
    assert q == pytest.approx(q_mem, rel=0, abs=0)


def test_schema_is_declared_and_checked(client, frame):
    ddf = dd.from_pandas(frame, npartitions=2)
    with pytest.raises(InvalidInputError, match="groups"):
        pf.Dataset.from_dask(ddf, label="income", sensitive="sex", groups=None)
    with pytest.raises(DataError, match="not among groups"):
        pf.Dataset.from_dask(ddf, label="income", sensitive="sex", groups=["F"])
    with pytest.raises(DataError, match="outside the declared set"):
        pf.Dataset.from_dask(ddf, label="income", sensitive="sex", groups=["F", "M"],
                             labels=[0, 2])
    bad = frame.copy()
    bad.loc[17, "x1"] = np.nan
    with pytest.raises(DataError, match="NaN or infinite"):
        pf.Dataset.from_dask(dd.from_pandas(bad, npartitions=2), label="income",
                             sensitive="sex", groups=["F", "M"])
    text = frame.assign(x2=frame["x2"].astype(str))
    with pytest.raises(DataError, match="numeric"):
        pf.Dataset.from_dask(dd.from_pandas(text, npartitions=2), label="income",
                             sensitive="sex", groups=["F", "M"])
    with pytest.raises(InvalidInputError, match="label"):
        pf.Dataset.from_dask(ddf, label="nope", sensitive="sex", groups=["F", "M"])


def test_subsample_and_collect(client, frame):
    data = pf.Dataset.from_dask(dd.from_pandas(frame, npartitions=3), label="income",
                                sensitive="sex", groups=["F", "M"])
    mem = data.to_dataset()
    np.testing.assert_array_equal(mem.X, _memory(frame).X)
    assert mem.groups == ["F", "M"] and mem.groups_declared
    part = data.sample(0.25, random_state=1)
    assert 0.15 * N < part.n < 0.35 * N
    with pytest.raises(InvalidInputError, match="max_rows"):
        data.to_dataset(max_rows=10)
    # coarser groups are declared where a Dask dataset is built: merge_groups says how
    with pytest.raises(InvalidInputError, match="from_dask"):
        data.merge_groups({"all": ["F", "M"]})
    assert mem.merge_groups({"all": ["F", "M"]}).groups == ["all"]


def test_persisted_arrays_give_the_same_passes(client, frame):
    data = pf.Dataset.from_dask(dd.from_pandas(frame, npartitions=3), label="income",
                                sensitive="sex", groups=["F", "M"])
    before = (data.counts(), fit_score(data))
    assert data.persist() is data and data.rows().arrays is not None
    np.testing.assert_array_equal(data.counts(), before[0])
    np.testing.assert_allclose(fit_score(data), before[1], rtol=1e-13, atol=1e-15)


def test_a_maximum_over_rows_runs_on_the_workers(client, frame):
    # a Max partial per partition, merged by maximum on the client: the in-memory rows
    data = pf.Dataset.from_dask(dd.from_pandas(frame, npartitions=4), label="income",
                                sensitive="sex", groups=["F", "M"])
    mem = _memory(frame)
    for design in (passes.PLAIN, passes.INTERCEPT):
        got = data.rows().map_sum(passes.max_norm_rows, design)
        want = mem.rows().map_sum(passes.max_norm_rows, design)
        for g, w in zip(got, want):
            assert g.value == w.value
            np.testing.assert_array_equal(g.item, w.item)


def test_poisson_sampling_draws_one_independent_seed_per_partition(client):
    # two partitions holding the same rows: with one seed each they are sampled differently;
    # rate 1 keeps every row; the seeded run is reproducible; the sample's size is Binomial
    n = 4000
    df = pd.DataFrame({"x0": np.arange(float(n)) % (n // 2), "sex": ["F", "M"] * (n // 2),
                       "income": [0, 1, 1, 0] * (n // 4)})
    data = pf.Dataset.from_dask(dd.from_pandas(df, npartitions=2), label="income",
                                sensitive="sex", groups=["F", "M"])
    args = (passes.INTERCEPT, None)
    whole = data.rows().poisson_map_sum(passes.weighted_sum, 1.0, 0, *args)
    np.testing.assert_array_equal(whole, [n, df["x0"].sum()])
    assert data.ddf.npartitions == 2 and len(data.ddf.partitions[0]) == n // 2
    seeds = passes.poisson_seeds(7, 2)
    a, b = (passes.poisson_rows(n // 2, 0.1, s) for s in seeds)
    assert not np.array_equal(a, b)                 # independent seeds, different samples
    got = data.rows().poisson_map_sum(passes.weighted_sum, 0.1, 7, *args)
    assert got[0] == a.size + b.size                # exactly the rows those seeds sample
    assert got[1] == pytest.approx(a.sum() + b.sum(), rel=1e-15)      # x0 = position
    again = data.rows().poisson_map_sum(passes.weighted_sum, 0.1, 7, *args)
    np.testing.assert_array_equal(got, again)
    assert abs(got[0] - 0.1 * n) < 5 * np.sqrt(n * 0.1 * 0.9)

"""Shared by the Dask tests that compare a Dask dataset with the same rows in memory (#19;
imported, not a test module): a synthetic frame of features ``x0..``, a two-valued ``sex`` and a
binary ``income``, the two datasets over it, and the rows a Dask pass samples."""

import numpy as np

import privfair as pf
from privfair.data import passes

GROUPS = ["F", "M"]


def sex_income_frame(n, d, seed, p_female, shift, coef, cut, scale_every=0):
    """n rows: x ~ N(0, I_d), x₀ shifted by ``shift`` for "M", income = 1[coef·(x₀, x₁) +
    logistic noise > cut]; every ``scale_every``-th row's x scaled by 3 (0: none) before the
    label is drawn (rows beyond a feature bound, to be clipped)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    sex = rng.choice(GROUPS, n, p=[p_female, 1.0 - p_female])
    X[:, 0] += shift * (sex == "M")
    if scale_every:
        X[::scale_every] *= 3.0
    y = (coef[0] * X[:, 0] + coef[1] * X[:, 1] + rng.logistic(size=n) > cut).astype(int)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(d)])
    df["sex"], df["income"] = sex, y
    return df


def features(df):
    return [c for c in df.columns if c.startswith("x")]


def on_dask(df, parts):
    """The frame as a Dask dataset of ``parts`` partitions (declared groups)."""
    import dask.dataframe as dd

    return pf.Dataset.from_dask(dd.from_pandas(df, npartitions=parts), label="income",
                                sensitive="sex", groups=GROUPS)


def in_memory(df):
    """The same rows, in the same order, as a pf.Dataset."""
    return pf.Dataset(df[features(df)].to_numpy(), df["income"].to_numpy(), df["sex"].to_numpy(),
                      group_names=GROUPS, labels=[0, 1])


def sampled_rows(data, rate, seeds):
    """The rows a Dask pass samples with one seed per partition (partition order, offsets)."""
    out, start = [], 0
    for size, seed in zip(data.ddf.map_partitions(len).compute(), seeds):
        out.append(start + passes.poisson_rows(size, rate, seed))
        start += size
    return np.concatenate(out)


def parity_problem(data, d):
    """min error s.t. |selection[F] − selection[M]| ≤ 0.05 over ``pf.LinearClassifier(d, radius=10)``
    (the Dask ``lagrangian_sgda`` tests' problem)."""
    r = pf.rates(pf.LinearClassifier(d, radius=10.0), data)
    return pf.Problem(pf.minimize(r.error()),
                      [pf.abs(r.selection["F"] - r.selection["M"]) <= 0.05])


def solve_parity(data, d, privacy, **kw):
    """:func:`parity_problem` solved by ``lagrangian_sgda`` (seed 0, status warnings silenced)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return parity_problem(data, d).solve(privacy, backend="lagrangian_sgda", seed=0,
                                             progress=False, **kw)


def record_returned_sums(monkeypatch) -> list:
    """Record what every ``DaskRows.poisson_map_sums`` call sends back to the client (the
    passes' merged partial sums): the list the Dask tests read to show that nothing per row
    comes back."""
    from privfair.data import dask_data

    back = []
    sums = dask_data.DaskRows.poisson_map_sums

    def recording(self, jobs, source):
        out = sums(self, jobs, source)
        back.extend(out)
        return out

    monkeypatch.setattr(dask_data.DaskRows, "poisson_map_sums", recording)
    return back


def assert_only_sums(back, G, L, P):
    """What came back (:func:`record_returned_sums`) is sums only: (G, L, L) or (1, L, L)
    histograms, P-vectors of gradient sums, numbers — nothing of a row's size or per row."""
    leaves = [np.asarray(v) for part in back for v in part]
    assert leaves and max(v.size for v in leaves) <= max(G * L * L, P)
    assert all(v.ndim == 0 or v.shape in ((G, L, L), (1, L, L), (P,)) for v in leaves)


def assert_public_batch(adapter, theta, y2, idx2, tables, pub, tot, scale, L, rtol):
    """B′_t's read (``protect="sensitive"``'s public batch, rows ``idx2`` of labels ``y2``): its
    unclipped gradient sum and label totals are the in-memory ``adapter``'s on the same rows,
    times q/q′ (``scale``); the gradient to ``rtol``."""
    from privfair.backends.lagrangian import histogram as H

    P2, pub_want, _ = adapter.step(theta, idx2, tables[0][y2], tables[1][y2])
    np.testing.assert_allclose(pub, pub_want * scale, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(tot, H.batch_counts(np.zeros(idx2.size, np.int64), y2, P2, 1,
                                                   L)[0] * scale, rtol=1e-12, atol=1e-9)


def pass_batches(dask_adapter, rates, memory_adapter, memory_rates, seed=7):
    """The Dask adapter's batch reads — passes over Poisson samples drawn from one seed per
    partition of ``as_source(seed)``, no row held on the client — checked beside the in-memory
    adapter's, which gathers its batches."""
    from privfair.backends.lagrangian import solver
    from privfair.privacy.randomness import as_source

    assert dask_adapter.X is None and dask_adapter.y is None          # no row on the client
    batches = solver.batches_for(dask_adapter, rates, None, as_source(seed))
    assert isinstance(batches, solver.PassBatches)
    assert isinstance(solver.batches_for(memory_adapter, memory_rates, None),
                      solver.GatheredBatches)
    return batches

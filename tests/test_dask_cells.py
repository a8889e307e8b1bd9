"""The ``cells`` backend's public reads on Dask (#19): the proxy's feature map (which columns
are 0/1, a pass of counts) and the sensitivity's extreme design rows (a maximum over rows,
merged by maximum) run on the workers and give the in-memory numbers."""

import numpy as np
import pytest

pytest.importorskip("dask.dataframe", reason="the Dask engine is the optional extra "
                                              "privfair[dask]")
distributed = pytest.importorskip("distributed", reason="the Dask engine's tests start a "
                                                        "distributed.LocalCluster")

import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402

import privfair as pf  # noqa: E402
from privfair.backends.cells import proxy as _proxy  # noqa: E402
from privfair.backends.cells.cells import extreme_design_rows  # noqa: E402

N, D = 3000, 5


def test_proxy_features_and_sensitivity_on_the_workers(client):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(N, D)) * 2.0
    X[:, 3:] = rng.integers(0, 2, size=(N, 2))        # 0/1 columns (kept as they are)
    sex = rng.choice(["F", "M"], N)
    y = (X[:, 0] + rng.logistic(size=N) > 0).astype(int)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(D)])
    df["sex"], df["income"] = sex, y
    data = pf.Dataset.from_dask(dd.from_pandas(df, npartitions=4), label="income",
                                sensitive="sex", groups=["F", "M"])
    mem = pf.Dataset(X, y, sex, group_names=["F", "M"], labels=[0, 1])
    cells = pf.ProxyCells(4, 3)
    f = cells.features_for(data)
    assert f == cells.features_for(mem)
    assert f.blocks[0] == (0, 1, 2) and (3,) in f.blocks     # the numeric block, the 0/1 ones
    for inter in (False, True):
        got, want = extreme_design_rows(data, f, inter), extreme_design_rows(mem, f, inter)
        for norm in ("l2", "l1"):                           # the sensitivities: the same bits
            assert _proxy.proxy_sensitivity(got, norm) == _proxy.proxy_sensitivity(want, norm)

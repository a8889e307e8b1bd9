"""UCI Adult (Census Income), preprocessed by the protocol of BENCHMARKS.md.

Train on ``adult.data``, test on ``adult.test`` (first line is a comment, labels end in '.');
rows with a missing value ('?') are dropped (30,162 train / 15,060 test rows).  Label: income
">50K".  Sensitive attribute: sex (Female / Male), which is *not* a feature.  ``fnlwgt`` is
dropped (a sampling weight, not a person's attribute).  Categorical columns are one-hot encoded
with the category set of the TRAIN file, numeric columns are standardized with TRAIN means and
standard deviations, so both splits share the same 101 columns.

The standardization statistics come from the training data themselves.  That is the published
protocol, kept for comparability; the feature scale only matters for row-level privacy, where
privfair clips each row to a declared public norm bound anyway.
"""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

import numpy as np

DATA_DIR = Path(__file__).resolve().parent / "data"

COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
           "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
           "hours-per-week", "native-country", "income"]
NUMERIC = ["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
CATEGORICAL = ["workclass", "education", "marital-status", "occupation", "relationship",
               "race", "native-country"]


def _read(name: str, skip_first: bool):
    import pandas as pd  # pandas is a core dependency; imported lazily to keep import light

    with gzip.open(DATA_DIR / name, "rt") as fh:
        frame = pd.read_csv(fh, header=None, names=COLUMNS, skipinitialspace=True,
                            na_values="?", skiprows=1 if skip_first else 0, dtype=str)
    frame = frame.dropna(how="all")          # trailing blank lines
    frame = frame.dropna().reset_index(drop=True)   # the protocol drops rows with any '?'
    frame["income"] = frame["income"].str.rstrip(".")
    return frame


@functools.lru_cache(maxsize=None)
def frames():
    """The parsed (train, test) pandas frames, cached per process."""
    return _read("adult.data.gz", False), _read("adult.test.gz", True)


@functools.lru_cache(maxsize=None)
def load(split: str):
    """The preprocessed split as a :class:`privfair.data.dataset.Dataset` (cached, read-only)."""
    from ..data.dataset import Dataset

    train, test = frames()
    frame = train if split == "train" else test
    mean = train[NUMERIC].astype(float).mean()
    std = train[NUMERIC].astype(float).std(ddof=0)
    blocks, names = [], []
    for col in COLUMNS:
        if col in NUMERIC:
            blocks.append(((frame[col].astype(float) - mean[col]) / std[col]).to_numpy()[:, None])
            names.append(col)
        elif col in CATEGORICAL:
            cats = sorted(train[col].unique())      # the TRAIN category set fixes the columns
            values = frame[col].to_numpy()
            blocks.append((values[:, None] == np.asarray(cats)[None, :]).astype(np.float64))
            names.extend(f"{col}={c}" for c in cats)
    X = np.hstack(blocks)
    y = (frame["income"].to_numpy() == ">50K").astype(np.int64)
    sensitive = frame["sex"].rename("sex")
    return Dataset(X, y, sensitive, labels=[0, 1], feature_names=names,
                   group_names=["Female", "Male"], sensitive_names=["sex"])

"""ProPublica COMPAS two-year recidivism data, preprocessed for fair classification.

Rows: ProPublica's own filter from their analysis notebook (``days_b_screening_arrest`` within
[-30, 30], ``is_recid != -1``, ``c_charge_degree != 'O'``, ``score_text != 'N/A'``), which keeps
6,172 of the 7,214 rows.  Label: ``two_year_recid``.  Sensitive attribute: ``race`` with all six
values, or with ``race="binary"`` only African-American and Caucasian defendants.

Features (12 columns): ``age``, ``priors_count``, ``juv_fel_count``, ``juv_misd_count``,
``juv_other_count`` standardized (mean 0, sd 1 over the kept rows), and one-hot ``c_charge_degree``
(F / M), ``sex`` (Female / Male) and ``age_cat`` (three bands).  Race is never a feature.
COMPAS's own ``decile_score`` / ``score_text`` are excluded, so a model learns from the
defendant's record rather than from the tool it is audited against; dates, case numbers and the
outcome columns (``is_recid``, ``r_*``, ``vr_*``, ``event``, ``end``) are excluded because they
identify the case or leak the label.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

DATA_DIR = Path(__file__).resolve().parent / "data"
NUMERIC = ["age", "priors_count", "juv_fel_count", "juv_misd_count", "juv_other_count"]
CATEGORICAL = {"c_charge_degree": ["F", "M"], "sex": ["Female", "Male"],
               "age_cat": ["Less than 25", "25 - 45", "Greater than 45"]}
RACES = ["African-American", "Asian", "Caucasian", "Hispanic", "Native American", "Other"]


@functools.lru_cache(maxsize=None)
def frame():
    """The filtered pandas frame (cached per process)."""
    import pandas as pd

    raw = pd.read_csv(DATA_DIR / "compas-scores-two-years.csv.gz")
    keep = (raw["days_b_screening_arrest"].between(-30, 30) & (raw["is_recid"] != -1)
            & (raw["c_charge_degree"] != "O") & (raw["score_text"] != "N/A"))
    return raw.loc[keep].reset_index(drop=True)


@functools.lru_cache(maxsize=None)
def load(race: str):
    """The preprocessed dataset (cached, read-only)."""
    from ..data.dataset import Dataset

    df = frame()
    groups = RACES
    if race == "binary":
        groups = ["African-American", "Caucasian"]
        df = df[df["race"].isin(groups)].reset_index(drop=True)
    blocks, names = [], []
    for col in NUMERIC:
        v = df[col].astype(float)
        blocks.append(((v - v.mean()) / v.std(ddof=0)).to_numpy()[:, None])
        names.append(col)
    for col, cats in CATEGORICAL.items():
        blocks.append((df[col].to_numpy()[:, None] == np.asarray(cats)[None, :]).astype(float))
        names.extend(f"{col}={c}" for c in cats)
    return Dataset(np.hstack(blocks), df["two_year_recid"].to_numpy(), df["race"].rename("race"),
                   labels=[0, 1], feature_names=names, group_names=groups,
                   sensitive_names=["race"])

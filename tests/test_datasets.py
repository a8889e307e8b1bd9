"""The bundled Adult and COMPAS datasets follow the evaluation protocol of BENCHMARKS.md."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from privfair import datasets
from privfair.errors import InvalidInputError


def test_adult_protocol():
    tr, te = datasets.load_adult("train"), datasets.load_adult("test")
    assert (tr.n, te.n) == (30162, 15060)
    assert tr.n_features == te.n_features == 101 and tr.feature_names == te.feature_names
    names = " ".join(tr.feature_names)
    assert "sex" not in names and "fnlwgt" not in names and "income" not in names
    assert tr.groups == te.groups == ["Female", "Male"] and tr.sensitive_names == ["sex"]
    assert tr.y.mean() == pytest.approx(0.249, abs=0.001)
    assert te.y.mean() == pytest.approx(0.246, abs=0.001)
    numeric = [tr.feature_names.index(c) for c in ("age", "education-num", "capital-gain",
                                                    "capital-loss", "hours-per-week")]
    assert np.allclose(tr.X[:, numeric].mean(axis=0), 0, atol=1e-9)      # train statistics
    assert np.allclose(tr.X[:, numeric].std(axis=0), 1, atol=1e-9)
    onehot = [k for k in range(101) if k not in numeric]
    assert set(np.unique(tr.X[:, onehot])) <= {0.0, 1.0}
    assert (tr.X[:, onehot].sum(axis=1) == 7).all()                        # 7 categoricals
    assert np.bincount(tr.group).tolist() == [9782, 20380]


def test_loading_is_cached_and_fast():
    datasets.load_adult("train")
    t = time.perf_counter()
    a = datasets.load_adult("train")
    assert time.perf_counter() - t < 0.05
    assert a is datasets.load_adult() and a is datasets.adult()
    assert datasets.load_dataset("adult", split="test").n == 15060


def test_compas():
    c = datasets.load_compas()
    assert c.n == 6172 and c.n_features == 12 and c.n_groups == 6
    assert "race" not in " ".join(c.feature_names) and "decile_score" not in c.feature_names
    assert np.isfinite(c.X).all() and 0.4 < c.y.mean() < 0.5
    b = datasets.load_compas(race="binary")
    assert b.groups == ["African-American", "Caucasian"] and b.n == 5278
    assert datasets.compas() is c


def test_list_and_errors():
    listing = datasets.list_datasets()
    assert set(listing) == {"adult", "compas"} and all(len(v) > 40 for v in listing.values())
    with pytest.raises(InvalidInputError):
        datasets.load_adult("validation")
    with pytest.raises(InvalidInputError):
        datasets.load_compas(race="white")
    with pytest.raises(InvalidInputError):
        datasets.load_dataset("mnist")


def test_provenance_is_shipped():
    data_dir = Path(datasets.__file__).parent / "data"
    text = (data_dir / "PROVENANCE.md").read_text()
    assert "CC BY 4.0" in text and "ProPublica" in text
    for f in ("adult.data.gz", "adult.test.gz", "compas-scores-two-years.csv.gz"):
        assert (data_dir / f).exists() and f.split(".gz")[0] in text

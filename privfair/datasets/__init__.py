"""Bundled datasets: UCI Adult and ProPublica COMPAS, preprocessed and ready to use offline.

Compressed copies of the original files ship in ``privfair/datasets/data/`` (see its
``PROVENANCE.md`` for sources, licences and what was removed).  Parsing happens once per process;
later calls return the cached, read-only :class:`~privfair.data.dataset.Dataset`.

Examples
--------
>>> from privfair import datasets
>>> sorted(datasets.list_datasets())
['adult', 'compas']
>>> train = datasets.load_adult("train")
>>> train.n, train.n_features, train.groups
(30162, 101, ['Female', 'Male'])
"""

from __future__ import annotations

from ..errors import InvalidInputError
from . import _adult, _compas

__all__ = ["load_adult", "load_compas", "list_datasets", "load_dataset", "adult", "compas",
           "adult_proxy_feature_groups"]

_DESCRIPTIONS = {
    "adult": ("UCI Adult (Census Income, 1994): predict income >50K; sensitive attribute sex "
              "(Female/Male); 101 features (one-hot categoricals, standardized numerics); "
              "30,162 train / 15,060 test rows after dropping rows with missing values. "
              "CC BY 4.0."),
    "compas": ("ProPublica COMPAS two-year recidivism (Broward County, 2013-2014): predict "
               "two_year_recid; sensitive attribute race (6 values, or African-American vs "
               "Caucasian with race='binary'); 12 features; 6,172 rows after ProPublica's filter."),
}


def list_datasets() -> dict:
    """The bundled datasets: a dict name -> one-paragraph description.

    Examples
    --------
    >>> from privfair.datasets import list_datasets
    >>> list(list_datasets())
    ['adult', 'compas']
    """
    return dict(_DESCRIPTIONS)


def load_adult(split: str = "train"):
    """UCI Adult, preprocessed by the evaluation protocol of privfair's benchmarks.

    Parameters
    ----------
    split : {"train", "test"}
        ``"train"``: ``adult.data`` (30,162 rows); ``"test"``: ``adult.test`` (15,060 rows),
        encoded with the train split's categories and statistics, so the columns match.

    Returns
    -------
    privfair.data.dataset.Dataset
        ``y = 1`` for income >50K; groups ``["Female", "Male"]`` (sex, not a feature);
        101 features: ``age, education-num, capital-gain, capital-loss, hours-per-week``
        standardized with train statistics and one-hot ``workclass, education, marital-status,
        occupation, relationship, race, native-country`` (``fnlwgt`` dropped).

    Examples
    --------
    >>> from privfair.datasets import load_adult
    >>> test = load_adult("test")
    >>> test.n, test.n_features, "sex" in " ".join(test.feature_names)
    (15060, 101, False)
    """
    if split not in ("train", "test"):
        raise InvalidInputError("split", split, 'choose "train" or "test"')
    return _adult.load(split)


def adult_proxy_feature_groups(data):
    """Column blocks of Adult for :class:`privfair.ProxyCells`' proxy of sex.

    The numerics, the one-hot blocks of workclass, marital status, occupation, relationship and
    race, and a US-born flag (education and the other countries add columns but little signal).
    A public choice: it depends on the schema only.
    """
    names = list(data.feature_names)
    num = [names.index(c) for c in ("age", "education-num", "capital-gain", "capital-loss",
                                     "hours-per-week")]
    blocks = [[i for i, n in enumerate(names) if n.startswith(c + "=")]
              for c in ("workclass", "marital-status", "occupation", "relationship", "race")]
    return [num] + blocks + [[names.index("native-country=United-States")]]


def load_compas(race: str = "all"):
    """ProPublica COMPAS two-year recidivism, with race as the sensitive attribute.

    Parameters
    ----------
    race : {"all", "binary"}
        ``"all"``: the six race values as groups (6,172 rows).  ``"binary"``: only
        African-American and Caucasian defendants (5,278 rows), as in most of the literature.

    Returns
    -------
    privfair.data.dataset.Dataset
        ``y = two_year_recid``; 12 standardized / one-hot features (see
        ``privfair/datasets/_compas.py`` for the choice and the row filter).

    Examples
    --------
    >>> from privfair.datasets import load_compas
    >>> load_compas("binary").groups
    ['African-American', 'Caucasian']
    """
    if race not in ("all", "binary"):
        raise InvalidInputError("race", race, 'choose "all" or "binary"')
    return _compas.load(race)


def load_dataset(name: str, **kwargs):
    """Load a bundled dataset by name (``"adult"`` or ``"compas"``).

    Examples
    --------
    >>> from privfair.datasets import load_dataset
    >>> load_dataset("adult", split="test").n
    15060
    """
    loaders = {"adult": load_adult, "compas": load_compas}
    if name not in loaders:
        raise InvalidInputError("name", name, f"choose one of {sorted(loaders)}")
    return loaders[name](**kwargs)


# Short aliases used in the architecture sketch (``pf.datasets.adult()``).
adult = load_adult
compas = load_compas

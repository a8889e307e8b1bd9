"""The ``postprocessing`` backend reads the rows through passes only (issue #19).

Fast.  With ``Dataset.X`` made to raise, whole ``postprocessing`` solves of
``pf.PostProcessed(pf.LinearClassifier(d))`` run under both units — with the default held-out
check (whose training part is a dataset taken by index) and on a dataset taken by index
directly — and give the same rule as the same solve on a copy of the rows (the same seed).  The
counts N[k, a, y] summed chunk by chunk are the counts of the whole; the public base (Newton
steps over passes) agrees with scikit-learn's ``LogisticRegression()``, whose objective it
minimises, to that solver's tolerance.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import privfair as pf
from privfair.backends.reductions import jagielski as J
from privfair.backends.reductions.postprocessing import public_base
from privfair.data import passes
from privfair.models.postprocess import (LinearScore, LogisticBase, default_cuts, level_counts,
                                         score_levels)

from test_postprocess_levels import make
from _rows import forbid_whole_x

UNITS = {"row": pf.DP(1.0, 1e-5, protect="row"), "sensitive": pf.DP(1.0, protect="sensitive")}


def _problem(data):
    r = pf.rates(pf.PostProcessed(pf.LinearClassifier(data.n_features, radius=10.0)), data)
    return pf.Problem(pf.minimize(r.error()),
                      [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.02])


def _solve(data, unit, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)      # the held-out check's status
        return _problem(data).solve(UNITS[unit], backend="postprocessing", seed=3,
                                    progress=False, **kw)


@pytest.mark.parametrize("unit", ["row", "sensitive"])
def test_solves_never_read_dataset_x_and_match_a_copy(monkeypatch, unit):
    full = make(3000, 11, d=4)
    rows = np.sort(np.random.default_rng(0).choice(full.n, 2400, replace=False))
    view, copy = full.take(rows, copy=False), full.take(rows)
    expected = [_solve(copy, unit, holdout=0), _solve(full, unit)]
    reads = forbid_whole_x(monkeypatch)
    got = [_solve(view, unit, holdout=0),     # a dataset taken by index, read by passes
           _solve(full, unit)]                # the default check: its training part is a view
    assert reads == []
    for a, b in zip(got, expected):
        assert a.decision.base == b.decision.base
        assert np.array_equal(a.decision.p, b.decision.p)
        assert np.array_equal(a.info["released_counts"], b.info["released_counts"])
        assert a.certificate.epsilon == b.certificate.epsilon
    assert got[1].status == expected[1].status


@pytest.mark.parametrize("chunk_rows", [7, 256, 10_000])
def test_level_counts_by_chunks_are_the_counts_of_the_whole(chunk_rows):
    data = make(1500, 12, d=3)
    base = LinearScore((1.5, -0.4, 0.2, -0.3))
    cuts = default_cuts("default", "margin")
    whole = J.cell_counts(score_levels(base, data.X, cuts), data.group, data.y, 2,
                          len(cuts) + 1)
    view = data.take(np.arange(data.n)[::-1], copy=False)       # gathered chunks
    for src, ref in ((data, whole),
                     (view, J.cell_counts(score_levels(base, data.X[::-1], cuts),
                                          data.group[::-1], data.y[::-1], 2, len(cuts) + 1))):
        got = src.rows(chunk_rows=chunk_rows).map_sum(level_counts, base, cuts, 2)
        assert np.array_equal(got, ref)
    assert whole.sum() == data.n and (whole.sum(axis=(1, 2)) > 0).sum() >= 4


def test_level_counts_non_finite_scores_count_as_level_zero_when_asked():
    """Under protect="row" a non-finite score of some private row must not raise (#16)."""
    data = make(300, 13, d=2)
    X = data.X.copy()
    X[5, 0] = np.inf
    chunk = passes.Chunk(X, data.y, data.group)
    base = LinearScore((1.0, 0.0, 0.0))
    with pytest.raises(pf.errors.InvalidInputError):
        level_counts(chunk, base, (0.0,), 2)
    base = LinearScore((1.0, -1.0, 0.0))                   # −∞ + ∞ = nan on row 5
    got = level_counts(chunk, base, (0.0,), 2, "negative")
    assert got.sum() == 300


def test_public_base_minimises_sklearn_logistic_regression_objective():
    """Newton over passes against scikit-learn's lbfgs on the same objective (C = 1, intercept
    unpenalised): within 1e-6 at a tight lbfgs tolerance; the default lbfgs fit (tol 1e-4,
    what the backend used before #19) is within 1e-3, and it puts at most a few rows of 2000
    in another of the 16 probability levels."""
    from sklearn.linear_model import LogisticRegression

    data = make(2000, 4, d=3)
    base = public_base(data)
    assert base == public_base(data.take(np.arange(data.n), copy=False))     # deterministic
    theta = np.array([base.intercept, *base.coef])
    tight = LogisticRegression(C=1.0, tol=1e-10, max_iter=10_000).fit(data.X, data.y)
    ref = np.r_[tight.intercept_, tight.coef_[0]]
    assert np.abs(theta - ref).max() < 1e-6
    old = LogisticRegression().fit(data.X, data.y)
    old_theta = np.r_[old.intercept_, old.coef_[0]]
    assert np.abs(theta - old_theta).max() < 1e-3
    cuts = default_cuts("default", "probability")
    moved = score_levels(base, data.X, cuts) != score_levels(LogisticBase.from_theta(old_theta),
                                                             data.X, cuts)
    assert moved.sum() <= 10
    # control: a penalised intercept (fit_score's default ridge 1) is another fit
    other = pf.scores.fit_score(data)
    assert np.abs(other - ref).max() > 1e-4
    with pytest.raises(pf.errors.InvalidInputError) as err:     # one weight per coordinate
        pf.scores.fit_score(data, ridge=[0.0, 1.0])
    assert err.value.field == "ridge"


def test_public_base_of_one_label_is_constant():
    data = make(200, 5, d=2)
    one = pf.Dataset(data.X, np.ones(data.n, dtype=int), sensitive=data.sensitive,
                     group_names=["a", "b"], labels=[0, 1])
    base = public_base(one)
    assert base.coef == (0.0, 0.0) and base.intercept == 10.0


def test_group_codes_name_every_row_as_str_of_its_values():
    """The factorized group codes (#19) are the row-by-row definition: a row's group is the
    name str(v) (several attributes: "v1|v2") of its values — for integer codes, strings, and
    mixed object columns — and an unknown group is refused naming the first such row."""
    from privfair.models.postprocess import group_codes

    def by_rows(raw, groups):
        raw = np.asarray(raw, dtype=object)
        keys = ([str(v) for v in raw] if raw.ndim == 1
                else ["|".join(str(v) for v in row) for row in raw])
        return np.array([list(groups).index(k) for k in keys])

    rng = np.random.default_rng(0)
    ints = rng.integers(0, 3, 500)
    letters = np.array(["a", "b"], dtype=object)[rng.integers(0, 2, 500)]
    mixed = np.stack([letters, ints.astype(object)], axis=1)
    cases = [(ints, ("0", "1", "2")), (ints.astype(bool), ("False", "True")),
             (letters, ("b", "a")), (mixed, tuple(f"{a}|{i}" for a in "ab" for i in range(3))),
             (ints[:, None], ("2", "1", "0"))]
    for raw, groups in cases:
        assert np.array_equal(group_codes(raw, groups, 500), by_rows(
            raw[:, 0] if np.ndim(raw) == 2 and np.shape(raw)[1] == 1 else raw, groups))
    with pytest.raises(pf.errors.InvalidInputError) as err:
        group_codes(ints, ("0", "1"), 500)
    first = int(np.flatnonzero(ints == 2)[0])
    assert err.value.field == "sensitive" and f"row {first} " in str(err.value)

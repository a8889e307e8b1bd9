"""The public layout of ℓ (issue #17 item 2): ``Rates.layout`` (blocks, names, index maps, hull
geometry), the coefficient map ℓ → row coefficients, and the one surrogate table (numpy and
torch) — what backends read instead of Rates' private attributes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from privfair.data.dataset import Dataset
from privfair.models.decisions import FiniteSet, LinearClassifier, Thresholds
from privfair.errors import InvalidInputError
from privfair.statistics.stats import SURROGATE_TABLE, SURROGATES, Layout, rates


def _data(n=300, seed=0, labels=(0, 1), groups=("a", "b", "c")):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return Dataset(X, rng.choice(labels, n), rng.choice(groups, n))


@pytest.mark.parametrize("labels", [(0, 1), (0, 1, 2)])
def test_layout_is_the_schema_and_covers_every_coordinate_once(labels):
    r = rates(Thresholds([0.0, 0.5]) if len(labels) == 2 else
              FiniteSet([lambda X: np.zeros(len(X), int)]), _data(labels=labels),
              group_mass_bound=0.01)
    lay = r.layout
    assert (lay.G, lay.L, lay.K, lay.K_joint) == (r.G, r.L, r.K, r.K_joint)
    assert list(lay.names) == r.names
    np.testing.assert_array_equal(lay.is_conditional, np.arange(r.K) >= r.K_joint)
    # the same schema on other rows gives the same layout (it never depends on the data)
    other = Layout.of(r.groups, r.label_values)
    assert other.names == lay.names and np.array_equal(other.rate, lay.rate)
    joint, cond, sel = lay.blocks()
    seen = np.concatenate([np.ravel(b) for b in joint + cond + sel])
    assert sorted(seen.tolist()) == list(range(r.K))                  # a partition of ℓ
    if len(labels) == 2:
        assert lay.selection is not None and [r.names[k] for k in lay.selection] == \
            [f"selection[{g}]" for g in r.groups]
        assert lay.rate[1, 0, 1] == r.fpr.index(r.groups[1])
        assert lay.joint[2, 1, 0] == r.fn.index(r.groups[2])
    else:
        assert lay.selection is None
        # P(ŷ = k | g) for every prediction k: one block per group, after the rates
        assert [r.names[k] for k in lay.class_selection[1]] == \
            [f"selection[{r.groups[1]},yhat={k}]" for k in labels]
        assert lay.class_selection.min() > lay.rate.max()
        assert r.selection_rate(r.groups[0], 2).support() == {int(lay.class_selection[0, 2])}


def test_selection_rate_of_binary_labels_reads_the_one_selection_coordinate():
    r = rates(Thresholds([0.0, 0.5]), _data(labels=(0, 1)), group_mass_bound=0.01)
    ell = r.evaluate(0.5)
    g = r.groups[1]
    assert r.selection_rate(g, 1).value(ell) == pytest.approx(ell[r.selection.index(g)])
    assert r.selection_rate(g, 0).value(ell) == pytest.approx(1 - ell[r.selection.index(g)])
    with pytest.raises(InvalidInputError, match="yhat"):
        r.selection_rate(g, 2)


def test_hull_diameter_bounds_every_pair_of_decisions():
    data = _data(400, seed=3)
    r = rates(Thresholds(np.linspace(-2, 2, 25), score=0), data, group_mass_bound=0.02)
    ells = r.evaluate_all()
    rng = np.random.default_rng(1)
    supports = [range(r.K), range(r.K_joint), [r.fpr.index("a"), r.tpr.index("b")],
                sorted(rng.choice(r.K, 9, replace=False).tolist())]
    for S in supports:
        D = r.layout.hull_diameter(S)
        diffs = (ells[:, None, list(S)] - ells[None, :, list(S)]).reshape(-1, len(S))
        for norm, o in (("l1", 1), ("l2", 2), ("linf", np.inf)):
            assert np.linalg.norm(diffs, ord=o, axis=1).max() <= D[norm] + 1e-12
    assert r.layout.hull_diameter([]) == {"l1": 0.0, "l2": 0.0, "linf": 0.0}


def test_hull_diameter_bounds_every_pair_of_multiclass_decisions():
    """Three labels: the selection block of a group (P(ŷ = k | g), summing to ≤ 1) is bounded as
    a conditional block is — every pair of decisions within the public diameter."""
    data = _data(400, seed=4, labels=(0, 1, 2))
    cuts = [(a, b) for a in np.linspace(-1.5, 0.5, 5) for b in np.linspace(0.0, 2.0, 5) if a < b]
    fs = [(lambda X, a=a, b=b: np.digitize(X[:, 0], [a, b])) for a, b in cuts]
    fs += [(lambda X, a=a, b=b: 2 - np.digitize(X[:, 1], [a, b])) for a, b in cuts]
    r = rates(FiniteSet(fs), data, group_mass_bound=0.02)
    ells = r.evaluate_all()
    cs = r.layout.class_selection
    for S in [cs.ravel().tolist(), cs[0].tolist(), list(range(r.K)),
              cs[:, 1].tolist() + [int(k) for k in r.layout.rate[0, 2]]]:
        D = r.layout.hull_diameter(S)
        diffs = (ells[:, None, S] - ells[None, :, S]).reshape(-1, len(S))
        for norm, o in (("l1", 1), ("l2", 2), ("linf", np.inf)):
            assert np.linalg.norm(diffs, ord=o, axis=1).max() <= D[norm] + 1e-12
    # one group's block: two rules that move all its rows between two labels reach ℓ1 ≈ 2
    one = (ells[:, None, cs[0]] - ells[None, :, cs[0]]).reshape(-1, 3)
    assert np.abs(one).sum(axis=1).max() > 1.0


def _linear(surrogate="logistic", n=200, seed=2):
    data = _data(n, seed=seed, groups=("a", "b"))
    return rates(LinearClassifier(2, radius=1.5), data, surrogate=surrogate,
                 group_mass_bound=0.05, feature_bound=1.2)


@pytest.mark.parametrize("surrogate", sorted(SURROGATE_TABLE))
def test_row_coefficients_are_the_derivative_of_the_weighted_statistics(surrogate):
    """ℓ is linear in each row's mass s_i on ŷ = 1: w·ℓ(θ1) − w·ℓ(θ2) = Σ_i a_i (s_i(θ1) − s_i(θ2))
    with a = row_coefficients(w); and the gradient is Σ_i a_i ∂s_i/∂θ."""
    r = _linear(surrogate)
    rng = np.random.default_rng(0)
    for _ in range(3):
        w = rng.normal(size=r.K)
        th1, th2 = rng.normal(size=3), rng.normal(size=3)
        a = r.row_coefficients(w)
        s1, s2 = r.soft(th1)[0], r.soft(th2)[0]
        assert float(a @ (s1 - s2)) == pytest.approx(
            float(w @ (r.evaluate(th1) - r.evaluate(th2))), rel=1e-10, abs=1e-13)
        np.testing.assert_array_equal(a, r.cell_coefficients(w).ravel()[r.row_cell])
        # the same map from margins, on a subset of rows (what a mini-batch reads)
        idx = np.arange(0, r.n, 3)
        z = (r.data.X[idx] @ th1[:-1]) * r.clip_scale[idx] + th1[-1]
        sub = r.soft_from_margins(z, r.data.y[idx])
        np.testing.assert_allclose(sub[0], s1[idx], rtol=1e-12, atol=1e-15)
        # other denominators (the public n·q): the same map, read with them
        q, qg = r.group_mass()
        pub = r.row_coefficients(w, denominators=(r.n * q, r.n * qg))
        lay = r.layout
        for i in (0, 7, 50):
            g, y = r.data.group[i], r.data.y[i]
            want = ((w[lay.joint[g, y, 1]] - w[lay.joint[g, y, 0]]) / r.n
                    + (w[lay.rate[g, y, 1]] - w[lay.rate[g, y, 0]]) / (r.n * q[g, y])
                    + w[lay.selection[g]] / (r.n * qg[g]))
            assert pub[i] == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("labels", [(0, 1), (0, 1, 2)])
def test_layout_coefficients_are_the_exact_chain_rule_through_the_counts(labels):
    """ℓ is linear in the counts C[g, y, ŷ] at fixed denominators, so
    w·ℓ(C) = Σ c[g, y, ŷ]·C[g, y, ŷ]/n with c = Layout.coefficients(w, d, n=n) — for any C, any
    number of labels; the binary contraction along (−1, 1) is c[..., 1] − c[..., 0] = n·a of
    Rates.cell_coefficients, and the mass form (d/n, n = 1) is the same map."""
    r = rates(Thresholds([0.0, 0.5]) if len(labels) == 2 else
              FiniteSet([lambda X: np.zeros(len(X), int)]), _data(labels=labels),
              group_mass_bound=0.01)
    lay, den = r.layout, r.denominators()
    rng = np.random.default_rng(4)
    for _ in range(3):
        w = rng.normal(size=r.K)
        C = rng.random((r.G, r.L, r.L)) * 40
        c = lay.coefficients(w, den, n=r.n)
        assert c.shape == (r.G, r.L, r.L)
        assert float(w @ r.from_counts(C)) == pytest.approx(float((c * C).sum() / r.n),
                                                            rel=1e-12, abs=1e-12)
        masses = lay.coefficients(w, (den[0] / r.n, den[1] / r.n), n=1.0)
        np.testing.assert_allclose(masses, c, rtol=1e-12, atol=1e-12)
        v = rng.normal(size=r.L)       # any direction: the contraction of c along it
        np.testing.assert_allclose(lay.coefficients(w, den, n=r.n, along=v), c @ v,
                                   rtol=1e-12, atol=1e-12)
        if r.L == 2:
            a = r.cell_coefficients(w)
            np.testing.assert_allclose(a * r.n, c[..., 1] - c[..., 0], rtol=1e-12, atol=1e-12)
            np.testing.assert_array_equal(r.cell_coefficients(w, times_n=True),
                                          lay.coefficients(w, den, n=r.n, along=(-1.0, 1.0)))
    with pytest.raises(InvalidInputError):
        lay.coefficients(np.zeros(r.K + 1), den)
    with pytest.raises(InvalidInputError):
        lay.coefficients(np.zeros(r.K), den, along=np.ones(r.L + 1))


def test_row_gradient_bound_holds_for_every_row():
    for surrogate in sorted(SURROGATE_TABLE):
        r = _linear(surrogate)
        rows = np.c_[r.data.X * r.clip_scale[:, None], np.ones(r.n)]
        for theta in np.random.default_rng(1).normal(size=(5, 3)):
            _, der = r.soft(theta)
            # attained (to rounding) by the hinge at rows on the clipping sphere
            assert (np.abs(der) * np.linalg.norm(rows, axis=1)).max() <= \
                r.row_gradient_bound * (1 + 1e-12)
        assert r.phi_at_bound == pytest.approx(
            float(SURROGATES[surrogate](np.array(r.margin_bound))[0]))


def test_surrogate_accessors_refuse_zero_one_rates():
    r = rates(Thresholds([0.0]), _data(), group_mass_bound=0.01)
    for name in ("clip_scale", "phi_at_bound", "surrogate_row", "row_gradient_bound"):
        with pytest.raises(InvalidInputError):
            getattr(r, name)
    with pytest.raises(InvalidInputError):
        r.soft(np.zeros(3))
    with pytest.raises(InvalidInputError):
        _linear().soft(np.zeros(4))                       # wrong length of (w, b)


def test_cell_counts_and_denominators_are_the_clamped_counts():
    r = _linear()
    n_gy = np.array([[np.sum((r.data.group == g) & (r.data.y == y)) for y in (0, 1)]
                     for g in range(r.G)], float)
    np.testing.assert_array_equal(r.cell_counts, n_gy)
    q, qg = r.group_mass()
    den, den_g = r.denominators()
    np.testing.assert_array_equal(den, np.maximum(n_gy, r.n * q))
    np.testing.assert_array_equal(den_g, np.maximum(n_gy.sum(axis=1), r.n * qg))
    C = np.random.default_rng(0).integers(0, 5, size=(r.G, 2, 2)).astype(float)
    ell = r.from_counts(C)
    assert ell[r.layout.joint[1, 0, 1]] == C[1, 0, 1] / r.n
    assert ell[r.layout.rate[1, 0, 1]] == C[1, 0, 1] / den[1, 0]


def test_the_surrogate_table_has_one_formula_for_numpy_and_torch():
    torch = pytest.importorskip("torch", reason="the torch column needs torch")
    assert SURROGATES == {k: v.numpy for k, v in SURROGATE_TABLE.items()}
    z = np.linspace(-4.0, 4.0, 161)       # includes the kinks at −1 and 0
    for name, row in SURROGATE_TABLE.items():
        v_np, d_np = row.numpy(z)
        v_t, d_t = row.torch(torch.as_tensor(z, dtype=torch.float64))
        np.testing.assert_allclose(v_t.numpy(), v_np, rtol=1e-12, atol=1e-15, err_msg=name)
        np.testing.assert_allclose(d_t.numpy(), d_np, rtol=1e-12, atol=1e-15, err_msg=name)
        # convex and non-decreasing: the derivative is ≥ 0 and non-decreasing
        assert (d_np >= 0).all() and (np.diff(d_np) >= -1e-15).all()
        for a, b in itertools.pairwise(range(0, 161, 40)):
            assert v_np[b] >= v_np[a]


def test_the_statistics_modules_examples_run():
    """The docstring examples of ℓ's modules (they print the documented import paths)."""
    import doctest
    import importlib

    attempted = 0
    for name in ("stats", "rates", "layout", "group_mass", "sensitivity", "counts", "soft"):
        mod = importlib.import_module(f"privfair.statistics.{name}")
        res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
        assert res.failed == 0, name
        attempted += res.attempted
    assert attempted >= 20          # rates, group_mass and block_constants carry examples

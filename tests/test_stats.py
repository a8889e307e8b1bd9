"""Rates: layout of ℓ, evaluation (single, mixture, vectorised), surrogates, validation."""

from __future__ import annotations

import time

import numpy as np
import pytest

from privfair.data.dataset import Dataset
from privfair.models.decisions import FiniteSet, LinearClassifier, Thresholds
from privfair.errors import GroupMassError, InvalidInputError
from privfair.statistics.stats import rates

RNG = np.random.default_rng(0)


def _data(n=60, L=2, groups=("F", "M", "X")):
    X = RNG.normal(size=(n, 3))
    X[:5, 0] = 0.0                                   # ties with a threshold at 0
    y = RNG.integers(0, L, n)
    a = np.asarray(groups)[np.arange(n) % len(groups)]
    return Dataset(X, y, a)


def _exact(data, pred):
    """Reference ℓ by plain loops (no clamp)."""
    G, L = data.n_groups, data.n_labels
    C = np.zeros((G, L, L))
    for g, y, p in zip(data.group, data.y, pred):
        C[g, y, p] += 1
    return C


def test_binary_layout_and_values():
    d = _data()
    r = rates(Thresholds([0.0, 0.5]), d, group_mass_bound=0.01)
    assert r.K == 9 * 3 and r.K_joint == 12 and r.group_mass_source == "public"
    assert r.names[:4] == ["tn[F]", "fp[F]", "fn[F]", "tp[F]"]
    assert r.names[12:17] == ["fpr[F]", "tnr[F]", "tpr[F]", "fnr[F]", "selection[F]"]
    assert r.is_conditional.sum() == 15
    ell = r.evaluate(0.0)
    pred = (d.X[:, 0] >= 0).astype(int)
    C = _exact(d, pred)
    assert ell[:12] == pytest.approx(C.ravel() / d.n) and ell[:12].sum() == pytest.approx(1)
    for gi, g in enumerate(d.groups):
        n0, n1 = C[gi, 0].sum(), C[gi, 1].sum()
        assert ell[r.fpr.index(g)] == pytest.approx(C[gi, 0, 1] / n0)   # q n < n_{g,y}: exact
        assert ell[r.tnr.index(g)] == pytest.approx(C[gi, 0, 0] / n0)
        assert ell[r.tpr.index(g)] == pytest.approx(C[gi, 1, 1] / n1)
        assert ell[r.fnr.index(g)] == pytest.approx(C[gi, 1, 0] / n1)
        assert ell[r.selection.index(g)] == pytest.approx(C[gi, :, 1].sum() / (n0 + n1))
        assert ell[r.fp.index(g)] == pytest.approx(C[gi, 0, 1] / d.n)
    # a declared bound above the true mass clamps the denominator to n·q
    big = rates(Thresholds([0.0]), d, group_mass_bound=0.15).evaluate(0.0)
    assert big[r.fpr.index("F")] == pytest.approx(C[0, 0, 1] / max(C[0, 0].sum(), 0.15 * d.n))


def test_multiclass_layout():
    d = _data(L=3, groups=("a", "b"))
    fs = [lambda X: np.digitize(X[:, 0], [-0.5, 0.5]), lambda X: np.zeros(len(X), int)]
    r = rates(FiniteSet(fs), d, group_mass_bound=0.05)
    # joint cells, rates, then P(ŷ = k | g): 2·9 + 2·9 + 2·3
    assert r.K == 2 * 9 * 2 + 2 * 3 and r.names[1] == "cell[a,y=0,yhat=1]"
    assert r.names[36] == "selection[a,yhat=0]" and r.names[41] == "selection[b,yhat=2]"
    assert r.names[18] == "rate[a,y=0,yhat=0]"
    ell = r.evaluate(0)
    C = _exact(d, np.digitize(d.X[:, 0], [-0.5, 0.5]))
    assert ell[:18] == pytest.approx(C.ravel() / d.n)
    assert ell[18:36].reshape(2, 3, 3).sum(axis=2) == pytest.approx(np.ones((2, 3)))
    n_g = C.sum(axis=(1, 2))
    assert ell[36:].reshape(2, 3) == pytest.approx(C.sum(axis=1) / np.maximum(
        n_g, 0.05 * 3 * d.n)[:, None])
    with pytest.raises(InvalidInputError) as e:
        r.fp["a"]
    assert "r.cell" in str(e.value)
    k = r.index("rate[b,y=2,yhat=1]")
    assert r.rate("b", 2, 1).support() == frozenset({k})
    assert r.cell("a", 0, 1).support() == frozenset({1})


@pytest.mark.parametrize("kind", ["thresholds", "linear", "callables", "multiclass"])
def test_evaluate_all_agrees_with_loop(kind):
    d = _data(L=3 if kind == "multiclass" else 2)
    if kind == "thresholds":
        C = Thresholds(np.concatenate([np.linspace(-2, 2, 9), [0.0]]), score=0)
    elif kind == "linear":
        C = FiniteSet(RNG.normal(size=(25, 4)))
    else:
        L = d.n_labels
        C = FiniteSet([lambda X, c=c: np.digitize(X[:, 1], [c, c + 0.5]) % L
                       for c in np.linspace(-1, 1, 7)])
    r = rates(C, d, group_mass_bound=0.02)
    A = r.evaluate_all()
    B = np.stack([r.evaluate(C.decision(i)) for i in range(len(C))])
    assert A.shape == (len(C), r.K) and np.allclose(A, B, atol=1e-14)
    w = RNG.dirichlet(np.ones(len(C)))
    mix = r.evaluate_mixture([C.decision(i) for i in range(len(C))], w)
    assert np.allclose(mix, w @ B)


def test_evaluate_all_in_chunks(monkeypatch):
    import privfair.models.decisions as dec

    monkeypatch.setattr(dec, "CHUNK_ELEMENTS", 100)           # forces many small chunks
    d = _data()
    C = FiniteSet(RNG.normal(size=(11, 4)))
    r = rates(C, d)
    assert np.allclose(r.evaluate_all(), np.stack([r.evaluate(i) for i in range(11)]))


def test_expressions_accessors_and_error():
    d = _data()
    r = rates(Thresholds([0.0]), d)
    ell = r.evaluate(0.0)
    assert r.vector.owner is r and r.vector.shape == (r.K,)
    assert r.fp["F"].value(ell) == pytest.approx(ell[r.fp.index("F")])
    pred = (d.X[:, 0] >= 0).astype(int)
    assert r.error().value(ell) == pytest.approx(np.mean(pred != d.y))
    assert r.error().is_affine()
    with pytest.raises(InvalidInputError) as e:
        r.fpr["Nobody"]
    assert "Nobody" in str(e.value) and "'F', 'M', 'X'" in str(e.value)
    with pytest.raises(InvalidInputError):
        r.cell("F", 0, 7)
    with pytest.raises(InvalidInputError):
        r.index("fpr[Nobody]")


def test_group_mass_bound_validation_and_sources():
    d = _data()
    for bad in (0, -0.1, 1.5, np.nan, True, "0.1", 0.2):      # 0.2 · 6 cells > 1
        with pytest.raises(GroupMassError) as e:
            rates(Thresholds([0.0]), d, group_mass_bound=bad)
        assert "group_mass_bound" in str(e.value)
    with pytest.raises(GroupMassError):                       # incomplete dict
        rates(Thresholds([0.0]), d, group_mass_bound={("F", 0): 0.1})
    with pytest.raises(GroupMassError):                       # unknown key
        rates(Thresholds([0.0]), d, group_mass_bound={"Z": 0.1})
    r = rates(Thresholds([0.0]), d, group_mass_bound={"F": 0.05, "M": 0.05, ("X", 0): 0.04,
                                                       ("X", 1): 0.06})
    assert r.group_mass_source == "public"
    assert r.influence.bounds()[r.fpr.index("X")] == pytest.approx(1 / (0.04 * d.n))
    assert r.influence.bounds()[r.selection.index("X")] == pytest.approx(1 / (0.10 * d.n))
    # a bound larger than the declared one would understate sensitivity: refused
    with pytest.raises(GroupMassError):
        r.evaluate(0.0, group_mass_bound=0.1)
    with pytest.raises(GroupMassError):
        r.delta_l("l1", "sensitive", group_mass_bound=0.1)
    r.evaluate(0.0, group_mass_bound=0.01)                    # smaller is fine
    p = rates(Thresholds([0.0]), d)
    assert p.group_mass_bound is None and p.group_mass_source == "private"
    e = p.with_group_mass_bound(0.05)
    assert e.group_mass_source == "private" and e.group_mass_bound == 0.05
    assert e.delta_l("linf", "row") == pytest.approx(1 / (0.05 * d.n))


def test_delta_l_arguments():
    d = _data()
    r = rates(Thresholds([0.0]), d, group_mass_bound=0.05)
    with pytest.raises(InvalidInputError):
        r.delta_l("l3", "sensitive")
    with pytest.raises(InvalidInputError):
        r.delta_l("l1", "replace")
    with pytest.raises(InvalidInputError):
        r.delta_l("l1", "row", support=[r.K])
    e = r.fp["F"] - r.fp["M"]
    assert r.delta_l("l1", "sensitive", support=e) == pytest.approx(2 / d.n)
    assert r.delta_l("l1", "sensitive", support=[]) == 0.0
    one = rates(Thresholds([0.0]), Dataset(d.X, d.y, ["F"] * d.n))
    assert one.delta_l("l1", "sensitive", support=range(one.K_joint)) == 0.0  # nowhere to move
    assert one.delta_l("l1", "row", support=range(one.K_joint)) == pytest.approx(2 / d.n)


def test_surrogate_validation():
    d = _data()
    lin = LinearClassifier(3, radius=1.0)
    with pytest.raises(InvalidInputError) as e:
        rates(lin, d, surrogate="squared")
    assert "surrogate" in str(e.value) and "logistic" in str(e.value)
    with pytest.raises(InvalidInputError):
        rates(Thresholds([0.0]), d, surrogate="hinge")
    with pytest.raises(InvalidInputError):
        rates(LinearClassifier(3, 1.0), _data(L=3), surrogate="hinge")
    for bad in (0, -1.0, np.inf):
        with pytest.raises(InvalidInputError):
            rates(lin, d, surrogate="hinge", feature_bound=bad)
    with pytest.raises(InvalidInputError):
        rates(LinearClassifier(2, 1.0), d)                    # wrong number of features
    with pytest.raises(InvalidInputError):
        rates(lin, d).evaluate_all()                          # infinite set


@pytest.mark.parametrize("surrogate", ["logistic", "hinge", "smoothed_hinge"])
def test_surrogate_values_convexity_and_gradient(surrogate):
    d = _data(n=80)
    C = LinearClassifier(3, radius=1.5)
    r = rates(C, d, surrogate=surrogate, group_mass_bound=0.05, feature_bound=2.0)
    assert r.margin_bound == pytest.approx(1.5 * np.sqrt(5.0))
    thetas = [C.project(t) for t in RNG.normal(size=(20, 4))]
    ells = np.stack([r.evaluate(t) for t in thetas])
    assert (ells >= 0).all() and (ells <= 1 + 1e-12).all()
    # each row's mass in its (g, y) block sums to one, so block totals are data constants
    counts = d.counts() / d.n
    joint = ells[:, :r.K_joint].reshape(-1, d.n_groups, 2, 2).sum(axis=3)
    assert np.allclose(joint, counts[None])
    curv = np.asarray(r.curvature)
    assert set(curv[[r.fp.index("F"), r.fnr.index("M")]]) == {"convex"}
    assert set(curv[[r.tp.index("F"), r.tnr.index("M")]]) == {"concave"}
    assert curv[r.selection.index("F")] == "unknown"
    for a, b in zip(thetas[:10], thetas[10:]):                # midpoint convexity / concavity
        mid = r.evaluate((a + b) / 2)
        avg = (r.evaluate(a) + r.evaluate(b)) / 2
        assert (mid[curv == "convex"] <= avg[curv == "convex"] + 1e-12).all()
        assert (mid[curv == "concave"] >= avg[curv == "concave"] - 1e-12).all()
    w = RNG.normal(size=r.K)
    theta = thetas[0] * 0.5
    val, grad = r.weighted_value_and_grad(theta, w)
    assert val == pytest.approx(w @ r.evaluate(theta))
    h = 1e-6
    fd = [(w @ r.evaluate(theta + h * e) - w @ r.evaluate(theta - h * e)) / (2 * h)
          for e in np.eye(4)]
    assert np.allclose(grad, fd, atol=1e-5)


def test_linear_without_surrogate_is_zero_one():
    d = _data()
    C = LinearClassifier(3, radius=1.0)
    r = rates(C, d)
    theta = np.array([0.5, -0.5, 0.1, 0.2])
    pred = (d.X @ theta[:3] + theta[3] > 0).astype(int)
    assert r.evaluate(theta)[:r.K_joint] == pytest.approx(_exact(d, pred).ravel() / d.n)
    assert r.curvature == ["unknown"] * r.K
    with pytest.raises(InvalidInputError):
        r.weighted_value_and_grad(theta, np.ones(r.K))
    with pytest.raises(InvalidInputError):
        r.evaluate_mixture([theta, theta], [0.7, 0.7])


def test_adult_scale_vectorised_evaluation():
    from privfair.datasets import load_adult

    d = load_adult("train")
    T = Thresholds(np.linspace(-1.5, 1.5, 400), score=d.feature_names.index("age"))
    r = rates(T, d, group_mass_bound=0.05)
    t = time.perf_counter()
    A = r.evaluate_all()
    assert time.perf_counter() - t < 2.0
    assert np.allclose(A[123], r.evaluate(T.decision(123)))
    W = RNG.normal(size=(64, d.n_features + 1)) * 0.1
    rf = rates(FiniteSet(W), d, group_mass_bound=0.05)
    t = time.perf_counter()
    B = rf.evaluate_all()
    assert time.perf_counter() - t < 3.0
    assert np.allclose(B[7], rf.evaluate(7)) and np.allclose(B[:, :rf.K_joint].sum(1), 1)


def test_estimate_group_mass_bound():
    from privfair.statistics.stats import estimate_group_mass_bound

    d = _data(n=600)
    true = d.counts() / d.n
    bound, event = estimate_group_mass_bound(d, 1.0, rng=1, return_event=True)
    assert event.mechanism == "laplace" and event.sensitivity == 2.0 and event.epsilon == 1.0
    assert set(bound) == {(g, y) for g in d.groups for y in d.label_values}
    r = rates(Thresholds([0.0]), d, group_mass_bound=bound)   # accepted as a declared bound
    assert r.delta_l("linf", "sensitive") > 0
    # the bound holds for every cell in ≥ 1 − β of the runs (β = 0.2 here; expect ~0.02 misses)
    misses = 0
    for seed in range(100):
        q = estimate_group_mass_bound(d, 0.5, rng=seed, beta=0.2)
        est = np.array([[q[g, y] for y in d.label_values] for g in d.groups])
        misses += bool((est > true).any())
        assert est.sum() <= 1 + 1e-12 and (est > 0).all()
    assert misses <= 20
    # and it is not vacuous: at large epsilon it is close to the truth
    q = estimate_group_mass_bound(d, 1000.0, rng=0)
    assert abs(q["F", 0] - true[0, 0]) < 2 / d.n
    with pytest.raises(InvalidInputError):
        estimate_group_mass_bound(d, 1.0, beta=0)


@pytest.mark.parametrize("surrogate", ["logistic", "hinge"])
def test_surrogate_rates_never_copy_x_and_match_the_clipped_rows(surrogate):
    # #19: Rates keeps a per-row clipping scale c (n floats) instead of a clipped copy of X;
    # values and gradients equal those on the explicitly clipped rows up to float rounding
    rng = np.random.default_rng(5)
    n, d = 2000, 4
    X = 2.0 * rng.normal(size=(n, d))
    data = Dataset(X, rng.integers(0, 2, n), rng.choice(["a", "b"], n))
    r = rates(LinearClassifier(d, radius=1.0), data, surrogate=surrogate, group_mass_bound=0.05,
              feature_bound=1.5)
    theta = rng.normal(size=d + 1) * 0.4
    w = rng.normal(size=r.K)
    val, grad = r.weighted_value_and_grad(theta, w)
    assert not r.clipped_rows_built                              # nothing n×d was built
    Xc = X * np.minimum(1.0, 1.5 / np.linalg.norm(X, axis=1))[:, None]
    np.testing.assert_allclose(r.clipped_rows, Xc, rtol=1e-15, atol=0)   # (built on request only)
    z = Xc @ theta[:-1] + theta[-1]
    z_rates = (X @ theta[:-1]) * r.clip_scale + theta[-1]
    np.testing.assert_allclose(z_rates, z, rtol=1e-12, atol=1e-13)
    # the gradient by finite differences of the value, at the same θ
    eps = 1e-6
    fd = np.array([(r.weighted_value_and_grad(theta + eps * e, w)[0]
                    - r.weighted_value_and_grad(theta - eps * e, w)[0]) / (2 * eps)
                   for e in np.eye(d + 1)])
    np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-6)


def test_evaluate_all_of_a_finite_set_does_not_sort_x(monkeypatch):
    # the per-cell counts come from sorting each block of predictions, not a sorted copy of X
    rng = np.random.default_rng(6)
    X = rng.normal(size=(500, 3))
    data = Dataset(X, rng.integers(0, 2, 500), rng.choice(["a", "b", "c"], 500))
    W = rng.normal(size=(40, 4))
    r = rates(FiniteSet(W), data)
    seen = []
    real = FiniteSet.iter_predictions

    def spy(self, Xarg, chunk=None):
        seen.append(Xarg is data.X)
        return real(self, Xarg, chunk=7)

    monkeypatch.setattr(FiniteSet, "iter_predictions", spy)
    all_ = r.evaluate_all()
    assert seen == [True]
    loop = np.stack([r.evaluate(i) for i in range(len(W))])
    np.testing.assert_allclose(all_, loop, rtol=0, atol=1e-15)

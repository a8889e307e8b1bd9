"""Brute-force proof checks of Rates.delta_l: enumerate EVERY neighbour of small datasets.

For each dataset D, relation, decision c and support S we compute ‖ℓ_S(c, D) − ℓ_S(c, D')‖_p
over all neighbours D' and check it never exceeds ``delta_l(p, relation, S)``; on joint
coordinates the bound must be attained exactly (so a bound 2x too small fails, and so does a
bound 2x too large).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from privfair.data.dataset import Dataset
from privfair.models.decisions import FiniteSet, LinearClassifier, Thresholds
from privfair.errors import GroupMassError
from privfair.statistics.stats import block_constants, rates

POOL = [-1.0, 0.0, 1.0]          # feature values a replaced row may take
ORD = {"l1": 1, "l2": 2, "linf": np.inf}


def _dataset(rng, n, G, L):
    groups = [f"g{k}" for k in range(G)]
    g = np.concatenate([np.arange(G), rng.integers(0, G, n - G)])   # every group non-empty
    y = rng.integers(0, L, n)
    X = rng.choice(POOL, size=(n, 1))
    return Dataset(X, y, np.asarray(groups)[g], labels=list(range(L)), group_names=groups)


def _multi_class_set(L):
    cuts = [(-0.5, 0.5), (0.5, -0.5), (-2.0, 0.5), (0.5, 2.0)]

    def make(a, b):
        return lambda X: np.where(X[:, 0] < a, 0, np.where(X[:, 0] < b, 1, L - 1))
    fs = [make(a, b) for a, b in cuts] + [lambda X: np.zeros(len(X), int),
                                          lambda X: np.full(len(X), L - 1)]
    return FiniteSet(fs)


def _neighbours(D, relation):
    for i in range(D.n):
        if relation == "sensitive":
            for g in D.groups:
                if g != D.groups[D.group[i]]:
                    yield D.with_row(i, group=g)
        else:
            for x, g, lab in itertools.product(POOL, D.groups, D.label_values):
                yield D.with_row(i, x=[x], group=g, label=lab)


def _max_change(D, decisions, relation, bound, supports):
    """{(support name, norm): max ‖Δℓ_S‖} over all neighbours and all decisions."""
    base = rates(decisions, D, group_mass_bound=bound).evaluate_all()
    worst = {(s, p): 0.0 for s in supports for p in ORD}
    for D2 in _neighbours(D, relation):
        diff = rates(decisions, D2, group_mass_bound=bound).evaluate_all() - base
        for s, idx in supports.items():
            for p, o in ORD.items():
                worst[s, p] = max(worst[s, p], float(np.linalg.norm(diff[:, idx], ord=o, axis=1).max()))
    return worst


def _supports(r, rng):
    K, Kj = r.K, r.K_joint
    sup = {"joint": list(range(Kj)), "all": list(range(K)),
           "one_block": [int(k) for k in r.layout.rate[0, 0]],
           "random": sorted(rng.choice(K, size=K // 2, replace=False).tolist()),
           "two_joint_cells": [int(r.layout.joint[0, 0, 0]), int(r.layout.joint[1, 0, 0])]}
    if r.L == 2:
        sup["eo"] = [r.fpr.index(g) for g in r.groups] + [r.tpr.index(g) for g in r.groups]
    else:       # multi-class selection rates P(ŷ = k | g): every one, one group's, one pair
        cs = r.layout.class_selection
        sup.update({"selection": cs.ravel().tolist(), "selection_block": cs[0].tolist(),
                    "dp_pair": [int(cs[0, 1]), int(cs[1, 1])]})
    return sup


CASES = [(seed, n, G, L) for seed, (n, G, L) in enumerate(
    [(6, 2, 2), (8, 2, 2), (7, 3, 2), (8, 3, 2), (6, 2, 3), (7, 3, 3)])]


@pytest.mark.parametrize("relation", ["sensitive", "row"])
@pytest.mark.parametrize("seed,n,G,L", CASES)
def test_delta_l_bounds_every_neighbour(seed, n, G, L, relation):
    rng = np.random.default_rng(seed)
    D = _dataset(rng, n, G, L)
    decisions = Thresholds([-2.0, -0.5, 0.5, 2.0], score=0) if L == 2 else _multi_class_set(L)
    bound = 1.0 / (G * L * 2)              # a declared public q with Σ q ≤ 1
    r = rates(decisions, D, group_mass_bound=bound)
    supports = _supports(r, rng)
    worst = _max_change(D, decisions, relation, bound, supports)
    for (s, p), observed in worst.items():
        claimed = r.delta_l(p, relation, support=supports[s])
        assert observed <= claimed * (1 + 1e-12) + 1e-15, (s, p, observed, claimed)
        if s in ("joint", "two_joint_cells"):
            # joint coordinates: the bound is attained exactly (1/n, √2/n, 2/n)
            assert observed == pytest.approx(claimed, rel=1e-12), (s, p, observed, claimed)


def test_joint_bounds_are_the_structural_constants():
    D = _dataset(np.random.default_rng(0), 8, 3, 2)
    r = rates(Thresholds([0.0]), D)        # no bound needed for joint coordinates
    joint = range(r.K_joint)
    for rel in ("sensitive", "row"):
        assert r.delta_l("l1", rel, joint) == pytest.approx(2 / 8)
        assert r.delta_l("l2", rel, joint) == pytest.approx(np.sqrt(2) / 8)
        assert r.delta_l("linf", rel, joint) == pytest.approx(1 / 8)
    # one joint coordinate only: a row can move it by 1/n in every norm
    assert r.delta_l("l1", "sensitive", [r.fp.index("g0")]) == pytest.approx(1 / 8)


def test_conditional_needs_a_bound():
    D = _dataset(np.random.default_rng(1), 8, 2, 2)
    r = rates(Thresholds([0.0]), D)
    assert r.group_mass_bound is None and r.group_mass_source == "private"
    with pytest.raises(GroupMassError) as e:
        r.delta_l("l1", "sensitive", support=[r.fpr.index("g0")])
    assert "group_mass_bound" in str(e.value)
    # passing the bound at delta_l time (e.g. a private estimate) works
    assert r.delta_l("linf", "sensitive", [r.fpr.index("g0")], group_mass_bound=0.25) == 0.5
    assert r.uses_conditional([r.fpr.index("g0")]) and not r.uses_conditional(range(r.K_joint))


def test_conditional_bound_tight_on_worst_case():
    """Block of m = Q + 1 rows, all predicted 0, one predicted 1 leaves: ‖Δ‖₁ = 2/(Q+1)."""
    n, q = 100, 0.1                       # Q = n q = 10
    Q = n * q
    x = np.zeros((n, 1))
    x[0] = 1.0                            # row 0 is predicted 1, everyone else 0
    g = np.array(["a"] * 11 + ["b"] * 89)  # group a, label 0 has m = 11 = Q + 1 rows
    y = np.zeros(n, int)
    y[60:] = 1
    D = Dataset(x, y, g)
    C = Thresholds([0.5])
    r = rates(C, D, group_mass_bound={"a": 0.1, "b": 0.1})
    D2 = D.with_row(0, group="b")
    block = [r.fpr.index("a"), r.tnr.index("a")]
    diff = rates(C, D2, group_mass_bound=r.group_mass_bound).evaluate(0.5) - r.evaluate(0.5)
    for p, o in ORD.items():
        claimed = r.delta_l(p, "sensitive", support=block)
        observed = np.linalg.norm(diff[block], ord=o)
        if p != "linf":    # attained exactly (linf's worst case is a block of m ≤ Q rows, below)
            assert observed == pytest.approx(claimed, rel=1e-12)
        assert observed <= claimed * (1 + 1e-12)
        assert claimed <= {"l1": 2, "l2": np.sqrt(2), "linf": 1}[p] / Q   # and ≤ the 1/(nq) rule
    # single-coordinate regime m ≤ Q: the per-coordinate bound 1/Q is attained exactly
    D3 = D.with_row(0, group="b").with_row(1, group="b")  # block (a, 0) now has 9 < Q rows
    D4 = D3.with_row(2, x=[1.0])                         # row 2 flips to ŷ = 1 in that block
    d = (rates(C, D4, group_mass_bound=0.1).evaluate(0.5)
         - rates(C, D3, group_mass_bound=0.1).evaluate(0.5))
    assert abs(d[r.fpr.index("a")]) == pytest.approx(r.delta_l("linf", "row", [r.fpr.index("a")]))


@pytest.mark.parametrize("surrogate", ["logistic", "hinge", "smoothed_hinge"])
@pytest.mark.parametrize("relation", ["sensitive", "row"])
def test_surrogate_rates_respect_the_same_bounds(surrogate, relation):
    rng = np.random.default_rng(7)
    D = _dataset(rng, 7, 3, 2)
    C = LinearClassifier(1, radius=2.0)
    thetas = [C.project(t) for t in rng.normal(size=(12, 2)) * 2] + [np.array([2.0, 0.0])]
    bound = 0.05
    r = rates(C, D, surrogate=surrogate, group_mass_bound=bound, feature_bound=1.0)
    supports = _supports(r, rng)
    base = np.stack([r.evaluate(t) for t in thetas])
    assert (base >= 0).all() and (base <= 1).all()
    for D2 in _neighbours(D, relation):
        r2 = rates(C, D2, surrogate=surrogate, group_mass_bound=bound, feature_bound=1.0)
        diff = np.stack([r2.evaluate(t) for t in thetas]) - base
        for s, idx in supports.items():
            for p, o in ORD.items():
                obs = np.linalg.norm(diff[:, idx], ord=o, axis=1).max()
                assert obs <= r.delta_l(p, relation, idx) * (1 + 1e-12) + 1e-15, (s, p)


def test_influence_structure():
    D = _dataset(np.random.default_rng(3), 40, 2, 2)
    r = rates(Thresholds([0.0]), D, group_mass_bound=0.1)     # Q = n q = 4 per (g, y)
    inf = r.influence
    assert len(inf.profiles) == 2 * 2 * 2
    assert inf.contributes("g0", 0, 1) == [r.fp.index("g0"), r.fpr.index("g0"),
                                           r.selection.index("g0")]
    assert set(inf.denominator_block("g1", 1)) == {r.tpr.index("g1"), r.fnr.index("g1"),
                                                   r.selection.index("g1")}
    b = inf.bounds()
    sel = [r.selection.index(g) for g in r.groups]
    cond = [k for k in range(r.K_joint, r.K) if k not in sel]
    assert np.allclose(b[: r.K_joint], 1 / 40)
    assert np.allclose(b[cond], 1 / 4) and np.allclose(b[sel], 1 / 8)  # selection: Q_g = 8
    # with n q < 1 a rate can still move by at most 1 (its value range)
    assert np.allclose(rates(Thresholds([0.0]), D, group_mass_bound=0.01).influence.bounds()[cond], 1)


def test_block_constants_match_a_full_scan():
    for Q in [0.3, 1.0, 1.5, 2.0, 2.7, 10.0, 33.3, 1000.0]:
        c = block_constants(Q)
        m = np.arange(1, int(Q) + 50, dtype=float)
        inv = 1 / np.maximum(m, Q)
        prev = np.where(m > 1, 1 / np.maximum(np.maximum(m - 1, Q), 1e-300), 0)
        other = (m - 1) * (prev - inv)
        own = np.maximum(inv, abs(m * inv - (m - 1) * prev))
        assert c["own"] == pytest.approx(own.max()) and c["other"] == pytest.approx(other.max())
        assert c["l1"] == pytest.approx(np.maximum(own, inv + other).max())
        assert c["own"] == pytest.approx(1 / max(1, Q))
        if Q >= 1:    # ℓ1 of a block ≤ 2/(Q+1)-ish, never more than 2/Q
            assert c["l1"] <= 2 / Q + 1e-15


def _every_tiny_dataset(seed, vals, C, bound):
    """{combo: ℓ(D)} for every dataset D of ``seed.n`` rows whose rows take the values ``vals``
    — (x, group, label) triples; ``combo`` holds each row's index into ``vals``."""
    ell = {}
    for combo in itertools.product(range(len(vals)), repeat=seed.n):
        D = seed
        for i, v in enumerate(combo):
            x, g, lab = vals[v]
            D = D.with_row(i, x=[x], group=g, label=lab)
        ell[combo] = rates(C, D, group_mass_bound=bound).evaluate_all()
    return ell


def _neighbour_changes(ell, vals, relation):
    """ℓ(D') − ℓ(D) for every neighbouring pair of the enumerated datasets: one row replaced
    (``"row"``), or only its group changed (``"sensitive"``)."""
    for combo in ell:
        for i in range(len(combo)):
            for v in range(len(vals)):
                x, _, lab = vals[v]
                ox, _, olab = vals[combo[i]]
                if v == combo[i] or (relation == "sensitive" and (x, lab) != (ox, olab)):
                    continue
                yield ell[combo[:i] + (v,) + combo[i + 1:]] - ell[combo]


def test_exhaustive_tiny_datasets_bound_is_exact():
    """Every dataset of n = 3 rows over x ∈ {0, 1}, 2 groups, 2 labels (512 datasets), every
    neighbour, three decisions: the bound holds everywhere and is attained for each single
    coordinate and each conditional block.  Unequal declared bounds make n·q > 1 somewhere,
    so both clamp regimes (m ≤ n·q and m > n·q) are exercised."""
    vals = list(itertools.product([0.0, 1.0], ["a", "b"], [0, 1]))
    bound = {("a", 0): 0.7, ("a", 1): 0.1, ("b", 0): 0.1, ("b", 1): 0.1}
    C = Thresholds([-1.0, 0.5, 2.0], score=0)
    seed = Dataset(np.array([[0.0], [0.0], [1.0]]), [0, 1, 0], ["a", "b", "a"])
    ell = _every_tiny_dataset(seed, vals, C, bound)
    r = rates(C, seed, group_mass_bound=bound)
    supports = {f"coord {k}": [k] for k in range(r.K)}
    supports.update({f"block {g},{y}": [int(k) for k in r.layout.rate[g, y]] for g in range(2) for y in range(2)})
    supports.update({"all": list(range(r.K)), "joint": list(range(r.K_joint)),
                     "eo": [r.fpr.index("a"), r.fpr.index("b"), r.tpr.index("a"), r.tpr.index("b")]})
    for relation in ("sensitive", "row"):
        diffs = np.stack(list(_neighbour_changes(ell, vals, relation)))  # (pairs, decisions, K)
        for s, idx in supports.items():
            for p, o in ORD.items():
                observed = float(np.linalg.norm(diffs[:, :, idx], ord=o, axis=2).max())
                claimed = r.delta_l(p, relation, supports[s])
                assert observed <= claimed * (1 + 1e-12), (relation, s, p, observed, claimed)
                if s.startswith(("coord", "block")) or s == "joint":
                    assert observed == pytest.approx(claimed, rel=1e-12), (relation, s, p)


def test_multiclass_selection_bounds_are_attained_on_tiny_datasets():
    """Every dataset of n = 3 rows over x ∈ {0, 1, 2}, 2 groups, 3 labels, every neighbour, three
    multi-class rules: the bound on the selection rates P(ŷ = k | g) holds everywhere and is
    attained for each single selection coordinate and each group's selection block (so a bound
    2x too small fails, and so does one 2x too large)."""
    vals = list(itertools.product([0.0, 1.0, 2.0], ["a", "b"], [0, 1, 2]))
    bound = {("a", 0): 0.5, ("a", 1): 0.1, ("a", 2): 0.1, ("b", 0): 0.1, ("b", 1): 0.1,
             ("b", 2): 0.1}
    C = FiniteSet([lambda X: X[:, 0].astype(int), lambda X: (2 - X[:, 0]).astype(int),
                   lambda X: np.where(X[:, 0] > 0, 1, 0)])
    seed = Dataset(np.array([[0.0], [1.0], [2.0]]), [0, 1, 2], ["a", "b", "a"],
                   labels=[0, 1, 2], group_names=["a", "b"])
    ell = _every_tiny_dataset(seed, vals, C, bound)
    r = rates(C, seed, group_mass_bound=bound)
    cs = r.layout.class_selection
    supports = {f"sel {g},{k}": [int(cs[g, k])] for g in range(2) for k in range(3)}
    supports.update({f"block {g}": cs[g].tolist() for g in range(2)})
    supports["all selection"] = cs.ravel().tolist()
    for relation in ("sensitive", "row"):
        worst = {(s, p): 0.0 for s in supports for p in ORD}
        for d in _neighbour_changes(ell, vals, relation):
            for s_, idx in supports.items():
                for p, o in ORD.items():
                    worst[s_, p] = max(worst[s_, p],
                                       float(np.linalg.norm(d[:, idx], ord=o, axis=1).max()))
        for (s_, p), observed in worst.items():
            claimed = r.delta_l(p, relation, supports[s_])
            assert observed <= claimed * (1 + 1e-12), (relation, s_, p, observed, claimed)
            if s_ != "all selection":
                assert observed == pytest.approx(claimed, rel=1e-12), (relation, s_, p)

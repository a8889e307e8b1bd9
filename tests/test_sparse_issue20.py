"""Row-private sparse ERM is no longer a trap (issue #20) and privfair.models.sparse imports no backend
(issue #17): Λ in the loss's units, sparsity that survives the output noise, exact vectorized
group-ball projections with few evaluations, and the direct fit below the backends."""

from __future__ import annotations

import ast
import math
import pathlib
import warnings

import numpy as np
import pytest

import privfair as pf
from privfair.models import projections
from privfair.errors import InvalidInputError
from privfair.models.projections import GroupLayout, project_disjoint_group_ball

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _data(n=1500, d=4, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.choice(["a", "b"], n)
    X = rng.normal(size=(n, d)) * 0.6
    y = (X[:, 0] - X[:, 1] + 0.5 * rng.logistic(size=n) > 0).astype(int)
    return X, y, a


# ---------------------------------------------------------------------------- (a) Λ's units

# the method before issue #20's breakpoint search: an independent reference for the exact one
def project_disjoint_group_ball_bisection(x, layout, radius: float) -> np.ndarray:
    """The same projection by bisection on μ to machine precision (the method before issue
    #20's breakpoint search; kept as an independent reference for the tests)."""
    x = np.asarray(x, dtype=float)
    a = np.abs(x)
    d = layout.weights
    A = np.where(layout.mask, a[np.maximum(layout.index, 0)], 0.0)
    if float(d @ A.max(axis=1)) <= radius:
        return x.copy()
    if radius <= 0:
        return np.zeros_like(x)
    u = -np.sort(-A, axis=1)
    css = np.cumsum(u, axis=1)
    k = np.arange(1, u.shape[1] + 1)

    def omega(mu):
        return projections.group_thresholds(u, css, k, mu * d)

    lo, hi = 0.0, float(np.max(css[:, -1] / d))
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if float(d @ omega(mid)) > radius else (lo, mid)
    theta = omega(hi)
    t = np.zeros(layout.p)
    t[layout.index[layout.mask]] = np.broadcast_to(theta[:, None], layout.index.shape)[layout.mask]
    return np.sign(x) * np.minimum(a, t)


def test_l2_is_in_the_loss_units_for_a_fairness_problem_as_for_glm():
    """SparseLinear(l2=Λ) means (1/n)Σ l + (Λ/2)‖θ‖² on both routes: the exact minimizer of the
    fairness problem's error (pf.rates, whose surrogate is normalized by φ(B)) equals pf.sparse.glm's
    with the same Λ.  Before #20 the rates route used Λ in the normalized units (φ(B)·Λ)."""
    X, y, a = _data()
    ds = pf.SparseLinear(4, norm=pf.norms.l1(4), radius=3.0, l2=0.05, intercept_bound=1.0,
                         feature_bound=2.0)
    inf = pf.DP(math.inf, protect="row")
    glm = pf.sparse.fit(pf.sparse.glm(X, y, ds), inf, "output_perturbation").decision
    r = pf.rates(ds, pf.Dataset(X, y, sensitive=a), surrogate="logistic", feature_bound=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pf.Problem(pf.minimize(r.error())).solve(inf, backend="output_perturbation",
                                                       holdout=0, progress=False)
    np.testing.assert_allclose(res.decision, glm, atol=1e-6)
    # the conversion is public and documented: Λ/φ(B), B = r₂·√(R² + 1)
    B = ds.radius * math.sqrt(2.0 ** 2 + 1)
    assert ds.scaled_l2("logistic") == pytest.approx(0.05 / math.log1p(math.exp(B)), rel=1e-12)


def test_scaled_units_keep_the_old_meaning_and_bad_units_are_refused():
    from privfair.backends.erm.reduction import erm_from_rates, objective_gradient

    X, y, a = _data(n=300)
    data = pf.Dataset(X, y, sensitive=a)
    for units, want in (("loss", None), ("scaled", 0.05)):
        ds = pf.SparseLinear(4, norm=pf.norms.l1(4), radius=3.0, l2=0.05, l2_units=units,
                             feature_bound=2.0)
        r = pf.rates(ds, data, surrogate="logistic", feature_bound=2.0)
        erm = erm_from_rates(r, objective_gradient(pf.Problem(pf.minimize(r.error()))),
                             "empirical")
        assert erm.l2 == pytest.approx(ds.scaled_l2("logistic"), rel=1e-12)
        if want is not None:
            assert erm.l2 == want
        # glm's loss is not normalized: Λ is Λ in both units
        assert pf.sparse.glm(X, y, ds).l2 == 0.05
    with pytest.raises(InvalidInputError, match="l2_units"):
        pf.SparseLinear(4, l2=0.1, l2_units="rates")


# ---------------------------------------------------------------------------- (b) sparsity
def _group_problem(n=20000, seed=0):
    rng = np.random.default_rng(seed)
    d = 12
    groups = [list(range(k, k + 3)) for k in range(0, d, 3)]
    beta = np.zeros(d)
    beta[:3] = [2.0, -2.0, 1.5]                                 # one active group of four
    X = rng.normal(size=(n, d)) / math.sqrt(d) * 2
    y = (X @ beta + 0.3 * rng.logistic(size=n) > 0).astype(int)
    ds = pf.SparseLinear(d, norm=pf.norms.group(groups), radius=4.0, l2=1e-3,
                         intercept_bound=1.0, feature_bound=2.0)
    return pf.sparse.glm(X, y, ds), groups


def _nonzero_groups(theta, groups):
    return sum(bool(np.any(theta[g] != 0)) for g in groups)


def test_a_group_norm_release_stays_sparse_after_the_output_noise():
    """Before #20 the noisy release was projected only: every group stayed nonzero.  The
    hard threshold at the public level σ(√|g| + √(2 log 2G)) removes the noise-only groups."""
    erm, groups = _group_problem()
    exact = pf.sparse.fit(erm, pf.DP(math.inf, protect="row"), "output_perturbation").decision
    assert _nonzero_groups(exact, groups) < len(groups)          # the solver's own sparsity
    kept, dense = [], []
    for seed in range(4):
        res = pf.sparse.fit(erm, pf.DP(1.0, 1e-6, protect="row"), "output_perturbation",
                            seed=seed)
        assert erm.decisions.contains(res.decision)
        kept.append(_nonzero_groups(res.decision, groups))
        assert np.any(res.decision[groups[0]] != 0)               # the true group survives
    assert max(kept) <= 2, kept
    assert any("sparsity" in n for n in res.info["notes"])
    for seed in range(4):
        off = pf.sparse.fit(erm, pf.DP(1.0, 1e-6, protect="row"), "output_perturbation",
                            seed=seed, threshold=0.0)
        dense.append(_nonzero_groups(off.decision, groups))
    assert max(dense) == len(groups)          # what the noise alone does (the #20 report)
    assert np.mean(kept) < np.mean(dense)


def test_thresholding_is_not_applied_to_a_single_group_or_the_l2_ball():
    from privfair.backends.erm.output_perturbation import threshold_groups

    assert threshold_groups(pf.SparseLinear(3, norm=pf.norms.linf(3))) == []
    assert threshold_groups(pf.SparseLinear(1, norm=pf.norms.l1(1))) == []
    assert threshold_groups(pf.SparseLinear(3)) == []
    assert len(threshold_groups(pf.SparseLinear(3, norm=pf.norms.l1(3)))) == 3


# ---------------------------------------------------------------------------- (c) projections
def _random_layout(rng):
    p = int(rng.integers(1, 40))
    G = int(rng.integers(1, p + 1))
    perm = rng.permutation(p)
    cuts = np.sort(rng.choice(np.arange(1, p), G - 1, replace=False)) if G > 1 else []
    groups = [list(g) for g in np.split(perm, cuts)]
    return groups, rng.uniform(0.2, 3.0, len(groups)), p


@pytest.mark.parametrize("batch", [True, False], ids=["one pass", "binary search"])
def test_breakpoint_projection_equals_the_bisection_and_lands_on_the_sphere(batch, monkeypatch):

    if not batch:
        monkeypatch.setattr(projections, "BATCH_MAX", 0)
    rng = np.random.default_rng(1)
    for trial in range(400):
        groups, d, p = _random_layout(rng)
        L = GroupLayout(groups, d, p)
        x = rng.normal(size=p) * rng.choice([0.01, 1.0, 100.0])
        if trial % 5 == 0:
            x[rng.random(p) < 0.5] = 0.0                       # ties and zeros
        if trial % 7 == 0:
            x = np.round(x)
        r = float(rng.uniform(0.0, 5.0))
        w = project_disjoint_group_ball(x, L, r)
        ref = project_disjoint_group_ball_bisection(x, L, r)
        scale = 1.0 + float(np.abs(x).max())
        np.testing.assert_allclose(w, ref, atol=1e-12 * scale, rtol=0)
        omega_x = sum(dk * np.abs(x[g]).max() for g, dk in zip(groups, d))
        omega_w = sum(dk * np.abs(w[g]).max() for g, dk in zip(groups, d))
        assert omega_w == pytest.approx(min(omega_x, r), abs=1e-12 * scale)


@pytest.mark.parametrize("batch", [True, False], ids=["one pass", "binary search"])
def test_the_projection_needs_about_log2_p_evaluations_not_a_bisection(batch, monkeypatch):
    """The bisection on μ evaluated every group's threshold ~54 times per projection (before
    it, a per-group Python loop: 47 of 55 s of a group-norm solve, #20); the breakpoint search
    needs ⌈log₂(p + 1)⌉ + 3 at most (2 when every breakpoint is evaluated in one pass)."""
    if not batch:
        monkeypatch.setattr(projections, "BATCH_MAX", 0)
    calls = []
    real = projections.group_thresholds
    monkeypatch.setattr(projections, "group_thresholds",
                        lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(2)
    groups = [list(range(k, min(k + 9, 101))) for k in range(0, 101, 9)]
    L = GroupLayout(groups, np.ones(len(groups)), 101)
    for _ in range(20):
        calls.clear()
        project_disjoint_group_ball(rng.normal(size=101) * 3, L, 2.0)
        assert 0 < len(calls) <= (2 if batch else math.ceil(math.log2(102)) + 3)


# ---------------------------------------------------------------------------- #17: the layers
def _imports(path):
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ("privfair." if node.level else "") + (node.module or "")
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}
    return out


@pytest.mark.parametrize("module", ["models/sparse.py", "models/erm.py"])
def test_the_decision_set_and_the_erm_import_no_backend(module):
    found = {m for m in _imports(ROOT / "privfair" / module) if "backends" in m}
    assert not found, f"privfair/{module} imports {sorted(found)}"


def test_privfair_erm_fit_runs_a_backend_instance():
    from privfair.backends import get
    from privfair.models.erm import fit

    X, y, _ = _data(n=400)
    ds = pf.SparseLinear(4, norm=pf.norms.l1(4), radius=3.0, l2=0.05, feature_bound=2.0)
    erm = pf.sparse.glm(X, y, ds)
    res = fit(erm, pf.DP(1.0, 1e-6, protect="row"), get("output_perturbation"), seed=0)
    again = pf.sparse.fit(erm, pf.DP(1.0, 1e-6, protect="row"), "output_perturbation", seed=0)
    np.testing.assert_array_equal(res.decision, again.decision)
    assert res.certificate.epsilon <= 1.0 + 1e-12
    with pytest.raises(InvalidInputError, match="method"):
        fit(erm, pf.DP(1.0, 1e-6, protect="row"), object())

"""Our DCP curvature agrees with cvxpy's wherever cvxpy's is known, and is sound on the box."""

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import privfair.expr as ex

K = 4
L = ex.Variable(K)
X = cp.Variable(K, nonneg=True)  # cvxpy knows ℓ ≥ 0; we know ℓ ∈ [0,1]


@st.composite
def leaves(draw):
    kind = draw(st.sampled_from(["coord", "coord", "slice", "const", "vector"]))
    if kind == "coord":
        return L[draw(st.integers(0, K - 1))]
    if kind == "slice":
        a = draw(st.integers(0, K - 2))
        return L[a:draw(st.integers(a + 1, K))]
    if kind == "const":
        return ex.Constant(draw(st.sampled_from([-1.0, -0.5, 0.5, 2.0])))
    return L


UNARY = ["neg", "scale", "abs", "pos", "square", "sum", "norm1", "norm2", "norm_inf"]
NARY = ["add", "sub", "maximum", "lse", "gmean", "hmean", "hstack"]


@st.composite
def expressions(draw, depth=4):
    if depth == 0 or draw(st.integers(0, 4)) == 0:
        return draw(leaves())
    op = draw(st.sampled_from(UNARY + NARY))
    a = draw(expressions(depth=depth - 1))
    if op in UNARY:
        return {
            "neg": lambda: -a,
            "scale": lambda: draw(st.sampled_from([-3.0, -1.0, 0.5, 2.0])) * a,
            "abs": lambda: ex.abs(a),
            "pos": lambda: ex.pos(a),
            "square": lambda: ex.square(a),
            "sum": lambda: ex.sum(a),
            "norm1": lambda: ex.norm1(a),
            "norm2": lambda: ex.norm2(a),
            "norm_inf": lambda: ex.norm_inf(a),
        }[op]()
    b = draw(expressions(depth=depth - 1))
    if op in ("add", "sub"):
        if a.shape and b.shape and a.shape != b.shape:
            b = ex.sum(b)
        return a + b if op == "add" else a - b
    if op == "maximum":
        return ex.maximum(a, b)
    if op == "lse":
        return ex.lse(a, b, eta=draw(st.sampled_from([0.5, 5.0])))
    if op == "gmean":
        return ex.gmean(a, b)
    if op == "hmean":
        return ex.hmean(a, b)
    return ex.hstack(a, b)


def _check_against_cvxpy(e):
    c = e.to_cvxpy(X)
    if c.is_affine():
        assert e.is_affine(), (e, e.curvature)
    if c.is_convex():
        assert e.is_convex(), (e, e.curvature)
    if c.is_concave():
        assert e.is_concave(), (e, e.curvature)
    # never a contradiction: we cannot call strictly concave what cvxpy proves convex, and v.v.
    if e.curvature == "convex":
        assert not (c.is_concave() and not c.is_affine()), e
    if e.curvature == "concave":
        assert not (c.is_convex() and not c.is_affine()), e


_RNG = np.random.default_rng(99)
_A, _B = _RNG.uniform(size=(40, K)), _RNG.uniform(size=(40, K))
_T = _RNG.uniform(size=(40, 1))


def _check_on_segments(e):
    """Jensen on random segments of the box, where our curvature claims hold."""
    if e.curvature not in ("convex", "concave", "affine"):
        return
    with np.errstate(all="ignore"):
        fa, fb, fm = e.value(_A), e.value(_B), e.value(_T * _A + (1 - _T) * _B)
    chord = _T * fa + (1 - _T) * fb if fa.ndim == 2 else _T[:, 0] * fa + (1 - _T[:, 0]) * fb
    ok = np.isfinite(fa) & np.isfinite(fb) & np.isfinite(fm)  # gmean/hmean outside their domain
    tol = 1e-9 * (1 + np.abs(chord))
    if e.is_convex():
        assert np.all((fm <= chord + tol)[ok]), e
    if e.is_concave():
        assert np.all((fm >= chord - tol)[ok]), e


@pytest.mark.slow
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          derandomize=True)
@given(expressions())
def test_curvature_agrees_with_cvxpy(e):
    _check_against_cvxpy(e)
    _check_on_segments(e)


def test_smax_is_unknown_and_never_convex():
    e = ex.smax(L[0], L[1], eta=10)
    assert e.curvature == "unknown"
    assert not e.is_convex() and not e.is_concave()
    assert any("smax" in r for r in e.unknown_reasons("curvature"))
    # the Boltzmann operator really is neither: t ↦ smax(t, 0) is concave for ηt > 2.4 and
    # convex near 0, so Jensen fails both ways on the box
    grid = np.linspace(0, 1, 101)[:, None]
    for (a, b), sign in (((1.0, 0.3), 1), ((0.0, 0.1), -1)):
        pa, pb = np.array([a, 0, 0, 0]), np.array([b, 0, 0, 0])
        fm = e.value(grid * pa + (1 - grid) * pb)
        chord = grid[:, 0] * e.value(pa) + (1 - grid[:, 0]) * e.value(pb)
        assert np.any(sign * (fm - chord) > 1e-6)


def test_smax_monotonicity_unknown_for_large_eta():
    e = ex.smax(L[0], L[1], eta=10)
    assert e.monotonicity()[:2] == [None, None]
    # smax is non-decreasing when eta * width of the range ≤ 1
    assert ex.smax(L[0], L[1], eta=1).monotonicity()[:2] == [1, 1]


def test_lse_is_convex_and_composes():
    assert ex.lse(L[0], L[1], eta=50).curvature == "convex"
    e = ex.lse(ex.abs(L[0] - L[1]), ex.abs(L[2] - L[3]), eta=50)
    assert e.curvature == "convex"
    assert e.to_cvxpy(cp.Variable(K)).is_convex()
    assert (e <= 0.02).is_dcp()
    assert ex.lse(-ex.abs(L[0] - L[1]), eta=5).curvature == "unknown"


@pytest.mark.parametrize("build, expected", [
    (lambda: L[0] + 2 * L[1] - 1, "affine"),
    (lambda: ex.Constant(2.0) * 3, "constant"),
    (lambda: ex.abs(ex.Constant(-2.0)) + 1, "constant"),
    (lambda: ex.square(L[0]), "convex"),
    (lambda: ex.square(-L[0]), "convex"),
    (lambda: ex.square(ex.abs(L[0] - L[1])), "convex"),           # abs ≥ 0: square increasing
    (lambda: ex.square(-ex.abs(L[0] - L[1])), "convex"),          # ≤ 0: square decreasing
    (lambda: ex.square(ex.abs(L[0] - L[1]) - 0.5), "unknown"),    # may cross 0
    (lambda: ex.square(ex.gmean(L[0], L[1])), "unknown"),         # convex ∘ concave
    (lambda: -ex.gmean(L), "convex"),
    (lambda: ex.hmean(L) + ex.gmean(L[0] + 1, L[1]), "concave"),
    (lambda: ex.gmean(1 - L[0], 1 - L[1]), "concave"),
    (lambda: ex.maximum(ex.abs(L[0] - L[1]), L[2]), "convex"),
    (lambda: ex.abs(ex.square(L[0]) + 1), "convex"),              # arg ≥ 1: abs increasing
    (lambda: ex.abs(ex.square(L[0]) - 1), "unknown"),             # = 1 - l0², concave in truth
    (lambda: np.array([1.0, -1.0]) * ex.abs(L[0:2]), "unknown"),
])
def test_curvature_table(build, expected):
    assert build().curvature == expected

"""sympy derives every atom's gradient (and the Hessians behind the smoothness constants)
symbolically; the numeric ``grad`` and the closed forms in the docstrings must agree."""

import numpy as np
import pytest
import sympy as sp

import privfair.expr as ex

K = 4
L = ex.Variable(K)
S = sp.symbols(f"l0:{K}", real=True)
ETA = 3


def _lse(ys, eta):
    return sp.log(sum(sp.exp(eta * y) for y in ys)) / eta


def _smax(ys, eta):
    return sum(y * sp.exp(eta * y) for y in ys) / sum(sp.exp(eta * y) for y in ys)


def _cases():
    l, s = L, S
    d01, d23 = s[0] - s[1], s[2] - s[3]
    return {
        "abs": (ex.abs(l[0] - l[1]), sp.Abs(d01)),
        "pos": (ex.pos(l[0] - l[1]), sp.Max(d01, 0)),
        "square": (ex.square(l[0] - 2 * l[1]), (s[0] - 2 * s[1]) ** 2),
        "maximum": (ex.maximum(l[0], l[1], l[2]), sp.Max(s[0], s[1], s[2])),
        "sum": (ex.sum(l), sum(s)),
        "affine": (3 * l[0] - l[2] / 2 + 1, 3 * s[0] - s[2] / 2 + 1),
        "norm1": (ex.norm1(l - 0.5), sum(sp.Abs(x - sp.Rational(1, 2)) for x in s)),
        "norm2": (ex.norm2(l - 0.5), sp.sqrt(sum((x - sp.Rational(1, 2)) ** 2 for x in s))),
        "norm_inf": (ex.norm_inf(l - 0.5), sp.Max(*[sp.Abs(x - sp.Rational(1, 2)) for x in s])),
        "lse": (ex.lse(l, eta=ETA), _lse(s, ETA)),
        "smax": (ex.smax(l, eta=ETA), _smax(s, ETA)),
        "gmean": (ex.gmean(l), sp.prod(s) ** sp.Rational(1, K)),
        "hmean": (ex.hmean(l), K / sum(1 / x for x in s)),
        "lse_abs_diff": (ex.lse(ex.abs(l[0] - l[1]), ex.abs(l[2] - l[3]), eta=ETA),
                         _lse([sp.Abs(d01), sp.Abs(d23)], ETA)),
        "smax_abs_diff": (ex.smax(ex.abs(l[0] - l[1]), ex.abs(l[2] - l[3]), eta=ETA),
                          _smax([sp.Abs(d01), sp.Abs(d23)], ETA)),
        "composite": (ex.square(ex.hmean(l[0], l[1] + 1)) - 2 * ex.gmean(l[2] + 1, l[3]),
                      (2 / (1 / s[0] + 1 / (s[1] + 1))) ** 2 - 2 * sp.sqrt((s[2] + 1) * s[3])),
    }


CASES = _cases()


@pytest.fixture(scope="module")
def points():
    # interior points: away from 0 and from ties, where every atom is differentiable
    rng = np.random.default_rng(7)
    return rng.uniform(0.05, 0.95, size=(25, K))


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_sympy(name, points):
    e, f = CASES[name]
    # scalar "math" printing: numpy's printer turns Max into a slow, fragile Piecewise
    modules = [{"Heaviside": lambda z, h=0.5: float(np.heaviside(z, h))}, "math"]
    grad_f = sp.lambdify(S, [sp.diff(f, x) for x in S], modules=modules)
    value_f = sp.lambdify(S, f, modules=modules)
    for x in points:
        expected = np.array(grad_f(*x), dtype=float)
        np.testing.assert_allclose(e.grad(x), expected, rtol=1e-9, atol=1e-10, err_msg=name)
        assert e.value(x) == pytest.approx(float(value_f(*x)), rel=1e-12, abs=1e-12)


def test_smax_hessian_closed_form():
    """∇²smax_ij = η p_i [δ_ij (2 + η d_i) − p_j (2 + η d_i + η d_j)] (used for its β)."""
    y = sp.symbols("y0:3", real=True)
    f = _smax(y, ETA)
    H = sp.lambdify(y, sp.hessian(f, y), modules="numpy")
    rng = np.random.default_rng(3)
    for v in rng.uniform(-1, 1, size=(10, 3)):
        p = np.exp(ETA * v) / np.exp(ETA * v).sum()
        d = v - p @ v
        closed = ETA * p[:, None] * (np.diag(2 + ETA * d)
                                     - p[None, :] * (2 + ETA * d[:, None] + ETA * d[None, :]))
        np.testing.assert_allclose(np.array(H(*v), dtype=float), closed, rtol=1e-9, atol=1e-12)


def test_lse_hessian_is_eta_times_softmax_covariance():
    y = sp.symbols("y0:3", real=True)
    H = sp.lambdify(y, sp.hessian(_lse(y, ETA), y), modules="numpy")
    for v in np.random.default_rng(4).uniform(-1, 1, size=(10, 3)):
        p = np.exp(ETA * v) / np.exp(ETA * v).sum()
        np.testing.assert_allclose(np.array(H(*v), dtype=float), ETA * (np.diag(p) - np.outer(p, p)),
                                   rtol=1e-9, atol=1e-12)


def test_hmean_gradient_closed_form():
    """∂hmean/∂y_j = n / (1 + y_j Σ_{k≠j} 1/y_k)² (the form behind its G and Lipschitz bound)."""
    y = sp.symbols("y0:3", positive=True)
    f = 3 / sum(1 / v for v in y)
    for j in range(3):
        T = sum(1 / y[k] for k in range(3) if k != j)
        assert sp.simplify(sp.diff(f, y[j]) - 3 / (1 + y[j] * T) ** 2) == 0


def test_gmean_hessian_closed_form():
    y = sp.symbols("y0:3", positive=True)
    g = sp.prod(y) ** sp.Rational(1, 3)
    H = sp.hessian(g, y)
    for i in range(3):
        for j in range(3):
            closed = g / (9 * y[i] * y[j]) - (g / (3 * y[i] ** 2) if i == j else 0)
            assert sp.simplify(H[i, j] - closed) == 0

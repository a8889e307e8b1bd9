"""Bad modeling input raises typed errors that name the field and the fix."""

import numpy as np
import pytest

import privfair.expr as ex
from privfair.errors import InvalidInputError, ModelingError, PrivfairError

L = ex.Variable(4, names=["fp[a]", "fp[b]", "tp[a]", "tp[b]"])


def _raises(exc, field, call, fix_word=None):
    with pytest.raises(exc) as info:
        call()
    err = info.value
    assert isinstance(err, PrivfairError)
    assert err.field == field
    assert err.fix, "every error names a fix"
    if fix_word:
        assert fix_word in err.fix
    return err


def test_product_of_two_statistics_is_refused():
    _raises(ModelingError, "product", lambda: L[0] * L[1], "constant")
    _raises(ModelingError, "product", lambda: ex.abs(L[0]) * L[1], "constant")
    _raises(ModelingError, "divisor", lambda: L[0] / L[1], "constant")
    _raises(ModelingError, "denominator", lambda: 1 / L[0], "constant")
    _raises(ModelingError, "power", lambda: L[0] ** 3, "square")
    # a product with a constant *expression* is fine
    assert (L[0] * ex.Constant(2.0)).curvature == "affine"


@pytest.mark.parametrize("eta", [0, -1.0, float("nan"), float("inf"), "50", None, True])
def test_bad_eta(eta):
    _raises(InvalidInputError, "eta", lambda: ex.lse(L[0], L[1], eta=eta), "eta")
    _raises(InvalidInputError, "eta", lambda: ex.smax(L[0], L[1], eta=eta), "eta")


def test_wrong_length_input_to_value_and_grad():
    e = ex.abs(L[0] - L[1])
    err = _raises(InvalidInputError, "l", lambda: e.value(np.zeros(3)), "K=4")
    assert "(3,)" in str(err)
    _raises(InvalidInputError, "l", lambda: e.grad(np.zeros(5)), "K=4")
    _raises(InvalidInputError, "l", lambda: e.value(np.zeros((2, 2, 4))))
    _raises(InvalidInputError, "l", lambda: e.value("abc"))


@pytest.mark.parametrize("key", [4, -5, [0, 9], slice(7, 9), (0, 1), "fp[c]", 1.5])
def test_indexing_out_of_range(key):
    _raises(InvalidInputError, "index", lambda: L[key])


def test_indexing_a_scalar():
    _raises(ModelingError, "index", lambda: ex.sum(L)[0])


def test_mixing_variables():
    other = ex.Variable(3)
    err = _raises(ModelingError, "variable", lambda: L[0] + other[0], "single pf.rates")
    assert "4" in str(err) and "3" in str(err)
    _raises(ModelingError, "variable", lambda: ex.maximum(L[0], ex.Variable(4)[0]))


def test_shape_mismatch():
    _raises(ModelingError, "operands of +", lambda: L[0:2] + L[0:3], "same length")
    _raises(ModelingError, "matrix", lambda: np.ones((2, 3)) @ L, "(r, m)")


def test_bad_norm_and_property_names():
    e = ex.abs(L[0] - L[1])
    _raises(InvalidInputError, "norm", lambda: e.lipschitz("l3"), "linf")
    _raises(InvalidInputError, "norm", lambda: e.smoothness(2), "l2")
    _raises(InvalidInputError, "prop", lambda: e.unknown_reasons("convexity"), "curvature")


def test_constants_must_be_finite_and_divisors_non_zero():
    _raises(InvalidInputError, "constant", lambda: L[0] + float("nan"), "finite")
    _raises(InvalidInputError, "constant", lambda: ex.Constant(np.ones((2, 2))))
    _raises(InvalidInputError, "divisor", lambda: L[0] / 0, "non-zero")
    _raises(InvalidInputError, "coefficient", lambda: L[0] * float("inf"), "finite")


def test_variable_arguments():
    _raises(InvalidInputError, "size", lambda: ex.Variable(0), "positive")
    _raises(InvalidInputError, "names", lambda: ex.Variable(2, names=["a"]), "one name")
    _raises(InvalidInputError, "names", lambda: ex.Variable(2, names=["a", "a"]), "unique")


def test_no_truth_value_and_no_strict_or_chained_comparisons():
    _raises(ModelingError, "truth value", lambda: bool(L[0]))
    _raises(ModelingError, "constraint", lambda: bool(L[0] <= 1), "two constraints")
    _raises(ModelingError, "constraint", lambda: 0 <= L[0] <= 1, "two constraints")
    _raises(ModelingError, "constraint", lambda: L[0] < 1, "<=")


def test_smax_has_no_cvxpy_form():
    cp = pytest.importorskip("cvxpy", reason="cvxpy is the test oracle")
    _raises(ModelingError, "smax", lambda: ex.smax(L[0], L[1], eta=5).to_cvxpy(cp.Variable(4)), "lse")
    _raises(ModelingError, "x", lambda: ex.abs(L[0]).to_cvxpy(cp.Variable(3)), "K=4")


def test_atoms_need_arguments():
    _raises(ModelingError, "maximum", lambda: ex.maximum())
    _raises(ModelingError, "lse", lambda: ex.lse(eta=1.0))
    _raises(ModelingError, "abs", lambda: ex.abs("fp"))


def test_equality_is_refused_with_the_fix():
    """``a == b`` used to be a silent identity test (False), so [a == b] reached Problem as
    [False] with an unrelated message; it is now an Equality that Problem refuses, naming
    pf.abs(a - b) <= tol.  An equality is not split into two inequalities: backends that
    tighten every constraint by a margin (g <= -tau) would find nothing feasible."""
    import privfair as pf

    eq = L[0] == L[1]
    assert isinstance(eq, ex.Equality) and repr(eq) == "fp[a] == fp[b]"
    assert isinstance(0.5 == L[2], ex.Equality) and isinstance(np.float64(0.5) == L[2], ex.Equality)
    for constraints in ([eq], [L[0] <= 0.1, L[2] == 0.5]):
        err = _raises(ModelingError, f"constraints[{len(constraints) - 1}]",
                      lambda: pf.Problem(pf.minimize(L[0]), constraints), "pf.abs(a - b) <= ")
        assert "equality constraints are not supported" in err.fix


def test_expressions_stay_hashable_and_containers_keep_identity():
    a, b = L[0], L[0]                      # two nodes, the same formula
    assert hash(a) == hash(a) and len({a, b}) == 2 and {a: 1}[a] == 1
    assert bool(a == a) and not bool(a == b) and a != b and not (a != a)
    items = [b, a]
    assert a in items and items.index(a) == 1
    items.remove(a)
    assert items == [b]
    assert (a == None) is False and (a == "fp[a]") is False  # noqa: E711

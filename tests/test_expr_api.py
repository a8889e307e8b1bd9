"""The public surface of privfair.expr: building, printing, evaluating, walking, exporting."""

import numpy as np
import pytest

import privfair.expr as ex

NAMES = ["fpr[Female]", "fpr[Male]", "tpr[Female]", "tpr[Male]", "err"]
L = ex.Variable(5, names=NAMES)


def test_repr_uses_coordinate_names():
    e = ex.lse(ex.abs(L["fpr[Female]"] - L["fpr[Male]"]), ex.abs(L[2] - L[3]), eta=50)
    assert repr(e) == "lse(abs(fpr[Female] - fpr[Male]), abs(tpr[Female] - tpr[Male]); eta=50)"
    assert str(2 * (L[0] + L[1]) - L[4] / 4) == "2 * (fpr[Female] + fpr[Male]) - err / 4"
    assert repr(L[[0, 1]]) == "[fpr[Female], fpr[Male]]"
    v = ex.Variable(8)
    assert repr(ex.lse(ex.abs(v[3] - v[7]), v[0:2], eta=5)) == "lse(abs(l[3] - l[7]), l[0:2]; eta=5)"
    assert repr(L[0] - 0.02) == "fpr[Female] - 0.02"
    assert repr(ex.smax(L[0], L[1], eta=2.5)) == "smax(fpr[Female], fpr[Male]; eta=2.5)"


def test_shapes_and_indexing():
    assert L.shape == (5,) and L[0].shape == () and L[1:3].shape == (2,)
    assert L[[0, 2, 4]].shape == (3,) and L[-1].support() == {4}
    assert L[np.array([True, False, True, False, False])].support() == {0, 2}
    assert ex.hstack(L[0], L[1:3], 1.0).shape == (4,)
    assert ex.sum(L[0:3]).shape == () and ex.maximum(L[0], L[1:4]).shape == ()
    assert (L[0:2] + 1).shape == (2,) and (L[0] + np.ones(3)).shape == (3,)
    assert (np.array([1.0, 2.0]) * L[0:2]).shape == (2,)
    assert len(L[0:3]) == 3 and [repr(x) for x in L[0:2]] == NAMES[:2]
    assert ex.sum([L[0], L[1]]).value(np.arange(5) / 10) == pytest.approx(0.1)


def test_value_and_grad_numpy_and_batches():
    e = ex.lse(ex.abs(L[0] - L[1]), ex.abs(L[2] - L[3]), eta=10)
    x = np.array([0.1, 0.5, 0.3, 0.2, 0.0])
    y = np.array([0.4, 0.4, 0.4, 0.9, 1.0])
    v = e.value(x)
    assert isinstance(v, float)
    ref = np.log(np.exp(10 * 0.4) + np.exp(10 * 0.1)) / 10
    assert v == pytest.approx(ref)
    assert e.grad(x).shape == (5,) and e.grad(x)[4] == 0
    batch = np.stack([x, y])
    np.testing.assert_allclose(e.value(batch), [e.value(x), e.value(y)])
    np.testing.assert_allclose(e.grad(batch), np.stack([e.grad(x), e.grad(y)]))
    vec = ex.hstack(ex.square(L[0]), 2 * L[1])
    np.testing.assert_allclose(vec.value(x), [0.01, 1.0])
    np.testing.assert_allclose(vec.grad(x), [[0.2, 0, 0, 0, 0], [0, 2, 0, 0, 0]])
    assert ex.Constant(3.0).value(x) == 3.0 and np.all(ex.Constant(3.0).grad(x) == 0)


@pytest.mark.slow
def test_torch_value_and_grad_match_numpy():
    torch = pytest.importorskip("torch", reason="torch is an optional extra")
    exprs = [ex.lse(ex.abs(L[0] - L[1]), ex.abs(L[2] - L[3]), eta=10),
             ex.smax(L[0:4], eta=3), ex.gmean(L + 0.5) - ex.hmean(L[0:2]),
             ex.norm2(L - 0.5) + ex.norm_inf(L) + ex.norm1(L) + ex.pos(L[4] - 0.5),
             ex.maximum(L) + ex.sum(ex.square(L)) / 2]
    x = np.array([0.1, 0.5, 0.3, 0.2, 0.7])
    for e in exprs:
        t = torch.tensor(x, dtype=torch.float64)
        v, g = e.value(t), e.grad(t)
        assert torch.is_tensor(v) and torch.is_tensor(g) and g.shape == (5,)
        assert float(v) == pytest.approx(e.value(x), rel=1e-12)
        np.testing.assert_allclose(g.numpy(), e.grad(x), rtol=1e-10, atol=1e-12)
        tb = torch.tensor(np.stack([x, 1 - x]), dtype=torch.float32)
        assert e.value(tb).shape == (2,) and e.value(tb).dtype == torch.float32
        np.testing.assert_allclose(e.grad(tb)[1].numpy(), e.grad(1 - x), rtol=1e-4, atol=1e-5)
    # gradients agree with torch autograd
    t = torch.tensor(x, requires_grad=True)
    out = exprs[0].value(t)
    out.backward()
    np.testing.assert_allclose(t.grad.numpy(), exprs[0].grad(x), rtol=1e-10)


def test_to_cvxpy_matches_values():
    cp = pytest.importorskip("cvxpy", reason="cvxpy is the test oracle")
    X = cp.Variable(5)
    x = np.array([0.1, 0.5, 0.3, 0.2, 0.7])
    X.value = x
    exprs = [ex.lse(ex.abs(L[0] - L[1]), ex.abs(L[2] - L[3]), eta=10), ex.gmean(L + 0.1),
             ex.hmean(L[0:3]), ex.norm2(L - 0.5) - ex.norm1(L[1:]) / 3, ex.maximum(L[0], L[2:4]),
             np.ones((2, 5)) @ L, ex.sum(np.arange(5.0) * L), ex.pos(L[0] - L[1]) + ex.square(L[4])]
    for e in exprs:
        np.testing.assert_allclose(e.to_cvxpy(X).value, e.value(x), rtol=1e-6)


def test_constraints_normalise_to_expr_le_zero():
    g = ex.abs(L[0] - L[1])
    c = g <= 0.02
    assert isinstance(c, ex.Constraint) and c.sense == "<="
    x = np.array([0.1, 0.5, 0.3, 0.2, 0.7])
    assert c.expr.value(x) == pytest.approx(0.4 - 0.02)
    c2 = 0.02 >= g                           # reflected: same normal form
    assert c2.expr.value(x) == pytest.approx(0.4 - 0.02)
    c3 = L[4] >= 0.5
    assert c3.expr.value(x) == pytest.approx(0.5 - 0.7) and c3.sense == ">="
    c4 = np.float64(0.3) <= L[0] - 1         # numpy scalars defer to the expression
    assert isinstance(c4, ex.Constraint) and c4.expr.value(x) == pytest.approx(0.3 - (0.1 - 1))
    assert c.violation(x) == pytest.approx(0.38) and c3.violation(x) == 0.0
    assert repr(c) == "abs(fpr[Female] - fpr[Male]) <= 0.02"
    # expressions and constraints are hashable (by identity); == builds an Equality whose
    # truth value is identity (tests/test_expr_errors.py: Problem refuses it)
    assert bool(g == g) is True and bool(g == ex.abs(L[0] - L[1])) is False
    assert len({g, c, c2}) == 3


def test_walking_the_tree_and_with_args():
    e = ex.lse(ex.abs(L[0] - L[1]), L[2], eta=7)
    assert isinstance(e, ex.Lse) and e.eta == 7
    assert isinstance(e.args[0], ex.Abs) and isinstance(e.args[0].args[0], ex.Add)
    assert isinstance(e.args[0].args[0].args[1], ex.Neg)
    assert isinstance(e.args[1], ex.Index) and e.args[1].args[0] is L and L.args == ()
    u = e.args[0].args[0]
    rebuilt = e.with_args([u, -u, e.args[1]])
    assert isinstance(rebuilt, ex.Lse) and rebuilt.eta == 7 and len(rebuilt.args) == 3
    assert rebuilt.smoothness("linf") is not None and e.smoothness("linf") is None
    for node in [2 * L[0], L[0] / 2, ex.sum(L), ex.hstack(L[0], L[1]), ex.square(L[0]),
                 np.eye(5) @ L, L[1:3]]:
        assert repr(node.with_args(node.args)) == repr(node)


def test_support_monotonicity_and_reasons():
    e = ex.maximum(L[0], L[1] + 2)               # l0 can never be the max on the box
    assert e.support() == {1} and e.monotonicity() == [0, 1, 0, 0, 0]
    assert (L[0] - L[1]).monotonicity() == [1, -1, 0, 0, 0]
    assert ex.abs(L[0] - L[1]).monotonicity()[:2] == [None, None]
    assert ex.hmean(1 - L[0], 1 - L[1]).monotonicity()[:2] == [-1, -1]
    assert ex.lse(L[0], L[3], eta=3).support() == {0, 3}
    bad = ex.lse(ex.abs(L[0] - L[1]), ex.gmean(L[2], L[3]), eta=5) + ex.smax(L[0], L[4], eta=9)
    assert bad.curvature == "unknown"
    reasons = bad.unknown_reasons("curvature")
    assert len(reasons) == 2 and any("smax" in r for r in reasons) and any("gmean" in r for r in reasons)
    lip = bad.unknown_reasons("lipschitz")
    assert len(lip) == 1 and lip[0].startswith("gmean(")
    smooth = bad.unknown_reasons("smoothness")
    assert any(r.startswith("abs(") for r in smooth)
    assert ex.sum(L).unknown_reasons("curvature") == []


def test_range_of_common_fairness_expressions():
    gap = ex.abs(L[0] - L[1])
    assert gap.range() == (0.0, 1.0)
    lo, hi = ex.lse(gap, ex.abs(L[2] - L[3]), eta=50).range()
    assert lo == pytest.approx(np.log(2) / 50) and hi == pytest.approx(1 + np.log(2) / 50)  # both gaps can be 1
    assert ex.gmean(1 - L[0], L[2]).range() == (0.0, 1.0)
    lo, hi = (L[0:2] * 2).range()
    assert np.all(lo == 0) and np.all(hi == 2)

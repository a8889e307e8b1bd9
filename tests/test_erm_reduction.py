"""backends/erm/reduction.py reads the one coefficient map (issue #17): its weights are
Rates.cell_coefficients in the sum form at the denominators it chooses, and its only policy is
that choice (public n·q, clamped, empirical), with the group-mass bound asked for exactly when a
conditional rate is weighed."""

import numpy as np
import pytest

import privfair as pf
from privfair.backends.erm import reduction as E
from privfair.errors import InvalidInputError


def _rates(bound):
    rng = np.random.default_rng(11)
    n = 400
    a = rng.choice(["a", "b"], n)
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    data = pf.Dataset(X, y, sensitive=a, group_names=["a", "b"])
    return pf.rates(pf.LinearClassifier(2, radius=2.0), data, surrogate="logistic",
                    group_mass_bound=bound)


def test_the_erm_weights_are_the_public_map_at_the_chosen_denominators():
    rt = _rates(0.05)
    r = np.random.default_rng(0).normal(size=rt.K)
    q, qg = rt.group_mass()
    for how, den in (("public", (rt.n * q, rt.n * qg)), ("clamped", rt.denominators()),
                     ("empirical", (rt.n * q, rt.n * qg))):
        got = E.cell_coefficients(rt, r, how)
        np.testing.assert_array_equal(got, rt.cell_coefficients(r, denominators=den, times_n=True))
        np.testing.assert_allclose(got / rt.n, rt.cell_coefficients(r, denominators=den),
                                   rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(E.row_coefficients(rt, r, how),
                                      rt.row_coefficients(r, denominators=den))
    with pytest.raises(InvalidInputError, match="denominators"):
        E.cell_coefficients(rt, r, "exact")


def test_the_group_mass_bound_is_needed_only_for_conditional_weights():
    rt = _rates(None)
    joint_only = np.zeros(rt.K)
    joint_only[[rt.fp.index("a"), rt.fn.index("b")]] = [1.0, 2.0]
    assert not E.uses_conditional_weights(rt, joint_only)
    a = E.cell_coefficients(rt, joint_only, "public")       # no q needed: joint weights only
    assert a[0, 0] == 1.0 and a[1, 1] == -2.0 and a[0, 1] == 0.0 and a[1, 0] == 0.0
    cond = joint_only.copy()
    cond[rt.fpr.index("a")] = 0.5
    assert E.uses_conditional_weights(rt, cond)
    with pytest.raises(E.NeedsGroupMass):
        E.cell_coefficients(rt, cond, "public")
    # ε = ∞: the empirical denominators max(n_{g,y}, 1) stand in for the unknown bound
    np.testing.assert_array_equal(E.denominators_for(rt, cond, "empirical")[0],
                                  np.maximum(rt.cell_counts, 1.0))

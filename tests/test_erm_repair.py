"""The constraint form's repair mixture (``lagrange_run``, backends/erm/constraint.py) holds decisions only.

Issue #20: without a probe ERM (``probe_share = 0``, the default) the released ũ₀ is the
statistic of the rule ŷ = y, which reads the labels and is no decision.  The repair used it as a
mixture partner anyway: the result held ``np.asarray(None, float)`` (a 0-d NaN) as a decision,
the solve succeeded, and every ``predict*``/``metrics`` call raised afterwards.
"""

import numpy as np

import privfair as pf


def _labels_far_from_predictions(n=5000, seed=0):
    # y depends on the group, which is not a feature: the labels' selection gap is large
    # (≈ −0.5, feasible for the constraint below) while a rule of X has a gap ≈ 0 (infeasible
    # at level 0 once the release margin is subtracted), and the constant rule (gap 0) is
    # infeasible too — exactly where the labels' statistic used to be taken as a partner
    rng = np.random.default_rng(seed)
    a = rng.choice(["a", "b"], n)
    X = rng.normal(size=(n, 5)) * 0.5
    y = (X[:, 0] - 1.0 * (a == "a") + rng.logistic(size=n) * 0.3 > -0.5).astype(int)
    return pf.Dataset(X, y, a, group_names=["a", "b"], labels=[0, 1])


def test_row_private_selection_constraint_result_predicts():
    data = _labels_far_from_predictions()
    ds = pf.SparseLinear(5, norm=pf.norms.l1(5), radius=4.0, l2=0.1, intercept_bound=2.0)
    r = pf.rates(ds, data, surrogate="logistic", group_mass_bound=0.05)
    prob = pf.Problem(pf.minimize(r.error()), [r.selection["a"] - r.selection["b"] <= 0.0])
    for seed in (0, 1):
        # the trained mixture is what is checked here, so a held-out violation returns it
        # (seed 0's 1,000 held-out rows put its gap 2.5 s.e. above the population's 0.001)
        res = prob.solve(pf.DP(4.0, 1e-6, protect="row"), backend="output_perturbation",
                         seed=seed, progress=False, holdout_on_violation="warn")
        assert all(np.shape(t) == (ds.P,) and np.isfinite(t).all() for t in res.decisions)
        repair = [t for t in res.trace if "repair" in t][-1]
        assert repair["repair"] != "probe θ₀"            # there was no probe to mix with
        assert res.predict(data.X).shape == (data.n,)
        assert res.predict_proba(data.X).shape == (data.n,)
        assert 0.0 <= res.metrics(data)["error"] <= 1.0

"""lagrangian_sgda (backends/lagrangian): private Lagrangian SGDA over differentiable decisions.

Fast: both privacy units solve, the certificate is the accountant's composition of the one
scheduled event, the plan is ranked first for a LinearClassifier, the constraint split, the
numpy path without torch.  Statistical (slow): the neighbouring-dataset tester passes the
honest backend and refutes the half-noise control under both units; a multi-class, 8-group
problem (TorchModel) reduces the violation against the unconstrained fit.
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

import privfair as pf
from privfair.backends import BACKENDS
from privfair.privacy import Accountant
from privfair.privacy.testing import check_dp_heldout

from _synthetic import binary, multiclass, released_runs


def _problem(data, level=0.05):
    r = pf.rates(pf.LinearClassifier(data.n_features, radius=1.0), data)
    return pf.Problem(pf.Minimize(r.error()),
                      [pf.abs(r.selection["a"] - r.selection["b"]) <= level])


def _solve(prob, privacy, **opts):
    import warnings

    with warnings.catch_warnings():      # the held-out check's warnings are not under test here
        warnings.simplefilter("ignore")
        opts.setdefault("epochs", 2)
        return prob.solve(privacy, backend="lagrangian_sgda", seed=0, progress=False, **opts)


@pytest.mark.parametrize("unit", ["row", "sensitive"])
def test_solves_under_both_units(unit):
    data = binary(3000, 0)
    prob = _problem(data)
    res = _solve(prob, pf.DP(1.0, 1e-5, protect=unit))
    assert res.backend == "lagrangian_sgda"
    assert res.certificate.epsilon <= 1.0 * (1 + 1e-9)
    assert res.info["unit"] == unit
    assert len(res.decisions) == len(res.weights) >= 1
    p = res.predict_proba(data.X)
    assert p.shape == (data.n,) and np.all((0 <= p) & (p <= 1))
    # one λ per one-sided piece of |gap| ≤ level, never negative
    assert len(res.info["lambda"]) == 2 and min(res.info["lambda"]) >= 0


@pytest.mark.parametrize("unit", ["row", "sensitive"])
def test_certificate_is_the_accountants_composition_of_every_release(unit):
    data = binary(2000, 1)
    prob = _problem(data)
    privacy = pf.DP(1.0, 1e-5, protect=unit)
    res = _solve(prob, privacy)
    plan = res.plan
    events = plan.schedule.events()
    # a DP problem trains the cost-sensitive recipe: under "row" its clip scale is a private
    # median (an exponential mechanism before the steps); under "sensitive" x is public
    if unit == "row":
        assert [e.mechanism for e in events] == ["exponential", "subsampled_gaussian"]
        assert plan.params["median_epsilon"] > 0
        assert events[0].epsilon == pytest.approx(plan.params["median_epsilon"])
        assert any(e.mechanism == "exponential" and e.epsilon == events[0].epsilon
                   for e in res.certificate.releases)
    else:
        assert [e.mechanism for e in events] == ["subsampled_gaussian"]
    steps = events[-1]
    assert steps.count == plan.params["T"]
    assert steps.sampling_rate == plan.params["sampling_rate"]
    assert steps.noise_multiplier == pytest.approx(plan.params["noise_multiplier"])
    # the certificate lists exactly the scheduled releases (the held-out check, if any, is a
    # parallel step on other rows: its own certificate)
    backend_events = [e for e in res.certificate.releases if e.kind == "subsampled_gaussian"]
    assert [(e.count, e.scale, e.sampling_rate) for e in backend_events] == \
        [(e.count, e.scale, e.sampling_rate) for e in events[-1:]]
    acc = Accountant(delta=privacy.delta)
    acc.extend(events)
    total = acc.total(privacy.delta)
    assert total.epsilon <= privacy.epsilon * (1 + 1e-9)
    assert res.certificate.epsilon == pytest.approx(total.epsilon, rel=1e-6)


def test_ranked_first_for_a_linear_classifier_with_a_reason():
    data = binary(2000, 2)
    plans = _problem(data).plan(pf.DP(1.0, 1e-5, protect="row"))
    assert plans.chosen.backend == "lagrangian_sgda"
    assert plans.chosen.rank == 0 and plans.chosen.rank_reason
    assert math.isinf(plans.chosen.predicted_excess_risk)
    # under protect="sensitive" with two groups proxy_reductions goes first (its plans rank 0
    # too, its priority is earlier: docs/lagrangian.md, *Proxy reductions*); lagrangian_sgda
    # is next, ranked first among the rest
    plans = _problem(data).plan(pf.DP(1.0, 1e-5, protect="sensitive"))
    assert [p.backend for p in plans.ranked[:2]] == ["proxy_reductions", "lagrangian_sgda"]
    assert plans.ranked[1].rank == 0


def test_refuses_pure_dp_and_finite_sets():
    data = binary(500, 3)
    prob = _problem(data)
    b = BACKENDS["lagrangian_sgda"]
    v = b.accepts(prob, prob.analyze(pf.DP(1.0, 0.0, protect="row")))
    assert not v and "δ > 0" in v.reason
    r = pf.rates(pf.Thresholds([0.0, 1.0], score=0), data)
    p2 = pf.Problem(pf.Minimize(r.error()))
    v = b.accepts(p2, p2.analyze(pf.DP(1.0, 1e-5, protect="sensitive")))
    assert not v and "differentiable" in v.reason and "Thresholds" in v.reason


def test_a_multi_class_linear_classifier_is_refused_with_the_torch_path(monkeypatch):
    """L = 3 labels with pf.LinearClassifier: the differentiable backends refuse with the
    TorchModel path, and where torch is not installed (the README's install) lagrangian_sgda
    says how to get it — the one message of ``multiclass_hint``, which sgda shares.  Control:
    with torch importable the install hint is not given."""
    import importlib.util

    rng = np.random.default_rng(0)
    data = pf.Dataset(rng.normal(size=(300, 2)), rng.integers(0, 3, 300),
                      rng.choice(["a", "b"], 300), group_names=["a", "b"], labels=[0, 1, 2])
    r = pf.rates(pf.LinearClassifier(2), data)
    prob = pf.Problem(pf.Minimize(r.error()))
    an = prob.analyze(pf.DP(1.0, 1e-5, protect="row"))
    real = importlib.util.find_spec

    def reasons(backends):
        return [BACKENDS[b].accepts(prob, an).reason for b in backends]

    # sgda refuses without torch before it reads the labels ("needs torch …")
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    for why in reasons(["lagrangian_sgda"]):
        assert "pf.TorchModel(torch.nn.Linear(d, L), d, L)" in why and "pip install torch" in why
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "torch" else real(name, *a))
    has_torch = real("torch") is not None
    for why in reasons(["lagrangian_sgda"] + (["sgda"] if has_torch else [])):
        assert "pf.TorchModel" in why and "pip install" not in why


def test_split_pieces_bound_the_constraint():
    from privfair.backends.lagrangian.split import split

    data = binary(500, 4)
    r = pf.rates(pf.LinearClassifier(data.n_features), data)
    cons = [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.01,
            pf.maximum(pf.abs(r.fpr["a"] - r.fpr["b"]), pf.abs(r.tpr["a"] - r.tpr["b"])) <= 0.02,
            pf.lse(pf.abs(r.fpr["a"] - r.fpr["b"]), pf.abs(r.tpr["a"] - r.tpr["b"]), eta=50)
            <= 0.02]
    rng = np.random.default_rng(0)
    for c, k in zip(cons, (2, 4, 4)):
        pieces = split(c.expr)
        assert len(pieces) == k
        for _ in range(50):
            ell = rng.random(r.K)
            gmax = max(float(p.value(ell)) for p in pieces)
            if k == 4 and "lse" in str(c.expr):
                assert gmax >= float(c.expr.value(ell)) - 1e-12     # sufficient: never looser
            else:
                assert gmax == pytest.approx(float(c.expr.value(ell)))


def test_constraint_reduces_the_violation_non_privately():
    data = binary(4000, 5)
    held = binary(4000, 6)
    prob = _problem(data, level=0.01)
    r = prob.rates
    free = pf.Problem(pf.Minimize(r.error()))
    opts = dict(epochs=10)
    fair = _solve(prob, pf.DP(math.inf, protect="row"), **opts).metrics(held)
    base = _solve(free, pf.DP(math.inf, protect="row"), **opts).metrics(held)
    assert fair["dp_violation"] < 0.5 * base["dp_violation"]


#: a fresh interpreter's two-group problem: ``setup`` runs after the imports, ``decisions`` is
#: the decision set's expression, ``solve`` extra solve arguments; prints ``show``
_FRESH = """
import sys, warnings
import numpy as np, privfair as pf
{setup}
rng = np.random.default_rng(0)
n = 1500
a = rng.choice(["a", "b"], n)
y = rng.binomial(1, np.where(a == "a", 0.5, 0.3))
X = np.column_stack([y + rng.normal(size=n), rng.normal(size=n)])
d = pf.Dataset(X, y, sensitive=a, group_names=["a", "b"])
r = pf.rates({decisions}, d)
prob = pf.Problem(pf.Minimize(r.error()), [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.05])
res = prob.solve(pf.DP(1.0, 1e-5, protect="row"), seed=0, progress=False{solve})
print({show})
"""


def _fresh_solve(decisions, setup='warnings.simplefilter("ignore")', solve="", show="res.backend"):
    """The last line a fresh interpreter prints after solving :data:`_FRESH`."""
    code = _FRESH.format(setup=setup, decisions=decisions, solve=solve, show=show)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-1]


def test_linear_classifier_solves_without_torch():
    """The numpy path never imports torch, so it runs on the README's install (no torch):
    a fresh interpreter solves with backend='auto' and torch is still not imported after.
    (Blocking the import outright with sys.modules['torch'] = None breaks scipy's array-API
    probe, which reads sys.modules['torch'] — a limitation of the harness, not of privfair.)"""
    got = _fresh_solve("pf.LinearClassifier(2)", show='res.backend, "torch" in sys.modules')
    assert got == "lagrangian_sgda False"


def test_torch_model_solves_without_torchs_read_only_array_warning():
    """A Dataset's arrays are read-only; handing them to torch without a copy makes torch warn
    ("The given NumPy array is not writable") to the user, and under ``-W error`` the planner
    turns that warning into a charged failure.  torch warns once per process, so a fresh
    interpreter runs the TorchModel path with that one warning made an error."""
    pytest.importorskip("torch", reason="pf.TorchModel needs the optional torch extra")
    setup = ('import torch; warnings.simplefilter("ignore"); '
             'warnings.filterwarnings("error", message="The given NumPy array is not writable")')
    got = _fresh_solve("pf.TorchModel(torch.nn.Linear(2, 2), n_features=2, n_classes=2)",
                       setup=setup, solve=', backend="lagrangian_sgda", epochs=1')
    assert got == "lagrangian_sgda"


# ------------------------------------------------------------------ neighbouring datasets
def _pair(unit):
    """100 rows, one feature; D′ changes row 0 (x = −1, y = 0, group a): its group
    (sensitive) or its group and label (row: the whole record replaced).  Enough rows that the
    released rates sit far from 0, where ℓ̂'s clipping at 0 would hide the shift."""
    x = np.linspace(-1, 1, 100)[:, None]
    y = np.array([0, 1] * 50)
    a = np.array(["a"] * 50 + ["b"] * 50)
    D = pf.Dataset(x, y, sensitive=a, group_names=["a", "b"])
    a2, y2 = a.copy(), y.copy()
    a2[0] = "b"
    if unit == "row":
        y2[0] = 1
    return D, pf.Dataset(x, y2, sensitive=a2, group_names=["a", "b"])


def _runs(unit, runs, multiplier=1.0):
    """One full-batch step (T = 1, q = 1) on D and D′, released output fixed in advance.

    ``row``: the released θ (``output="last"``, a ball of radius 100 so that nothing is
    rescaled), almost all of the release on the gradient block (histogram share 0.02), clip 0.5:
    row 0 (x = −1) has the cross-entropy gradient ±0.5·(x, 1), norm 0.71 > 0.5, so its clipped
    contribution flips sign with its label — the full substitution shift 2C the event charges.
    ``sensitive``: at step 1 λ = 0 and the error's coefficients do not depend on the group, so
    the gradient holds nothing private; the released histogram does (``info['rates_estimate']``,
    its joint block; histogram share 0.98)."""
    b = BACKENDS["lagrangian_sgda"]
    privacy = pf.DP(1.0, 1e-2, protect=unit)
    opts = dict(batch_size=100, epochs=1, output="last")
    # "sensitive": its split steps (the centred histogram); the row steps it runs by default
    # are the "row" case's, whose neighbours include every pair that differs in one group
    opts.update(dict(hist_share=0.02, clip=0.5) if unit == "row"
                else dict(hist_share=0.98, sensitive_algorithm="split"))
    out = []
    for D in _pair(unit):
        r = pf.rates(pf.LinearClassifier(1, radius=100.0), D)
        prob = pf.Problem(pf.Minimize(r.error()),
                          [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.1])
        plan = b.plan(prob, prob.analyze(privacy), privacy, opts)
        assert plan.params["T"] == 1 and plan.params["sampling_rate"] == 1.0
        K = r.K_joint
        out.append(released_runs(b, plan, runs, lambda res: res.decisions[0] if unit == "row"
                                 else res.info["rates_estimate"][:K], multiplier))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("unit", ["row", "sensitive"])
def test_neighbouring_datasets_pass_and_the_half_noise_control_is_refuted(unit):
    # δ = 0.01: with half the noise a Gaussian claimed (1, 0.01) leaks δ(1) ≈ 0.15 on its
    # best event — refutable at 3000 runs (at δ = 1e-3 it would leak only 0.057)
    A, B = _runs(unit, 3000)
    honest = check_dp_heldout(A, B, 1.0, 1e-2)
    assert honest.passed, honest
    # sensitive: at θ₀ = 0 row 0's soft prediction is (½, ½), ‖p‖ = 1/√2, so the histogram
    # shows 71% of the shift the event charges for (‖p‖ ≤ 1); its control takes a quarter of
    # the noise (leak ≈ 2.8× the claim's μ; half the noise leaks only ≈ 0.05 > δ)
    A, B = _runs(unit, 3000, multiplier=0.5 if unit == "row" else 0.25)
    control = check_dp_heldout(A, B, 1.0, 1e-2)
    assert not control.passed, control


# ------------------------------------------------------------------ multi-class, 8 groups
@pytest.mark.slow
def test_multiclass_eight_groups_reduce_the_violation():
    torch = pytest.importorskip("torch", reason="pf.TorchModel needs the optional torch extra")
    train, held = multiclass(6000, 0), multiclass(6000, 1)

    def model():
        torch.manual_seed(0)
        return torch.nn.Linear(3, 3)

    C = pf.TorchModel(model, n_features=3, n_classes=3)
    r = pf.rates(C, train)
    gaps = [pf.abs(r.rate(str(g), y, k) - r.rate("1", y, k))
            for g in range(8) if g != 1 for y in range(3) for k in range(3)]
    fair = pf.Problem(pf.Minimize(r.error()), [pf.maximum(*gaps) <= 0.05])
    free = pf.Problem(pf.Minimize(r.error()))
    privacy = pf.DP(2.0, 1e-5, protect="row")
    m_fair = _solve(fair, privacy, epochs=6).metrics(held)
    m_free = _solve(free, privacy, epochs=6).metrics(held)
    assert m_fair["eo_violation"] < m_free["eo_violation"]
    assert m_fair["error"] < 2 / 3                 # better than guessing among 3 labels


def test_dual_projection_bounds_the_total_multiplier():
    """λ is projected on {λ ≥ 0, ‖λ‖₁ ≤ λ_max} (the default): J one-sided pieces cannot add up
    to J·λ_max and drown the objective; the box keeps each λ_j ≤ λ_max."""
    from privfair.backends.lagrangian.solver import dual_project

    rng = np.random.default_rng(0)
    for _ in range(50):
        v = rng.normal(size=252) * 30
        lam = dual_project(v, 100.0)
        assert np.all(lam >= 0) and lam.sum() <= 100.0 * (1 + 1e-12)
        # the Euclidean projection: no point of the set is closer (checked against the clip,
        # a feasible point after rescaling)
        w = np.maximum(v, 0)
        w = w * min(1.0, 100.0 / max(w.sum(), 1e-300))
        assert np.linalg.norm(lam - v) <= np.linalg.norm(w - v) + 1e-9
        box = dual_project(v, 100.0, "box")
        assert np.all((0 <= box) & (box <= 100.0))
    small = np.array([3.0, -1.0, 2.0])
    assert dual_project(small, 100.0).tolist() == [3.0, 0.0, 2.0]     # inside: only [·]₊


@pytest.mark.parametrize("field,value", [("dual_ball", "l2"), ("normalize", 1),
                                         ("dual_scale", "yes")])
def test_bad_dual_options_raise_a_typed_error_naming_the_field(field, value):
    from privfair.errors import InvalidInputError

    prob = _problem(binary(500, 7))
    privacy = pf.DP(1.0, 1e-5, protect="row")
    with pytest.raises(InvalidInputError, match=field):
        BACKENDS["lagrangian_sgda"].plan(prob, prob.analyze(privacy), privacy, {field: value})


@pytest.mark.parametrize("delta", [1e-12, 1e-14])
def test_plans_at_the_default_delta_of_a_million_rows(delta):
    """δ = 1/n² at n ≥ 10⁶ is below PLD's range (1e-10): the noise multiplier was fitted with
    PLD only, found no scale, and `auto` failed the whole solve (#19).  Every rule is tried now
    (RDP applies there), and the noise grows as δ shrinks."""
    prob = _problem(binary(2000, 0))
    z = {}
    for d in (1e-9, delta):
        plans = prob.plan(pf.DP(1.0, d, protect="row"))
        assert plans.chosen.backend == "lagrangian_sgda"
        z[d] = plans.chosen.params["noise_multiplier"]
    assert z[delta] > z[1e-9]


def test_a_plan_time_privacy_refusal_under_auto_falls_to_the_next_backend(monkeypatch):
    from privfair.errors import InvalidPrivacyError

    prob = _problem(binary(2000, 0))

    def no_scale(*args, **kwargs):
        raise InvalidPrivacyError("epsilon", 1.0, "no positive noise scale fits (test)")

    monkeypatch.setattr(BACKENDS["lagrangian_sgda"], "plan", no_scale)
    plans = prob.plan(pf.DP(1.0, 1e-6, protect="sensitive"))
    assert "lagrangian_sgda" in plans.refused and "noise scale" in plans.refused["lagrangian_sgda"]
    assert all(p.backend != "lagrangian_sgda" for p in plans.ranked)
    with pytest.raises(InvalidPrivacyError):          # asked for by name: its own error
        prob.plan(pf.DP(1.0, 1e-6, protect="sensitive"), backend="lagrangian_sgda")


def test_output_average_is_the_mean_of_the_mixtures_checkpoints_not_the_last_iterate():
    """``output="average"`` releases the mean θ of the checkpoints the mixture reads (before,
    it read one checkpoint and so released the last iterate).  A radius-100 ball leaves the
    released θ unscaled, so the mean is comparable; the same seed gives the same trajectory."""
    import warnings

    d = binary(600, 0)
    r = pf.rates(pf.LinearClassifier(d.n_features, radius=100.0), d)
    prob = pf.Problem(pf.Minimize(r.error()),
                      [pf.abs(r.selection[d.groups[0]] - r.selection[d.groups[1]]) <= 0.05])
    out = {}
    for o in ("mixture", "average", "last"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[o] = prob.solve(pf.DP(1.0, 1e-5, protect="row"), backend="lagrangian_sgda",
                                seed=3, progress=False, output=o, holdout=0)
    mix = np.mean([np.asarray(t) for t in out["mixture"].decisions], axis=0)
    avg, last = np.asarray(out["average"].decisions[0]), np.asarray(out["last"].decisions[0])
    assert len(out["mixture"].decisions) > 1 and len(out["average"].decisions) == 1
    assert out["average"].info["checkpoint_steps"] == out["mixture"].info["checkpoint_steps"]
    np.testing.assert_allclose(avg, mix, atol=1e-12)
    assert np.abs(last - mix).max() > 1e-3          # the control: the last iterate is not it


@pytest.mark.parametrize("protect", ["row", "sensitive"])
def test_the_released_label_counts_estimate_the_training_rows_labels(protect):
    """``info["label_counts_estimate"]``: the T released histograms' label margins / (T·q) —
    post-processing — estimate the training rows per label (the held-out floor chooses its
    constant with them under protect="row")."""
    data = binary(6000, seed=4)
    res = _solve(_problem(data), pf.DP(1.0, 1e-6, protect=protect), holdout=0, epochs=10)
    est = np.asarray(res.info["label_counts_estimate"])
    n_y = np.bincount(data.y, minlength=2)
    assert est.shape == (2,) and np.all(np.abs(est - n_y) < 0.03 * data.n)
    assert not np.array_equal(est, n_y)

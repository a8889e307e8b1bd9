"""Failures inside a private solve (issue #16, items 1, 4 and 7).

* A failure that could depend on the private data is either made impossible (the certified ERM
  solver never fails on the data), decided from public quantities before anything is read (the
  same refusal on every neighbour), or charged.
* Once anything has been released, every failure charges the whole reservation; an untyped
  failure is charged and its message (which may carry private numbers) withheld.
* A seeded run is flagged on its certificate by the randomness source, whoever records the
  event.
"""

import math

import numpy as np
import pytest

import privfair as pf
from privfair.planning import planner
from privfair.backends.erm import solver as E
from privfair.backends import get
from privfair.errors import (BackendRefusedError, DataError, PrivateFailureError,
                             PrivfairError)
from privfair.privacy import Accountant, BudgetFilter, laplace_event
from privfair.privacy.randomness import as_source


# ---------------------------------------------------------------------------- neighbours
def _rows(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 1))
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    a = np.where(np.arange(n) % 2 == 0, "a", "b")
    return X, y, a


def _neighbours(n=60):
    """D and D′ differing in one whole row (protect="row")."""
    X, y, a = _rows(n)
    X2, y2, a2 = X.copy(), y.copy(), a.copy()
    X2[0], y2[0], a2[0] = [-1.0], 1, "b"
    mk = lambda X, y, a: pf.Dataset(X, y, sensitive=a, group_names=["a", "b"])  # noqa: E731
    return mk(X, y, a), mk(X2, y2, a2)


def _erm_problem(data, l2):
    ds = pf.SparseLinear(1, norm=pf.norms.l1(1), radius=2.0, l2=l2, feature_bound=1.0)
    r = pf.rates(ds, data, surrogate="logistic", group_mass_bound=0.05)
    return pf.Problem(pf.minimize(r.error()))


# ---------------------------------------------------------------- item 1: the ERM solver
@pytest.mark.parametrize("method", ["output_perturbation", "dual_frank_wolfe"])
def test_an_uncertifiable_l2_is_refused_identically_on_neighbours_before_spending(method):
    """On main, l2 = 1.4e-7 made one neighbour return a model and the other raise a RuntimeError
    carrying an exact data-derived number, refunded.  Now: refused at plan time, from public
    constants, with the same message on both, and nothing spent."""
    D, Dp = _neighbours()
    privacy = pf.DP(1.0, 1e-6 if method != "output_perturbation" else 0.0, protect="row")
    messages = []
    for data in (D, Dp):
        budget = BudgetFilter(1.0, 1e-6)
        with pytest.raises(BackendRefusedError) as err:
            _erm_problem(data, 1.4e-7).solve(privacy, backend=method, seed=0, budget=budget)
        assert budget.spent == (0.0, 0.0)
        messages.append(str(err.value))
    assert messages[0] == messages[1]
    assert "l2" in messages[0]


def test_objective_perturbation_at_that_l2_returns_on_both_neighbours():
    """Its own ridge Δ/n (public) conditions the ERM: the certified solve is guaranteed, so
    both neighbours return a model on every seed (on main one of them raised)."""
    for data in _neighbours():
        for seed in range(3):
            res = _erm_problem(data, 1.4e-7).solve(pf.DP(1.0, 1e-6, protect="row"),
                                                   backend="objective_perturbation", seed=seed)
            assert np.isfinite(res.decision).all()


def test_the_certified_solver_never_fails_on_the_data(monkeypatch):
    """Where the fast solver's a-posteriori certificate misses τ, the public number of
    projected-gradient steps reaches τ anyway: no data-dependent exception exists."""
    D, _ = _neighbours()
    ds = pf.SparseLinear(1, norm=pf.norms.l1(1), radius=2.0, l2=0.05, feature_bound=1.0)
    erm = pf.sparse.glm(D.X, D.y, ds, "logistic")
    tau = 1e-6
    exact = E.solve(erm, tau=1e-12).theta
    real = E.solve

    def stubborn(erm, lin=None, ridge=0.0, tau=None, theta0=None, max_iter=E.MAX_ITER):
        sol = real(erm, lin, ridge, 1e-300, theta0, max_iter=1)      # one step only
        return E.Solution(sol.theta, math.inf, sol.iterations, False)

    # the fast solver solve_certified calls (in its own module's namespace)
    monkeypatch.setitem(E.solve_certified.__globals__, "solve", stubborn)
    sol = E.solve_certified(erm, tau=tau)
    assert sol.tau == tau and sol.iterations >= E.fallback_steps(erm, tau)
    assert np.linalg.norm(sol.theta - exact) <= tau


def test_fallback_steps_is_public_and_refuses_only_ill_conditioned_problems():
    D, Dp = _neighbours()
    ds = pf.SparseLinear(1, norm=pf.norms.l1(1), radius=2.0, l2=1e-3, feature_bound=1.0)
    a, b = (pf.sparse.glm(d.X, d.y, ds, "logistic") for d in (D, Dp))
    assert E.fallback_steps(a, 1e-9) == E.fallback_steps(b, 1e-9) < E.MAX_FALLBACK_STEPS
    assert E.certify_reason(a, 1e-9) is None
    bad = pf.SparseLinear(1, norm=pf.norms.l1(1), radius=2.0, l2=1.4e-7, feature_bound=1.0)
    assert "l2" in E.certify_reason(pf.sparse.glm(D.X, D.y, bad, "logistic"), 1e-9)


# -------------------------------------------------- item 4: failures after a release are charged
class _Boom(Exception):
    pass


def _fake_run(record_first, exc):
    def run(self, plan, *, rng, accountant, device="cpu", progress=True):
        if record_first:
            accountant.record(laplace_event(1.0, 0.1))
        raise exc
    return run


def _exp_problem():
    X, y, a = _rows(40)
    data = pf.Dataset(X, y, sensitive=a, group_names=["a", "b"])
    r = pf.rates(pf.Thresholds([-0.5, 0.0, 0.5]), data)
    return pf.Problem(pf.minimize(r.error()))


@pytest.mark.parametrize("record_first, exc, charged, raised", [
    (False, BackendRefusedError("x", 1, "public refusal"), False, BackendRefusedError),
    (True, BackendRefusedError("x", 1, "after a release"), True, BackendRefusedError),
    (True, ValueError("noisy count 3.217 below threshold"), True, PrivateFailureError),
    (False, RuntimeError("solver reached 0.00123"), True, PrivateFailureError),
])
def test_a_failure_is_refunded_only_before_any_release_and_only_when_typed(
        monkeypatch, record_first, exc, charged, raised):
    b = get("exponential")
    monkeypatch.setattr(type(b), "run", _fake_run(record_first, exc))
    budget = BudgetFilter(2.0)
    with pytest.raises(raised) as err:
        _exp_problem().solve(pf.DP(1.0, protect="sensitive"), backend="exponential", seed=0, budget=budget)
    assert budget.spent == ((1.0, 0.0) if charged else (0.0, 0.0))
    assert budget.reserved == (0.0, 0.0)
    if raised is PrivateFailureError:       # the data-derived numbers never leave
        text = str(err.value) + "".join(getattr(err.value, "__notes__", []))
        assert "3.217" not in text and "0.00123" not in text
        assert err.value.__cause__ is None and err.value.__suppress_context__
        assert type(exc).__name__ in text
    if charged and raised is not PrivateFailureError:
        assert any("charged" in n for n in err.value.__notes__)


def test_the_group_mass_release_then_a_refusal_is_charged(monkeypatch):
    """Item 4 as found: the noisy group-mass estimate, then a refusal in the backend's final
    plan.  On main the reservation was refunded (repeatable for free)."""
    from privfair.backends.loss_vector.exponential import ExponentialBackend

    X, y, a = _rows(200)
    data = pf.Dataset(X, y, sensitive=a, group_names=["a", "b"])
    r = pf.rates(pf.Thresholds([-0.5, 0.0, 0.5]), data, surrogate=None)
    prob = pf.Problem(pf.minimize(r.fpr["a"] + r.fnr["b"]))
    calls = {"n": 0}
    real_plan = ExponentialBackend.plan

    def plan_then_refuse(self, *args, **kw):
        calls["n"] += 1
        if calls["n"] == 2:                 # the final plan, after the release
            raise DataError("weights", "cell (0, 1)", "the weighted ERM is not convex")
        return real_plan(self, *args, **kw)

    monkeypatch.setattr(ExponentialBackend, "plan", plan_then_refuse)
    budget = BudgetFilter(1.0)
    with pytest.raises(DataError):
        prob.solve(pf.DP(1.0, protect="sensitive"), backend="exponential", seed=0, budget=budget)
    assert calls["n"] == 2 and budget.spent == (1.0, 0.0)


def test_refund_on_error_false_charges_every_failure():
    budget = BudgetFilter(1.0)
    with pytest.raises(BackendRefusedError):
        with budget.reserve(0.5, refund_on_error=False):
            raise BackendRefusedError("x", 1, "typed")
    assert budget.spent == (0.5, 0.0)


def test_an_unsafe_debug_flag_chains_the_original(monkeypatch):
    b = get("exponential")
    monkeypatch.setattr(type(b), "run", _fake_run(False, _Boom("private 42")))
    monkeypatch.setenv("PRIVFAIR_UNSAFE_DEBUG", "1")
    with pytest.raises(PrivateFailureError) as err:
        _exp_problem().solve(pf.DP(1.0, protect="sensitive"), backend="exponential", seed=0)
    assert isinstance(err.value.__cause__, _Boom)
    assert issubclass(PrivateFailureError, PrivfairError)


# ----------------------------------------------------- item 7: seeded runs flagged by the source
def test_the_source_flags_events_recorded_by_hand():
    acc = Accountant(source=as_source(0))
    acc.record(laplace_event(1.0, 0.5))             # a backend's own, hand-made event
    assert acc.events[0].seeded and acc.certificate().seeded
    acc = Accountant(source=as_source(None))
    acc.record(laplace_event(1.0, 0.5))
    assert not acc.events[0].seeded and not acc.certificate().seeded


@pytest.mark.parametrize("method, delta", [("output_perturbation", 0.0),
                                           ("objective_perturbation", 0.0),
                                           ("dual_frank_wolfe", 0.0)])
def test_seeded_solves_are_flagged_on_the_certificate(method, delta):
    """On main these backends recorded their own events and a seed=0 run (bit-identical across
    runs) carried no warning."""
    D, _ = _neighbours(200)
    prob = _erm_problem(D, 0.05)
    privacy = pf.DP(1.0, delta, protect="row")
    seeded = prob.solve(privacy, backend=method, seed=0)
    again = prob.solve(privacy, backend=method, seed=0)
    assert np.array_equal(seeded.decision, again.decision)
    assert seeded.certificate.seeded and "SEEDED" in str(seeded.certificate)
    assert not prob.solve(privacy, backend=method).certificate.seeded


def test_postprocessing_base_with_a_non_finite_score_on_a_private_row_does_not_fail():
    """Under protect="row" X is private: a base predictor that returns NaN on one row must not
    make the solve fail on that dataset only (it counts as a negative prediction)."""
    X, y, a = _rows(60)
    base = lambda X: np.where(np.asarray(X)[:, 0] > 0.99, np.nan, np.asarray(X)[:, 0])  # noqa
    outcomes = []
    for x0 in (0.5, 1.0):                       # D′: row 0's features replaced (NaN score)
        X2 = X.copy()
        X2[0, 0] = x0
        data = pf.Dataset(X2, y, sensitive=a, group_names=["a", "b"])
        r = pf.rates(pf.PostProcessed(base), data)
        res = pf.Problem(pf.minimize(r.error())).solve(pf.DP(1.0, protect="row"),
                                                        backend="postprocessing", seed=0, base=base)
        outcomes.append(res.certificate.epsilon)
    assert outcomes == [1.0, 1.0]

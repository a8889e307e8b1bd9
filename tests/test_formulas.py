"""Formulas: every backend's ``formula(plan)`` and every report theorem entry reproduces its number.

One generic test iterates the backend registry (not a fixed list), so a backend that adds a
formula later is checked without editing this file.
"""

import math
from types import SimpleNamespace

import numpy as np
import pytest

import privfair as pf
from privfair.analysis import formulas as F
from privfair.analysis import theorems as th
from privfair.backends import BACKENDS
from privfair.analysis.formulas import evaluate

ALPHA = 0.1


def _data(n=800, seed=0, features=2):
    rng = np.random.default_rng(seed)
    a = rng.choice(["a", "b"], n)
    y = rng.integers(0, 2, n)
    X = np.column_stack([1.5 * y + rng.normal(size=n) + 0.8 * (a == "a")]
                        + [rng.normal(size=n) for _ in range(features - 1)])
    return pf.Dataset(X / 4, y, sensitive=a, group_names=["a", "b"])


def _gap(r):
    u = r.selection["a"] - r.selection["b"]
    return pf.lse(u, -u, eta=20)


def thresholds(data):
    r = pf.rates(pf.Thresholds(np.linspace(-0.5, 0.8, 8), score=0), data, group_mass_bound=0.1)
    return pf.Problem(pf.minimize(r.error()), [_gap(r) <= 0.1])


def cells(data):
    r = pf.rates(pf.ProxyCells(4, 2), data, group_mass_bound=0.1)
    return pf.Problem(pf.minimize(r.error()), [_gap(r) <= 0.1])


def sparse(data):
    ds = pf.SparseLinear(data.n_features, norm=pf.norms.l1(data.n_features), radius=2.0, l2=0.1,
                         intercept_bound=1.0)
    r = pf.rates(ds, data, surrogate="logistic", group_mass_bound=0.1)
    return pf.Problem(pf.minimize(r.error()))


def postprocessed(data):
    r = pf.rates(pf.PostProcessed(lambda X: 1 / (1 + np.exp(-3 * X[:, 0]))), data)
    gaps = [pf.abs(r.fpr["a"] - r.fpr["b"]), pf.abs(r.tpr["a"] - r.tpr["b"])]
    return pf.Problem(pf.minimize(r.error()), [pf.maximum(*gaps) <= 0.05])


MAKERS = (thresholds, cells, sparse, postprocessed)
PRIVACIES = (pf.DP(1.0, 1e-6, protect="sensitive"), pf.DP(2.0, protect="sensitive"))


@pytest.fixture(scope="module")
def plans():
    """(backend name, plan) for every registered backend that accepts one of the problems."""
    data = _data()
    out = []
    for make in MAKERS:
        prob = make(data)
        for priv in PRIVACIES:
            an = prob.analyze(priv, alpha=ALPHA)
            for name, backend in BACKENDS.items():
                if not backend.accepts(prob, an):
                    continue
                plan = prob.plan(priv, backend=name, alpha=ALPHA).chosen
                if plan is not None:
                    out.append((name, plan))
    return out


def _standard(plan):
    an = plan.analysis
    return {"epsilon": plan.privacy.epsilon, "delta": plan.privacy.delta,
            "n": plan.problem.rates.n, "alpha": an.alpha}


@pytest.mark.slow
def test_every_backend_formula_reproduces_its_plan(plans):
    checked = set()
    for name, plan in plans:
        f = BACKENDS[name].formula(plan)
        if f is None:
            continue
        eq, values = f
        assert eq.lhs.name == "excess"
        got = evaluate(eq, values, **_standard(plan))
        assert got == pytest.approx(plan.predicted_excess_risk, rel=1e-9), (name, eq)
        checked.add(name)
    # this session's backends expose formulas; a regression to None must fail here
    assert {"exponential", "frank_wolfe", "cells", "output_perturbation",
            "dual_frank_wolfe"} <= checked


@pytest.mark.slow
def test_frank_wolfe_formula_covers_both_mechanisms_and_the_reference(plans):
    kinds = {p.params.get("mechanism") for n, p in plans if n == "frank_wolfe"}
    assert {"gaussian", "laplace"} <= kinds
    prob = thresholds(_data())
    plan = prob.plan(pf.DP(math.inf, protect="sensitive"), backend="frank_wolfe", alpha=ALPHA).chosen
    eq, values = BACKENDS["frank_wolfe"].formula(plan)
    assert evaluate(eq, values) == pytest.approx(plan.predicted_excess_risk, rel=1e-9)


@pytest.mark.slow
def test_cells_formula_has_n_and_epsilon_and_falls_to_infinity(plans):
    name, plan = next((n, p) for n, p in plans if n == "cells")
    eq, values = BACKENDS[name].formula(plan)
    names = {s.name for s in eq.rhs.free_symbols}
    assert {"n", "epsilon"} <= names
    # too few rows for the released counts' noise: the bound is infinite, as noise_bound says
    std = {**_standard(plan), "n": 10}
    assert math.isinf(evaluate(eq, values, **std))


# ------------------------------------------------------------------------------ theorem entries
def _context(prob, priv, alpha=ALPHA, beta=0.05):
    plans = prob.plan(priv, alpha=alpha)
    return th.Context(prob, plans.analysis, priv, alpha, beta,
                      plans={p.backend: p for p in plans.ranked}, refused=dict(plans.refused))


@pytest.fixture(scope="module")
def contexts():
    data = _data()
    return [_context(make(data), priv) for make in (thresholds, sparse) for priv in PRIVACIES]


def test_every_theorem_formula_reproduces_its_value(contexts):
    seen = set()
    for ctx in contexts:
        for e in th.entries(ctx):
            assert e.cite and e.constants and e.reason
            if e.formula is None:
                continue
            eq, values = e.formula
            assert evaluate(eq, values, **ctx.std) == pytest.approx(e.value, rel=1e-9), e.cite
            seen.add(e.cite)
    assert {"[A] Thm 5.2", "[A] Thm 5.5", "[A] Thm 5.9", "[A] Thm 5.10", "[A] Cor 5.11",
            "[A] Cor B.5", "[A] Cor 8.9", "[A] Cor C.2", "[K] Thm 1", "[K] Thm 4",
            "[L] Thm 3.4"} <= seen


def test_n_needed_brings_each_n_dependent_bound_to_alpha(contexts):
    """Where an entry gives a bound at n and an n for α, the bound at that n is α."""
    for ctx in contexts:
        for e in th.entries(ctx):
            if e.formula is None or e.n_needed is None or e.formula[0].lhs.name == "n_0":
                continue
            eq, values = e.formula
            if "n" not in {s.name for s in eq.rhs.free_symbols}:
                continue
            at = evaluate(eq, values, **{**ctx.std, "n": e.n_needed})
            if e.n_needed > 1:
                assert at == pytest.approx(ctx.alpha, rel=0.03), e.cite
            else:           # already ≤ α with a single row (orders with constant 1)
                assert at <= ctx.alpha, e.cite


def test_iteration_counts_agree_with_the_compiler():
    """Thm 5.5's T and Cor B.5's T: the entries and the compiler's prescriptions agree."""
    ctx = _context(thresholds(_data()), pf.DP(1.0, 1e-6, protect="sensitive"))
    by = {e.cite: e for e in th.entries(ctx)}
    assert by["[A] Thm 5.5"].T_needed == ctx.analysis.iterations["lopt_T"]
    assert by["[A] Cor B.5"].T_needed == ctx.analysis.iterations["frank_wolfe_T"]
    assert F.a55_tau(ctx.K, ctx.analysis.G, ALPHA) == pytest.approx(
        ctx.analysis.iterations["lopt_tau"], rel=1e-12)


def test_preconditions_are_checked_against_the_problem():
    data = _data()
    grid = {e.cite: e for e in th.entries(_context(thresholds(data), pf.DP(1.0, 1e-6, protect="sensitive")))}
    assert not grid["[K] Thm 1"].applies and "output_perturbation" in grid["[K] Thm 1"].reason
    assert not grid["[A] Cor 5.3"].applies and "convex decision set" in grid["[A] Cor 5.3"].reason
    assert grid["[A] Cor C.2"].applies                               # q = 0.1 declared, δ > 0
    sp_ = {e.cite: e for e in th.entries(_context(sparse(data), pf.DP(1.0, 1e-6, protect="sensitive")))}
    assert sp_["[K] Thm 1"].applies and sp_["[K] Thm 4"].applies
    pure = {e.cite: e for e in th.entries(_context(sparse(data), pf.DP(1.0, protect="sensitive")))}
    for cite in ("[K] Thm 1", "[A] Thm 5.9", "[A] Cor 5.11", "[L] Thm 3.4"):
        assert not pure[cite].applies and "δ > 0" in pure[cite].reason, cite


def test_corrected_alpha_power_of_cor_5_11():
    """Thm 5.5's explicit T grows as α⁻⁴ (not α⁻² as printed): halving α multiplies it by ≈ 16."""
    K = 6
    G = lambda a: (a + math.sqrt(K)) / a  # noqa: E731 - [A] Cor 4.2
    ratio = F.a55_T(K, G(0.005), 0.005) / F.a55_T(K, G(0.01), 0.01)
    assert 15 < ratio < 16.5


# ------------------------------------------------------------------ privfair.analysis.formulas: the module
def _public_formulas():
    import inspect

    return [(name, getattr(F, name)) for name in F.__all__
            if inspect.isfunction(getattr(F, name)) and name not in
            ("symbolic", "formula", "evaluate", "n_for_alpha")]


def test_formulas_module_imports_nothing_from_privfair():
    """The one home of the theorems' formulas is usable from any layer: no privfair import."""
    import ast
    import pathlib

    tree = ast.parse(pathlib.Path(F.__file__).read_text())
    imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    imported += [("." * n.level) + (n.module or "") for n in ast.walk(tree)
                 if isinstance(n, ast.ImportFrom)]
    assert imported and not [m for m in imported if m.startswith((".", "privfair"))], imported


def test_every_formula_follows_the_calling_convention():
    """Named numbers in, a float out; ``ops`` keyword-only; the first docstring line cites."""
    import inspect
    import re

    for name, fn in _public_formulas():
        params = inspect.signature(fn).parameters
        assert list(params)[-1] == "ops", name
        assert params["ops"].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert params["ops"].default is F.NUMERIC, name
        first = (fn.__doc__ or "").strip().splitlines()[0]
        assert re.match(r"\[(A|J|K|L)\] (Thm|Cor|Lemma|Algorithm) ", first), (name, first)


def _sample_values(fn, rng):
    """Keyword values in the formulas' domains: counts ≥ 2, T ≥ 3, probabilities in (0, 1)."""
    import inspect

    out = {}
    for p in inspect.signature(fn).parameters:
        if p == "ops":
            continue
        if p in ("delta", "beta", "rho", "theta"):
            out[p] = float(rng.uniform(1e-8, 0.2))
        elif p in ("alpha", "q_min", "tau"):
            out[p] = float(rng.uniform(0.01, 0.3))
        elif p == "power":
            out[p] = 3
        elif p in ("K", "P", "A", "VC", "T", "m", "n", "n_groups", "k", "l", "d_theta"):
            out[p] = int(rng.integers(3, 5000))
        else:
            out[p] = float(rng.uniform(0.1, 5.0))
    return out


def test_each_formula_gives_the_same_number_numerically_and_through_sympy():
    rng = np.random.default_rng(0)
    for name, fn in _public_formulas():
        for _ in range(3):
            v = _sample_values(fn, rng)
            if name == "j31_gap":       # the theorem's own condition q·m·ε > 4 ln(4|A|/β)
                v["m"] = 10 ** 6
            num = fn(**v)
            assert isinstance(num, float) and math.isfinite(num), (name, v, num)
            eq, values = F.formula(fn, v, lhs="y")
            assert evaluate(eq, values) == pytest.approx(num, rel=1e-9), (name, v)


def test_dp_fermi_rate_has_log_inside_the_square_root():
    """[L] Thm 3.4: √(max(d_θ, kl)·ln(1/δ))/(εn) — quadrupling ln(1/δ) doubles the rate."""
    a = F.l34_bound(d_theta=10, k=2, l=2, n=1000, epsilon=1.0, delta=1e-4)
    b = F.l34_bound(d_theta=10, k=2, l=2, n=1000, epsilon=1.0, delta=1e-16)
    assert b / a == pytest.approx(2.0, rel=1e-12)
    assert a == pytest.approx(math.sqrt(10 * math.log(1e4)) / 1000, rel=1e-12)
    # the n the report prints brings the bound to α
    n = F.l34_n0(d_theta=10, k=2, l=2, epsilon=1.0, delta=1e-4, alpha=0.01)
    assert F.l34_bound(d_theta=10, k=2, l=2, n=n, epsilon=1.0, delta=1e-4) == pytest.approx(0.01)


def test_n_for_alpha_inverts_a_decreasing_bound():
    n = F.n_for_alpha(lambda m: 100.0 / m, 0.5, 10)
    assert 200 <= n <= 200 * 1.02
    assert F.n_for_alpha(lambda m: 1.0, 0.5, 10) == math.inf          # plateaus above α
    assert F.n_for_alpha(lambda m: 0.0, 0.5, 10) == 1.0               # any n


def test_theorem_entries_name_a_formula_of_the_one_module(contexts):
    for ctx in contexts:
        for e in th.entries(ctx):
            if e.home.startswith("privfair."):
                mod, _, fn = e.home.rpartition(".")
                assert mod == "privfair.analysis.formulas" and fn in F.__all__, (e.cite, e.home)


# Until the backends call privfair.analysis.formulas (issue #17 item 3; their owners switch), their own
# copies must agree with it: a drift here is a formula with two homes that disagree.  (sgda,
# lopt's finite oracle, frank_wolfe's Cor B.5 and the ERM family's [K] Thm 1 and Thm 4 call the
# formulas now.)
def test_backend_copies_agree_with_the_formulas():
    from privfair.backends.reductions import jagielski as _jagielski
    from privfair.backends.loss_vector import exponential

    assert exponential.utility_bound(0.01, 0.9, 16, rho=0.05) == pytest.approx(
        F.a36_bound(0.01, 0.9, 16, 0.05), rel=1e-12)
    err, gap = _jagielski.thm31_terms(3, 4000, 0.9, 0.05, 0.1)
    assert err == pytest.approx(F.j31_error(3, 4000, 0.9, 0.05), rel=1e-12)
    assert gap == pytest.approx(F.j31_gap(3, 4000, 0.9, 0.05, 0.1), rel=1e-12)


def test_sgda_has_no_copy_of_the_dp_fermi_formulas():
    """sgda's [L] Thm 3.3 σ_w and Thm 3.4 rate come from privfair.analysis.formulas (#17): its own copy
    of Thm 3.4 had ln(1/δ) outside the square root, against the paper."""
    from privfair.backends.sgda import sgda

    assert not hasattr(sgda, "thm34_rate") and not hasattr(sgda, "paper_sigma_w")
    plan = SimpleNamespace(params={"private": True, "d_theta": 10, "d_w": 8})
    eq, values = sgda.SGDABackend.formula(None, plan)
    std = dict(epsilon=0.9, delta=1e-6, n=5000)
    assert evaluate(eq, dict(values, C_L=1.0), **std) == pytest.approx(
        F.l34_bound(d_theta=10, k=8, l=1, **std), rel=1e-12)

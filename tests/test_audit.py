"""The audit (``privfair audit``, :mod:`privfair.audit.harness`): power against the bugs of issue
#16 item 8 and reach to every exposed field.

Fast tests: the tie instance's exact output laws (a correct exponential mechanism stays below
its claim; without its factor 2 it leaks 1.73ε, which the old instance hid), the field tests on
synthetic records, a deliberately injected exact statistic and a data-dependent error message
caught end to end, the noise control (a wrapper; the legacy option only where declared),
lagrangian_sgda's instance (the whole charged shift, no torch).  Slow tests: the full audit of
every backend with both negative controls (``privfair audit --negative-control``), as
documented in docs/cli.md.  All seeds are fixed.
"""

import importlib.util
import math
import re

import numpy as np
import pytest
from scipy import stats

import privfair as pf
from privfair.backends import BACKENDS
from privfair.backends.base import RELEASED
from privfair.backends.loss_vector.exponential import ExponentialBackend, penalized_values
from privfair.errors import InvalidInputError
from privfair.audit import harness as A
from privfair.privacy import exponential_mechanism_probabilities
from privfair.audit.instances import audit_instances, audit_pair, tie_problem

HAS_TORCH = importlib.util.find_spec("torch") is not None


# ------------------------------------------------------------------ the instance attains its claim
def _tie_laws(epsilon):
    """P(threshold t = 0) of the exponential mechanism on D and on D′ (exact)."""
    out = []
    for data in audit_pair():
        prob = tie_problem(data)
        an = prob.analyze(pf.DP(1.0, protect="sensitive"))
        h = penalized_values(prob, prob.rates.evaluate_all(), an.G)
        out.append(exponential_mechanism_probabilities(-h, an.sensitivity_h, epsilon)[0])
    return out


def test_tie_instance_keeps_a_correct_mechanism_below_its_claim_and_exposes_a_factor_2_bug():
    # the old instance (a ±1/n tie between two thresholds) gave P = 0.38 / 0.62 at ε = 1: a
    # loss of ε/2 at ε and exactly ε at 2ε, so a mechanism without its factor 2 passed at any
    # number of runs.  Now the bug leaks ≥ 1.4ε at every ε, a correct mechanism ≤ 0.85ε
    for eps in (0.25, 0.5, 1.0, 2.0):
        p, q = _tie_laws(eps)
        loss = max(abs(math.log(q / p)), abs(math.log((1 - p) / (1 - q))))
        assert loss < 0.85 * eps                                    # honest: below the claim
        p2, q2 = _tie_laws(2 * eps)                                  # the factor 2 dropped
        loss2 = max(abs(math.log(q2 / p2)), abs(math.log((1 - p2) / (1 - q2))))
        assert loss2 > 1.4 * eps
    assert _tie_laws(1.0)[1] == pytest.approx(1 / 3)     # D′: a tie of one threshold and two


# ------------------------------------------------------------------ field tests on records
def _records(rng, n, shift, leak=None):
    out = []
    for _ in range(n):
        r = {"decision": np.array([float(rng.random() < 0.5)]), "raised": "",
             "info.noisy": float(rng.laplace(shift, 1.0)), "info.public": 3.0}
        if leak is not None:
            r["info.count"] = float(leak)
        out.append(r)
    return out


def test_fields_pass_equal_laws_and_refute_an_exact_statistic():
    rng = np.random.default_rng(0)
    dec, others, untested = A.check_fields(_records(rng, 800, 0.0, leak=5),
                                           _records(rng, 800, 0.0, leak=5), 1.0)
    assert not dec.refuted and not any(c.refuted for c in others)
    assert untested == 3                           # info.public, info.count and raised
    # the same count differing between D and D′ (an exact statistic in info): refuted
    dec, others, _ = A.check_fields(_records(rng, 800, 0.0, leak=5),
                                    _records(rng, 800, 0.0, leak=4), 1.0)
    bad = {c.name: c for c in others if c.refuted}
    assert set(bad) == {"info.count"} and not dec.refuted
    assert bad["info.count"].epsilon_lower > 3           # p = 1 against q = 0
    # Bonferroni: the decision at Φ(−z)/2, the two other fields at Φ(−z)/4 each
    assert math.isclose(dec.z, stats.norm.isf(stats.norm.sf(4) / 2))
    assert math.isclose(others[0].z, stats.norm.isf(stats.norm.sf(4) / 4))


def test_vector_fields_are_scored_on_every_coordinate():
    # two Laplace counts moved by one each (postprocessing's released counts): each alone
    # leaks 1 at scale 1, the pair 2; the naive-Bayes score of the vector sees the pair
    rng = np.random.default_rng(1)

    def recs(mu, n=2000):
        return [{"decision": np.zeros(1), "info.counts[*]": np.concatenate(
            [rng.laplace(mu, 1.0, 2), rng.laplace(0.0, 1.0, 6)])} for _ in range(n)]

    dec, others, _ = A.check_fields(recs(np.array([0.0, 0.0])), recs(np.array([1.0, -1.0])), 1.0)
    (vec,) = [c for c in others if c.name == "info.counts[*]"]
    assert vec.refuted and vec.epsilon_lower > 1.1


def test_flattening_reaches_info_trace_certificate_and_plan():
    D, _ = audit_pair()
    inst = audit_instances("postprocessing")[0]
    res = inst.build(D).solve(pf.DP(1.0, protect="sensitive"), backend="postprocessing", seed=0, progress=False)
    f = A.exposed_fields(res, inst, D)
    assert f["decision"].shape == (40,) and f["raised"] == ""
    assert "info.released_counts[*]" in f and "info.released_counts[7]" in f
    assert any(k.startswith("trace[0].") for k in f)
    assert f["certificate.epsilon"] == pytest.approx(1.0)
    assert any(k.startswith("plan.params.") for k in f)
    assert all(isinstance(v, (float, str, np.ndarray)) for v in f.values())


# ------------------------------------------------------------------ leaks caught end to end
class _Leaky(ExponentialBackend):
    """The exponential backend, correct, plus an exact statistic of the private rows in info."""

    name = "leaky"
    exposes = {"a_negatives": (RELEASED, "a lie: an exact count")}

    def run(self, plan, **kw):
        res = super().run(plan, **kw)
        data = plan.problem.rates.data
        res.info["a_negatives"] = int(np.sum((data.group == 0) & (data.y == 0)))
        return res


class _Chatty(ExponentialBackend):
    """Raises with the private count in its message on every run."""

    name = "chatty"

    def run(self, plan, **kw):
        data = plan.problem.rates.data
        raise InvalidInputError("rows", int(np.sum(data.group == 0)), "group a is too small")


@pytest.mark.parametrize("cls, field", [(_Leaky, "info.a_negatives"), (_Chatty, "raised")])
def test_an_exact_statistic_or_a_private_error_message_is_refuted(monkeypatch, cls, field):
    monkeypatch.setitem(BACKENDS, cls.name, cls())
    inst = audit_instances("exponential")[0]
    D, Dp = inst.pair()
    seeds = np.random.SeedSequence(3).spawn(2)
    cond = A.run_condition(cls.name, inst, D, Dp, pf.DP(1.0, protect="sensitive"), {}, (1.0, 0.0), 120, seeds)
    assert cond.refuted and field in {c.name for c in cond.refuting}
    # the correct backend on the same runs: nothing refuted
    ok = A.run_condition("exponential", inst, D, Dp, pf.DP(1.0, protect="sensitive"), {}, (1.0, 0.0), 120, seeds)
    assert not ok.refuted


def test_factor_2_bug_is_refuted_on_the_tie_instance():
    # issue #16 item 8: an exponential mechanism that drops its factor 2 (≡ running at 2ε)
    # passed the old audit at any number of runs (ε̂ = 0.737); now it is refuted at 1500
    inst = audit_instances("exponential")[0]
    D, Dp = inst.pair()
    s = np.random.SeedSequence(11).spawn(4)
    bug = A.run_condition("exponential", inst, D, Dp, pf.DP(2.0, protect="sensitive"), {}, (1.0, 0.0), 1500, s[:2])
    assert bug.refuted and bug.decision.refuted and bug.epsilon_lower > 1.0
    honest = A.run_condition("exponential", inst, D, Dp, pf.DP(1.0, protect="sensitive"), {}, (1.0, 0.0), 1500, s[2:])
    assert not honest.refuted


# ------------------------------------------------------------------ the noise control
KNOBS = ["exponential", "cells", "output_perturbation", "objective_perturbation",
         "dual_frank_wolfe", "lagrangian_sgda"] + (["sgda"] if HAS_TORCH else [])


def test_the_noise_control_is_a_wrapper_and_the_legacy_option_only_where_declared():
    assert A.NOISE_HALF.options == {} and A.NOISE_HALF.noise_multiplier == 0.5
    assert A.control_options(0.5, ("T", "_noise_multiplier")) == {"_noise_multiplier": 0.5}
    assert A.control_options(0.5, ("T",)) == {}             # draws through its schedule
    assert A.control_options(0.5, None) == {}                # declares nothing: not guessed
    assert A.control_options(1.0, ("_noise_multiplier",)) == {}
    assert A.NOISE_HALF.options_for(("_noise_multiplier",)) == {"_noise_multiplier": 0.5}


@pytest.mark.parametrize("name", KNOBS)
def test_noise_control_keeps_the_claim_and_reduces_the_drawn_noise(name):
    """The audit's noise × 1/2 (privfair.privacy.reduced_noise, plus the legacy option for a
    backend that still declares it): the certificate is unchanged, the released outputs are
    not (the same seeds draw at half the scale)."""
    from privfair.backends import get
    from privfair.privacy import reduced_noise

    inst = audit_instances(name)[0]
    D, _ = inst.pair()
    privacy = pf.DP(1.0, inst.delta, protect=inst.protect)
    prob = inst.build(D)
    extra = A.control_options(0.5, get(name).option_names)
    moved = False
    # the accountant's PLD composition of the same public events, memoized as the audit does
    # (it changes no output; ~1.5 s a solve for the Gaussian backends without it)
    with A.memoized_accounting():
        for seed in range(40):      # a discrete output (a selection) may not move on every seed
            honest = prob.solve(privacy, backend=name, seed=seed, progress=False,
                                **inst.options)
            with reduced_noise(0.5):
                half = prob.solve(privacy, backend=name, seed=seed, progress=False,
                                  **inst.options, **extra)
            assert half.certificate.epsilon == pytest.approx(honest.certificate.epsilon)
            a, b = A.exposed_fields(honest, inst, D), A.exposed_fields(half, inst, D)
            moved |= any(not np.array_equal(np.asarray(a[k]), np.asarray(b.get(k)))
                         for k in a if k.startswith(("decision", "info", "weights")))
            if moved and seed >= 3:
                break
    assert moved


# ------------------------------------------------------------------ the full audits (slow)
def _run_cli(backend, capsys, *extra):
    from privfair.cli.commands import main

    code = main(["audit", "--backend", backend, "--negative-control", "--no-progress", *extra])
    out = capsys.readouterr().out
    claim = float(re.search(r"claim \(the certificate.*\): ε = (\S+),", out).group(1))
    rows = dict(re.findall(r"^  (honest|noise × 1/2|ε × 2)\s+ε ≥ (\S+)", out, re.M))
    return code, out, claim, {k: float(v) for k, v in rows.items()}


# lagrangian_sgda's instance is a numpy LinearClassifier (no torch); sgda's full audit is too
# slow for CI (test_sgda_audit_passes_honestly_and_refutes_half_noise below)
AUDITED = ["exponential", "frank_wolfe", "lopt", "oracle_learner", "postprocessing", "cells",
           "proxy_reductions", "output_perturbation", "dual_frank_wolfe",
           "objective_perturbation", "lagrangian_sgda"]


@pytest.mark.slow
@pytest.mark.parametrize("backend", AUDITED)
def test_audit_passes_honestly_and_refutes_both_controls(backend, capsys):
    code, out, claim, bounds = _run_cli(backend, capsys)
    assert code == 0, out
    assert bounds["honest"] <= claim and "PASS: no evidence" in out
    if backend == "objective_perturbation":
        # both controls counted (its noise is drawn in the free coordinates since #16: before,
        # noise × 1/2 was not refuted there, was reported only, and × 1/4 was counted instead)
        assert "not counted" not in out
    for label in ("noise × 1/2", "ε × 2"):
        assert bounds[label] > claim, (label, out)


@pytest.mark.slow
@pytest.mark.skipif(not HAS_TORCH, reason="sgda's audit instance is a torch model (the 'torch' "
                                          "extra)")
def test_sgda_audit_passes_honestly_and_refutes_half_noise():
    """sgda's full audit (``privfair audit --backend sgda --negative-control``, 3000 runs and
    three conditions) is ~18,000 solves: about 15 minutes here, the whole CI budget.  CI runs
    the same instance and harness on the honest condition (500 runs) and the noise × 1/2
    control (1000 runs: measured ε̂ = 1.41 > 1).  The ε × 2 control needs the full 3000 runs
    (measured ε̂ = 1.20, docs/cli.md); the mechanism's own neighbour tests in
    test_backend_sgda.py refute a tenth of the noise."""
    from privfair.backends import get

    inst = audit_instances("sgda")[0]
    D, Dp = inst.pair()
    privacy = pf.DP(1.0, inst.delta, protect=inst.protect)
    backend = get("sgda")
    claim = inst.build(D).solve(privacy, backend="sgda", seed=0, progress=False,
                                **inst.options).certificate
    claim = (float(claim.epsilon), float(claim.delta))
    s = np.random.SeedSequence(5).spawn(4)
    honest = A.run_control(backend, inst, D, Dp, privacy, None, inst.options, claim, 500, s[:2])
    assert not honest.refuted and honest.epsilon_lower <= claim[0]
    half = A.run_control(backend, inst, D, Dp, privacy, A.NOISE_HALF, inst.options, claim,
                         1000, s[2:])
    assert half.refuted and half.epsilon_lower > claim[0]



# ------------------------------------------------------------------ lagrangian_sgda's instance
def test_lagrangian_instance_carries_the_whole_charged_shift():
    """lagrangian_w2 (a numpy LinearClassifier): with the noise turned down to nothing, the
    released w₂ on D and D′ differ by the clipped row's full piece, 2·lr/m·C·50/√2501, against
    the noise's lr/m·z·C/b per unit — b·50/√2501 ≥ 0.999 of the Gaussian shift 2/z the
    accountant charges for, which is why both controls are refuted at 2000 runs."""
    from privfair.privacy import reduced_noise
    from privfair.audit.instances import LAGRANGIAN_X0

    inst = audit_instances("lagrangian_sgda")[0]
    assert inst.key == "lagrangian_w2" and inst.protect == "row"
    D, Dp = inst.pair()
    assert np.array_equal(D.X, Dp.X) and np.flatnonzero(D.y != Dp.y).tolist() == [0]
    privacy = pf.DP(1.0, inst.delta, protect=inst.protect)
    w2 = []
    with reduced_noise(1e-9):
        for data in (D, Dp):
            res = inst.build(data).solve(privacy, backend="lagrangian_sgda", seed=0,
                                         progress=False, **inst.options)
            w2.append(float(inst.release(res)[0]))
    P = res.plan.params
    assert (P["T"], P["sampling_rate"], P["output"]) == (1, 1.0, "last")
    lr_m = P["lr"] / P["batch_size"]
    x0 = LAGRANGIAN_X0 / math.hypot(LAGRANGIAN_X0, 1.0)
    assert w2[0] - w2[1] == pytest.approx(2 * lr_m * P["clip"] * x0, rel=1e-6)
    noise_sd = lr_m * res.info["gradient_noise"]          # z·C/b per unit of the release
    carried = abs(w2[0] - w2[1]) / noise_sd / (2.0 / P["noise_multiplier"])
    assert 0.999 <= carried <= 1.0


def test_lagrangian_instance_needs_no_torch():
    """The README's install has no torch: the audit instance of lagrangian_sgda solves in a
    fresh interpreter without importing it (see test_backend_lagrangian's note on why the
    import is watched rather than blocked)."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import sys, warnings
        warnings.simplefilter("ignore")
        import privfair as pf
        from privfair.audit.instances import audit_instances
        inst = audit_instances("lagrangian_sgda")[0]
        D, _ = inst.pair()
        res = inst.build(D).solve(pf.DP(1.0, inst.delta, protect=inst.protect),
                                  backend="lagrangian_sgda", seed=0, progress=False,
                                  **inst.options)
        print(inst.key, res.backend, "torch" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "lagrangian_w2 lagrangian_sgda False"


# ------------------------------------------------------------------ the memoized analysis
@pytest.mark.filterwarnings("ignore::privfair.errors.ResultStatusWarning")
@pytest.mark.filterwarnings("ignore::privfair.errors.WeakPrivacyWarning")
@pytest.mark.parametrize("name", AUDITED + (["sgda"] if HAS_TORCH else []))
def test_a_memoized_analysis_exposes_the_fields_of_a_fresh_one(name):
    """The audit compiles each dataset's problem once (harness.memoized_analysis); a solve
    that reuses the analysis must expose what a freshly compiled problem exposes, on D and
    on D′, for the same seeds — else the memo would change what is audited."""
    inst = audit_instances(name)[0]
    privacy = pf.DP(1.0, inst.delta, protect=inst.protect)
    calls = []
    with A.memoized_accounting():
        for data in inst.pair():
            memo = A.memoized_analysis(inst.build(data))
            inner = memo.analyze
            memo.analyze = lambda *a, **k: calls.append(1) or inner(*a, **k)
            for seed in range(4):
                fresh = inst.build(data).solve(privacy, backend=name, seed=seed,
                                               progress=False, **inst.options)
                again = memo.solve(privacy, backend=name, seed=seed, progress=False,
                                   **inst.options)
                a, b = A.exposed_fields(fresh, inst, data), A.exposed_fields(again, inst, data)
                assert a.keys() == b.keys()
                for k in a:
                    assert np.array_equal(np.asarray(a[k]), np.asarray(b[k])), (name, k)
    assert len(calls) >= 8          # the memo was consulted on every solve


def test_the_instance_option_picks_an_instance_and_names_the_choices(capsys):
    """``--instance KEY`` audits that instance (here the three-group one, 8 runs: the option,
    not the verdict's power); an unknown key is a usage error listing the keys."""
    from privfair.cli.commands import main

    code = main(["audit", "--backend", "proxy_reductions", "--instance", "nope", "--runs", "8",
                 "--no-progress"])
    captured = capsys.readouterr()
    assert code == 2
    assert "proxy_counts_3groups" in captured.err + captured.out
    code = main(["audit", "--backend", "proxy_reductions", "--instance", "proxy_counts_3groups",
                 "--runs", "8", "--no-progress"])
    out = capsys.readouterr().out
    assert "three groups" in out and "from group a to b" in out

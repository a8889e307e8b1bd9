# Over 500 lines: the audit's statistics (ε̂ estimation, exposed-field walk, control runs) are one
#   procedure.
"""The statistical audit behind ``privfair audit``: end-to-end solves on neighbours, every exposed
field tested, honest runs against negative controls.

What one audit does (:func:`audit`)
-----------------------------------
For an :class:`~privfair.audit.instances.AuditInstance` and a backend, ``runs`` full
solves — ``problem.solve(privacy, backend=name, seed=s_i, **options)``, the public API, planner,
budget filter and accountant included — on D and as many on D′, each with its own seed.  Every
solve is flattened (:func:`exposed_fields`) into the fields a caller can read:

* ``decision`` — the tested output of the instance (``inst.release(result)``, or the expected
  predictions of the released mixture on the instance's rows, for both groups when the decision
  reads the group);
* ``decisions.*`` and ``weights`` — the released decisions' own parameters and mixture weights;
* ``info.*`` and ``trace[i].*`` — every entry of ``result.info`` and ``result.trace``, flattened
  to scalars (nested dicts, lists, arrays and dataclasses; each numeric array also as one vector
  field ``name[*]``);
* ``certificate.*`` and ``plan.*`` — the certificate (``as_dict``), the final plan's parameters
  and notes;
* ``raised`` — whether the solve raised, as ``"Type: message"`` (an exception is an output too:
  a message carrying a private value, or a failure that depends on the data, is a leak).

Each field is an output whose law on D and on D′ is compared by
:func:`privfair.privacy.testing.check_dp_heldout` against the claim (ε, δ) — the certificate of
an honest solve on D.  An (ε, δ)-DP solve releases every field as a post-processing of its
releases, so each passes; a field that is a deterministic function of the private rows (an exact
statistic in ``info``) differs with probability 1 and is refuted at any ε.

The family of tests.  The first quarter of the runs on each dataset is the *pilot* (the one
:func:`check_dp_heldout` uses to pick its event): fields constant over the pooled pilot runs are
not tested (a constant output cannot refute a claim), and of fields with identical values in
every run only one is tested.  The decision gets half the error budget α = Φ(−z) per direction
and the m other tested fields share the other half (Bonferroni: each is tested at α/(2m), i.e.
at z_f = Φ⁻¹(1 − α/(2m))); with no other field the decision gets all of α.  So an honest
backend is refuted with probability ≤ α per direction, whatever the number of fields.

Floats are compared at 10 significant digits (a difference below that is floating-point noise,
not a statement about the data).  A vector field with many distinct values is reduced to one
statistic fitted on the pilot only — the sum over coordinates of each coordinate's pilot
log-likelihood ratio (10 pilot-quantile bins, ½-smoothed counts; a "naive Bayes" score) — so
that a loss spread over several coordinates (two Laplace counts moved by one row each) is seen
on one axis; the held-out runs then test it as any other output.  Because the score is a fixed
function once the pilot is read, the held-out test keeps its level.

Negative controls (:class:`Control`): the same instance run with less noise than the claim
says — by default ``noise × 1/2`` (the solve runs inside
:func:`privfair.privacy.reduced_noise` ``(0.5)``: every noise a backend draws through its
schedule is drawn at half the scale its recorded event claims, the certificate unchanged) and
``ε × 2`` (the backend run at 2ε, the claim kept at ε: the bug of an exponential mechanism
without its factor 2, docs/traps.md #9).  The control is a wrapper the audit applies, not an
argument of production code; a backend that does not yet draw through the release plumbing
still declares the test-only option ``_noise_multiplier``, and only such a backend gets it as
well (:func:`control_options`).  A control is *refuted* when some field's lower bound on the
privacy loss exceeds the claim.

The accountant's composition is a function of the public events only, identical in every run of
one condition; the audit memoizes it (:func:`memoized_accounting`) — PLD accounting costs ~0.1 s
per solve for sgda — which changes no output.  For the same reason it compiles each dataset's
problem once (:func:`memoized_analysis`): the compiler's analysis is a deterministic function of
the problem and the privacy requirement (it draws nothing), and was ~a third of a solve's time.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field, fields, is_dataclass

import numpy as np

__all__ = ["Control", "DEFAULT_CONTROLS", "FieldCheck", "ConditionResult", "exposed_fields",
           "collect", "check_fields", "memoized_accounting", "memoized_analysis", "run_condition",
           "control_options", "LEGACY_NOISE_OPTION"]

#: significant digits at which exposed floats are compared
DIGITS = 10
#: arrays up to this many elements are also tested element by element
MAX_ELEMENTS = 64
#: pilot-quantile bins per coordinate of the naive-Bayes score of a vector field
NB_BINS = 10
#: ... over the coordinates whose pilot histograms differ at this chi-square p-value
NB_SELECT = 0.01
_ABSENT = "<absent>"


@dataclass(frozen=True)
class Control:
    """A negative control: the backend run at ``epsilon_factor``·ε with ``options`` added, and
    inside :func:`privfair.privacy.reduced_noise` ``(noise_multiplier)`` when that is not 1,
    tested against the honest claim.  ``expect_refuted=False`` marks a control that provably
    cannot be refuted on the instance (``why`` says why); it is run and reported, not counted."""

    key: str
    label: str
    epsilon_factor: float = 1.0
    options: dict = field(default_factory=dict)
    expect_refuted: bool = True
    why: str = ""
    noise_multiplier: float = 1.0

    def options_for(self, option_names) -> dict:
        """The solve options of this control for a backend declaring ``option_names``:
        ``options``, plus the legacy ``_noise_multiplier`` where :func:`control_options` says."""
        return {**self.options, **control_options(self.noise_multiplier, option_names)}


#: the test-only option of backends that do not yet draw their noise through the release
#: plumbing (``privfair.privacy.release.Draws``): the reduced-noise wrapper cannot reach their
#: hand-drawn noise, so the audit passes them this option as well.  This path goes away when
#: every backend draws through Draws (issue #17).
LEGACY_NOISE_OPTION = "_noise_multiplier"


def control_options(noise_multiplier, option_names) -> dict:
    """``{"_noise_multiplier": m}`` for a backend whose declared options (``option_names``,
    :attr:`backends.base.Backend.option_names`) still include it and m ≠ 1; ``{}`` otherwise
    (a backend that draws through its schedule gets the control from the wrapper alone)."""
    m = float(noise_multiplier)
    if m != 1.0 and option_names is not None and LEGACY_NOISE_OPTION in option_names:
        return {LEGACY_NOISE_OPTION: m}
    return {}


NOISE_HALF = Control("noise/2", "noise × 1/2", 1.0, {}, noise_multiplier=0.5)
EPS_DOUBLE = Control("eps*2", "ε × 2", 2.0, {})
DEFAULT_CONTROLS = (NOISE_HALF, EPS_DOUBLE)


# ------------------------------------------------------------------------------ flattening
def _sig(a, digits=DIGITS):
    """Round to ``digits`` significant digits (elementwise; non-finite values kept)."""
    a = np.asarray(a, dtype=float)
    out = a.copy()
    ok = np.isfinite(a) & (a != 0)
    if np.any(ok):
        mag = np.floor(np.log10(np.abs(a[ok])))
        scale = 10.0 ** (digits - 1 - mag)
        out[ok] = np.round(a[ok] * scale) / scale
    return out


def _flatten(obj, prefix, out, depth=0):
    """Put every scalar reachable from ``obj`` into ``out`` under a dotted/indexed name."""
    if depth > 8:
        out[prefix] = type(obj).__name__
        return
    if obj is None or isinstance(obj, (str, bytes)):
        out[prefix] = "None" if obj is None else str(obj)
        return
    if isinstance(obj, (bool, np.bool_)):
        out[prefix] = float(bool(obj))
        return
    if isinstance(obj, (int, float, np.integer, np.floating)):
        out[prefix] = float(obj)
        return
    if isinstance(obj, dict):
        for k in obj:
            _flatten(obj[k], f"{prefix}.{k}" if prefix else str(k), out, depth + 1)
        return
    if hasattr(obj, "detach") and hasattr(obj, "cpu"):          # a torch tensor
        obj = obj.detach().cpu().numpy()
    if isinstance(obj, (list, tuple, np.ndarray)):
        arr = None
        try:
            arr = np.asarray(obj, dtype=float)
        except (TypeError, ValueError):
            pass
        if arr is not None and arr.ndim >= 1:
            flat = arr.ravel()
            if flat.size >= 2:
                out[f"{prefix}[*]"] = flat
            if flat.size <= MAX_ELEMENTS:
                for i, v in enumerate(flat):
                    out[f"{prefix}[{i}]"] = float(v)
            out[f"{prefix}.shape"] = str(arr.shape)
            return
        items = list(obj)
        out[f"{prefix}.len"] = float(len(items))
        for i, v in enumerate(items[:MAX_ELEMENTS]):
            _flatten(v, f"{prefix}[{i}]", out, depth + 1)
        return
    if is_dataclass(obj) and not isinstance(obj, type):
        for f in fields(obj):
            _flatten(getattr(obj, f.name), f"{prefix}.{f.name}", out, depth + 1)
        return
    if hasattr(obj, "__dict__"):
        public = {k: v for k, v in vars(obj).items() if not k.startswith("_")}
        if public:
            for k, v in public.items():
                _flatten(v, f"{prefix}.{k}", out, depth + 1)
            return
    out[prefix] = type(obj).__name__       # opaque: its type only (reprs carry addresses)


def decision_output(inst, result, data):
    """The instance's tested output of ``result``: ``inst.release(result)``, or the expected
    predictions on the instance's rows (for every group when the decision reads the group),
    rounded at 9 decimals so that equal mixtures count as one output."""
    if inst.release is not None:
        return np.asarray(inst.release(result), dtype=float).ravel()
    X = data.X
    if getattr(result.decision_set, "needs_sensitive", False):
        out = np.concatenate([np.asarray(result.predict_proba(
            X, sensitive=np.array([g] * len(X))), dtype=float).ravel() for g in data.groups])
    else:
        out = np.asarray(result.predict_proba(X), dtype=float).ravel()
    return np.round(out, 9)


def exposed_fields(result, inst, data) -> dict:
    """{field name: value} of one solve's result (module docstring); ``decision`` a 1-D array,
    the others scalars (float or str) or, for names ending ``[*]``, 1-D arrays."""
    out = {"decision": decision_output(inst, result, data), "raised": ""}
    _flatten(list(result.decisions), "decisions", out)
    _flatten(np.asarray(result.weights, dtype=float), "weights", out)
    _flatten(dict(result.info), "info", out)
    _flatten(list(result.trace), "trace", out)
    if result.certificate is not None:
        _flatten(result.certificate.as_dict(), "certificate", out)
    if result.plan is not None:
        _flatten(dict(result.plan.params), "plan.params", out)
        _flatten(list(result.plan.notes), "plan.notes", out)
    return out


def failure_fields(err) -> dict:
    """The fields of a solve that raised: only ``raised`` = ``"Type: message"``."""
    return {"raised": f"{type(err).__name__}: {err}"}


# ------------------------------------------------------------------------------ running
@contextlib.contextmanager
def memoized_accounting():
    """Memoize the accountant's composition rules (pure functions of the public events) while
    the audit runs; restored on exit."""
    from ..privacy import accountant as A

    saved = {name: getattr(A, name) for name in ("basic_epsilon", "advanced_epsilon",
                                                 "optimal_epsilon", "gdp_epsilon", "pld_epsilon",
                                                 "rdp_epsilon") if hasattr(A, name)}

    def memo(fn):
        cache = {}

        def wrapped(events, *args, **kw):
            try:
                key = (tuple(events), args, tuple(sorted(kw.items())))
                hash(key)
            except TypeError:
                return fn(events, *args, **kw)
            if key not in cache:
                cache[key] = fn(events, *args, **kw)
            return cache[key]
        return wrapped

    try:
        for name, fn in saved.items():
            setattr(A, name, memo(fn))
        yield
    finally:
        for name, fn in saved.items():
            setattr(A, name, fn)


def memoized_analysis(problem):
    """``problem`` with :meth:`~privfair.analysis.problem.Problem.analyze` memoized per (privacy,
    alpha) — on this object only, so a solve that holds rows out (a new problem for its
    training part) compiles that one afresh.  The compiler draws nothing and reads the problem
    only, so every run of a condition gets the analysis it would compute; the planner and the
    backends read an analysis without changing it (tests/test_audit.py checks that memoized
    and fresh solves expose the same fields, bit for bit)."""
    cache = {}
    analyze = problem.analyze

    def memo(privacy, alpha=0.05):
        key = (privacy, alpha)
        if key not in cache:
            cache[key] = analyze(privacy, alpha=alpha)
        return cache[key]

    problem.analyze = memo
    return problem


def collect(backend, inst, data, privacy, options, runs, seed, progress=False, label=""):
    """Fields of ``runs`` end-to-end solves of ``inst`` on ``data`` (list of dicts, in run
    order), each solve seeded by its own child of ``seed`` (a SeedSequence or int).
    ``progress``: as ``Problem.solve(progress=...)`` (a bar over the solves)."""
    seeds = (seed if isinstance(seed, np.random.SeedSequence)
             else np.random.SeedSequence(seed)).spawn(runs)
    from ..util.progress import bar

    problem = memoized_analysis(inst.build(data))
    iterator = bar(seeds, label or "audit", progress)
    out = []
    for s in iterator:
        try:
            with _quiet_status():
                res = problem.solve(privacy, backend=backend, seed=s, progress=False, **options)
        except Exception as err:  # noqa: BLE001 - a failure is an output: its type and message
            out.append(failure_fields(err))
            continue
        out.append(exposed_fields(res, inst, data))
    return out


@contextlib.contextmanager
def _quiet_status():
    """The held-out check's status warnings silenced: the audit's solves are on a built-in
    instance too small to check (every one would say "not checked"), and the status is an
    exposed field that the audit tests like any other — a log gets the verdicts, not a
    warning per call site.  The δ ≥ 1/n warning too: an instance may ask a large δ on purpose
    (a small δ makes its (ε, δ) claim hard to refute with few runs), and the audit reports the
    claim it tests."""
    import warnings

    from ..errors import ResultStatusWarning, WeakPrivacyWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultStatusWarning)
        warnings.simplefilter("ignore", WeakPrivacyWarning)
        yield


# ------------------------------------------------------------------------------ testing
@dataclass(frozen=True)
class FieldCheck:
    """One field's test: its name (and the names of identical fields), the z it was tested at
    and the :class:`~privfair.privacy.testing.HeldoutCheck`."""

    name: str
    check: object
    z: float
    aliases: tuple = ()

    @property
    def refuted(self) -> bool:
        return not self.check.passed

    @property
    def epsilon_lower(self) -> float:
        return self.check.epsilon_lower


@dataclass(frozen=True)
class ConditionResult:
    """The audit of one condition (the honest run or a control): every tested field, the
    decision's check first (None when every solve raised); ``untested``: fields constant over
    the pilot."""

    label: str
    epsilon_run: float
    options: dict
    runs: int
    seconds: float
    decision: FieldCheck
    others: tuple
    untested: int
    failures: tuple            # (failures on D, failures on D′)
    noise_multiplier: float = 1.0     # the reduced_noise wrapper the solves ran in

    @property
    def checks(self):
        return ((self.decision,) if self.decision is not None else ()) + tuple(self.others)

    @property
    def refuted(self) -> bool:
        return any(c.refuted for c in self.checks)

    @property
    def epsilon_lower(self) -> float:
        return max((c.epsilon_lower for c in self.checks), default=-math.inf)

    @property
    def worst(self) -> FieldCheck:
        return max(self.checks, key=lambda c: c.epsilon_lower)

    @property
    def refuting(self):
        return [c for c in self.checks if c.refuted]


def _column(records, name):
    return [r.get(name, None) for r in records]


def _encode(a, b):
    """Two value lists → two float arrays (1-D, or 2-D for vectors) for the tester."""
    vals = [v for v in a + b if v is not None]
    if vals and all(isinstance(v, np.ndarray) for v in vals):
        sizes = {v.size for v in vals}
        if len(sizes) == 1 and len(vals) == len(a) + len(b):
            A = _sig(np.vstack([np.ravel(v) for v in a]))
            B = _sig(np.vstack([np.ravel(v) for v in b]))
            if np.all(np.isfinite(A)) and np.all(np.isfinite(B)):
                return A, B
    if (len(vals) == len(a) + len(b)
            and all(isinstance(v, float) and math.isfinite(v) for v in vals)):
        return _sig(np.array(a, dtype=float)), _sig(np.array(b, dtype=float))

    def token(v):
        if v is None:
            return _ABSENT
        if isinstance(v, np.ndarray):
            return "array:" + _sig(v).tobytes().hex()
        if isinstance(v, float):
            return repr(float(_sig(v)))
        return str(v)

    ta, tb = [token(v) for v in a], [token(v) for v in b]
    codes = {t: i for i, t in enumerate(sorted(set(ta) | set(tb)))}
    return (np.array([codes[t] for t in ta], dtype=float),
            np.array([codes[t] for t in tb], dtype=float))


def _varies(A, B, ka, kb):
    pilot = np.concatenate([A[:ka], B[:kb]])
    return len(np.unique(pilot.reshape(len(pilot), -1), axis=0)) > 1


def naive_bayes_score(A, B, ka, kb, bins=NB_BINS, select=NB_SELECT):
    """Reduce 2-D samples to one statistic fitted on the pilots ``A[:ka]``, ``B[:kb]`` only:
    Σ_j log-likelihood ratio of coordinate j's pilot-quantile bin (½-smoothed), over the
    coordinates whose pilot histograms differ (chi-square p ≤ ``select``; all when None)."""
    from scipy import stats

    pa, pb = A[:ka], B[:kb]
    sa, sb = np.zeros(len(A)), np.zeros(len(B))
    for j in range(A.shape[1]):
        pooled = np.concatenate([pa[:, j], pb[:, j]])
        if np.ptp(pooled) == 0:
            continue
        edges = np.unique(np.quantile(pooled, np.linspace(0, 1, bins + 1)[1:-1]))
        ca = np.bincount(np.searchsorted(edges, pa[:, j], side="right"), minlength=len(edges) + 1)
        cb = np.bincount(np.searchsorted(edges, pb[:, j], side="right"), minlength=len(edges) + 1)
        m = len(edges) + 1
        if select is not None and m > 1:
            table = np.vstack([ca, cb])
            table = table[:, table.sum(axis=0) > 0]
            if table.shape[1] > 1 and stats.chi2_contingency(table)[1] > select:
                continue           # no pilot evidence that this coordinate moves: leave it out
        lr = np.log((ca + 0.5) / (ka + 0.5 * m)) - np.log((cb + 0.5) / (kb + 0.5 * m))
        sa += lr[np.searchsorted(edges, A[:, j], side="right")]
        sb += lr[np.searchsorted(edges, B[:, j], side="right")]
    return sa, sb


def _test(A, B, epsilon, delta, z, pilot):
    from ..privacy.testing import check_dp_heldout

    ka, kb = max(1, int(len(A) * pilot)), max(1, int(len(B) * pilot))
    if A.ndim == 2 and A.shape[1] > 1:
        distinct = len(np.unique(np.vstack([A[:ka], B[:kb]]), axis=0))
        if distinct > max(2, min(ka, kb) // 10):
            A, B = naive_bayes_score(A, B, ka, kb)
    return check_dp_heldout(A, B, epsilon, delta, z=z, pilot=pilot)


def check_fields(records_D, records_Dp, epsilon, delta=0.0, z=4.0, pilot=0.25, progress=False,
                 label=""):
    """Test every exposed field (module docstring): (decision FieldCheck — None when every
    solve raised —, [other FieldChecks], number of fields constant over the pilot).
    ``progress``: a bar over the fields (as ``Problem.solve(progress=...)``)."""
    from scipy import stats

    from ..util.progress import bar

    ka, kb = max(1, int(len(records_D) * pilot)), max(1, int(len(records_Dp) * pilot))
    names = sorted(set().union(*records_D, *records_Dp) - {"decision"})
    # the decision: a sentinel row for runs that raised (the run is an output all the same)
    dec_a, dec_b = _column(records_D, "decision"), _column(records_Dp, "decision")
    present = [v for v in dec_a + dec_b if v is not None]
    if present and len(present) < len(dec_a) + len(dec_b):
        lo = min(float(np.min(v)) for v in present)
        fill = np.full(present[0].size, lo - 1.0 - abs(lo))
        dec_a = [fill if v is None else v for v in dec_a]
        dec_b = [fill if v is None else v for v in dec_b]
    candidates, seen, untested = [], {}, 0
    for name in bar(names, f"{label} fields".strip(), progress, min_steps=50):
        A, B = _encode(_column(records_D, name), _column(records_Dp, name))
        if not _varies(A, B, ka, kb):
            untested += 1
            continue
        key = (A.tobytes(), B.tobytes(), A.shape)
        if key in seen:
            seen[key][1].append(name)
            continue
        seen[key] = (len(candidates), [])
        candidates.append((name, A, B))
    alpha = float(stats.norm.sf(z))
    m = len(candidates)
    shares = (2 if m else 1) if present else 0          # the decision's share of α, if any
    z_dec = float(stats.norm.isf(alpha / shares)) if shares else float(z)
    z_f = float(stats.norm.isf(alpha / ((2 if present else 1) * m))) if m else float(z)
    aliases = {i: tuple(al) for i, al in seen.values()}
    # the test phase: one bar over every test (the decision's first), whatever their number —
    # a vector field's test fits a naive-Bayes score on the pilot, seconds at thousands of runs
    tests = ([("decision", *_encode(dec_a, dec_b), z_dec, ())] if present else []) + [
        (name, A, B, z_f, aliases.get(i, ())) for i, (name, A, B) in enumerate(candidates)]
    checks = [FieldCheck(name, _test(A, B, epsilon, delta, zt, pilot), zt, al)
              for name, A, B, zt, al in bar(tests, f"{label} tests".strip(), progress)]
    decision = checks.pop(0) if present else None
    return decision, checks, untested


def run_condition(backend, inst, D, Dp, privacy_run, options, claim, runs, seeds, z=4.0,
                  progress=False, label="", noise_multiplier=1.0, option_names=None):
    """Collect ``runs`` solves on D and on D′ (``seeds``: two SeedSequences) under
    ``privacy_run`` and ``options``, and test every field against ``claim`` = (ε, δ).

    ``noise_multiplier`` ≠ 1 runs every solve inside :func:`~privfair.privacy.reduced_noise`
    (the noise control); a backend whose declared ``option_names`` still include
    ``_noise_multiplier`` also gets that option (:func:`control_options`; the legacy path).
    ``progress`` shows bars over the solves and over the field tests."""
    from ..privacy.release import reduced_noise

    started = time.perf_counter()
    opts = {**options, **control_options(noise_multiplier, option_names)}
    with memoized_accounting(), reduced_noise(noise_multiplier):
        a = collect(backend, inst, D, privacy_run, opts, runs, seeds[0], progress,
                    f"{label} D")
        b = collect(backend, inst, Dp, privacy_run, opts, runs, seeds[1], progress,
                    f"{label} D'")
    eps, delta = claim
    decision, others, untested = check_fields(a, b, eps, delta, z, progress=progress,
                                              label=label)
    failures = (sum(bool(r.get("raised")) for r in a), sum(bool(r.get("raised")) for r in b))
    return ConditionResult(label, float(privacy_run.epsilon), dict(opts), runs,
                           time.perf_counter() - started, decision, tuple(others), untested,
                           failures, float(noise_multiplier))


def certificate_of(backend, inst, D, privacy, options, seed, progress=False, label="claim"):
    """The claim an audit tests: the certificate of one honest solve of ``inst`` on D.

    ``progress`` (as ``Problem.solve(progress=...)``): a one-step bar names the phase on a
    terminal, and the solve shows its own bars for its long steps."""
    from ..util.progress import bar

    for _ in bar([None], f"{label}: certificate of one honest solve", progress):
        with _quiet_status():
            result = inst.build(D).solve(privacy, backend=backend, seed=seed,
                                         progress=progress, **options)
    return result.certificate


def run_control(backend, inst, D, Dp, privacy, control, options, claim, runs, seeds, z=4.0,
                progress=False):
    """One condition of an audit: ``control`` (a :class:`Control`; None for the honest run) on
    ``backend`` (an object with ``name`` and ``option_names``) — at ``epsilon_factor``·ε, with
    the control's options and its reduced-noise wrapper."""
    from dataclasses import replace as _replace

    if control is None:
        return run_condition(backend.name, inst, D, Dp, privacy, options, claim, runs, seeds,
                             z, progress, "honest")
    run_privacy = _replace(privacy, epsilon=control.epsilon_factor * privacy.epsilon)
    return run_condition(backend.name, inst, D, Dp, run_privacy, {**options, **control.options},
                         claim, runs, seeds, z, progress, control.label,
                         noise_multiplier=control.noise_multiplier,
                         option_names=getattr(backend, "option_names", None))

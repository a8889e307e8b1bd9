"""Sample-complexity reports: what each backend's theorem promises at this n, the n it needs for
a target α, [A]'s lower bounds, and the excess risk actually measured on subsamples.

``privfair.reports.report(problem, privacy, alpha=0.05, build=...)`` returns a :class:`Report`
(``str(report)``, ``report.to_markdown()``, ``report.save("report.html")``).

Where the numbers come from (one home per fact):

* **Upper bounds** are the backends' own ``plan().predicted_excess_risk`` — the planner is run
  on a *what-if* copy of the problem whose rates carry a different public n (:func:`at_n`, in
  :mod:`.whatif`; only
  the row count used for sensitivities changes, the group masses stay declared).  The n needed
  for α is found by bisection on log n over that function (bounds are non-increasing in n; a
  bound that plateaus above α — the iterative backends cap T — gives n = ∞).
* **Lower bounds** ([A] Thm 6.1: n ≥ Ω(K/(εα)) for pure ε; Thm 6.2: n ≥ Ω(√K/(εα)) for (ε, δ)
  with δ = o(1/n)) are *orders*, reported with the constant 1; K = |support of f, g|.
* **Equalized odds** ([A] Cor 8.9 against [J]): |A|⁴·VC/(εα³) against |A|³·VC/(εα^{3+r}),
  r from min q_ay = α^{(1+r)/2}; orders with constant 1 (Õ hides logs).
* **Measurements** rerun the backends on ``data.subsample(m)`` — the problem is rebuilt by the
  ``build(data) -> Problem`` callable you pass (expressions are tied to one ``pf.rates`` call,
  so a Problem cannot be rebuilt without it; with no ``build`` only the full data is measured).
  The reference min h is computed *non-privately* (a measurement, never released): the minimum
  over the finite set for single-decision backends, over its mixtures (cvxpy) for mixture
  backends (:mod:`.measure`).
* **Vacuous bounds** are labelled: :class:`~.scale.Scale` holds the trivial bounds (interval ranges of
  f and g over the box, public) and translates a bound on the excess of h into objective and
  violation terms ([A] Lemma 4.1/Cor 4.2).
* **The page** (``to_html``) adds the certificate of a ``result``, its per-group rates on
  held-out ``test`` data (never the training data; :mod:`.held_out`), the objective/violation
  trade-off the bounds guarantee over a grid of (ε, α) (:func:`~.tradeoff.tradeoff`), the
  Analysis and the plan ranking as tables; see docs/report.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..analysis import formulas as F
from ..errors import InvalidInputError, InvalidPrivacyError
from ..privacy.spec import DP
from .held_out import check_held_out, group_rates
from .html import to_html as render_html
from .measure import has_exact_reference, measure_curve
from .scale import scale_of
from .text import to_markdown as render_markdown
from .text import to_text as render_text
from .tradeoff import tradeoff
from .whatif import N_MAX, bound_at, n_needed

# re-exported: the documented privfair.report.at_n and privfair.report.Scale (docs/report.md),
# and the records a Report holds, importable from here as before the split
from .held_out import GroupRates  # noqa: E402,F401
from .measure import MIXTURE_BACKENDS, Measurement  # noqa: E402,F401
from .scale import Scale  # noqa: E402,F401
from .tradeoff import TradeoffPoint  # noqa: E402,F401
from .whatif import at_n  # noqa: E402,F401


# ------------------------------------------------------------------------------ the report
@dataclass
class BackendBound:
    backend: str
    theorem: str
    bound: float              # at the data's n
    n_needed: float           # for the target α (inf: never, within the planner's ranges)
    formula: object = None    # sympy expression, when the backend exposes a pure formula
    curve: list = field(default_factory=list)   # [(n, bound)] on a log grid


@dataclass
class LowerBound:
    name: str
    theorem: str
    n: float
    applies: bool
    formula: object
    note: str = "order Ω(·) reported with the constant 1"


@dataclass
class Report:
    privacy: object
    alpha: float
    beta: float
    n: int
    K: int
    bounds: list
    refused: dict
    lower_bounds: list
    eo: dict
    measurements: list
    pareto: object = None
    theorems: list = field(default_factory=list)   # privfair.analysis.theorems.TheoremEntry, one each
    plans: object = None          # privfair.planning.planner.Plans: the Analysis and the plan ranking
    scale: object = None          # Scale: the trivial bounds each theorem bound is compared with
    result: object = None         # a released privfair.Result (its certificate), if given
    group_rates: object = None    # GroupRates of the result on held-out data, or None
    group_rates_note: str = ""    # why there is no per-group rate plot
    tradeoff: list = field(default_factory=list)   # TradeoffPoint: the bounds' trade-off
    tradeoff_note: str = ""       # why there is no trade-off from the bounds
    measure_note: str = ""        # why the excess risk was not measured, when asked to

    def __str__(self):
        return render_text(self)

    def to_markdown(self) -> str:
        return render_markdown(self)

    def _repr_markdown_(self):
        return self.to_markdown()

    def to_html(self, title=None, sections=()) -> str:
        """The self-contained page; ``title`` replaces its heading and ``sections`` —
        (heading, HTML fragment) pairs — go right after "At a glance" (e.g. a command's
        metrics; ``privfair.reports.html.problem_html(problem)`` for the problem)."""
        return render_html(self, title, sections)

    def save(self, path) -> str:
        """Write the self-contained HTML page (figures as base64 PNG) to ``path``."""
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self.to_html())
        return str(path)

    def within_bounds(self) -> bool:
        """True when every measured excess risk is at most its backend's bound at that n."""
        return all(m.within for m in self.measurements)


def _check(problem, alpha, beta, ns, seeds, privacy, build):
    from ..analysis.problem import Problem

    if not isinstance(problem, Problem):
        raise InvalidInputError("problem", problem, "pass a pf.Problem")
    if build is not None and not callable(build):
        raise InvalidInputError("build", build, "pass a callable build(data) -> pf.Problem")
    if not isinstance(privacy, DP):
        raise InvalidPrivacyError("privacy", privacy, "pass pf.DP(epsilon, delta, protect=...)")
    for name, v in (("alpha", alpha), ("beta", beta)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1:
            raise InvalidInputError(name, v, "must lie in (0, 1), e.g. 0.05")
    if isinstance(seeds, bool) or not isinstance(seeds, (int, np.integer)) or seeds < 1:
        raise InvalidInputError("seeds", seeds, "a positive number of seeds, e.g. 3")
    if ns is not None:
        ns = list(ns)
        if not ns:
            raise InvalidInputError("ns", ns, "pass at least one subsample size, or None")
        for m in ns:
            if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 2:
                raise InvalidInputError("ns", m, "subsample sizes are integers ≥ 2")
            if m > problem.rates.data.n:
                raise InvalidInputError("ns", m, f"a subsample size is at most the data's "
                                        f"n = {problem.rates.data.n}")
    return ns


def _backend_names(backends):
    """``backends`` as a tuple of names: a str is one name (not its letters)."""
    try:
        names = (backends,) if isinstance(backends, str) else tuple(backends)
    except TypeError:
        names = ()
    if not names or not all(isinstance(b, str) for b in names):
        raise InvalidInputError("backends", backends, "pass 'auto', 'all', a backend name or "
                                "a list of names")
    return names


def lower_bounds(K, privacy, alpha):
    """[A] Thm 6.1 and 6.2 as orders with the constant 1 (n ≥ K/(εα), n ≥ √K/(εα));
    the formulas are ``privfair.analysis.formulas.a61_n0`` / ``a62_n0``."""
    import sympy as sp

    n, Ks, e, a = sp.symbols("n K epsilon alpha", positive=True)
    sym = F.symbolic()
    eps = privacy.epsilon
    pure = LowerBound("pure ε", "[A] Thm 6.1", float(F.a61_n0(K, eps, alpha)), privacy.delta == 0,
                      sp.GreaterThan(n, F.a61_n0(Ks, e, a, ops=sym)))
    approx = LowerBound("(ε, δ), δ = o(1/n)", "[A] Thm 6.2", float(F.a62_n0(K, eps, alpha)),
                        privacy.delta > 0, sp.GreaterThan(n, F.a62_n0(Ks, e, a, ops=sym)))
    return [pure, approx]


def eo_comparison(problem, privacy, alpha):
    """[A] Cor 8.9 against [A] Cor C.2 ([J] Thm 4.4) for equalized odds: orders with constant 1
    (Õ hides logs); the formulas are ``privfair.analysis.formulas.a89_n0`` / ``ac2_n0`` (one home).

    VC: the decision set's ``vc_dimension``, else ⌈log₂|C|⌉ for a finite set; r from the declared
    (public) group-mass bound q: min q = α^{(1+r)/2}, r = max(0, 2 ln q/ln α − 1); r = 0 when no
    public bound is declared.  ``agarwal_corrected`` uses α⁴ (see ``theorems.ALPHA_POWER_NOTE``).
    """
    import sympy as sp

    from ..analysis import theorems as th

    ctx = th.Context(problem, None, privacy, alpha, 0.05)
    ds = problem.rates.decisions
    A, vc, r, q = th.eo_values(ctx)
    if vc is None:
        return None
    vc_src = (f"{type(ds).__name__}.vc_dimension" if getattr(ds, "vc_dimension", None) is not None
              else "finite set: VC ≤ ⌈log₂|C|⌉")
    eps = privacy.epsilon
    a_s, v_s, e_s, al, r_s = sp.symbols("A VC epsilon alpha r", positive=True)
    sym = F.symbolic()
    return {"A": A, "VC": vc, "vc_source": vc_src, "q_min": q, "r": r,
            "agarwal": F.a89_n0(A, vc, eps, alpha),
            "agarwal_corrected": F.a89_n0(A, vc, eps, alpha, power=4),
            "jagielski": F.ac2_n0(A, vc, r, eps, alpha),
            "formula_A": F.a89_n0(a_s, v_s, e_s, al, ops=sym),
            "formula_J": F.ac2_n0(a_s, v_s, r_s, e_s, al, ops=sym),
            "note": "orders with constant 1; [J] needs min q_ay ≤ α^{(1+r)/2}; [A]'s α³ as "
                    "printed (α⁴ with Thm 5.5's explicit T)"}


def _formula(name, plan):
    """The sympy formula of a backend's bound (``Backend.formula``), or None."""
    from privfair.backends import get

    return get(name).formula(plan)


def report(problem, privacy, alpha=0.05, beta=0.05, ns=None, measure=True, seeds=3, *,
           build=None, backends=("auto",), frontier=None, result=None, test=None,
           tradeoff_plot=True):
    """Sample-complexity report for ``problem`` under ``privacy``; see the module docstring.

    Parameters
    ----------
    problem : privfair.Problem
    privacy : privfair.DP
    alpha : float in (0, 1)
        Target accuracy: the bounds are solved for the n that reaches it.
    beta : float in (0, 1)
        Failure probability shown with the bounds (each backend's theorem holds w.p. ≥ 1 − its
        own ρ; see its plan) and the tolerated share of measured seeds above their bound.
    ns : list of int, optional
        Subsample sizes for the measured curve (default: 4 sizes up to the data's n); each at
        most the data's n (a larger size raises :class:`~privfair.errors.InvalidInputError`).
    measure : bool
        Run the backends on subsamples (needs ``build``; without it only the full data).
    seeds : int
    build : callable(Dataset) -> Problem, optional
        Rebuilds the problem on a subsample.
    backends : str or tuple of str
        Which backends to measure: "auto" (or ("auto",)) the planner's choice — the backend
        ``problem.solve(privacy, backend="auto")`` would run —, "all" every accepting one, or
        a backend name or a list of names (a str is one name).
    frontier : privfair.reports.pareto.ParetoTable, optional
        A frontier from :func:`privfair.reports.pareto` to embed (table and figure).
    result : privfair.Result, optional
        A released decision (``problem.solve(privacy, ...)``): the page shows its certificate
        and, with ``test``, its per-group rates.
    test : privfair.Dataset, optional
        Held-out data (not the training data: a report never shows exact statistics of the
        private training data — passing the training rows raises InvalidInputError) on which
        the per-group selection rate, TPR and FPR of ``result`` are plotted.
    tradeoff_plot : bool
        Plan the chosen backend over a grid of ε and α for the objective/violation trade-off
        the bounds guarantee (a few dozen plans; public: plans read the schema and n only).
    """
    ns = _check(problem, alpha, beta, ns, seeds, privacy, build)
    backends = _backend_names(backends)
    check_held_out(result, test, problem)
    alpha, beta = float(alpha), float(beta)
    data = problem.rates.data
    n = data.n
    plans = problem.plan(privacy, alpha=alpha)
    analysis = plans.analysis
    K = max(len(analysis.support), 1)
    grid = np.unique(np.geomspace(max(10, n // 100), max(100 * n, 10 ** 6), 25).astype(int))
    bounds = []
    for p in plans.ranked:
        fn = lambda m, b=p.backend: bound_at(problem, privacy, b, alpha, m)
        f = _formula(p.backend, p)
        # bounds are non-increasing in n: one that is ∞ at the grid's largest n and at N_MAX is
        # ∞ on the whole grid and never reaches α.  A backend whose theorem bounds no excess
        # risk (sgda's stationarity) plans for seconds at each n, and ~40 what-if plans of it
        # made a report take minutes; two settle it — none when the bound's own formula
        # carries an infinite constant (sgda's C_L = ∞: the theorem's constant is unspecified).
        if math.isinf(p.predicted_excess_risk) and (
                _infinite_constant(f) or (math.isinf(fn(int(grid[-1])))
                                          and math.isinf(fn(N_MAX)))):
            needed, curve = math.inf, [(int(m), math.inf) for m in grid]
        else:
            needed, curve = n_needed(fn, alpha, n), [(int(m), fn(m)) for m in grid]
        bounds.append(BackendBound(p.backend, p.theorem, float(p.predicted_excess_risk),
                                   needed, f, curve))
    accepted = [b.backend for b in bounds]
    if backends == ("all",):
        chosen = accepted
    elif backends == ("auto",):
        chosen = accepted[:1]
    else:
        chosen = [b for b in backends if b in accepted]
        missing = [b for b in backends if b not in accepted]
        if missing:
            raise InvalidInputError("backends", missing, f"these do not accept the problem; "
                                    f"accepting: {accepted}")
    measurements, measure_note = [], ""
    if measure and privacy.is_private and not has_exact_reference(problem):
        measure = False
        measure_note = ("No measured excess risk: measuring needs the exact minimum of h over a "
                        "finite decision set (pf.Thresholds or pf.FiniteSet without a surrogate) "
                        f"to compare with, and {type(problem.rates.decisions).__name__} has none; "
                        "the bounds above are the theorems' own.")
    if measure and chosen and privacy.is_private:
        if build is None:
            sizes = [n]
            build = lambda d: problem  # noqa: E731 - the full data only
        else:
            sizes = sorted(set(ns or np.unique(np.geomspace(max(20, n // 8), n, 4).astype(int))))
        measurements = measure_curve(build, data, privacy, chosen, sizes, seeds, alpha)
    from ..analysis import theorems as th

    ctx = th.Context(problem, analysis, privacy, alpha, beta,
                     plans={p.backend: p for p in plans.ranked}, refused=dict(plans.refused))
    scale = scale_of(problem, analysis)
    rates, rates_note = group_rates(result, test)
    points, t_note = [], ""
    top = (result.backend if result is not None and result.backend in accepted
           else (accepted[0] if accepted else None))
    if not tradeoff_plot:
        t_note = "No trade-off from the bounds: tradeoff_plot=False."
    elif not privacy.is_private:
        t_note = "No trade-off from the bounds: a non-private run has no privacy cost to trade."
    elif top is None:
        t_note = "No trade-off from the bounds: no accepting backend gives a bound."
    elif _nowhere_finite(top, bounds) and (
            _infinite_constant(next((b.formula for b in bounds if b.backend == top), None))
            or not _finite_at(problem, privacy, top, alpha)):
        # its theorem bounds no excess risk at this ε for any n ≤ N_MAX (sgda's stationarity
        # gap, lagrangian_sgda: ∞ at every n), nor at 4ε: the ε × α grid (24 plans, each a
        # PLD calibration of seconds: a README report took a minute on them) would be all ∞
        t_note = (f"No trade-off from the bounds: {top}'s bound is ∞ at ε = {privacy.epsilon:g} "
                  f"for every n up to {N_MAX:.0e} (and at 4ε on these data, or by a constant "
                  "of its formula that is ∞), so its ε × α grid was not planned.")
    else:
        points = tradeoff(problem, privacy, top, alpha, scale)
        if not points:
            t_note = f"No trade-off from the bounds: {top} gives no finite bound on this grid."
    return Report(privacy=privacy, alpha=alpha, beta=beta, n=n, K=K, bounds=bounds,
                  refused=dict(plans.refused), lower_bounds=lower_bounds(K, privacy, alpha),
                  eo=eo_comparison(problem, privacy, alpha), measurements=measurements,
                  pareto=frontier, theorems=_with_backend_n(th.entries(ctx), bounds),
                  plans=plans, result=result, scale=scale, group_rates=rates,
                  group_rates_note=rates_note, tradeoff=points, tradeoff_note=t_note,
                  measure_note=measure_note)


def _infinite_constant(formula) -> bool:
    """True when a backend's formula (``Backend.formula``: (equation, values)) gives one of its
    constants the value ∞ — the same pure function the plan evaluates, so the bound is ∞ at
    every n and ε (sgda's C_L: [L] Thm 3.4's constant is unspecified)."""
    if not formula:
        return False
    _, values = formula
    for v in values.values():
        try:
            if math.isinf(float(v)):
                return True
        except (TypeError, ValueError):   # a symbolic value that is not a number
            continue
    return False


def _nowhere_finite(backend, bounds) -> bool:
    """True when ``backend``'s bound at the report's ε is ∞ at every n of its curve and never
    reaches α (then ∞ up to N_MAX: bounds are non-increasing in n)."""
    b = next((b for b in bounds if b.backend == backend), None)
    return (b is not None and math.isinf(b.n_needed) and bool(b.curve)
            and all(math.isinf(v) for _, v in b.curve))


def _finite_at(problem, privacy, backend, alpha) -> bool:
    """Is ``backend``'s plan at 4ε (the trade-off grid's largest ε) finite on these data?"""
    try:
        chosen = problem.plan(DP(4 * float(privacy.epsilon), privacy.delta, privacy.protect),
                              backend=backend, alpha=alpha).chosen
    except Exception:   # a backend that refuses at 4ε: no point there
        return False
    return chosen is not None and math.isfinite(chosen.predicted_excess_risk)


def _with_backend_n(entries, bounds):
    """Tied entries (a backend's plan *is* the theorem's bound) take that backend's n for α."""
    by = {b.backend: b for b in bounds}
    for e in entries:
        if e.backend in by:
            e.n_needed = by[e.backend].n_needed
    return entries

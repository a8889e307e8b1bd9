"""The backend protocol: ``accepts`` → ``plan`` → ``run``.

A backend is one differentially private algorithm.  It states its theorem and preconditions
(``theorem``), answers whether an :class:`~privfair.analysis.compiler.Analysis` meets them
(``accepts``, with the reason when not), turns the analysis into a :class:`Plan` whose
hyper-parameters come from n, ε, δ and α only (never from private data without paying for it),
with the excess risk its theorem predicts, and finally ``run``s the plan, releasing everything
through :mod:`privfair.privacy` mechanisms that record their events in the accountant it is given.
Backends never re-derive constants: they read them from the Analysis.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from privfair.errors import BackendRefusedError, InvalidInputError

from .options import Param, check_params
from .options import unknown_option  # noqa: F401  (its home; backends import it from here)


@dataclass(frozen=True)
class Verdict:
    """Whether a backend accepts a problem, and why (not)."""

    ok: bool
    reason: str = ""

    def __bool__(self):
        return self.ok


class PlanParams(Mapping):
    """A plan's hyper-parameters: read-only once the plan is made, by key or by attribute.

    A plan is final (#17): ``run`` reads what ``plan`` chose and cannot change it, so what
    ``explain()`` printed before the run is what ran.  A missing name is an error that lists
    the names there are (a typo must not read as "absent, use a default").

    Examples
    --------
    >>> p = PlanParams({"T": 100, "lr": 0.5})
    >>> p.T, p["lr"], dict(p)
    (100, 0.5, {'T': 100, 'lr': 0.5})
    >>> p["T"] = 3
    Traceback (most recent call last):
    ...
    TypeError: 'PlanParams' object does not support item assignment
    """

    __slots__ = ("_values",)

    def __init__(self, values=()):
        object.__setattr__(self, "_values", dict(values))

    def __getitem__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise KeyError(f"plan parameter {name!r} is not set; this plan has "
                           f"{sorted(self._values)}") from None

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"plan parameter {name!r} is not set; this plan has "
                                 f"{sorted(self._values)}") from None

    def __setattr__(self, name, value):
        raise AttributeError("a plan's parameters are final (made by Backend.plan)")

    def __iter__(self):
        return iter(self._values)

    def __len__(self):
        return len(self._values)

    def __repr__(self):
        return f"PlanParams({self._values!r})"

    def __reduce__(self):
        return (PlanParams, (self._values,))

    def with_defaults(self, **values) -> "PlanParams":
        """A copy with ``values`` added where the name is not set (the planner's own entries,
        declared in :data:`PLANNER_PARAMS` and checked against it)."""
        check_params(PLANNER_PARAMS, values, "", where="backends.base.PLANNER_PARAMS",
                     who="the planner")
        return PlanParams({**values, **self._values})


#: the parameters the planner adds to every plan it ranks (``PlanParams.with_defaults``), on top
#: of each backend's own :attr:`Backend.plan_params`
PLANNER_PARAMS: tuple = (
    Param("group_mass_share", float, "the share of ε the planner spends on a private estimate of "
          "the group masses before this plan's releases (0: none)", optional=True),
)


@dataclass
class Plan:
    """A backend's plan for one problem: hyper-parameters, budget split, predicted risk.

    Attributes
    ----------
    backend : str
    privacy : privfair.DP
        The budget this plan spends (the part left after any group-mass estimate).
    params : PlanParams
        Hyper-parameters (T, G, τ, step sizes, grid sizes, ...), each chosen from n, ε, δ, α;
        given as a dict, read-only once the plan is made (``plan.params.T`` or ``["T"]``),
        and checked against the backend's declaration (:attr:`Backend.plan_params`).
    budget : list of (str, float, float)
        The planned releases: (what, ε, δ) — for the explanation; the accountant is the
        authority on the total.
    predicted_excess_risk : float
        The theorem's bound on the excess of h over its minimum (inf when no bound applies).
    theorem : str
        The theorem (and paper) the bound and the privacy proof come from.
    notes : list of str
    rank : int
        The planner's first sort key (smaller first; ties by ``predicted_excess_risk``): 0 for
        a backend that expects to do well on this problem for a reason it states in
        ``rank_reason`` (shown by ``explain()``), 1 otherwise.
    rank_reason : str
    schedule : privfair.privacy.Schedule or None
    """

    backend: str
    privacy: object
    analysis: object
    problem: object
    params: dict = field(default_factory=dict)
    budget: list = field(default_factory=list)
    predicted_excess_risk: float = math.inf
    theorem: str = ""
    notes: list = field(default_factory=list)
    rank: int = 1
    rank_reason: str = ""
    #: the plan's releases (:class:`privfair.privacy.Schedule`), fitted once at plan time and
    #: drawn in ``run`` through ``schedule.open(accountant, rng)``; None for a plan without
    #: noise (ε = ∞) or a backend that keeps several schedules in ``params``
    schedule: object = None

    def __post_init__(self):
        self.params = PlanParams(self.params)
        # the registry is read at call time (a test may swap it): a registered backend's plan
        # must match its declaration; a stand-in without one is not checked
        from privfair.backends import BACKENDS

        backend = BACKENDS.get(self.backend)
        if backend is not None:
            backend.check_plan_params(self.params)

    def explain(self) -> str:
        """The plan in a few lines, each wrapped to ``privfair.util.text.WIDTH`` characters."""
        from privfair.util.text import wrap_text

        return wrap_text("\n".join(self.explain_lines()))

    def bound_terms(self) -> dict | None:
        """``predicted_excess_risk`` in the problem's own terms, and whether it says anything.

        For the backends whose bound E is on h = f + G·max(0, g) relative to the best decision
        of the set (:attr:`Backend.bound_on_h`): every decision c it returns has
        f(c) ≤ h(c) ≤ min h + E ≤ OPT + E (OPT the best feasible f), so f is within E of OPT —
        vacuous once E reaches the width of f's range, which any decision meets — and
        G·max(0, g(c)) = h(c) − f(c) ≤ E + sup f − inf f, so the violation is at most
        (E + width f)/G ([A] Lemma 4.1), vacuous once it reaches sup g.  The ranges are sound
        outer bounds (:func:`objective_range`, ``g.range()``), so "vacuous" is never claimed
        wrongly.  Returns None when E is not finite, the backend's bound is on something else,
        or the rates use a surrogate loss.

        Keys: ``excess`` (E), ``objective_range`` ((lo, hi)), ``objective_vacuous`` (bool) and,
        with constraints, ``violation_bound``, ``sup_g``, ``violation_vacuous``.
        """
        E = self.predicted_excess_risk
        if not (isinstance(E, (int, float)) and math.isfinite(E)) or self.problem is None:
            return None
        from privfair.backends import BACKENDS

        if not getattr(BACKENDS.get(self.backend), "bound_on_h", False):
            return None
        if getattr(getattr(self.problem, "rates", None), "surrogate", None) is not None:
            return None       # surrogate losses are not confined to the box: no sound range
        lo, hi = objective_range(self.problem)
        width = hi - lo
        if not math.isfinite(width):
            return None
        out = {"excess": float(E), "objective_range": (lo, hi), "objective_vacuous": E >= width}
        G = getattr(self.analysis, "G", None)
        if self.problem.g and G is not None and math.isfinite(G) and G > 0:
            v = (E + width) / G
            sup_g = max(float(g.range()[1]) for g in self.problem.g)
            out.update(violation_bound=v, sup_g=sup_g, violation_vacuous=v >= sup_g)
        return out

    def _bound_lines(self):
        t = self.bound_terms()
        if t is None:
            return "", []
        E, (lo, hi) = t["excess"], t["objective_range"]
        obj = f"f ≤ OPT + {E:.4g} (OPT the best feasible value)"
        if t["objective_vacuous"]:
            obj += f" — vacuous, f lies in [{lo:.4g}, {hi:.4g}]"
        parts = [obj]
        if "violation_bound" in t:
            viol = (f"violation max(0, g) ≤ ({E:.4g} + {hi - lo:.4g})/G = "
                    f"{t['violation_bound']:.4g} ([A] Lemma 4.1)")
            if t["violation_vacuous"]:
                viol += f" — vacuous, g ≤ {t['sup_g']:.4g} for every decision"
            parts.append(viol)
        if t["objective_vacuous"] and t.get("violation_vacuous", True):
            tag = " [vacuous]"
        elif t["objective_vacuous"]:
            tag = " [vacuous for the objective]"
        else:
            tag = ""
        return tag, ["  meaning: " + "; ".join(parts)]

    def explain_lines(self) -> list:
        """The unwrapped lines of :meth:`explain` (callers that indent them wrap afterwards).

        A finite bound is translated into the objective and the violation where the backend's
        theorem allows (:meth:`bound_terms`), and marked "[vacuous]" where it says nothing; the
        numbers themselves stay in ``predicted_excess_risk`` and ``params``."""
        tag, meaning = self._bound_lines()
        # an infinite prediction is the absence of a theorem, not a forecast: say so in words
        bound = (f"predicted excess risk {self.predicted_excess_risk:.4g}{tag}"
                 if math.isfinite(self.predicted_excess_risk) else "no proven excess-risk bound")
        lines = [f"{self.backend}: {bound} ({self.theorem})"] + meaning
        if self.rank_reason:
            lines.append(f"  ranked {'first' if self.rank == 0 else 'by its bound'}: "
                         f"{self.rank_reason}")
        if self.params:
            lines.append("  parameters: " + ", ".join(f"{k}={format_param(v)}" for k, v in self.params.items()))
        for what, eps, delta in self.budget:
            lines.append(f"  spends ε={eps:.4g}, δ={delta:.3g} on {what}")
        lines += [f"  note: {n}" for n in self.notes]
        return lines


def convex_program_verdict(problem, analysis, program: str) -> Verdict:
    """Whether f and every g are proven convex and have a cvxpy form — the preconditions of a
    backend that ends in a convex program over released statistics (``cells``,
    ``proxy_reductions``); ``program`` names that program in the refusal."""
    from privfair.errors import ModelingError

    if not analysis.is_convex:
        why = "; ".join(v for k, v in analysis.reasons.items() if k.startswith("convexity"))
        return Verdict(False, f"needs f and g convex ({program}): {why}")
    try:
        import cvxpy as cp

        x = cp.Variable(problem.rates.K)
        for e in [problem.f] + list(problem.g):
            e.to_cvxpy(x)
    except ModelingError as err:
        return Verdict(False, f"an expression has no cvxpy form: {err}")
    return Verdict(True)


def objective_range(problem):
    """``(lo, hi)``: a sound range of the objective f over every decision's ℓ.

    The interval range over the box [0, 1]^K (as the compiler's G uses it), tightened to
    [c + min_j w_j, c + max_j w_j] when f = w·ℓ + c reads joint frequencies only and the rates
    have no surrogate: those frequencies are non-negative and sum to 1 for every decision and
    mixture, so e.g. the error lies in [0, 1] rather than in [0, 2·#groups]."""
    import numpy as np

    lo, hi = problem.f.range()
    rates = getattr(problem, "rates", None)
    aff = problem.f.affine_form()
    if rates is None or getattr(rates, "surrogate", None) is not None or aff is None:
        return float(lo), float(hi)
    A, b = aff
    w = np.zeros(rates.K)
    w[:A.shape[1]] = np.asarray(A, dtype=float).reshape(-1)[:A.shape[1]]
    kj = int(getattr(rates, "K_joint", 0))
    if kj <= 0 or np.any(w[kj:] != 0):
        return float(lo), float(hi)
    c = float(np.asarray(b).reshape(-1)[0]) if np.size(b) else 0.0
    return max(float(lo), c + float(w[:kj].min())), min(float(hi), c + float(w[:kj].max()))


def format_param(v):
    """A parameter for :meth:`Plan.explain`: floats (also inside dicts, lists and tuples) to
    four significant digits."""
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k!r}: {_fmt_inner(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)) and len(v) > 3 and all(type(x) is type(v[0]) and x == v[0]
                                                       for x in v):
        return f"[{_fmt_inner(v[0])}] × {len(v)}"        # thirty equal γ say so once
    if isinstance(v, (list, tuple)) and any(isinstance(x, (float, dict)) for x in v):
        inner = ", ".join(_fmt_inner(x) for x in v)
        return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
    return str(v)


def _fmt_inner(v):
    return format_param(v) if isinstance(v, (float, dict, list, tuple)) else repr(v)


PUBLIC = "public"
RELEASED = "released"


def check_exposure(backend, result) -> None:
    """Raise (an internal error: the result is not returned) when ``result.info`` carries a
    key that ``backend`` does not declare in :attr:`Backend.exposes`."""
    undeclared = sorted(set(result.info) - set(backend.exposes))
    if undeclared:
        raise RuntimeError(f"internal error: backend {backend.name} exposes undeclared "
                           f"Result.info field(s) {undeclared}; declare their provenance in "
                           f"{type(backend).__name__}.exposes")


class Backend:
    """Base class; subclasses set ``name``, ``theorem`` and implement the three methods."""

    name: str = ""
    theorem: str = ""
    #: True when ``predicted_excess_risk`` bounds h(c) − min h over the decision set (h with
    #: the Analysis' G): :meth:`Plan.bound_terms` then translates it into objective and violation
    bound_on_h: bool = False
    #: True when the backend runs without private data (ε = ∞ reference runs only)
    non_private_only: bool = False
    #: True when every plan the backend makes has ``rank = 0`` (ranked first): a solve plans it
    #: before the others and skips them once it has a plan (``planner.plan(first_only=True)``)
    always_ranks_first: bool = False
    #: True when the backend's sensitivities use Δℓ, so conditional rates need a group-mass
    #: bound (the planner then spends a share of ε estimating it when none was declared)
    needs_group_mass: bool = True
    #: every solve option the backend (and the helpers it calls) reads from ``options``; the
    #: planner refuses any other name before anything is spent.  None: not declared, no check.
    option_names: tuple | None = None
    #: the declarative option table (:class:`backends.options.Option`, one entry per option:
    #: type, range, default, doc).  A backend that sets it gets ``option_names`` from it and
    #: validates with :meth:`options_from` at plan time (before anything is spent);
    #: ``privfair backends`` lists it.
    option_table: tuple | None = None
    #: the declaration of the plan's parameters (:class:`backends.options.Param`: name, type,
    #: doc, optional), one entry per name ``plan`` may put in ``Plan.params``; a plan that sets
    #: an undeclared name, misses a required one or gives one a value of another type is refused
    #: when it is made (a TypeError: the backend's bug).  None: not declared, no check (a test's
    #: stand-in); every registered backend declares it (tests/test_plan_params.py).
    plan_params: tuple | None = None

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.__dict__.get("option_table") is not None and "option_names" not in cls.__dict__:
            cls.option_names = tuple(o.name for o in cls.option_table)

    def options_from(self, options: dict) -> dict:
        """``options`` validated against :attr:`option_table`, defaults filled in."""
        from .options import validate

        return validate(self.option_table or (), options, self.name)

    def check_plan_params(self, values) -> None:
        """Raise TypeError when ``values`` do not match :attr:`plan_params` (with the
        planner's :data:`PLANNER_PARAMS`); nothing when the backend declares none."""
        if self.plan_params is not None:
            check_params(tuple(self.plan_params) + PLANNER_PARAMS, values, self.name,
                         where=f"{type(self).__name__}.plan_params")

    #: every key the backend puts in ``Result.info``, with its provenance (issue #16): PUBLIC
    #: (a function of the schema, n, ε, δ, the options and the problem only — identical on
    #: neighbouring datasets) or RELEASED (a recorded release, or post-processing of releases
    #: and public inputs).  An exact statistic of the private rows has no place here; the
    #: planner refuses a result with an undeclared key (:func:`check_exposure`), and
    #: tests/test_privacy_exposure.py runs every backend on neighbours and compares the
    #: PUBLIC fields.
    exposes: dict = {}

    def accepts(self, problem, analysis) -> Verdict:  # pragma: no cover - interface
        raise NotImplementedError

    def plan(self, problem, analysis, privacy, options: dict) -> Plan:  # pragma: no cover
        raise NotImplementedError

    def run(self, plan: Plan, *, rng, accountant, device: str = "cpu", progress: bool = True):
        raise NotImplementedError  # pragma: no cover

    def formula(self, plan: Plan):
        """The plan's bound as a sympy formula, or None where the backend exposes none.

        Returns ``(sympy.Eq(excess, expr), values)`` where ``values`` maps every free symbol's
        name of ``expr`` except ``epsilon`` (and ``delta``, ``n``, ``alpha`` where they occur) to
        its value in this plan.  The expression must come from the same pure function the plan
        evaluates numerically (one home per formula), so that substituting ``values`` and the
        plan's privacy gives back ``plan.predicted_excess_risk`` — tests check this.
        """
        return None

    def refuse(self, reason: str):
        """Raise the typed refusal (nothing has been spent when this is called)."""
        raise BackendRefusedError("backend", self.name, reason)

    def __repr__(self):
        return f"<backend {self.name}: {self.theorem}>"

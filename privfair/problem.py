"""Problems: ``Problem(minimize(f), [g <= c, ...])``.

A problem is an objective over the statistic vector ℓ and a list of constraints, all built from
the same :class:`privfair.expr.Variable` (the ``vector`` of one :class:`privfair.stats.Rates`).
It is only a description; :meth:`Problem.analyze` runs the compiler.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ModelingError
from .expr import Constant, Constraint, Expression


@dataclass(frozen=True)
class Minimize:
    """The objective ``minimize f(ℓ)``; build it with :func:`minimize`."""

    expr: Expression


def _as_expression(value, field):
    if isinstance(value, Expression):
        return value
    try:
        return Constant(float(value))
    except (TypeError, ValueError):
        raise ModelingError(field, value, "pass an expression over r.vector, e.g. r.error()") from None


def minimize(expr) -> Minimize:
    """Objective: minimize a scalar expression of ℓ.

    Examples
    --------
    >>> import privfair as pf
    >>> l = pf.Variable(2)
    >>> pf.minimize(l[0] + l[1]).expr.curvature
    'affine'
    """
    expr = _as_expression(expr, "objective")
    if expr.shape != ():
        raise ModelingError("objective", expr,
                            f"the objective must be a scalar, got shape {expr.shape}; "
                            "wrap it in pf.sum(...) or pf.maximum(...)")
    return Minimize(expr)


def maximize(expr) -> Minimize:
    """Objective: maximize a scalar expression (minimizes its negation)."""
    return minimize(-_as_expression(expr, "objective"))


class Problem:
    """A constrained group-objective problem: minimize f(ℓ) subject to g_j(ℓ) ≤ 0.

    Parameters
    ----------
    objective : Minimize
        From :func:`minimize` or :func:`maximize`.
    constraints : list of Constraint, optional
        Built by comparisons such as ``pf.lse(...) <= 0.02``; each is normalised to g_j(ℓ) ≤ 0.

    Examples
    --------
    >>> import numpy as np, privfair as pf
    >>> rng = np.random.default_rng(0)
    >>> data = pf.Dataset(rng.normal(size=(40, 2)), rng.integers(0, 2, 40),
    ...                   sensitive=np.repeat(["a", "b"], 20), group_names=["a", "b"])
    >>> r = pf.rates(pf.Thresholds(np.linspace(-1, 1, 5), score=0), data)
    >>> prob = pf.Problem(pf.minimize(r.error()),
    ...                   [pf.abs(r.fp["a"] - r.fp["b"]) <= 0.05])
    >>> prob.analyze(pf.DP(1.0)).curvature["f"]
    'affine'
    """

    def __init__(self, objective, constraints=()):
        if isinstance(objective, Expression):
            objective = minimize(objective)
        if not isinstance(objective, Minimize):
            raise ModelingError("objective", objective, "pass pf.minimize(expr) or pf.maximize(expr)")
        constraints = list(constraints)
        for j, c in enumerate(constraints):
            if not isinstance(c, Constraint):
                raise ModelingError(f"constraints[{j}]", c,
                                    "build constraints with comparisons, e.g. expr <= 0.02")
            if c.expr.shape != ():
                raise ModelingError(f"constraints[{j}]", c,
                                    "constraints must be scalar; wrap vectors in pf.maximum(...)")
        self.objective = objective
        self.constraints = constraints
        self.variable = self._single_variable()
        self.rates = getattr(self.variable, "owner", None)

    def _single_variable(self):
        found = {}
        for e in [self.objective.expr] + [c.expr for c in self.constraints]:
            for v in _variables(e):
                found[id(v)] = v
        if len(found) != 1:
            raise ModelingError(
                "problem", f"{len(found)} variables",
                "objective and constraints must be written over the same r.vector (one pf.rates(...) call)")
        return next(iter(found.values()))

    @property
    def f(self) -> Expression:
        """The objective expression f."""
        return self.objective.expr

    @property
    def g(self) -> list:
        """The normalised constraint expressions g_j (feasible when g_j ≤ 0)."""
        return [c.expr for c in self.constraints]

    def value(self, l):
        """(f(ℓ), [g_j(ℓ)]) at a statistic vector ℓ."""
        return float(self.f.value(l)), [float(g.value(l)) for g in self.g]

    def with_group_mass(self, bound, source: str = "private") -> "Problem":
        """The same problem with ℓ's conditional rates clamped by a group-mass lower bound.

        Used after a private estimate: the expressions keep their coordinates (the layout of ℓ
        does not change), only the rates' denominators and sensitivities do.
        """
        import copy

        new = copy.copy(self)
        new.rates = self.rates.with_group_mass_bound(bound, source=source)
        return new

    def plan(self, privacy, backend: str = "auto", alpha: float = 0.05, **options):
        """Rank the backends for this problem; ``.explain()`` says why one is chosen.

        See :func:`privfair.planner.plan`.  Under a private ``privacy`` the data's schema must be
        public (:meth:`privfair.Dataset.check_public_schema`).
        """
        from .planner import plan

        self._check_public_schema(privacy)
        return plan(self, privacy, backend=backend, alpha=alpha, **options)

    def solve(self, privacy, backend: str = "auto", device: str = "cpu", seed=None,
              progress: bool = True, alpha: float = 0.05, budget=None, **options):
        """Solve privately and return a :class:`privfair.result.Result` with its certificate.

        Parameters
        ----------
        privacy : privfair.DP
            The (ε, δ) to spend and the neighbouring relation.  ``epsilon=float("inf")`` gives a
            non-private reference run.
        backend : str, default "auto"
            A name from ``privfair.backends.BACKENDS``, or "auto" (smallest predicted risk).
        device : {"cpu", "cuda", "torch"}
            numpy on CPU, torch on GPU, or torch on CPU.
        seed : int or numpy.random.Generator, optional
            Reproducible randomness (tests); default draws from the OS entropy source.
        progress : bool
            Show a progress bar on long runs.
        alpha : float
            Target accuracy: sets G, T and τ.
        budget : privfair.privacy.BudgetFilter, optional
            The dataset's running budget; the solve reserves (ε, δ) from it before drawing any
            noise and spends nothing if it is refused or fails.

        Raises
        ------
        InvalidInputError
            Under a private ``privacy``, if the dataset's groups (or, under ``protect="row"``,
            its labels) were read from the data instead of declared
            (:meth:`privfair.Dataset.check_public_schema`); nothing is spent.
        """
        from .planner import solve

        self._check_public_schema(privacy)
        return solve(self, privacy, backend=backend, device=device, seed=seed,
                     progress=progress, alpha=alpha, budget=budget, **options)

    def _check_public_schema(self, privacy):
        """The groups and labels a private solve depends on are declared, not read from the
        private data (see :meth:`privfair.Dataset.check_public_schema`)."""
        data = getattr(self.rates, "data", None)
        check = getattr(data, "check_public_schema", None)
        if check is not None:
            check(privacy)

    def analyze(self, privacy, alpha: float = 0.05):
        """Compile the problem under a privacy requirement; see :func:`privfair.compiler.analyze`."""
        from .compiler import analyze

        return analyze(self, privacy, alpha=alpha)

    def __repr__(self):
        lines = [f"minimize {self.f}"]
        lines += [f"  subject to {g} <= 0" for g in self.g]
        return "\n".join(lines)


def _variables(expr):
    from .expr import Variable

    stack, seen = [expr], []
    while stack:
        e = stack.pop()
        if isinstance(e, Variable):
            seen.append(e)
        stack.extend(getattr(e, "args", ()))
    return seen

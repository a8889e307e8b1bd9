"""Problems: ``Problem(Minimize(f), [g <= c, ...])``.

A problem is an objective over the statistic vector ℓ and a list of constraints, all built from
the same :class:`privfair.expr.Variable` (the ``vector`` of one :class:`privfair.statistics.stats.Rates`).
It is only a description; :meth:`Problem.analyze` runs the compiler and :meth:`Problem.solve`
a private backend, after which ``prob.status`` and ``prob.value`` read as in cvxpy — with the
privacy rule of :attr:`Problem.value`.
"""

from __future__ import annotations

from ..errors import InvalidInputError, ModelingError, PrivateFailureError, PrivfairError
from ..expr import Constant, Constraint, Equality, Expression
from ..expr.constraint import EQUALITY_FIX


def _as_expression(value, field):
    if isinstance(value, Expression):
        return value
    try:
        return Constant(float(value))
    except (TypeError, ValueError):
        raise ModelingError(field, value, "pass an expression over r.vector, e.g. r.error()") from None


class Objective:
    """Base of :class:`Minimize` and :class:`Maximize`.

    Attributes
    ----------
    target : Expression
        The scalar expression as written (maximized or minimized).
    expr : Expression
        The expression that is *minimized*: ``target`` for :class:`Minimize`, ``-target`` for
        :class:`Maximize`.  Backends, the compiler and :attr:`Problem.f` see this one, so a
        maximized expression must be concave for the problem to be convex.
    sense : {"minimize", "maximize"}
    """

    __slots__ = ("target", "expr")
    sense = "minimize"

    def __init__(self, expr):
        target = _as_expression(expr, "objective")
        if target.shape != ():
            raise ModelingError("objective", target,
                                f"the objective must be a scalar, got shape {target.shape}; "
                                "wrap it in pf.sum(...) or pf.maximum(...)")
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "expr", self._minimized(target))

    @staticmethod
    def _minimized(target):
        return target

    def value(self, l) -> float:
        """The objective as written (``target``) at a statistic vector ℓ."""
        return float(self.target.value(l))

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable; build a new objective")

    def __reduce__(self):            # copy and pickle through the constructor
        return type(self), (self.target,)

    def __repr__(self):
        return f"{type(self).__name__}({self.target!r})"


class Minimize(Objective):
    """The objective ``minimize f(ℓ)`` (cvxpy's spelling; :func:`minimize` is the same).

    Examples
    --------
    >>> import privfair as pf
    >>> l = pf.Variable(2)
    >>> pf.Minimize(l[0] + l[1]).expr.curvature
    'affine'
    """

    __slots__ = ()
    sense = "minimize"


class Maximize(Objective):
    """The objective ``maximize f(ℓ)``, solved as ``minimize −f(ℓ)`` (cvxpy's spelling;
    :func:`maximize` is the same).  For a convex problem f must be concave (e.g. a true-positive
    rate, ``pf.hmean`` of recalls); the compiler checks −f.

    Examples
    --------
    >>> import privfair as pf
    >>> l = pf.Variable(2)
    >>> obj = pf.Maximize(pf.hmean(l[0], l[1]))
    >>> obj.sense, obj.expr.curvature
    ('maximize', 'convex')
    """

    __slots__ = ()
    sense = "maximize"

    @staticmethod
    def _minimized(target):
        return -target


def minimize(expr) -> Minimize:
    """Objective: minimize a scalar expression of ℓ (the same as ``pf.Minimize(expr)``).

    Examples
    --------
    >>> import privfair as pf
    >>> l = pf.Variable(2)
    >>> pf.minimize(l[0] + l[1]).expr.curvature
    'affine'
    """
    return Minimize(expr)


def maximize(expr) -> Maximize:
    """Objective: maximize a scalar expression (the same as ``pf.Maximize(expr)``; it minimizes
    the negation)."""
    return Maximize(expr)


_NOT_SOLVED = "not solved"

class Problem:
    """A constrained group-objective problem: minimize f(ℓ) subject to g_j(ℓ) ≤ 0.

    Parameters
    ----------
    objective : Minimize or Maximize
        From ``pf.Minimize(expr)`` / ``pf.Maximize(expr)`` (or :func:`minimize` /
        :func:`maximize`); a bare expression is minimized.
    constraints : Constraint or list of Constraint, optional
        Built by comparisons such as ``pf.lse(...) <= 0.02``; each is normalised to g_j(ℓ) ≤ 0.
        A single constraint may be passed without a list (cvxpy insists on a list; nothing else
        could be meant here).

    Attributes
    ----------
    status : str
        ``"not solved"`` before :meth:`solve`; then ``"solved"``, ``"refused: <why>"`` (a typed
        refusal raised before any noise was drawn: nothing spent) or ``"failed: <why>"`` (the
        solve failed after touching the private data; see :class:`~privfair.errors.PrivateFailureError`).
    value : float or None
        The objective (as written: maximized or minimized) of the last released decision on the
        training data — **only after a non-private solve** (``pf.DP(float("inf"))``); ``None``
        otherwise.  See :attr:`value` for why, and :meth:`value_on` for held-out data.
    result : privfair.Result or None
        What the last successful :meth:`solve` returned.

    Examples
    --------
    >>> import numpy as np, privfair as pf
    >>> rng = np.random.default_rng(0)
    >>> data = pf.Dataset(rng.normal(size=(40, 2)), rng.integers(0, 2, 40),
    ...                   sensitive=np.repeat(["a", "b"], 20), group_names=["a", "b"])
    >>> r = pf.rates(pf.Thresholds(np.linspace(-1, 1, 5), score=0), data)
    >>> prob = pf.Problem(pf.Minimize(r.error()),
    ...                   [pf.abs(r.fp["a"] - r.fp["b"]) <= 0.05])
    >>> prob.analyze(pf.DP(1.0)).curvature["f"]
    'affine'
    >>> prob.status
    'not solved'
    """

    def __init__(self, objective, constraints=()):
        if isinstance(objective, Expression):
            objective = Minimize(objective)
        if not isinstance(objective, Objective):
            raise ModelingError("objective", objective,
                                "pass pf.Minimize(expr) or pf.Maximize(expr) "
                                "(pf.minimize / pf.maximize are the same)")
        if constraints is None:
            constraints = []                # as cvxpy: no constraints
        elif isinstance(constraints, (Constraint, Equality)):
            constraints = [constraints]     # one constraint without a list: unambiguous, accepted
        try:
            constraints = list(constraints)
        except TypeError:
            raise ModelingError("constraints", constraints,
                                "pass a constraint or a list of constraints, e.g. "
                                "[pf.abs(r.selection['a'] - r.selection['b']) <= 0.05]") from None
        for j, c in enumerate(constraints):
            if isinstance(c, Equality):
                raise ModelingError(f"constraints[{j}]", c, EQUALITY_FIX)
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
        self.status = _NOT_SOLVED
        self.result = None
        self._public_value = None   # (value,) once computed after a non-private solve
        self._private_solve = None

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

    def evaluate(self, l):
        """(f(ℓ), [g_j(ℓ)]) at a statistic vector ℓ (f is the minimized expression)."""
        return float(self.f.value(l)), [float(g.value(l)) for g in self.g]

    @property
    def value(self):
        """The objective of the released decision (cvxpy's ``prob.value``), or ``None``.

        After a **non-private** solve (ε = ∞) it is the objective, as written (a maximized
        expression reads as itself, not its negation), at ℓ of the released decision — the
        mixture Σ w_j ℓ(c_j, D) — on the training data.  After a **private** solve it is
        ``None``: that number is computed from the private rows and is not covered by the
        certificate (publishing it would spend privacy nobody accounted for; an exact value can
        single out a row).  Evaluate the released decision on held-out data with
        :meth:`value_on`.  Before a solve, or after a refused or failed one, it is ``None`` too.

        It is a plain attribute, as in cvxpy: (f(ℓ), [g_j(ℓ)]) at a statistic vector ℓ is
        :meth:`evaluate` (``prob.value(l)`` was its older spelling).
        """
        if self.status != "solved" or self.result is None or self._private_solve:
            return None
        if self._public_value is None:
            self._public_value = (self.objective.value(self.ell_of(self.result)),)
        return float(self._public_value[0])

    def value_on(self, data, result=None) -> float:
        """The objective, as written, of the released decision evaluated on ``data``.

        Parameters
        ----------
        data : privfair.Dataset
            Data with the training data's groups and labels — normally held-out data (a test
            split).  Its conditional rates use the group-mass bound the problem declared.
        result : privfair.Result, optional
            The decision to evaluate; default the last solve's (:attr:`result`).

        Raises
        ------
        InvalidInputError
            No solved result; ``data`` is the private training data of a private solve (its
            objective value is not covered by the certificate); or ``data``'s groups or labels
            differ from the training data's.
        """
        from ..data.dataset import Dataset

        result = result if result is not None else self.result
        if result is None:
            raise InvalidInputError("result", None, f"the problem is {self.status!r}; solve it "
                                    "first or pass result=")
        if not isinstance(data, Dataset):
            raise InvalidInputError("data", type(data).__name__, "pass a pf.Dataset (e.g. the "
                                    "test split) with the training data's groups and labels")
        r = self.rates
        private = self._private_solve if result is self.result else True
        if data is r.data and private:
            raise InvalidInputError("data", "the private training data",
                                    "the objective on the training data of a private solve is not "
                                    "covered by the certificate; pass held-out data")
        return self.objective.value(self.ell_of(result, data))

    def ell_of(self, result, data=None, field: str = "data"):
        """ℓ of ``result``'s randomized rule on ``data`` (default: the problem's own data) —
        no privacy check: :meth:`value_on` and the reports decide what may be evaluated where.

        A solve may return a rule of another decision set than the problem's: the held-out
        check's constant rule, or the trained rule mixed with it
        (:mod:`privfair.planning.holdout`, :mod:`privfair.planning.mixing`).  Its decisions
        mean nothing to the problem's set, so it is evaluated by its own 0-1 rates, in the same
        layout of ℓ."""
        ds = getattr(result, "decision_set", None)
        other = None if ds is None or ds is self.rates.decisions else ds
        if data is None and other is None:
            rates = self.rates
        else:
            rates = self.rates_on(self.rates.data if data is None else data, field=field,
                                  decisions=other)
        return rates.evaluate_mixture(result.decisions, result.weights)

    def rates_on(self, data, field: str = "data", decisions=None):
        """ℓ's layout — the same decision set, surrogate and group-mass bound — on other data
        (held-out data with the training data's groups and labels).  ``decisions``: another
        decision set to evaluate in the same layout (0-1 rates: no surrogate)."""
        from ..statistics.stats import Rates

        r = self.rates
        other = Rates(r.decisions if decisions is None else decisions, data,
                      r.surrogate if decisions is None else None, r.group_mass_bound,
                      feature_bound=r.feature_bound, group_mass_source=r.group_mass_source)
        if other.names != r.names:
            raise InvalidInputError(field, f"groups {data.groups}, labels {data.label_values}",
                                    f"needs the training data's groups {r.groups} and labels "
                                    f"{r.label_values} (declare them: group_names=, labels=)")
        return other

    def with_group_mass(self, bound, source: str = "private") -> "Problem":
        """The same problem with ℓ's conditional rates clamped by a group-mass lower bound.

        Used after a private estimate: the expressions keep their coordinates (the layout of ℓ
        does not change), only the rates' denominators and sensitivities do.
        """
        import copy

        new = copy.copy(self)
        new.rates = self.rates.with_group_mass_bound(bound, source=source)
        return new

    def minimizes_error(self) -> bool:
        """Whether the objective f is the misclassification rate Σ_g Σ_{y≠ŷ} joint[g, y, ŷ]
        (``r.error()``): affine, 0 at ℓ = 0, with that gradient — read off the expression
        (public).  The held-out check's floor compares errors then and f itself otherwise
        (docs/trust.md); ``lagrangian_sgda``'s recipe keeps the soft term for the plain
        unconstrained error.

        Examples
        --------
        >>> import numpy as np, privfair as pf
        >>> rng = np.random.default_rng(0)
        >>> data = pf.Dataset(rng.normal(size=(100, 2)), rng.integers(0, 2, 100),
        ...                   rng.choice(["a", "b"], 100), group_names=["a", "b"], labels=[0, 1])
        >>> r = pf.rates(pf.LinearClassifier(2), data)
        >>> pf.Problem(pf.minimize(r.error())).minimizes_error()
        True
        >>> pf.Problem(pf.minimize(pf.maximum(r.fnr["a"], r.fnr["b"]))).minimizes_error()
        False
        """
        import numpy as np

        f, lay = self.f, self.rates.layout
        if not f.is_affine():
            return False
        w = np.zeros(lay.K)
        for g in range(lay.G):
            for y in range(lay.L):
                for j in range(lay.L):
                    if y != j:
                        w[int(lay.joint[g, y, j])] = 1.0
        zero = np.zeros(lay.K)
        grad = np.asarray(f.grad(zero), dtype=float).reshape(-1)
        return (abs(float(f.value(zero))) < 1e-12 and grad.shape == w.shape
                and bool(np.allclose(grad, w)))

    def plan(self, privacy, backend: str = "auto", alpha: float = 0.05, **options):
        """Rank the backends for this problem; ``.explain()`` says why one is chosen.

        See :func:`privfair.planning.planner.plan`.  Under a private ``privacy`` the data's schema must be
        public (:meth:`privfair.Dataset.check_public_schema`).
        """
        from ..planning.planner import plan

        self._check_public_schema(privacy)
        return plan(self, privacy, backend=backend, alpha=alpha, **options)

    def solve(self, privacy, backend: str = "auto", device: str = "cpu", seed=None,
              progress=True, alpha: float = 0.05, budget=None, **options):
        """Solve privately and return a :class:`privfair.results.result.Result` with its certificate.

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
        progress : {True, "always", False}, default True
            True: a progress bar on stderr for steps that can take more than a few seconds
            (long iterative runs, a Monte-Carlo Gaussian width at plan time, a certified ERM
            solve), shown only when stderr is a terminal (or a Jupyter kernel), so logs, pipes
            and CI output get no bar fragments.  "always": the bar also when stderr is not a
            terminal.  False: never.  Anything else raises
            :class:`~privfair.errors.InvalidInputError` before anything is spent.
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
        from ..planning.planner import solve

        self.status, self.result = "not solved", None
        self._public_value = self._private_solve = None
        try:
            self._check_public_schema(privacy)
            result = solve(self, privacy, backend=backend, device=device, seed=seed,
                           progress=progress, alpha=alpha, budget=budget, **options)
        except PrivateFailureError as err:
            self.status = f"failed: {err}"
            raise
        except PrivfairError as err:        # typed, raised before any noise: nothing spent
            self.status = f"refused: {err}"
            raise
        except Exception as err:            # an untyped failure of a non-private run
            self.status = f"failed: {type(err).__name__}: {err}"
            raise
        self.result, self.status = result, "solved"
        self._private_solve = bool(getattr(privacy, "is_private", True))
        return result

    def _check_public_schema(self, privacy):
        """The groups and labels a private solve depends on are declared, not read from the
        private data (see :meth:`privfair.Dataset.check_public_schema`)."""
        data = getattr(self.rates, "data", None)
        check = getattr(data, "check_public_schema", None)
        if check is not None:
            check(privacy)

    def analyze(self, privacy, alpha: float = 0.05):
        """Compile the problem under a privacy requirement; see :func:`privfair.analysis.compiler.analyze`."""
        from .compiler import analyze

        return analyze(self, privacy, alpha=alpha)

    #: an entry longer than this many lines prints its first and last lines only in str()
    SHOWN_LINES = 12

    def _text(self, shown=None) -> str:
        # one entry per constraint; a long one (a constraint over every pair of many groups is
        # hundreds of characters) breaks between its terms, never inside one, continuation lines
        # hanging under the bracket they continue (privfair/util/pretty.py)
        from ..util.pretty import layout

        entries = [(f"{self.objective.sense} ", f"{self.objective.target}")]
        entries += [("  subject to ", f"{g} <= 0") for g in self.g]
        out = []
        for head, body in entries:
            lines = layout(body, col=len(head))
            lines[0] = head + lines[0]
            if shown is not None and len(lines) > shown:
                hidden = len(lines) - (shown - 1)      # shown - 3 first, 2 last
                indent = lines[1][:len(lines[1]) - len(lines[1].lstrip())]
                lines = (lines[:shown - 3]
                         + [f"{indent}... {hidden} more lines (repr(problem) prints them all)"]
                         + lines[-2:])
            out += lines
        return "\n".join(out)

    def __str__(self):
        """The problem as written, wrapped between terms; an entry of more than
        :attr:`SHOWN_LINES` lines shows its first and last lines (``repr`` shows all)."""
        return self._text(self.SHOWN_LINES)

    def __repr__(self):
        return self._text()


def _variables(expr):
    from ..expr import Variable

    stack, seen = [expr], []
    while stack:
        e = stack.pop()
        if isinstance(e, Variable):
            seen.append(e)
        stack.extend(getattr(e, "args", ()))
    return seen

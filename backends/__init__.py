"""privfair's differentially private solvers, one module (or subpackage) per algorithm.

Installed as ``privfair.backends``.  Each module states its theorem and preconditions at the
top and exposes one :class:`~privfair.backends.base.Backend` instance.

The registry is explicit: :data:`REGISTRY` is a table, one :class:`Entry` per backend, giving
its name, the module that defines it, its **priority** and the reason for that priority.
:data:`BACKENDS` maps names (as accepted by ``problem.solve(..., backend=...)``) to the
instances, in priority order.  The planner (``backend="auto"``) sorts the accepting backends'
plans by ``(plan.rank, plan.predicted_excess_risk, priority)``: the priority only breaks ties
between plans of equal rank and equal predicted risk — in practice between backends whose plans
predict no bound (∞), where it decides which one runs.  ``privfair backends`` lists the backends
in this order.

Adding a backend: write its module, end it with ``register(MyBackend())`` (the module's one
instance), and add an :class:`Entry` here, with the priority it should have among the others
and why.  A module that registers a name the table does not list, or a table entry whose module
registers nothing under its name, is an error at import time (never a silent reorder).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from .base import Backend, Plan, Verdict


@dataclass(frozen=True)
class Entry:
    """One row of the registry.

    Attributes
    ----------
    name : str
        The backend's name (``Backend.name``; ``solve(..., backend=name)``).
    module : str
        The module (relative to ``privfair.backends``) whose import registers the instance.
    priority : int
        The planner's last sort key (smaller first): breaks ties between plans of equal
        ``rank`` and equal ``predicted_excess_risk``.  Unique across the table.
    reason : str
        Why the backend sits at this priority (one line; ``privfair backends`` may show it).
    """

    name: str
    module: str
    priority: int
    reason: str


#: The backends, in priority order (the tie-break order of the planner).  Rule of thumb: on a
#: tie, the simplest certificate and the fewest releases win — a single pure-DP release before
#: iterative mechanisms, proven loss-vector methods before the cells proxy and the oracle-based
#: methods, the row-private ERM family next, and the backends that predict no bound (sgda,
#: lagrangian_sgda) last; lagrangian_sgda gets ahead of the others through ``rank = 0`` on its
#: plans, not through its priority.
REGISTRY: tuple = (
    Entry("exponential", ".loss_vector.exponential", 0,
          "one exponential-mechanism draw over a finite set: pure ε-DP, a single release, the "
          "simplest certificate"),
    Entry("frank_wolfe", ".loss_vector.frank_wolfe", 1,
          "convex f and g over the hull of loss vectors, with a proven bound (Cor B.5)"),
    Entry("cells", ".cells.cells", 2,
          "one release of proxy-cell statistics (analytic Gaussian + Laplace), then "
          "post-processing"),
    Entry("lopt", ".loss_vector.lopt", 3,
          "the general loss-vector method ([A] Algorithm 2): T private oracle calls and T − 1 "
          "loss releases; frank_wolfe (the same loss vectors, a smooth h) first on a tie"),
    Entry("postprocessing", ".reductions.postprocessing", 4,
          "[J] Algorithm 1: Laplace cell counts and an LP, for equalized-odds and parity gaps "
          "(randomized group thresholds of a base score)"),
    Entry("oracle_learner", ".reductions.oracle_learner", 5,
          "[J] Algorithm 3: a private Lagrangian game, many oracle releases"),
    Entry("output_perturbation", ".erm.output_perturbation", 6,
          "row-private ERM ([K] Thm 1): one analytic-Gaussian release of the ERM minimizer"),
    Entry("objective_perturbation", ".erm.objective_perturbation", 7,
          "row-private ERM: a perturbed objective and a certified minimizer (needs a smooth "
          "loss)"),
    Entry("dual_frank_wolfe", ".erm.dual_frank_wolfe", 8,
          "row-private ERM ([K] Algorithm 2): an iterative dual Frank–Wolfe, T exponential-"
          "mechanism selections"),
    Entry("sgda", ".sgda.sgda", 9,
          "DP-SGDA on ERMI ([L]): non-convex, its private plans predict no bound (∞); torch "
          "only"),
    Entry("proxy_reductions", ".reductions.proxy_reductions", 10,
          "protect='sensitive', binary labels, a LinearClassifier: a released proxy of the group, "
          "the reductions approach on public rows, released counts for the final mixture; no "
          "proven bound (∞), its plans rank first (rank = 0) up to 200,000 rows and it sits "
          "ahead of lagrangian_sgda: lower validation error wherever both accept "
          "(docs/lagrangian.md, 'Proxy reductions')"),
    Entry("lagrangian_sgda", ".lagrangian", 11,
          "private Lagrangian SGDA: no proven bound (∞); its plans rank first (rank = 0) on "
          "differentiable sets from measured numbers, so its priority only breaks ties where "
          "its plan is not ranked first"),
)

#: name → registry entry
ENTRIES: dict = {e.name: e for e in REGISTRY}

#: name → backend instance, in priority order (filled below from :data:`REGISTRY`)
BACKENDS: dict = {}

_registered: dict = {}     # what the modules' register() calls gave, before ordering


def register(backend: Backend) -> Backend:
    """Record a backend module's instance; :data:`BACKENDS` is then ordered by :data:`REGISTRY`.

    Called once, at the end of each backend module.  The name must be listed in
    :data:`REGISTRY` (with its priority and reason); a module imported after the registry is
    built (a plugin, a test's stand-in) is appended after the listed backends."""
    if backend.name not in ENTRIES:
        raise ValueError(f"backend {backend.name!r} is not in privfair.backends.REGISTRY: add an "
                         "Entry(name, module, priority, reason) for it")
    _registered[backend.name] = backend
    if BACKENDS:                        # the registry is already built: keep it complete
        BACKENDS[backend.name] = backend
    return backend


def priority(name: str) -> float:
    """The planner's tie-break key of ``name``: its registry priority; a backend added to
    :data:`BACKENDS` by hand (a test's stand-in) comes after every listed one, in the order it
    was added."""
    entry = ENTRIES.get(name)
    if entry is not None:
        return float(entry.priority)
    names = list(BACKENDS)
    return float(len(REGISTRY) + (names.index(name) if name in names else len(names)))


def get(name: str) -> Backend:
    """The backend called ``name`` (typed error listing the choices otherwise)."""
    from privfair.errors import InvalidInputError

    if name not in BACKENDS:
        raise InvalidInputError("backend", name, f"choose 'auto' or one of {sorted(BACKENDS)}")
    return BACKENDS[name]


def _build() -> None:
    """Import every listed module (each registers its instance), then fill :data:`BACKENDS` in
    priority order, checking that the table and the modules agree."""
    priorities = [e.priority for e in REGISTRY]
    if len(set(priorities)) != len(priorities):
        raise ValueError(f"privfair.backends.REGISTRY: priorities must be unique ({priorities})")
    for entry in REGISTRY:
        importlib.import_module(entry.module, __name__)
    for entry in sorted(REGISTRY, key=lambda e: e.priority):
        if entry.name not in _registered:
            raise ValueError(f"privfair.backends.REGISTRY lists {entry.name!r} but importing "
                             f"{entry.module} registered no backend of that name")
        BACKENDS[entry.name] = _registered[entry.name]


_build()

__all__ = ["Backend", "Plan", "Verdict", "Entry", "REGISTRY", "ENTRIES", "BACKENDS", "register",
           "priority", "get"]

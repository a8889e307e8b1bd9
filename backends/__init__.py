"""privfair's differentially private solvers, one module per algorithm.

Installed as ``privfair.backends``.  Each module states its theorem and preconditions at the
top and exposes one :class:`~privfair.backends.base.Backend` instance; :data:`BACKENDS` maps
names (as accepted by ``problem.solve(..., backend=...)``) to them.
"""

from __future__ import annotations

from .base import Backend, Plan, Verdict

BACKENDS: dict = {}


def register(backend: Backend) -> Backend:
    """Add a backend instance to :data:`BACKENDS` under its name."""
    BACKENDS[backend.name] = backend
    return backend


def get(name: str) -> Backend:
    from privfair.errors import InvalidInputError

    if name not in BACKENDS:
        raise InvalidInputError("backend", name, f"choose 'auto' or one of {sorted(BACKENDS)}")
    return BACKENDS[name]


# Import order = tie-break order of the planner.
from . import exponential  # noqa: E402,F401
from . import frank_wolfe  # noqa: E402,F401
from . import cells  # noqa: E402,F401
from . import lopt  # noqa: E402,F401
from . import postprocessing, oracle_learner  # noqa: E402,F401
from .erm import output_perturbation, objective_perturbation, dual_frank_wolfe  # noqa: E402,F401
from . import sgda  # noqa: E402,F401
from . import lagrangian  # noqa: E402,F401

__all__ = ["Backend", "Plan", "Verdict", "BACKENDS", "register", "get"]

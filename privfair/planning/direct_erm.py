"""``pf.sparse.fit``'s backend lookup: a direct row-private ERM run by a backend named by the
user — the planner's job for a :func:`privfair.models.sparse.glm` ERM, which has no Problem to plan.

It sits at the planner's level (tests/test_layers.py, ``LAYERS``): it resolves
the name in the backend registry and hands the backend instance to :func:`privfair.models.erm.fit`,
which lives below the backends and does the fit (issue #17: the decision-set module
:mod:`privfair.models.sparse` imports no backend; it calls this module at call time, as
``Problem.solve`` calls the planner).
"""

from __future__ import annotations

from ..models.erm import fit as _fit_with

__all__ = ["fit"]


def fit(erm, privacy, method="output_perturbation", seed=None, **options):
    """Run the row-private ERM backend ``method`` (a name, or a backend instance) on ``erm``;
    see :func:`privfair.models.sparse.fit`."""
    if isinstance(method, str):
        from privfair.backends import get      # the registry: at call time

        method = get(method)
    return _fit_with(erm, privacy, method, seed=seed, **options)

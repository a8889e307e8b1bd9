"""Compatibility only: the names of the former ``backends/_erm.py``, which is now the subpackage
:mod:`backends.erm` (installed as ``privfair.backends.erm``; its ``__init__`` maps the modules).

Kept for importers owned elsewhere — ``backends/_oracles.py`` (``row_coefficients``,
``private_weighted_erm``), tests/test_designs.py, tests/test_privacy_failures.py,
tests/test_backend_lopt.py and examples/ols_subgroup_weights.py.  New code imports from
``backends.erm.<module>``; delete this module when none of them is left (issue #17).
"""

from __future__ import annotations

from privfair.erm import ERM  # noqa: F401

from .erm.backend import ERMBackend, make_result  # noqa: F401
from .erm.constraint import (FINAL, LAGRANGE_CALLS, PROBE, PROBE_SHARE, RELEASE_SHARE,  # noqa: F401
                             RHO, U_FINAL, U_PROBE, ZERO_FRACTION, LagrangeSetup,
                             final_weight_bound, lagrange_budget, lagrange_releases, lagrange_run,
                             lagrange_setup, nu_interval, release_margin, with_weight_bound)
from .erm.direct import fit_erm, private_weighted_erm  # noqa: F401
from .erm.options import CONSTRAINT_OPTIONS, ERM_OPTIONS, PROJECT  # noqa: F401
from .erm.preconditions import check_common, suggest_l2  # noqa: F401
from .erm.reduction import (DENOMINATORS, cell_coefficients, constraint_direction,  # noqa: F401
                            erm_from_problem, erm_from_rates, multiplier_range,
                            objective_gradient, rescaling, row_coefficients, uses_conditional)
from .erm.releases import (ERMBudget, ERMRelease, LagrangeBudget, fit_rules,  # noqa: F401
                           schedule_for, spent_before)
from .erm.repair import repair_weights  # noqa: F401
from .erm.sensitivity import gradient_sensitivity  # noqa: F401
from .erm.solver import (MAX_FALLBACK_STEPS, MAX_ITER, TAU_REL, Solution,  # noqa: F401
                         certify_reason, fallback_steps, public_smoothness, solve,
                         solve_certified, tau_target)
from .erm.widths import dual_width, expected_gaussian_norm, primal_width  # noqa: F401
from .erm.noise import gamma_norm_noise  # noqa: F401

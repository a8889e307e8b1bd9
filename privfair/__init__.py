"""privfair: declarative private fair optimization with proven differential privacy.

State a constrained group-objective problem — minimize f(ℓ) subject to g(ℓ) ≤ 0 over the
per-group statistics ℓ of a decision — and let privfair check it, derive its constants and
sensitivities, and solve it with a differentially private backend.

Examples
--------
>>> import privfair as pf
>>> data = pf.datasets.load_adult("train").subsample(2000, rng=0)
>>> r = pf.rates(pf.LinearClassifier(data.n_features, radius=1.0), data,
...              surrogate="logistic", group_mass_bound=0.02)
>>> prob = pf.Problem(pf.minimize(r.error()),
...                   [pf.lse(pf.abs(r.fpr["Female"] - r.fpr["Male"]),
...                           pf.abs(r.tpr["Female"] - r.tpr["Male"]), eta=50) <= 0.02])
>>> prob.analyze(pf.DP(1.0, 1e-6)).is_convex
True
"""

from __future__ import annotations

from . import datasets, errors, privacy
from .planning import holdout
from .statistics import metrics, scores
from .analysis.compiler import Analysis, analyze
from .data.dataset import Dataset
from .models.decisions import DecisionSet, FiniteSet, LinearClassifier, SoftmaxClassifier, Thresholds
from .models.cells import ProxyCells
from .models.postprocess import PostProcessed
from .models.torch_model import TorchModel  # torch is imported lazily
from .expr import (Constant, Constraint, Expression, Variable, abs, gmean, hmean, hstack, lse,
                   maximum, norm1, norm2, norm_inf, pos, smax, square, sum)
from .privacy import Accountant, BudgetFilter, Certificate
from .privacy.spec import DP
from .results.result import Result
from .analysis.problem import Maximize, Minimize, Objective, Problem, maximize, minimize
from .statistics.stats import Rates, estimate_group_mass_bound, rates
from .models import norms, sparse  # noqa: E402
from .models.sparse import SparseLinear  # noqa: E402
from .reports.report import Report, report  # noqa: E402
from .reports.pareto import pareto  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "scores", "holdout", "DP", "BudgetFilter", "Accountant", "Certificate", "Result", "Dataset", "datasets", "errors", "metrics", "privacy",
    "DecisionSet", "FiniteSet", "Thresholds", "LinearClassifier", "SoftmaxClassifier", "ProxyCells", "PostProcessed", "TorchModel",
    "rates", "Rates", "estimate_group_mass_bound",
    "Expression", "Variable", "Constant", "Constraint",
    "abs", "maximum", "pos", "sum", "norm1", "norm2", "norm_inf", "square", "lse", "smax",
    "gmean", "hmean", "hstack",
    "Problem", "Minimize", "Maximize", "Objective", "minimize", "maximize", "Analysis", "analyze",
    "norms", "sparse", "SparseLinear",
    "report", "Report", "pareto",
]


# The import paths the user documentation tells users to import from, kept from before the
# layers became subpackages (#17 item 4): ``from privfair.scores import public_score``
# (examples/), ``privfair.metrics`` (docs/sklearn.md), ``from privfair.report import at_n``
# (docs/report.md, docs/cli.md), and the other modules this namespace exposes by name
# (``pf.holdout``, ``pf.norms``, ``pf.sparse``, ``pf.pareto``) — each the same module object
# under its documented name.  All of them are imported above anyway, so an alias costs nothing
# at import time.  Internal modules have no alias (``import privfair`` must not load the audit
# harness or a backend's helpers): developer docs name their layer path, e.g.
# ``privfair.statistics.stats`` (tests/test_documented_paths.py checks both).
import sys as _sys  # noqa: E402

DOCUMENTED_PATHS = {
    'privfair.holdout': 'privfair.planning.holdout',
    'privfair.metrics': 'privfair.statistics.metrics',
    'privfair.norms': 'privfair.models.norms',
    'privfair.pareto': 'privfair.reports.pareto',
    'privfair.report': 'privfair.reports.report',
    'privfair.scores': 'privfair.statistics.scores',
    'privfair.sparse': 'privfair.models.sparse',
}
for _old, _new in DOCUMENTED_PATHS.items():
    _sys.modules.setdefault(_old, _sys.modules[_new])
del _old, _new


def __getattr__(name):
    """``pf.sklearn`` loads :mod:`privfair.sklearn` on first use (scikit-learn is optional)."""
    if name == "sklearn":
        import importlib

        return importlib.import_module(".sklearn", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

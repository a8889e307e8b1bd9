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

from . import datasets, errors, holdout, metrics, privacy, scores
from .compiler import Analysis, analyze
from .data import Dataset
from .decisions import DecisionSet, FiniteSet, LinearClassifier, Thresholds
from .cells import ProxyCells
from .postprocess import PostProcessed
from .torch_model import TorchModel  # torch is imported lazily
from .expr import (Constant, Constraint, Expression, Variable, abs, gmean, hmean, hstack, lse,
                   maximum, norm1, norm2, norm_inf, pos, smax, square, sum)
from .privacy import Accountant, BudgetFilter, Certificate
from .privacy.spec import DP
from .result import Result
from .problem import Maximize, Minimize, Objective, Problem, maximize, minimize
from .stats import Rates, estimate_group_mass_bound, rates
from . import norms, sparse  # noqa: E402
from .sparse import SparseLinear  # noqa: E402
from .report import Report, report  # noqa: E402
from .pareto import pareto  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "scores", "holdout", "DP", "BudgetFilter", "Accountant", "Certificate", "Result", "Dataset", "datasets", "errors", "metrics", "privacy",
    "DecisionSet", "FiniteSet", "Thresholds", "LinearClassifier", "ProxyCells", "PostProcessed", "TorchModel",
    "rates", "Rates", "estimate_group_mass_bound",
    "Expression", "Variable", "Constant", "Constraint",
    "abs", "maximum", "pos", "sum", "norm1", "norm2", "norm_inf", "square", "lse", "smax",
    "gmean", "hmean", "hstack",
    "Problem", "Minimize", "Maximize", "Objective", "minimize", "maximize", "Analysis", "analyze",
    "norms", "sparse", "SparseLinear",
    "report", "Report", "pareto",
]


def __getattr__(name):
    """``pf.sklearn`` loads :mod:`privfair.sklearn` on first use (scikit-learn is optional)."""
    if name == "sklearn":
        import importlib

        return importlib.import_module(".sklearn", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

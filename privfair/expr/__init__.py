"""The expression language over the statistic vector ℓ ∈ [0,1]^K (cvxpy-style atoms).

Every atom declares, in its own class, its value and gradient (numpy or torch), curvature and
monotonicity, range over the box, and Lipschitz and smoothness constants; the composition
rules live once in :class:`~privfair.expr.atom.Atom`.  See ``docs/language.md``.
"""

from __future__ import annotations

from .affine import Add, Div, HStack, LinearAtom, MatMul, Mul, Neg, Sum, hstack, sum
from .atom import Atom, Reduction
from .constraint import Constraint, Equality
from .elementwise import Abs, Pos, Square, abs, pos, square
from .expression import Expression, as_expression
from .indexing import Index
from .leaf import Constant, Variable
from .maximum import Maximum, maximum
from .means import GMean, HMean, gmean, hmean
from .norms import Norm1, Norm2, NormInf, norm1, norm2, norm_inf
from .smooth_max import Lse, Smax, lse, smax

__all__ = [
    # core
    "Expression", "Variable", "Constant", "Constraint", "Equality", "as_expression",
    # functions
    "abs", "pos", "square", "maximum", "sum", "norm1", "norm2", "norm_inf", "lse", "smax",
    "gmean", "hmean", "hstack",
    # node classes (for walking the tree)
    "Atom", "Reduction", "LinearAtom", "Add", "Neg", "Mul", "Div", "MatMul", "Sum", "Index",
    "HStack", "Abs", "Pos", "Square", "Maximum", "Norm1", "Norm2", "NormInf", "Lse", "Smax",
    "GMean", "HMean",
]

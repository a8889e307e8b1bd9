"""Linear atoms: y ↦ M y for a constant matrix M over the concatenated arguments.

``+``, unary ``-``, ``*`` and ``/`` by constants, ``@`` by a constant matrix, :func:`sum`,
indexing and :func:`hstack`.  Each declares only its matrix M; curvature (linear: both convex
and concave, non-decreasing where M ≥ 0), G = |M|, β_φ = 0 and the range follow.  When every
argument is affine the node is affine and its facts are exact: e = Aℓ + b with A = M·A_args.
"""

from __future__ import annotations

import builtins

import numpy as np

from ..errors import InvalidInputError, ModelingError
from ._numeric import fmt_const, fmt_num
from .atom import Atom
from .expression import PREC_ADD, PREC_MUL, Expression, as_expression, pad_columns


class LinearAtom(Atom):
    """Base of the linear atoms; subclasses define ``_matrix()`` of shape (m, n_in)."""

    def _matrix(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _M(self):
        return self._cached("M", lambda: np.asarray(self._matrix(), dtype=float))

    def is_atom_convex(self):
        return True

    def is_atom_concave(self):
        return True

    def atom_dependency(self):
        return self._M() != 0

    def atom_monotonicity(self, lo, hi):
        return np.sign(self._M())

    def atom_coordinate_lipschitz(self, lo, hi):
        return np.abs(self._M())

    def atom_smoothness(self, p, lo, hi):
        return np.zeros(self.size)

    def atom_bounds(self, lo, hi):
        M = self._M()
        return np.maximum(M, 0) @ lo + np.minimum(M, 0) @ hi, np.maximum(M, 0) @ hi + np.minimum(M, 0) @ lo

    def _compute_affine(self):
        affs = [a.affine_form() for a in self.args]
        if any(x is None for x in affs):
            return None
        K = self.K
        A = np.vstack([pad_columns(x[0], K) for x in affs])
        b = np.concatenate([x[1] for x in affs])
        M = self._M()
        return M @ A, M @ b

    def atom_forward(self, xp, y, Jy):
        M = xp.asarray(self._M(), like=y)
        return y @ M.T, self._chain(xp, M, Jy)


def _broadcast_size(shapes, field):
    sizes = {s[0] for s in shapes if s}
    if len(sizes) > 1:
        raise ModelingError(field, [tuple(s) for s in shapes],
                            "vector operands must have the same length (scalars broadcast)")
    return (sizes.pop(),) if sizes else ()


def _block_to(size_in, size_out):
    """Matrix mapping an argument of ``size_in`` entries to ``size_out`` (broadcasting scalars)."""
    return np.eye(size_out) if size_in == size_out else np.ones((size_out, 1))


class Add(LinearAtom):
    """Sum of expressions, with scalars broadcast against vectors: ``a + b - c``."""

    _prec = PREC_ADD
    name = "add"

    def __init__(self, *args):
        args = [as_expression(a) for a in args]
        super().__init__(args, _broadcast_size([a.shape for a in args], "operands of +"))

    def _matrix(self):
        return np.hstack([_block_to(a.size, self.size) for a in self.args])

    def _compute_cvx(self, x, memo):
        return builtins.sum((a.build_cvxpy(x, memo) for a in self.args[1:]),
                            self.args[0].build_cvxpy(x, memo))

    def _repr(self):
        parts = [repr(self.args[0])]
        for a in self.args[1:]:
            if isinstance(a, Neg):
                parts.append(f"- {self._wrap(a.args[0], PREC_MUL)}")
            elif type(a).__name__ == "Constant" and not a.shape and float(a.data) < 0:
                parts.append(f"- {fmt_num(-float(a.data))}")
            else:
                parts.append(f"+ {a!r}")
        return " ".join(parts)


class Neg(LinearAtom):
    """Negation ``-a``."""

    _prec = PREC_MUL
    name = "neg"

    def __init__(self, arg):
        super().__init__([as_expression(arg)], as_expression(arg).shape)

    def _matrix(self):
        return -np.eye(self.size)

    def _compute_cvx(self, x, memo):
        return -self.args[0].build_cvxpy(x, memo)

    def _repr(self):
        return f"-{self._wrap(self.args[0], PREC_MUL + 1)}"


def _as_coef(c, field):
    if isinstance(c, Expression):
        if c.variable is not None:
            raise ModelingError(field, c, "multiply or divide only by constants (numbers or numpy "
                                          "arrays); a product of two statistics is not supported — "
                                          "rewrite it, e.g. with pf.gmean for a geometric mean")
        c = c.value(np.zeros(0))
    if isinstance(c, bool):
        raise ModelingError(field, c, "pass a number or a numpy array")
    try:
        arr = np.array(c, dtype=float)
    except (TypeError, ValueError):
        raise ModelingError(field, c, "multiply or divide only by a number or a numpy array") from None
    if arr.ndim > 1:
        raise ModelingError(field, f"array of shape {arr.shape}", "use @ for a matrix product")
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(field, c, "constants must be finite")
    return arr


class Mul(LinearAtom):
    """Elementwise product with a constant ``coef`` (number or 1-D array): ``2 * a``."""

    _prec = PREC_MUL
    name = "mul"

    def __init__(self, arg, coef):
        arg = as_expression(arg)
        self.coef = _as_coef(coef, "coefficient")
        super().__init__([arg], _broadcast_size([arg.shape, self.coef.shape], "operands of *"))

    def _params(self):
        return {"coef": self.coef}

    def _factor(self):
        return self.coef

    def _matrix(self):
        f = np.broadcast_to(self._factor(), (self.size,))
        return f[:, None] * _block_to(self.args[0].size, self.size)

    def _compute_cvx(self, x, memo):
        import cvxpy as cp

        a = self.args[0].build_cvxpy(x, memo)
        return float(self.coef) * a if self.coef.ndim == 0 else cp.multiply(self.coef, a)

    def _repr(self):
        return f"{fmt_const(self.coef)} * {self._wrap(self.args[0], PREC_MUL + 1)}"


class Div(Mul):
    """Division by a non-zero constant ``a / c`` (stored as ``divisor``)."""

    name = "div"

    def __init__(self, arg, divisor):
        d = _as_coef(divisor, "divisor")
        if np.any(d == 0):
            raise InvalidInputError("divisor", divisor, "divide only by non-zero constants")
        self.divisor = d
        super().__init__(arg, 1.0 / d)

    def _params(self):
        return {"divisor": self.divisor}

    def _compute_cvx(self, x, memo):
        a = self.args[0].build_cvxpy(x, memo)
        return a / (float(self.divisor) if self.divisor.ndim == 0 else self.divisor)

    def _repr(self):
        return f"{self._wrap(self.args[0], PREC_MUL)} / {fmt_const(self.divisor)}"


class MatMul(LinearAtom):
    """Product with a constant matrix ``C @ a`` (C of shape (r, m)) or vector ``c @ a``."""

    name = "matmul"

    def __init__(self, arg, matrix):
        arg = as_expression(arg)
        C = np.array(matrix, dtype=float)
        if C.ndim not in (1, 2) or C.shape[-1] != arg.size or not arg.shape:
            raise ModelingError("matrix", f"shape {C.shape} @ expression of shape {arg.shape}",
                                "use a constant of shape (r, m) or (m,) with a vector expression "
                                "of length m")
        if not np.all(np.isfinite(C)):
            raise InvalidInputError("matrix", matrix, "constants must be finite")
        self.matrix = C
        super().__init__([arg], (C.shape[0],) if C.ndim == 2 else ())

    def _params(self):
        return {"matrix": self.matrix}

    def _matrix(self):
        return np.atleast_2d(self.matrix)

    def _compute_cvx(self, x, memo):
        return self.matrix @ self.args[0].build_cvxpy(x, memo)

    def _repr(self):
        return f"matmul({fmt_const(self.matrix) if self.matrix.ndim == 1 else 'C'}, {self.args[0]!r})"


class Sum(LinearAtom):
    """Sum of the entries of a vector expression (a scalar stays itself)."""

    name = "sum"

    def __init__(self, arg):
        super().__init__([as_expression(arg)], ())

    def _matrix(self):
        return np.ones((1, self.n_in))

    def _compute_cvx(self, x, memo):
        import cvxpy as cp

        return cp.sum(self.args[0].build_cvxpy(x, memo))

    def _repr(self):
        return f"sum({self.args[0]!r})"


class HStack(LinearAtom):
    """Concatenation of scalar and vector expressions into one vector."""

    name = "hstack"

    def __init__(self, *args):
        args = [as_expression(a) for a in args]
        if not args:
            raise ModelingError("hstack", "no arguments", "pass at least one expression")
        super().__init__(args, (builtins.sum(a.size for a in args),))

    def _matrix(self):
        return np.eye(self.n_in)

    def _compute_cvx(self, x, memo):
        return cvx_concat([a.build_cvxpy(x, memo) for a in self.args])

    def _repr(self):
        return f"hstack({self._args_repr()})"


def cvx_concat(exprs):
    """cvxpy: flatten each expression to 1-D and concatenate."""
    import cvxpy as cp

    return cp.hstack([cp.reshape(e, (e.size,), order="C") for e in exprs])


# ---------------------------------------------------------------------- user-facing builders
def add(*args) -> Expression:
    """Sum of expressions (flattening nested sums; adding a scalar 0 is a no-op)."""
    flat = []
    for a in args:
        a = as_expression(a)
        flat.extend(a.args if isinstance(a, Add) else [a])
    shape = _broadcast_size([a.shape for a in flat], "operands of +")
    kept = [a for a in flat if not (type(a).__name__ == "Constant" and not a.shape and float(a.data) == 0)]
    if kept and _broadcast_size([a.shape for a in kept], "operands of +") == shape:
        flat = kept
    return flat[0] if len(flat) == 1 else Add(*flat)


def multiply(expr, other) -> Expression:
    """``expr * other`` where one side is a constant.

    Raises
    ------
    ModelingError
        Both sides depend on ℓ (a product of statistics is not supported).
    """
    if isinstance(other, Expression) and other.variable is not None and expr.variable is None:
        expr, other = other, expr
    if isinstance(other, Expression) and other.variable is not None:
        raise ModelingError("product", f"({expr!r}) * ({other!r})",
                            "multiply only by constants (numbers or numpy arrays); a product of two "
                            "statistics is not supported")
    return Mul(expr, other)


def divide(expr, other) -> Expression:
    """``expr / other`` for a non-zero constant ``other``."""
    if isinstance(other, Expression) and other.variable is not None:
        raise ModelingError("divisor", other, "divide only by non-zero constants; a statistic in a "
                                              "denominator is not supported")
    return Div(expr, other)


def matmul(matrix, expr, left=True) -> Expression:
    """``matrix @ expr`` (left) or ``expr @ vector`` (right) with a constant."""
    if isinstance(matrix, Expression):
        raise ModelingError("matmul", matrix, "one side of @ must be a constant numpy array")
    C = np.asarray(matrix, dtype=float)
    if not left:
        if C.ndim != 1:
            raise ModelingError("matmul", f"expression @ array of shape {C.shape}",
                                "write C @ expr for a matrix; expr @ c needs a vector c")
    return MatMul(expr, C)


def sum(expr) -> Expression:  # noqa: A001 - mirrors cvxpy's name
    """Sum of the entries of an expression; a list or tuple of expressions is stacked first."""
    if isinstance(expr, (list, tuple)):
        expr = HStack(*expr)
    return Sum(as_expression(expr, "sum"))


def hstack(*args) -> Expression:
    """Concatenate scalar and vector expressions into one vector expression."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    return HStack(*args)

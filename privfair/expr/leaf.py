"""Leaves of the expression tree: the statistic vector ℓ (:class:`Variable`) and constants."""

from __future__ import annotations

import numbers

import numpy as np

from ..errors import InvalidInputError
from ._numeric import fmt_const
from .expression import Expression


class Variable(Expression):
    """The statistic vector ℓ ∈ [0,1]^K itself.

    Parameters
    ----------
    size : int
        K, the length of ℓ.
    names : sequence of str, optional
        A readable name per coordinate (e.g. ``"fpr[Female]"``), used in reprs and for
        indexing by name: ``v["fpr[Female]"]``.
    owner : object, optional
        Back-reference set by whoever creates ℓ (e.g. the :class:`privfair.statistics.stats.Rates`).
    name : str, default "l"
        How the vector prints.

    Examples
    --------
    >>> from privfair.expr import Variable
    >>> l = Variable(3, names=["fpr[a]", "fpr[b]", "err"])
    >>> l[0] - l["fpr[b]"]
    fpr[a] - fpr[b]
    >>> (l[0] - l[1]).lipschitz("l1")
    1.0
    """

    def __init__(self, size, names=None, owner=None, name: str = "l"):
        if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1:
            raise InvalidInputError("size", size, "pass the length K of ℓ, a positive integer")
        size = int(size)
        if names is not None:
            names = [str(n) for n in names]
            if len(names) != size:
                raise InvalidInputError("names", f"{len(names)} names",
                                        f"pass exactly one name per coordinate ({size})")
            if len(set(names)) != size:
                dup = sorted({n for n in names if names.count(n) > 1})
                raise InvalidInputError("names", dup, "coordinate names must be unique")
        self.names = names
        self.owner = owner
        self.name = str(name)
        super().__init__((), (size,))
        self.variable = self
        self._index_of = {n: k for k, n in enumerate(names)} if names else {}

    def coordinate_name(self, k: int) -> str:
        """Readable name of coordinate k (``names[k]`` or ``"l[k]"``)."""
        return self.names[k] if self.names else f"{self.name}[{k}]"

    def index_of(self, name: str) -> int:
        """Coordinate of a named entry.

        Raises
        ------
        InvalidInputError
            No coordinate has that name.
        """
        if name not in self._index_of:
            known = list(self._index_of)[:8]
            raise InvalidInputError("index", name, f"use one of the coordinate names {known}"
                                    + (" ..." if len(self._index_of) > 8 else "")
                                    if known else "this Variable has no coordinate names; "
                                                  "index by position")
        return self._index_of[name]

    def _compute_curvature(self):
        return "affine"

    def _compute_affine(self):
        return np.eye(self.size), np.zeros(self.size)

    def _compute_cvx(self, x, memo):
        return x

    def _repr(self):
        return self.name


class Constant(Expression):
    """A constant scalar or 1-D vector.

    Parameters
    ----------
    value : float or 1-D array_like
        Finite numbers.  The numeric value is available as ``.data`` (``.value(l)`` is the
        expression-wide evaluation method and returns the same numbers).
    """

    def __init__(self, value):
        try:
            data = np.array(value, dtype=float)
        except (TypeError, ValueError):
            raise InvalidInputError("constant", value, "pass a number or a 1-D array of numbers") from None
        if data.ndim > 1:
            raise InvalidInputError("constant", f"array of shape {data.shape}",
                                    "constants are scalars or 1-D vectors; use @ for a matrix")
        if data.ndim == 1 and data.size == 0:
            raise InvalidInputError("constant", value, "pass a non-empty vector")
        if not np.all(np.isfinite(data)):
            raise InvalidInputError("constant", value, "constants must be finite (no NaN or inf)")
        data.setflags(write=False)
        self.data = data
        super().__init__((), data.shape)

    def _compute_curvature(self):
        return "constant"

    def _compute_affine(self):
        return np.zeros((self.size, 0)), self.data.reshape(-1).copy()

    def _compute_cvx(self, x, memo):
        import cvxpy as cp

        return cp.Constant(self.data if self.shape else float(self.data))

    def _repr(self):
        return fmt_const(self.data)

"""Indexing: ``v[i]``, ``v[[i, j]]``, ``v[a:b]``, ``v[mask]`` and ``v["name"]`` (a linear atom)."""

from __future__ import annotations

import numbers

import numpy as np

from ..errors import InvalidInputError, ModelingError
from .affine import LinearAtom
from .expression import PREC_MUL, as_expression


class Index(LinearAtom):
    """Entries of a vector expression: ``v[i]`` (scalar), ``v[[i, j]]``, ``v[a:b]``, ``v["name"]``."""

    name = "index"

    def __init__(self, arg, key):
        arg = as_expression(arg)
        if not arg.shape:
            raise ModelingError("index", key, "a scalar expression cannot be indexed")
        self.key = key
        self.indices, scalar = _normalise_key(arg, key)
        super().__init__([arg], () if scalar else (len(self.indices),))

    def _params(self):
        return {"key": self.key}

    def __getitem__(self, key):
        # index of an index: select from the underlying expression directly
        if not self.shape:
            raise ModelingError("index", key, "a scalar expression cannot be indexed")
        idx, scalar = _normalise_key(self, key)
        base = self.indices[idx]
        return Index(self.args[0], int(base[0]) if scalar else base)

    def _matrix(self):
        M = np.zeros((len(self.indices), self.n_in))
        M[np.arange(len(self.indices)), self.indices] = 1.0
        return M

    def _compute_affine(self):
        from .leaf import Variable

        if isinstance(self.args[0], Variable):  # never materialise the K×K identity of ℓ
            return self._M(), np.zeros(self.size)
        return super()._compute_affine()

    def _compute_cvx(self, x, memo):
        a = self.args[0].build_cvxpy(x, memo)
        return a[int(self.indices[0])] if not self.shape else a[self.indices]

    def _repr(self):
        arg = self.args[0]
        from .leaf import Variable

        if isinstance(arg, Variable):
            names = [arg.coordinate_name(int(k)) for k in self.indices]
            if not self.shape:
                return names[0]
            if arg.names:
                return "[" + ", ".join(names) + "]"
        inner = self._wrap(arg, PREC_MUL + 1)
        if not self.shape:
            return f"{inner}[{int(self.indices[0])}]"
        if isinstance(self.key, slice):
            s = self.key
            return f"{inner}[{'' if s.start is None else s.start}:{'' if s.stop is None else s.stop}" \
                   f"{'' if s.step is None else ':' + str(s.step)}]"
        return f"{inner}[{[int(k) for k in self.indices]}]"


def _normalise_key(arg, key):
    m = arg.size
    fix = f"use indices in [-{m}, {m}) for an expression of length {m}"
    if isinstance(key, str):
        var = arg.variable
        if arg is not var:
            raise InvalidInputError("index", key, "index by name only on the Variable itself")
        return np.array([var.index_of(key)]), True
    if isinstance(key, tuple):
        raise InvalidInputError("index", key, "expressions are 1-D; use a single index, slice or list")
    if isinstance(key, (numbers.Integral, np.integer)) and not isinstance(key, bool):
        k = int(key)
        if not -m <= k < m:
            raise InvalidInputError("index", key, fix)
        return np.array([k % m]), True
    if isinstance(key, slice):
        idx = np.arange(m)[key]
        if idx.size == 0:
            raise InvalidInputError("index", key, "the slice selects no entry; " + fix)
        return idx, False
    try:
        arr = np.asarray(key)
    except (TypeError, ValueError):
        arr = np.asarray([], dtype=object)
    if arr.dtype == bool and arr.shape == (m,):
        idx = np.nonzero(arr)[0]
    elif arr.ndim == 1 and arr.size and np.issubdtype(arr.dtype, np.integer):
        if np.any(arr < -m) or np.any(arr >= m):
            raise InvalidInputError("index", key, fix)
        idx = arr % m
    elif arr.ndim == 1 and arr.size and arr.dtype.kind in "UO" and all(isinstance(k, str) for k in arr):
        var = arg.variable
        if arg is not var:
            raise InvalidInputError("index", key, "index by name only on the Variable itself")
        idx = np.array([var.index_of(k) for k in arr])
    else:
        raise InvalidInputError("index", key, "use an int, a slice, a list of ints, a boolean mask "
                                              "of length m, or coordinate names")
    if idx.size == 0:
        raise InvalidInputError("index", key, "the index selects no entry")
    return idx.astype(int), False

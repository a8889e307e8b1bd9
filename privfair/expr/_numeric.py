"""Numeric helpers shared by the composition rules: norms, dual norms, operator norms of
non-negative matrices, and products in which 0 · ∞ = 0.

Conventions.  A *norm name* ``q`` ∈ {"l1", "l2", "linf"} measures the input ℓ; a gradient is
then measured in the dual norm q* (l1 ↔ linf, l2 ↔ l2).  Internally a norm is its exponent
p ∈ {1, 2, inf}.  ``inf`` in a constant means *unknown* (no finite bound proven); the public
API turns it into ``None``.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidInputError

NORMS = ("l1", "l2", "linf")
#: exponent of each norm name
P_OF = {"l1": 1.0, "l2": 2.0, "linf": math.inf}
#: exponents p used for the norm on an atom's arguments
PS = (1.0, 2.0, math.inf)


def check_norm(norm) -> float:
    """Validate a norm name and return its exponent.

    Raises
    ------
    InvalidInputError
        ``norm`` is not one of "l1", "l2", "linf".
    """
    if isinstance(norm, str) and norm in P_OF:
        return P_OF[norm]
    raise InvalidInputError("norm", norm, f"choose one of {list(NORMS)} (the norm measuring ℓ)")


def dual(p: float) -> float:
    """Hölder conjugate exponent: 1 ↔ inf, 2 ↔ 2."""
    return {1.0: math.inf, 2.0: 2.0, math.inf: 1.0}[p]


def pnorm(v, p: float) -> float:
    """‖v‖_p of a 1-D array (0 for an empty one); ``inf`` entries give ``inf``."""
    v = np.abs(np.asarray(v, dtype=float))
    if v.size == 0:
        return 0.0
    if not np.all(np.isfinite(v)):
        return math.inf
    if p == 1.0:
        return float(v.sum())
    if p == 2.0:
        return float(np.sqrt(np.sum(v * v)))
    return float(v.max())


def mul0(a, b):
    """Elementwise a · b with 0 · ∞ = 0 (a zero factor means "does not depend")."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore"):
        out = a * b
    return np.where((a == 0) | (b == 0), 0.0, out)


def matmul0(G, U):
    """G @ U for non-negative G, U with 0 · ∞ = 0."""
    G = np.asarray(G, dtype=float)
    U = np.asarray(U, dtype=float)
    if np.all(np.isfinite(G)) and np.all(np.isfinite(U)):
        return G @ U
    return np.sum(mul0(G[:, :, None], U[None, :, :]), axis=1)


def opnorm_nonneg(U, q: float, p: float) -> float:
    """‖U‖_{q→p} = max_{‖x‖_q ≤ 1} ‖Ux‖_p for a non-negative matrix U (exact).

    For U ≥ 0 the maximum is attained at x ≥ 0, so: q→∞ is the largest row q*-norm, q→1 is
    ‖Uᵀ1‖_{q*}, ∞→2 is ‖U1‖₂, 1→p the largest column p-norm, and 2→2 the spectral norm.
    """
    U = np.asarray(U, dtype=float)
    if U.size == 0:
        return 0.0
    if not np.all(np.isfinite(U)):
        return math.inf
    qs = dual(q)
    if p == math.inf:
        return max(pnorm(row, qs) for row in U)
    if p == 1.0:
        return pnorm(U.sum(axis=0), qs)
    # p == 2
    if q == math.inf:
        return pnorm(U.sum(axis=1), 2.0)
    if q == 1.0:
        return max(pnorm(col, 2.0) for col in U.T)
    return float(np.linalg.norm(U, 2))


def combine_signs(S, M):
    """Monotonicity of φ(y(ℓ)) from φ's signs S (m, n) in y and y's signs M (n, K) in ℓ.

    Signs are +1, -1, 0 or NaN (unknown).  A zero on either side contributes nothing; the
    result is +1 (resp. -1) when every contribution is ≥ 0 (resp. ≤ 0) and one is non-zero,
    0 when all are zero, NaN when they conflict or one is unknown.
    """
    S = np.asarray(S, dtype=float)
    M = np.asarray(M, dtype=float)
    with np.errstate(invalid="ignore"):
        P = S[:, :, None] * M[None, :, :]
    zero = (S[:, :, None] == 0) | (M[None, :, :] == 0)
    P = np.where(zero, 0.0, P)
    unknown = np.any(np.isnan(P), axis=1)
    pos = np.any(P > 0, axis=1)
    neg = np.any(P < 0, axis=1)
    out = np.where(pos, 1.0, np.where(neg, -1.0, 0.0))
    return np.where(unknown | (pos & neg), np.nan, out)


def fmt_num(x) -> str:
    """Short readable form of a number for reprs and messages."""
    x = float(x)
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.6g}"


def fmt_const(value) -> str:
    """Readable form of a scalar or 1-D constant."""
    a = np.asarray(value, dtype=float)
    if a.ndim == 0:
        return fmt_num(a)
    return "[" + ", ".join(fmt_num(v) for v in a) + "]"

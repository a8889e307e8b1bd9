"""The base class of every node of the expression language over the statistic vector ℓ.

An :class:`Expression` is a scalar (shape ``()``) or a 1-D vector (shape ``(m,)``) function of
ℓ ∈ [0,1]^K.  This module holds what every node shares: the public API (evaluation, analysis,
cvxpy export), operator overloading and caching.  What a node *is* lives in its class:
leaves in :mod:`.leaf`, affine maps in :mod:`.affine`, atoms in their own modules, and the
composition rules (DCP curvature, monotonicity, ranges, Lipschitz and smoothness constants)
once, in :class:`privfair.expr.atom.Atom`.

The node protocol
-----------------
Every node is a vector of ``m = size`` *entries*.  Besides the user API (``value``, ``grad``,
``range``, ``lipschitz``, ``smoothness``, ``monotonicity``, ``support``, ``to_cvxpy``) it
exposes public per-entry *hooks*, valid on the input box ℓ ∈ [0,1]^K.  A parent node calls them
on its children (``args``); the compiler, the planner and the backends call them on whole
expressions.  They are cached per node, and for an affine node derived from ``affine_form()``:

==============================  ============================================================
``affine_form()``               (A (m, K), b (m,)) with e(ℓ) = Aℓ + b exactly, or None
``entry_bounds()``              (lo, hi), each of shape (m,): the range of every entry
``coordinate_lipschitz()``      U of shape (m, K): |e_i(ℓ) − e_i(ℓ')| ≤ Σ_k U_ik |ℓ_k − ℓ'_k|
                                on the box (for differentiable entries: |∂e_i/∂ℓ_k| ≤ U_ik)
``entry_lipschitz(q)``          L of shape (m,): |e_i(ℓ) − e_i(ℓ')| ≤ L_i ‖ℓ − ℓ'‖_q
``entry_smoothness(q)``         β of shape (m,): ‖∇e_i(ℓ) − ∇e_i(ℓ')‖_{q*} ≤ β_i ‖ℓ − ℓ'‖_q
``entry_monotonicity()``        signs of shape (m, K): +1, −1, 0, or NaN (unknown)
``forward(lb, xp, memo, jac)``  (value (B, m), Jacobian (B, m, K) or None) at a batch lb of
                                shape (B, K), numpy or torch (``xp``), memoised in ``memo``
                                (one dict per evaluation: shared sub-expressions run once)
``build_cvxpy(x, memo)``        the cvxpy expression over ``x``, memoised in ``memo``
==============================  ============================================================

``q`` is the input norm as a number (1, 2 or ``inf``; :func:`._numeric.check_norm` maps
"l1"/"l2"/"linf" to it).  ``inf`` in a constant means unknown; the public user methods return
``None`` for it.

A node does not override the hooks: it implements their ``_compute_*`` counterparts
(``_compute_affine``, ``_compute_bounds``, ``_compute_gbound``, ``_compute_lip``,
``_compute_smooth``, ``_compute_mono``, ``_compute_forward``, ``_compute_cvx``,
``_compute_curvature``), which the hooks cache.  Leaves and linear maps implement
``_compute_affine`` (and ``_compute_cvx``) only.  A nonlinear atom derives from
:class:`privfair.expr.atom.Atom`, whose ``_compute_*`` are the composition rules, and declares
the *atom hooks* about φ alone, listed in :mod:`privfair.expr.atom` (``atom_forward``,
``is_atom_convex``/``is_atom_concave``, ``atom_monotonicity(lo, hi)``, ``atom_bounds(lo, hi)``,
``atom_coordinate_lipschitz(lo, hi)``, ``atom_dependency()``, optionally
``atom_lipschitz_extra`` and ``atom_smoothness``, and ``atom_cvxpy``) — as cvxpy's atoms
declare ``is_atom_convex``, ``is_incr(idx)``, ``sign_from_args``.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError, ModelingError
from . import _xp
from ._numeric import check_norm, dual
from ._operators import OperatorsMixin

PREC_ADD, PREC_MUL, PREC_ATOM = 1, 2, 3


def as_expression(value, field: str = "operand") -> Expression:
    """Return ``value`` as an :class:`Expression` (numbers and arrays become constants).

    Raises
    ------
    ModelingError
        ``value`` is neither an expression nor a number / 1-D array of numbers.
    """
    if isinstance(value, Expression):
        return value
    from .leaf import Constant

    if isinstance(value, (int, float, np.number, np.ndarray, list, tuple)) and not isinstance(value, bool):
        return Constant(value)
    raise ModelingError(field, value, "use an expression over ℓ (e.g. r.fpr['a']), a number or a 1-D "
                                      "numpy array")


def pad_columns(mat, K: int):
    """Give a (rows, 0) matrix of a constant node K zero columns; leave others unchanged."""
    mat = np.asarray(mat, dtype=float)
    if mat.shape[1] == K:
        return mat
    if mat.shape[1] == 0:
        return np.zeros((mat.shape[0], K))
    raise ModelingError("expression", mat.shape, "all parts must be built over the same ℓ")


def common_variable(args):
    """The Variable all ``args`` are written over (None if all are constant).

    Raises
    ------
    ModelingError
        Two different Variables (e.g. of different sizes) are mixed.
    """
    found = None
    for a in args:
        v = a.variable
        if v is None:
            continue
        if found is None:
            found = v
        elif v is not found:
            detail = (f"sizes {found.size} and {v.size}" if v.size != found.size
                      else "two different Variables of the same size")
            raise ModelingError("variable", detail,
                                "write every expression over one statistic vector ℓ "
                                "(the r.vector of a single pf.rates(...) call)")
    return found


class Expression(OperatorsMixin):
    """A scalar or 1-D vector function of the statistic vector ℓ ∈ [0,1]^K.

    Build expressions from a :class:`~privfair.expr.Variable` with indexing, ``+ - * /`` (by
    constants) and atoms such as :func:`~privfair.expr.lse`.  Expressions are hashable (by
    identity); ``a == b`` is not a constraint: it builds an
    :class:`~privfair.expr.constraint.Equality` that :class:`privfair.Problem` refuses with the
    fix ``pf.abs(a - b) <= tol``, and whose truth value is ``a is b``.

    Attributes
    ----------
    args : tuple of Expression
        The children of this node (empty for leaves); walk the tree through them.
    shape : tuple
        ``()`` for a scalar, ``(m,)`` for a vector.
    variable : Variable or None
        The statistic vector this expression reads (None for a constant expression).
    """

    __array_ufunc__ = None  # numpy defers to our reflected operators (array * expr)
    __array_priority__ = 1000
    _prec = PREC_ATOM

    def __init__(self, args=(), shape=()):
        self.args = tuple(args)
        self.shape = tuple(shape)
        self._cache = {}
        self.variable = common_variable(self.args)

    # ------------------------------------------------------------------ basic facts
    @property
    def size(self) -> int:
        """Number of entries (1 for a scalar)."""
        return int(self.shape[0]) if self.shape else 1

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def K(self) -> int:
        """Length of ℓ (0 for a constant expression)."""
        return self.variable.size if self.variable is not None else 0

    def _cached(self, key, compute):
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def with_args(self, args) -> Expression:
        """A copy of this node with new children (same parameters); leaves return self."""
        return self

    # ------------------------------------------------------------------ evaluation
    def _prepare(self, l):
        if _xp.is_torch(l):
            xp, lb = _xp.namespace(l), l
            if not lb.is_floating_point():
                lb = lb.double()
        else:
            xp = _xp.NUMPY
            try:
                lb = np.asarray(l, dtype=float)
            except (TypeError, ValueError):
                raise InvalidInputError("l", l, "pass a numeric vector of length K (the statistic "
                                                 "vector ℓ)") from None
        if lb.ndim not in (1, 2):
            raise InvalidInputError("l", f"array of shape {tuple(lb.shape)}",
                                    "pass a vector of shape (K,) or a batch of shape (N, K)")
        if self.K and lb.shape[-1] != self.K:
            raise InvalidInputError("l", f"array of shape {tuple(lb.shape)}",
                                    f"pass a vector of length K={self.K} (the length of ℓ)")
        batched = lb.ndim == 2
        return (lb if batched else lb[None, :]), xp, batched

    def value(self, l):
        """Evaluate at ℓ.

        Parameters
        ----------
        l : array_like or torch.Tensor
            Shape (K,), or (N, K) for a batch of N statistic vectors.

        Returns
        -------
        float, numpy.ndarray or torch.Tensor
            A float (0-d tensor for torch) for a scalar expression at one ℓ; shape (m,) for a
            vector expression; a leading batch axis N when ``l`` is a batch.
        """
        lb, xp, batched = self._prepare(l)
        with np.errstate(all="ignore"):
            val, _ = self.forward(lb, xp, {}, False)
        out = val if batched else val[0]
        if not self.shape:
            out = out[..., 0]
        if xp is _xp.NUMPY and not batched and not self.shape:
            return float(out)
        return out

    def grad(self, l):
        """Gradient (scalar expressions, shape (K,)) or Jacobian (vectors, shape (m, K)) at ℓ.

        At points where an atom is not differentiable (``abs`` at 0, ties in ``maximum``) a
        subgradient is returned.  A batch ``l`` of shape (N, K) adds a leading axis N.
        """
        lb, xp, batched = self._prepare(l)
        with np.errstate(all="ignore"):
            _, jac = self.forward(lb, xp, {}, True)
        out = jac if batched else jac[0]
        if not self.shape:
            out = out[..., 0, :]
        return out

    def forward(self, lb, xp, memo, need_jac):
        """(value (B, m), Jacobian (B, m, K) or None) at the batch ``lb`` of shape (B, K).

        ``xp`` is the array namespace (numpy or torch, :mod:`._xp`); ``memo`` (one dict per
        evaluation) computes a shared sub-expression once; the Jacobian only if ``need_jac``.
        :meth:`value` and :meth:`grad` start it.
        """
        key = id(self)
        if key in memo:
            return memo[key]
        aff = self.affine_form()
        if aff is not None:
            A, b = aff
            B, Kl = lb.shape
            A = A if A.shape[1] == Kl else np.zeros((A.shape[0], Kl))
            At, bt = xp.asarray(A, like=lb), xp.asarray(b, like=lb)
            val = lb @ At.T + bt if Kl else xp.broadcast_to(bt, (B, self.size))
            jac = xp.broadcast_to(At, (B,) + tuple(At.shape)) if need_jac else None
            out = (val, jac)
        else:
            out = self._compute_forward(lb, xp, memo, need_jac)
        memo[key] = out
        return out

    def _compute_forward(self, lb, xp, memo, need_jac):  # pragma: no cover - abstract
        raise NotImplementedError

    # ------------------------------------------------------------------ analysis (public)
    @property
    def curvature(self) -> str:
        """One of "constant", "affine", "convex", "concave", "unknown" (DCP rules, on the box)."""
        return self._cached("curvature", self._compute_curvature)

    def is_constant(self) -> bool:
        return self.curvature == "constant"

    def is_affine(self) -> bool:
        return self.curvature in ("constant", "affine")

    def is_convex(self) -> bool:
        return self.curvature in ("constant", "affine", "convex")

    def is_concave(self) -> bool:
        return self.curvature in ("constant", "affine", "concave")

    def range(self):
        """Interval bounds over the box ℓ ∈ [0,1]^K: floats (lo, hi) for a scalar, arrays for a
        vector.  Sound (the true range is inside) and exact for affine expressions."""
        lo, hi = self.entry_bounds()
        if not self.shape:
            return float(lo[0]), float(hi[0])
        return lo.copy(), hi.copy()

    def lipschitz(self, norm: str = "l2"):
        """A bound L with |e(ℓ) − e(ℓ')| ≤ L ‖ℓ − ℓ'‖_norm on the box, i.e. sup ‖∇e‖ in the dual
        norm; for a vector expression the largest over its entries.  None when unknown.

        Parameters
        ----------
        norm : {"l1", "l2", "linf"}
            The norm measuring the input ℓ.
        """
        return _public_constant(self.entry_lipschitz(check_norm(norm)))

    def smoothness(self, norm: str = "l2"):
        """A bound β with ‖∇e(ℓ) − ∇e(ℓ')‖_dual ≤ β ‖ℓ − ℓ'‖_norm on the box (0 for affine
        expressions); for a vector the largest over its entries.  None when unknown (e.g. the
        expression is not differentiable)."""
        return _public_constant(self.entry_smoothness(check_norm(norm)))

    def monotonicity(self) -> list:
        """Per coordinate k of ℓ: +1 (non-decreasing in ℓ_k), −1 (non-increasing), 0 (independent)
        or None (unknown), on the box.  For a vector expression, the direction shared by all
        entries (None if they differ)."""
        M = self.entry_monotonicity()
        out = []
        for col in M.T:
            if np.any(np.isnan(col)) or (np.any(col > 0) and np.any(col < 0)):
                out.append(None)
            else:
                out.append(1 if np.any(col > 0) else (-1 if np.any(col < 0) else 0))
        return out

    def support(self) -> frozenset:
        """The coordinates of ℓ this expression depends on (those it reads, less any the range
        analysis proves irrelevant, e.g. an argument of ``maximum`` that can never be the max)."""
        U = self.coordinate_lipschitz()
        return frozenset(int(k) for k in np.nonzero(np.any(U > 0, axis=0))[0])

    def to_cvxpy(self, x):
        """The same expression over a cvxpy variable (or expression) ``x`` of length K.

        Raises
        ------
        ModelingError
            An atom has no cvxpy equivalent (``smax``), or ``x`` has the wrong size.
        """
        if self.variable is not None and getattr(x, "size", None) != self.K:
            raise ModelingError("x", x, f"pass a cvxpy Variable of length K={self.K}")
        return self.build_cvxpy(x, {})

    def build_cvxpy(self, x, memo):
        """The cvxpy expression of this node over ``x``; ``memo`` (id → cvxpy expression, one
        dict per export) builds a shared sub-expression once.  :meth:`to_cvxpy` starts it."""
        key = id(self)
        if key not in memo:
            memo[key] = self._compute_cvx(x, memo)
        return memo[key]

    def unknown_reasons(self, prop: str = "curvature", norm: str = "linf") -> list:
        """Readable reasons, one per responsible atom, why ``prop`` is unknown (empty if known).

        Parameters
        ----------
        prop : {"curvature", "lipschitz", "smoothness", "monotonicity"}
        norm : {"l1", "l2", "linf"}, default "linf"
            The input norm for "lipschitz" / "smoothness".
        """
        return [f"{e!r}: {why}" for e, why in self.unknown_culprits(prop, norm)]

    def unknown_culprits(self, prop: str = "curvature", norm: str = "linf") -> list:
        """``(atom, reason)`` pairs behind :meth:`unknown_reasons`, for callers that group the
        atoms sharing one reason (e.g. the same ``abs`` reason for every pair of groups)."""
        props = ("curvature", "lipschitz", "smoothness", "monotonicity")
        if prop not in props:
            raise InvalidInputError("prop", prop, f"choose one of {list(props)}")
        q = check_norm(norm)
        out, seen = [], set()

        def walk(e):
            if id(e) in seen or not e._is_unknown(prop, q):
                return
            seen.add(id(e))
            bad = [a for a in e.args if a._is_unknown(prop, q)]
            if not bad or (prop == "curvature" and e._blames_itself()):
                out.append((e, e._unknown_reason(prop, q)))
            for a in bad:
                walk(a)

        walk(self)
        return out

    def _is_unknown(self, prop, q) -> bool:
        if prop == "curvature":
            return self.curvature == "unknown"
        if prop == "monotonicity":
            return bool(np.any(np.isnan(self.entry_monotonicity())))
        vals = self.entry_lipschitz(q) if prop == "lipschitz" else self.entry_smoothness(q)
        return not np.all(np.isfinite(vals))

    def _blames_itself(self) -> bool:
        return False

    def _unknown_reason(self, prop, q) -> str:
        return f"{prop} is unknown"

    # ------------------------------------------------------------------ the node protocol (hooks)
    def affine_form(self):
        """(A, b) of shapes (m, K), (m,) with e(ℓ) = Aℓ + b exactly, or None (not affine).

        A constant node has K = 0 columns (widen it with :func:`pad_columns`).
        """
        return self._cached("affine", self._compute_affine)

    def _compute_affine(self):
        return None

    def entry_bounds(self):
        """(lo, hi), each of shape (m,): a sound range of every entry on the box ℓ ∈ [0,1]^K
        (exact for affine nodes).  :meth:`range` is its user-facing form."""
        def compute():
            aff = self.affine_form()
            if aff is not None:
                A, b = aff
                return b + np.minimum(A, 0).sum(axis=1), b + np.maximum(A, 0).sum(axis=1)
            return self._compute_bounds()
        return self._cached("bounds", compute)

    def coordinate_lipschitz(self):
        """U of shape (m, K): |e_i(ℓ) − e_i(ℓ')| ≤ Σ_k U_ik |ℓ_k − ℓ'_k| on the box (for a
        differentiable entry, |∂e_i/∂ℓ_k| ≤ U_ik); a zero column is a coordinate e ignores."""
        def compute():
            aff = self.affine_form()
            return np.abs(aff[0]) if aff is not None else self._compute_gbound()
        return self._cached("gbound", compute)

    def entry_lipschitz(self, q):
        """L of shape (m,): |e_i(ℓ) − e_i(ℓ')| ≤ L_i ‖ℓ − ℓ'‖_q on the box (``inf``: unknown).

        ``q`` is the input norm's exponent (1, 2 or ``inf``); :meth:`lipschitz` takes its name.
        """
        def compute():
            aff = self.affine_form()
            if aff is not None:
                qs = dual(q)
                A = np.abs(aff[0])
                if A.shape[1] == 0:
                    return np.zeros(self.size)
                return np.linalg.norm(A, ord=qs, axis=1) if qs != 1.0 else A.sum(axis=1)
            return self._compute_lip(q)
        return self._cached(("lip", q), compute)

    def entry_smoothness(self, q):
        """β of shape (m,): ‖∇e_i(ℓ) − ∇e_i(ℓ')‖_{q*} ≤ β_i ‖ℓ − ℓ'‖_q on the box (0 for an
        affine node, ``inf``: unknown or not differentiable)."""
        def compute():
            if self.affine_form() is not None:
                return np.zeros(self.size)
            return self._compute_smooth(q)
        return self._cached(("smooth", q), compute)

    def entry_monotonicity(self):
        """Signs of shape (m, K): +1 (e_i non-decreasing in ℓ_k on the box), −1
        (non-increasing), 0 (independent) or NaN (unknown)."""
        def compute():
            aff = self.affine_form()
            return np.sign(aff[0]) if aff is not None else self._compute_mono()
        return self._cached("mono", compute)

    def __repr__(self):
        return self._cached("repr", self._repr)

    __str__ = __repr__

    def _repr(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def _wrap(self, arg, prec) -> str:
        s = repr(arg)
        return f"({s})" if arg._prec < prec else s


def _public_constant(values):
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return 0.0
    if not np.all(np.isfinite(values)):
        return None
    return float(values.max())

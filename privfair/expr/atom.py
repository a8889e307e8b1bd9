"""The base class of every atom, and the composition rules, written once.

An atom φ maps its arguments — flattened and concatenated into y ∈ R^n — to m output entries.
Each atom class declares, in one place, facts about φ *alone* on the box of its arguments'
ranges [lo, hi] ⊂ R^n:

=====================================  ============================================================
``atom_forward(xp, y, Jy)``            value (B, m) and Jacobian-chain (numpy or torch)
``is_atom_convex/concave()``           curvature of φ
``atom_monotonicity(lo, hi)``          (m, n) signs: φ_i non-decreasing (+1) / non-increasing
                                       (−1) / independent (0) / unknown (NaN) in y_j on the box
``atom_bounds(lo, hi)``                (lo, hi): range of each φ_i on the box
``atom_coordinate_lipschitz(lo, hi)``  G (m, n): |∂φ_i/∂y_j| ≤ G_ij on the box
                                       (per-coordinate Lipschitz)
``atom_lipschitz_extra(p, lo, hi)``    optional extra bound on sup ‖∇φ_i‖_{p*} (Lipschitz
                                       w.r.t. ‖y‖_p), or None
``atom_smoothness(p, lo, hi)``         β_φ: ‖∇φ_i(y) − ∇φ_i(y')‖_{p*} ≤ β ‖y − y'‖_p
                                       (inf: unknown; default inf)
``atom_dependency()``                  (m, n) booleans: which y_j each φ_i reads (default all)
``atom_cvxpy(cvx_args)``               the cvxpy expression of φ over its arguments' ones
=====================================  ============================================================

and this class composes them with the arguments' own facts (L_j, β_j, U_j·, signs, ranges) for
the input norm q on ℓ:

* **DCP** (cvxpy's rule): φ convex and every argument affine, or convex where φ is
  non-decreasing in it, or concave where φ is non-increasing → convex; symmetric for concave.
* **Lipschitz**, the minimum of three sound bounds:
  (a) min_p L_φ,p · ‖(L_j)_j‖_p  — e.g. max and lse (gradient in the simplex) give max_j L_j;
  (b) ‖G_i· U‖_{q*}  — the per-coordinate bound u_k ≥ |∂e/∂ℓ_k| propagated through G;
  (c) Σ_j G_ij L_j   — the weighted triangle inequality (exact for sums of affine terms).
* **Smoothness**, by the chain rule ∇e = J_yᵀ∇φ(y):
  β ≤ min_p β_φ,p · min(‖(L_j)‖_p, ‖U‖_{q→p})²  +  min(Σ_j G_ij β_j, min_p L_φ,p ‖(β_j)‖_p).
  For affine y = Aℓ + b and p = ∞ the first term is β_φ · (max_i ‖a_i‖_{q*})².  When the
  arguments read disjoint coordinates of ℓ the second term is also ≤ max_j G_ij β_j for q = ℓ1,
  ℓ2 (the blocks of Δ∇e are disjoint, e.g. a weighted sum of squares per group).
* **Monotonicity**: sign products of φ's signs and the arguments' signs.

Every bound holds on the box because the range box of the arguments is convex and a product of
intervals (so both segments and coordinate-wise paths between two points stay inside it).
"""

from __future__ import annotations

import numpy as np

from ._numeric import PS, combine_signs, dual, matmul0, mul0, opnorm_nonneg, pnorm
from .expression import Expression, pad_columns


class Atom(Expression):
    """Base of every non-leaf node; subclasses declare the facts listed in the module docstring."""

    #: name used in reprs
    name = "atom"

    def __init__(self, args, shape):
        super().__init__(args, shape)
        sizes = [a.size for a in self.args]
        self._offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        self.n_in = int(self._offsets[-1])

    # ------------------------------------------------------------------ declarations
    def is_atom_convex(self) -> bool:
        return False

    def is_atom_concave(self) -> bool:
        return False

    def _params(self) -> dict:
        """Keyword parameters that, with the args, rebuild this atom."""
        return {}

    def with_args(self, args):
        return type(self)(*args, **self._params())

    def atom_dependency(self):
        return np.ones((self.size, self.n_in), dtype=bool)

    def atom_lipschitz_extra(self, p, lo, hi):
        return None

    def atom_smoothness(self, p, lo, hi):
        return np.full(self.size, np.inf)

    # ------------------------------------------------------------------ argument facts
    def _arg_facts(self):
        def compute():
            K = self.K
            lo = np.concatenate([a.entry_bounds()[0] for a in self.args])
            hi = np.concatenate([a.entry_bounds()[1] for a in self.args])
            U = np.vstack([pad_columns(a.coordinate_lipschitz(), K) for a in self.args])
            M = np.vstack([pad_columns(a.entry_monotonicity(), K) for a in self.args])
            D = self.atom_dependency()
            G = np.where(D, self.atom_coordinate_lipschitz(lo, hi), 0.0)
            # an argument entry that is constant on the box (lo = hi) cannot move φ: sign 0
            S = np.where(D & (lo < hi)[None, :], self.atom_monotonicity(lo, hi), 0.0)
            return lo, hi, U, M, D, G, S
        return self._cached("arg_facts", compute)

    def _arg_lip(self, q):
        return np.concatenate([a.entry_lipschitz(q) for a in self.args])

    def _arg_smooth(self, q):
        return np.concatenate([a.entry_smoothness(q) for a in self.args])

    def _local_lip(self, p):
        """sup ‖∇φ_i‖_{p*} on the box, per output: ‖G_i‖_{p*} or the atom's tighter bound."""
        def compute():
            lo, hi, _, _, D, G, _ = self._arg_facts()
            base = np.array([pnorm(G[i][D[i]], dual(p)) for i in range(self.size)])
            extra = self.atom_lipschitz_extra(p, lo, hi)
            return base if extra is None else np.minimum(base, extra)
        return self._cached(("local_lip", p), compute)

    def _local_beta(self, p):
        lo, hi = self._arg_facts()[:2]
        return self._cached(("local_beta", p),
                            lambda: np.asarray(self.atom_smoothness(p, lo, hi), float)
                            * np.ones(self.size))

    # ------------------------------------------------------------------ DCP
    def _block(self, idx):
        return slice(self._offsets[idx], self._offsets[idx + 1])

    def is_incr(self, idx) -> bool:
        """φ is non-decreasing in argument ``idx`` on the box of the arguments' ranges."""
        S = self._arg_facts()[6][:, self._block(idx)]
        return bool(np.all(S >= 0))  # NaN compares False

    def is_decr(self, idx) -> bool:
        """φ is non-increasing in argument ``idx`` on the box of the arguments' ranges."""
        S = self._arg_facts()[6][:, self._block(idx)]
        return bool(np.all(S <= 0))

    def _arg_allows(self, idx, arg, convex: bool) -> bool:
        if arg.is_affine():
            return True
        if convex:
            return (arg.is_convex() and self.is_incr(idx)) or (arg.is_concave() and self.is_decr(idx))
        return (arg.is_concave() and self.is_incr(idx)) or (arg.is_convex() and self.is_decr(idx))

    def _compute_curvature(self):
        if self.variable is None:
            return "constant"
        convex = self.is_atom_convex() and all(self._arg_allows(i, a, True) for i, a in enumerate(self.args))
        concave = self.is_atom_concave() and all(self._arg_allows(i, a, False)
                                                 for i, a in enumerate(self.args))
        if convex and concave:
            return "affine"
        return "convex" if convex else ("concave" if concave else "unknown")

    # ------------------------------------------------------------------ composition rules
    def _compute_bounds(self):
        lo, hi = self._arg_facts()[:2]
        out_lo, out_hi = self.atom_bounds(lo, hi)
        return (np.asarray(out_lo, float) * np.ones(self.size), np.asarray(out_hi, float) * np.ones(self.size))

    def _compute_gbound(self):
        _, _, U, _, _, G, _ = self._arg_facts()
        return matmul0(G, U)

    def _compute_lip(self, q):
        _, _, U, _, D, G, _ = self._arg_facts()
        Lv = self._arg_lip(q)
        Ue = self.coordinate_lipschitz()
        out = np.empty(self.size)
        for i in range(self.size):
            d = D[i]
            a = min(float(mul0(self._local_lip(p)[i], pnorm(Lv[d], p))) for p in PS)
            b = pnorm(Ue[i], dual(q))
            c = float(np.sum(mul0(G[i], Lv)))
            out[i] = min(a, b, c)
        return out

    def _compute_smooth(self, q):
        _, _, U, _, D, G, _ = self._arg_facts()
        Lv, bv = self._arg_lip(q), self._arg_smooth(q)
        out = np.empty(self.size)
        for i in range(self.size):
            d = D[i]
            t1 = min(float(mul0(self._local_beta(p)[i],
                                min(pnorm(Lv[d], p), opnorm_nonneg(U[d], q, p)) ** 2)) for p in PS)
            w = mul0(G[i], bv)
            t2 = min([float(np.sum(w))]
                     + [float(mul0(self._local_lip(p)[i], pnorm(bv[d], p))) for p in PS])
            used = w > 0
            if q != np.inf and np.all(np.sum(U[used] > 0, axis=0) <= 1):
                # arguments on disjoint coordinates: the gradient changes add up blockwise,
                # ‖Σ_j w_j Δ∇y_j‖_{q*} ≤ max_j G_ij β_j ‖Δℓ‖_q for q ∈ {1, 2}
                t2 = min(t2, float(np.max(w, initial=0.0)))
            out[i] = t1 + t2
        return out

    def _compute_mono(self):
        _, _, _, M, _, _, S = self._arg_facts()
        mono = combine_signs(S, M)
        return np.where(self.coordinate_lipschitz() == 0, 0.0, mono)

    def _compute_forward(self, lb, xp, memo, need_jac):
        outs = [a.forward(lb, xp, memo, need_jac) for a in self.args]
        B = lb.shape[0]
        vals = [xp.broadcast_to(v, (B, a.size)) for (v, _), a in zip(outs, self.args)]
        y = xp.concat(vals, axis=-1) if len(vals) > 1 else vals[0]
        Jy = None
        if need_jac:
            jacs = [j for _, j in outs]
            Jy = xp.concat(jacs, axis=-2) if len(jacs) > 1 else jacs[0]
        return self.atom_forward(xp, y, Jy)

    def _sign_with_range(self, xp, y):
        """sign(y), except that at y = 0 an entry whose range is one-sided takes the sign of its
        range: abs, pos and the norms are then linear on the box, and the gradient returned at
        the boundary is that of the linear piece (consistent with the β = 0 they declare)."""
        lo, hi = self._arg_facts()[:2]
        s0 = xp.asarray(np.where(lo >= 0, 1.0, np.where(hi <= 0, -1.0, 0.0)), like=y)
        return xp.where(y == 0, s0 + 0.0 * y, xp.sign(y))

    @staticmethod
    def _chain(xp, local, Jy):
        """Jacobian of the composition: local (B, m, n) @ Jy (B, n, K), or None."""
        return None if Jy is None else local @ Jy

    def _compute_cvx(self, x, memo):
        return self.atom_cvxpy([a.build_cvxpy(x, memo) for a in self.args])

    # ------------------------------------------------------------------ explanations
    def _blames_itself(self) -> bool:
        return self.variable is not None and not (self.is_atom_convex() or self.is_atom_concave())

    def _unknown_reason(self, prop, q) -> str:
        if prop == "curvature":
            if not (self.is_atom_convex() or self.is_atom_concave()):
                return f"{self.name} is neither convex nor concave"
            kind = "convex" if self.is_atom_convex() else "concave"
            for i, a in enumerate(self.args):
                if not self._arg_allows(i, a, kind == "convex"):
                    need = ("non-decreasing" if (a.is_convex() == (kind == "convex")) else "non-increasing")
                    return (f"{self.name} is {kind} but its argument {a!r} is {a.curvature} and "
                            f"{self.name} is not provably {need} in it on the box")
            return "DCP composition rule fails"
        if prop == "monotonicity":
            return f"{self.name} is not provably monotone in its arguments on their range"
        if prop == "lipschitz":
            return f"no finite bound on the gradient of {self.name} over its arguments' range"
        return f"{self.name} is not provably smooth over its arguments' range"

    def _args_repr(self) -> str:
        return ", ".join(repr(a) for a in self.args)


class Reduction(Atom):
    """Base of the n-ary scalar atoms φ(y): the arguments (scalars or vectors) are flattened and
    concatenated into y ∈ R^n, and the result is a scalar."""

    def __init__(self, *args):
        from ..errors import ModelingError
        from .expression import as_expression

        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        if not args:
            raise ModelingError(self.name, "no arguments", f"pass at least one expression to {self.name}")
        super().__init__([as_expression(a, self.name) for a in args], ())

    def _cvx_y(self, cvx_args):
        from .affine import cvx_concat

        return cvx_concat(cvx_args)

    def _repr(self):
        return f"{self.name}({self._args_repr()})"

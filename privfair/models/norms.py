# Over 500 lines: each Lovász-extension norm ships its dual, projection and proof together
#   (docs/sparsity.md §1).
"""Structured-sparsity norms as Lovász extensions of submodular set functions ([K] §2; Bach 2010).

A submodular F : 2^V → R on V = {0, …, p−1} with F(∅) = 0 gives a norm in one of two ways:

* **absolute** (F non-decreasing, F({j}) > 0): Ω(w) = f(|w|), f the Lovász extension of F — the
  tight convex relaxation of F(supp w).  Its dual norm is Ω*(s) = max_{A≠∅} |s|(A)/F(A) and its
  dual unit ball is the symmetric submodular polyhedron |P|(F) = {s : |s|(A) ≤ F(A) ∀A}, whose
  support function is Ω ([K] eq. 5).  ℓ1 (F = |A|), ℓ∞ (F = min(|A|, 1)) and group ℓ1/ℓ∞
  (F = Σ_g d_g·1[A∩g ≠ ∅], overlapping groups allowed) are of this kind.
* **symmetric** (F(A) = F(V∖A), F(V) = 0; e.g. a graph cut): Ω(w) = f(w), a seminorm that vanishes
  on vectors constant on each connected component; its dual ball is the base polytope
  B(F) = {s : s(A) ≤ F(A), s(V) = 0}.  :func:`graph_tv` adds μ‖w‖₁ (μ > 0) to make it a norm.

Every norm here gives the norm and its dual, the Lovász extension, the greedy linear maximiser over
its dual polytope (Edmonds' greedy algorithm), the linear minimiser over its own ball, Euclidean
projections onto its ball, and Monte-Carlo Gaussian widths with their standard errors (exact values
where a closed form exists).  Public constructors: :func:`l1`, :func:`linf`, :func:`group`,
:func:`graph_tv`, :func:`lovasz`.

Examples
--------
>>> import numpy as np
>>> from privfair import norms
>>> N = norms.group([[0, 1], [1, 2]])             # overlapping groups
>>> w = np.array([3.0, -1.0, 2.0])
>>> N(w), N.lovasz(np.abs(w)), N.F([0, 2])
(5.0, 5.0, 2.0)
>>> s = N.greedy(w)                               # a vertex of |P|(F) maximising <w, s>
>>> float(s @ w) == N(w)
True
"""

from __future__ import annotations

import itertools
import math
import numbers
import time
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError, ModelingError
from .projections import GroupLayout, project_disjoint_group_ball

__all__ = ["SubmodularNorm", "GroupNorm", "GraphTV", "Width", "l1", "linf", "group",
           "graph_tv", "lovasz", "check_submodular", "expected_max_abs_gaussian"]

#: ground sets up to this size are checked exhaustively for submodularity (p·2^p marginals)
EXHAUSTIVE_CHECK = 12
#: ground sets up to this size get brute-force dual norms / projections (2^p subsets)
BRUTE_FORCE_MAX = 16
#: a Monte-Carlo Gaussian width expected to take longer than this shows a progress bar
SLOW_SECONDS = 2.0


@dataclass(frozen=True)
class Width:
    """A Gaussian width E sup_{s∈K} <g, s> (g ~ N(0, I)): value, standard error, and whether exact."""

    value: float
    stderr: float
    exact: bool
    n_samples: int = 0

    def __float__(self):
        return float(self.value)


def expected_max_abs_gaussian(k: int) -> float:
    """E max_{i≤k} |g_i| for i.i.d. N(0, 1): ∫₀^∞ 1 − (2Φ(t) − 1)^k dt (numerical quadrature)."""
    from scipy import integrate, special

    f = lambda t: -math.expm1(k * math.log1p(-special.erfc(t / math.sqrt(2))))  # noqa: E731
    val, _ = integrate.quad(f, 0.0, 12.0 + math.sqrt(2 * math.log(max(k, 2))), limit=200)
    return float(val)


def _mask(A, p):
    m = np.zeros(p, dtype=bool)
    idx = list(A) if not isinstance(A, np.ndarray) or A.dtype != bool else np.flatnonzero(A)
    if len(idx):
        m[np.asarray(idx, dtype=int)] = True
    return m


def check_submodular(F, p, *, exhaustive_max=EXHAUSTIVE_CHECK, n_random=20000, rng=0, tol=1e-9):
    """Check F(A ∪ {i}) − F(A) ≥ F(A ∪ {i, j}) − F(A ∪ {j}) (diminishing returns).

    Exhaustive (every A, i, j) for p ≤ ``exhaustive_max``; otherwise ``n_random`` random triples
    (a check, not a proof — the returned dict says which).  Raises :class:`ModelingError` with a
    witness when F is not submodular.
    """
    def bad(A, i, j, lhs, rhs):
        raise ModelingError("F", f"p={p}", (
            f"F is not submodular: with A={sorted(A)}, i={i}, j={j}, F(A+i)−F(A) = {lhs:.6g} < "
            f"F(A+i+j)−F(A+j) = {rhs:.6g}; only submodular functions give convex Lovász "
            "extensions (and norms)"))

    if p <= exhaustive_max:
        vals = {}
        for bits in range(1 << p):
            vals[bits] = float(F(frozenset(k for k in range(p) if bits >> k & 1)))
        for bits in range(1 << p):
            for i in range(p):
                if bits >> i & 1:
                    continue
                for j in range(i + 1, p):
                    if bits >> j & 1:
                        continue
                    lhs = vals[bits | 1 << i] - vals[bits]
                    rhs = vals[bits | 1 << i | 1 << j] - vals[bits | 1 << j]
                    if lhs < rhs - tol * (1 + abs(lhs) + abs(rhs)):
                        bad({k for k in range(p) if bits >> k & 1}, i, j, lhs, rhs)
        return {"checked": "exhaustive", "subsets": 1 << p}
    g = np.random.default_rng(rng)
    for _ in range(n_random):
        i, j = g.choice(p, 2, replace=False)
        A = set(np.flatnonzero(g.random(p) < g.random()).tolist()) - {int(i), int(j)}
        fa = float(F(frozenset(A)))
        lhs = float(F(frozenset(A | {int(i)}))) - fa
        rhs = float(F(frozenset(A | {int(i), int(j)}))) - float(F(frozenset(A | {int(j)})))
        if lhs < rhs - tol * (1 + abs(lhs) + abs(rhs)):
            bad(A, int(i), int(j), lhs, rhs)
    return {"checked": "random", "triples": n_random}


class SubmodularNorm:
    """The norm of a submodular function F on {0..p−1}; see the module docstring.

    Build one with :func:`lovasz` (any F), :func:`l1`, :func:`linf`, :func:`group` or
    :func:`graph_tv`.  Subclasses override the generic (greedy / brute-force) methods with closed
    forms.

    Attributes
    ----------
    p : int -- dimension;  kind : "absolute" or "symmetric";  name : str
    l1_weight : float -- μ in Ω(w) = f(w) + μ‖w‖₁ (symmetric kind only; 0 otherwise)
    """

    kind = "absolute"
    l1_weight = 0.0

    def __init__(self, F, p, *, name="lovasz", kind="absolute", check=True):
        if isinstance(p, bool) or not isinstance(p, numbers.Integral) or p < 1:
            raise InvalidInputError("p", p, "pass the dimension, a positive integer")
        if not callable(F):
            raise InvalidInputError("F", type(F).__name__, "pass a function of a frozenset of "
                                    "indices in range(p), e.g. lambda A: min(len(A), 1)")
        self.p, self._F, self.name, self.kind = int(p), F, name, kind
        self.check_info = self._check() if check else {"checked": "skipped"}

    # ------------------------------------------------------------------ the set function
    def F(self, A) -> float:
        """F(A) for an iterable of indices or a boolean mask."""
        if isinstance(A, np.ndarray) and A.dtype == bool:
            A = np.flatnonzero(A)
        return float(self._F(frozenset(int(a) for a in A)))

    def _check(self):
        p = self.p
        if abs(self.F([])) > 1e-12:
            raise ModelingError("F", f"F(∅)={self.F([])}", "a norm needs F(∅) = 0")
        info = check_submodular(self._F, p)
        if self.kind == "absolute":
            single = [self.F([j]) for j in range(p)]
            if min(single) <= 0:
                j = int(np.argmin(single))
                raise ModelingError("F", f"F({{{j}}})={single[j]}", "every singleton needs "
                                    "F({j}) > 0, otherwise f(|w|) vanishes on e_j and is no norm")
            g = np.random.default_rng(1)
            if p <= EXHAUSTIVE_CHECK:
                pairs = ((A, j) for b in range(1 << p)
                         for A in [[k for k in range(p) if b >> k & 1]] for j in range(p)
                         if not b >> j & 1)
            else:
                pairs = ((np.flatnonzero(g.random(p) < 0.5).tolist(), int(g.integers(p)))
                         for _ in range(2000))
            for A, j in pairs:
                if j not in A and self.F(A + [j]) < self.F(A) - 1e-9:
                    raise ModelingError("F", f"F({sorted(A)} ∪ {{{j}}}) < F({sorted(A)})", (
                        "F must be non-decreasing for Ω(w) = f(|w|); a symmetric F "
                        "(F(A) = F(V∖A), e.g. a cut) gives the seminorm f(w): use "
                        "lovasz(F, p, kind='symmetric')"))
        else:
            full = list(range(p))
            for A in ([[k for k in range(p) if b >> k & 1] for b in range(1 << p)]
                      if p <= EXHAUSTIVE_CHECK else [full[:k] for k in range(p + 1)]):
                rest = [k for k in full if k not in A]
                if abs(self.F(A) - self.F(rest)) > 1e-9:
                    raise ModelingError("F", f"F({A}) ≠ F(V∖A)", "kind='symmetric' needs "
                                        "F(A) = F(V∖A) for every A (and F(V) = 0)")
        return info

    # ------------------------------------------------------------------ Lovász extension
    def lovasz(self, v) -> float:
        """f(v) = Σ_k v_(k) (F(S_k) − F(S_{k−1})), S_k the k largest entries (Lovász 1982)."""
        v = self._vec(v)
        return float(self._greedy_gains(v) @ v)

    def _greedy_gains(self, v):
        """The greedy vertex s of B(F) for order v: s_{σ(k)} = F(S_k) − F(S_{k−1})."""
        order = np.argsort(-v, kind="stable")
        s, prev, S = np.zeros(self.p), 0.0, []
        for j in order:
            S.append(int(j))
            cur = self.F(S)
            s[j], prev = cur - prev, cur
        return s

    # ------------------------------------------------------------------ norm and dual
    def __call__(self, w) -> float:
        return self.value(w)

    def value(self, w) -> float:
        """Ω(w)."""
        w = self._vec(w)
        if self.kind == "absolute":
            return self.lovasz(np.abs(w))
        return self.lovasz(w) + self.l1_weight * float(np.abs(w).sum())

    def greedy(self, w) -> np.ndarray:
        """argmax_{s ∈ dual ball} <w, s> — a vertex found by Edmonds' greedy algorithm.

        Absolute kind: s = sign(w) ∘ greedy(|w|) ∈ |P|(F) (F non-decreasing keeps it inside);
        symmetric kind: the greedy base of B(F), plus μ·sign(w) for the ℓ1 part.  <w, s> = Ω(w).
        """
        w = self._vec(w)
        if self.kind == "absolute":
            sign = np.where(w < 0, -1.0, 1.0)
            return sign * self._greedy_gains(np.abs(w))
        return self._greedy_gains(w) + self.l1_weight * np.where(w < 0, -1.0, 1.0)

    def dual(self, s) -> float:
        """Ω*(s) = sup_{Ω(w) ≤ 1} <s, w>."""
        s = self._vec(s)
        if self.kind == "absolute":
            return self.dual_bruteforce(s)
        if self.l1_weight == 0 and self.p <= BRUTE_FORCE_MAX:
            return self._gauge_base_bruteforce(s)
        return self._dual_lp(s)

    def _gauge_base_bruteforce(self, s):
        """Gauge of B(F) (symmetric F): max_{F(A)>0} s(A)/F(A); ∞ unless s(A) = 0 wherever
        F(A) = 0 (in particular s(V) = 0)."""
        masks, Fv = self._subsets()
        sA = masks @ s
        tol = 1e-9 * (1 + np.abs(s).sum())
        if np.any((Fv <= 1e-12) & (np.abs(sA) > tol)):
            return math.inf
        pos = Fv > 1e-12
        return float(max(0.0, np.max(sA[pos] / Fv[pos]))) if pos.any() else 0.0

    def _subsets(self):
        if self.p > BRUTE_FORCE_MAX:
            raise InvalidInputError("p", self.p, f"this generic norm enumerates subsets (p ≤ "
                                    f"{BRUTE_FORCE_MAX}); use l1/linf/group/graph_tv or subclass")
        masks = ((np.arange(1 << self.p)[:, None] >> np.arange(self.p)) & 1).astype(bool)
        Fv = np.array([self.F(m) for m in masks])
        return masks, Fv

    def dual_bruteforce(self, s):
        masks, Fv = self._subsets()
        num = masks[1:] @ np.abs(s)
        return float(np.max(num / Fv[1:]))

    def best_set(self, s):
        """argmax_{A≠∅} |s|(A)/F(A) (absolute kind): the support of the primal LMO vertex."""
        masks, Fv = self._subsets()
        k = int(np.argmax((masks[1:] @ np.abs(self._vec(s))) / Fv[1:]))
        return np.flatnonzero(masks[1 + k])

    def lmo(self, g, radius=1.0) -> np.ndarray:
        """argmin_{Ω(θ) ≤ radius} <g, θ>: a vertex −radius·sign(g)∘1_A/F(A) of the ball."""
        g = self._vec(g)
        if self.kind != "absolute":
            if self.l1_weight == 0:
                raise InvalidInputError("norm", self.name, "the unit ball of a seminorm is "
                                        "unbounded: add an ℓ1 part (graph_tv(..., l1=μ > 0))")
            return -radius * self._primal_lp(g)[1]
        A = self.best_set(g)
        v = np.zeros(self.p)
        v[A] = np.where(g[A] < 0, -1.0, 1.0) / self.F(A)
        return -radius * v

    def _dual_lp(self, s):
        return self._primal_lp(s)[0]

    def _primal_lp(self, s):
        """max <s, w> s.t. Ω(w) ≤ 1 with cvxpy (generic route): (value, maximiser)."""
        import cvxpy as cp

        w = cp.Variable(self.p)
        prob = cp.Problem(cp.Maximize(s @ w), _ball_constraints(self, w, 1.0))
        prob.solve()
        if prob.status not in ("optimal", "optimal_inaccurate") or w.value is None:
            return math.inf, np.zeros(self.p)
        return float(prob.value), np.asarray(w.value)

    # ------------------------------------------------------------------ balls
    def cvxpy_expr(self, w):
        """Ω(w) as a cvxpy expression (generic: the atomic decomposition over all subsets,
        Ω(w) = min Σ_A λ_A F(A) s.t. Σ_{A∋j} λ_A ≥ |w_j|, λ ≥ 0; p ≤ 16)."""
        import cvxpy as cp

        if self.kind != "absolute":
            raise InvalidInputError("norm", self.name, "no cvxpy form for this symmetric F")
        masks, Fv = self._subsets()
        lam = cp.Variable(len(Fv) - 1, nonneg=True)
        # usable only as "expr <= r" (through _ball_constraints), which yields the LP constraints
        return _AtomicNorm(w, lam, masks[1:].T.astype(float), Fv[1:])

    def project(self, x, radius) -> np.ndarray:
        """Euclidean projection of x onto {Ω(w) ≤ radius} (generic: a cvxpy QP)."""
        import cvxpy as cp

        x = self._vec(x)
        if self.value(x) <= radius:
            return x.copy()
        w = cp.Variable(self.p)
        cons = _ball_constraints(self, w, radius)
        prob = cp.Problem(cp.Minimize(cp.sum_squares(w - x)), cons)
        prob.solve()
        return np.asarray(w.value, dtype=float)

    exact_projection = False

    @property
    def l2_radius(self) -> float:
        """An upper bound on max_{Ω(w) ≤ 1} ‖w‖₂ (absolute kind: max_A √|A|/F(A), attained)."""
        if self.p <= BRUTE_FORCE_MAX:
            masks, Fv = self._subsets()
            return float(np.max(np.sqrt(masks[1:].sum(axis=1)) / Fv[1:]))
        return math.sqrt(self.p) / min(self.F([j]) for j in range(self.p))

    @property
    def lipschitz_l2(self) -> float:
        """max_{s in the dual ball} ‖s‖₂ — Ω's Lipschitz constant w.r.t. ℓ2 (an upper bound:
        every greedy gain is ≤ F({j}) by submodularity)."""
        return float(math.sqrt(sum(self.F([j]) ** 2 for j in range(self.p))))

    @property
    def dual_diameter(self) -> float:
        """ℓ2 diameter of the dual ball (2 × :attr:`lipschitz_l2`)."""
        return 2.0 * self.lipschitz_l2

    def blocks(self):
        """The dual ball as a product of small vertex sets, or None (see :class:`GroupNorm`)."""
        return None

    # ------------------------------------------------------------------ Gaussian widths
    def exact_gaussian_width(self, which="dual"):
        """Closed-form Gaussian width, or None when there is none."""
        return None

    def gaussian_width(self, which="dual", n_samples=4000, rng=0) -> Width:
        """Monte-Carlo Gaussian width with its standard error (exact when a closed form exists
        and ``n_samples=0``).

        ``which="dual"``: of the dual ball (|P|(F) or B(F)), E Ω(g) — [K]'s G_{|P|(F)};
        ``which="primal"``: of the unit ball {Ω ≤ 1}, E Ω*(g) — the width of the constraint
        set of [K] eq. (8) and of Kifer et al.'s bound.
        """
        if which not in ("dual", "primal"):
            raise InvalidInputError("which", which, "choose 'dual' or 'primal'")
        if n_samples == 0:
            ex = self.exact_gaussian_width(which)
            if ex is None:
                raise InvalidInputError("n_samples", 0, "no closed form: pass n_samples > 0")
            return Width(ex, 0.0, True)
        G = np.random.default_rng(rng).standard_normal((int(n_samples), self.p))
        f = self.value if which == "dual" else self.dual
        t0 = time.perf_counter()
        vals = [f(G[0])]
        # one LP per sample where Ω or Ω* has no closed form: a bar when that takes a while
        if (time.perf_counter() - t0) * len(G) > SLOW_SECONDS:
            from ..util.progress import bar

            rest = bar(G[1:], desc=f"Gaussian width of the {which} ball ({self.name})")
        else:
            rest = G[1:]
        vals = np.array(vals + [f(g) for g in rest])
        return Width(float(vals.mean()), float(vals.std(ddof=1) / math.sqrt(len(vals))), False,
                     int(n_samples))

    # ------------------------------------------------------------------ helpers
    def _vec(self, v):
        v = np.asarray(v, dtype=float).reshape(-1)
        if v.shape != (self.p,):
            raise InvalidInputError("w", f"shape {v.shape}", f"pass a vector of length p={self.p}")
        return v

    def __repr__(self):
        return f"<{self.name} norm on R^{self.p} ({self.kind})>"


class _AtomicNorm:
    """Helper for the generic cvxpy form: ``expr <= r`` yields the LP constraints."""

    def __init__(self, w, lam, M, Fv):
        self.w, self.lam, self.M, self.Fv = w, lam, M, Fv

    def __le__(self, r):
        import cvxpy as cp

        return [self.M @ self.lam >= cp.abs(self.w), self.Fv @ self.lam <= r]


def _ball_constraints(norm, w, radius):
    e = norm.cvxpy_expr(w)
    out = e <= radius
    return out if isinstance(out, list) else [out]


# ---------------------------------------------------------------------------- group norms
def _project_l1_ball(x, r):
    """Euclidean projection onto {‖w‖₁ ≤ r} (Duchi et al. 2008, sort-based, exact)."""
    a = np.abs(x)
    if a.sum() <= r:
        return x.copy()
    if r <= 0:
        return np.zeros_like(x)
    u = np.sort(a)[::-1]
    css = np.cumsum(u)
    k = np.arange(1, len(u) + 1)
    rho = np.nonzero(u * k > css - r)[0][-1]
    theta = (css[rho] - r) / (rho + 1.0)
    return np.sign(x) * np.maximum(a - theta, 0.0)


class GroupNorm(SubmodularNorm):
    """Ω(w) = Σ_g d_g ‖w_g‖_∞, the norm of F(A) = Σ_g d_g·1[A ∩ g ≠ ∅] (groups may overlap).

    ℓ1 is the case of singleton groups, ℓ∞ of one group holding every coordinate.  With disjoint
    groups the dual ball is the product Π_g {‖s_g‖₁ ≤ d_g}: dual norm max_g ‖s_g‖₁/d_g, exact
    Euclidean projection (bisection on the multiplier of the prox of each ‖·‖_∞), and vertex
    blocks {±d_g e_j : j ∈ g} for the dual Frank–Wolfe sampler.  Overlapping groups use LPs.
    """

    def __init__(self, groups, weights=None, p=None, name="group"):
        groups = [sorted({int(j) for j in g}) for g in groups]
        if not groups or any(len(g) == 0 for g in groups):
            raise InvalidInputError("groups", groups, "pass a non-empty list of non-empty index lists")
        if min(min(g) for g in groups) < 0:
            raise InvalidInputError("groups", groups, "indices must be ≥ 0")
        p = max(max(g) for g in groups) + 1 if p is None else int(p)
        d = np.ones(len(groups)) if weights is None else np.asarray(weights, dtype=float).reshape(-1)
        if d.shape != (len(groups),) or not np.all(np.isfinite(d)) or np.any(d <= 0):
            raise InvalidInputError("weights", weights, "one positive finite weight per group")
        covered = np.zeros(p, dtype=bool)
        for g in groups:
            if max(g) >= p:
                raise InvalidInputError("groups", g, f"indices must be < p={p}")
            covered[g] = True
        if not covered.all():
            raise ModelingError("groups", f"coordinate {int(np.argmin(covered))} in no group",
                                "F({j}) = 0 for an uncovered coordinate: cover every coordinate "
                                "(add singleton groups) so that Ω is a norm")
        self.groups, self.weights = groups, d
        self.p, self.name, self.kind = p, name, "absolute"
        count = np.zeros(p, dtype=int)
        for g in groups:
            count[g] += 1
        self.disjoint = bool(np.all(count == 1))
        self._gid = np.zeros(p, dtype=int)
        for k, g in enumerate(groups):
            self._gid[g] = k
        self.check_info = {"checked": "by construction (weighted coverage functions are "
                                      "submodular and non-decreasing)"}
        self._F = lambda A: float(sum(dk for g, dk in zip(groups, d) if not A.isdisjoint(g)))

    def F(self, A) -> float:
        if isinstance(A, np.ndarray) and A.dtype == bool:
            A = np.flatnonzero(A)
        S = {int(a) for a in A}
        return float(sum(dk for g, dk in zip(self.groups, self.weights) if not S.isdisjoint(g)))

    def value(self, w):
        a = np.abs(self._vec(w))
        if self.name == "l1":
            return float(a.sum())
        return float(sum(dk * a[g].max() for g, dk in zip(self.groups, self.weights)))

    def greedy(self, w):
        """A maximiser of <w, s> over |P|(F): for each group, d_g·sign(w_j) on one argmax j of
        |w_g| — the greedy vertex (each group's weight goes to its first element in the order)."""
        w = self._vec(w)
        a, s = np.abs(w), np.zeros(self.p)
        order = np.argsort(-a, kind="stable")
        rank = np.empty(self.p, dtype=int)
        rank[order] = np.arange(self.p)
        for g, dk in zip(self.groups, self.weights):
            j = g[int(np.argmin(rank[g]))]
            s[j] += dk * (-1.0 if w[j] < 0 else 1.0)
        return s

    def dual(self, s):
        s = self._vec(s)
        if self.disjoint:
            return float(max(np.abs(s[g]).sum() / dk for g, dk in zip(self.groups, self.weights)))
        return self._dual_overlap(s)

    def _dual_overlap(self, s):
        """min max_g ‖v^g‖₁/d_g s.t. Σ_g v^g = s, supp v^g ⊆ g (the LP dual of Σ d_g‖w_g‖_∞).

        The LP is built once per norm with s as a cvxpy Parameter, so each call only re-solves
        (about 20 times faster than rebuilding it: the Monte-Carlo Gaussian width of an
        overlapping group norm takes a thousand of them at plan time)."""
        prob, param = self.dual_overlap_lp()
        param.value = s
        prob.solve()
        return float(prob.value)

    def dual_overlap_lp(self):
        cached = self.__dict__.get("_dual_lp_cache")
        if cached is None:
            import cvxpy as cp
            import scipy.sparse as sp

            sizes = [len(g) for g in self.groups]
            offs = np.concatenate([[0], np.cumsum(sizes)])
            v, t = cp.Variable(int(offs[-1])), cp.Variable()
            M = sp.csr_matrix((np.ones(int(offs[-1])), (np.concatenate(self.groups),
                                                         np.arange(int(offs[-1])))),
                              shape=(self.p, int(offs[-1])))
            s = cp.Parameter(self.p)
            cons = [M @ v == s] + [cp.norm1(v[offs[k]:offs[k + 1]]) <= t * dk
                                   for k, dk in enumerate(self.weights)]
            cached = self.__dict__["_dual_lp_cache"] = (cp.Problem(cp.Minimize(t), cons), s)
        return cached

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_dual_lp_cache", None)      # rebuilt on demand
        state.pop("_F", None)                  # a closure: rebuilt in __setstate__
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        groups, d = self.groups, self.weights
        self._F = lambda A: float(sum(dk for g, dk in zip(groups, d) if not A.isdisjoint(g)))

    def best_set(self, s):
        a = np.abs(self._vec(s))
        if self.disjoint:
            k = int(np.argmax([a[g].sum() / dk for g, dk in zip(self.groups, self.weights)]))
            return np.asarray(self.groups[k])
        return super().best_set(s)

    def lmo(self, g, radius=1.0):
        if self.disjoint or self.p <= BRUTE_FORCE_MAX:
            return super().lmo(g, radius)
        return -radius * self._primal_lp(self._vec(g))[1]

    def cvxpy_expr(self, w):
        import cvxpy as cp

        return sum(dk * cp.norm_inf(w[g]) for g, dk in zip(self.groups, self.weights))

    @property
    def exact_projection(self):
        return self.disjoint

    def project(self, x, radius):
        """Euclidean projection onto {Ω(w) ≤ radius}: ℓ1 and one group (ℓ∞) in closed form,
        other disjoint groups by :func:`privfair.models.projections.project_disjoint_group_ball` (the
        one home of that bisection; vectorized, as the certified ERM solver projects hundreds
        of times), overlapping groups by the generic QP."""
        x = self._vec(x)
        if not self.disjoint:
            return super().project(x, radius)
        if self.name == "l1":
            return _project_l1_ball(x, radius)
        if len(self.groups) == 1:
            return np.clip(x, -radius / self.weights[0], radius / self.weights[0])
        return project_disjoint_group_ball(x, self.group_layout, radius)

    @property
    def group_layout(self) -> GroupLayout:
        """The padded index layout of the disjoint groups (:class:`privfair.models.projections.
        GroupLayout`), built once per norm."""
        layout = self.__dict__.get("_layout_cache")
        if layout is None:
            layout = self.__dict__["_layout_cache"] = GroupLayout(self.groups, self.weights,
                                                                  self.p)
        return layout

    @property
    def l2_radius(self):
        # √|A|/F(A) ≤ Σ_hit √|g∩A| / Σ_hit d_g ≤ max_g √|g|/d_g (mediant inequality), attained by
        # a whole group when the groups are disjoint; overlapping groups: brute force when small
        if not self.disjoint and self.p <= BRUTE_FORCE_MAX:
            return super().l2_radius
        return float(max(math.sqrt(len(g)) / dk for g, dk in zip(self.groups, self.weights)))

    @property
    def lipschitz_l2(self):
        if self.disjoint:
            return float(np.sqrt(np.sum(self.weights ** 2)))
        return super().lipschitz_l2

    def blocks(self):
        """Disjoint groups: the dual ball is Π_g {‖s_g‖₁ ≤ d_g}; block g's vertices are ±d_g e_j."""
        if not self.disjoint:
            return None
        out = []
        for g, dk in zip(self.groups, self.weights):
            V = np.zeros((2 * len(g), len(g)))
            for k in range(len(g)):
                V[2 * k, k], V[2 * k + 1, k] = dk, -dk
            out.append((np.asarray(g), V))
        return out

    def exact_gaussian_width(self, which="dual"):
        if which == "dual":   # E Σ d_g ‖g_g‖_∞ (linearity: exact for overlapping groups too)
            return float(sum(dk * expected_max_abs_gaussian(len(g))
                             for g, dk in zip(self.groups, self.weights)))
        if self.name == "l1":     # E ‖g‖_∞
            return expected_max_abs_gaussian(self.p)
        if self.name == "linf":   # E ‖g‖₁ / d
            return self.p * math.sqrt(2 / math.pi) / float(self.weights[0])
        return None

    def __repr__(self):
        if self.name in ("l1", "linf"):
            return f"<{self.name} norm on R^{self.p}>"
        return (f"<group ℓ1/ℓ∞ norm on R^{self.p}: {len(self.groups)} groups"
                f"{'' if self.disjoint else ', overlapping'}>")


# ---------------------------------------------------------------------------- graph TV
class GraphTV(SubmodularNorm):
    """Ω(w) = Σ_{(i,j)∈E} c_ij |w_i − w_j| + μ‖w‖₁: the Lovász extension of the (symmetric,
    submodular) cut function F(A) = Σ_{i∈A, j∉A} c_ij, plus μ·ℓ1 (a norm iff μ > 0).

    The dual ball is B(F) + μ[−1, 1]^p; its greedy vertex is the greedy base of the cut plus
    μ·sign(w).  Dual norm and projections are LPs/QPs (cvxpy).
    """

    kind = "symmetric"

    def __init__(self, graph, weight="weight", l1=0.0):
        import networkx as nx

        if not isinstance(graph, (nx.Graph,)):
            raise InvalidInputError("graph", type(graph).__name__, "pass a networkx Graph")
        nodes = list(graph.nodes())
        if not nodes:
            raise InvalidInputError("graph", graph, "the graph has no nodes")
        self.nodes = nodes
        index = {v: k for k, v in enumerate(nodes)}
        edges, c = [], []
        for u, v, data in graph.edges(data=True):
            if u == v:
                continue
            cw = float(data.get(weight, 1.0)) if weight else 1.0
            if not (cw >= 0 and math.isfinite(cw)):
                raise InvalidInputError("graph", f"edge ({u}, {v}) weight {cw}", "edge weights ≥ 0")
            edges.append((index[u], index[v]))
            c.append(cw)
        if not (isinstance(l1, numbers.Real) and l1 >= 0 and math.isfinite(l1)):
            raise InvalidInputError("l1", l1, "pass μ ≥ 0")
        self.edges = np.asarray(edges, dtype=int).reshape(-1, 2)
        self.c = np.asarray(c, dtype=float)
        self.l1_weight = float(l1)
        self.p, self.name = len(nodes), "graph_tv"
        self.components = [sorted(index[v] for v in comp) for comp in nx.connected_components(graph)]
        self.check_info = {"checked": "by construction (cut functions are submodular and symmetric)"}
        self._F = self.F

    def F(self, A) -> float:
        m = _mask(A if not isinstance(A, frozenset) else list(A), self.p)
        e = self.edges
        return float(self.c[m[e[:, 0]] != m[e[:, 1]]].sum()) if len(e) else 0.0

    def lovasz(self, v):
        v = self._vec(v)
        e = self.edges
        return float((self.c * np.abs(v[e[:, 0]] - v[e[:, 1]])).sum()) if len(e) else 0.0

    def value(self, w):
        w = self._vec(w)
        return self.lovasz(w) + self.l1_weight * float(np.abs(w).sum())

    def greedy(self, w):
        w = self._vec(w)
        s = np.zeros(self.p)
        e = self.edges
        if len(e):   # greedy base of a cut: each edge gives +c to its larger end, −c to the other
            up = w[e[:, 0]] > w[e[:, 1]]
            tie = w[e[:, 0]] == w[e[:, 1]]
            first = np.where(tie, e[:, 0] < e[:, 1], up)   # stable order breaks ties by index
            hi = np.where(first, e[:, 0], e[:, 1])
            lo = np.where(first, e[:, 1], e[:, 0])
            np.add.at(s, hi, self.c)
            np.add.at(s, lo, -self.c)
        return s + self.l1_weight * np.where(w < 0, -1.0, 1.0)

    def dual(self, s):
        s = self._vec(s)
        if self.l1_weight == 0:
            for comp in self.components:   # f vanishes on constants per component
                if abs(s[comp].sum()) > 1e-9 * (1 + np.abs(s).sum()):
                    return math.inf
        return self._dual_lp(s)

    def cvxpy_expr(self, w):
        import cvxpy as cp

        e = self.edges
        tv = (self.c @ cp.abs(w[e[:, 0]] - w[e[:, 1]])) if len(e) else 0
        return tv + self.l1_weight * cp.norm1(w)

    @property
    def l2_radius(self):
        if self.l1_weight == 0:
            return math.inf
        return 1.0 / self.l1_weight          # Ω ≥ μ‖w‖₁ ≥ μ‖w‖₂

    @property
    def lipschitz_l2(self):
        deg = np.zeros(self.p)
        if len(self.edges):
            np.add.at(deg, self.edges[:, 0], self.c)
            np.add.at(deg, self.edges[:, 1], self.c)
        return float(np.sqrt(np.sum((deg + self.l1_weight) ** 2)))

    def exact_gaussian_width(self, which="dual"):
        if which == "dual":   # E|g_i − g_j| = 2/√π, E|g_i| = √(2/π)
            return float(self.c.sum() * 2 / math.sqrt(math.pi)
                         + self.l1_weight * self.p * math.sqrt(2 / math.pi))
        return None

    def __repr__(self):
        return (f"<graph total variation on {self.p} nodes, {len(self.edges)} edges"
                + (f", + {self.l1_weight:g}·ℓ1>" if self.l1_weight else " (seminorm)>"))


# ---------------------------------------------------------------------------- constructors
def _check_p(p):
    if isinstance(p, bool) or not isinstance(p, numbers.Integral) or p < 1:
        raise InvalidInputError("p", p, "pass the dimension, a positive integer")
    return int(p)


def l1(p: int) -> GroupNorm:
    """ℓ1 norm on R^p: F(A) = |A|; dual ℓ∞; dual ball the cube [−1, 1]^p.

    >>> import numpy as np; from privfair import norms
    >>> N = norms.l1(3); N(np.array([1., -2., 0.])), N.dual(np.array([1., -2., 0.]))
    (3.0, 2.0)
    """
    p = _check_p(p)
    return GroupNorm([[j] for j in range(p)], p=p, name="l1")


def linf(p: int) -> GroupNorm:
    """ℓ∞ norm on R^p: F(A) = min(|A|, 1); dual ℓ1; dual ball the cross-polytope.

    >>> import numpy as np; from privfair import norms
    >>> N = norms.linf(3); N(np.array([1., -2., 0.])), N.dual(np.array([1., -2., 0.]))
    (2.0, 3.0)
    """
    p = _check_p(p)
    return GroupNorm([list(range(p))], p=p, name="linf")


def group(groups, weights=None, p=None) -> GroupNorm:
    """Group ℓ1/ℓ∞ norm Σ_g d_g ‖w_g‖_∞ (groups may overlap and must cover every coordinate).

    >>> import numpy as np; from privfair import norms
    >>> N = norms.group([[0, 1], [2, 3]], weights=[1.0, 2.0])
    >>> N(np.array([1., -3., 0.5, 0.])), N.dual(np.array([1., 1., 4., 0.]))
    (4.0, 2.0)
    """
    return GroupNorm(groups, weights=weights, p=p)


def graph_tv(graph, weight="weight", l1: float = 0.0) -> GraphTV:
    """Graph total variation Σ_{(i,j)∈E} c_ij |w_i − w_j| (+ μ‖w‖₁) of a networkx graph; nodes in
    ``graph.nodes()`` order are the coordinates.  μ = 0 gives a seminorm (fine as a penalty, not as
    a decision-set radius).

    >>> import networkx as nx, numpy as np; from privfair import norms
    >>> N = norms.graph_tv(nx.path_graph(4))
    >>> N(np.array([0., 1., 1., 3.])), N.F([0, 1])
    (3.0, 1.0)
    """
    return GraphTV(graph, weight=weight, l1=l1)


def lovasz(F, p: int, kind: str = "auto") -> SubmodularNorm:
    """The norm of any submodular F given as a Python function of a frozenset of indices.

    F is checked for submodularity (every subset for p ≤ 12, random triples beyond) and, for
    ``kind="absolute"``, for F(∅) = 0, monotonicity and F({j}) > 0.  ``kind="auto"`` picks
    "absolute" when F is non-decreasing and "symmetric" when F(A) = F(V∖A).

    >>> from privfair import norms
    >>> N = norms.lovasz(lambda A: min(len(A), 2), 4)      # a "k-support"-like cardinality norm
    >>> N([3.0, -1.0, 0.5, 0.0])
    4.0
    >>> norms.lovasz(lambda A: len(A) ** 2, 3)
    Traceback (most recent call last):
    ...
    privfair.errors.ModelingError: F='p=3' is invalid: F is not submodular: ...
    """
    p = _check_p(p)
    if kind not in ("auto", "absolute", "symmetric"):
        raise InvalidInputError("kind", kind, "choose 'auto', 'absolute' or 'symmetric'")
    if kind == "auto":
        full = frozenset(range(p))
        subsets = (itertools.chain.from_iterable(itertools.combinations(range(p), k)
                                                 for k in range(p + 1)) if p <= 10 else
                   [tuple(range(k)) for k in range(p + 1)])
        sym = True
        for A in subsets:
            if abs(float(F(frozenset(A))) - float(F(full - frozenset(A)))) > 1e-9:
                sym = False
                break
        kind = "symmetric" if sym and abs(float(F(full))) < 1e-12 else "absolute"
    norm = SubmodularNorm(F, p, name="lovasz", kind=kind)
    return norm

"""Sparse linear decision sets, GLM losses, and [K]'s excess-risk bounds.

* :class:`SparseLinear` — linear classifiers θ = (w, b) with Ω(w) ≤ radius for a structured-
  sparsity norm Ω from :mod:`privfair.norms` (or the ℓ2 ball when ``norm=None``), |b| ≤
  ``intercept_bound``, an explicit ridge term (Λ/2)‖θ‖² (``l2=Λ``) that the row-private ERM
  backends need, and a public feature bound R: every row is clipped to ‖x‖₂ ≤ R before it meets θ,
  in training *and* in prediction.  A subclass of :class:`~privfair.decisions.LinearClassifier`,
  so ``pf.rates(SparseLinear(...), data, surrogate="logistic")`` works unchanged.
* :data:`LOSSES` — GLM losses l(z, y) of the margin z = θᵀ(x̃, 1): ``logistic``, ``squared`` and
  ``smoothed_hinge`` (and the non-smooth ``hinge``), each with its Lipschitz and curvature bounds.
* :func:`glm` — a row-private GLM ERM built directly from arrays (regression or classification),
  the same object the backends build from a fairness problem; :func:`fit` runs a backend on it.

[K] Thm 1 and Thm 4 live with the backends that run them
(``privfair.backends.output_perturbation.thm1_bound``, ``privfair.backends.dual_frank_wolfe.
thm4_bound``): one home per formula.

Examples
--------
>>> import numpy as np, privfair as pf
>>> C = pf.SparseLinear(3, norm=pf.norms.l1(3), radius=2.0, l2=1e-3, feature_bound=1.0)
>>> C.contains(np.array([1.0, -1.0, 0.0, 0.5])), C.contains(np.array([2.0, 1.0, 0.0, 0.0]))
(True, False)
>>> C.project(np.array([3.0, 0.5, 0.0, 9.0]))        # soft-thresholds w, clips b
array([2., 0., 0., 2.])
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .projections import GroupLayout, project_disjoint_group_ball
from .decisions import LinearClassifier, _as_X
from .errors import InvalidInputError, ModelingError

__all__ = ["SparseLinear", "GLMLoss", "LOSSES", "ERM", "glm", "fit", "clip_rows",
           "logistic_gradient_diameter"]


def clip_rows(X, bound):
    """Rows of X scaled to ‖x‖₂ ≤ bound (never rescaled by a data-derived norm)."""
    X = np.asarray(X, dtype=float)
    if bound is None:
        return X
    norms = np.linalg.norm(X, axis=1)
    return X * np.minimum(1.0, bound / np.maximum(norms, 1e-300))[:, None]


def _positive(value, field, allow_zero=False, allow_none=False):
    if value is None and allow_none:
        return None
    ok = (not isinstance(value, bool) and isinstance(value, numbers.Real) and math.isfinite(value)
          and (value >= 0 if allow_zero else value > 0))
    if not ok:
        raise InvalidInputError(field, value, f"pass a {'non-negative' if allow_zero else 'positive'}"
                                " finite number")
    return float(value)


class SparseLinear(LinearClassifier):
    """Linear classifiers θ = (w, b) with Ω(w) ≤ radius, |b| ≤ intercept_bound.

    Parameters
    ----------
    n_features : int
    norm : privfair.norms.SubmodularNorm or None
        Ω on w (dimension ``n_features``); None means the ℓ2 ball ‖w‖₂ ≤ radius.
    radius : float
        Radius of the Ω-ball (the constrained form of [K] eq. 8).
    l2 : float, default 0
        Λ ≥ 0 of the ridge term (Λ/2)‖θ‖² added to the ERM objective.  Output perturbation and
        the dual Frank–Wolfe method need Λ > 0 (their sensitivity is 2L/(nΛ)); declare it here so
        that the plan shows it, never infer it.
    intercept : bool, default True
        False fixes b = 0.
    intercept_bound : float, optional
        |b| ≤ this (default: ``radius`` × the ℓ2 radius of the unit Ω-ball).
    feature_bound : float or None, default 1.0
        Public R: rows are clipped to ‖x‖₂ ≤ R before computing margins (prediction included);
        must equal the ``feature_bound`` given to ``pf.rates``.  None: no clipping (refused under
        row privacy).

    Attributes
    ----------
    norm_radius : float -- the Ω radius (``radius`` argument).
    radius : float -- an ℓ2 radius containing the whole set (the LinearClassifier contract
        ‖θ‖₂ ≤ radius, used for margin bounds): √((norm_radius·κ)² + intercept_bound²), with
        κ = max_{Ω(w)≤1} ‖w‖₂.
    """

    def __init__(self, n_features, norm=None, radius=1.0, *, l2=0.0, intercept=True,
                 intercept_bound=None, feature_bound=1.0):
        from .norms import SubmodularNorm

        super().__init__(n_features, radius=1.0)
        if norm is not None and not isinstance(norm, SubmodularNorm):
            raise InvalidInputError("norm", type(norm).__name__, "pass a norm from privfair.norms "
                                    "(l1, linf, group, graph_tv, lovasz) or None for ℓ2")
        if norm is not None and norm.p != self.n_features:
            raise InvalidInputError("norm", repr(norm), f"its dimension must be n_features = "
                                    f"{self.n_features}")
        self.norm = norm
        self.norm_radius = _positive(radius, "radius")
        self.l2 = _positive(l2, "l2", allow_zero=True)
        self.feature_bound = _positive(feature_bound, "feature_bound", allow_none=True)
        kappa = 1.0 if norm is None else float(norm.l2_radius)
        if not math.isfinite(kappa):
            raise ModelingError("norm", repr(norm), "its unit ball is unbounded (a seminorm); for "
                                "graph TV pass graph_tv(graph, l1=μ) with μ > 0")
        self.kappa = kappa
        self.intercept = bool(intercept)
        ib = kappa * self.norm_radius if intercept_bound is None else intercept_bound
        self.intercept_bound = _positive(ib, "intercept_bound", allow_zero=True) if intercept else 0.0
        self.radius = math.hypot(self.norm_radius * kappa, self.intercept_bound)
        self.diameter = 2.0 * self.radius
        # disjoint groups of more than one coordinate (not ℓ1, not one group): the certified ERM
        # solver projects hundreds of times, and the norm's own projection loops over groups
        self._group_layout = None
        if (norm is not None and getattr(norm, "disjoint", False) and norm.name != "l1"
                and len(getattr(norm, "groups", ())) > 1):
            self._group_layout = GroupLayout(norm.groups, norm.weights, norm.p)

    # ------------------------------------------------------------------ the set
    def omega(self, w) -> float:
        """Ω(w) (ℓ2 norm when ``norm`` is None)."""
        w = np.asarray(w, dtype=float)
        return float(np.linalg.norm(w)) if self.norm is None else self.norm.value(w)

    def contains(self, theta, tol: float = 1e-9) -> bool:
        th = self._theta(theta)
        return bool(self.omega(th[:-1]) <= self.norm_radius * (1 + tol) + tol
                    and abs(th[-1]) <= self.intercept_bound * (1 + tol) + tol)

    def project(self, theta) -> np.ndarray:
        """Euclidean projection onto the set (a product: Ω-ball × interval)."""
        th = self._theta(theta).copy()
        w, r = th[:-1], self.norm_radius
        if self.norm is None:
            nw = np.linalg.norm(w)
            th[:-1] = w if nw <= r else w * (r / nw)
        elif self._group_layout is not None:      # disjoint groups: vectorized (privfair.projections)
            th[:-1] = project_disjoint_group_ball(w, self._group_layout, r)
        else:
            th[:-1] = self.norm.project(w, r)
        th[-1] = float(np.clip(th[-1], -self.intercept_bound, self.intercept_bound))
        return th

    @property
    def exact_projection(self) -> bool:
        """True when :meth:`project` is exact up to rounding (closed form or exact bisection);
        otherwise it is a cvxpy QP solved to its tolerance."""
        return self.norm is None or bool(getattr(self.norm, "exact_projection", False))

    # ------------------------------------------------------------------ prediction
    def margins(self, theta, X) -> np.ndarray:
        """z = x̃·w + b with x̃ the row clipped to ``feature_bound``."""
        th = self._theta(theta)
        return clip_rows(_as_X(X, self.n_features), self.feature_bound) @ th[:-1] + th[-1]

    def __repr__(self):
        nm = "l2" if self.norm is None else self.norm.name
        return (f"SparseLinear(n_features={self.n_features}, norm={nm}, radius={self.norm_radius:g}"
                f", l2={self.l2:g}, feature_bound={self.feature_bound})")


# ---------------------------------------------------------------------------- the ERM object
@dataclass
class ERM:
    """A weighted GLM ERM over a :class:`privfair.SparseLinear` set (see the module docstring)."""

    U: np.ndarray
    y: np.ndarray
    w: np.ndarray
    loss: object
    decisions: object
    row_weight_bound: float
    feature_norm_bound: float
    label_bound: float = 1.0
    notes: list = field(default_factory=list)
    meta: dict = field(default_factory=dict)

    @classmethod
    def from_arrays(cls, X, y, decisions, loss, *, weights, row_weight_bound, label_bound=1.0):
        R = decisions.feature_bound
        Xc = clip_rows(X, R)
        U = np.hstack([Xc, np.ones((Xc.shape[0], 1))])
        ub = math.inf if R is None else math.sqrt(R * R + 1.0)
        return cls(U, np.asarray(y, float), np.asarray(weights, float), loss, decisions,
                   float(row_weight_bound), ub, float(label_bound))

    # -- public constants ---------------------------------------------------------------------
    @property
    def n(self):
        return self.U.shape[0]

    @property
    def P(self):
        return self.U.shape[1]

    @property
    def l2(self):
        return self.decisions.l2

    @property
    def margin_bound(self):
        return self.decisions.radius * self.feature_norm_bound

    @property
    def zeta(self):
        """Per-row gradient bound (sum form): ω · sup|l'| · ‖u‖_max."""
        return (self.row_weight_bound * self.loss.lipschitz(self.margin_bound, self.label_bound)
                * self.feature_norm_bound)

    @property
    def beta_H(self):
        """Per-row Hessian bound (sum form, rank one): ω · sup l'' · ‖u‖²_max."""
        return self.row_weight_bound * self.loss.curvature * self.feature_norm_bound ** 2

    def sensitivity_geometry(self):
        """(ρ, B, planar): the bound ρ on the part of a row's u that θ ∈ C can see, the margin
        bound B = r₂·ρ, and whether that part has dimension ≥ 2.  With the intercept fixed at 0
        (``SparseLinear(intercept=False)``) every θ ∈ C has θ_b = 0, so only x̃ (‖x̃‖ ≤ R)
        matters (see :meth:`gradient_sensitivity`); otherwise u = (x̃, 1), ‖u‖ ≤ √(R² + 1)."""
        ds = self.decisions
        R = getattr(ds, "feature_bound", None)
        if getattr(ds, "intercept_bound", 1.0) > 0 or R is None:
            rho, dim = self.feature_norm_bound, self.P
        else:
            rho, dim = min(self.feature_norm_bound, float(R)), self.P - 1
        return rho, ds.radius * rho, dim >= 2

    def gradient_sensitivity(self, relation="row"):
        """Δ_g ≥ sup_{θ∈C} ‖P(∇J_D(θ) − ∇J_D'(θ))‖₂ over neighbours D ~ D' (mean form), P the
        projection on the directions C spans (the identity, or the w-part when θ_b ≡ 0).

        Only row i's term w_i·l'(θᵀu_i, y_i)·u_i differs (weights are row-local, w_i ≤ ω/n).

        * ``"row"`` (one row replaced): Δ_g = (ω/n)·ρ·κ, κ = ``loss.gradient_diameter(B, Y,
          planar)``, the diameter of the set one row's loss gradient ranges over, in units of
          ρ (the loss's docstring).  The difference w·g − w'·g' is a norm of a linear function
          of (w, w') ∈ [0, ω/n]², so it is largest at a vertex: (ω/n)·ρ·κ at w = w' = ω/n, or
          (ω/n)·ρ·sup|l'| when one weight is 0 — hence the max of the two.  The textbook value
          is 2ζ/n = 2(ω/n)·ρ·sup|l'| (Chaudhuri, Monteleoni & Sarwate 2011, Kifer, Smith &
          Thakurta 2012: the triangle inequality); for the logistic loss κ is smaller.
        * ``"sensitive"`` (one row's sensitive attribute changes; x and y do not, so only its
          weight moves within [0, ω/n]): Δ_g = (ω/n)·ρ·sup_{|z|≤B}|l'| = |w − w'|·|l'|·‖u‖ at
          most.
        """
        rho, B, planar = self.sensitivity_geometry()
        om = self.row_weight_bound / self.n
        if relation == "sensitive":
            return om * rho * self.loss.deriv_bound(B, self.label_bound)
        if relation != "row":
            raise ValueError(f"internal error: unknown neighbouring relation {relation!r}")
        return om * rho * max(self.loss.gradient_diameter(B, self.label_bound, planar),
                              self.loss.deriv_bound(B, self.label_bound))

    @property
    def grad_sensitivity(self):
        """:meth:`gradient_sensitivity` under row replacement (mean form)."""
        return self.gradient_sensitivity("row")

    @property
    def total_weight_bound(self):
        """A public bound on Σ_i w_i (= ω, since every w_i ≤ ω/n)."""
        return self.row_weight_bound

    # -- evaluation ---------------------------------------------------------------------------
    def value_and_grad(self, theta, lin=None, ridge=0.0):
        z = self.U @ theta
        val, der = self.loss.value_and_deriv(z, self.y)
        mu = self.l2 + ridge
        f = float(self.w @ val) + 0.5 * mu * float(theta @ theta)
        g = self.U.T @ (self.w * der) + mu * theta
        if lin is not None:
            f += float(lin @ theta)
            g = g + lin
        return f, g

    def grad(self, theta, lin=None, ridge=0.0):
        """∇ of the objective of :meth:`value_and_grad` (no loss values: cheaper)."""
        der = self.loss.deriv(self.U @ theta, self.y)
        g = self.U.T @ (self.w * der) + (self.l2 + ridge) * theta
        return g if lin is None else g + lin

    def objective(self, theta):
        """J_D(θ) (without any perturbation)."""
        return self.value_and_grad(np.asarray(theta, float))[0]

    def smoothness(self, ridge=0.0):
        """β ≥ the Lipschitz constant of ∇J: sup l'' · λ_max(Uᵀ diag(w) U) + Λ + ridge (computed
        from the data, used only by the solver; the certificate stays valid for any β ≥ true)."""
        if "lam_max" not in self.meta:
            M = (self.U * self.w[:, None]).T @ self.U
            self.meta["lam_max"] = float(np.linalg.eigvalsh(M)[-1]) * (1 + 1e-9) + 1e-300
        return self.loss.curvature * self.meta["lam_max"] + self.l2 + ridge


# ---------------------------------------------------------------------------- GLM losses
@dataclass(frozen=True)
class GLMLoss:
    """A loss l(z, y) of the margin z (labels y ∈ {−1, +1}, or real for ``squared``).

    ``lipschitz(B, Y)`` bounds |∂l/∂z| for |z| ≤ B, |y| ≤ Y; ``curvature`` bounds ∂²l/∂z²;
    ``twice_differentiable`` says whether l is C² (objective perturbation needs it).
    """

    name: str
    curvature: float
    twice_differentiable: bool
    smooth: bool

    def value_and_deriv(self, z, y):
        z = np.asarray(z, dtype=float)
        if self.name == "logistic":       # log(1 + e^{−yz})
            u = -y * z
            return np.logaddexp(0.0, u), -y * 0.5 * (1.0 + np.tanh(0.5 * u))
        if self.name == "squared":        # (z − y)²/2
            return 0.5 * (z - y) ** 2, z - y
        u = -y * z
        if self.name == "smoothed_hinge":  # ψ(u) = 0, (1+u)²/2, 1/2 + u
            val = np.where(u <= -1.0, 0.0, np.where(u < 0.0, 0.5 * (1.0 + u) ** 2, 0.5 + u))
            return val, -y * np.clip(1.0 + u, 0.0, 1.0)
        return np.maximum(0.0, 1.0 + u), -y * (u > -1.0)   # hinge max(0, 1 − yz)

    def deriv(self, z, y):
        """∂l/∂z only."""
        if self.name == "logistic":
            return -y * 0.5 * (1.0 + np.tanh(-0.5 * y * z))
        if self.name == "squared":
            return z - y
        return self.value_and_deriv(z, y)[1]

    def second(self, z, y):
        """∂²l/∂z² (a.e.)."""
        z = np.asarray(z, dtype=float)
        if self.name == "logistic":
            s = 0.5 * (1.0 + np.tanh(0.5 * z))
            return s * (1 - s)
        if self.name == "squared":
            return np.ones_like(z)
        if self.name == "smoothed_hinge":
            u = -y * z
            return ((u > -1.0) & (u < 0.0)).astype(float)
        return np.zeros_like(z)

    def lipschitz(self, B=math.inf, Y=1.0) -> float:
        if self.name == "squared":
            return B + Y
        return 1.0

    def deriv_bound(self, B=math.inf, Y=1.0) -> float:
        """sup |∂l/∂z| over margins |z| ≤ B: σ(B) = 1/(1 + e^{−B}) for the logistic loss
        (|l'(z, y)| = σ(−yz)), :meth:`lipschitz` otherwise."""
        if self.name == "logistic":
            return _sigmoid(B)
        return self.lipschitz(B, Y)

    def gradient_diameter(self, B=math.inf, Y=1.0, planar=True) -> float:
        """κ with ‖l'(θᵀu, y)·u − l'(θᵀu', y')·u'‖₂ ≤ κ·ρ for all rows ‖u‖, ‖u'‖ ≤ ρ, labels
        and ‖θ‖₂·ρ ≤ B — the replace-one-row sensitivity of one row's gradient, in units of ρ.
        ``planar``: θ and u range over a space of dimension ≥ 2 (False: dimension 1).

        * logistic: :func:`logistic_gradient_diameter` (the diameter of the curve the gradient
          traces; module :func:`logistic_gradient_diameter` proves it), at most 2σ(B);
        * smoothed hinge and hinge: 2 — attained at θ = 0 (l'(0, y)u = −yu), so it is tight;
        * squared: 2(B + Y) = 2·:meth:`lipschitz` (the triangle inequality; not shown tight).
        """
        if self.name == "logistic":
            return min(2.0 * _sigmoid(B), logistic_gradient_diameter(B, planar))
        return 2.0 * self.lipschitz(B, Y)


def _sigmoid(t: float) -> float:
    return 0.5 * (1.0 + math.tanh(0.5 * t))


#: the certified evaluation's grid: points on the curve, directions, and slack per β step
_KAPPA_POINTS, _KAPPA_DIRECTIONS, _KAPPA_STEP_SLACK = 2048, 64, 0.01


@lru_cache(maxsize=256)
def logistic_gradient_diameter(B: float, planar: bool = True) -> float:
    """κ(B): a certified upper bound on sup ‖l'(θᵀu, y)u − l'(θᵀu', y')u'‖₂ / ρ for the logistic
    loss l(z, y) = log(1 + e^{−yz}), over rows ‖u‖, ‖u'‖ ≤ ρ, labels y, y' ∈ {−1, 1} and
    parameters with ‖θ‖·ρ ≤ B — the replace-one-row sensitivity of one row's gradient.

    Proof.  With m = y·u (‖m‖ ≤ ρ) the gradient is l'(θᵀu, y)u = −y·σ(−yθᵀu)·u = −h(m),
    h(m) = σ(−θᵀm)·m, σ(t) = 1/(1 + e^{−t}); the label is absorbed into m, so the sensitivity
    is the diameter of h(ρ-ball).  Let t = ‖θ‖, θ̂ = θ/t (any unit vector if t = 0), and split
    m = cθ̂ + q with q ⊥ θ̂.  Then h(m) = σ(−tc)(cθ̂ + q) and

        ‖h(m) − h(m')‖² = (φ(c) − φ(c'))² + ‖σ(−tc)q − σ(−tc')q'‖²,   φ(c) = σ(−tc)·c.

    For fixed c, c' the second term is largest for q' pointing against q with both norms
    maximal, √(ρ² − c²) (possible when θ and u range over a space of dimension ≥ 2): the
    supremum is attained on the sphere ‖m‖ = ρ, in one plane through θ̂.  With
    m = ρ(cos α·θ̂ + sin α·q̂) and β = tρ ≤ B, h(m) = ρ·γ_β(α), γ_β(α) = σ(−β cos α)(cos α,
    sin α), so the sensitivity is ρ·sup_{β≤B} diam Γ_β, Γ_β = γ_β([0, 2π)).  In dimension 1
    (q = 0) it is ρ·sup_β (max − min of φ_β(c) = σ(−βc)c over c ∈ [−1, 1]).  Each point of Γ_β
    has norm σ(−β cos α) ≤ σ(B), so κ ≤ 2σ(B) ≤ 2 — the textbook bound 2·sup|l'| (Chaudhuri,
    Monteleoni & Sarwate 2011; Kifer, Smith & Thakurta 2012) — and at β = 0, Γ is a circle of
    radius 1/2: κ(0) = 1, half of it.  It is not smaller in general: rows m = (±cos a, sin a)
    at θ = −t·e₂ give 2ρ·cos a·σ(tρ sin a) → 2ρ as tρ → ∞.

    Certified evaluation (every step rounds up).  Sample Γ_β at N equally spaced α: each curve
    point lies within L·π/N of a sample, L = sup‖γ'_β‖ ≤ √(1 + β²/16) (γ' has orthogonal parts
    σ'·β sin α·(cos α, sin α) and σ·(−sin α, cos α); σ' ≤ 1/4, σ ≤ 1), so the curve's width
    along any direction exceeds the samples' by ≤ 2Lπ/N; and diam S ≤ max_k width_S(e_k) /
    cos(π/2M) over M equally spaced directions e_k (the diameter's direction is within π/2M of
    one).  Between grid values β_j ≤ β ≤ β_{j+1}, ‖∂_β γ_β‖ = σ'(−β cos α)|cos α| ≤ min(1/4,
    1/(eβ_j)) (σ'(x) ≤ e^{−|x|}, |c|e^{−β|c|} ≤ 1/(eβ)), so diam Γ_β ≤ diam Γ_{β_j} + 2(β_{j+1}
    − β_j)·min(1/4, 1/(eβ_j)); the steps keep that term ≤ 0.01.  Dimension 1: φ_β is
    (1 + 1/e)-Lipschitz in c and ∂_βφ obeys the same bound; for β ≥ 60, min φ ≥ −1 and
    max φ ≤ max_c c·e^{−βc} = 1/(eβ).  Public: it reads B only.

    >>> round(logistic_gradient_diameter(0.0), 3) <= 1.02, logistic_gradient_diameter(1e3) == 2.0
    (True, True)
    """
    B = float(B)
    if not B >= 0:
        raise ValueError(f"internal error: margin bound B = {B}")
    if B > 60.0:
        if planar:        # 2σ(B) = 2 to double precision: nothing to gain
            return 2.0 * _sigmoid(B)
        # one dimension, β ≥ 60: min φ ≥ −1 and max φ ≤ max_c c·e^{−βc} = 1/(eβ)
        return max(logistic_gradient_diameter(60.0, False), 1.0 + 1.0 / (60.0 * math.e))
    betas = [0.0]
    while betas[-1] < B:
        b = betas[-1]
        lip = 0.25 if b == 0 else min(0.25, 1.0 / (math.e * b))
        betas.append(min(B, b + _KAPPA_STEP_SLACK / (2.0 * lip)))
    betas = np.asarray(betas)
    lips = np.minimum(0.25, 1.0 / (math.e * np.maximum(betas, 1e-300)))
    steps = np.append(np.diff(betas), 0.0)
    N, M = _KAPPA_POINTS, _KAPPA_DIRECTIONS
    if planar:
        a = np.linspace(0.0, 2 * math.pi, N, endpoint=False)
        ca, sa = np.cos(a), np.sin(a)
        dirs = np.linspace(0.0, math.pi, M, endpoint=False)
        best = 0.0
        for lo in range(0, len(betas), 32):
            bj = betas[lo:lo + 32, None]
            s = 0.5 * (1.0 + np.tanh(-0.5 * bj * ca))               # σ(−β cos α)
            proj = (s * ca)[:, :, None] * np.cos(dirs) + (s * sa)[:, :, None] * np.sin(dirs)
            width = (proj.max(axis=1) - proj.min(axis=1)).max(axis=1)
            err = 2 * np.sqrt(1 + bj[:, 0] ** 2 / 16) * math.pi / N
            diam = (width + err) / math.cos(math.pi / (2 * M))
            best = max(best, float(np.max(diam + 2 * steps[lo:lo + 32] * lips[lo:lo + 32])))
    else:
        c = np.linspace(-1.0, 1.0, N)
        phi = 0.5 * (1.0 + np.tanh(-0.5 * betas[:, None] * c)) * c
        rng_ = phi.max(axis=1) - phi.min(axis=1) + 2 * (1 + 1 / math.e) / (N - 1)
        best = float(np.max(rng_ + 2 * steps * lips))
    return min(2.0 * _sigmoid(B), best * (1 + 1e-12) + 1e-12)


LOSSES = {
    "logistic": GLMLoss("logistic", 0.25, True, True),
    "squared": GLMLoss("squared", 1.0, True, True),
    "smoothed_hinge": GLMLoss("smoothed_hinge", 1.0, False, True),
    "hinge": GLMLoss("hinge", math.inf, False, False),
}


def glm(X, y, decisions, loss="logistic", *, label_bound=1.0, sample_weight=None,
        weight_bound=None):
    """A GLM ERM min_{θ∈C} (1/n)Σ l(θᵀ(x̃_i, 1), y_i) + (Λ/2)‖θ‖², from arrays.

    Parameters
    ----------
    X : (n, d) array -- features; rows are clipped to ``decisions.feature_bound`` (required).
    y : (n,) array -- labels in {0, 1} or {−1, +1} (classification) or reals (``squared``,
        clipped to [−label_bound, label_bound]).
    decisions : SparseLinear -- C, Λ and R.
    loss : {"logistic", "squared", "smoothed_hinge", "hinge"}
    sample_weight : (n,) array, optional -- per-row multipliers c_i ≥ 0 of the loss (e.g. subgroup
        weights, [A] §1.3.1); each must depend on its own row only.
    weight_bound : float, optional -- a *public* bound on every c_i (required with
        ``sample_weight``; the sensitivity scales with it and is never read from the data).

    Returns
    -------
    ERM -- pass it to :func:`fit`.
    """

    if not isinstance(decisions, SparseLinear):
        raise InvalidInputError("decisions", type(decisions).__name__, "pass a pf.SparseLinear")
    if loss not in LOSSES:
        raise InvalidInputError("loss", loss, f"choose one of {sorted(LOSSES)}")
    X = _as_X(X, decisions.n_features)
    y = np.asarray(y, dtype=float).reshape(-1)
    if y.shape != (X.shape[0],) or not np.isfinite(y).all():
        raise InvalidInputError("y", y.shape, f"one finite label per row ({X.shape[0]})")
    if loss != "squared":
        if not np.all(np.isin(y, (0.0, 1.0))) and not np.all(np.isin(y, (-1.0, 1.0))):
            raise InvalidInputError("y", np.unique(y)[:5], "classification labels are {0,1} or {−1,+1}")
        y = np.where(y > 0, 1.0, -1.0)
        Y = 1.0
    else:
        Y = _positive(label_bound, "label_bound")
        y = np.clip(y, -Y, Y)
    n = X.shape[0]
    if sample_weight is None:
        c, bound = np.ones(n), 1.0
    else:
        c = np.asarray(sample_weight, dtype=float).reshape(-1)
        if c.shape != (n,) or not np.isfinite(c).all() or (c < 0).any():
            raise InvalidInputError("sample_weight", c.shape, f"one finite weight ≥ 0 per row ({n})")
        if weight_bound is None:
            raise InvalidInputError("weight_bound", None, "declare a public bound on the weights, "
                                    "e.g. weight_bound=max of your subgroup weights")
        bound = _positive(weight_bound, "weight_bound")
        if (c > bound).any():
            raise InvalidInputError("sample_weight", float(c.max()),
                                    f"weights must not exceed the declared weight_bound={bound:g}")
    return ERM.from_arrays(X, y, decisions, LOSSES[loss], weights=c / n,
                           row_weight_bound=bound, label_bound=Y)


def fit(erm, privacy, method="output_perturbation", seed=None, **options):
    """Run a row-private ERM backend (``output_perturbation``, ``objective_perturbation``,
    ``dual_frank_wolfe``) on an :func:`glm` problem; returns a :class:`privfair.Result` with the
    certificate."""
    from privfair.backends._erm import fit_erm

    return fit_erm(erm, privacy, method, seed=seed, **options)


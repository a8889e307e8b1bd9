"""GLM losses and the ERM object the row-private ERM backends solve (numpy only).

* :data:`LOSSES` — GLM losses l(z, y) of the margin z = θᵀ(x̃, 1): ``logistic``, ``squared`` and
  ``smoothed_hinge`` (and the non-smooth ``hinge``), each with its Lipschitz and curvature bounds
  and its replace-one-row gradient diameter (:meth:`GLMLoss.gradient_diameter`;
  :func:`logistic_gradient_diameter` proves the logistic one);
* :class:`ERM` — a weighted GLM ERM over a :class:`privfair.SparseLinear` set with its public
  constants and its gradient sensitivity per neighbouring relation
  (:meth:`ERM.gradient_sensitivity`);
* :func:`clip_rows` — rows scaled to a public norm bound;
* :func:`fit` — one private ERM run by a given ERM mechanism (a backend instance) under its own
  accountant, with the certificate: the body of ``pf.sparse.fit`` and of
  ``privfair.backends.erm.direct.fit_erm``, which only look the mechanism up by name.

Built by :func:`privfair.models.sparse.glm` (from arrays) and by the backends (from a fairness problem);
it imports no backend (tests/test_layers.py).  Re-exported by :mod:`privfair.models.sparse`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

__all__ = ["ERM", "GLMLoss", "LOSSES", "clip_rows", "fit", "logistic_gradient_diameter"]


def clip_rows(X, bound):
    """Rows of X scaled to ‖x‖₂ ≤ bound (never rescaled by a data-derived norm)."""
    X = np.asarray(X, dtype=float)
    if bound is None:
        return X
    norms = np.linalg.norm(X, axis=1)
    return X * np.minimum(1.0, bound / np.maximum(norms, 1e-300))[:, None]


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
    #: Λ of this ERM per unit of ``decisions.l2`` (public): 1 for :func:`privfair.models.sparse.glm`'s
    #: ERM (plain loss); 1/s(B) for a fairness problem's ERM when ``decisions.l2_units`` is
    #: ``"loss"`` (its loss is pf.rates' normalized surrogate s/s(B), issue #20)
    l2_factor: float = 1.0

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
        """Λ of this ERM's ridge (Λ/2)‖θ‖², in this ERM's units (``decisions.l2`` ×
        :attr:`l2_factor`)."""
        return self.decisions.l2 * self.l2_factor

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


# ---------------------------------------------------------------------------- one direct fit
def fit(erm, privacy, mechanism, seed=None, **options):
    """Run ``mechanism`` — a row-private ERM backend *instance* (it has ``erm_reason``,
    ``refuse`` and ``run_erm``; ``privfair.backends.get(name)`` returns one) — on ``erm`` under
    ``privacy``, with its own accountant; returns the :class:`privfair.Result` with its
    certificate.

    Every refusal (wrong privacy object, unbounded features, the mechanism's public
    preconditions) is decided before the accountant exists, from public quantities only.
    ``pf.sparse.fit`` and ``privfair.backends.erm.direct.fit_erm`` look the mechanism up by
    name and call this; it lives here, below the backends, so that the decision-set module
    imports no backend (issue #17)."""
    from ..errors import InvalidInputError, InvalidPrivacyError
    from ..privacy import Accountant, Certificate
    from ..privacy.randomness import as_source
    from ..privacy.spec import DP

    if not isinstance(privacy, DP):
        raise InvalidPrivacyError("privacy", privacy, "pass pf.DP(epsilon, delta, protect='row')")
    if not (hasattr(mechanism, "run_erm") and hasattr(mechanism, "erm_reason")):
        raise InvalidInputError("method", getattr(mechanism, "name", mechanism),
                                "choose output_perturbation, objective_perturbation or "
                                "dual_frank_wolfe")
    if privacy.is_private and erm.decisions.feature_bound is None:
        raise InvalidInputError("feature_bound", None, "row privacy needs bounded features: "
                                "declare SparseLinear(..., feature_bound=R); rows are clipped to R")
    why = mechanism.erm_reason(erm, privacy)
    if why:
        mechanism.refuse(why)
    src = as_source(seed)
    if not privacy.is_private:
        res = mechanism.run_erm(erm, privacy, rng=src, accountant=None, options=options)
        res.certificate = Certificate.non_private(privacy.protect)
        return res
    acc = Accountant(delta=privacy.delta or None, relation=privacy.protect,
                     limit=(privacy.epsilon, privacy.delta), source=src)
    res = mechanism.run_erm(erm, privacy, rng=src, accountant=acc, options=options)
    res.certificate = acc.certificate(delta=privacy.delta or None, notes=res.info.get("notes", ()))
    return res

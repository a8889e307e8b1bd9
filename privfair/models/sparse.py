"""Sparse linear decision sets, GLM losses, and [K]'s excess-risk bounds.

* :class:`SparseLinear` — linear classifiers θ = (w, b) with Ω(w) ≤ radius for a structured-
  sparsity norm Ω from :mod:`privfair.models.norms` (or the ℓ2 ball when ``norm=None``), |b| ≤
  ``intercept_bound``, an explicit ridge term (Λ/2)‖θ‖² (``l2=Λ``, in the loss's units: next to
  the plain mean loss, as in scikit-learn's ``C = 1/(nΛ)``) that the row-private ERM backends need, and a public feature bound R: every row is clipped to ‖x‖₂ ≤ R before it meets θ,
  in training *and* in prediction.  A subclass of :class:`~privfair.models.decisions.LinearClassifier`,
  so ``pf.rates(SparseLinear(...), data, surrogate="logistic")`` works unchanged.
* :data:`LOSSES` — GLM losses l(z, y) of the margin z = θᵀ(x̃, 1): ``logistic``, ``squared`` and
  ``smoothed_hinge`` (and the non-smooth ``hinge``), each with its Lipschitz and curvature bounds
  and gradient diameter; they and the :class:`ERM` object live in :mod:`privfair.models.erm`.
* :func:`glm` — a row-private GLM ERM built directly from arrays (regression or classification),
  the same object the backends build from a fairness problem; :func:`fit` runs a backend on it.

[K] Thm 1 and Thm 4 live with every other theorem's formula, in :mod:`privfair.analysis.formulas`
(``k1_bound``, ``k4_bound``): one home per formula.

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

import numpy as np

from .decisions import LinearClassifier, as_matrix
from .erm import ERM, LOSSES, GLMLoss, clip_rows, logistic_gradient_diameter  # noqa: F401
from ..errors import InvalidInputError, ModelingError

__all__ = ["SparseLinear", "GLMLoss", "LOSSES", "ERM", "glm", "fit", "clip_rows",
           "logistic_gradient_diameter"]


#: the units ``SparseLinear(l2=...)`` may be given in (see its docstring)
L2_UNITS = ("loss", "scaled")


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
    norm : privfair.models.norms.SubmodularNorm or None
        Ω on w (dimension ``n_features``); None means the ℓ2 ball ‖w‖₂ ≤ radius.
    radius : float
        Radius of the Ω-ball (the constrained form of [K] eq. 8).
    l2 : float, default 0
        Λ ≥ 0 of the ridge term (Λ/2)‖θ‖² added to the ERM objective, **in the loss's units**
        (``l2_units="loss"``, the default): the objective is (1/n)Σ_i c_i·l(θᵀu_i, y_i) +
        (Λ/2)‖θ‖² with l the plain GLM loss (e.g. log(1 + e^{−yz})) — scikit-learn's
        ``C = 1/(nΛ)``.  Output perturbation and the dual Frank–Wolfe method need Λ > 0 (their
        sensitivity is 2L/(nΛ)); declare it here so that the plan shows it, never infer it.
    l2_units : {"loss", "scaled"}, default "loss"
        The units of ``l2``.  ``pf.rates(..., surrogate=s)`` normalizes the surrogate to
        s(z)/s(B) (B = ``radius`` × √(R² + 1), the margin bound), so the ERM the row-private
        backends solve for a fairness problem is the loss-unit objective divided by φ = s(B);
        with ``"loss"`` the backends use Λ/φ there (the same minimizer as
        ``pf.sparse.glm``'s ERM with the same Λ), with ``"scaled"`` they use Λ as given
        (the meaning of ``l2`` before issue #20).  For :func:`glm` (no normalization) both
        mean the same.  Conversion: Λ_scaled = Λ_loss / s(B); :meth:`scaled_l2` computes it.
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

    def __init__(self, n_features, norm=None, radius=1.0, *, l2=0.0, l2_units="loss",
                 intercept=True, intercept_bound=None, feature_bound=1.0):
        from .norms import SubmodularNorm

        super().__init__(n_features, radius=1.0)
        if norm is not None and not isinstance(norm, SubmodularNorm):
            raise InvalidInputError("norm", type(norm).__name__, "pass a norm from privfair.models.norms "
                                    "(l1, linf, group, graph_tv, lovasz) or None for ℓ2")
        if norm is not None and norm.p != self.n_features:
            raise InvalidInputError("norm", repr(norm), f"its dimension must be n_features = "
                                    f"{self.n_features}")
        self.norm = norm
        self.norm_radius = _positive(radius, "radius")
        self.l2 = _positive(l2, "l2", allow_zero=True)
        if l2_units not in L2_UNITS:
            raise InvalidInputError("l2_units", l2_units, f"choose one of {list(L2_UNITS)}: "
                                    "'loss' (Λ next to the plain mean loss) or 'scaled' (Λ next "
                                    "to pf.rates' normalized surrogate)")
        self.l2_units = l2_units
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

    def scaled_l2(self, surrogate="logistic") -> float:
        """Λ in the units of ``pf.rates(self, data, surrogate=surrogate, feature_bound=R)``'s
        normalized surrogate s(z)/s(B): Λ/s(B) for ``l2_units="loss"``, Λ for ``"scaled"``.
        B = ``radius``·√(R² + 1) is public (R = ``feature_bound``), so this is too.

        >>> import privfair as pf
        >>> C = pf.SparseLinear(2, radius=1.0, intercept=False, l2=1.0, feature_bound=1.0)
        >>> round(C.scaled_l2("logistic"), 6)      # 1 / log(1 + e^{√2}): B = 1·√(1 + 1)
        0.612807
        """
        if self.l2_units == "scaled":
            return self.l2
        from .surrogates import SURROGATES

        if surrogate not in SURROGATES or self.feature_bound is None:
            raise InvalidInputError("surrogate", surrogate, "pass a surrogate of pf.rates "
                                    f"({sorted(SURROGATES)}) and declare feature_bound")
        B = self.radius * math.sqrt(self.feature_bound ** 2 + 1.0)
        return self.l2 / float(SURROGATES[surrogate](np.array(B))[0])

    # ------------------------------------------------------------------ the set
    def omega(self, w) -> float:
        """Ω(w) (ℓ2 norm when ``norm`` is None)."""
        w = np.asarray(w, dtype=float)
        return float(np.linalg.norm(w)) if self.norm is None else self.norm.value(w)

    def contains(self, theta, tol: float = 1e-9) -> bool:
        th = self.theta(theta)
        return bool(self.omega(th[:-1]) <= self.norm_radius * (1 + tol) + tol
                    and abs(th[-1]) <= self.intercept_bound * (1 + tol) + tol)

    def project(self, theta) -> np.ndarray:
        """Euclidean projection onto the set (a product: Ω-ball × interval)."""
        th = self.theta(theta).copy()
        w, r = th[:-1], self.norm_radius
        if self.norm is None:
            nw = np.linalg.norm(w)
            th[:-1] = w if nw <= r else w * (r / nw)
        else:       # disjoint groups: vectorized, privfair.models.projections (through the norm)
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
        th = self.theta(theta)
        return clip_rows(as_matrix(X, self.n_features), self.feature_bound) @ th[:-1] + th[-1]

    def __repr__(self):
        nm = "l2" if self.norm is None else self.norm.name
        return (f"SparseLinear(n_features={self.n_features}, norm={nm}, radius={self.norm_radius:g}"
                f", l2={self.l2:g}{'' if self.l2_units == 'loss' else ' (scaled units)'}"
                f", feature_bound={self.feature_bound})")


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
    X = as_matrix(X, decisions.n_features)
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
    ``dual_frank_wolfe``, or a backend instance) on a :func:`glm` problem; returns a
    :class:`privfair.Result` with the certificate.

    The fit itself is :func:`privfair.models.erm.fit` (below the backends); the name is looked up at
    the planner's level, in :mod:`privfair.planning.direct_erm`, so this module imports no backend."""
    from ..planning.direct_erm import fit as direct_fit      # planner level: at call time

    return direct_fit(erm, privacy, method, seed=seed, **options)

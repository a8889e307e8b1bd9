"""From a fairness problem to a weighted GLM ERM — the one home of "a linear objective over the
rates → a weighted ERM" (the row-private ERM backends, their constraint form and the LOPT
oracles all use it).

The ERM (mean form).  For θ = (w, b) in C = {Ω(w) ≤ ρ, |b| ≤ ρ_b} (a :class:`SparseLinear`)::

    J_D(θ) = Σ_i w_i · l(θᵀu_i, y_i) + (Λ/2)‖θ‖²,     u_i = (x̃_i, 1), ‖x̃_i‖₂ ≤ R (clipped)

with per-row weights w_i ≥ 0 that depend on row i's own (group, label) only (*row-local*) and are
≤ ω/n for a public ω.  Replacing one row moves ∇J_D by at most Δ_g ≤ 2ζ/n in ℓ2 at every θ ∈ C,
where ζ = ω·L_l·‖u‖_max (L_l = sup|∂l/∂z|) — :meth:`privfair.models.erm.ERM.gradient_sensitivity`
proves the tight Δ_g per loss and neighbouring relation — and the row's Hessian by a rank-one PSD
matrix of norm ≤ β_H = ω·sup l''·‖u‖²_max (sum form).  Every constant is public: it comes from
the decision set, the declared feature bound, n and the (public) problem weights — never from
the data.  The ERM object itself is :class:`privfair.models.erm.ERM`.

From a fairness problem.  With r = ∇f (f affine in ℓ) plus ν·d for a constraint direction d, the
weighted surrogate error r·ℓ(θ) equals, up to a constant, Σ_i a_{g_i,y_i}·mass_i(θ), the mass a
row puts on ŷ = 1; a_{g,y} = Δr_joint/n + Δr_rate/(n q_{g,y}) + r_sel/(n q_g) with the *public*
group-mass bound q in place of the clamped empirical denominators (so the weights are row-local).
The y = 0 rows' mass is φ̃(z) (convex), the y = 1 rows' is 1 − φ̃(−z) (concave), so the ERM is
convex iff a_{g,0} ≥ 0 and a_{g,1} ≤ 0; the per-row loss is |a|·φ(∓z)/φ(B), a GLM.  Its ridge
is Λ/φ(B) for ``SparseLinear(l2=Λ)`` in the loss's units (the default; so that Λ means what it
means for :func:`privfair.models.sparse.glm`), Λ for ``l2_units="scaled"`` (``ERM.l2_factor``).

The map from r to the weights a is :meth:`privfair.statistics.stats.Rates.cell_coefficients` (its
one home, on ℓ's public layout); this module only chooses the denominators it is read with
(:func:`denominators_for`: public n·q, clamped, or empirical at ε = ∞).

On a Dask dataset (``data.rows_on_workers``, #19) the ERM is a :class:`PassERM`: its rows stay
on the workers (``designs.ClippedPasses``), its row weights are the public (group, label) table
above, and every value, gradient, Hessian and smoothness bound is one pass whose sums come back —
the same public constants, so the same sensitivities, schedule and certificate.
"""

from __future__ import annotations

import math

import numpy as np

from privfair.models import designs
from privfair.models.erm import ERM, LOSSES
from privfair.errors import BackendRefusedError, InvalidInputError


class NeedsGroupMass(Exception):
    """The public denominators n·q were asked for before the group-mass bound q is known (a
    plan ranked before the private group-mass estimate): the caller decides once q is known."""


def objective_gradient(problem):
    """∇f (constant for affine f), or None."""
    K = problem.variable.size
    g0 = np.asarray(problem.f.grad(np.full(K, 0.5)), float)
    g1 = np.asarray(problem.f.grad(np.random.default_rng(0).random(K)), float)
    return g0 if np.allclose(g0, g1, atol=1e-12) else None


def constraint_direction(g, K):
    """d with ∇g(ℓ) ∥ d at every sampled ℓ (g depends on one linear statistic), or None."""
    rng = np.random.default_rng(12345)
    pts = np.vstack([np.full(K, 0.5), rng.random((12, K))])
    d = None
    for p in pts:
        v = np.asarray(g.grad(p), float)
        nv = np.abs(v).max()
        if nv == 0:
            continue
        v = v / nv
        if d is None:
            d = v
        elif not (np.allclose(v, d, atol=1e-9) or np.allclose(v, -d, atol=1e-9)):
            return None
    return d


#: how the conditional denominators of :func:`cell_coefficients` are taken
DENOMINATORS = ("public", "clamped", "empirical")


def denominators_for(rates, r, how="public"):
    """The conditional denominators (d (G, 2), d_g (G,)) in counts that the ERM family reads r·ℓ
    with — its policy; the map itself is :meth:`privfair.statistics.stats.Rates.cell_coefficients`.

    * ``"public"``: n·q, q the (declared or privately estimated) group-mass bound.  Each row's
      weight then depends on its own (group, label) only (*row-local*), which the perturbation
      mechanisms' proofs need; the ERM minimizes r'·ℓ with the conditional weights scaled by
      max(n_{g,y}, nq)/(nq) ≥ 1 (``rescaling``), not r·ℓ.  Raises ``NeedsGroupMass`` when r
      weighs a conditional rate and q is not known yet.
    * ``"clamped"``: max(n_{g,y}, nq) — exactly r·ℓ as :class:`privfair.statistics.stats.Rates`
      defines it (the noisy-GD oracle; its sensitivity pays for the data-dependent denominators).
    * ``"empirical"``: the public bound if there is one, else max(n_{g,y}, 1) — ε = ∞ only.

    When r weighs no conditional rate the denominators multiply zero weights: any finite
    positive ones do (the clamped ones are returned, and no bound is needed).
    """
    if how not in DENOMINATORS:
        raise InvalidInputError("denominators", how, f"choose one of {DENOMINATORS}")
    q, qg = rates.group_mass()
    if how == "clamped" or q is None:
        if how == "public" and uses_conditional_weights(rates, r):
            raise NeedsGroupMass()
        return rates.denominators()         # with no bound: max(n_{g,y}, 1), the "empirical" ones
    return rates.n * np.asarray(q), rates.n * np.asarray(qg)


def uses_conditional_weights(rates, r):
    """Whether r weighs a conditional rate or a selection rate (schema only: public)."""
    r, sel = np.asarray(r, float), rates.layout.selection
    return bool(np.any(r[rates.layout.rate] != 0) or (sel is not None and np.any(r[sel] != 0)))


def cell_coefficients(rates, r, denominators="public"):
    """n·a_{g,y}, shape (G, 2): the ERM weights of "a linear objective over the rates → a
    weighted ERM" (the row-private ERM backends, their constraint form and the LOPT oracles all
    use it) — :meth:`privfair.statistics.stats.Rates.cell_coefficients` (the one home of the
    map, in its sum form) at the denominators of :func:`denominators_for`.

    ℓ is linear in the mass s_i(θ) ∈ [0, 1] each row puts on ŷ = 1 (surrogate or 0-1), so

        r·ℓ(θ, D) = const(D) + (1/n)·Σ_i a_{g_i,y_i}·s_i(θ),
        n·a_{g,y} = Δr_joint(g,y) + n·Δr_rate(g,y)/den_{g,y} + n·r_sel(g)/den_g,

    Δr = (weight on the ŷ = 1 coordinate) − (weight on the ŷ = 0 one) of the block.
    """
    den = denominators_for(rates, r, denominators)
    return rates.cell_coefficients(np.asarray(r, float), denominators=den, times_n=True)


def rescaling(rates):
    """(G, 2) factors max(n_{g,y}, nq)/(nq) ≥ 1 by which ``"public"`` denominators inflate the
    conditional weights relative to r·ℓ (data-dependent: for diagnostics and tests only)."""
    den, _ = rates.denominators()
    q, _ = rates.group_mass()
    return den / (rates.n * np.asarray(q))


def row_coefficients(rates, r, denominators="clamped"):
    """a_{g_i,y_i} per row (mean form): r·ℓ(θ) = const + Σ_i coef_i·s_i(θ)
    (:meth:`privfair.statistics.stats.Rates.row_coefficients` at :func:`denominators_for`)."""
    den = denominators_for(rates, r, denominators)
    return rates.row_coefficients(np.asarray(r, float), denominators=den)


def bad_cells(a, tol=1e-12):
    for g in range(a.shape[0]):
        if a[g, 0] < -tol:
            return g, 0
        if a[g, 1] > tol:
            return g, 1
    return None


def multiplier_range(a_f, a_d):
    """(ν⁻, ν⁺): the convex range of ν for cell weights a_f + ν·a_d (y=0 ≥ 0, y=1 ≤ 0)."""
    lo, hi = -math.inf, math.inf
    for g in range(a_f.shape[0]):
        for y, sgn in ((0, 1.0), (1, -1.0)):     # need sgn·(a_f + ν a_d) ≥ 0
            af, ad = sgn * a_f[g, y], sgn * a_d[g, y]
            if ad > 0:
                lo = max(lo, -af / ad)
            elif ad < 0:
                hi = min(hi, af / -ad)
    return lo * (1 - 1e-9), hi * (1 - 1e-9)


def erm_from_problem(problem, r, empirical=False):
    """The ERM of the weighted surrogate error r·ℓ(θ) (public denominators; see module doc)."""
    return erm_from_rates(problem.rates, r, "empirical" if empirical else "public")


def erm_from_rates(rates, r, denominators="public"):
    """The weighted GLM ERM of r·ℓ(θ) (:func:`cell_coefficients`): a y = 0 row's mass φ̃(z) is
    convex, a y = 1 row's 1 − φ̃(−z) concave, so row i gets the loss weight a·1[y=0] − a·1[y=1]
    (≥ 0 exactly when the ERM is convex) on φ(∓z)/φ(B), and r·ℓ = const + the ERM's Σ w_i l_i."""
    ds = rates.decisions
    a = cell_coefficients(rates, r, denominators)
    bad = bad_cells(a, tol=1e-9 * (1 + np.abs(a).max()))
    if bad:
        raise BackendRefusedError("weights", f"cell {bad}", "the weighted ERM is not convex "
                                  "(a cell's weight has the wrong sign at this multiplier)")
    scale = 1.0 / rates.phi_at_bound
    n = rates.n
    data = rates.data
    # SparseLinear(l2=Λ) is in the loss's units unless declared "scaled": this ERM's loss is
    # the surrogate divided by φ(B), so its ridge is Λ/φ(B) (public: B and φ are) — issue #20
    factor = scale if getattr(ds, "l2_units", "loss") == "loss" else 1.0
    consts = (LOSSES[rates.surrogate], ds, float(np.abs(a).max()) * scale,
              math.sqrt(rates.feature_bound ** 2 + 1.0))
    if getattr(data, "rows_on_workers", False):
        # a Dask dataset: row i's weight is table[g_i, y_i] (the same arithmetic as the
        # per-row weights below), computed with its margin and clip scale on the workers
        table = np.maximum(np.stack([a[:, 0], -a[:, 1]], axis=1), 0.0) * scale / n
        erm = PassERM(designs.ClippedPasses(data.rows(), rates.feature_bound), None, table,
                      *consts, l2_factor=factor)
        erm.meta["r"] = np.asarray(r, float)
        return erm
    g, yv = rates.data.group, rates.data.y
    coef = np.where(yv == 0, a[g, 0], -a[g, 1])
    coef = np.maximum(coef, 0.0)
    # the rates' own clipped rows (x_i·c_i, 1) as a view over X: no n×(d+1) copy; over the
    # row source's chunks when the data were taken by index (never gathering their X, #19)
    U = designs.ClippedRows(data.X if data.is_materialized else data.rows(), rates.clip_scale)
    erm = ERM(U, np.where(yv == 1, 1.0, -1.0), coef * scale / n, *consts, l2_factor=factor)
    erm.meta["r"] = np.asarray(r, float)
    return erm


class PassERM(ERM):
    """The weighted GLM ERM of :func:`erm_from_rates` over a Dask dataset (#19): ``U`` is a
    :class:`privfair.models.designs.ClippedPasses` (no row on the client), ``y`` is None (the
    labels are read on the workers) and ``w`` is the public (G, 2) table of row weights by
    (group, label).  The public constants (n, P, ω, the bounds, hence every sensitivity) are
    :class:`ERM`'s; the data-dependent sums are passes: value and gradient (one pass),
    gradient only, the Newton terms of the solver (:meth:`newton_terms`, one pass) and the
    smoothness bound's λ_max (one Gram pass, cached)."""

    def _memo(self, theta, lin, ridge):
        """The key of the last :meth:`newton_terms` (θ, lin, ridge), compared bit for bit."""
        return (np.asarray(theta, float).tobytes(),
                None if lin is None else np.asarray(lin, float).tobytes(), float(ridge))

    def value_and_grad(self, theta, lin=None, ridge=0.0):
        """The value and gradient from the Newton pass (:meth:`newton_terms`): the certified
        solver's line-search probe is, when accepted, the next iterate, whose certificate and
        Newton step then read the same pass (one round trip a Newton step, not three)."""
        f, g, _ = self.newton_terms(theta, lin, ridge)
        return f, g

    def grad(self, theta, lin=None, ridge=0.0):
        last = self.__dict__.get("_last")
        if last is not None and last[0] == self._memo(theta, lin, ridge):
            return last[1][1].copy()
        theta = np.asarray(theta, float)
        g = self.U.terms(self.w, self.loss, theta, "grad")[1] + (self.l2 + ridge) * theta
        return g if lin is None else g + lin

    def newton_terms(self, theta, lin=None, ridge=0.0):
        """(value, gradient, Hessian Σ w_i l''·u_iu_iᵀ + (Λ + ridge)·I) at θ, one pass; the
        last one is kept (:meth:`grad` and a repeated call at the same point read it)."""
        key = self._memo(theta, lin, ridge)
        last = self.__dict__.get("_last")
        if last is not None and last[0] == key:      # copies: a caller may write its own
            f, g, H = last[1]
            return f, g.copy(), H.copy()
        theta = np.asarray(theta, float)
        f, g, H = self.U.terms(self.w, self.loss, theta, "newton")
        mu = self.l2 + ridge
        f = float(f) + 0.5 * mu * float(theta @ theta)
        g = g + mu * theta
        if lin is not None:
            f += float(lin @ theta)
            g = g + lin
        out = (f, g, H + mu * np.eye(self.P))
        self.__dict__["_last"] = (key, out)
        return out

    def smoothness(self, ridge=0.0):
        if "lam_max" not in self.meta:
            M = self.U.terms(self.w, self.loss, None, "gram")
            self.meta["lam_max"] = float(np.linalg.eigvalsh(M)[-1]) * (1 + 1e-9) + 1e-300
        return self.loss.curvature * self.meta["lam_max"] + self.l2 + ridge


def uses_conditional(problem, r):
    return uses_conditional_weights(problem.rates, r)

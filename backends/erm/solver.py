"""The certified ERM solver of the row-private ERM backends (:mod:`backends.erm`).

Accelerated projected gradient with restarts; at θ the gradient mapping
G = β(θ − Π_C(θ − ∇J(θ)/β)) gives ‖θ − θ*‖ ≤ 2‖G‖/μ for μ-strongly convex, β-smooth J
(Nesterov 2004, Thm 2.2.7 / Beck 2017, Thm 10.7), so the returned point is within a *public*
tolerance τ of the exact minimizer whenever the projection is exact (ℓ1, ℓ∞, ℓ2, disjoint groups).

Every path returns a point within a *public* tolerance τ of the exact minimizer, whatever the
data (:func:`solve_certified`): a solver failure would be an output of the private data that no
noise covers (issue #16).
"""

from __future__ import annotations

import contextvars
import math
from dataclasses import dataclass

import numpy as np

from privfair.util.progress import bar
from privfair.errors import BackendRefusedError

#: default certified distance to the exact minimizer, relative to the ℓ2 radius of C
TAU_REL = 1e-9
MAX_ITER = 40000


@dataclass
class Solution:
    theta: np.ndarray
    tau: float            # certified ‖θ − θ*‖₂ bound (inf if not certified)
    iterations: int
    certified: bool       # τ is rigorous (exact projection, μ > 0)


def tau_target(erm):
    return TAU_REL * max(1.0, erm.decisions.radius)


def _certificate(erm, x, lin, ridge, beta, mu):
    """2‖G(x)‖/μ, G the gradient mapping at step 1/β (+ a bound on its rounding error)."""
    C = erm.decisions
    gx = erm.grad(x, lin, ridge)
    G = beta * (x - C.project(x - gx / beta))
    gn = float(np.linalg.norm(G))
    gn += 1e-15 * math.sqrt(erm.P) * (float(np.linalg.norm(gx)) + beta * float(np.linalg.norm(x)))
    return (2 * gn / mu if mu > 0 else math.inf), gn


def _qp(H, g, x, C, lam_max, mu, tol, max_iter=20000):
    """min_{θ∈C} gᵀ(θ − x) + ½(θ − x)ᵀH(θ − x) by accelerated projected gradient (P-dimensional:
    no pass over the data)."""
    L = lam_max
    q = mu / L
    mom = (1 - math.sqrt(q)) / (1 + math.sqrt(q))
    z, z_prev = x.copy(), x.copy()
    y = x.copy()
    for k in range(max_iter):
        grad = g + H @ (y - x)
        z_new = C.project(y - grad / L)
        if float((y - z_new) @ (z_new - z)) > 0:     # restart
            y = z.copy()
            continue
        z_prev, z = z, z_new
        y = z + mom * (z - z_prev)
        if k % 20 == 19:
            gz = g + H @ (z - x)
            Gm = L * (z - C.project(z - gz / L))
            if float(np.linalg.norm(Gm)) <= tol:
                break
    return z


#: the progress-bar name of the solve in progress (set by :func:`solve_certified`, the
#: top-level solve of a release; inner solves, e.g. dual Frank–Wolfe's, draw no bar)
_BAR_NAME = contextvars.ContextVar("privfair_erm_solve_bar", default=None)


def solve(erm, lin=None, ridge=0.0, tau=None, theta0=None, max_iter=MAX_ITER):
    """min_{θ∈C} J_D(θ) + ⟨lin, θ⟩ + (ridge/2)‖θ‖² to a certified distance τ (see module doc).

    Projected (proximal) Newton steps with a backtracking line search — each step solves the
    P-dimensional quadratic model over C — then, if needed, accelerated projected gradient with
    restarts.  Either way the returned point carries the gradient-mapping certificate.
    Under :func:`solve_certified` the steps show a progress bar (:mod:`privfair.util.progress`)."""
    desc = _BAR_NAME.get()

    def steps(rng, what):
        return bar(rng, f"{desc} ({what})", progress=None if desc else False)

    C = erm.decisions
    mu = erm.l2 + ridge
    beta = erm.smoothness(ridge)
    tau = tau_target(erm) if tau is None else tau
    x = C.project(np.zeros(erm.P) if theta0 is None else np.asarray(theta0, float))
    if hasattr(erm, "newton_terms") and (erm.loss.twice_differentiable or erm.loss.smooth):
        erm.newton_terms(x, lin, ridge)     # rows on Dask: the certificate reads this pass
    cert, gn = _certificate(erm, x, lin, ridge, beta, mu)
    it = 0
    if erm.loss.twice_differentiable or erm.loss.smooth:
        for it in steps(range(1, 60), "Newton steps"):
            if cert <= tau or (mu == 0 and gn <= 1e-10 * beta * max(1.0, C.radius)):
                break
            if hasattr(erm, "newton_terms"):    # rows on Dask workers: one pass (#19)
                f, g, H = erm.newton_terms(x, lin, ridge)
            else:
                f, g = erm.value_and_grad(x, lin, ridge)
                z = erm.U @ x
                h = erm.w * erm.loss.second(z, erm.y)
                H = (erm.U * h[:, None]).T @ erm.U + mu * np.eye(erm.P)
            lam = float(np.linalg.eigvalsh(H)[-1])
            xs = _qp(H, g, x, C, lam, mu, tol=max(1e-3 * gn, 1e-18))
            dvec = xs - x
            slope = float(g @ dvec)
            if slope >= 0 and gn > 0:
                slope = -0.0
            t = 1.0
            if -slope > 1e-13 * (abs(f) + 1e-300):   # else below f's rounding: take the step
                while t > 1e-10:
                    if erm.value_and_grad(x + t * dvec, lin, ridge)[0] <= f + 0.25 * t * slope:
                        break
                    t *= 0.5
            x = x + t * dvec
            cert, gn = _certificate(erm, x, lin, ridge, beta, mu)
    k = it
    if cert > tau:      # fallback: accelerated projected gradient with adaptive restart
        y, x_prev, t = x.copy(), x.copy(), 1.0
        q = mu / beta
        for k in steps(range(it + 1, it + max_iter + 1), "projected gradient"):
            g = erm.grad(y, lin, ridge)
            x_new = C.project(y - g / beta)
            if float((y - x_new) @ (x_new - x)) > 0:   # O'Donoghue & Candès 2015
                t, y = 1.0, x.copy()
                continue
            if q > 0:
                mom = (1 - math.sqrt(q)) / (1 + math.sqrt(q))
            else:
                t_new = 0.5 * (1 + math.sqrt(1 + 4 * t * t))
                mom, t = (t - 1) / t_new, t_new
            x_prev, x = x, x_new
            y = x + mom * (x - x_prev)
            if k % 10 == 0:
                cert, gn = _certificate(erm, x, lin, ridge, beta, mu)
                if cert <= tau or (mu == 0 and gn <= 1e-10 * beta * max(1.0, C.radius)):
                    break
    certified = bool(mu > 0 and cert <= tau and C.exact_projection)
    return Solution(prox_step(erm, x, lin, ridge, beta), cert, k, certified)


def prox_step(erm, x, lin=None, ridge=0.0, beta=None):
    """Π_C(x − ∇J(x)/β): one projected-gradient step, so the returned point has the exact
    zeros of the projection (a Newton step with a line search, or a momentum step, leaves
    coordinates at ±10⁻¹⁵ where the minimizer has zeros; issue #20: the solver's own sparsity
    must show at ε = ∞).  It keeps every certificate: the map is a (1 − μ/β)-contraction with
    fixed point θ* for β ≥ the smoothness (Nesterov 2004, Thm 2.1.15; Π_C is non-expansive),
    so ‖x⁺ − θ*‖ ≤ ‖x − θ*‖."""
    beta = erm.smoothness(ridge) if beta is None else beta
    return erm.decisions.project(x - erm.grad(x, lin, ridge) / beta)


#: most projected-gradient steps the fallback of :func:`solve_certified` may need; a problem
#: whose *public* step count exceeds it is refused at plan time (:func:`certify_reason`)
MAX_FALLBACK_STEPS = 200_000


def public_smoothness(erm, ridge=0.0):
    """β ≥ λ_max(∇²J) on C from public constants only: Σ_i w_i l''·u_iu_iᵀ ⪯ ω·sup l''·‖u‖²_max·I
    (Σ w_i ≤ ω, ‖u_i‖ ≤ ‖u‖_max), plus Λ + ridge."""
    return erm.beta_H + erm.l2 + ridge


def fallback_steps(erm, tau, ridge=0.0):
    """Steps of projected gradient at 1/β (β = :func:`public_smoothness`) that bring *any* start
    in C within ``tau`` of the minimizer: the map θ ↦ Π_C(θ − ∇J(θ)/β) contracts by 1 − μ/β for
    μ-strongly convex, β-smooth J (Π_C is non-expansive; Nesterov 2004, Thm 2.1.15), and
    ‖θ₀ − θ*‖ ≤ diam C.  Public: it reads no row.  ∞ without strong convexity."""
    mu = erm.l2 + ridge
    beta = public_smoothness(erm, ridge)
    diam = 2.0 * erm.decisions.radius
    if not (mu > 0 and math.isfinite(beta)):
        return math.inf
    if diam <= tau:
        return 0
    rate = -math.log1p(-min(mu / beta, 1.0)) if mu < beta else math.inf
    return 0 if rate == math.inf else math.ceil(math.log(diam / tau) / rate)


def certify_reason(erm, tau, ridge=0.0):
    """None, or why :func:`solve_certified` cannot guarantee ``tau`` within
    :data:`MAX_FALLBACK_STEPS` — decided from public constants, so a refusal is the same on
    every neighbouring dataset."""
    k = fallback_steps(erm, tau, ridge)
    if k <= MAX_FALLBACK_STEPS:
        return None
    mu = erm.l2 + ridge
    need = public_smoothness(erm, ridge) * (-math.expm1(-math.log(2 * erm.decisions.radius / tau)
                                                         / MAX_FALLBACK_STEPS))
    return (f"a certified solve needs strong convexity: with l2 + ridge = {mu:.3g} and the public "
            f"smoothness bound {public_smoothness(erm, ridge):.3g} the guaranteed solver needs "
            f"{k:.3g} steps (more than {MAX_FALLBACK_STEPS:,}); increase SparseLinear(l2=...) to "
            f"at least about {max(need - ridge, 0) / erm.l2_factor:.2g}")   # in ds.l2's units


def solve_certified(erm, lin=None, ridge=0.0, tau=None, theta0=None):
    """A point within the public tolerance ``tau`` of the minimizer, on *every* dataset.

    :func:`solve` first (fast; its a-posteriori certificate usually reaches τ); where it does
    not, :func:`fallback_steps` projected-gradient steps from Π_C(0), which reach τ by the
    contraction bound whatever the data.  It never fails on the data: a failure here would be
    an output of the private data that no noise covers (issue #16).  Whether τ is reachable at
    all is public (:func:`certify_reason`) and refused before anything is read."""
    tau = tau_target(erm) if tau is None else tau
    why = certify_reason(erm, tau, ridge)
    if why:
        raise BackendRefusedError("l2", erm.l2, why)
    token = _BAR_NAME.set("certified ERM solve")
    try:
        sol = solve(erm, lin, ridge, tau, theta0)
    finally:
        _BAR_NAME.reset(token)
    if sol.tau <= tau:
        return sol
    C = erm.decisions
    beta = public_smoothness(erm, ridge)
    k = fallback_steps(erm, tau, ridge)
    x = C.project(np.zeros(erm.P))
    for _ in bar(range(k), "certified ERM solve (guaranteed steps)"):
        x = C.project(x - erm.grad(x, lin, ridge) / beta)
    return Solution(x, tau, sol.iterations + k, bool(C.exact_projection))

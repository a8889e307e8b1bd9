"""Every theorem's pure formula, in one place and one calling convention.

A formula here is a function of named numbers — keyword-callable, e.g.
``a55_T(K=6, G=3.0, alpha=0.05)`` — that returns a float, and that cites the theorem it
transcribes in its first docstring line.  Its last parameter is ``ops``, keyword-only: the
namespace of the few functions a formula may call (``log``, ``sqrt``, ``min``, ``max``, ``sum``,
``where``, ``pi``, ``inf``, ``ceil``).  :data:`NUMERIC` (the default) evaluates the formula on
floats; :func:`symbolic` passes sympy's functions, so the *same* function gives the printed
formula of a report entry or of ``Backend.formula`` (:func:`formula`, :func:`evaluate`).  Sums
over an iteration index are written ``ops.sum(lambda t: ..., lo, hi)``.

This module imports nothing from privfair (only math, numpy and, lazily, sympy), so any layer
can use it: the compiler (the iteration counts [A] prescribes), the report's theorem entries
(:mod:`privfair.analysis.theorems`, which checks preconditions and reads a problem's constants), and the
backends whose plans evaluate a paper's bound.

Papers (docs/published_algorithms.md): [A] Alabi, *The cost of a reductions approach to private
fair optimization*; [J] Jagielski et al. 2019, *Differentially private fair learning*;
[K] Kumar & Deisenroth, *Differentially private ERM with sparsity-inducing norms*; [L] Lowy,
Gupta & Razaviyayn 2023, *Stochastic differentially private and fair learning* (DP-FERMI).
Constants are the proofs' where they give them; where a paper states an order O(·) only, the
formula uses the constant 1 and says so.
"""

from __future__ import annotations

import functools
import math
from types import SimpleNamespace

import numpy as np

__all__ = [
    "NUMERIC", "symbolic", "formula", "evaluate", "n_for_alpha",
    "a36_bound", "a36_union_bound", "a52_n0", "a53_bound", "a53_n0", "a55_tau", "a55_T",
    "a55_bound", "a58_epsilon", "a510_n0", "a510_order", "a511_n0", "a511_order", "a61_n0",
    "a62_n0", "a89_n0", "ab5_bound", "ab5_T", "ac2_n0", "j31_error", "j31_gap", "j_alg3_epsilon",
    "k1_bound", "k1_n0", "k4_bound", "l33_sigma_w", "l34_bound", "l34_n0",
]


# ================================================================================ namespaces
def _sum(f, lo, hi):
    t = np.arange(lo, hi + 1, dtype=float)
    return float(np.sum(f(t))) if t.size else 0.0


#: floats (numpy where a sum over an index is vectorized)
NUMERIC = SimpleNamespace(
    log=np.log, sqrt=np.sqrt, pi=math.pi, inf=math.inf, ceil=math.ceil,
    min=lambda *a: functools.reduce(np.minimum, a),
    max=lambda *a: functools.reduce(np.maximum, a),
    sum=_sum,
    where=lambda cond, a, b: a if cond else b,
    symbolic=False)


@functools.lru_cache(maxsize=1)
def symbolic():
    """The sympy namespace (imported lazily: sympy is slow to import)."""
    import sympy as sp

    t = sp.Symbol("t", integer=True, positive=True)
    return SimpleNamespace(
        log=sp.log, sqrt=sp.sqrt, pi=sp.pi, inf=sp.oo, ceil=sp.ceiling, min=sp.Min, max=sp.Max,
        sum=lambda f, lo, hi: sp.Sum(f(t), (t, lo, hi)),
        where=lambda cond, a, b: sp.Piecewise((a, cond), (b, True)),
        symbolic=True)


def formula(fn, values, standard=(), lhs="excess", integers=("T",), **fixed):
    """``(sympy.Eq(lhs, fn(symbols)), values)`` for a formula ``fn`` of this module's convention.

    One positive symbol per key of ``values`` and per name in ``standard`` (ε, δ, n, α, β: filled
    from the plan or the report when evaluated); ``fixed`` is passed through as Python values
    (structural choices such as which norms or which mechanism).
    """
    import sympy as sp

    syms = {k: sp.Symbol(k, integer=True, positive=True) if k in integers
            else sp.Symbol(k, positive=True) for k in list(values) + list(standard)}
    expr = fn(**syms, **fixed, ops=symbolic())
    return sp.Eq(sp.Symbol(lhs), expr, evaluate=False), dict(values)


def evaluate(eq, values, **standard) -> float:
    """Substitute ``values`` and ``standard`` into a formula's right-hand side; a float."""
    import sympy as sp

    expr = eq.rhs if isinstance(eq, sp.Eq) else eq
    subs = {**values, **standard}
    free = sorted(expr.free_symbols, key=lambda s: s.name)
    missing = [s.name for s in free if s.name not in subs]
    if missing:
        raise KeyError(f"no value for {missing}")
    fn = sp.lambdify(free, expr, modules=["math", "mpmath"])
    args = [int(subs[s.name]) if s.is_integer else float(subs[s.name]) for s in free]
    return float(fn(*args))


def n_for_alpha(fn, alpha, n0, rel=0.02, n_max=1e12):
    """Smallest n (to ``rel``) with ``fn(n) ≤ alpha`` for a non-increasing ``fn``; inf if none ≤ n_max.

    Doubling/octupling from ``n0`` to bracket the crossing, then bisection on log n.  Used to
    invert a sample-complexity bound (report entries); never a noise scale (that is
    ``privfair.privacy.release.calibrate``'s job).
    """
    lo, hi = None, None
    if fn(n0) <= alpha:
        hi, n = n0, n0
        while n > 1:
            n = max(1, n // 2)
            if fn(n) > alpha:
                lo = n
                break
            hi = n
        if lo is None:
            return 1.0
    else:
        lo, n = n0, n0
        while True:
            n = n * 8
            if n > n_max:
                return math.inf
            if fn(n) <= alpha:
                hi = n
                break
            lo = n
    while hi / lo > 1 + rel:
        mid = int(math.ceil(math.sqrt(lo * hi)))
        if mid in (lo, hi):
            break
        lo, hi = (lo, mid) if fn(mid) <= alpha else (mid, hi)
    return float(hi)


# ============================================================================ [A] Alabi
def a36_bound(delta_h, epsilon, m, rho, *, ops=NUMERIC):
    """[A] Thm 3.6 (McSherry–Talwar): h(c̃) − min_C h ≤ (2Δh/ε)·log(m/ρ) w.p. ≥ 1 − ρ, |C| = m."""
    return 2 * delta_h / epsilon * ops.log(m / rho)


def a36_union_bound(delta_h, epsilon, m, T, rho, *, ops=NUMERIC):
    """[A] Thm 3.6 per call, union over T calls (failure ρ/(2T) each): (2Δh/ε)·log(2mT/ρ)."""
    return 2 * delta_h / epsilon * ops.log(2 * m * T / rho)


def a52_n0(K, P, epsilon, alpha, *, ops=NUMERIC):
    """[A] Thm 5.2: n₀ = O(K·P/(εα²)) (or Õ(K·VC/(εα²)) with P → VC); constant 1."""
    return K * P / (epsilon * alpha ** 2)


def a53_bound(D_1, P, n, epsilon, beta, *, ops=NUMERIC):
    """[A] Cor 5.3 with θ = log(1/β) and Δ = D₁/n: 8Δ/ε·((P+1)·log 3 + θ), w.p. ≥ 1 − β."""
    return 8 * D_1 / (n * epsilon) * ((P + 1) * ops.log(3) + ops.log(1 / beta))


def a53_n0(D_1, P, epsilon, alpha, beta, *, ops=NUMERIC):
    """[A] Cor 5.3 solved for n: the n with :func:`a53_bound` = α."""
    return 8 * D_1 / (alpha * epsilon) * ((P + 1) * ops.log(3) + ops.log(1 / beta))


def a55_tau(K, G, alpha, *, ops=NUMERIC):
    """[A] Thm 5.5: the oracle's additive error τ = α/(6K(1+G))."""
    return alpha / (6 * K * (1 + G))


def a55_T(K, G, alpha, *, ops=NUMERIC):
    """[A] Thm 5.5: T ≥ 36(1+K)K²(1+G)²(3+α)²/α² oracle calls (before rounding up)."""
    return 36 * (1 + K) * K ** 2 * (1 + G) ** 2 * (3 + alpha) ** 2 / alpha ** 2


def a55_bound(K, G, T, alpha, *, ops=NUMERIC):
    """[A] Thm 5.5: E h(ĉ) − h* ≤ 3K(1+G)((3+τ)√((1+K)/T) + τ), τ = :func:`a55_tau`."""
    tau = a55_tau(K, G, alpha, ops=ops)
    return 3 * K * (1 + G) * ((3 + tau) * ops.sqrt((1 + K) / T) + tau)


def a58_epsilon(T, epsilon, delta, *, ops=NUMERIC):
    """[A] Lemma 5.8 (pure oracle, advanced composition): ε' = ε/(2√(2T·log(1/δ)))."""
    return epsilon / (2 * ops.sqrt(2 * T * ops.log(1 / delta)))


def a510_n0(K, P, tau, epsilon, theta, *, ops=NUMERIC):
    """[A] Thm 5.10 (convex ℓ, non-negative weights): n₀ = 8√K/(ετ)·((P+1)·log 3 + log(1/θ))."""
    return 8 * ops.sqrt(K) / (epsilon * tau) * ((P + 1) * ops.log(3) + ops.log(1 / theta))


def a510_order(K, VC, tau, epsilon, theta, *, ops=NUMERIC):
    """[A] Thm 5.10, other cases: Õ(√K/(ετ)·(VC + log(1/θ))), constant 1."""
    return ops.sqrt(K) / (epsilon * tau) * (VC + ops.log(1 / theta))


def a511_n0(K, P, G, T, epsilon, delta, alpha, *, ops=NUMERIC):
    """[A] Cor 5.11 assembled from its proof's explicit pieces.

    Thm 5.10's n₀ per call at ε' = :func:`a58_epsilon`, τ = :func:`a55_tau`, θ = 1/(10T) (union
    bound: 9/10 overall).
    """
    return a510_n0(K, P, a55_tau(K, G, alpha, ops=ops), a58_epsilon(T, epsilon, delta, ops=ops),
                   1 / (10 * T), ops=ops)


def a511_order(K, VC, epsilon, alpha, *, ops=NUMERIC):
    """[A] Cor 5.11 (non-convex case), with the corrected power of α: Õ(K⁴·VC/(εα⁴)), constant 1.

    [A] prints Õ(K⁴·VC/(εα³)); Thm 5.5's explicit T is Θ(K⁴/α⁴) (see
    ``privfair.analysis.theorems.ALPHA_POWER_NOTE``).
    """
    return K ** 4 * VC / (epsilon * alpha ** 4)


def a61_n0(K, epsilon, alpha, *, ops=NUMERIC):
    """[A] Thm 6.1 (lower bound, pure ε): n ≥ Ω(K/(εα)); constant 1."""
    return K / (epsilon * alpha)


def a62_n0(K, epsilon, alpha, *, ops=NUMERIC):
    """[A] Thm 6.2 (lower bound, (ε, δ) with δ = o(1/n)): n ≥ Ω(√K/(εα)); constant 1."""
    return ops.sqrt(K) / (epsilon * alpha)


def a89_n0(A, VC, epsilon, alpha, power=3, *, ops=NUMERIC):
    """[A] Cor 8.9: Õ(|A|⁴·VC/(εα³)) as printed (``power`` = 4: with Thm 5.5's explicit T)."""
    return A ** 4 * VC / (epsilon * alpha ** power)


def ab5_bound(K, beta_h, T, *, ops=NUMERIC):
    """[A] Cor B.5 / Lemma B.4: E h(ĉ) − h* ≤ 2Kβ_h·log T / T (Frank–Wolfe, exact LMO, T ≥ 3)."""
    return 2 * K * beta_h * ops.log(T) / T


def ab5_T(K, beta_h, alpha, *, ops=NUMERIC):
    """[A] Cor B.5: T ≥ (2Kβ_h/α)·log(2Kβ_h/α) makes :func:`ab5_bound` ≤ α (before rounding up)."""
    c = 2 * K * beta_h / alpha
    return c * ops.log(c)


def ac2_n0(A, VC, r, epsilon, alpha, *, ops=NUMERIC):
    """[A] Cor C.2 ([J] Thm 4.4 with B = |A|, min q_ay = α^{(1+r)/2}): Õ(|A|³·VC/(εα^{3+r}))."""
    return A ** 3 * VC / (epsilon * alpha ** (3 + r))


# ========================================================================= [J] Jagielski
def j31_error(n_groups, m, epsilon, beta, *, ops=NUMERIC):
    """[J] Thm 3.1, error term: err ≤ err* + 24|A|·ln(4|A|/β)/(mε) w.p. ≥ 1 − β."""
    return 24 * n_groups * ops.log(4 * n_groups / beta) / (m * epsilon)


def j31_gap(n_groups, m, epsilon, beta, q_min, *, ops=NUMERIC):
    """[J] Thm 3.1, gap term: gap ≤ γ + 8·ln(4|A|/β)/(q·m·ε − 4·ln(4|A|/β)) w.p. ≥ 1 − β.

    Valid where the denominator is > 0 (the theorem's q > 4 ln(4|A|/β)/(mε)); the caller decides
    what to report otherwise (no branch here, so the sympy form stays one expression).
    """
    lg = ops.log(4 * n_groups / beta)
    return 8 * lg / (q_min * m * epsilon - 4 * lg)


def j_alg3_epsilon(T, epsilon, delta, *, ops=NUMERIC):
    """[J] Algorithm 3's per-step split (advanced composition): ε' = ε/(4√(T·ln(1/δ)))."""
    return epsilon / (4 * ops.sqrt(T * ops.log(1 / delta)))


# ========================================================================== [K] Kumar
def k1_bound(L, R_2, G_F, n, epsilon, delta, *, ops=NUMERIC):
    """[K] Thm 1 (O-form, constant 1): L·R₂·G_{|P|(F)}·√(log(1/δ) + ε)/(ε√n).

    The excess risk of output perturbation at λ = L·R₂·√n/G_{|P|(F)}.
    """
    return L * R_2 * G_F * ops.sqrt(ops.log(1 / delta) + epsilon) / (epsilon * ops.sqrt(n))


def k1_n0(L, R_2, G_F, epsilon, delta, alpha, *, ops=NUMERIC):
    """[K] Thm 1 solved for n: the n with :func:`k1_bound` = α."""
    return (L * R_2 * G_F * ops.sqrt(ops.log(1 / delta) + epsilon) / (epsilon * alpha)) ** 2


def k4_bound(L, Gamma, G_K, n, epsilon, delta, log_S, *, ops=NUMERIC):
    """[K] Thm 4 (O-form, constant 1): Γ^{2/3}(L·G_K)^{2/3}·log(n|S|)·√log(1/δ)/(nε)^{2/3}.

    ``log_S`` = log|S|, the log of the number of the dual Frank–Wolfe's candidate vertices.
    """
    return (Gamma ** (2 / 3) * (L * G_K) ** (2 / 3) * (ops.log(n) + log_S)
            * ops.sqrt(ops.log(1 / delta)) / (n * epsilon) ** (2 / 3))


# ============================================================================ [L] Lowy
def l33_sigma_w(T, n, epsilon, delta, rho, *, ops=NUMERIC):
    """[L] Thm 3.3 (privacy w.r.t. the sensitive attributes): σ_w = √(16T·ln(1/δ)/(ε²n²ρ)).

    The std of the noise on the mean W-gradient, as printed.
    """
    return ops.sqrt(16 * T * ops.log(1 / delta) / (epsilon ** 2 * n ** 2 * rho))


def l34_bound(d_theta, k, l, n, epsilon, delta, *, ops=NUMERIC):
    """[L] Thm 3.4: E‖∇FERMI(θ̂_T)‖² = O(√(max(d_θ, k·l)·ln(1/δ))/(εn)); constant 1.

    ln(1/δ) is *inside* the square root, as in the paper (Thm 3.4 and its restatement Thm E.10;
    the proof's noise variances σ² ∝ T·ln(1/δ)/(ε²n²) give a std ∝ √ln(1/δ)).  d_W = k·l is the
    size of W (k groups × l labels; a backend whose W has more entries passes its own d_W as
    ``k`` with ``l`` = 1).  A stationarity bound, not an excess risk.
    """
    return ops.sqrt(ops.max(d_theta, k * l) * ops.log(1 / delta)) / (epsilon * n)


def l34_n0(d_theta, k, l, epsilon, delta, alpha, *, ops=NUMERIC):
    """[L] Thm 3.4 solved for n: the n with :func:`l34_bound` = α."""
    return ops.sqrt(ops.max(d_theta, k * l) * ops.log(1 / delta)) / (epsilon * alpha)

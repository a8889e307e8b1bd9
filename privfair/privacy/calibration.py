"""Calibration: from a total target (ε, δ) and T releases, the per-release budget or noise.

* :func:`calibrate_advanced` — [A] Lemma 5.8's split through advanced composition (Lemma A.4),
  checked against Lemma A.4's exact formula.
* :func:`calibrate_optimal` — the largest per-release ε' whose T-fold *optimal* composition
  (Kairouz et al. 2017, Thm 3.3, evaluated exactly) stays within (ε, δ).
* :func:`calibrate_gaussian` — the smallest σ for T (optionally Poisson-subsampled) Gaussian
  releases: exact (μ-GDP) without subsampling, bisection on dp-accounting's PLD or RDP
  accountant with subsampling.  Every returned value has been *checked* by the rule it names:
  calibration never overshoots the target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InvalidPrivacyError
from ._validate import check_count, check_delta, check_epsilon, check_positive, check_rate
from .composition import advanced_composition, optimal_delta, pld_epsilon, rdp_epsilon
from .events import subsampled_gaussian_event
from .gaussian import calibrate_gaussian_sigma

__all__ = ["Calibration", "calibrate_advanced", "calibrate_optimal", "calibrate_gaussian"]


@dataclass(frozen=True)
class Calibration:
    """Per-release budget for ``count`` releases under ``rule``.

    ``epsilon``/``delta`` are per release; ``achieved_epsilon`` is the total ε the rule proves
    for them at ``total_delta`` (≤ ``total_epsilon``)."""

    epsilon: float
    delta: float
    count: int
    total_epsilon: float
    total_delta: float
    rule: str
    achieved_epsilon: float
    note: str = ""


def _largest(ok, lo: float, hi: float, rel: float = 1e-12) -> float:
    """Largest x in [lo, hi] with ok(x) by bisection, given ok(lo) (monotone ok)."""
    if ok(hi):
        return hi
    for _ in range(300):
        mid = 0.5 * (lo + hi)
        if ok(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo <= rel * hi:
            break
    return lo


def calibrate_advanced(epsilon, delta, T, delta_prime=0.0, form: str = "lemma") -> Calibration:
    """Per-release (ε', δ') so that T adaptive releases are (ε, δ)-DP by [A] Lemma A.4.

    Parameters
    ----------
    epsilon, delta : float
        Total target; δ > 0.
    T : int
        Number of releases.
    delta_prime : float or "paper"
        Per-release δ'.  ``0`` for pure oracles (then ε' = ε / (2√(2T ln(1/δ))), [A] Lemma 5.8);
        ``"paper"`` means δ' = δ/(2T) ([A] Lemma 5.8's approximate oracle).
    form : {"lemma", "paper"}
        ``"lemma"``: ε' = ε / (2√(2T ln(1/δ̄))) with δ̄ = δ − Tδ' (Lemma A.4's corollary with
        the δ that is left; for δ' = δ/(2T) this is [A]'s ε/(2√(2T log(2/δ)))).  ``"paper"``:
        [A] Lemma 5.8's first form ε / (2√(2T ln(1/δ'))), smaller (valid because 1/δ' ≥ 1/δ̄).

    The closed form ensures Lemma A.4's ε̄ ≤ ε only when ε is small (the corollary assumes
    ε̄ < 1); the result is always checked against Lemma A.4's exact formula, and when the closed
    form would overshoot the largest ε' that satisfies it is returned instead (``note`` says so).
    """
    eps = check_epsilon(epsilon)
    d = check_delta(delta, positive=True)
    t = check_count(T, "T")
    if isinstance(delta_prime, str):
        if delta_prime != "paper":
            raise InvalidPrivacyError("delta_prime", delta_prime, "pass a number or 'paper'")
        dp_ = d / (2 * t)
    else:
        dp_ = check_delta(delta_prime, "delta_prime")
    if form not in ("lemma", "paper"):
        raise InvalidPrivacyError("form", form, "choose 'lemma' or 'paper'")
    delta_bar = d - t * dp_
    if delta_bar <= 0:
        raise InvalidPrivacyError("delta_prime", delta_prime,
                                  f"T·δ' must be < δ; here T·δ' = {t * dp_:.3g} ≥ {d:.3g}")
    log_term = math.log(1.0 / dp_) if (form == "paper" and dp_ > 0) else math.log(1.0 / delta_bar)
    eps_prime = eps / (2.0 * math.sqrt(2.0 * t * log_term))
    note = ""
    if advanced_composition(eps_prime, t, delta_bar) > eps:
        eps_prime = _largest(lambda e: advanced_composition(e, t, delta_bar) <= eps, 0.0, eps_prime)
        note = ("[A]'s closed form overshoots Lemma A.4 at this ε (it assumes ε < 1); "
                "returned the largest ε' that satisfies Lemma A.4 exactly")
    achieved = advanced_composition(eps_prime, t, delta_bar)
    return Calibration(eps_prime, dp_, t, eps, d, "advanced", achieved, note)


def calibrate_optimal(epsilon, delta, T, delta_prime=0.0) -> Calibration:
    """The largest per-release ε' whose T-fold optimal composition (Kairouz, Oh & Viswanath
    2017, Thm 3.3, exact) is (ε, δ)-DP, with per-release δ' (default 0: pure releases).

    Always at least ε/T (basic composition) when T·δ' ≤ δ."""
    eps = check_epsilon(epsilon)
    d = check_delta(delta)
    t = check_count(T, "T")
    dp_ = check_delta(delta_prime, "delta_prime")
    if t * dp_ > d:
        raise InvalidPrivacyError("delta_prime", delta_prime, f"T·δ' must be ≤ δ = {d:g}")
    target = d * (1.0 - 1e-9)
    if d == 0.0:
        return Calibration(eps / t, 0.0, t, eps, d, "optimal", eps, "δ = 0: basic = optimal")

    # Calibrate against ε·(1 − 1e-6): the accountant inverts the same privacy region by
    # bisection, and this slack keeps its reported total at or below the target ε.
    eps_in = eps * (1.0 - 1e-6)

    def ok(e):
        try:
            return optimal_delta(eps_in, [(e, dp_, t)]) <= target
        except ValueError:
            return False

    lo = eps / t
    if not ok(lo):  # only through δ' rounding; basic composition is always valid
        return Calibration(lo, dp_, t, eps, d, "basic", eps, "optimal gave no improvement")
    e_prime = _largest(ok, lo, eps)
    return Calibration(e_prime, dp_, t, eps, d, "optimal", eps, "")


def calibrate_gaussian(epsilon, delta, T=1, sensitivity=1.0, sampling_rate=None,
                       neighbouring="replace", method="auto", pld_discretization=1e-4,
                       rtol=1e-4) -> float:
    """The smallest σ (to ``rtol``) such that T Gaussian releases with sensitivity Δ — optionally
    each on a Poisson sample of rate q — are (ε, δ)-DP.

    Without subsampling the answer is exact: T releases of μ = Δ/σ compose to μ√T, so σ is the
    analytic-Gaussian σ for sensitivity Δ√T.  With subsampling (``sensitivity`` is then the
    per-row norm bound C) we bisect on σ with dp-accounting's PLD accountant (``method="pld"``),
    its RDP accountant (``"rdp"``, add/remove only) or the better of the two (``"auto"``); the
    returned σ is one at which that accountant reports ε ≤ target.
    """
    eps = check_epsilon(epsilon)
    d = check_delta(delta, positive=True)
    t = check_count(T, "T")
    sens = check_positive(sensitivity, "sensitivity")
    if sampling_rate is None or float(sampling_rate) == 1.0:
        if sampling_rate is not None:
            check_rate(sampling_rate, "sampling_rate")
        return calibrate_gaussian_sigma(sens * math.sqrt(t), eps, d)
    q = check_rate(sampling_rate, "sampling_rate")
    if method not in ("auto", "pld", "rdp"):
        raise InvalidPrivacyError("method", method, "choose 'auto', 'pld' or 'rdp'")
    if method == "rdp" and neighbouring != "add_remove":
        raise InvalidPrivacyError("method", method, "dp-accounting has no RDP bound for Poisson "
                                  "subsampling under substitution; use method='pld'")
    methods = ["pld", "rdp"] if method == "auto" else [method]
    if neighbouring != "add_remove":
        methods = ["pld"]
    best = math.inf
    for m in methods:
        best = min(best, _bisect_sigma(eps, d, t, sens, q, neighbouring, m, pld_discretization,
                                       rtol))
    return best


def _bisect_sigma(eps, d, t, sens, q, neighbouring, method, disc, rtol) -> float:
    def epsilon_at(sigma):
        ev = subsampled_gaussian_event(sigma, sens, q, count=t, neighbouring=neighbouring)
        val = None
        if method == "pld":
            val, _ = pld_epsilon([ev], d, disc)
        if val is None:         # RDP, or PLD declined (δ below its float floor: rdp applies)
            val, _ = rdp_epsilon([ev], d)
        return math.inf if val is None else val

    hi = sens
    while epsilon_at(hi) > eps:
        hi *= 2.0
        if hi > 1e8 * sens:
            raise InvalidPrivacyError("epsilon", eps, "target unreachable with Gaussian noise")
    lo = hi / 2.0
    while epsilon_at(lo) <= eps:
        hi, lo = lo, lo / 2.0
        if lo < 1e-6 * sens:
            return hi
    while (hi - lo) > rtol * hi:
        mid = math.sqrt(lo * hi)
        if epsilon_at(mid) <= eps:
            hi = mid
        else:
            lo = mid
    return hi

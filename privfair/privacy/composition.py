# Over 500 lines: each composition rule states its theorem next to its code; the accountant tries
#   them all.
"""Composition rules: each turns a list of events and a target δ into a valid ε, or says why it
does not apply.  The accountant runs all that apply and reports the smallest.

=========== ==============================================================================
rule        result
=========== ==============================================================================
basic       ε = Σ ε_i, δ = Σ δ_i (Dwork, Kenthapadi et al. 2006).  Needs every event's (ε_i, δ_i).
advanced    [A] Lemma A.4 (Dwork, Rothblum & Vadhan 2010) exactly as stated: k releases that
            are each (ε', δ')-DP are (ε'√(2k ln(1/δ̄)) + kε'(e^{ε'} − 1), kδ' + δ̄)-DP.  With
            unequal events we use ε' = max ε_i, δ' = max δ_i (each event is also (ε', δ')-DP).
optimal     The exact optimal composition: the privacy region of k-fold composition is that of
            k-fold randomized response (Kairouz, Oh & Viswanath 2017, Thm 3.3; for unequal ε_i the
            product of the RR_{ε_i, δ_i} dominates, and we evaluate its hockey-stick divergence
            exactly by enumerating the privacy-loss values — Murtagh & Vadhan 2016 — when there
            are at most 2·10⁶ of them).  δ(ε) = 1 − Π(1 − δ_i)(1 − Σ_{L > ε} P[L](1 − e^{ε − L})).
gdp         Gaussian events only: μ = (Σ (Δ_i/σ_i)²)^½ and the exact analytic-Gaussian ε
            (Dong, Roth & Su 2022, Cor. 3.3; Balle & Wang 2018, Thm 8).
pld         Privacy-loss distributions from dp-accounting (pessimistic discretization, so an
            upper bound): Laplace (one coordinate), Gaussian, Poisson-subsampled Gaussian under
            add/remove or substitution, and the randomized-response pair of any declared
            (ε, δ)-DP event.  Wide loss ranges (large ε) coarsen the discretization to bound
            memory (still an upper bound); past a width of 10⁴ PLD is not tried.
rdp         Rényi DP through dp-accounting's RdpAccountant (Mironov 2017; Mironov, Talwar &
            Zhang 2019) with its (ε, δ) conversion (Canonne, Kamath & Steinke 2020, Prop. 12).
            Pure events enter as (ε²/2)-zCDP (Bun & Steinke 2016, Prop. 3.3).  Not available
            for (ε, δ)-events with δ > 0.  Subsampled Gaussians under substitution (which
            dp-accounting's RDP does not cover) are accounted below :data:`PLD_MIN_DELTA`,
            where PLD is not trusted, by :func:`rdp_curve`: the Rényi divergence of the same
            dominating pair PLD uses, (1 − q)N(0, σ²) + qN(∓C, σ²), by quadrature.
=========== ==============================================================================

Tiny δ.  dp-accounting composes PLDs by FFT in float64; the hockey-stick divergence it reads at
δ is a sum of probabilities, and below ~10⁻¹¹ it sits under the FFT's round-off: measured on
Poisson-subsampled Gaussians (T = 10³–2·10⁵ steps), ε(δ) from PLD at 10⁻¹² and 10⁻¹⁴ is no longer
monotone in the discretization interval (a coarser, "more pessimistic" grid gives a *smaller*
ε, by up to 40%) nor in σ — neither an upper bound nor usable for a bisection.  So PLD is not
tried below :data:`PLD_MIN_DELTA` = 10⁻¹⁰ (where the same measurements are monotone and agree
across intervals to 10⁻⁴), and RDP — a sum of per-event curves, exact in floating point at any
δ down to 10⁻³⁰⁰ — takes over.

Every function returns ``(epsilon, None)`` or ``(None, reason)``.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
from scipy import special

from .events import Event
from .gaussian import gaussian_epsilon

__all__ = [
    "RULES",
    "basic_epsilon",
    "advanced_epsilon",
    "advanced_composition",
    "optimal_epsilon",
    "optimal_delta",
    "gdp_epsilon",
    "pld_epsilon",
    "rdp_epsilon",
    "rdp_curve",
    "group_events",
    "PLD_MIN_DELTA",
]

RULES = {
    "basic": "basic composition: ε = Σε_i, δ = Σδ_i",
    "advanced": "advanced composition as in [A] Lemma A.4 (Dwork, Rothblum & Vadhan 2010)",
    "optimal": "exact optimal composition (Kairouz, Oh & Viswanath 2017, Thm 3.3; "
               "Murtagh & Vadhan 2016)",
    "gdp": "exact Gaussian composition, μ = (Σ(Δ_i/σ_i)²)^½ (Dong, Roth & Su 2022, Cor. 3.3; "
           "Balle & Wang 2018, Thm 8)",
    "pld": "privacy-loss-distribution accounting (dp-accounting, pessimistic estimate)",
    "rdp": "Rényi-DP accounting (dp-accounting; conversion of Canonne, Kamath & Steinke 2020)",
}

_MARGIN = 1e-9
_MAX_LOSS_VALUES = 2_000_000


def group_events(events) -> list[tuple[Event, int]]:
    """Merge events with the same privacy curve: [(representative, total count)]."""
    groups: "OrderedDict[tuple, list]" = OrderedDict()
    for ev in events:
        k = ev.key()
        if k in groups:
            groups[k][1] += ev.count
        else:
            groups[k] = [ev, ev.count]
    return [(ev, n) for ev, n in groups.values()]


def _eps_delta_pairs(events):
    """[(ε_i, δ_i, count)] or None when some event has no (ε, δ) of its own."""
    pairs = []
    for ev in events:
        if ev.epsilon is None:
            return None
        pairs.append((float(ev.epsilon), float(ev.delta), int(ev.count)))
    return pairs


# ----------------------------------------------------------------------------------------------
# basic and advanced


def basic_epsilon(events, delta: float):
    pairs = _eps_delta_pairs(events)
    if pairs is None:
        return None, "an event has no (ε, δ) of its own (e.g. a Gaussian given only σ)"
    total_delta = math.fsum(d * k for _, d, k in pairs)
    if total_delta > delta:
        return None, f"the events' δ add up to {total_delta:.3g} > {delta:.3g}"
    return math.fsum(e * k for e, _, k in pairs), None


def advanced_composition(eps_prime: float, k: int, delta_bar: float) -> float:
    """[A] Lemma A.4: ε̄ = ε'√(2k ln(1/δ̄)) + kε'(e^{ε'} − 1).

    Past the float range (e^{ε'} overflows for ε' > ~709) the bound is +inf: a valid, if
    vacuous, claim — callers compare it with their target and look for a smaller ε'."""
    try:
        growth = math.expm1(eps_prime)
    except OverflowError:
        return math.inf
    return eps_prime * math.sqrt(2.0 * k * math.log(1.0 / delta_bar)) + k * eps_prime * growth


def advanced_epsilon(events, delta: float):
    pairs = _eps_delta_pairs(events)
    if pairs is None:
        return None, "an event has no (ε, δ) of its own"
    if delta <= 0:
        return None, "advanced composition needs δ > 0"
    k = sum(n for _, _, n in pairs)
    eps0 = max(e for e, _, _ in pairs)
    delta0 = max(d for _, d, _ in pairs)
    delta_bar = delta - k * delta0
    if delta_bar <= 0:
        return None, f"k·δ' = {k * delta0:.3g} leaves no room in δ = {delta:.3g}"
    return advanced_composition(eps0, k, delta_bar), None


# ----------------------------------------------------------------------------------------------
# optimal (Kairouz et al.)


def _loss_distribution(groups):
    """Privacy-loss values and log-probabilities (under P) of the product of randomized
    responses RR_ε with the given [(ε, count)]: loss (k − 2l)ε with probability
    C(k, l) e^{(k−l)ε} / (1 + e^ε)^k."""
    loss = np.zeros(1)
    logp = np.zeros(1)
    for eps, k in groups:
        l = np.arange(k + 1, dtype=np.float64)
        g_loss = (k - 2 * l) * eps
        g_logp = (special.gammaln(k + 1) - special.gammaln(l + 1) - special.gammaln(k - l + 1)
                  + (k - l) * eps - k * np.logaddexp(0.0, eps))
        if loss.size * g_loss.size > _MAX_LOSS_VALUES:
            return None
        loss = (loss[:, None] + g_loss[None, :]).ravel()
        logp = (logp[:, None] + g_logp[None, :]).ravel()
    return loss, logp


def _rr_delta(loss, logp, eps: float) -> float:
    """Σ_{L > ε} P[L](1 − e^{ε − L}) — the hockey-stick divergence at ε."""
    sel = loss > eps
    if not sel.any():
        return 0.0
    return float(math.fsum(np.exp(logp[sel]) * -np.expm1(eps - loss[sel])))


def optimal_delta(epsilon: float, pairs) -> float:
    """Exact δ(ε) of the composition of (ε_i, δ_i)-DP events [(ε_i, δ_i, count)] (Kairouz et
    al. 2017): 1 − Π(1 − δ_i)^{count}·(1 − δ_RR(ε)).  Raises ValueError if too many loss values."""
    groups: dict = {}
    log_keep = 0.0
    for e, d, k in pairs:
        groups[e] = groups.get(e, 0) + k
        if d > 0:
            log_keep += k * math.log1p(-d)
    dist = _loss_distribution(sorted(groups.items()))
    if dist is None:
        raise ValueError("too many privacy-loss values for exact optimal composition")
    rr = _rr_delta(*dist, epsilon)
    # 1 − e^{log_keep}(1 − rr) = rr + (1 − e^{log_keep})(1 − rr)
    return rr + (-math.expm1(log_keep)) * (1.0 - rr)


def optimal_epsilon(events, delta: float):
    pairs = _eps_delta_pairs(events)
    if pairs is None:
        return None, "an event has no (ε, δ) of its own"
    groups: dict = {}
    log_keep = 0.0
    for e, d, k in pairs:
        groups[e] = groups.get(e, 0) + k
        if d > 0:
            log_keep += k * math.log1p(-d)
    dist = _loss_distribution(sorted(groups.items()))
    if dist is None:
        return None, "more than 2·10⁶ privacy-loss values (use PLD)"
    floor = -math.expm1(log_keep)
    target = delta * (1.0 - _MARGIN)

    def delta_at(eps):
        rr = _rr_delta(*dist, eps)
        return rr + floor * (1.0 - rr)

    hi = math.fsum(e * k for e, k in groups.items())
    if delta_at(hi) > target:
        return None, f"the events' δ leave no room: need δ > {floor:.3g}"
    lo = 0.0
    if delta_at(lo) <= target:
        return 0.0, None
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if delta_at(mid) <= target:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-12 * hi:
            break
    return hi, None


# ----------------------------------------------------------------------------------------------
# Gaussian (exact), PLD and RDP


def gdp_epsilon(events, delta: float):
    if not events or any(ev.kind != "gaussian" for ev in events):
        return None, "only for compositions of (non-subsampled) Gaussian releases"
    if delta <= 0:
        return None, "Gaussian releases need δ > 0"
    mu = math.sqrt(math.fsum(ev.count * (ev.sensitivity / ev.scale) ** 2 for ev in events))
    return gaussian_epsilon(delta, mu), None


def _event_pld(ev: Event, count: int, disc: float):
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pld

    if ev.kind == "gaussian":
        out = pld.from_gaussian_mechanism(ev.scale, sensitivity=ev.sensitivity,
                                          value_discretization_interval=disc)
    elif ev.kind == "subsampled_gaussian":
        rel = (NeighboringRelation.REPLACE_ONE if ev.neighbouring == "replace"
               else NeighboringRelation.ADD_OR_REMOVE_ONE)
        out = pld.from_gaussian_mechanism(ev.scale, sensitivity=ev.sensitivity,
                                          sampling_prob=ev.sampling_rate,
                                          neighboring_relation=rel,
                                          value_discretization_interval=disc)
    elif ev.mechanism == "laplace" and (ev.dimension or 1) == 1:
        out = pld.from_laplace_mechanism(ev.scale, sensitivity=ev.sensitivity,
                                         value_discretization_interval=disc)
    else:  # any (ε, δ)-DP release is dominated by randomized response RR_{ε, δ}
        out = pld.from_privacy_parameters(
            common.DifferentialPrivacyParameters(ev.epsilon, ev.delta),
            value_discretization_interval=disc)
    return out.self_compose(count) if count > 1 else out


#: PLD accounting holds dense arrays over the privacy-loss range ÷ the discretization interval
#: (dp-accounting needs ~175 bytes and ~1 µs per point to build one release's PLD; composing is
#: an FFT).  The interval is coarsened so that one release has ≤ _PLD_MAX_POINTS points and the
#: composition ≤ _PLD_MAX_SPAN_POINTS: the estimate stays pessimistic (an upper bound at any
#: interval), and only loosens by ≤ one interval per composed release
_PLD_MAX_POINTS = 1_000_000
_PLD_MAX_SPAN_POINTS = 10_000_000
#: ... and PLD is not tried at all past this privacy-loss width of one release (a Gaussian with
#: Δ/σ ≳ 90, a Laplace or (ε, δ) release with ε > 5000): there the other rules are as tight, and
#: dp-accounting's tail and CDF arithmetic is not trusted at such losses
_PLD_MAX_WIDTH = 1e4
#: dp-accounting truncates the Gaussian's noise at tail mass e^{-50}: |x − mean| ≤ ~10σ
_PLD_TAIL_Z = 10.5
#: ... nor past this many self-compositions of one release: dp-accounting's sparse
#: self-composition first bounds its result size by ``size ** count`` as a Python integer
#: (2·10¹⁰ steps — sgda planned at a what-if n of a report — never returned), and RDP composes
#: any count in closed form with a gap that vanishes as the count grows
_PLD_MAX_COUNT = 1_000_000


def _pld_width(ev: Event) -> float:
    """An estimate (slightly above) of the width of one release's privacy-loss support as
    dp-accounting discretizes it; +inf when it is beyond the float range."""
    try:
        if ev.kind in ("gaussian", "subsampled_gaussian"):
            mu = float(ev.sensitivity) / float(ev.scale)     # L ranges over ±(μ²/2 + zμ)
            return mu * mu + 2.0 * _PLD_TAIL_Z * mu
        if ev.mechanism == "laplace" and (ev.dimension or 1) == 1:
            return 2.0 * float(ev.sensitivity) / float(ev.scale)      # L ∈ [−ε, ε]
        return 2.0 * float(ev.epsilon) if ev.epsilon is not None else 0.0
    except (ArithmeticError, TypeError, ValueError):
        return math.inf


def pld_discretization(events, discretization: float = 1e-4):
    """(interval, None) — the interval PLD accounting of ``events`` uses: ``discretization``,
    coarsened so that the estimated numbers of points stay below the caps above — or
    (None, reason) when PLD should not be tried (the loss range is too wide).

    Estimate: a release's loss support w/interval points; n-fold self-composition truncates
    its tails (Chernoff bounds), so it spans ~0.9√n·w (measured) rather than n·w (we allow
    1 + 2√n); composing different releases adds the spans."""
    groups = group_events(events)
    most = max((n for _, n in groups), default=0)
    if most > _PLD_MAX_COUNT:
        return None, (f"{most:,} compositions of one release exceed PLD accounting's "
                      f"{_PLD_MAX_COUNT:,}; RDP composes them in closed form")
    widths = [(_pld_width(ev), n) for ev, n in groups]
    worst = max((w for w, _ in widths), default=0.0)
    if not math.isfinite(worst) or worst > _PLD_MAX_WIDTH:
        return None, (f"a release's privacy-loss range is too wide for PLD accounting "
                      f"(~{worst:.3g} > {_PLD_MAX_WIDTH:g}: a huge ε, or Δ/σ ≳ 90); the other "
                      "rules bound it")
    span = math.fsum(w * min(n, 1.0 + 2.0 * math.sqrt(n)) for w, n in widths)
    disc = max(float(discretization), worst / _PLD_MAX_POINTS, span / _PLD_MAX_SPAN_POINTS)
    return disc, None


#: below this δ PLD is not tried: dp-accounting's FFT round-off exceeds δ (module docstring)
PLD_MIN_DELTA = 1e-10


def pld_epsilon(events, delta: float, discretization: float = 1e-4):
    if delta <= 0:
        return None, "PLD accounting is used for δ > 0"
    if delta < PLD_MIN_DELTA:
        return None, (f"δ = {delta:.3g} < {PLD_MIN_DELTA:g}: below the float round-off of "
                      "dp-accounting's FFT composition, PLD is not an upper bound (RDP applies)")
    disc, why = pld_discretization(events, discretization)
    if disc is None:
        return None, why
    total = None
    for ev, n in group_events(events):
        p = _event_pld(ev, n, disc)
        total = p if total is None else total.compose(p)
    if total is None:
        return 0.0, None
    eps = float(total.get_epsilon_for_delta(delta))
    if math.isnan(eps) or eps < 0:
        return None, f"dp-accounting returned ε = {eps} (numerical failure)"
    return eps, None


def _rdp_event(ev: Event):
    import dp_accounting as dpa

    if ev.kind == "gaussian":
        return dpa.GaussianDpEvent(ev.scale / ev.sensitivity)
    if ev.kind == "subsampled_gaussian":
        if ev.neighbouring != "add_remove":
            return None
        return dpa.PoissonSampledDpEvent(ev.sampling_rate,
                                         dpa.GaussianDpEvent(ev.scale / ev.sensitivity))
    if ev.mechanism == "laplace" and (ev.dimension or 1) == 1:
        return dpa.LaplaceDpEvent(ev.scale / ev.sensitivity)
    if ev.kind == "pure":
        return dpa.ZCDpEvent(ev.epsilon ** 2 / 2.0)
    return None


#: RDP orders of :func:`rdp_curve`'s composition (dp-accounting's defaults, extended upward for
#: tiny δ: the conversion's log(1/δ)/(α − 1) term needs large α when log(1/δ) is ~690)
RDP_ORDERS = tuple([1.0 + x / 10.0 for x in range(1, 100)] + list(range(11, 64))
                   + [80, 100, 128, 160, 200, 256, 320, 400, 512, 640, 800, 1024, 1536, 2048,
                      3072, 4096])
#: relative and absolute slack added to every quadrature value of :func:`rdp_curve`
_RDP_SLACK = (1e-6, 1e-15)


def _log_normal(x, mean, sigma):
    return -0.5 * ((x - mean) / sigma) ** 2 - math.log(sigma * math.sqrt(2.0 * math.pi))


def rdp_curve(sigma: float, q: float, orders=RDP_ORDERS, neighbouring: str = "replace"):
    """Rényi divergences D_α(P‖Q) (one step) of a Poisson-subsampled Gaussian at noise σ (per-row
    norm C = 1) and rate q, at every order α in ``orders``, by quadrature, as an array.

    ``"replace"``: P = (1 − q)N(0, σ²) + qN(−1, σ²), Q = (1 − q)N(0, σ²) + qN(1, σ²) — the
    dominating pair dp-accounting's PLD uses for substitution (symmetric under x ↦ −x, so one
    direction suffices).  ``"add_remove"``: the larger of D_α(N(0)‖M) and D_α(M‖N(0)),
    M = (1 − q)N(0, σ²) + qN(1, σ²).

    The integral ∫ Q (P/Q)^α dx − 1 is evaluated as ∫ Q·expm1(α log(P/Q)) (no cancellation
    for small q) with the trapezoid rule at spacing σ/16 over [−α − 40σ − 2, α + 40σ + 2]
    (the integrand is a Gaussian-smooth function whose mass sits within ~α + 10σ of 0), then a
    relative 10⁻⁶ and absolute 10⁻¹⁵ slack is added: the value is an upper bound to far more
    digits than the slack.  Orders where the divergence overflows are +inf (unused)."""
    sig, q = float(sigma), float(q)
    orders = np.asarray(orders, dtype=float)
    h = sig / 16.0
    lq1 = math.log1p(-q) if q < 1 else -math.inf
    lqq = math.log(q)
    out = np.full(orders.shape, -np.inf)
    for k, a in enumerate(orders):
        lim = a + 40.0 * sig + 2.0           # the integrand's mass sits within ~α + 10σ of 0
        x = np.arange(-lim, lim + h, h)
        base = lq1 + _log_normal(x, 0.0, sig)
        if neighbouring == "replace":
            pairs = [(np.logaddexp(base, lqq + _log_normal(x, -1.0, sig)),
                      np.logaddexp(base, lqq + _log_normal(x, 1.0, sig)))]
        else:
            l0 = _log_normal(x, 0.0, sig)
            lm = np.logaddexp(base, lqq + _log_normal(x, 1.0, sig))
            pairs = [(l0, lm), (lm, l0)]
        for lp, lQ in pairs:
            e = a * (lp - lQ)
            big = e > 30.0
            if np.any(lQ[big] + e[big] > 700.0):
                out[k] = np.inf
                continue
            val = np.where(big, np.exp(lQ + np.where(big, e, 0.0)),
                           np.exp(lQ) * np.expm1(np.minimum(e, 30.0)))
            integral = float(np.sum(val) - 0.5 * (val[0] + val[-1])) * h   # ∫ Q((P/Q)^α − 1)
            rd = math.inf if integral <= -1.0 else math.log1p(integral) / (a - 1.0)
            out[k] = max(out[k], rd)
    rel, ab = _RDP_SLACK
    return np.where(np.isfinite(out), np.maximum(out, 0.0) * (1 + rel) + ab, np.inf)


def _laplace_rdp(b, orders):
    """RDP of the 1-D Laplace mechanism with scale b (sensitivity 1) (Mironov 2017, Prop. 6)."""
    a = np.asarray(orders, dtype=float)
    with np.errstate(over="ignore"):
        v = (np.log(a / (2 * a - 1) * np.exp((a - 1) / b)
                    + (a - 1) / (2 * a - 1) * np.exp(-a / b)) / (a - 1))
    return np.where(np.isfinite(v), v, 1.0 / b)


def _event_rdp(ev: Event, orders):
    """The event's RDP curve at ``orders`` (one release), or None when there is none."""
    a = np.asarray(orders, dtype=float)
    if ev.kind == "gaussian":
        mu = ev.sensitivity / ev.scale
        return a * mu * mu / 2.0
    if ev.kind == "subsampled_gaussian":
        return _cached_rdp_curve(float(ev.scale / ev.sensitivity), float(ev.sampling_rate),
                                 ev.neighbouring, tuple(orders))
    if ev.mechanism == "laplace" and (ev.dimension or 1) == 1:
        return np.minimum(_laplace_rdp(ev.scale / ev.sensitivity, a), ev.epsilon)
    if ev.kind == "pure":       # ε-DP: (ε²/2)-zCDP (Bun & Steinke 2016), and D_α ≤ D_∞ = ε
        return np.minimum(a * ev.epsilon ** 2 / 2.0, ev.epsilon)
    return None


_RDP_CACHE: "OrderedDict[tuple, np.ndarray]" = OrderedDict()


def _cached_rdp_curve(sigma, q, neighbouring, orders):
    key = (sigma, q, neighbouring, orders)
    if key not in _RDP_CACHE:
        _RDP_CACHE[key] = rdp_curve(sigma, q, orders, neighbouring)
        while len(_RDP_CACHE) > 256:
            _RDP_CACHE.popitem(last=False)
    return _RDP_CACHE[key]


def _rdp_to_epsilon(rdp, orders, delta):
    """min over α of the Canonne–Kamath–Steinke conversion (2020, Prop. 12):
    ε = R(α) + log((α − 1)/α) − (log δ + log α)/(α − 1), at least 0."""
    a = np.asarray(orders, dtype=float)
    eps = rdp + np.log1p(-1.0 / a) - (math.log(delta) + np.log(a)) / (a - 1.0)
    eps = eps[np.isfinite(eps)]
    return None if eps.size == 0 else max(0.0, float(eps.min()))


def _rdp_replace_epsilon(events, delta):
    """RDP of a composition with substituted subsampled Gaussians (module docstring)."""
    total = np.zeros(len(RDP_ORDERS))
    for ev, n in group_events(events):
        curve = _event_rdp(ev, RDP_ORDERS)
        if curve is None:
            return None, f"no RDP bound for a {ev.mechanism} event"
        total = total + n * curve
    eps = _rdp_to_epsilon(total, RDP_ORDERS, delta)
    if eps is None:
        return None, "every RDP order overflowed"
    return eps, None


def rdp_epsilon(events, delta: float, orders=None):
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    if delta <= 0:
        return None, "RDP accounting is used for δ > 0"
    if any(ev.kind == "subsampled_gaussian" and ev.neighbouring != "add_remove"
           for ev in events):
        most = max((n for _, n in group_events(events)), default=0)
        if delta >= PLD_MIN_DELTA and most <= _PLD_MAX_COUNT:
            return None, ("no RDP bound for subsampled Gaussians under substitution at this δ "
                          "(PLD accounts for them; below δ = 1e-10 or past "
                          f"{_PLD_MAX_COUNT:,} compositions, rdp_curve does)")
        return _rdp_replace_epsilon(events, delta)
    acc = rdp.RdpAccountant(orders) if orders is not None else rdp.RdpAccountant()
    for ev, n in group_events(events):
        dpe = _rdp_event(ev)
        if dpe is None:
            return None, (f"no RDP bound for a {ev.mechanism} event"
                          + (" under substitution" if ev.kind == "subsampled_gaussian" else ""))
        acc.compose(dpe, n)
    return float(acc.get_epsilon(delta)), None

"""Statistical testers for mechanisms — reusable by backends' test suites.

The neighbouring-dataset tester follows Google's differential-privacy stochastic tester: run the
mechanism many times on two neighbouring inputs D and D', histogram the outputs, and estimate

    δ̂(ε) = Σ_bins max(0, P̂_D(bin) − e^ε P̂_D'(bin)),

a lower estimate (up to sampling error) of the mechanism's true δ at ε: for a post-processing
(the binning) of an (ε, δ)-DP mechanism the population value is ≤ δ.  A mechanism *passes* at a
claimed (ε, δ) when δ̂ is within its sampling error of δ, and a negative control (the same
mechanism with too little noise) must be *refuted*: its δ̂ exceeds δ by more than the error.

API
---
``estimate_delta(sample_D, sample_Dp, epsilon, bins=30, n_samples=None) -> DeltaEstimate``
    ``sample_D``/``sample_Dp``: arrays of outputs, or callables ``n -> array`` (then give
    ``n_samples``).  ``bins``: an int (quantile bins of the pooled sample, open at both ends),
    an array of edges, or ``"discrete"`` (one bin per distinct value — for selection mechanisms).
``DeltaEstimate``: ``delta`` (δ̂), ``stderr`` (standard error of the positive part),
    ``bias_bound`` (upper bound on the upward bias that max(0, ·) adds in bins whose true
    difference is ~0, under the normal approximation: Σ sd_b/√(2π) over bins whose observed
    difference is within 4 sd of ≥ 0), ``consistent_with(delta, z=4)`` and ``refutes(delta,
    z=4)``.
``check_dp(sample_D, sample_Dp, epsilon, delta=0.0, ...)``
    Both directions (D vs D' and D' vs D); returns a :class:`DPCheck` whose ``passed`` is True
    when neither direction refutes (ε, δ).
``check_dp_heldout(sample_D, sample_Dp, epsilon, delta=0.0, bins="auto", pilot=0.25, z=4)``
    The same question with an event chosen on held-out runs: a pilot (the first ``pilot``
    fraction of each sample) picks, per direction, the event S — a set of bins ordered by
    their pilot likelihood ratio, the prefix with the largest pilot z-score — and the other
    runs test that one fixed event with exact (Clopper–Pearson) bounds, P_D(S) ≥ p_lo and
    P_D'(S) ≤ q_hi, each at level Φ(−z)/2.  A direction refutes (ε, δ) when
    p_lo − e^ε q_hi > δ, i.e. when the empirical privacy loss lower bound
    ε̂ = ln((p_lo − δ)/q_hi) exceeds ε; each direction errs with probability ≤ Φ(−z) (the
    event is independent of the runs that test it, and no max(0, ·) bias is involved).
    Samples may be 1-D (values or codes) or 2-D (one row per run); 2-D samples with many
    distinct rows are projected on the pilot's mean difference.  Returns a
    :class:`HeldoutCheck`.
``goodness_of_fit(samples, cdf=None, probabilities=None)``
    p-value of a Kolmogorov–Smirnov test against a continuous ``cdf``, or of a chi-square test
    of integer outcomes 0..K−1 against ``probabilities`` (cells with expected count < 5 merged).

All functions are deterministic given their samples; use fixed seeds in tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["DeltaEstimate", "DPCheck", "EventTest", "HeldoutCheck", "estimate_delta", "check_dp",
           "check_dp_heldout", "goodness_of_fit", "laplace_llr", "repeated_releases"]


# e^ε is evaluated at min(ε, 200).  Every nonzero frequency or Clopper–Pearson upper bound these
# tests meet is ≥ 1/(runs) ≫ e^-200 (no one draws 10^86 runs), so e^ε·q ≥ 1 already at ε = 200
# and every verdict, estimate and event is the same as at the claimed ε — while e^800 would
# overflow (privfair audit --epsilon 800 crashed) and e^400·e^400 in a variance would too.
_EPS_CAP = 200.0


def _exp_eps(epsilon) -> float:
    """e^min(ε, 200): equal, for every test here, to e^ε (see _EPS_CAP)."""
    return math.exp(min(float(epsilon), _EPS_CAP))


@dataclass(frozen=True)
class DeltaEstimate:
    """δ̂ at ``epsilon`` with its sampling error (see the module docstring)."""

    delta: float
    stderr: float
    bias_bound: float
    epsilon: float
    n: int
    n_prime: int
    bins: int

    def lower(self, z: float = 4.0) -> float:
        """A conservative lower confidence bound on the true δ(ε) of the binned outputs."""
        return self.delta - self.bias_bound - z * self.stderr

    def consistent_with(self, delta: float, z: float = 4.0) -> bool:
        """True unless the samples refute (ε, delta) at z standard errors."""
        return self.lower(z) <= delta

    def refutes(self, delta: float, z: float = 4.0) -> bool:
        """True when δ̂ exceeds ``delta`` by more than its bias bound plus z standard errors."""
        return not self.consistent_with(delta, z)


@dataclass(frozen=True)
class DPCheck:
    """Result of :func:`check_dp` (both directions)."""

    passed: bool
    forward: DeltaEstimate
    backward: DeltaEstimate

    @property
    def delta(self) -> float:
        return max(self.forward.delta, self.backward.delta)


def _draw(sample, n_samples):
    if callable(sample):
        if n_samples is None:
            raise ValueError("n_samples is required when samples are given as callables")
        return np.asarray(sample(int(n_samples)))
    return np.asarray(sample)


def _edges(x, y, bins):
    if isinstance(bins, str):
        if bins != "discrete":
            raise ValueError("bins must be an int, an array of edges or 'discrete'")
        return None
    if np.ndim(bins) == 0:
        b = int(bins)
        pooled = np.concatenate([x, y]).astype(np.float64)
        inner = np.unique(np.quantile(pooled, np.linspace(0, 1, b + 1)[1:-1]))
        return np.concatenate([[-np.inf], inner, [np.inf]])
    return np.asarray(bins, dtype=np.float64)


def _probabilities(x, y, edges):
    if edges is None:
        values = np.union1d(np.unique(x), np.unique(y))
        p = np.searchsorted(values, x)
        q = np.searchsorted(values, y)
        cp = np.bincount(p, minlength=values.size)
        cq = np.bincount(q, minlength=values.size)
    else:
        cp = np.histogram(x, edges)[0]
        cq = np.histogram(y, edges)[0]
    return cp / x.size, cq / y.size


def estimate_delta(sample_D, sample_Dp, epsilon, bins=30, n_samples=None) -> DeltaEstimate:
    """δ̂ = Σ_bins max(0, P̂_D(bin) − e^ε P̂_D'(bin)) with its sampling error."""
    x = _draw(sample_D, n_samples).ravel()
    y = _draw(sample_Dp, n_samples).ravel()
    edges = _edges(x, y, bins)
    p, q = _probabilities(x, y, edges)
    c = _exp_eps(epsilon)
    diff = p - c * q
    # per-bin standard deviations (binomial), for the bias allowance
    sd = np.sqrt(p * (1 - p) / x.size + c * c * q * (1 - q) / y.size)
    pos = diff > 0
    delta_hat = float(math.fsum(diff[pos]))
    # the positive set S is treated as fixed: Σ_S P̂ and Σ_S Q̂ are binomial proportions
    ps, qs = float(p[pos].sum()), float(q[pos].sum())
    stderr = math.sqrt(ps * (1 - ps) / x.size + c * c * qs * (1 - qs) / y.size)
    near_zero = diff > -4.0 * sd
    bias = float(sd[near_zero].sum() / math.sqrt(2 * math.pi))
    return DeltaEstimate(delta_hat, stderr, bias, float(epsilon), x.size, y.size, p.size)


def check_dp(sample_D, sample_Dp, epsilon, delta=0.0, bins=30, n_samples=None,
             z: float = 4.0) -> DPCheck:
    """Test a claimed (ε, δ) in both directions (see the module docstring)."""
    x = _draw(sample_D, n_samples)
    y = _draw(sample_Dp, n_samples)
    fwd = estimate_delta(x, y, epsilon, bins)
    bwd = estimate_delta(y, x, epsilon, bins)
    passed = fwd.consistent_with(delta, z) and bwd.consistent_with(delta, z)
    return DPCheck(passed, fwd, bwd)


@dataclass(frozen=True)
class EventTest:
    """One direction of :func:`check_dp_heldout`: a fixed event S tested on held-out runs."""

    epsilon: float          # the claimed ε the event was chosen for
    p: float                # P̂_D(S) on the held-out runs of D
    q: float                # P̂_D'(S) on the held-out runs of D'
    n: int
    n_prime: int
    p_lower: float          # Clopper–Pearson lower bound on P_D(S), level Φ(−z)/2
    q_upper: float          # Clopper–Pearson upper bound on P_D'(S), level Φ(−z)/2
    size: int               # bins in S
    bins: int               # bins the pilot saw

    @property
    def delta(self) -> float:
        """δ̂ = P̂_D(S) − e^ε P̂_D'(S) (unbiased: S is fixed before these runs are read)."""
        return self.p - _exp_eps(self.epsilon) * self.q

    @property
    def stderr(self) -> float:
        c = _exp_eps(self.epsilon)
        return math.sqrt(self.p * (1 - self.p) / self.n
                         + c * c * self.q * (1 - self.q) / self.n_prime)

    def delta_lower(self, epsilon=None) -> float:
        """Confidence lower bound on P_D(S) − e^ε P_D'(S), a lower bound on the true δ(ε)."""
        eps = self.epsilon if epsilon is None else float(epsilon)
        return self.p_lower - _exp_eps(eps) * self.q_upper

    def epsilon_lower(self, delta: float = 0.0) -> float:
        """Empirical privacy loss lower bound ln((p_lo − δ)/q_hi); −inf when p_lo ≤ δ."""
        if self.p_lower <= delta:
            return -math.inf
        return math.log((self.p_lower - delta) / self.q_upper)

    def refutes(self, delta: float) -> bool:
        """True when the event proves δ(ε) > ``delta`` at the bounds' confidence."""
        return self.delta_lower() > delta


@dataclass(frozen=True)
class HeldoutCheck:
    """Result of :func:`check_dp_heldout` (both directions)."""

    passed: bool
    forward: EventTest
    backward: EventTest
    delta_claim: float
    how: str

    @property
    def epsilon_lower(self) -> float:
        return max(self.forward.epsilon_lower(self.delta_claim),
                   self.backward.epsilon_lower(self.delta_claim))


def _clopper_pearson(k: int, n: int, alpha: float):
    """(lower, upper) exact one-sided bounds at level ``alpha`` each on a binomial proportion."""
    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - alpha, k + 1, n - k))
    return lo, hi


def _pick_event(cp, cq, epsilon):
    """Bins ordered by pilot likelihood ratio; the prefix with the best pilot z-score."""
    m, mq = max(cp.sum(), 1), max(cq.sum(), 1)
    ratio = (cp + 0.5) / m / ((cq + 0.5) / mq)
    order = np.argsort(-ratio, kind="stable")
    c = _exp_eps(epsilon)
    P = np.cumsum(cp[order]) / m
    Q = (np.cumsum(cq[order]) + 0.5) / (mq + 1)      # smoothed: an empty pilot bin is not free
    sd = np.sqrt(P * (1 - P) / m + c * c * Q * (1 - Q) / mq) + 1e-12
    score = (P - c * Q) / sd
    k = int(np.argmax(score[:-1])) + 1 if score.size > 1 else 1   # never the whole space
    return order[:k]


def check_dp_heldout(sample_D, sample_Dp, epsilon, delta=0.0, bins="auto", pilot=0.25,
                     z: float = 4.0, n_samples=None) -> HeldoutCheck:
    """Test a claimed (ε, δ) on an event chosen from held-out runs (module docstring)."""
    x = np.asarray(_draw(sample_D, n_samples), dtype=np.float64)
    y = np.asarray(_draw(sample_Dp, n_samples), dtype=np.float64)
    x = x.reshape(len(x), -1)
    y = y.reshape(len(y), -1)
    kx, ky = max(1, int(len(x) * pilot)), max(1, int(len(y) * pilot))
    if len(x) - kx < 1 or len(y) - ky < 1:
        raise ValueError("too few runs for a pilot and a held-out part")
    px, py, tx, ty = x[:kx], y[:ky], x[kx:], y[ky:]
    pooled = np.vstack([px, py])
    n_distinct = len(np.unique(pooled, axis=0))
    if bins == "auto":
        bins = "discrete" if n_distinct <= max(2, min(kx, ky) // 10) else 20
    if bins == "discrete":
        values = np.unique(pooled, axis=0)

        def code(a):       # index of each row among the pilot's values; len(values) = unseen
            hit = np.all(a[:, None, :] == values[None, :, :], axis=2)
            return np.where(hit.any(axis=1), hit.argmax(axis=1), len(values))

        how = f"{len(values)} distinct outputs in the pilot, histogrammed"
    else:
        if x.shape[1] > 1:
            direction = px.mean(axis=0) - py.mean(axis=0)
            if not np.any(direction):
                direction = np.ones(x.shape[1])
            how = f"{n_distinct} distinct outputs, projected on the pilot's mean difference"
        else:
            direction = np.ones(1)
            how = f"{n_distinct} distinct outputs"
        proj = pooled @ direction
        inner = np.unique(np.quantile(proj, np.linspace(0, 1, int(bins) + 1)[1:-1]))
        edges = np.concatenate([[-np.inf], inner, [np.inf]])
        values = np.arange(len(edges) - 1)
        how += f", {len(values)} quantile bins of the pilot"

        def code(a):
            return np.clip(np.searchsorted(edges, a @ direction, side="right") - 1, 0,
                           len(values) - 1)

    B = len(values) + 1
    cpx, cpy = (np.bincount(code(a), minlength=B).astype(float) for a in (px, py))
    ctx, cty = code(tx), code(ty)
    alpha = float(stats.norm.sf(z)) / 2
    tests = []
    for cp, cq, ta, tb in ((cpx, cpy, ctx, cty), (cpy, cpx, cty, ctx)):
        S = _pick_event(cp, cq, epsilon)
        ka, kb = int(np.isin(ta, S).sum()), int(np.isin(tb, S).sum())
        lo, _ = _clopper_pearson(ka, len(ta), alpha)
        _, hi = _clopper_pearson(kb, len(tb), alpha)
        tests.append(EventTest(float(epsilon), ka / len(ta), kb / len(tb), len(ta), len(tb),
                               lo, hi, len(S), B))
    how += f"; pilot of {kx} + {ky} runs picks the event, {len(tx)} + {len(ty)} runs test it"
    passed = not (tests[0].refutes(delta) or tests[1].refutes(delta))
    return HeldoutCheck(passed, tests[0], tests[1], float(delta), how)


def goodness_of_fit(samples, cdf=None, probabilities=None) -> float:
    """p-value of KS (continuous ``cdf``) or chi-square (outcomes 0..K−1, ``probabilities``)."""
    samples = np.asarray(samples)
    if (cdf is None) == (probabilities is None):
        raise ValueError("give exactly one of cdf and probabilities")
    if cdf is not None:
        return float(stats.kstest(samples.ravel(), cdf).pvalue)
    probs = np.asarray(probabilities, dtype=np.float64)
    counts = np.bincount(samples.astype(np.int64).ravel(), minlength=probs.size)
    if counts.size > probs.size:
        raise ValueError("an outcome lies outside 0..K-1")
    expected = probs / probs.sum() * samples.size
    order = np.argsort(expected)
    obs_cells, exp_cells = [], []
    acc_o = acc_e = 0.0
    for i in order:  # merge the smallest cells until each expected count is ≥ 5
        acc_o += counts[i]
        acc_e += expected[i]
        if acc_e >= 5:
            obs_cells.append(acc_o)
            exp_cells.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e > 0:
        if exp_cells:
            obs_cells[-1] += acc_o
            exp_cells[-1] += acc_e
        else:
            obs_cells.append(acc_o)
            exp_cells.append(acc_e)
    if len(exp_cells) < 2:
        return 1.0
    return float(stats.chisquare(obs_cells, exp_cells).pvalue)


def laplace_llr(x, mu, mu_p, scale) -> np.ndarray:
    """log p_D(x)/p_D'(x) of a Laplace release of the vector ``mu`` (on D) or ``mu_p`` (on D′)
    with per-coordinate ``scale``, for each row of ``x`` (runs × coordinates) — the most
    powerful one-dimensional statistic of the release for a neighbouring-dataset test.

    >>> laplace_llr(np.array([[0.0, 1.0]]), np.zeros(2), np.array([0.0, 2.0]), 1.0)
    array([0.])
    """
    x = np.atleast_2d(np.asarray(x, dtype=float))
    return ((np.abs(x - mu_p) - np.abs(x - mu)) / scale).sum(axis=1)


def repeated_releases(backend, plan, field: str, runs: int, seed, noise_multiplier=1.0):
    """``runs`` end-to-end runs of ``backend.run(plan)`` (no accountant: a test's samples),
    returning ``Result.info[field]`` of each, flattened, as the rows of an array — the samples of
    a neighbouring-dataset test.  ``noise_multiplier`` < 1 runs them inside
    :func:`privfair.privacy.reduced_noise` (the negative control).  ``seed`` seeds one source
    shared by the runs."""
    from .randomness import as_source
    from .release import reduced_noise

    src = as_source(seed)
    with reduced_noise(noise_multiplier):
        return np.array([np.ravel(backend.run(plan, rng=src, accountant=None).info[field])
                         for _ in range(runs)])

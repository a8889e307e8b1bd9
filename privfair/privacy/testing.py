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

__all__ = ["DeltaEstimate", "DPCheck", "estimate_delta", "check_dp", "goodness_of_fit"]


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
    c = math.exp(float(epsilon))
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

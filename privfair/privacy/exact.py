"""Exact samplers built from uniform random bits with integer arithmetic only.

Why: a float sampler such as ``-b * log(U)`` for Laplace noise leaks the input through the
pattern of representable outputs (Mironov 2012), and normalising ``exp(score)`` over many
candidates under/overflows (Ilvento 2019).  Every sampler here draws *exactly* from the ideal
distribution, then applies a deterministic function (post-processing) to produce a float.

Continuous noise: "lazy" uniforms
    A uniform U in [0, 1) is represented by the bits drawn so far, ``[m, n]`` meaning
    U ∈ [m/2^n, (m+1)/2^n); more bits are appended only when a comparison needs them.  Comparing
    two lazy uniforms (or one with 1/2) is then exact, and terminates with probability 1.

    * Exponential(1) = K + V, K ~ Geometric (P[K=k] = e^{-k}(1 - e^{-1})), V with density
      ∝ e^{-v} on [0, 1): von Neumann (1951) — a uniform v is accepted with probability e^{-v}
      by counting the run v > z_1 > z_2 > ... of fresh uniforms (accept iff the run length is
      even; P[run ≥ j] = v^j / j!).  Bernoulli(e^{-1}) is the same run started at 1.
    * Laplace(b) = ±b·Exponential(1), the sign an independent fair bit.
    * Normal(0, 1): Karney (2016, "Sampling exactly from the normal distribution", Algorithm N):
      k ≥ 0 with probability ∝ e^{-k/2}, kept with probability e^{-k(k-1)/2}; a lazy uniform x
      kept with probability exp(-x(2k+x)/2) (k+1 runs of Algorithm B, each accepting with
      probability exp(-x(2k+x)/(2k+2)) by the same even-run argument with an extra
      Bernoulli((2k+x)/(2k+2)) per step); a fair sign.  The pair (k, x) then has density
      ∝ e^{-(k+x)^2/2}, i.e. |N| is half-normal.

    The release ``value + scale·noise`` is a real number known to lie in an interval that
    shrinks as bits are added; we add bits until both ends round (correctly — Python's int/int
    division is correctly rounded) to the same float, and return that float.  The output is
    therefore *exactly* ``fl(value + scale·noise)`` with exact continuous noise: post-processing
    of the ideal Laplace / Gaussian mechanism, so their textbook privacy maps hold unchanged (no
    grid, no extra sensitivity).  ``value`` and ``scale`` are floats, i.e. exact dyadic rationals.

Discrete choices: Bernoulli(exp(-γ)) for rational γ
    Canonne, Kamath & Steinke (2020), Algorithm 1 (γ ∈ [0, 1]: K = 1; repeat A ~ Bernoulli(γ/K),
    K += 1 while A = 1; return [K odd]) and the product rule exp(-γ) = exp(-1)^⌊γ⌋ exp(-{γ}),
    vectorized with numpy over int64 numerators (Python integers where ε·gap exceeds int64 —
    a huge ε — so γ is never rounded, wrapped or clipped); Bernoulli(n/d) is "a uniform integer
    in [0, d) is < n", which is exact.  Used by the exponential mechanism and permute-and-flip.

The building blocks (``less``, ``small_below``, ``bernoulli_exp_minus_half``/``_one``,
``round_release``, ``gamma``, ``accept``) are public names so that tests check each one's
exactness directly (docs/privacy.md §5); this module is the privacy core's internals, not a user
API: production code draws noise through :mod:`privfair.privacy.release`.
"""

from __future__ import annotations

import numpy as np

from .randomness import RandomSource

__all__ = [
    "laplace_floats",
    "gaussian_floats",
    "bernoulli_exp",
    "exponential_mechanism_index",
    "permute_and_flip_index",
    "exponential_mechanism_indices",
    "permute_and_flip_indices",
    "uniform_permutation",
]


# ----------------------------------------------------------------------------------------------
# Lazy uniforms (scalar, pure Python integers)


def less(u: list, v: list, src: RandomSource) -> bool:
    """Exact ``u < v`` for lazy uniforms ``[m, n]`` (extends the shorter / both as needed)."""
    word = src.word
    while True:
        while u[1] < v[1]:
            u[0] = (u[0] << 64) | word()
            u[1] += 64
        while v[1] < u[1]:
            v[0] = (v[0] << 64) | word()
            v[1] += 64
        if u[0] != v[0]:
            return u[0] < v[0]
        u[0] = (u[0] << 64) | word()
        u[1] += 64
        v[0] = (v[0] << 64) | word()
        v[1] += 64


def small_below(m: int, src: RandomSource) -> int:
    """A uniform integer in [0, m) by rejection on the top bits of 64-bit words."""
    b = (m - 1).bit_length()
    if b == 0:
        return 0
    while True:
        w = src.word() >> (64 - b)
        if w < m:
            return w


def _run_is_even(start: list, src: RandomSource) -> bool:
    """Von Neumann: count the run start > z_1 > z_2 > ... of fresh uniforms; True iff even.

    P[run length ≥ j] = start^j / j!, so P[even] = exp(-start)."""
    prev, n = start, 0
    while True:
        z = [src.word(), 64]
        if not less(z, prev, src):
            return n % 2 == 0
        prev, n = z, n + 1


def bernoulli_exp_minus_half(src: RandomSource) -> bool:
    """True with probability exp(-1/2): the run started at the constant 1/2."""
    z = [src.word(), 64]
    if z[0] >> 63:  # z ≥ 1/2: the run is empty (length 0, even)
        return True
    return not _run_is_even(z, src)  # run length is 1 + (length of the run started at z)


def bernoulli_exp_minus_one(src: RandomSource) -> bool:
    """True with probability exp(-1): the run started at 1 (every uniform is < 1)."""
    z = [src.word(), 64]
    return not _run_is_even(z, src)


def _karney_b(k: int, x: list, src: RandomSource) -> bool:
    """True with probability exp(-x(2k+x)/(2k+2)) (Karney 2016, Algorithm B)."""
    n, y, m = 0, x, 2 * k + 2
    while True:
        z = [src.word(), 64]
        if not less(z, y, src):
            break
        # Bernoulli((2k + x)/(2k + 2)): f uniform in {0..2k+1}; f < 2k → yes; f = 2k → [r < x].
        f = small_below(m, src)
        if f == 2 * k:
            if not less([src.word(), 64], x, src):
                break
        elif f > 2 * k:
            break
        y, n = z, n + 1
    return n % 2 == 0


def _standard_normal_parts(src: RandomSource):
    """(sign, k, x) with sign·(k + x) ~ N(0, 1) exactly (Karney 2016, Algorithm N)."""
    while True:
        k = 0
        while bernoulli_exp_minus_half(src):
            k += 1
        if not all(bernoulli_exp_minus_half(src) for _ in range(k * (k - 1))):
            continue
        x = [src.word(), 64]
        if not all(_karney_b(k, x, src) for _ in range(k + 1)):
            continue
        sign = -1 if src.word() >> 63 else 1
        return sign, k, x


def _standard_exponential_parts(src: RandomSource):
    """(k, v) with k + v ~ Exponential(1) exactly (von Neumann 1951)."""
    k = 0
    while bernoulli_exp_minus_one(src):
        k += 1
    while True:
        v = [src.word(), 64]
        if _run_is_even(v, src):
            return k, v


def round_release(value: float, scale: float, sign: int, k: int, u: list, src) -> float:
    """The float nearest to value + sign·scale·(k + U), U the lazy uniform ``u``.

    value = vn/2^ve and scale = sn/2^se are exact dyadic rationals; with U ∈ [m/2^n, (m+1)/2^n)
    the release lies between two rationals with denominator 2^D.  When both round to the same
    float, every point between them does (rounding is monotone), so that float is the correctly
    rounded release; otherwise one more word of U is drawn."""
    vn, vd = float(value).as_integer_ratio()
    sn, sd = float(scale).as_integer_ratio()
    ve, se = vd.bit_length() - 1, sd.bit_length() - 1
    while True:
        m, n = u
        d = max(ve, se + n)
        base = vn << (d - ve)
        step = sn << (d - se - n)
        lo = base + sign * step * ((k << n) + m)
        hi = lo + sign * step
        den = 1 << d
        try:
            a, b = lo / den, hi / den
        except OverflowError:  # beyond the float range: the release saturates
            return float(np.sign(lo)) * np.inf
        if a == b:
            return a
        u[0] = (u[0] << 64) | src.word()
        u[1] += 64


def laplace_floats(values, scale: float, src: RandomSource) -> np.ndarray:
    """fl(v + Laplace(scale)) for every v in ``values`` (float64 array), exactly."""
    values = np.asarray(values, dtype=np.float64)
    out = np.empty(values.size, dtype=np.float64)
    for i, v in enumerate(values.ravel().tolist()):
        k, u = _standard_exponential_parts(src)
        sign = -1 if src.word() >> 63 else 1
        out[i] = round_release(v, scale, sign, k, u, src)
    return out.reshape(values.shape)


def gaussian_floats(values, sigma: float, src: RandomSource) -> np.ndarray:
    """fl(v + N(0, sigma^2)) for every v in ``values`` (float64 array), exactly."""
    values = np.asarray(values, dtype=np.float64)
    out = np.empty(values.size, dtype=np.float64)
    for i, v in enumerate(values.ravel().tolist()):
        sign, k, x = _standard_normal_parts(src)
        out[i] = round_release(v, sigma, sign, k, x, src)
    return out.reshape(values.shape)


# ----------------------------------------------------------------------------------------------
# Vectorized Bernoulli(exp(-num/den)) for int64 numerators (Canonne, Kamath & Steinke 2020)


def _bernoulli_exp_fraction(num: np.ndarray, den: int, src: RandomSource) -> np.ndarray:
    """True with probability exp(-num/den), 0 ≤ num ≤ den (CKS 2020, Algorithm 1)."""
    out = np.empty(num.shape, dtype=bool)
    active = np.arange(num.size)
    k = 1
    while active.size:
        # A ~ Bernoulli(num / (den·k)): a uniform integer below den·k falls below num.
        a = src.below(den * k, size=active.size) < num[active]
        stopped = active[~a]
        out[stopped] = (k % 2 == 1)
        active = active[a]
        k += 1
    return out


def bernoulli_exp(num, den: int, src: RandomSource) -> np.ndarray:
    """Independent Bernoulli(exp(-num_i/den)) draws; num an int64 array ≥ 0, den > 0."""
    num = np.asarray(num, dtype=np.int64).ravel()
    whole, frac = np.divmod(num, int(den))
    return accept(whole, frac, int(den), src)


_INT64_SAFE = 2**62


def gamma(gap: np.ndarray, eps_num: int, den: int):
    """γ_i = eps_num·gap_i/den exactly, as (whole, frac): γ_i = whole_i + frac_i/den with
    0 ≤ frac_i < den (int64).  ``whole`` is int64 when it fits, else an object array of Python
    ints: a huge ε (eps_num·gap ≥ 2^62) must neither raise nor wrap around in int64 — a wrapped
    γ would change the sampled distribution.  Bernoulli(exp(−whole)) needs ``whole`` successive
    Bernoulli(e^{-1}) successes, which :func:`accept` draws exactly whatever its size (a
    candidate with γ ≥ 1 is rejected after ~1.6 rounds on average), so the sampler stays exact
    at any ε: probabilities far below the float range are never rounded to 0."""
    gap = np.asarray(gap, dtype=np.int64)
    eps_num, den = int(eps_num), int(den)
    top = int(gap.max(initial=0))
    if eps_num * top < _INT64_SAFE:                  # the exact product fits in int64
        return np.divmod(gap * eps_num, den)
    prod = gap.astype(object) * eps_num              # Python ints: exact at any size
    whole = prod // den
    frac = (prod % den).astype(np.int64)             # < den < 2^63
    if eps_num * top // den < _INT64_SAFE:
        whole = whole.astype(np.int64)
    return whole, frac


def exponential_mechanism_index(gap: np.ndarray, eps_num: int, den: int,
                                src: RandomSource, batch: int | None = None) -> int:
    """Index i with probability ∝ exp(-eps_num·gap_i/den) (gap_i ≥ 0 integers, min gap = 0).

    Rejection sampling: propose i uniformly, accept with probability exp(-γ_i) ≤ 1.  Trials are
    evaluated in batches, and the *first* accepted trial in trial order is returned, which is
    the same as running them one at a time.  With the best candidate's weight 1, a batch of N
    trials succeeds with probability ≥ 1 - 1/e."""
    n = gap.size
    batch = int(batch or max(n, 64))
    while True:
        idx = src.below(n, size=batch)
        whole, frac = gamma(gap[idx], eps_num, den)
        ok = accept(whole, frac, den, src)
        hits = np.nonzero(ok)[0]
        if hits.size:
            return int(idx[hits[0]])


def accept(whole: np.ndarray, frac: np.ndarray, den: int, src: RandomSource) -> np.ndarray:
    """Bernoulli(exp(-(whole + frac/den))) for whole ≥ 0 (int64, or an object array of Python
    ints beyond int64) and int64 0 ≤ frac < den."""
    result = np.ones(whole.size, dtype=bool)
    left = whole.copy()
    frac = np.asarray(frac, dtype=np.int64)
    live = np.nonzero(np.asarray(left > 0, dtype=bool))[0]
    while live.size:
        ok = _bernoulli_exp_fraction(np.full(live.size, den, dtype=np.int64), den, src)
        result[live[~ok]] = False
        left[live] -= 1
        live = live[ok & np.asarray(left[live] > 0, dtype=bool)]
    todo = np.nonzero(result & (frac > 0))[0]
    if todo.size:
        ok = _bernoulli_exp_fraction(frac[todo], den, src)
        result[todo[~ok]] = False
    return result


def exponential_mechanism_indices(gap: np.ndarray, eps_num: int, den: int, src: RandomSource,
                                  size: int, trials: int = 8) -> np.ndarray:
    """``size`` independent draws of :func:`exponential_mechanism_index` (vectorized: each
    unfinished draw runs ``trials`` more proposals per round and keeps its first acceptance)."""
    out = np.full(size, -1, dtype=np.int64)
    todo = np.arange(size)
    n = gap.size
    while todo.size:
        idx = src.below(n, size=todo.size * trials).reshape(todo.size, trials)
        whole, frac = gamma(gap[idx.ravel()], eps_num, den)
        ok = accept(whole, frac, den, src).reshape(todo.size, trials)
        hit = ok.any(axis=1)
        first = ok.argmax(axis=1)
        out[todo[hit]] = idx[hit, first[hit]]
        todo = todo[~hit]
    return out


def uniform_permutation(n: int, src: RandomSource) -> np.ndarray:
    """A uniformly random permutation of range(n): argsort of i.i.d. 64-bit keys, redrawn
    whenever two keys tie (conditioning on distinct keys keeps every order equally likely)."""
    while True:
        keys = src.words(n)
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        if n < 2 or not (sorted_keys[1:] == sorted_keys[:-1]).any():
            return order


def permute_and_flip_index(gap: np.ndarray, eps_num: int, den: int, src: RandomSource,
                           chunk: int = 4096) -> int:
    """Permute-and-flip (McKenna & Sheldon 2020): visit candidates in a uniformly random order and
    return the first one accepted with probability exp(-eps_num·gap_i/den).  A candidate with
    gap 0 always accepts, so the loop ends within one pass."""
    order = uniform_permutation(gap.size, src)
    for start in range(0, gap.size, chunk):
        idx = order[start:start + chunk]
        whole, frac = gamma(gap[idx], eps_num, den)
        ok = accept(whole, frac, den, src)
        hits = np.nonzero(ok)[0]
        if hits.size:
            return int(idx[hits[0]])
    raise AssertionError("permute-and-flip: the best candidate always accepts")  # unreachable


def permute_and_flip_indices(gap: np.ndarray, eps_num: int, den: int, src: RandomSource,
                             size: int) -> np.ndarray:
    """``size`` independent draws of :func:`permute_and_flip_index` (one uniformly random
    permutation per draw — rows of i.i.d. keys, a row with a tie is redrawn)."""
    n = gap.size
    orders = np.empty((size, n), dtype=np.int64)
    todo = np.arange(size)
    while todo.size:
        keys = src.words(todo.size * n).reshape(todo.size, n)
        order = np.argsort(keys, axis=1, kind="stable")
        sk = np.take_along_axis(keys, order, axis=1)
        ok = ~(sk[:, 1:] == sk[:, :-1]).any(axis=1) if n > 1 else np.ones(todo.size, bool)
        orders[todo[ok]] = order[ok]
        todo = todo[~ok]
    whole, frac = gamma(gap[orders.ravel()], eps_num, den)
    acc = accept(whole, frac, den, src).reshape(size, n)
    first = acc.argmax(axis=1)      # the best candidate always accepts, so every row has one
    return orders[np.arange(size), first]

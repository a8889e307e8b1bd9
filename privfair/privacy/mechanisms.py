"""The mechanisms: Laplace, Gaussian, the exponential mechanism, permute-and-flip, and the fast
vectorized Gaussian noise of gradient methods.

Every function validates its arguments, builds its :class:`~privfair.privacy.events.Event`,
records it in ``accountant`` (if given; a limited accountant may refuse) and only then draws
randomness.  They return the release itself — a float / array / index — or, with
``return_event=True``, a :class:`~privfair.privacy.events.Release` holding both.

Samplers (see :mod:`.exact` for the proofs):

* ``laplace_mechanism`` / ``gaussian_mechanism`` (``exact=True``, the default): exact continuous
  noise from uniform bits, the release correctly rounded to a float — post-processing of the
  ideal mechanism, so the textbook maps hold with the original sensitivity.  About 4 µs
  (Laplace) and 7 µs (Gaussian) per coordinate: meant for low-dimensional releases.
  ``exact=False`` uses numpy's float samplers; the event is marked idealized.
* ``exponential_mechanism`` / ``permute_and_flip``: scores are rounded to the dyadic grid
  g = 2^(⌊log₂Δ⌋ − 10) (a deterministic map whose sensitivity, in grid steps, is at most
  ⌊Δ/g⌋ + 1 ≤ (1 + 2^-10)Δ/g) and ε is rounded *down* to a dyadic rational with 12 significant
  bits; the selection is then sampled exactly with Bernoulli(exp(−γ)) for rational γ.  The
  result is ε'-DP for the rounded ε' ≤ ε, so ε-DP.
* ``gaussian_noise_vector``: numpy or torch ``randn`` — fast, any device, idealized numerics.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from fractions import Fraction

import numpy as np

from ..errors import InvalidInputError
from .exact import (exponential_mechanism_index, exponential_mechanism_indices,
                     gaussian_floats, laplace_floats, permute_and_flip_index,
                     permute_and_flip_indices)
from ._validate import check_count
from ._validate import check_delta, check_epsilon, check_positive
from .events import (Release, exponential_event, gaussian_event, laplace_event,
                     permute_and_flip_event)
from .gaussian import calibrate_gaussian_sigma
from .randomness import GeneratorSource, RandomSource, as_source

__all__ = [
    "laplace_mechanism",
    "gaussian_mechanism",
    "exponential_mechanism",
    "permute_and_flip",
    "report_noisy_max",
    "gaussian_noise_vector",
    "exponential_mechanism_probabilities",
    "permute_and_flip_probabilities",
    "laplace_scale",
    "score_grid",
]

_GRID_BITS = 10       # Δ/g ∈ [2^10, 2^11): the grid costs at most a factor 1 + 2^-10 in ε
_EPS_BITS = 12        # ε is rounded down to 12 significant bits


# ----------------------------------------------------------------------------------------------
# helpers


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")


def _as_values(value, field: str = "value"):
    """(float64 numpy array, function restoring the caller's type)."""
    if _is_torch(value):
        import torch

        device, dtype = value.device, value.dtype
        arr = value.detach().to("cpu", torch.float64).numpy()

        def restore(out):
            return torch.as_tensor(out, device=device).to(dtype if dtype.is_floating_point
                                                          else torch.float64)
    elif np.ndim(value) == 0 and not isinstance(value, np.ndarray):
        try:
            arr = np.asarray(float(value), dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidInputError(field, value, "pass a number or an array of numbers") from None

        def restore(out):
            return float(out)
    else:
        try:
            arr = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidInputError(field, value, "pass a number or an array of numbers") from None

        def restore(out):
            return out
    if not np.isfinite(arr).all():
        raise InvalidInputError(field, value, f"{field} must be finite (no NaN or ±inf)")
    return arr, restore


def _as_scores(scores) -> np.ndarray:
    if _is_torch(scores):
        import torch

        arr = scores.detach().to("cpu", torch.float64).numpy()
    else:
        try:
            arr = np.asarray(scores, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidInputError("scores", scores, "pass a 1-D array of numbers") from None
    arr = arr.reshape(-1) if arr.ndim <= 1 else None
    if arr is None:
        raise InvalidInputError("scores", np.shape(scores), "scores must be a 1-D array")
    if arr.size == 0:
        raise InvalidInputError("scores", scores, "there must be at least one candidate")
    if not np.isfinite(arr).all():
        raise InvalidInputError("scores", "non-finite entries",
                                "scores must be finite (drop impossible candidates instead)")
    return arr


def float_generator(src: RandomSource) -> np.random.Generator:
    """A numpy Generator for the idealized fast path: the caller's own, or one seeded with 256
    bits of OS entropy (unpredictable, but PCG64 is not a cryptographic generator)."""
    if isinstance(src, GeneratorSource):
        return src.generator
    return np.random.default_rng(np.frombuffer(os.urandom(32), dtype=np.uint32))


def laplace_scale(sensitivity: float, epsilon: float) -> float:
    """The smallest float b with Δ/b ≤ ε exactly (Δ/ε rounded up).

    Raises ``InvalidPrivacyError`` (before anything is recorded or drawn) when Δ/ε is beyond
    the float range: no float scale gives that little privacy loss."""
    b = sensitivity / epsilon
    if not math.isfinite(b) or b >= np.finfo(np.float64).max:
        from ..errors import InvalidPrivacyError

        raise InvalidPrivacyError(
            "epsilon", epsilon, f"ε is too small for a Laplace release of sensitivity "
            f"{sensitivity:g}: the scale Δ/ε is not a finite float; pass a larger ε")
    while Fraction(sensitivity) > Fraction(epsilon) * Fraction(b):
        b = float(np.nextafter(b, np.inf))
    return b


def _sampler_text(base: str, src: RandomSource) -> str:
    return f"{base}; bits: {src.describe()}"


# ----------------------------------------------------------------------------------------------
# Laplace and Gaussian


def laplace_mechanism(value, sensitivity, epsilon, rng=None, *, accountant=None,
                      sensitivity_source: str = "declared by the caller", label: str = "",
                      exact: bool = True, return_event: bool = False):
    """Release ``value + Laplace(Δ/ε)`` per coordinate: ε-DP for ℓ1 sensitivity Δ.

    Parameters
    ----------
    value : float or array-like (numpy or torch)
        The statistic.  The release has the same type (and device, for torch).
    sensitivity : float
        ℓ1 sensitivity Δ > 0 under the dataset's neighbouring relation.
    epsilon : float
        ε > 0, finite.
    rng : None, int or numpy.random.Generator
        None draws from the OS CSPRNG; a seed or Generator makes the draw reproducible.
    accountant : Accountant, optional
        Records the event before any noise is drawn (and may refuse it).
    sensitivity_source : str
        Where Δ comes from; printed on the certificate.
    exact : bool, default True
        False uses numpy's float Laplace sampler (fast; the event is marked idealized).
    return_event : bool
        Return ``Release(value, event)`` instead of the value.

    Examples
    --------
    >>> round(laplace_mechanism(10.0, 1.0, 1.0, rng=0) - 10.0, 3) != 0.0
    True
    """
    values, restore = _as_values(value)
    sens = check_positive(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    scale = laplace_scale(sens, eps)
    src = as_source(rng)
    sampler = ("exact continuous Laplace from uniform bits (von Neumann), correctly rounded"
               if exact else "numpy float Laplace (idealized)")
    event = laplace_event(sens, eps, scale=scale, dimension=max(values.size, 1),
                          sensitivity_source=sensitivity_source, label=label,
                          idealized=not exact, sampler=_sampler_text(sampler, src))
    event = replace(event, seeded=src.seeded)
    if accountant is not None:
        accountant.record(event)
    if exact:
        noisy = laplace_floats(values, scale, src)
    else:
        noisy = values + float_generator(src).laplace(0.0, scale, size=values.shape)
    out = restore(noisy)
    return Release(out, event) if return_event else out


def gaussian_mechanism(value, sensitivity, epsilon, delta, rng=None, *, accountant=None,
                       sensitivity_source: str = "declared by the caller", label: str = "",
                       exact: bool = True, return_event: bool = False):
    """Release ``value + N(0, σ²I)`` with σ from the analytic Gaussian mechanism (Balle & Wang
    2018): (ε, δ)-DP for ℓ2 sensitivity Δ.

    Parameters are those of :func:`laplace_mechanism` plus ``delta`` in (0, 1); ``sensitivity``
    is the ℓ2 sensitivity.  ``exact=True`` samples N(0, 1) exactly (Karney 2016) and rounds the
    release correctly; ``exact=False`` uses numpy's float normal sampler (idealized)."""
    values, restore = _as_values(value)
    sens = check_positive(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    d = check_delta(delta, positive=True)
    sigma = calibrate_gaussian_sigma(sens, eps, d)
    src = as_source(rng)
    sampler = ("exact continuous normal from uniform bits (Karney 2016), correctly rounded"
               if exact else "numpy float normal (idealized)")
    event = gaussian_event(sens, sigma, epsilon=eps, delta=d, dimension=max(values.size, 1),
                           sensitivity_source=sensitivity_source, label=label,
                           idealized=not exact, sampler=_sampler_text(sampler, src))
    event = replace(event, seeded=src.seeded)
    if accountant is not None:
        accountant.record(event)
    if exact:
        noisy = gaussian_floats(values, sigma, src)
    else:
        noisy = values + sigma * float_generator(src).standard_normal(size=values.shape)
    out = restore(noisy)
    return Release(out, event) if return_event else out


def gaussian_noise_vector(shape, sigma, rng=None, *, namespace: str = "numpy", device=None,
                          dtype=None):
    """N(0, σ²) noise of the given shape from float samplers — the fast path of gradient
    methods (numpy, or torch on any device).  Its numerics are *idealized*: record the matching
    event with ``idealized=True`` (e.g. ``subsampled_gaussian_event(...)``, whose default is
    idealized) before calling this.

    ``rng=None`` seeds the float generator with 256 bits (numpy) / 63 bits (torch) of OS
    entropy; a seed or Generator makes it reproducible."""
    sig = check_positive(sigma, "sigma")
    src = as_source(rng)
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
    if namespace == "numpy":
        out = sig * float_generator(src).standard_normal(size=shape)
        return out if dtype is None else out.astype(dtype)
    if namespace == "torch":
        import torch

        if isinstance(src, GeneratorSource):
            seed = int(src.generator.integers(0, 2**63 - 1))
        else:
            seed = int.from_bytes(os.urandom(8), "little") & (2**63 - 1)
        gen = torch.Generator(device=device if device is not None else "cpu")
        gen.manual_seed(seed)
        out = torch.randn(shape, generator=gen, device=device,
                          dtype=dtype if dtype is not None else torch.float32)
        return out * sig
    raise InvalidInputError("namespace", namespace, "choose 'numpy' or 'torch'")


# ----------------------------------------------------------------------------------------------
# Selection: exponential mechanism and permute-and-flip


def score_grid(scores, sensitivity, epsilon, monotone: bool = False) -> dict:
    """The exact integer problem the selection samplers solve.

    Returns a dict with ``gap`` (int64, r_max − r_i where r_i = rint(u_i/g)), ``grid`` g,
    ``grid_sensitivity`` Δ_g = ⌊Δ/g⌋ + 1, ``eps_num``/``eps_den`` (ε' = eps_num/eps_den ≤ ε) and
    ``den`` such that candidate i has weight exp(−eps_num·gap_i/den)."""
    u = _as_scores(scores)
    sens = check_positive(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    grid = 2.0 ** (math.floor(math.log2(sens)) - _GRID_BITS)
    scaled = u / grid  # exact: grid is a power of two
    if np.abs(scaled).max() >= 2.0 ** 52:
        raise InvalidInputError("scores", float(np.abs(u).max()),
                                "scores exceed 2^42 × sensitivity; shift or rescale them")
    r = np.rint(scaled).astype(np.int64)
    gap = r.max() - r
    grid_sens = int(math.floor(sens / grid)) + 1
    k = min(36, max(0, _EPS_BITS - math.floor(math.log2(eps))))
    eps_num = int(math.floor(Fraction(eps) * 2**k))
    eps_den = 2**k
    den = eps_den * grid_sens * (1 if monotone else 2)
    return {"gap": gap, "grid": grid, "grid_sensitivity": grid_sens, "eps_num": eps_num,
            "eps_den": eps_den, "den": den, "epsilon_used": eps_num / eps_den}


def _grid_text(g: dict) -> str:
    return (f"scores rounded to the grid {g['grid']:.3g} (sensitivity {g['grid_sensitivity']} "
            f"steps), ε' = {g['epsilon_used']:.6g}")


def exponential_mechanism(scores, sensitivity, epsilon, rng=None, *, monotone: bool = False,
                          size=None, accountant=None,
                          sensitivity_source: str = "declared by the caller", label: str = "",
                          return_event: bool = False):
    """Pick index i with probability ∝ exp(ε·u_i/(2Δ)) — scores are *maximized*.  ε-DP when every
    u_i changes by at most Δ between neighbouring datasets (McSherry & Talwar 2007).

    Parameters
    ----------
    scores : 1-D array-like (numpy or torch, any device)
        u_i for every candidate; millions are fine (one vectorized pass on average).
    sensitivity : float
        Δ = max over neighbours and candidates of |u_i(D) − u_i(D')|.
    epsilon : float
        ε > 0.
    monotone : bool
        True when, between any neighbours, all scores move in the same direction; then the
        factor 2 is dropped (P ∝ exp(ε·u_i/Δ)).
    size : int, optional
        Draw ``size`` independent indices (an int64 array); the event counts ``size`` releases.
    rng, accountant, sensitivity_source, label, return_event
        As in :func:`laplace_mechanism`.

    Returns
    -------
    int or numpy.ndarray
        The chosen index (or ``size`` indices).

    Notes
    -----
    Sampled exactly: scores go to a dyadic grid (see :func:`score_grid`), candidates are
    proposed uniformly and accepted with probability exp(−γ_i), γ_i rational, by exact Bernoulli
    draws (Canonne, Kamath & Steinke 2020).  Never normalises exp(scores).
    """
    g = score_grid(scores, sensitivity, epsilon, monotone)
    count = 1 if size is None else check_count(size, "size")
    src = as_source(rng)
    event = exponential_event(sensitivity, epsilon, monotone=monotone,
                              n_candidates=g["gap"].size, sensitivity_source=sensitivity_source,
                              label=label, count=count)
    event = replace(event, seeded=src.seeded,
                    sampler=_sampler_text(event.sampler + "; " + _grid_text(g), src))
    if accountant is not None:
        accountant.record(event)
    if size is None:
        idx = exponential_mechanism_index(g["gap"], g["eps_num"], g["den"], src)
    else:
        idx = exponential_mechanism_indices(g["gap"], g["eps_num"], g["den"], src, count)
    return Release(idx, event) if return_event else idx


def permute_and_flip(scores, sensitivity, epsilon, rng=None, *, size=None, accountant=None,
                     sensitivity_source: str = "declared by the caller", label: str = "",
                     return_event: bool = False):
    """Permute-and-flip (McKenna & Sheldon 2020): ε-DP selection of a high score, never worse in
    expected score than the exponential mechanism.  Visits candidates in a uniformly random
    order and stops at the first accepted with probability exp(ε(u_i − u_max)/(2Δ)).
    Identical in distribution to report-noisy-max with Exponential(2Δ/ε) noise (Ding et al.
    2021).  Arguments as in :func:`exponential_mechanism` (``size`` draws a batch; candidates ×
    size keys are held in memory); returns the chosen index."""
    g = score_grid(scores, sensitivity, epsilon, monotone=False)
    count = 1 if size is None else check_count(size, "size")
    src = as_source(rng)
    event = permute_and_flip_event(sensitivity, epsilon, n_candidates=g["gap"].size,
                                   sensitivity_source=sensitivity_source, label=label,
                                   count=count)
    event = replace(event, seeded=src.seeded,
                    sampler=_sampler_text(event.sampler + "; " + _grid_text(g), src))
    if accountant is not None:
        accountant.record(event)
    if size is None:
        idx = permute_and_flip_index(g["gap"], g["eps_num"], g["den"], src)
    else:
        idx = permute_and_flip_indices(g["gap"], g["eps_num"], g["den"], src, count)
    return Release(idx, event) if return_event else idx


def report_noisy_max(scores, sensitivity, epsilon, rng=None, *, noise: str = "exponential",
                     **kwargs):
    """Report-noisy-max: ``argmax_i u_i + Z_i``.

    ``noise="exponential"`` (Z_i ~ Exponential(2Δ/ε)) is permute-and-flip (Ding et al. 2021);
    ``noise="gumbel"`` (Z_i ~ Gumbel(2Δ/ε)) is the exponential mechanism (the Gumbel-max trick).
    Both are sampled exactly through those equivalences.  Other keyword arguments as in
    :func:`exponential_mechanism`."""
    if noise == "exponential":
        return permute_and_flip(scores, sensitivity, epsilon, rng, **kwargs)
    if noise == "gumbel":
        return exponential_mechanism(scores, sensitivity, epsilon, rng, **kwargs)
    raise InvalidInputError("noise", noise, "choose 'exponential' (permute-and-flip) or "
                            "'gumbel' (exponential mechanism)")


def exponential_mechanism_probabilities(scores, sensitivity, epsilon, monotone=False
                                        ) -> np.ndarray:
    """The exact output distribution of :func:`exponential_mechanism` (computed in floats)."""
    g = score_grid(scores, sensitivity, epsilon, monotone)
    logw = -g["eps_num"] * g["gap"].astype(np.float64) / g["den"]
    w = np.exp(logw - logw.max())
    return w / w.sum()


def permute_and_flip_probabilities(scores, sensitivity, epsilon) -> np.ndarray:
    """The exact output distribution of :func:`permute_and_flip`:
    p_i = a_i ∫₀¹ Π_{j≠i}(1 − a_j t) dt with a_i = exp(−γ_i) (a uniformly random order is the
    order of i.i.d. uniform arrival times).  The integrand is a polynomial of degree m − 1, so
    Gauss–Legendre quadrature with ⌈m/2⌉ + 1 nodes is exact; every factor lies in [0, 1] at the
    nodes, so the products are computed without the cancellation of expanding the polynomial
    (which loses all precision near 100 candidates)."""
    g = score_grid(scores, sensitivity, epsilon)
    a = np.exp(-g["eps_num"] * g["gap"].astype(np.float64) / g["den"])
    if a.size > 5000:
        raise InvalidInputError("scores", a.size, "exact probabilities need ≤ 5000 candidates")
    nodes, weights = np.polynomial.legendre.leggauss(a.size // 2 + 2)
    t, w = (nodes + 1.0) / 2.0, weights / 2.0                 # nodes in (0, 1), strictly
    logs = np.log1p(-np.outer(a, t))                          # (m, N): log(1 − a_j t_k)
    others = np.exp(logs.sum(axis=0)[None, :] - logs)         # Π_{j≠i}(1 − a_j t_k)
    return a * (others @ w)

"""Accounting events: what one release (or T identical releases) costs, and why.

An :class:`Event` is a frozen record of a release: the mechanism, its sensitivity and where that
number came from, the noise scale, the theorem that turns them into a privacy guarantee, the
number of identical releases it stands for (``count``), and whether the noise was sampled with
idealized floating-point numerics.  The accountant composes events; the certificate prints them.
Events are built *before* any noise is drawn (by the mechanism functions, or by a backend for its
planned releases) so that a budget can refuse them first.

Kinds, as the accountant sees them:

``"pure"``
    ε-DP (Laplace, exponential mechanism, permute-and-flip, or a declared pure mechanism).
``"gaussian"``
    ``value + N(0, σ²I)`` with ℓ2 sensitivity Δ: the exact analytic-Gaussian curve of μ = Δ/σ.
``"subsampled_gaussian"``
    Poisson sampling with rate q, then a sum of per-row contributions of ℓ2 norm ≤ C plus
    N(0, σ²I).  ``neighbouring="replace"`` (privfair's relations: one row, or one row's sensitive
    attribute, changes) or ``"add_remove"`` (the relation of Abadi et al. and Opacus).
``"approximate"``
    A declared (ε, δ)-DP mechanism (e.g. an approximate LOPT oracle).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from ..errors import InvalidPrivacyError
from ._validate import check_count, check_delta, check_epsilon, check_positive, check_rate

__all__ = [
    "Event",
    "Release",
    "THEOREMS",
    "laplace_event",
    "gaussian_event",
    "exponential_event",
    "permute_and_flip_event",
    "subsampled_gaussian_event",
    "pure_event",
    "approximate_event",
]

THEOREMS = {
    "laplace": "Laplace mechanism, ε = Δ₁/b (Dwork, McSherry, Nissim & Smith 2006; "
               "Dwork & Roth 2014, Thm 3.6)",
    "gaussian": "analytic Gaussian mechanism, (ε, δ) iff Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) ≤ δ "
                "(Balle & Wang 2018, Thm 8)",
    "exponential": "exponential mechanism, P[i] ∝ exp(ε·u_i/(2Δ)) is ε-DP (McSherry & Talwar "
                   "2007; [A] Thm 3.5)",
    "exponential_monotone": "exponential mechanism for monotone utilities, P[i] ∝ exp(ε·u_i/Δ) "
                            "is ε-DP (McSherry & Talwar 2007)",
    "permute_and_flip": "permute-and-flip is ε-DP (McKenna & Sheldon 2020, Thm 1); it is "
                        "report-noisy-max with exponential noise (Ding et al. 2021)",
    "subsampled_gaussian": "Poisson-subsampled Gaussian mechanism (Abadi et al. 2016; Mironov, "
                           "Talwar & Zhang 2019; substitution pair: Zhu, Dong & Wang 2022)",
    "pure": "declared ε-DP mechanism",
    "approximate": "declared (ε, δ)-DP mechanism",
}

_PURE_MECHANISMS = {"laplace", "exponential", "permute_and_flip", "pure"}
_NEIGHBOURING = ("replace", "add_remove")


@dataclass(frozen=True)
class Event:
    """One release, or ``count`` identical releases, and the facts that bound its privacy loss.

    Attributes
    ----------
    mechanism : str
        ``"laplace"``, ``"gaussian"``, ``"exponential"``, ``"permute_and_flip"``,
        ``"subsampled_gaussian"``, ``"pure"`` or ``"approximate"``.
    epsilon, delta : float or None
        The release's own (ε, δ) guarantee when it has one (pure mechanisms; a Gaussian
        calibrated for a target).  Gaussian events without a target leave ``epsilon=None``.
    sensitivity : float or None
        Δ: ℓ1 for Laplace, ℓ2 for Gaussian, sup-norm of the score change for selection
        mechanisms, the per-row norm bound C for subsampled Gaussians.
    norm : str or None
        ``"l1"``, ``"l2"``, ``"score"`` (sup over candidates) or ``"per-row l2"``.
    sensitivity_source : str
        Where Δ comes from (the compiler's lemma, "declared by the caller", ...).
    scale : float or None
        Laplace b, Gaussian σ, or the exponential mechanism's temperature 2Δ/ε.
    theorem : str
        The result that proves the guarantee.
    idealized : bool
        True when the noise was (or will be) drawn with floating-point samplers whose privacy
        is idealized (the fast vectorized path).
    count : int
        Number of identical releases this event stands for (e.g. T steps of DP-SGD).
    sampling_rate : float or None
        Poisson sampling rate q of a subsampled Gaussian.
    neighbouring : str
        ``"replace"`` or ``"add_remove"``; only subsampled events depend on it.
    dimension : int or None
        Number of coordinates released (Laplace: > 1 makes the accountant use the ε-DP bound
        rather than the one-dimensional Laplace curve).
    label : str
        Free text (e.g. "iteration gradients").
    sampler : str
        How the noise is drawn.
    seeded : bool
        True when the noise came from a seeded (reproducible, non-cryptographic) generator.
    """

    mechanism: str
    epsilon: float | None = None
    delta: float = 0.0
    sensitivity: float | None = None
    norm: str | None = None
    sensitivity_source: str = "declared by the caller"
    scale: float | None = None
    theorem: str = ""
    idealized: bool = False
    count: int = 1
    sampling_rate: float | None = None
    neighbouring: str = "replace"
    dimension: int | None = None
    label: str = ""
    sampler: str = ""
    seeded: bool = False

    @property
    def kind(self) -> str:
        """``"pure"``, ``"gaussian"``, ``"subsampled_gaussian"`` or ``"approximate"``."""
        if self.mechanism in _PURE_MECHANISMS:
            return "pure"
        return self.mechanism

    @property
    def noise_multiplier(self) -> float | None:
        """σ/Δ for Gaussian events (σ/C for subsampled ones)."""
        if self.kind in ("gaussian", "subsampled_gaussian"):
            return self.scale / self.sensitivity
        return None

    def with_count(self, count: int) -> "Event":
        """The same event repeated ``count`` times."""
        return replace(self, count=check_count(count, "count"))

    def key(self) -> tuple:
        """Fields that determine the privacy curve (events with equal keys compose as one)."""
        return (self.kind, self.epsilon if self.kind in ("pure", "approximate") else None,
                self.delta if self.kind == "approximate" else 0.0,
                self.noise_multiplier, self.sampling_rate, self.neighbouring,
                self.mechanism == "laplace" and (self.dimension or 1) == 1)

    def as_dict(self) -> dict:
        """Plain dict of the fields (for JSON)."""
        return asdict(self)

    def describe(self) -> str:
        """One line: mechanism, sensitivity, scale, cost."""
        parts = [self.mechanism]
        if self.count > 1:
            parts[0] += f" ×{self.count}"
        if self.sensitivity is not None:
            parts.append(f"Δ={fmt_number(self.sensitivity)} ({self.norm}; {self.sensitivity_source})")
        if self.scale is not None:
            name = {"laplace": "b", "gaussian": "σ", "subsampled_gaussian": "σ"}.get(
                self.mechanism, "temperature")
            parts.append(f"{name}={fmt_number(self.scale)}")
        if self.sampling_rate is not None:
            parts.append(f"q={fmt_number(self.sampling_rate)} ({self.neighbouring})")
        if self.epsilon is not None:
            cost = f"ε={fmt_number(self.epsilon)}"
            if self.delta:
                cost += f", δ={fmt_number(self.delta)}"
            parts.append(cost + (" each" if self.count > 1 else ""))
        if self.idealized:
            parts.append("idealized float noise")
        return "; ".join(parts)


@dataclass(frozen=True)
class Release:
    """A released value (or index) with the event that accounts for it."""

    value: object
    event: Event


def fmt_number(x) -> str:
    """A number for certificates and reports: six significant digits, ``∞``, and ``—`` for None."""
    if x is None:
        return "—"
    if isinstance(x, float):
        if math.isinf(x):
            return "∞"
        return f"{x:.6g}"
    return str(x)


def _common(sensitivity_source, label, count):
    if not isinstance(sensitivity_source, str) or not sensitivity_source.strip():
        raise InvalidPrivacyError(
            "sensitivity_source", sensitivity_source,
            "say where the sensitivity comes from, e.g. 'compiler: Lemma 5.1, ‖Δℓ‖₁ ≤ 2/n'")
    return check_count(count, "count")


def laplace_event(sensitivity, epsilon, *, scale=None, dimension=1,
                  sensitivity_source="declared by the caller", label="", count=1,
                  idealized=False, sampler=None) -> Event:
    """Event of ``value + Laplace(b)^d`` with ℓ1 sensitivity Δ and ε = Δ/b.

    ``scale`` defaults to Δ/ε; if given it must satisfy Δ/b ≤ ε."""
    sens = check_positive(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    count = _common(sensitivity_source, label, count)
    b = sens / eps if scale is None else check_positive(scale, "scale")
    if scale is not None and sens / b > eps * (1 + 1e-12):
        raise InvalidPrivacyError("scale", scale, f"Laplace scale must be ≥ Δ/ε = {sens / eps:g}")
    dim = check_count(dimension, "dimension")
    if sampler is None:
        sampler = ("float Laplace (idealized)" if idealized
                   else "exact continuous Laplace, correctly rounded")
    return Event("laplace", eps, 0.0, sens, "l1", sensitivity_source, b, THEOREMS["laplace"],
                 bool(idealized), count, None, "replace", dim, label, sampler)


def gaussian_event(sensitivity, sigma, *, epsilon=None, delta=None, dimension=None,
                   sensitivity_source="declared by the caller", label="", count=1,
                   idealized=False, sampler=None) -> Event:
    """Event of ``value + N(0, σ²I)`` with ℓ2 sensitivity Δ.

    ``epsilon``/``delta``, when given, are the target it was calibrated for; they are checked
    against the analytic-Gaussian condition."""
    from .gaussian import gaussian_delta

    sens = check_positive(sensitivity, "sensitivity")
    sig = check_positive(sigma, "sigma")
    count = _common(sensitivity_source, label, count)
    eps = None if epsilon is None else check_epsilon(epsilon)
    d = 0.0 if delta is None else check_delta(delta, positive=eps is not None)
    if (eps is None) != (delta is None):
        raise InvalidPrivacyError("delta" if eps is not None else "epsilon", None,
                                  "give both epsilon and delta, or neither")
    if eps is not None and gaussian_delta(eps, sens / sig) > d:
        raise InvalidPrivacyError("sigma", sigma, f"σ={sig:g} does not give ({eps:g}, {d:g})-DP "
                                  "at this sensitivity; use calibrate_gaussian_sigma")
    dim = None if dimension is None else check_count(dimension, "dimension")
    if sampler is None:
        sampler = ("vectorized float Gaussian (idealized)" if idealized
                   else "exact continuous normal (Karney 2016), correctly rounded")
    return Event("gaussian", eps, d, sens, "l2", sensitivity_source, sig, THEOREMS["gaussian"],
                 bool(idealized), count, None, "replace", dim, label, sampler)


def exponential_event(sensitivity, epsilon, *, monotone=False, n_candidates=None,
                      sensitivity_source="declared by the caller", label="", count=1,
                      idealized=False, sampler="exact (rejection with Bernoulli(exp(-γ)), "
                                                "scores on a dyadic grid)") -> Event:
    """Event of the exponential mechanism with score sensitivity Δ (sup over candidates)."""
    sens = check_positive(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    count = _common(sensitivity_source, label, count)
    temperature = (1.0 if monotone else 2.0) * sens / eps
    theorem = THEOREMS["exponential_monotone" if monotone else "exponential"]
    dim = None if n_candidates is None else check_count(n_candidates, "n_candidates")
    return Event("exponential", eps, 0.0, sens, "score", sensitivity_source, temperature,
                 theorem, bool(idealized), count, None, "replace", dim, label, sampler)


def permute_and_flip_event(sensitivity, epsilon, *, n_candidates=None,
                           sensitivity_source="declared by the caller", label="", count=1,
                           sampler="exact (uniform permutation, Bernoulli(exp(-γ)), "
                                   "scores on a dyadic grid)") -> Event:
    """Event of permute-and-flip (≡ report-noisy-max with exponential noise)."""
    sens = check_positive(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    count = _common(sensitivity_source, label, count)
    dim = None if n_candidates is None else check_count(n_candidates, "n_candidates")
    return Event("permute_and_flip", eps, 0.0, sens, "score", sensitivity_source, 2 * sens / eps,
                 THEOREMS["permute_and_flip"], False, count, None, "replace", dim, label,
                 sampler)


def subsampled_gaussian_event(sigma, clip, sampling_rate, *, count=1, neighbouring="replace",
                              sensitivity_source="declared by the caller", label="",
                              idealized=True, sampler="vectorized float Gaussian (idealized)"
                              ) -> Event:
    """Event of ``count`` steps of: Poisson-sample rows with rate q, sum their contributions
    (each of ℓ2 norm ≤ ``clip``), add N(0, σ²I).

    ``neighbouring="replace"`` is the relation of ``DP(protect="sensitive"|"row")``: one row's
    contribution changes (dominating pair qN(−C)+(1−q)N(0) vs qN(C)+(1−q)N(0)); only the PLD
    accountant supports it.  ``"add_remove"`` is Abadi et al.'s relation (RDP and PLD)."""
    sig = check_positive(sigma, "sigma")
    c = check_positive(clip, "clip")
    q = check_rate(sampling_rate, "sampling_rate")
    count = _common(sensitivity_source, label, count)
    if neighbouring not in _NEIGHBOURING:
        raise InvalidPrivacyError("neighbouring", neighbouring, f"choose one of {_NEIGHBOURING}")
    return Event("subsampled_gaussian", None, 0.0, c, "per-row l2", sensitivity_source, sig,
                 THEOREMS["subsampled_gaussian"], bool(idealized), count, q, neighbouring,
                 None, label, sampler)


def pure_event(epsilon, *, theorem, sensitivity=None, norm=None, scale=None,
               sensitivity_source="declared by the caller", label="", count=1,
               idealized=False, sampler="") -> Event:
    """A declared ε-DP release (cite the theorem)."""
    eps = check_epsilon(epsilon)
    count = _common(sensitivity_source, label, count)
    if not theorem:
        raise InvalidPrivacyError("theorem", theorem, "cite the result that makes it ε-DP")
    return Event("pure", eps, 0.0, None if sensitivity is None else check_positive(
        sensitivity, "sensitivity"), norm, sensitivity_source, scale, theorem, bool(idealized),
        count, None, "replace", None, label, sampler)


def approximate_event(epsilon, delta, *, theorem, sensitivity=None, norm=None, scale=None,
                      sensitivity_source="declared by the caller", label="", count=1,
                      idealized=False, sampler="") -> Event:
    """A declared (ε, δ)-DP release (cite the theorem)."""
    eps = check_epsilon(epsilon)
    d = check_delta(delta)
    count = _common(sensitivity_source, label, count)
    if not theorem:
        raise InvalidPrivacyError("theorem", theorem, "cite the result that makes it (ε, δ)-DP")
    mech = "approximate" if d > 0 else "pure"
    return Event(mech, eps, d, None if sensitivity is None else check_positive(
        sensitivity, "sensitivity"), norm, sensitivity_source, scale, theorem, bool(idealized),
        count, None, "replace", None, label, sampler)

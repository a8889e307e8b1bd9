"""Draws whose sensitivity is known only at run time, from public quantities (issue #17).

Several loss-vector methods release, at every step t, a statistic whose sensitivity Δ_t is a
function of *public* weights r_t that are themselves computed from earlier releases (LOPT's
oracle scores −r_t·ℓ(c, D), Frank–Wolfe's linear minimisation, the oracle learner's best
responses and its least-squares statistic).  The privacy of each step is fixed at plan time —
ε' per selection, ε' per Laplace release, a noise multiplier σ/Δ per Gaussian step — and that is
what the scheduled :class:`~privfair.privacy.Event` records (with a planned *upper bound* on
Δ_t as its sensitivity); the noise actually drawn is scaled to the smaller, valid Δ_t.

Each function draws through :meth:`privfair.privacy.Draws.custom`, so the scheduled event is
recorded before the first draw, draws are counted, and the audit's
:func:`~privfair.privacy.reduced_noise` applies: ``custom`` hands over the event's scale times
the enclosing multiplier, and the ratio of the two is the multiplier applied here.
"""

from __future__ import annotations

import numpy as np

__all__ = ["select", "laplace", "gaussian_noise", "whole_epsilon"]


def whole_epsilon(events_at, privacy, spent=()) -> float:
    """The ε of a plan's single release: the whole ``privacy.epsilon`` when nothing was spent
    (one pure event composes to exactly its own ε — the closed form is exact), else the largest
    that fits beside ``spent`` by :func:`privfair.privacy.calibrate`."""
    from privfair.privacy import calibrate

    if not spent:
        return privacy.epsilon
    return calibrate(events_at, privacy.epsilon, privacy.delta, spent=spent,
                     hi=privacy.epsilon)


def _multiplier(draws, name, scale) -> float:
    """``scale`` (what ``custom`` passed) ÷ the scheduled event's own scale: 1 in production,
    the audit's factor inside :func:`~privfair.privacy.reduced_noise`."""
    return scale / draws.schedule[name].event.scale


def select(draws, name: str, scores, sensitivity: float) -> int:
    """argmax of ``scores`` by the exponential mechanism at the scheduled ε and the run-time
    sensitivity ``sensitivity`` (> 0, public; a valid bound for these scores).

    ``scores`` may be numpy or torch (any device); sampling is exact
    (:func:`privfair.privacy.exponential_mechanism`)."""
    from privfair.privacy import exponential_mechanism

    eps = draws.schedule[name].event.epsilon

    def draw(source, scale):
        k = _multiplier(draws, name, scale)
        return int(exponential_mechanism(scores, sensitivity * k, eps, source))
    return int(draws.custom(name, draw))


def laplace(draws, name: str, value, sensitivity: float) -> np.ndarray:
    """``value`` + Laplace(Δ_t/ε) per coordinate (exact sampler), ε the scheduled event's, Δ_t =
    ``sensitivity`` (> 0, public)."""
    from privfair.privacy import laplace_mechanism

    eps = draws.schedule[name].event.epsilon

    def draw(source, scale):
        k = _multiplier(draws, name, scale)
        return laplace_mechanism(np.asarray(value, dtype=float), sensitivity * k, eps, source)
    return np.asarray(draws.custom(name, draw), dtype=float)


def gaussian_noise(draws, name: str, shape, sensitivity: float) -> np.ndarray:
    """N(0, (z·Δ_t)²) noise of ``shape`` (numpy float sampler, idealized), z = σ/Δ of the
    scheduled Gaussian event, Δ_t = ``sensitivity`` — one of the event's ``count`` steps."""
    ev = draws.schedule[name].event
    return np.asarray(draws.gaussian_noise(name, shape), dtype=float) * (sensitivity /
                                                                          ev.sensitivity)

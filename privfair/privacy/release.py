"""One release plumbing: calibrate once at plan time, draw every noise through its own event.

The two halves of a private release are its *privacy map* (the :class:`Event` the accountant
composes) and its *noise* (the draw).  Written by hand they drift apart: a σ computed in one
place, an event recorded with another, a test-only multiplier threaded through production
signatures.  This module pairs them, as OpenDP pairs a measurement with its privacy map:

* :func:`calibrate` — **the** calibration function: the largest scale x (a per-release ε, a
  μ, 1/σ, ...) whose events ``events_at(x)``, composed with what was already ``spent``, stay
  within (ε, δ) by the accountant's own rules.  Every backend fits its budget through it.
* :class:`Scheduled` — one planned release: a name and the :class:`Event` fixed at plan time
  (its scale is the noise's scale; its ``count`` how many draws it covers).
* :class:`Schedule` — the plan's releases, checked once against (ε, δ) and the spent events;
  a plan is final, ``run`` never re-calibrates.
* :class:`Draws` — the only door to noise at run time (``schedule.open(accountant, rng)``):
  the first draw of a release records its event (the accountant may refuse it, and then
  nothing is drawn); a release drawn more often than its ``count`` is an internal error.

The audit's reduced-noise control is not a parameter of production code: the audit runs a
solve inside :func:`reduced_noise` (a context variable), under which every :class:`Draws`
draws its noise at ``multiplier`` × the scale its recorded event claims.

Examples
--------
>>> from privfair.privacy import laplace_event, Accountant
>>> x = calibrate(lambda e: [laplace_event(1.0, e, count=3)], 1.0, 0.0)
>>> round(3 * x, 6) <= 1.0
True
>>> sched = Schedule([Scheduled("counts", laplace_event(1.0, x, count=3))], 1.0, 0.0)
>>> draws = sched.open(Accountant(limit=(1.0, 0.0)), rng=0)
>>> noisy = draws.laplace("counts", [10.0, 20.0])
>>> len(draws.accountant.events)
1
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np

from ..errors import InvalidPrivacyError
from .exact import gaussian_floats, laplace_floats
from .events import Event

__all__ = ["calibrate", "FAST_RULES", "Scheduled", "Schedule", "Draws", "reduced_noise",
           "noise_multiplier"]

#: the closed-form rules, tried first; PLD and RDP refine the answer in a short second pass
FAST_RULES = ("basic", "advanced", "optimal", "gdp")

_CACHE: dict = {}


#: memo of :func:`_fits` — events are frozen, public values, and a bisection is deterministic,
#: so planning the same problem again (a report, a Pareto sweep, ``plan`` then ``solve``) asks
#: the same questions; a PLD answer costs ~0.5 s.  Bounded: cleared when full.
_FITS: dict = {}
_FITS_MAX = 8192


#: the PLD interval of :func:`calibrate`'s search when no closed form applies: 10× the
#: accountant's 10⁻⁴, ~10× cheaper a check, and still an upper bound (dp-accounting's
#: pessimistic PLD is one at any interval); the answer is then checked and refined at the
#: accountant's own interval
COARSE_PLD = 1e-3


def _fits(events, epsilon, delta, rules, disc=None) -> bool:
    from .accountant import Accountant

    try:
        key = (tuple(events), float(epsilon), float(delta),
               None if rules is None else tuple(rules), disc)
        hash(key)
    except TypeError:               # an unhashable field: no memo
        key = None
    if key is not None and key in _FITS:
        return _FITS[key]
    acc = (Accountant(delta=delta or None, rules=rules) if disc is None else
           Accountant(delta=delta or None, rules=rules, pld_discretization=disc))
    acc.extend(events)
    try:
        ok = acc.total(delta or None).epsilon <= epsilon * (1 - 1e-9)
    except InvalidPrivacyError:     # no rule proves it: it does not fit
        ok = False
    if key is not None:
        if len(_FITS) >= _FITS_MAX:
            _FITS.clear()
        _FITS[key] = ok
    return ok


def _fits_any(events, epsilon, delta) -> bool:
    """Does some rule prove the composition ≤ (ε, δ)?  Cheapest rules first, stopping at the
    first that proves it (as :meth:`Accountant.would_exceed` does): a plan at a huge ε is
    checked by basic composition, not by a slow PLD."""
    for rule in ("basic", "gdp", "optimal", "advanced", "rdp", "pld"):
        if _fits(events, epsilon, delta, (rule,)):
            return True
    return False


def calibrate(events_at: Callable[[float], Sequence[Event]], epsilon: float, delta: float, *,
              spent: Sequence[Event] = (), hi: float | None = None, lo: float | None = None,
              rules: Sequence[str] | None = None, steps: int = 26, key=None) -> float:
    """The largest x in (0, ``hi``] with total(spent + events_at(x)) ≤ (ε, δ).

    ``events_at`` must be monotone (larger x, more privacy loss).  Bisection on log x with the
    fast closed-form rules (:data:`FAST_RULES`), then — unless ``rules`` is given — a short
    bisection above that answer with every rule (PLD and RDP are tighter for Gaussian and
    subsampled releases).  Every returned x has been *checked*: the accountant proves
    total ≤ ε·(1 − 1e-9) at δ, so a plan built from it is never refused by its own accountant.

    Parameters
    ----------
    events_at : callable
        x ↦ the events of the releases at scale x.
    epsilon, delta : float
        The cap (usually the accountant's limit, which already counts ``spent``).
    spent : sequence of Event
        Events already recorded (composed with the new ones).
    hi, lo : float, optional
        Upper end (default ε); ``lo`` a value known to fit (skips the bracketing).
    rules : sequence of str, optional
        Only these rules (one pass).
    key : hashable, optional
        A *public* cache key (names, caps, counts): the same fit is not recomputed.

    Raises
    ------
    InvalidPrivacyError
        When no positive x down to 1e-12·hi fits (ε too small for these releases) — a
        plan-time, public refusal.
    """
    ck = None if key is None else (key, epsilon, delta, tuple(spent), hi, lo,
                                   None if rules is None else tuple(rules), steps)
    if ck is not None and ck in _CACHE:
        return _CACHE[ck]
    spent = list(spent)
    first = FAST_RULES if rules is None else tuple(rules)

    def fits(x, rs, disc=None):
        return _fits(spent + list(events_at(x)), epsilon, delta, rs, disc)

    hi = float(epsilon if hi is None else hi)
    try:
        x = _bisect(lambda v: fits(v, first), lo, hi, steps, epsilon)
    except InvalidPrivacyError:
        if rules is not None:
            raise
        # no closed form applies (e.g. subsampled Gaussians): every rule from the start.  Each
        # step is a PLD (~0.2–0.5 s at the accountant's interval), so the bracket and 12
        # halvings run at the coarse interval (~10× cheaper, still an upper bound), and the
        # answer is then checked at the accountant's interval and climbed from (PLD is tighter
        # there): x within 0.7% of the largest that fits — and always one that fits
        x = _every_rule(fits, lo, hi, min(steps, 12), epsilon)
        if ck is not None:
            _CACHE[ck] = x
        return x
    if rules is None and x < hi:    # refine above the closed-form answer with every rule
        x = _every_rule(fits, x, min(hi, 1.6 * x), 8, epsilon)
    if ck is not None:
        _CACHE[ck] = x
    return x


def _every_rule(fits, lo, hi, steps, epsilon):
    """Bisection with every rule: at :data:`COARSE_PLD` first, then checked at the accountant's
    own interval and climbed from there (:func:`_climb`); the slow way when the coarse answer
    does not fit at the fine interval (PLD's pessimism is not monotone in the interval)."""
    top, given, start = hi, lo, lo
    if start is None:   # bracket at 10× coarser still: far above the answer the loss range
        start = hi      # is wide and a PLD costs seconds even at COARSE_PLD
        while not fits(start, None, 10 * COARSE_PLD):
            start /= 4
            if start < 1e-12 * hi:
                start = None    # _bisect below brackets again and refuses with its message
                break
        else:
            if start < hi and fits(start, None, COARSE_PLD):
                hi = min(hi, 4 * start)
            else:
                start = None
    x = _bisect(lambda v: fits(v, None, COARSE_PLD), start, hi, steps, epsilon)
    if fits(x, None):
        return _climb(lambda v: fits(v, None), x, top)
    return _bisect(lambda v: fits(v, None), given, top, steps, epsilon)


def _climb(fits, x, hi, factor=1.25, steps=5):
    """The largest checked value above ``x`` (which fits): ×``factor`` while it fits (at most
    eight times), then ``steps`` halvings (on log scale) of the last ×``factor`` bracket."""
    for _ in range(8):
        if x * factor > hi or not fits(x * factor):
            break
        x *= factor
    return _bisect(fits, x, min(hi, x * factor), steps, None)


def _bisect(fits, lo, hi, steps, epsilon):
    if fits(hi):
        return hi
    if lo is None:
        lo = hi
        while not fits(lo):
            lo /= 4
            if lo < 1e-12 * hi:
                raise InvalidPrivacyError(
                    "epsilon", epsilon, "no positive noise scale fits these releases in the "
                    "budget: ε is too small for them (nothing was spent)")
    a, b = math.log(lo), math.log(hi)
    for _ in range(steps):
        m = 0.5 * (a + b)
        a, b = (m, b) if fits(math.exp(m)) else (a, m)
    return math.exp(a)


# ------------------------------------------------------------------------- the schedule
@dataclass(frozen=True)
class Scheduled:
    """One planned release: ``name`` and its :class:`Event` (scale = the noise's scale;
    ``count`` = the number of draws it covers).  ``exact`` draws Laplace/Gaussian values with
    the exact samplers (low-dimensional releases); otherwise numpy's float samplers
    (the event must then say ``idealized``)."""

    name: str
    event: Event
    exact: bool = False


class Schedule:
    """The releases of a plan, fitted once and checked against (ε, δ) and ``spent``.

    Raises ``InvalidPrivacyError`` at construction (plan time: public, nothing drawn) when the
    releases do not fit; :meth:`events` is what the accountant will see."""

    def __init__(self, releases: Sequence[Scheduled], epsilon: float, delta: float,
                 spent: Sequence[Event] = ()):
        names = [r.name for r in releases]
        if len(set(names)) != len(names):
            raise ValueError(f"internal error: release names repeat in {names}")
        self.releases = {r.name: r for r in releases}
        self.epsilon, self.delta = float(epsilon), float(delta)
        if releases and not _fits_any(list(spent) + self.events(), epsilon * (1 + 1e-9),
                                      delta):
            raise InvalidPrivacyError(
                "epsilon", epsilon, f"the planned releases ({', '.join(names)}) do not fit "
                f"(ε={epsilon:g}, δ={delta:g}) after what was already spent")

    def events(self) -> list:
        return [r.event for r in self.releases.values()]

    def __getitem__(self, name: str) -> Scheduled:
        return self.releases[name]

    def __contains__(self, name: str) -> bool:
        return name in self.releases

    def open(self, accountant, rng) -> "Draws":
        """The run's door to noise: draws through this schedule, recorded in ``accountant``."""
        return Draws(self, accountant, rng)

    def __repr__(self):
        inner = "; ".join(f"{n}: {r.event.describe()}" for n, r in self.releases.items())
        return f"Schedule({inner})"


_MULT = contextvars.ContextVar("privfair_noise_multiplier", default=1.0)


@contextlib.contextmanager
def reduced_noise(multiplier: float):
    """Testing API (the audit's negative control): inside this block every :class:`Draws`
    draws its noise at ``multiplier`` × the scale its recorded event claims — a mechanism that
    leaks more than its certificate says, which a sound audit must refute."""
    m = float(multiplier)
    if not (m > 0 and math.isfinite(m)):
        raise InvalidPrivacyError("multiplier", multiplier, "pass a positive finite number")
    token = _MULT.set(m)
    try:
        yield m
    finally:
        _MULT.reset(token)


def noise_multiplier() -> float:
    """1.0, or the multiplier of an enclosing :func:`reduced_noise` block."""
    return _MULT.get()


class Draws:
    """Draws noise for the releases of one :class:`Schedule`, recording each release's event
    in the accountant before its first draw.  Obtain it with :meth:`Schedule.open`."""

    def __init__(self, schedule: Schedule, accountant, rng):
        from .randomness import as_source

        self.schedule = schedule
        self.accountant = accountant
        self.source = as_source(rng)
        self._left: dict = {}

    # the one place an event is recorded and a draw is counted
    def _take(self, name: str, k: int = 1) -> tuple:
        rel = self.schedule[name]
        if name not in self._left:
            ev = replace(rel.event, seeded=rel.event.seeded or self.source.seeded)
            if self.accountant is not None:
                ev = self.accountant.record(ev)
            self._left[name] = rel.event.count
        if self._left[name] < k:
            raise RuntimeError(f"internal error: release {name!r} drawn more often than its "
                               f"scheduled count {rel.event.count}")
        self._left[name] -= k
        scale = rel.event.scale
        return rel, None if scale is None else scale * _MULT.get()

    def _generator(self) -> np.random.Generator:
        from .mechanisms import float_generator

        return float_generator(self.source)

    def laplace(self, name: str, value):
        """``value`` + Laplace(b) per coordinate (b = the event's scale)."""
        rel, b = self._take(name)
        v = np.asarray(value, dtype=float)
        if rel.exact:
            return laplace_floats(v, b, self.source)
        return v + self._generator().laplace(0.0, b, size=v.shape)

    def gaussian(self, name: str, value):
        """``value`` + N(0, σ²) per coordinate (σ = the event's scale)."""
        rel, s = self._take(name)
        v = np.asarray(value, dtype=float)
        if rel.exact:
            return gaussian_floats(v, s, self.source)
        return v + s * self._generator().standard_normal(size=v.shape)

    def gaussian_noise(self, name: str, shape, *, namespace: str = "numpy", device=None,
                       dtype=None):
        """N(0, σ²) noise of ``shape`` (numpy or torch) — one of the release's ``count`` steps
        (e.g. DP-SGD's per-step gradient noise; its event is a subsampled Gaussian)."""
        from .mechanisms import gaussian_noise_vector

        _, s = self._take(name)
        return gaussian_noise_vector(shape, s, self.source, namespace=namespace,
                                     device=device, dtype=dtype)

    def exponential(self, name: str, scores, *, monotone: bool = False) -> int:
        """An index by the exponential mechanism at the event's (Δ, ε)."""
        from .mechanisms import exponential_mechanism

        rel, _ = self._take(name)
        ev = rel.event
        return int(exponential_mechanism(scores, ev.sensitivity * _MULT.get(), ev.epsilon,
                                         self.source, monotone=monotone))

    def custom(self, name: str, draw: Callable):
        """A mechanism with its own sampler (e.g. objective perturbation's noise of Gamma-
        distributed norm): ``draw(source, scale)`` is called once, after the event is
        recorded, with the run's randomness and the event's scale (None for an event declared
        by its theorem alone, e.g. a private optimizer's (ε, δ); such a draw must then apply
        :func:`noise_multiplier` itself)."""
        rel, _ = self._take(name)
        s = rel.event.scale
        return draw(self.source, None if s is None else s * _MULT.get())

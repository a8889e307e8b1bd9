"""The trivial bounds a theorem's bound is compared with (:class:`Scale`: public interval ranges
over ℓ ∈ [0, 1]^K, no data read), what makes a bound *vacuous*, and a bound on the excess risk
of h read in error/violation terms ([A] Lemma 4.1 / Cor 4.2)."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class Scale:
    """The trivial bounds a theorem's bound on the excess risk of h is compared with.

    Public: interval ranges over the box ℓ ∈ [0, 1]^K (``Expression.range``), never read from
    the data.  ``range_f`` = sup f − inf f, ``g_max`` = sup max_j g_j (None: no constraint),
    ``G`` the penalty weight of h = f + G·max(0, g) at the report's α, and
    ``range_h`` = range_f + G·max(0, g_max) ≥ sup h − inf h: an excess risk of h at or above it
    says nothing (it is *vacuous*).

    **In error/violation terms** ([A] Lemma 4.1 / Cor 4.2): if some decision satisfies g ≤ 0
    and h(ĉ) ≤ min h + B, then f(ĉ) ≤ f* + B (f* the constrained optimum) and
    max(0, g(ĉ)) ≤ (B + range_f)/G.  Each is vacuous at or above its own trivial bound
    (range_f and max(0, g_max)).  With G = (α + range_f)/α, B = α gives f ≤ f* + α and g ≤ α.
    """

    range_f: float | None
    g_max: float | None
    G: float

    @property
    def range_h(self):
        if self.range_f is None:
            return None
        if self.g_max is None:
            return self.range_f
        return self.range_f + self.G * max(0.0, self.g_max)

    def vacuous(self, bound) -> bool:
        """True when a finite ``bound`` on the excess risk of h is at least the range of h."""
        r = self.range_h
        return r is not None and bound is not None and math.isfinite(bound) and bound >= r

    def objective(self, bound):
        """(bound on f(ĉ) − f*, vacuous?) from a bound on the excess risk of h."""
        if bound is None or not math.isfinite(bound):
            return None, False
        return float(bound), self.range_f is not None and bound >= self.range_f

    def violation(self, bound):
        """(bound on max(0, g(ĉ)), vacuous?) from a bound on the excess of h; (None, False)
        without a constraint or a finite G."""
        if (bound is None or not math.isfinite(bound) or self.g_max is None
                or self.range_f is None or not (self.G > 0 and math.isfinite(self.G))):
            return None, False
        v = (float(bound) + self.range_f) / self.G
        return v, v >= max(0.0, self.g_max)


def scale_of(problem, analysis):
    """:class:`Scale` of ``problem`` at the analysis' α (public: no data is read)."""
    def span(e):
        try:
            lo, hi = e.range()
        except Exception:   # an expression without interval bounds: no trivial bound
            return None, None
        return float(lo), float(hi)

    lo, hi = span(problem.f)
    range_f = hi - lo if lo is not None and math.isfinite(hi - lo) else None
    g_max = None
    if problem.g:
        highs = [span(g)[1] for g in problem.g]
        g_max = (max(highs) if all(h is not None and math.isfinite(h) for h in highs)
                 else math.inf)
    G = float(analysis.G) if analysis.G is not None else math.nan
    return Scale(range_f, g_max, G)

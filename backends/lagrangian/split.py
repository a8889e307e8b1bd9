"""Split a constraint g ≤ 0 into one-sided pieces, each with its own dual variable.

Statement.  For g = h + c (c the constant part of a top-level sum) the pieces P(h) satisfy

* ``abs(u)``:           |u| ≤ −c  ⟺  u ≤ −c and −u ≤ −c                      (exact)
* ``maximum(a₁..a_k)``: max a_i ≤ −c  ⟺  a_i ≤ −c for every i               (exact, recursively)
* ``lse(a₁..a_k; η)``:  a_i ≤ −c − log(m)/η for every i  ⟹  lse ≤ −c            (sufficient:
  lse ≤ max + log(m)/η, m the number of entries; so the pieces never loosen the constraint)
* anything else:        itself.

So every point feasible for all pieces is feasible for g (exactly so, except the lse margin).

Why.  A Lagrangian with one multiplier on |u| ≤ γ pushes with λ·sign(u) even inside the band
(−γ, γ) while λ decays, overshooting to the other side — an oscillation the private, lagged ℓ̂
makes worse.  With one multiplier per side, each pushes only its own way (the reductions approach
of Agarwal et al. 2018 writes demographic parity the same way).  Only the optimization changes:
privacy does not depend on the constraint's form.
"""

from __future__ import annotations

import math


def split(g) -> list:
    """The one-sided pieces of ``g`` (scalar expressions); ``[g]`` when nothing splits."""
    from privfair.expr.affine import Add
    from privfair.expr.elementwise import Abs
    from privfair.expr.maximum import Maximum
    from privfair.expr.smooth_max import Lse

    const, body = 0.0, [g]
    if isinstance(g, Add):
        consts = [a for a in g.args if a.is_constant()]
        rest = [a for a in g.args if not a.is_constant()]
        if len(rest) == 1 and all(a.shape == () for a in consts):
            body = rest
            const = sum(float(a.value([0.0] * g.K)) if g.K else float(a.value([]))
                        for a in consts)

    def pieces(h, margin):
        if h.shape != ():
            return [(h[i], margin) for i in range(h.size)] if hasattr(h, "size") else [(h, margin)]
        if isinstance(h, Abs):
            u = h.args[0]
            if u.shape != ():
                out = []
                for i in range(u.size):
                    out += [(u[i], margin), (-u[i], margin)]
                return out
            return [(u, margin), (-u, margin)]
        if isinstance(h, Maximum):
            out = []
            for a in h.args:
                out += _flat(pieces, a, margin)
            return out
        if isinstance(h, Lse):
            m = sum(int(getattr(a, "size", 1) or 1) for a in h.args)
            extra = math.log(m) / float(h.eta)
            out = []
            for a in h.args:
                out += _flat(pieces, a, margin + extra)
            return out
        return [(h, margin)]

    if len(body) != 1 or body[0] is g:
        return [g]
    out = [p + (const + mg) for p, mg in pieces(body[0], 0.0)]
    return out or [g]


def _flat(pieces, a, margin):
    if a.shape != ():
        out = []
        for i in range(a.size):
            out += pieces(a[i], margin)
        return out
    return pieces(a, margin)

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

Directions (:func:`directions`, for ``clip_blocks="split"``).  The two pieces u + c and −u + c of
one |u| have gradients ∇u and −∇u at every ℓ: they share one *direction* (one clipped gradient
block of the per-row vector, ``solver``), the sign saying which way each piece pushes along it.
Every other piece is its own direction.  Read from the expressions only: public.
"""

from __future__ import annotations

import math


def split(g) -> list:
    """The one-sided pieces of ``g`` (scalar expressions); ``[g]`` when nothing splits."""
    return [p for p, _, _ in split_directions(g)]


def directions(constraints) -> tuple:
    """(pieces, direction of each piece, sign of each piece) over all ``constraints``.

    Two pieces share a direction when their gradients are ± one another's at every ℓ: the
    pieces u + c and −u + c of one |u| (``clip_blocks="split"`` clips and releases one row
    gradient per direction, ``solver``).  Directions are numbered 0..K−1 in order of first
    appearance; the sign is +1 for the piece whose gradient is the direction's, −1 for its
    mirror.  Structural (read from the expressions): public."""
    pieces, dirs, signs = [], [], []
    base = 0
    for g in constraints:
        trip = split_directions(g)
        for p, d, s in trip:
            pieces.append(p)
            dirs.append(base + d)
            signs.append(s)
        base += 1 + max(d for _, d, _ in trip)
    return pieces, dirs, signs


def split_directions(g) -> list:
    """``split(g)`` with, for each piece, (piece, direction index within g, sign ±1)."""
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

    # each piece is (expression, margin, direction key, sign); a |u| gives one key to ±u
    key = iter(range(1 << 30))

    def pieces(h, margin):
        if h.shape != ():
            return ([(h[i], margin, next(key), 1) for i in range(h.size)]
                    if hasattr(h, "size") else [(h, margin, next(key), 1)])
        if isinstance(h, Abs):
            u = h.args[0]
            if u.shape != ():
                out = []
                for i in range(u.size):
                    k = next(key)
                    out += [(u[i], margin, k, 1), (-u[i], margin, k, -1)]
                return out
            k = next(key)
            return [(u, margin, k, 1), (-u, margin, k, -1)]
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
        return [(h, margin, next(key), 1)]

    if len(body) != 1 or body[0] is g:
        return [(g, 0, 1)]
    out = [(p + (const + mg), k, s) for p, mg, k, s in pieces(body[0], 0.0)]
    if not out:
        return [(g, 0, 1)]
    # renumber the keys 0..K−1 in order of first appearance
    ren = {}
    return [(p, ren.setdefault(k, len(ren)), s) for p, k, s in out]


def _flat(pieces, a, margin):
    if a.shape != ():
        out = []
        for i in range(a.size):
            out += pieces(a[i], margin)
        return out
    return pieces(a, margin)

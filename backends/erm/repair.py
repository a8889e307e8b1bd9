"""The constraint form's repair mixture: the largest weight on the final decision whose released
constraint statistic, mixed with a partner's (the constant rule ŷ = 0 or the probe), meets the
level minus the release margin (post-processing of released values; docs/sparsity.md §4)."""

from __future__ import annotations

import numpy as np


def repair_weights(phi, u_main, partners, margin):
    """The mixture (weight on the main decision, partner index, partner weight) with the largest
    weight on the main decision such that φ(u) ≤ −margin; ``partners`` is a list of u's; None
    when even the best partner alone violates.  φ is convex, so the feasible weights form an
    interval, found on a grid of 4,001 points (post-processing of released values)."""
    if phi(u_main) <= -margin:
        return 1.0, None, 0.0
    grid = np.linspace(1.0, 0.0, 4001)
    best = None
    for j, u in enumerate(partners):
        if u is None:
            continue
        ok = [p for p in grid if phi(p * u_main + (1 - p) * u) <= -margin]
        if ok and (best is None or ok[0] > best[0]):
            best = (float(ok[0]), j, 1.0 - float(ok[0]))
    return best

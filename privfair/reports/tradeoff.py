"""The objective/violation trade-off a backend's theorem guarantees over a grid of (ε, α)
(:func:`tradeoff`): [A] Cor 4.2 applied to each plan's bound.  Public: plans read the schema
and n only."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..privacy.spec import DP
from .scale import Scale


@dataclass
class TradeoffPoint:
    """What a backend's theorem guarantees when planned at (ε, α), in error/violation terms."""

    backend: str
    epsilon: float
    alpha: float
    bound: float              # the plan's bound on the excess risk of h
    G: float
    objective: float          # f(ĉ) − f* ≤ objective
    violation: float | None   # max(0, g(ĉ)) ≤ violation (None: no constraint)
    objective_vacuous: bool
    violation_vacuous: bool


def tradeoff(problem, privacy, backend, alpha, scale, epsilons=None, alphas=None):
    """The guaranteed objective excess against the guaranteed violation of ``backend``'s plan
    over a grid of α (the penalty G = (α + range f)/α trades one for the other) and of ε
    (default ε/4, ε, 4ε): [A] Cor 4.2 applied to each plan's bound (:class:`Scale`).  Public:
    plans read the schema and n only."""
    eps = privacy.epsilon
    if epsilons is None:
        epsilons = sorted({eps / 4, eps, eps * 4})
    if alphas is None:
        alphas = sorted({float(alpha), *np.geomspace(max(alpha / 8, 1e-3),
                                                     min(0.9, alpha * 8), 7).tolist()})
    out = []
    for e in epsilons:
        priv = DP(float(e), privacy.delta, privacy.protect)
        for a in alphas:
            try:
                chosen = problem.plan(priv, backend=backend, alpha=a).chosen
            except Exception:   # a backend that refuses at this (ε, α): no point there
                continue
            if chosen is None or not math.isfinite(chosen.predicted_excess_risk):
                continue
            B = float(chosen.predicted_excess_risk)
            s = Scale(scale.range_f, scale.g_max, float(chosen.analysis.G))
            obj, ov = s.objective(B)
            vio, vv = s.violation(B)
            out.append(TradeoffPoint(backend, float(e), float(a), B, s.G, obj, vio, ov, vv))
    return out

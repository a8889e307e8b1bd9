"""Mixing a trained rule with a constant rule: what the held-out check returns when the trained
rule beats the best constant on error but confidently breaks a constraint
(``holdout_on_violation="mix"``; docs/trust.md, *Mixing with the constant*).

The mixture plays the trained rule with probability p and the constant rule (always label c)
otherwise, independently for every prediction.  Every coordinate of ℓ is linear in each row's
prediction probabilities, so the mixture's coordinates are

    ℓ_mix(p) = p·ℓ_rule + (1 − p)·ℓ_c,

and for a constant whose coordinates the constraints read are **data-free** (conditional and
selection rates: a constant has rate 1[ŷ = c] on every group and label, on any data;
:func:`privfair.planning.holdout.constant_coordinates`) this holds on every dataset with
ℓ_c known exactly.  Three consequences, all post-processing of the check's one release:

* the mixture's point estimate is p·ℓ̂ + (1 − p)·ℓ_c, and a convex constraint's value along
  the segment is convex in p, so the set of p whose estimate meets the level is an interval
  [0, p*] (the constant meets it) — :func:`mix_weight` finds p* by bisection;
* the check's confidence event "ℓ_rule ∈ [lo, hi]" (one event for all coordinates) is the
  event "ℓ_mix(p) ∈ p·[lo, hi] + (1 − p)·ℓ_c" for *every* p at once, so the mixture's bounds
  hold at the check's confidence although p was chosen from the same release — no second
  release and no extra charge (:func:`mixed_coordinates`);
* the mixture's error is p·error + (1 − p)·error_c, between the two: never above the constant's
  when the rule's is below it (which is why the rule was not replaced for its error).

The constraint values of the mixture are p times the rule's distance from the constant's: a
parity gap (DP, EO) of the mixture is exactly p times the rule's gap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..models.decisions import DecisionSet

#: bisection steps of :func:`mix_weight` (p to 2⁻⁴⁰)
STEPS = 40


def mix_weight(gs, ell, ell_c) -> float:
    """The largest p ∈ [0, 1] whose mixture p·ℓ̂ + (1 − p)·ℓ_c meets every constraint:
    g(ℓ_mix(p)) ≤ max(0, g(ℓ_c)) for each g of ``gs`` (normal form g ≤ 0; a constant admitted
    within the tolerance keeps its own value as the target).  Each g is convex along the
    segment, so {p : g ≤ target} is an interval containing 0; the bisection keeps a p that
    meets every target (0 when only the constant does).

    Examples
    --------
    >>> import numpy as np, privfair as pf
    >>> from privfair.expr import Variable
    >>> v = Variable(2)
    >>> gap = pf.abs(v[0] - v[1]) - 0.02         # |ℓ₀ − ℓ₁| ≤ 0.02, in normal form
    >>> round(mix_weight([gap], np.array([0.30, 0.20]), np.zeros(2)), 4)
    0.2
    """
    ell, ell_c = np.asarray(ell, dtype=float), np.asarray(ell_c, dtype=float)
    targets = [max(0.0, float(g.value(ell_c))) for g in gs]

    def ok(p):
        point = p * ell + (1.0 - p) * ell_c
        return all(float(g.value(point)) <= t + 1e-12 for g, t in zip(gs, targets))

    if ok(1.0):
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(STEPS):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def certify_weight(judged, p_max: float) -> float:
    """The largest p ∈ [0, ``p_max``] whose mixture's checks (``judged(p)``: a list of
    :class:`privfair.planning.holdout.ConstraintCheck`) are all certified, by bisection.
    p = 0 is the constant, whose data-free values are certified exactly (a zero-width box).
    The bounds at every p come from the check's one confidence event, so choosing p from them
    keeps the confidence (module docstring)."""
    if all(c.certified for c in judged(p_max)):
        return float(p_max)
    lo, hi = 0.0, float(p_max)
    for _ in range(STEPS):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if all(c.certified for c in judged(mid)) else (lo, mid)
    return lo


def mixed_coordinates(p: float, ell_c, ell, lo, hi) -> tuple:
    """(point, lo, hi) of the mixture's coordinates: each the image of the rule's under
    ℓ ↦ p·ℓ + (1 − p)·ℓ_c, so the check's confidence event for the rule is the same event for
    the mixture (exact on the data-free coordinates of ℓ_c, the only ones the mixture's
    constraints read)."""
    ell_c = np.asarray(ell_c, dtype=float)

    def image(v):
        return p * np.asarray(v, dtype=float) + (1.0 - p) * ell_c

    return image(ell), image(lo), image(hi)


@dataclass(frozen=True)
class ConstantDecision:
    """The decision "predict label code ``code`` for every row" of a
    :class:`MixedWithConstant` (any other decision is the base set's own)."""

    code: int


class MixedWithConstant(DecisionSet):
    """Decisions of a trained rule's decision set, plus the constant rules.

    A decision is one of ``base``'s own (unchanged: a mixed result's ``decisions`` hold the
    trained rule's decisions as they were) or a :class:`ConstantDecision`.  It reads the
    sensitive attribute exactly when the base does; a mixture of its decisions is the
    randomized rule that :func:`mixed_result` returns.
    """

    size = np.inf

    def __init__(self, base, n_classes: int = 2):
        self.base = base
        self.n_classes = int(n_classes)
        self.n_features = getattr(base, "n_features", None)
        self.needs_sensitive = bool(getattr(base, "needs_sensitive", False))
        # the rates of a randomized base are expected counts (predict_proba); keep the flag so
        # the mixture's rates are counted the same way
        self.randomized = bool(getattr(base, "randomized", False))

    def predict(self, decision, X, *sensitive) -> np.ndarray:
        if isinstance(decision, ConstantDecision):
            return np.full(len(X), decision.code, dtype=np.int64)
        return self.base.predict(decision, X, *sensitive)

    def predict_proba(self, decision, X, *sensitive) -> np.ndarray:
        if isinstance(decision, ConstantDecision):
            return np.full(len(X), float(decision.code == 1))
        fn = getattr(self.base, "predict_proba", None)
        out = (fn(decision, X, *sensitive) if fn is not None
               else self.base.predict(decision, X, *sensitive))
        return np.asarray(out, dtype=float)

    def __repr__(self):
        return f"MixedWithConstant({self.base!r})"


def mixed_result(result, code: int, p: float):
    """A :class:`privfair.Result` playing ``result``'s randomized rule with probability ``p``
    and the constant rule of label code ``code`` otherwise, with ``result``'s certificate,
    plan, labels and info (the mixture is post-processing of the training release and of the
    check's)."""
    from ..results.result import Result

    ds = MixedWithConstant(result.decision_set, result.n_classes)
    decisions = list(result.decisions) + [ConstantDecision(int(code))]
    weights = np.append(p * np.asarray(result.weights, dtype=float), 1.0 - p)
    # the checkpoints of a path belong to the trained rule (result.holdout.trained.path(data))
    info = {k: v for k, v in result.info.items()
            if k not in ("checkpoints", "lambdas", "chosen_indices")}
    return Result(result.backend, decisions, weights, ds, certificate=result.certificate,
                  plan=result.plan, trace=result.trace, info=info, labels=result.labels)

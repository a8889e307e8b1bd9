"""When the row-private ERM backends refuse a problem: :func:`check_common` (the decision set,
the surrogate, the feature bound, the loss's smoothness, an explicit ℓ2 term, an affine
objective, at most one constraint through one linear statistic, and convex cell weights) and
:func:`suggest_l2` (the Λ a refusal suggests).  Every reason is decided from public quantities:
the schema, the declared bounds and the problem's weights."""

from __future__ import annotations

import math

from privfair.models.sparse import LOSSES, SparseLinear

from .reduction import (NeedsGroupMass, bad_cells, cell_coefficients, constraint_direction,
                        objective_gradient)


def decision_set_reason(rates, *, need_c2=False, need_strong=False, l2_hint=""):
    """None, or why ``rates`` cannot feed a certified row-private ERM: the one home of the
    decision set's preconditions, for the ERM backends (:func:`check_common`) and for LOPT's
    and Frank–Wolfe's row oracle (``backends/_oracles.row_oracle_reason``).  ``need_c2``: a C²
    loss (objective perturbation); ``need_strong``: an explicit ℓ2 term Λ > 0 (output
    perturbation's sensitivity 2L/(nΛ)); ``l2_hint``: text appended to the Λ refusal."""
    ds = getattr(rates, "decisions", None)
    if not isinstance(ds, SparseLinear):
        return ("needs a pf.SparseLinear decision set (rates built with pf.rates(pf.SparseLinear"
                f"(d, norm=..., radius=..., l2=Λ), data, surrogate='logistic')); got "
                f"{type(ds).__name__}")
    if rates.surrogate is None:
        return "needs a convex surrogate: pf.rates(..., surrogate='logistic' or 'smoothed_hinge')"
    if ds.feature_bound is None or abs(ds.feature_bound - rates.feature_bound) > 1e-12:
        return (f"unbounded or mismatched features: SparseLinear(feature_bound="
                f"{ds.feature_bound}) must equal pf.rates(..., feature_bound="
                f"{rates.feature_bound}): rows are clipped to that public bound in training and "
                "prediction (unbounded features have no sensitivity bound)")
    loss = LOSSES[rates.surrogate]
    if not loss.smooth:
        return (f"the '{rates.surrogate}' surrogate is not smooth, so no certified minimizer "
                "exists for the sensitivity argument; use surrogate='smoothed_hinge' or 'logistic'")
    if need_c2 and not loss.twice_differentiable:
        return (f"objective perturbation needs a twice continuously differentiable loss (Chaudhuri "
                f"et al. 2011; Kifer et al. 2012); '{rates.surrogate}' is not C² — use 'logistic'")
    if need_strong and not ds.l2 > 0:
        return ("needs an explicit ℓ2 term Λ > 0 (its sensitivity is 2L/(nΛ) — a sparsity norm "
                "alone is not strongly convex): pass pf.SparseLinear(..., l2=Λ)" + l2_hint)
    return None


def check_common(problem, analysis, *, need_strong=False, need_c2=False, allow_constraint=True):
    """None, or the reason the row-private ERM backends refuse ``problem``."""
    rates = getattr(problem, "rates", None)
    ds = getattr(rates, "decisions", None)
    hint = (f", e.g. Λ = {suggest_l2(problem):.2g}"
            if need_strong and isinstance(ds, SparseLinear) and not ds.l2 > 0 else "")
    why = decision_set_reason(rates, need_c2=need_c2, need_strong=need_strong, l2_hint=hint)
    if why is not None:
        return why
    if analysis.curvature.get("f") not in ("affine", "constant"):
        return (f"needs an objective affine in ℓ (a weighted error such as r.error()); f is "
                f"{analysis.curvature.get('f')}")
    if problem.g:
        if not allow_constraint:
            return "handles unconstrained problems only (use output/objective perturbation)"
        if len(problem.g) > 1:
            return ("handles one fairness constraint (a function of one linear statistic, e.g. "
                    "|sel_F − sel_M| ≤ γ); combine several with pf.lse")
        if constraint_direction(problem.g[0], problem.variable.size) is None:
            return ("the constraint must depend on ℓ through one linear statistic d·ℓ (e.g. "
                    "pf.abs(r.selection['a'] - r.selection['b']) <= γ)")
    reason = _sign_reason(problem, analysis)
    if reason:
        return reason
    return None


def suggest_l2(problem):
    """A public Λ of the order [K] Thm 1 balances: L·‖u‖/√n in the loss's units (the units of
    ``SparseLinear(l2=)``; the plain surrogates are 1-Lipschitz)."""
    r = problem.rates
    return math.sqrt(r.feature_bound ** 2 + 1) / math.sqrt(r.n)


def _sign_reason(problem, analysis):
    r = objective_gradient(problem)
    if r is None:
        return "the objective's gradient is not constant (f must be affine in ℓ)"
    try:
        a = cell_coefficients(problem.rates, r, "public")
    except NeedsGroupMass:
        return None       # conditional weights: checked once the group-mass bound is known
    bad = bad_cells(a)
    if bad:
        g, y = bad
        return (f"the weighted surrogate error is not convex in θ: cell (group "
                f"{problem.rates.groups[g]!r}, y={y}) gets a {'negative' if y == 0 else 'positive'}"
                " weight on its mass on ŷ=1; use non-negative weights on errors (fp, fn, fpr, fnr)")
    return None

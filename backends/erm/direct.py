"""One private ERM without a fairness problem: :func:`private_weighted_erm` (the LOPT reduction's
row-private oracle on public weights r over the rates) and :func:`fit_erm` (``pf.sparse.fit``
on a :func:`privfair.models.sparse.glm` ERM).  Each schedules its mechanism's releases for its own
(ε, δ), nothing spent before (:func:`.releases.schedule_for`), and draws them through that
schedule; refusals are decided from public constants before the schedule is opened."""

from __future__ import annotations

import math

import numpy as np

from privfair.models.erm import fit as erm_fit
from privfair.privacy.randomness import as_source

from .reduction import erm_from_rates
from .releases import ERMBudget, schedule_for


def private_weighted_erm(rates, r, epsilon, delta, *, method="objective_perturbation", rng=None,
                         accountant=None, label="LOPT oracle", options=None):
    """A private approximate minimizer of θ ↦ r·ℓ(θ, D) for public weights r — the LOPT
    reduction's linear-classifier oracle ([A] §5.2, oracle (b)) under ``protect="row"``.

    ``rates`` must come from ``pf.rates(pf.SparseLinear(...), data, surrogate=...)``; the weights
    must make the weighted surrogate error convex (non-negative on errors).  The mechanism's
    releases are scheduled for (``epsilon``, ``delta``) — the caller's per-call budget, fitted
    at its plan time — and drawn through the schedule, which records their event(s) in
    ``accountant`` before the first draw; returns θ.  ``epsilon=inf``: exact."""
    from .. import get      # the registry (it imports this family): at call time

    b = get(method)
    erm = erm_from_rates(rates, np.asarray(r, float),
                         "public" if math.isfinite(epsilon) else "empirical")
    why = b.erm_reason(erm, None)
    if why:
        b.refuse(why)
    opts = b.options_from(options or {})     # typed refusals before the schedule is opened
    if not math.isfinite(epsilon):
        return b.private_erm(erm, None, draws=None, options=opts)
    rel = schedule_for(b, erm, ERMBudget(float(epsilon), float(delta)), "row", opts, label)
    return b.private_erm(erm, rel.budget, draws=rel.schedule.open(accountant, as_source(rng)),
                         relation="row", options=opts)


def fit_erm(erm, privacy, method, seed=None, **options):
    """Run ``method``'s mechanism on a direct :func:`privfair.models.sparse.glm` ERM (no Problem):
    the registry lookup, then :func:`privfair.models.erm.fit` (the fit itself lives below the
    backends, issue #17)."""
    from .. import get      # the registry (it imports this family): at call time

    return erm_fit(erm, privacy, get(method), seed=seed, **options)

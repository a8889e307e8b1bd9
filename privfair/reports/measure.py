"""The measured excess risk of h (:func:`measure_curve`): each backend rerun on subsamples of
the data, compared with a *non-private* reference minimum (:func:`reference_min`: over the
finite set, or over its mixtures with cvxpy).  A measurement for the analyst, never released."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from .whatif import bound_at


#: backends whose result is a mixture (their bounds compare with the minimum over mixtures)
MIXTURE_BACKENDS = ("frank_wolfe", "lopt", "oracle_learner")


@dataclass
class Measurement:
    backend: str
    n: int
    excess: list              # per seed: h(result) − min h (non-private reference)
    bound: float              # the backend's plan at this subsample's n
    reference: str

    @property
    def mean(self):
        return float(np.mean(self.excess))

    @property
    def worst(self):
        return float(np.max(self.excess))

    @property
    def within(self):
        return (not math.isfinite(self.bound)) or self.worst <= self.bound


def built_problem(build, data):
    """``build(data)``, checked to be a Problem (a builder returning None is a typed error)."""
    from ..analysis.problem import Problem

    prob = build(data)
    if not isinstance(prob, Problem):
        raise InvalidInputError("build", build, f"build(data) must return a pf.Problem, "
                                f"not {type(prob).__name__}")
    return prob


def reference_min(problem, analysis, mixture):
    L = problem.rates.evaluate_all()
    vertex = float(np.min(analysis.h_value(L)))
    if not mixture or not analysis.is_convex or len(problem.g) > 1:
        return vertex, "min over C"
    try:
        import cvxpy as cp

        w = cp.Variable(L.shape[0], nonneg=True)
        x = L.T @ w
        obj = problem.f.to_cvxpy(x)
        if problem.g:
            obj = obj + analysis.G * cp.pos(problem.g[0].to_cvxpy(x))
        cp.Problem(cp.Minimize(obj), [cp.sum(w) == 1]).solve()
        wv = np.clip(w.value, 0, None)
        hull = float(analysis.h_value(wv / wv.sum() @ L))
        return min(vertex, hull), "min over mixtures of C (cvxpy)"
    except Exception:   # pragma: no cover - cvxpy missing or the atom has no cvxpy form
        return vertex, "min over C (mixture minimum unavailable)"


def has_exact_reference(problem) -> bool:
    """True when the exact reference min over C exists (``Rates.evaluate_all``)."""
    from ..models.decisions import FiniteSet, Thresholds

    r = problem.rates
    return isinstance(r.decisions, (FiniteSet, Thresholds)) and r.surrogate is None


def measure_curve(build, data, privacy, backends, ns, seeds, alpha):
    """Excess risk of h of each backend on ``build(data.subsample(m))``, ``seeds`` seeds each."""
    out = []
    for m in ns:
        per = {b: [] for b in backends}
        refs, bounds = {}, {}
        for s in range(seeds):
            sub = data if m >= data.n else data.subsample(int(m), rng=s)
            prob = built_problem(build, sub)
            an = prob.analyze(privacy, alpha=alpha)
            for b in backends:
                if b not in bounds:
                    bounds[b] = bound_at(prob, privacy, b, alpha)
                ref, src = reference_min(prob, an, b in MIXTURE_BACKENDS)
                refs[b] = src
                res = prob.solve(privacy, backend=b, seed=1000 * s + 17, alpha=alpha,
                                 progress=False)
                ell = prob.ell_of(res)
                per[b].append(float(analysis_h(an, ell)) - ref)
        out += [Measurement(b, int(min(m, data.n)), per[b], bounds[b], refs[b]) for b in backends]
    return out


def analysis_h(analysis, ell):
    return np.asarray(analysis.h_value(ell), dtype=float).reshape(-1)[0]

"""Built-in instances for auditing a backend's privacy claim (``privfair audit``).

One home for the neighbouring datasets and the per-backend problems the audit runs: the command
line imports them, and so can tests.  Each instance is chosen so that the moved row reaches the
*released decision* — not only an intermediate quantity — with as much of the budget as the
backend lets it, so that a run at 4ε claiming ε leaves a privacy loss the tester can see.

The neighbours (``audit_pair``): 20 rows, one feature x, groups a and b of 10 rows each;
D′ moves row 0 (x = 0.25, y = 0) from group a to group b (``protect="sensitive"``).

The instances (``audit_instances(name)``, best first for that backend):

``tie`` — selection backends (exponential, frank_wolfe, lopt, oracle_learner, any other that
    accepts it).  Two thresholds t ∈ {0, 0.5} on x, minimize fp[a] + fn[a] − tn[a].  Only two
    rows of group a lie between the thresholds: row 0 (y = 0; t = 0 counts it in fp[a], t = 0.5
    in tn[a]) and x = 0.3 (y = 1; t = 0.5 counts it in fn[a]).  So the objective gap between
    the two thresholds is +1/n on D and −1/n on D′: the row flips a tie by the full score
    sensitivity (1/n) in both directions — a randomized-response pair, the case where the
    exponential mechanism's bound is attained.  A linear objective keeps the gradient of the
    iterative backends constant, so their intermediate releases do not blur the selections;
    T = 2 keeps the output space at four mixtures.
``postprocessed`` — postprocessing: ``pf.PostProcessed(base = 1[0.2 ≤ x ≤ 0.5])``, minimize
    the error.  The base's positive cell holds x = 0.25 (y = 0, row 0) and 0.3 (y = 1) of group
    a and x = 0.4 (y = 1) of group b: its labels tie in group a on D and in group b on D′, so
    both groups' decisions on that cell flip with the row — the two counts the row moves (ℓ1
    sensitivity 2) each reach the output.
``one_cell`` — cells: ``pf.ProxyCells(1, 1)`` (one cell), minimize (fp[a] − 0.1)², with
    ``proxy_share=0.05``.  With one cell the released rule is q = clip(0.1·n / F̂), F̂ the
    (shrunk) noisy count of group a's negatives — an invertible function of the count that the
    moved row changes by one, so the final decision carries the Laplace count release's loss.
    ``proxy_share`` is a public option of the backend (M1's share of ε); a small share leaves
    the count release (M2) almost all of the budget, and a proxy too noisy to pull the count's
    shrinkage toward it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["AuditInstance", "audit_pair", "audit_instances", "AUDIT_RUNS"]

#: runs on each dataset when ``--runs`` is not given: enough for the 4ε control to be refuted
#: with a wide margin (see docs/cli.md for the measured bounds), small enough for ≤ ~60 s
AUDIT_RUNS = {"frank_wolfe": 4000, "lopt": 4000, "cells": 600}
DEFAULT_RUNS = 2000

#: iterative backends run with T = 2 so that the output space stays small enough to histogram
#: (lopt's ``release_share`` — its public release-to-oracle budget ratio — is lowered because the
#: linear objective makes the releases useless here; the oracle calls carry the loss)
_ITERATIVE = {"frank_wolfe": {"T": 2}, "lopt": {"T": 2, "release_share": 0.1},
              "oracle_learner": {"T": 2}}


@dataclass(frozen=True)
class AuditInstance:
    """A problem builder (``build(data) -> pf.Problem``) with the solve options it needs."""

    key: str
    description: str
    build: object
    options: dict = field(default_factory=dict)


def audit_pair():
    """The neighbouring datasets (D, D′) of the built-in audit instance (module docstring)."""
    import numpy as np

    import privfair as pf

    xa = np.array([0.25, -0.9, -0.8, -0.6, -0.3, 0.3, 0.7, 0.8, 0.9, 0.95])
    ya = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, 1])
    xb = np.linspace(-1.2, 1.2, 10)
    D = pf.Dataset(np.concatenate([xa, xb])[:, None], np.concatenate([ya, (xb > 0).astype(int)]),
                   sensitive=np.array(["a"] * 10 + ["b"] * 10), group_names=["a", "b"])
    return D, D.with_row(0, group="b")


def _base(X):
    import numpy as np

    x = np.asarray(X, dtype=float)[:, 0]
    return ((x >= 0.2) & (x <= 0.5)).astype(float)


def tie_problem(data):
    """Thresholds {0, 0.5}; minimize fp[a] + fn[a] − tn[a] (a ±1/n tie flipped by row 0)."""
    import privfair as pf

    r = pf.rates(pf.Thresholds([0.0, 0.5], score=0), data, group_mass_bound=0.25)
    return pf.Problem(pf.minimize(r.fp["a"] + r.fn["a"] - r.tn["a"]))


def postprocessed_problem(data):
    """PostProcessed(1[0.2 ≤ x ≤ 0.5]); minimize the error (row 0 moves a tie from a to b)."""
    import privfair as pf

    r = pf.rates(pf.PostProcessed(_base), data)
    return pf.Problem(pf.minimize(r.error()))


def one_cell_problem(data):
    """ProxyCells(1, 1); minimize (fp[a] − 0.1)² (the rule is a function of one count)."""
    import privfair as pf

    r = pf.rates(pf.ProxyCells(1, 1), data)
    return pf.Problem(pf.minimize(pf.square(r.fp["a"] - 0.1)))


def audit_instances(backend: str) -> list:
    """Candidate :class:`AuditInstance` s for ``backend``, best first."""
    table = [
        AuditInstance("tie", "thresholds t ∈ {0, 0.5} on x, minimize fp[a] + fn[a] − tn[a]",
                      tie_problem, dict(_ITERATIVE.get(backend, {}))),
        AuditInstance("postprocessed", "PostProcessed(1[0.2 <= x <= 0.5]), minimize the error",
                      postprocessed_problem),
        AuditInstance("one_cell", "ProxyCells(1, 1), minimize (fp[a] − 0.1)²", one_cell_problem,
                      {"proxy_share": 0.05}),
    ]
    first = {"postprocessing": "postprocessed", "cells": "one_cell"}.get(backend, "tie")
    return sorted(table, key=lambda inst: inst.key != first)


def default_runs(backend: str) -> int:
    """Runs on each dataset when none are asked for (:data:`AUDIT_RUNS`)."""
    return AUDIT_RUNS.get(backend, DEFAULT_RUNS)

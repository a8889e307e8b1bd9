"""Error–violation frontiers: ``privfair.reports.pareto(build, privacy_levels, constraint_levels)``.

``build(level) -> Problem`` builds the problem with its fairness constraint at ``level`` (e.g.
``lambda c: pf.Problem(pf.minimize(r.error()), [gap <= c])``).  Every (privacy level, constraint
level, backend) is solved with ``seeds`` seeds; the table reports the objective f(ℓ) and the
violation max(0, max_j g_j(ℓ)) of the released decision (mixture: its expected ℓ), averaged over
seeds, and marks the points no other point of the same privacy level beats in both.

Where they are measured: pass ``test=`` (held-out data with the training data's groups and
labels) and every point is the released decision's f and violation on it — what a frontier is
for, and nothing the certificate must cover.  Without ``test=`` they are measured on the
training data the solves used: exact statistics of the private rows, which no certificate
covers, so a private level then warns (:class:`TrainingDataMeasurementWarning`) and the table
says ``measured on: training data (not private)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import warnings

from ..util.tables import markdown_table, text_table
from ..errors import InvalidInputError
from ..privacy.spec import DP


class TrainingDataMeasurementWarning(UserWarning):
    """A frontier of private solves measured on their own (private) training data."""


@dataclass
class ParetoPoint:
    epsilon: float
    level: float
    backend: str
    error: float
    violation: float
    frontier: bool = False


class ParetoTable:
    """Rows of :class:`ParetoPoint`; ``str()``, ``to_markdown()``, ``plot()``."""

    def __init__(self, points, measured_on=None):
        self.points = list(points)
        #: "held-out data" or "training data (not private)" (set by :func:`pareto`)
        self.measured_on = measured_on
        for eps in {p.epsilon for p in self.points}:
            group = [p for p in self.points if p.epsilon == eps]
            for p in group:
                p.frontier = not any((q.error <= p.error and q.violation <= p.violation)
                                     and (q.error < p.error or q.violation < p.violation)
                                     for q in group)

    def rows(self):
        return [(f"{p.epsilon:g}", f"{p.level:g}", p.backend, f"{p.error:.4f}",
                 f"{p.violation:.4f}", "★" if p.frontier else "") for p in self.points]

    HEADER = ("ε", "level", "backend", "error f", "violation", "frontier")

    def _footer(self):
        return [] if self.measured_on is None else [f"measured on: {self.measured_on}"]

    def __str__(self):
        return "\n".join(text_table(self.HEADER, self.rows()) + self._footer())

    def to_markdown(self):
        return "\n".join(markdown_table(self.HEADER, self.rows()) + (
            ["", f"*{self._footer()[0]}*"] if self.measured_on else []))

    #: one (marker, colour) per privacy level, in increasing ε; cycled beyond six levels
    STYLES = (("o", "#1f77b4"), ("s", "#d62728"), ("^", "#2ca02c"), ("D", "#9467bd"),
              ("v", "#ff7f0e"), ("P", "#17becf"))

    def plot(self, ax=None):
        """Objective against violation, one series per ε; each ε's frontier (★) joined.

        Every ε stays visible where points coincide (two ε often reach the same decision):
        each level has its own marker and colour, markers are hollow, and a smaller ε is
        drawn larger and underneath, so coinciding points show as nested outlines.  The
        frontier points are star markers joined by a line in order of violation (a one-point
        frontier is a star)."""
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        fig = None
        if ax is None:
            fig, ax = plt.subplots(figsize=(6.4, 4.2))
        levels = sorted({p.epsilon for p in self.points})
        dashes = ("-", "--", ":", "-.")
        for i, eps in enumerate(levels):
            marker, colour = self.STYLES[i % len(self.STYLES)]
            big = (len(levels) - 1 - i) / max(1, len(levels) - 1)    # 1 for the smallest ε
            pts = [p for p in self.points if p.epsilon == eps]
            z = 2 + i                                    # larger (smaller ε) underneath
            ax.scatter([p.violation for p in pts], [p.error for p in pts], s=30 + 110 * big,
                       marker=marker, facecolors="none", edgecolors=colour, linewidths=1.5,
                       zorder=z, label=f"ε={eps:g}")
            fr = sorted((p for p in pts if p.frontier), key=lambda p: (p.violation, p.error))
            ax.plot([p.violation for p in fr], [p.error for p in fr], color=colour, alpha=0.85,
                    lw=1.2 + 2.0 * big, ls=dashes[i % len(dashes)], marker="*",
                    markersize=7 + 9 * big, markerfacecolor=colour, markeredgecolor="k",
                    markeredgewidth=0.5, zorder=z + 0.5, label=f"ε={eps:g} frontier (★)")
        ax.set_xlabel("constraint violation max(0, g)")
        ax.set_ylabel("objective f")
        ax.set_title("objective–violation frontier (★: not dominated at its ε)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
        return fig if fig is not None else ax.figure


def pareto(build, privacy_levels, constraint_levels, backends=("auto",), seeds=3, alpha=0.05,
           test=None):
    """Solve ``build(level)`` at every privacy and constraint level; see the module docstring.

    ``backends``: a backend name or a list of names; a str is one name, and "auto" is the
    planner's choice at each point (the table names the backend it ran).  ``test``: held-out
    data to measure the points on (default: the training data, with a warning when a level is
    private).
    """
    from ..analysis.problem import Problem

    if not callable(build):
        raise InvalidInputError("build", build, "pass a callable level -> pf.Problem")
    try:
        names = (backends,) if isinstance(backends, str) else tuple(backends)
    except TypeError:
        names = ()
    if not names or not all(isinstance(b, str) for b in names):
        raise InvalidInputError("backends", backends, "pass 'auto', a backend name or a list "
                                "of names")
    privs = [p if isinstance(p, DP) else DP(float(p)) for p in privacy_levels]
    levels = list(constraint_levels)
    if not privs or not levels:
        raise InvalidInputError("privacy_levels/constraint_levels", (privacy_levels, levels),
                                "pass at least one of each")
    if isinstance(seeds, bool) or not isinstance(seeds, (int, np.integer)) or seeds < 1:
        raise InvalidInputError("seeds", seeds, "a positive number of seeds")
    from ..data.dataset import Dataset

    if test is not None and not isinstance(test, Dataset):
        raise InvalidInputError("test", type(test).__name__, "pass held-out data as a pf.Dataset "
                                "with the training data's groups and labels")
    if test is None and any(p.is_private for p in privs):
        warnings.warn("pf.pareto without test=: the points are measured on the private training "
                      "data, exact statistics that no certificate covers; pass test=held_out",
                      TrainingDataMeasurementWarning, stacklevel=2)
    points = []
    for priv in privs:
        for level in levels:
            prob = build(level)
            if not isinstance(prob, Problem):
                raise InvalidInputError("build", build, f"build(level) must return a pf.Problem, "
                                        f"not {type(prob).__name__}")
            for b in names:
                vals = []
                for s in range(seeds):
                    res = prob.solve(priv, backend=b, seed=s, alpha=alpha, progress=False)
                    f, gs = prob.evaluate(prob.ell_of(res, test, field="test"))
                    vals.append((f, max([0.0] + [max(0.0, g) for g in gs])))
                name = res.backend
                e, v = np.mean(vals, axis=0)
                points.append(ParetoPoint(priv.epsilon if math.isfinite(priv.epsilon) else math.inf,
                                          float(level), name, float(e), float(v)))
    return ParetoTable(points, "held-out data" if test is not None
                       else "training data (not private)")

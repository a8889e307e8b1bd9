"""Which row term ``lagrangian_sgda`` trains by default, and the clip scale of the cost-sensitive one.

Two recipes (docs/lagrangian.md, *The default recipe*; #18):

* **"cost"** — ``objective_surrogate="cost_log"``: each row's whole Lagrangian term as a
  cost-sensitive cross-entropy (label 1[d < 0], weight |d|: the reductions approach's best
  response), primal step 1 and dual step 0.03, both decayed by a cosine, and the clip C equal
  to the median norm ‖(x_i, 1)‖ of the rows (:func:`clip_scale`).
* **"soft"** — ``objective_surrogate="log"``: the cross-entropy of the error plus the constraints
  on sharpened soft predictions, constant steps 2 and 1, C = 1 (the defaults before).

``objective_surrogate="auto"`` (the default) picks "cost" for a binary ``pf.LinearClassifier``
without a rate surrogate, with at least one constraint, whose objective and constraints read no
label-conditional rate
(error, joint masses, selection rates — demographic parity), or with no constraint and an
objective other than the error (since 2026-11-27: :func:`recipe_for`), and for a multi-class
``pf.SoftmaxClassifier`` parity problem (since the fifteenth session), else "soft".  Why,
measured on validation splits only (ε = 1; Adult on 5 folds of adult.data, the 50-feature
synthetic of bench/gpu.py; error / violation): Adult DP ≤ 0.005 row 0.1775 / 0.0097 against 0.1857 / 0.0170;
DP ≤ 0.01 sensitive 0.1804 / 0.0098 against 0.1852 / 0.0129; the synthetic (both units)
0.2776 / 0.0088 against 0.2807 / 0.0064; COMPAS and the 8-group set return the constant under
both.  But equalized odds (rates conditional on the label) with "cost": 0.1603 / **0.0702**
against 0.1828 / 0.0364 — a small (group, label) cell gives its rows weights ~λ/π that the
clip cuts — hence the rule.  Every value the user passes explicitly wins over the recipe.

**The clip scale.**  The cost-sensitive row gradient is d_i·(x_i, 1): its norm scales with the
rows' norms, and a C far below them normalises every row, which erases the weights |d| the
recipe is made of (the synthetic's rows have norm ~7: C = 3 gave 0.2968 ± 0.0878 / 0.0323 there,
C = 7 0.2776 / 0.0088; Adult's ~3.2: C = 3 was the best of 1, 2, 3, 6).  So C is the median
of ‖(x_i, 1)‖ on a public grid of 2^(k/4) (1 … 4096), C = ``clip`` × that median:

* ``protect="sensitive"``: x is public, so the median is read exactly (no release);
* ``protect="row"``: x is private, so the grid point is chosen by the **exponential
  mechanism** with score u(c) = −|#{i : ‖(x_i, 1)‖ ≤ c} − n/2| — one row replaced moves a count
  by at most 1 and n not at all, so Δu ≤ 1 — at ε_m = :func:`median_epsilon` (≤ 10% of ε,
  composed with the steps by the accountant: the steps' noise is calibrated to what is left).
  C is then a release (post-processing of it is free); the steps' sensitivity does not depend
  on C (each row's clipped gradient is divided by C: per-row norm ≤ 1 whatever C is).
"""

from __future__ import annotations

import numpy as np

#: the options each recipe sets when the user does not (docs/lagrangian.md has the reasons)
RECIPES = {
    "cost": {"lr": 1.0, "lr_dual": 0.03, "lr_schedule": "cosine", "dual_schedule": "cosine"},
    "soft": {"lr": 2.0, "lr_dual": 1.0, "lr_schedule": "constant", "dual_schedule": "constant"},
}

#: the public grid of clip scales: 2^(k/4), k = 0 … 48 (a row (x, 1) has norm ≥ 1)
GRID = 2.0 ** (np.arange(49) / 4.0)


def reads_label_conditional(problem) -> bool:
    """Whether the objective or a constraint of ``problem`` reads a rate conditional on the
    label (fpr, tpr, ...: ``Layout.rate``) — from the expressions' supports (public)."""
    rates = problem.rates
    cond = set(int(k) for k in np.asarray(rates.layout.rate).ravel())
    for e in [problem.f, *problem.g]:
        if cond & set(e.support()):
            return True
    return False


def recipe_for(problem, asked: str) -> str:
    """The objective surrogate a run trains: ``asked`` unless it is "auto" — then, for a
    binary ``pf.LinearClassifier`` without a rate surrogate, "cost_log" when

    * there is at least one constraint and neither the objective nor a constraint reads a
      label-conditional rate (parity problems), or
    * there is no constraint and the objective is not the plain error (minimax or penalized
      objectives: max_g ½(fpr_g + fnr_g), error + max_g fnr_g — measured better or equal on
      Adult, COMPAS and the 50-feature synthetic, docs/lagrangian.md),

    else "log" (module docstring; the unconstrained *error* — e.g. ``postprocessing``'s
    private score — keeps the soft term it was validated with)."""
    if asked != "auto":
        return asked
    r = problem.rates
    if type(r.decisions).__name__ == "SoftmaxClassifier":
        # multi-class parity (P(ŷ = k | g) only) trains the cost-sensitive term, as the binary
        # rule's: measured on three multi-class parity problems, error 0.46–0.63 → 0.29–0.41 at
        # the same violation; label-conditional constraints keep the soft term (it is better
        # from four groups on), and so does every unconstrained problem (not measured)
        return "cost_log" if problem.g and not reads_label_conditional(problem) else "log"
    if (type(r.decisions).__name__ != "LinearClassifier" or getattr(r, "surrogate", None)
            is not None or r.L != 2):
        return "log"
    if problem.g:
        return "log" if reads_label_conditional(problem) else "cost_log"
    return "log" if problem.minimizes_error() else "cost_log"


def fill(o: dict, surrogate: str) -> dict:
    """``o`` with the recipe of ``surrogate`` filling every option left at None (the options
    the user did not pass: a value passed explicitly always wins)."""
    rec = RECIPES["cost" if surrogate == "cost_log" else "soft"]
    out = dict(o)
    for k, v in rec.items():
        if out.get(k) is None:
            out[k] = v
    return out


def median_epsilon(epsilon: float, n: int) -> float:
    """ε_m of the private median: min(ε/10, max(ε/100, 60/n)) — public (ε, n).

    Why: with scale 2/ε_m, a grid point whose count is off the median by D rows has weight
    e^(−ε_m·D/2) against the best; the farthest points (D ≈ n/2) must be negligible against
    the 49 candidates, e^(−ε_m·n/4) ≤ e^(−10)/49, i.e. ε_m ≥ ~55/n.  At Adult's 24,000 training
    rows and ε = 1 that is ε/100 (the steps keep 99%); at 1,000 rows 0.06."""
    return min(epsilon / 10.0, max(epsilon / 100.0, 60.0 / max(int(n), 1)))


def median_event(eps_m: float):
    """The accountant's event of the private median (exponential mechanism, Δu = 1)."""
    from privfair.privacy import exponential_event

    return exponential_event(
        1.0, eps_m, n_candidates=len(GRID), label="lagrangian_sgda clip scale (median row norm)",
        sensitivity_source="u(c) = −|#{‖(x_i, 1)‖ ≤ c} − n/2|: one row replaced moves the count "
                           "by ≤ 1, n fixed")


def norm_counts(chunk) -> np.ndarray:
    """A pass function: the chunk's rows counted by their grid cell, len(GRID) + 1 bins —
    bin k holds the rows with GRID[k-1] < ‖(x, 1)‖ ≤ GRID[k] (bin 0: ≤ 1, the last: above)."""
    X = np.asarray(chunk.X, dtype=float)
    nrm = np.sqrt(np.einsum("ij,ij->i", X, X) + 1.0)
    return np.bincount(np.searchsorted(GRID, nrm, side="left"),
                       minlength=len(GRID) + 1).astype(float)


def median_scores(counts, n) -> np.ndarray:
    """u(GRID[k]) = −|#{‖(x_i, 1)‖ ≤ GRID[k]} − n/2| from :func:`norm_counts`' bins."""
    below = np.cumsum(np.asarray(counts, dtype=float))[:len(GRID)]
    return -np.abs(below - n / 2.0)


def clip_scale(rows, n, draws=None, name="clip_scale") -> float:
    """The median row norm on :data:`GRID`: exact (``draws`` None: public rows), or chosen by
    the scheduled exponential mechanism ``name`` of ``draws`` (private rows).  One pass."""
    counts = rows.map_sum(norm_counts)
    counts = np.zeros(len(GRID) + 1) if counts is None else counts
    scores = median_scores(counts, n)
    if draws is None:
        return float(GRID[int(np.argmax(scores))])
    return float(GRID[int(draws.exponential(name, scores))])


__all__ = ["RECIPES", "GRID", "reads_label_conditional", "recipe_for", "fill", "median_epsilon",
           "median_event", "norm_counts", "median_scores", "clip_scale"]

"""Built-in instances for auditing a backend's privacy claim (``privfair audit``).

One home for the neighbouring datasets and the per-backend problems the audit runs
(:mod:`privfair.audit.harness`): the command line imports them, and so can tests.  Each instance
is chosen so that the moved row reaches an *exposed output* with as much of the budget as the
backend lets it and, more, so that the privacy loss a correct backend attains stays below its
claim while the same backend with half its noise, or run at 2ε, leaks well above it (its
negative controls) — within ~10³ runs per dataset.

The neighbours (``audit_pair``): 20 rows, one feature x, groups a and b of 10 rows each;
D′ moves row 0 (x = 0.25, y = 0) from group a to group b (``protect="sensitive"``).

The instances (``audit_instances(name)``, best first for that backend):

``tie`` — selection backends (exponential, frank_wolfe, lopt, oracle_learner, any other that
    accepts it).  Thresholds t ∈ {0, 0.5, 0.6} on x, minimize fp[a] + fn[a] − tn[a].  Row 0
    (y = 0) counts in fp[a] under t = 0 and in tn[a] under t ≥ 0.5, so between D and D′ the
    objective of t = 0 falls and that of t ≥ 0.5 rises by the full score sensitivity 1/n.  The
    rows of group a in [0, 0.5) — 0.1 (y = 0), row 0, 0.3 and 0.45 (y = 1) — put t = 0 two
    rows behind on D and level on D′, and t = 0.5 and 0.6 (no row between them: one output)
    count twice.  So t = 0 is drawn with probability 1/3 on D′ at every ε and
    1/(1 + 2e^ε) on D: the loss of a correct exponential mechanism is ln((1 + 2e^ε)/3) ≤ 0.83ε,
    one that drops the factor 2 (≡ 2ε, docs/traps.md #9) leaks ln((1 + 2e^{2ε})/3) ≥ 1.44ε at
    every ε (1.66ε at ε = 1).  The previous instance — a ±1/n tie between two thresholds —
    attained ε/2, so the factor-2 bug passed at any number of runs.  The iterative backends run
    with T = 1 (one selection at the whole ε: with T = 2 each selection gets ε/2 and the loss
    visible in the mixture needs ~10⁴ runs); lopt with ``release_share=0.1``.
``postprocessed`` — postprocessing: ``PostProcessed(base = 1[0.2 ≤ x ≤ 0.5])``, minimize
    the error.  The row moves group a's and group b's negative count in the base's positive
    cell by one each (ℓ1 sensitivity 2).  The decision (the sign of a difference of two Laplace
    counts) shows little of it, but the released counts are exposed (``info``, ``trace``) and
    their vector field — scored on both moved coordinates at once — carries the whole loss.
``one_cell`` — cells, with its own neighbours (``cells_pair``, ``protect="sensitive"``): 300
    rows at one constant feature x = 0.5, each group 100 negatives and 50 positives; D′ moves
    row 0 (a negative) from group a to b.  ``ProxyCells(1, 1)`` (one cell), minimize
    (fp[a] − 0.1)², with ``proxy_share=0.01`` (M1's public share of ε).  With one cell the
    released rule is q = 0.1·n / F̂ (≈ 0.3), F̂ the released count of group a's negatives
    (100 on D, 99 on D′) after cells' shrinkage toward the proxy's soft count π (the prior):
    F̂ = π + w·r, r = noisy − π, w = (Σr² − m·v)/Σr² (m = 2 counts, v the planned noise
    variance) — i.e. F̂ ≈ noisy − v/r, an increasing function of the noisy count as soon as
    |r| ≫ √v.  So the instance makes |r| large and the same in every run: M1's noise (Laplace
    scale 250 at ``proxy_share=0.01``) drives the proxy's fit to saturation, and with a
    constant feature every row of a label gets the same P(a | x, y) ∈ {≈0, ≈1}, so π ∈
    {0, 200} against a count of 100: |r| ≈ 100 and v/r ≈ 0.02 — the rule is an invertible
    function of the Laplace count whatever the noise drawn, and carries the count release's
    whole loss (ε₂ = 0.99ε), with half the noise (2ε₂) too.  (The previous instance — the 20
    rows of ``audit_pair``, π ∈ {0, 10} against a count of 5 — had v/r ≈ ±0.4: a mixture of
    two copies of the count 0.8 apart, which hid half the noise: ε ≥ 0.90 at 1,000 runs.)
``ridge_hinge`` / ``ridge_logistic`` — the row-private ERM backends (output_perturbation and
    dual_frank_wolfe on the smoothed hinge, objective_perturbation on the logistic loss), with
    their own neighbours (``ridge_pair``, ``protect="row"``): five rows on one feature, x = ±R
    (R = 10), and D′ relabels row 0 (x = R) from y = 1 to 0.  The decision set is
    ``SparseLinear(1, l1, radius 1, l2=Λ, no intercept, R)`` with Λ = 1000, so θ* is of order
    R/(nΛ): every margin stays in the loss's linear part, θ* is an affine function of the labels
    and the relabelled row moves it by the full ℓ2 sensitivity 2LR/(nΛ) the backends calibrate
    to.  The decision output is the released w itself (``released_w``).  dual_frank_wolfe runs
    with T = 1, a negligible penalty and ``selection_share=0.02`` so that the primal recovery
    carries almost all of ε; objective_perturbation with ``jacobian_share=0.01`` (its public
    share for the curvature term).  On the logistic loss the noise b is calibrated to the
    tight gradient sensitivity (:func:`privfair.models.erm.logistic_gradient_diameter`, issue #16:
    κ ≤ 1.07 on one feature), 1.06·R where the relabelled row moves the gradient by R, and b is
    drawn in the coordinates the decision set lets move (:func:`backends.erm.noise.
    free_coordinates`; the proof is in :mod:`backends.erm.objective_perturbation`): with the
    intercept pinned that is w alone, so at δ = 0 b is a Laplace of scale κ = D/ε₂ on w and
    the released w carries ~0.93ε of loss (R/1.06R of ε₂ = 0.98ε) — both controls leak ~1.85ε.
    Measured with ``audit.run_control`` (claim ε = 1, 1000 runs per dataset, seeds 0–9):
    honest ε̂ −0.23–0.55 (pass, median 0.27), noise × 1/2 refuted ε̂ 1.11–1.41 (median 1.29),
    ε × 2 refuted ε̂ 1.07–1.38 (median 1.27); ``privfair audit`` (seed 0): 0.31, 1.24, 1.21.
    (Before, b was drawn on R² with density ∝ exp(−‖b‖/κ) and w saw only the 1-D marginal of
    it — 1.5× a Laplace's variance, its log-ratio reaching 1/κ only in the tails: half the
    noise was not refuted at 3000 runs, ε̂ = 0.99, and ``noise × 1/4`` was counted instead.)
``sgda_w2`` — sgda (needs torch), with its own neighbours (``sgda_pair``,
    ``protect="sensitive"``): 1000 rows per group, group a at x = (1, 0) with y = 1, group b at
    x = (−1, 0) with y = 0, and row 0 alone at x = (0, 5); D′ moves row 0 to group b.  The model
    is ``Linear(2, 1)`` started at w = (1, 0); full batches (q = 1: the steps are one Gaussian
    of sensitivity 2, accounted exactly), λ = 2 with public group probabilities, T = 40 steps,
    θ share 0.97, lr 0.01, the last iterate released (``average=False``), no hold-out split.
    Only row 0's per-example terms have a second coordinate, so the released w₂
    (``released_w2``) is a sum of row 0's clipped θ-pieces — each at its bound, antipodal
    between D and D′ — plus the Gaussian noise.  Why this design (issue #16: ε × 2 was not
    refuted at 12000 runs on the T = 4 instance, whose w₂ carried ~0.78 of the charged shift):
    the first step carries no θ-signal (W starts at 0) and the W-block takes 1 − θ-share of
    the noise budget, so w₂ carries √((T − 1)/T · s_θ)·5/√26 of the accountant's Gaussian shift
    (0.93 here; measured 0.91 ± 0.06 with paired seeds); a small lr keeps the dynamics linear
    (no contraction of the shift by row 0's loss gradient), 1000 rows per group keep W's sign
    (hence the θ-piece's direction) the same in every run, and the last iterate keeps the
    whole accumulated shift (the stage mean kept half of it for ~1/√3 of the noise).  Its δ is
    0.1 unless one is asked for: a Gaussian's loss above the claim lives on events of
    probability ~δ.  Measured at 3000 runs per dataset (claim ε = 1, δ = 0.1): ε × 2 refuted
    (ε̂ = 1.196, the decision).
``lagrangian_w2`` — lagrangian_sgda on ``LinearClassifier`` (numpy: no torch needed), with
    its own row neighbours (``lagrangian_pair``, ``protect="row"``): 8 rows, row 0 alone at
    x = (0, 50) with y = 1, the others at x = (±1, 0) in both groups and labels; D′ relabels
    row 0 to y = 0.  ``LinearClassifier(2, radius 1000)`` (a radius the released θ never
    reaches, so the release is θ itself), minimize the error, one full-batch step
    (``epochs=1``, ``batch_size=8``: q = 1 and T = 1, so the release is one Gaussian of
    sensitivity 2, the accountant's event exactly — no subsampling or composition to average
    over), ``hist_share=1e-4``, ``output="last"``, no hold-out split.  The step releases
    S = Σ_i (a·h_i, b·clip_C(∇ψ_i)/C) + N(0, z²I); with no constraint the row's gradient is its
    cross-entropy gradient ∓(½)(x̃₀) at θ = 0, of norm 25 ≫ C = 1, so it is clipped to its bound
    and antipodal between D and D′ (y = 1 vs 0).  Only row 0 has a second coordinate, so the
    released w₂ (``released_w2``) is −lr/m·(its clipped piece + noise): it carries
    b·50/√2501 = 0.99975 of the charged Gaussian shift (b = √(1 − a²), the gradient block's
    share of the per-row norm).  Nothing else of the design matters (no constraint: λ and the
    histogram's post-processing do not reach the gradient; the error's row coefficients are
    constants).  Its δ is 0.1 unless one is asked for (as sgda's).  ε × 2 is the hard control
    for any Gaussian: at δ = 0.1 the calibrated noise falls only 1.48× at 2ε (the GDP μ of
    (1, 0.1) is 0.92, of (2, 0.1) 1.37), so the instance carries the whole shift and is cheap
    (~3 ms a solve) rather than needing fewer runs.  Measured with ``audit.run_control``
    (claim ε = 1, δ = 0.1, 2000 runs per dataset): honest ε̂ = −0.12 (pass), noise × 1/2
    refuted ε̂ = 2.10, ε × 2 refuted ε̂ = 1.12 (the decision; other seeds in docs/cli.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis.problem import Problem, minimize
from ..data.dataset import Dataset
from ..expr import abs as abs_, square
from ..models import norms
from ..models.cells import ProxyCells
from ..models.decisions import LinearClassifier, Thresholds
from ..models.postprocess import PostProcessed
from ..models.sparse import SparseLinear
from ..models.torch_model import TorchModel
from ..statistics.stats import rates


__all__ = ["AuditInstance", "audit_pair", "cells_pair", "ridge_pair", "sgda_pair",
           "lagrangian_pair", "audit_instances", "AUDIT_RUNS"]

#: runs on each dataset when ``--runs`` is not given: enough for the noise × 1/2 and ε × 2
#: controls to be refuted (see docs/cli.md for the measured bounds), few enough for ~1 minute
AUDIT_RUNS = {"exponential": 3000, "lopt": 3000, "oracle_learner": 3000, "cells": 600,
              "proxy_reductions": 600,
              "sgda": 3000,
              # ε × 2 of a Gaussian at δ = 0.1: refuted at 2000 runs (ε̂ 1.12 with seed 0)
              "lagrangian_sgda": 2000,
              # both controls refuted at 1000 runs: ε̂ ≥ 1.07 over seeds 0–9 (at 600 runs
              # noise × 1/2 is at the claim, ε̂ 1.00–1.03)
              "objective_perturbation": 1000}
DEFAULT_RUNS = 2000

#: iterative backends run with T = 1: one selection at the whole ε (module docstring; lopt's
#: ``release_share`` — its public release-to-oracle budget ratio — is lowered because the linear
#: objective makes the releases useless here; the oracle call carries the loss)
_ITERATIVE = {"frank_wolfe": {"T": 1}, "lopt": {"T": 1, "release_share": 0.1},
              "oracle_learner": {"T": 1}}


@dataclass(frozen=True)
class AuditInstance:
    """A problem builder (``build(data) -> Problem``) with the solve options it needs.

    ``neighbours() -> (D, D′)`` and ``neighbours_doc`` (one line) give the pair, ``protect`` its
    relation and ``delta`` the δ when none is asked for.  ``release(result) -> 1-D array`` is
    the decision output tested (None: the expected predictions on the rows), fixed before any
    run; every other exposed field is tested too (:mod:`privfair.audit.harness`).  ``controls``:
    the negative controls (:class:`privfair.audit.harness.Control`; None: noise × 1/2 and
    ε × 2)."""

    key: str
    description: str
    build: object
    options: dict = field(default_factory=dict)
    neighbours: object = None
    neighbours_doc: str = "D' moves row 0 from group a to b"
    protect: str = "sensitive"
    delta: float = 0.0
    release: object = None
    release_doc: str = ""
    controls: tuple = None

    def pair(self):
        """(D, D′): this instance's neighbours (the shared :func:`audit_pair` by default)."""
        return (self.neighbours or audit_pair)()

    def negative_controls(self) -> tuple:
        """The controls this instance runs with ``--negative-control``."""
        from .harness import DEFAULT_CONTROLS

        return DEFAULT_CONTROLS if self.controls is None else tuple(self.controls)


def audit_pair():
    """The neighbouring datasets (D, D′) of the built-in audit instance (module docstring)."""
    import numpy as np

    xa = np.array([0.25, 0.1, -0.8, -0.6, -0.3, 0.3, 0.45, 0.8, 0.9, 0.95])
    ya = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, 1])
    xb = np.linspace(-1.2, 1.2, 10)
    D = Dataset(np.concatenate([xa, xb])[:, None], np.concatenate([ya, (xb > 0).astype(int)]),
                   sensitive=np.array(["a"] * 10 + ["b"] * 10), group_names=["a", "b"])
    return D, D.with_row(0, group="b")


def _base(X):
    import numpy as np

    x = np.asarray(X, dtype=float)[:, 0]
    return ((x >= 0.2) & (x <= 0.5)).astype(float)


def tie_problem(data):
    """Thresholds {0, 0.5, 0.6}; minimize fp[a] + fn[a] − tn[a] (module docstring: t = 0 two
    rows behind on D, level on D′)."""
    r = rates(Thresholds([0.0, 0.5, 0.6], score=0), data, group_mass_bound=0.25)
    return Problem(minimize(r.fp["a"] + r.fn["a"] - r.tn["a"]))


def postprocessed_problem(data):
    """PostProcessed(1[0.2 ≤ x ≤ 0.5]); minimize the error (row 0 moves a tie from a to b)."""
    r = rates(PostProcessed(_base), data)
    return Problem(minimize(r.error()))


#: cells instance: negatives and positives per group (module docstring)
CELLS_NEGATIVES, CELLS_POSITIVES = 100, 50


def cells_pair():
    """Neighbours of the cells instance: 300 rows at the constant feature x = 0.5, each group
    100 negatives then 50 positives; D′ moves row 0 (a negative) from group a to b."""
    import numpy as np

    per_group = CELLS_NEGATIVES + CELLS_POSITIVES
    y = np.array(([0] * CELLS_NEGATIVES + [1] * CELLS_POSITIVES) * 2)
    a = np.array(["a"] * per_group + ["b"] * per_group)
    D = Dataset(np.full((2 * per_group, 1), 0.5), y, sensitive=a, group_names=["a", "b"])
    return D, D.with_row(0, group="b")


def cells3_pair():
    """Neighbours of the three-group proxy instance: 450 rows at x = 0.5, each of groups a, b, c
    100 negatives then 50 positives; D′ moves row 0 (a negative) from group a to b: two
    released statistics and two released counts move (every group's are released)."""
    import numpy as np

    per_group = CELLS_NEGATIVES + CELLS_POSITIVES
    y = np.array(([0] * CELLS_NEGATIVES + [1] * CELLS_POSITIVES) * 3)
    a = np.array(["a"] * per_group + ["b"] * per_group + ["c"] * per_group)
    D = Dataset(np.full((3 * per_group, 1), 0.5), y, sensitive=a, group_names=["a", "b", "c"])
    return D, D.with_row(0, group="b")


def one_cell_problem(data):
    """ProxyCells(1, 1); minimize (fp[a] − 0.1)² (the rule is a function of one count)."""
    r = rates(ProxyCells(1, 1), data)
    return Problem(minimize(square(r.fp["a"] - 0.1)))


def proxy_counts_problem(data):
    """LinearClassifier(1, radius 1) on a constant feature, minimize the error s.t.
    |fpr[a] − fpr[b]| ≤ 0.1 (proxy_reductions: every hypothesis is a constant rule, one
    prediction pattern, so M2 releases the first group's count per label)."""
    r = rates(LinearClassifier(1, radius=1.0), data)
    return Problem(minimize(r.error()), [abs_(r.fpr["a"] - r.fpr["b"]) <= 0.1])


def released_counts(result):
    """proxy_reductions' released (label, pattern) counts of the first group (M2)."""
    import numpy as np

    return np.asarray(result.info["pattern_counts"], dtype=float).ravel()


#: ridge instances: feature bound R, ridge Λ (large: margins stay in the loss's linear part)
RIDGE_R, RIDGE_L2 = 10.0, 1000.0
#: sgda instance: rows per group and the training options (module docstring: q = 1, a fixed λ,
#: public p̃, T = 40 steps at lr 0.01, θ share 0.97, the last iterate, no hold-out split)
SGDA_ROWS = 1000
#: sgda instance's δ when none is asked for: at δ = 10⁻⁵ the loss above ε of a Gaussian with half
#: its noise needs ~4·10⁴ runs per dataset to be seen; at δ = 0.1, 2000 runs refute it
SGDA_DELTA = 0.1
SGDA_OPTIONS = {"fairness": "demographic_parity", "group_probabilities": {"a": 0.5, "b": 0.5},
                "lam": 2.0, "epochs": 40, "clip": 0.25, "batch_size": 2 * SGDA_ROWS,
                "theta_share": 0.97, "average": False, "lr": 0.01, "lr_w": 0.2, "holdout": 0}


def ridge_pair():
    """Row neighbours of the ridge instances: D′ relabels row 0 (x = R) from y = 1 to y = 0."""
    import numpy as np

    R = RIDGE_R
    D = Dataset(np.array([[R], [R], [R], [-R], [-R]]), np.array([1, 1, 0, 1, 0]),
                   sensitive=np.array(["a", "a", "a", "b", "b"]), group_names=["a", "b"])
    return D, D.with_row(0, label=0)


def ridge_problem(surrogate):
    """A builder: SparseLinear(1, l1, radius 1, l2=Λ, no intercept, R); minimize the error."""
    def build(data):
        ds = SparseLinear(1, norm=norms.l1(1), radius=1.0, l2=RIDGE_L2, intercept=False,
                             feature_bound=RIDGE_R, l2_units="scaled")   # Λ as calibrated
        return Problem(minimize(rates(ds, data, surrogate=surrogate,
                                               feature_bound=RIDGE_R).error()))
    build.__doc__ = f"SparseLinear ridge instance, {surrogate} surrogate (module docstring)."
    return build


def released_w(result):
    """The released coefficient w of a one-feature linear decision (a public coordinate of θ)."""
    return result.decisions[0][:1]


def sgda_pair(n_per_group=SGDA_ROWS):
    """Group a: x = (1, 0), y = 1; group b: x = (−1, 0), y = 0; row 0 alone is x = (0, 5), so
    only its own terms move w₂.  D′ moves row 0 from a to b (``protect="sensitive"``)."""
    import numpy as np

    x = np.zeros((2 * n_per_group, 2))
    x[:n_per_group, 0], x[n_per_group:, 0], x[0] = 1.0, -1.0, (0.0, 5.0)
    y = np.array([1] * n_per_group + [0] * n_per_group)
    a = np.array(["a"] * n_per_group + ["b"] * n_per_group)
    D = Dataset(x, y, sensitive=a, group_names=["a", "b"])
    return D, D.with_row(0, group="b")


def sgda_problem(data):
    """TorchModel(Linear(2, 1)) started at w = (1, 0), b = 0; minimize the error."""
    import torch

    lin = torch.nn.Linear(2, 1)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[1.0, 0.0]]))
        lin.bias.fill_(0.0)
    return Problem(minimize(rates(TorchModel(lin, 2, 2), data).error()))


def released_w2(result):
    """w₂ of the released Linear(2, 1) (θ = (w₁, w₂, b)): only row 0 moves it."""
    return result.decisions[0][1:2]


def sgda_dir(result):
    """θ = (w₁, w₂, b) projected on (0, 5, 1)/√26, the direction of row 0's per-example
    gradient p₀(1 − p₀)(x₀, 1).  Measured (issue #16 follow-up): it carries *less* of the shift
    than w₂ alone (the bias also moves with every other row's W-driven fairness term), so the
    instance releases w₂."""
    import numpy as np

    theta = np.asarray(result.decisions[0], dtype=float)
    u = np.array([0.0, 5.0, 1.0]) / np.sqrt(26.0)
    return np.array([float(theta @ u)])


#: lagrangian_sgda instance (module docstring): row 0's second feature (its per-example gradient
#: points along (0, X0, 1)/‖·‖, so w₂ carries X0/√(X0² + 1) of it), the claim's δ when none is
#: asked for (as sgda's: a Gaussian's loss above its claim lives on events of probability ~δ),
#: and the options: one full-batch step (q = 1, T = 1: one Gaussian of sensitivity 2, no
#: subsampling to average over), the histogram's share a² = 10⁻⁴ of the per-row norm (the
#: gradient block keeps b = √(1 − a²) of it), the last iterate, no hold-out split
LAGRANGIAN_X0 = 50.0
LAGRANGIAN_DELTA = 0.1
LAGRANGIAN_OPTIONS = {"epochs": 1, "batch_size": 8, "hist_share": 1e-4, "output": "last",
                      "lr": 1.0, "holdout": 0}


def lagrangian_pair():
    """Row neighbours of the lagrangian_sgda instance: 8 rows, row 0 alone at x = (0, X0) with
    y = 1, the others at x = (±1, 0) (both groups, both labels); D′ relabels row 0 to y = 0
    (``protect="row"``: one whole row replaced)."""
    import numpy as np

    X = np.array([[0.0, LAGRANGIAN_X0], [1, 0], [1, 0], [-1, 0], [-1, 0], [1, 0], [-1, 0],
                  [1, 0]])
    y = np.array([1, 1, 1, 0, 0, 1, 0, 0])
    a = np.array(["a"] * 4 + ["b"] * 4)
    D = Dataset(X, y, sensitive=a, group_names=["a", "b"])
    return D, D.with_row(0, label=0)


def lagrangian_problem(data):
    """LinearClassifier(2, radius 1000) (numpy, no torch); minimize the error.  The radius is
    large so that the released θ (scaled into the ball) is the trained θ itself."""
    r = rates(LinearClassifier(2, radius=1000.0), data)
    return Problem(minimize(r.error()))


def _sgda_controls():
    """sgda's controls: noise × 1/2 and ε × 2, both counted (module docstring)."""
    from .harness import DEFAULT_CONTROLS

    return DEFAULT_CONTROLS


def audit_instances(backend: str) -> list:
    """Candidate :class:`AuditInstance` s for ``backend``, best first (sgda's only with torch,
    the optional extra its model needs)."""
    import importlib.util

    ridge = dict(neighbours=ridge_pair, protect="row", release=released_w,
                 neighbours_doc="D' relabels row 0 (x = R = 10) from y = 1 to y = 0 "
                                "(protect='row': one whole row replaced)",
                 release_doc="the released coefficient w (a fixed public coordinate of θ)")
    dual_fw = {"T": 1, "penalty": 1e-6, "selection_share": 0.02}
    table = [
        AuditInstance("tie", "thresholds t ∈ {0, 0.5} on x, minimize fp[a] + fn[a] − tn[a]",
                      tie_problem, dict(_ITERATIVE.get(backend, {}))),
        AuditInstance("postprocessed", "PostProcessed(1[0.2 <= x <= 0.5]), minimize the error",
                      postprocessed_problem),
        AuditInstance("one_cell", "ProxyCells(1, 1), minimize (fp[a] − 0.1)²", one_cell_problem,
                      {"proxy_share": 0.01}, neighbours=cells_pair,
                      neighbours_doc="300 rows at x = 0.5, each group 100 negatives and 50 "
                                     "positives; D' moves row 0 (a negative) from group a to b"),
        AuditInstance("proxy_counts", "LinearClassifier(1) on x = 0.5, minimize the error s.t. "
                      "|fpr[a] − fpr[b]| ≤ 0.1; 3 best responses", proxy_counts_problem,
                      {"proxy_share": 0.01, "iterations": 3}, neighbours=cells_pair,
                      release=released_counts,
                      neighbours_doc="300 rows at x = 0.5, each group 100 negatives and 50 "
                                     "positives; D' moves row 0 (a negative) from group a to b",
                      release_doc="the released first-group counts per (label, pattern) (M2)"),
        AuditInstance("proxy_counts_3groups", "LinearClassifier(1) on x = 0.5, three groups, "
                      "minimize the error s.t. |fpr[a] − fpr[b]| ≤ 0.1; 3 best responses",
                      proxy_counts_problem, {"proxy_share": 0.01, "iterations": 3},
                      neighbours=cells3_pair, release=released_counts,
                      neighbours_doc="450 rows at x = 0.5, each of three groups 100 negatives "
                                     "and 50 positives; D' moves row 0 (a negative) from group "
                                     "a to b",
                      release_doc="the released counts of the three groups per (label, "
                                  "pattern), projected onto the public totals (M2, Δ₁ = 2)"),
        AuditInstance("ridge_hinge", "SparseLinear(1, l1, radius 1, l2=1000, no "
                      "intercept, R=10), smoothed hinge, minimize the error",
                      ridge_problem("smoothed_hinge"),
                      dual_fw if backend == "dual_frank_wolfe" else {}, **ridge),
        AuditInstance("ridge_logistic", "SparseLinear(1, l1, radius 1, l2=1000, no "
                      "intercept, R=10), logistic, minimize the error",
                      ridge_problem("logistic"),
                      {"jacobian_share": 0.01} if backend == "objective_perturbation" else {},
                      **ridge),
        AuditInstance("sgda_w2", "TorchModel(Linear(2, 1)) from w = (1, 0), "
                      "demographic-parity ERMI at λ = 2, q = 1, T = 40, clip 0.25, θ share "
                      "0.97, lr 0.01, last iterate",
                      sgda_problem, dict(SGDA_OPTIONS), neighbours=sgda_pair, delta=SGDA_DELTA,
                      controls=_sgda_controls(),
                      release=released_w2,
                      neighbours_doc="D' moves row 0 (x = (0, 5)) from group a to b",
                      release_doc="the released w₂ (only row 0's private θ-term moves it)"),
        AuditInstance("lagrangian_w2", "LinearClassifier(2, radius 1000), minimize the error; "
                      "one full-batch step (q = 1, T = 1), histogram share 1e-4, last iterate",
                      lagrangian_problem, dict(LAGRANGIAN_OPTIONS), neighbours=lagrangian_pair,
                      protect="row", delta=LAGRANGIAN_DELTA, release=released_w2,
                      neighbours_doc="D' relabels row 0 (x = (0, 50)) from y = 1 to y = 0 "
                                     "(protect='row': one whole row replaced)",
                      release_doc="the released w₂ (only row 0's clipped gradient moves it)"),
    ]
    if importlib.util.find_spec("torch") is None:
        table = [inst for inst in table if inst.key != "sgda_w2"]
    first = {"postprocessing": "postprocessed", "cells": "one_cell",
             "proxy_reductions": "proxy_counts",
             "output_perturbation": "ridge_hinge", "dual_frank_wolfe": "ridge_hinge",
             "objective_perturbation": "ridge_logistic", "sgda": "sgda_w2",
             "lagrangian_sgda": "lagrangian_w2"}.get(backend, "tie")
    return sorted(table, key=lambda inst: inst.key != first)


def default_runs(backend: str) -> int:
    """Runs on each dataset when none are asked for (:data:`AUDIT_RUNS`)."""
    return AUDIT_RUNS.get(backend, DEFAULT_RUNS)

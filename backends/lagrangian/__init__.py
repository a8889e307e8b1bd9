"""``lagrangian_sgda``: private stochastic gradient descent–ascent on the Lagrangian of any problem.

Problem.  min_θ max_{λ ≥ 0, ‖λ‖₁ ≤ λ_max}  f(ℓ(θ)) + Σ_j λ_j g_j(ℓ(θ)) for any objective f and
constraints g_j ≤ 0 of privfair's language (general expressions of ℓ, not only linear rate
constraints), over a differentiable decision set: ``pf.LinearClassifier`` (numpy; torch is not
needed), ``pf.SoftmaxClassifier`` (multi-class linear rules in numpy, in memory or on Dask) or
``pf.TorchModel`` (torch, CPU or CUDA; multi-class labels), any number of groups.

Algorithm.  RaCO-DP (Yaghini, Cebere, Menart, Bellet, Papernot, ICLR 2026, arXiv 2505.22703;
docs/lagrangian.md), generalized: per Poisson-subsampled step one private histogram of the
batch's (group, label, soft-prediction) counts, from which ℓ̂ and the dual gradient g(ℓ̂) are
post-processed (``histogram``), and a DP-SGD primal step on per-example gradients of
f + λᵀg by the chain rule through ∂f/∂ℓ and ∂g/∂ℓ at ℓ̂ (``models``); dual ascent
λ ← [λ + η_λ g(ℓ̂)]₊.  The loop and its proof are in ``solver``.

Theorem (privacy; ``solver`` module docstring).  Both releases of a step — the histogram and the
clipped gradient sum — are blocks of *one* Poisson-subsampled Gaussian release with per-row norm
1 (block shares a², b², a² + b² = 1), their coefficients functions of earlier releases only, so T
steps are ``subsampled_gaussian_event(z, 1, q, count=T, neighbouring="replace")`` under both
units — ``protect="row"`` (one row replaced: its histogram vector and its full clipped gradient
move) and ``protect="sensitive"``, which by default runs the same row steps (a row whose group
changes is a row replaced; ``sensitive_algorithm="row"``) or, with ``sensitive_algorithm=
"split"``, steps in which only the group-centred histogram and the gradient of the
group-dependent coefficients are private and the group-free parts, which read x, y, θ, are
computed on an independent public batch.  z is fitted once at plan time with
:func:`privfair.privacy.release.calibrate` (PLD), the release is scheduled in a
:class:`~privfair.privacy.release.Schedule` and drawn through :class:`Draws`; the certificate is
the accountant's composition of that one event.  The histogram noise is Gaussian inside the
subsampled release, not RaCO-DP's Laplace (the accountant has no subsampled-Laplace event; see
``solver``).

Theorem (utility).  None proved here: the objective is non-convex in θ and RaCO-DP's
convergence result needs assumptions privfair cannot check; the plan predicts ∞ and ranks the
backend first (``rank = 0``) for differentiable decision sets on the strength of the measured
numbers in docs/lagrangian.md (bench/raco.py), which it says in ``rank_reason``.

Defaults (public rule from n, ε, δ; docs/lagrangian.md "Defaults"): expected batch
m = max(256, n/50) (q = m/n rounded up to the grid 2^(k/4)), ``epochs`` passes (T = ⌈epochs/q⌉), clip C = 1, histogram
share a² = 0.3, primal step ``lr``, dual step ``lr_dual``, ‖λ‖₁ ≤ λ_max = 100 (all J multipliers together), EMA rate 0.9 on the
released histograms, output the uniform mixture of 20 checkpoints of the second half; the
constraints' soft prediction under ``protect="row"`` σ(κ_i·z_i), κ_i = min(5,
10·√P/(‖θ‖·‖x̃_i‖)) (``soft_scale="capped"``, ``models``: never sharper than an angular band
of θ's direction, #18; for a ``TorchModel`` ‖θ‖ over every parameter); ``protect="sensitive"``
runs the row steps (``sensitive_algorithm="row"``: on the validation splits the split steps'
unclipped public objective left the private constraint terms too weak — docs/lagrangian.md);
the split steps read κ = 5 unless "capped" is asked, and the group-free totals from the public
batch (``group_free_totals="batch"``, #19).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..base import PUBLIC, RELEASED, Backend, Plan, Verdict

#: the options this backend reads (docs/lagrangian.md, "Options")
def _table():
    from ..options import Option

    pos = dict(kind="float", low=0.0, low_open=True)
    return (
        Option("epochs", default=10.0, doc="T = ⌈epochs/q⌉ Poisson-subsampled steps", **pos),
        Option("batch_size", default=None, doc="expected Poisson batch m, q = m/n (default "
               "max(256, n/50) rows, ≤ n; below 12,800 rows 256/n rounded up to 2^(k/4))", **pos),
        Option("clip", default=None, doc="per-example clipping C of the Lagrangian gradient "
               "(None: 1, or under objective_surrogate 'cost_log' the median row norm "
               "‖(x, 1)‖, private under protect='row': docs/lagrangian.md, *The default recipe*)",
               **pos),
        Option("lr", default=None, doc="primal step on the mean gradient (None: 2, or 1 under "
               "'cost_log')", **pos),
        Option("lr_dual", "float", None, low=0.0, doc="dual ascent step (None: 1, or 0.03 "
               "under 'cost_log')"),
        Option("hist_share", "float", 0.3, low=0.0, high=1.0, low_open=True, high_open=True,
               doc="a², the batch histogram's share of the per-row norm"),
        Option("ema", "float", 0.9, low=0.0, high=1.0, high_open=True,
               doc="EMA rate of the released histograms (bias-corrected)"),
        Option("lambda_max", default=100.0, doc="bound on ‖λ‖₁ (dual_ball='box': on each λ_j)",
               **pos),
        Option("mass_floor", default=1e-3, doc="public floor of the group-label masses in ℓ̂'s "
               "denominators", **pos),
        Option("output", "str", "mixture", choices=("mixture", "last", "average"),
               doc="the released rule: a mixture of checkpoints of the second half, their "
                   "average, or the last iterate"),
        Option("n_checkpoints", "int", 20, low=1, doc="size of the mixture"),
        Option("objective_surrogate", "str", "auto",
               choices=("auto", "log", "linear", "cost_log"),
               doc="'log' (cross-entropy for the error), 'linear', 'cost_log' "
                   "(pf.LinearClassifier or pf.SoftmaxClassifier: the whole row term as a "
                   "cost-sensitive cross-entropy), "
                   "or 'auto': 'cost_log' for a pf.LinearClassifier or pf.SoftmaxClassifier "
                   "with constraints, none of which (nor the objective) reads a label-"
                   "conditional rate (e.g. demographic parity), or for a binary "
                   "pf.LinearClassifier without constraints and an objective other than "
                   "the error (e.g. minimax), else "
                   "'log' (docs/lagrangian.md, *The default recipe*)"),
        Option("sharpness", default=5.0, doc="κ of the constraints' soft predictions", **pos),
        Option("soft_scale", "str", "auto", choices=("auto", "capped", "fixed", "angle"),
               doc="how the constraints' soft prediction σ(κ_i·z_i) reads the logit: "
                   "'capped' κ_i = min(κ, κ_a·√P/(‖θ‖·‖x̃_i‖)) — never sharper than an "
                   "angular band of θ's direction; 'fixed' κ_i = κ (before #18); 'angle' "
                   "κ_i = κ·√P/(max(1, ‖θ‖)·‖x̃_i‖) (pf.LinearClassifier only); 'auto': "
                   "'capped' under protect='row', 'fixed' under 'sensitive' (a "
                   "pf.LinearClassifier, pf.SoftmaxClassifier or pf.TorchModel); surrogate "
                   "rates read their own "
                   "masses"),
        Option("sensitive_algorithm", "str", "row", choices=("row", "split"),
               doc="protect='sensitive': 'row' runs the row unit's steps (each row's whole "
                   "Lagrangian gradient clipped and noised, the histogram uncentred: DP for a "
                   "whole row replaced, which implies the sensitive relation); 'split' clips "
                   "and noises only the group-dependent parts and reads the group-free ones "
                   "off a public batch B'_t (docs/lagrangian.md, *Which steps run under "
                   "protect='sensitive'*)"),
        Option("group_free_totals", "str", "batch", choices=("exact", "batch"),
               doc="sensitive_algorithm='split': the group-free totals Σ_g C[g, y, ŷ] (public: x, y, θ "
                   "only) from the public batch B'_t ('batch', one batch a step) or from every "
                   "row each step ('exact', n rows a step)"),
        Option("angle_sharpness", default=10.0, doc="κ_a, the angular band of "
               "soft_scale='capped'", **pos),
        Option("randomize", "int", 0, low=0, doc="k > 0: each released linear rule becomes the "
               "mixture of k intercept shifts matching the trained soft rule (0: hard rules)"),
        Option("dual_ball", "str", "l1", choices=("l1", "box"),
               doc="'l1' (‖λ‖₁ ≤ lambda_max) or 'box' (each λ_j ≤ lambda_max)"),
        Option("normalize", "bool", False, doc="primal step on (f + λᵀg)/(1 + ‖λ‖₁)"),
        Option("dual_scale", "bool", False, doc="dual step lr_dual·√(2/J) for J > 2 pieces"),
        Option("lr_schedule", "str", None, choices=("constant", "cosine"),
               doc="primal step-size schedule: constant, or cosine decay to 0 over the T steps "
                   "(None: cosine under 'cost_log', else constant)"),
        Option("dual_schedule", "str", None, choices=("constant", "cosine"),
               doc="dual step-size schedule: constant, or cosine decay to 0 over the T steps "
                   "(None: cosine under 'cost_log', else constant)"),
    )


def _plan_params():
    """What a plan puts in Plan.params, declared once (checked when the plan is made)."""
    from ..options import Param, from_options

    return (
        Param("protect", str, "the privacy unit: 'row' or 'sensitive'"),
        Param("algorithm_unit", str, "the unit whose steps run: 'row' (protect='row', or "
              "'sensitive' with sensitive_algorithm='row') or 'sensitive' (the split steps)"),
        Param("T", int, "the steps, ⌈epochs/q⌉"),
        Param("sampling_rate", float, "q, the Poisson sampling rate"),
        Param("batch_size", float, "the expected Poisson batch q·n"),
        *from_options(OPTIONS_TABLE, "epochs"),
        Param("noise_multiplier", float, "z, fitted at plan time (0 when not private)"),
        Param("clip", (float, None), "C as asked, or its default 1; None: the median row norm "
              "chosen at run time (objective_surrogate 'cost_log', recipe.clip_scale)"),
        Param("clip_rule", str, "'fixed' (C = clip), 'median' (x public: the exact median row "
              "norm) or 'private median' (protect='row': the exponential mechanism)"),
        Param("median_epsilon", float, "ε_m of the private median (0 unless 'private median')"),
        Param("lr", float, "the primal step (the option, or its recipe's value)"),
        Param("lr_dual", float, "the dual step (the option, or its recipe's value)"),
        *from_options(OPTIONS_TABLE, "hist_share", "lambda_max", "ema", "mass_floor", "output"),
        Param("checkpoint_steps", list, "the steps whose iterates the output reads (ints)"),
        *from_options(OPTIONS_TABLE, "objective_surrogate", "sharpness"),
        Param("soft_scale", str, "the soft_scale a run reads ('auto' resolved)"),
        *from_options(OPTIONS_TABLE, "sensitive_algorithm", "group_free_totals",
                      "angle_sharpness", "randomize",
                      "dual_ball", "normalize", "dual_scale", "lr_schedule", "dual_schedule"),
        Param("public_rate", float, "q', the rate of the public batch B'_t of the split "
              "steps (q unless PUBLIC_ROWS caps it; unused by the row steps)"),
        Param("private", bool, "whether the steps are private (ε < ∞)"),
    )


#: the options, declared once (type, range, default, doc): docs/lagrangian.md has the measured
#: reasons for each default
OPTIONS_TABLE = _table()


def default_rate(n: int) -> float:
    """The default sampling rate: m = max(256, n/50) rows a batch (capped at n), q = m/n (1/50
    for n ≥ 12,800; below, 256/n rounded *up* to the grid 2^(k/4)) — public (n only); the grid makes q, hence T and the calibrated z,
    the same for nearby n, so plans at many n (``pf.report``'s sample-size search) reuse one
    calibration (it is cached by (ε, δ, T, q))."""
    if n >= 50 * 256:
        return 1.0 / 50.0                  # m = n/50: q is already the same for every n
    q = min(1.0, 256.0 / n)
    return min(1.0, 2.0 ** (math.ceil(4.0 * math.log2(q) - 1e-9) / 4.0))


#: a cap on the public batch B'_t of protect="sensitive" (expected rows), or None: B'_t at the
#: private batch's rate q.  Off: a cap of 4,096 rows (q' = q/3 there) changed the released rules
#: on bench/gpu.py's synthetic at 10⁶ rows (validation split) — docs/lagrangian.md, *The public
#: batch B'_t* (#19); kept so that bench/lagrangian_validation.py can measure other caps
PUBLIC_ROWS = None


def public_rate(n: int, q: float) -> float:
    """q', the rate of the public batch B'_t under ``protect="sensitive"``: q (the private
    batch's rate), or with a :data:`PUBLIC_ROWS` cap min(q, PUBLIC_ROWS/n) — public (n, q
    only).  B'_t estimates the group-free gradient and totals, scaled by q/q' (unbiased at any
    q'; the privacy proof holds for any q' — ``solver``)."""
    if PUBLIC_ROWS is None or n <= 0:
        return q
    return min(q, PUBLIC_ROWS / n)


#: the smallest noise multiplier tried (a PLD of a much narrower Gaussian is slow to build and
#: no default run needs less noise; a huge ε then gets z = Z_MIN: more noise than needed, sound)
Z_MIN = 0.5


def noise_multiplier(epsilon, delta, T, q, eps_m=0.0) -> float:
    """z: the smallest noise multiplier of T Poisson-subsampled Gaussian steps (rate q,
    substitution, per-row norm 1) that the accountant proves (ε, δ)-DP — composed with the
    clip scale's exponential mechanism at ε_m where ``eps_m`` > 0 (:mod:`.recipe`) — at least
    :data:`Z_MIN`, fitted with the one calibration function,
    :func:`privfair.privacy.release.calibrate` (cached by its public key)."""
    from privfair.privacy import calibrate

    from .recipe import median_event

    first = [median_event(eps_m)] if eps_m > 0 else []
    # every rule (PLD where it applies; below δ = 1e-10 or past 10⁶ steps only RDP does — with
    # rules=("pld",) a default δ = 1/n² at n ≥ 10⁵ found no scale and auto failed)
    x = calibrate(lambda x: first + [_event(1.0 / x, q, T)], epsilon, delta, hi=1.0 / Z_MIN,
                  steps=14, key=("lagrangian_sgda", T, q) + ((eps_m,) if eps_m > 0 else ()))
    return 1.0 / x


@functools.lru_cache(maxsize=64)
def _schedule(epsilon, delta, T, q, unit, z, eps_m=0.0):
    """The plan's scheduled releases — the clip scale's private median where ``eps_m`` > 0,
    then the steps — checked against (ε, δ) by the accountant (Schedule's own check); cached on
    its public parameters — a Schedule is immutable and every run opens its own Draws on it."""
    from privfair.privacy import Schedule, Scheduled

    from .recipe import median_event

    first = [Scheduled("clip_scale", median_event(eps_m))] if eps_m > 0 else []
    return Schedule(first + [Scheduled("steps", _event(z, q, T, unit))], epsilon, delta)


def _event(z, q, T, unit="row"):
    from privfair.privacy import subsampled_gaussian_event

    src = ("per-row vector (a·h_i/H, b·clip_C(∇ψ_i)/C), a² + b² = 1: " + (
        "h_i = p_i ⊗ e_(g_i, y_i), ‖h_i‖ ≤ ‖p_i‖₁ = 1 (H = 1), ∇ψ_i the row's Lagrangian "
        "gradient clipped to C (one row replaced)" if unit == "row" else
        "h_i = p_i ⊗ (e_g_i − 1/G) at y_i, ‖h_i‖ ≤ √(1 − 1/G) = H, ∇ψ_i the gradient of the "
        "row's group-dependent coefficients clipped to C (one row's group changes; group-free "
        "parts on an independent public batch)") + " → per-row norm ≤ 1")
    return subsampled_gaussian_event(
        z, 1.0, q, count=T, neighbouring="replace", sensitivity_source=src,
        label="lagrangian_sgda steps (histogram + gradient, one Poisson batch each)")


def _unit(P) -> str:
    """The unit whose steps a plan's parameters run (plans made before the option: their
    protect)."""
    return P.get("algorithm_unit", P["protect"])


def _soft_scale(asked, rates, protect):
    """The ``soft_scale`` a run reads (docs/lagrangian.md, *The constraints' soft prediction*):
    for a ``LinearClassifier`` without a surrogate as asked, "auto" being "capped" under
    ``protect="row"`` and "fixed" under "sensitive"; for a ``TorchModel`` the same "auto" rule
    ("angle" is for the linear rule only: a TorchModel asking it reads "fixed"); "fixed" for
    surrogate rates (their masses are the surrogate's); a ``SoftmaxClassifier`` as a
    ``TorchModel`` (``models.SoftmaxAdapter``: the capped band with √(d+1) per logit).  The TorchModel's "auto" followed the
    linear rule's on 2026-11-26 after its validation (``--model torch``, docs/lagrangian.md):
    under "row" the 50-feature synthetic went from the constant fallback (0.4706) to 0.2775 /
    DP 0.0169 with "capped", Adult within the seed spread, COMPAS and the 8-group set falling
    back under both.

    Why "auto" depends on the unit: the runaway "capped" cures comes from clipping the
    objective's row gradient (clipped rows are normalised, and the cross-entropy of confidently
    classified rows outweighs a vanishing constraint term); under "sensitive" the objective's
    group-free part is public and unclipped, and on the validation splits (docs/lagrangian.md)
    "capped" was no better there (Adult DP 0.0088 ± 0.0092 against 0.0043 ± 0.0024; the two
    synthetic problems fell back to the constant rule 3/3 where "fixed" returned rules)."""
    kind = type(rates.decisions).__name__
    if kind == "LinearClassifier" and getattr(rates, "surrogate", None) is None:
        if asked == "auto":
            return "capped" if protect == "row" else "fixed"
        return asked
    if kind in ("TorchModel", "SoftmaxClassifier"):
        if asked == "auto":
            return "capped" if protect == "row" else "fixed"
        return "capped" if asked == "capped" else "fixed"
    return "fixed"


def _options(options):
    """``options`` validated against :data:`OPTIONS_TABLE` (typed errors naming the option, the
    value and the fix, before anything is spent), defaults filled in."""
    from ..options import validate

    return validate(OPTIONS_TABLE, options, "lagrangian_sgda")


def randomized(decisions, weights, kappa, k):
    """Each hard rule 1[x·w + b > 0] replaced by the uniform mixture of the k rules
    1[x·w + b + δ_j > 0], δ_j = logit((j − ½)/k)/κ: its expected prediction is σ(κ·(x·w + b))
    rounded to a multiple of 1/k — the soft rule the constraints were trained on (κ the
    ``sharpness``), so the released rates are the trained ones.  Post-processing of the
    trained θ; run() then scales every component into the ball (the same rule)."""
    u = (np.arange(k) + 0.5) / k
    base = np.log(u / (1 - u))
    kappas = np.broadcast_to(np.asarray(kappa, dtype=float), (len(decisions),))
    out_d, out_w = [], []
    for d, w, kap in zip(decisions, weights, kappas):
        for s_ in base / kap:
            th = np.array(d, dtype=float)      # the trained (unscaled) θ
            th[-1] += s_
            out_d.append(th)
            out_w.append(w / k)
    return out_d, out_w


class LagrangianSGDA(Backend):
    name = "lagrangian_sgda"
    theorem = ("private Lagrangian SGDA (RaCO-DP, Yaghini et al. ICLR 2026, generalized to any "
               "f, g of ℓ): Poisson-subsampled Gaussian per step (histogram + gradient), PLD")
    needs_group_mass = False      # no sensitivity of ℓ is used: the histogram is released
    always_ranks_first = True     # every plan has rank 0 (plan(): measured, not bounded)
    option_table = OPTIONS_TABLE
    plan_params = _plan_params()
    exposes = {
        "lambda": (RELEASED, "the final dual variables: post-processing of the histograms"),
        "rates_estimate": (RELEASED, "ℓ̂ from the EMA of the released histograms"),
        "label_counts_estimate": (RELEASED, "the training rows per label: the released "
                                            "histograms' label margins summed over the T "
                                            "steps, / (T·q)"),
        "noise_multiplier": (PUBLIC, "z from ε, δ, T, q (plan time)"),
        "histogram_noise": (PUBLIC, "σ of a histogram cell per step: z·H/a"),
        "gradient_noise": (RELEASED, "σ of the gradient sum per step: z·C/b (C public, or "
                                     "the private median's release)"),
        "clip": (RELEASED, "C: as asked, or the median row norm (exact where x is public, "
                           "else the exponential mechanism's release)"),
        "checkpoint_steps": (PUBLIC, "the planned checkpoint steps"),
        "unit": (PUBLIC, "the privacy unit"),
        "algorithm_unit": (PUBLIC, "whose steps ran: the option sensitive_algorithm and the unit"),
        "output": (PUBLIC, "the output rule"),
    }

    # ------------------------------------------------------------------------- accepts
    def accepts(self, problem, analysis) -> Verdict:
        import importlib.util

        from privfair.models.decisions import LinearClassifier

        r = problem.rates
        ds = getattr(r, "decisions", None)
        if isinstance(ds, LinearClassifier):
            if r.L != 2:
                from privfair.models.decisions import multiclass_hint

                return Verdict(False, multiclass_hint())
            # surrogate rates run on a Dask dataset too (#19): a pass clips its chunk's rows
            # to the public feature bound on the worker (models.RowTerms.clipped)
        elif type(ds).__name__ == "SoftmaxClassifier":
            if ds.n_classes != r.L:
                return Verdict(False, f"the model has {ds.n_classes} classes, the data {r.L}")
            # on a Dask dataset too: each step is a pass on the workers
            # (models.softmax_batch_pass), only sums come back
        elif type(ds).__name__ == "TorchModel":
            # on a Dask dataset too (#19): each step is a pass on the workers, which compute
            # their sampled rows' per-example gradients on CPU (models.torch_batch_pass); a
            # device other than the CPU is refused there before anything is spent (TorchAdapter)
            if importlib.util.find_spec("torch") is None:    # pragma: no cover
                return Verdict(False, "pf.TorchModel needs torch: pip install torch")
            if ds.n_classes != r.L:
                return Verdict(False, f"the model has {ds.n_classes} classes, the data {r.L}")
        else:
            return Verdict(False, "the decision set must be differentiable (pf.LinearClassifier, "
                                  f"pf.SoftmaxClassifier or pf.TorchModel); got {type(ds).__name__}")
        priv = analysis.privacy
        if priv.is_private and priv.delta <= 0:
            return Verdict(False, "the Gaussian release needs δ > 0, e.g. pf.DP(1.0, 1e-5)")
        # (at ε = ∞ nothing is released, so one group is only a non-private fit: accepted)
        if priv.is_private and priv.protect == "sensitive" and r.G < 2:
            return Verdict(False, "protect='sensitive' with one group: nothing is private; "
                                  "declare the groups")
        return Verdict(True)

    # ---------------------------------------------------------------------------- plan
    def plan(self, problem, analysis, privacy, options) -> Plan:
        from . import recipe

        o = _options(options)
        r = problem.rates
        n = r.n
        # "auto" and the options left at None: the recipe of the surrogate (public: the
        # problem's form and the options, never the rows)
        surrogate = recipe.recipe_for(problem, o["objective_surrogate"])
        o = recipe.fill(dict(o, objective_surrogate=surrogate), surrogate)
        if o["objective_surrogate"] == "cost_log" and (
                type(r.decisions).__name__ not in ("LinearClassifier", "SoftmaxClassifier")
                or getattr(r, "surrogate", None) is not None):
            from privfair.errors import InvalidInputError

            raise InvalidInputError(
                "objective_surrogate", "cost_log",
                "'cost_log' is implemented for pf.LinearClassifier (without a rate surrogate) "
                "and pf.SoftmaxClassifier; use 'log' here")
        if o.get("batch_size"):
            q = min(1.0, max(1.0 / n, min(float(n), o["batch_size"]) / n))
        else:
            q = default_rate(n)
        T = max(1, int(math.ceil(o["epochs"] / q)))
        half = T // 2
        # "average" reads the mixture's checkpoints too (their mean θ): before, it read one
        # checkpoint, so "average" released the last iterate
        mix = o["output"] in ("mixture", "average")
        K = max(1, min(o["n_checkpoints"], T - half)) if mix else 1
        steps = (sorted({half + int(round((i + 1) * (T - half) / K)) - 1 for i in range(K)})
                 if mix else [T - 1])
        private = privacy.is_private
        # the steps that run: the row unit's unless the split ones are asked under "sensitive"
        # (a row's group changing is a row replaced, so the row steps prove both relations)
        unit = "sensitive" if (privacy.protect == "sensitive"
                               and o["sensitive_algorithm"] == "split") else "row"
        # the clip: as asked; else the cost-sensitive recipe's median row norm (x public under
        # "sensitive": read exactly; private under "row": an exponential mechanism at ε_m,
        # composed with the steps) — or 1
        if o["clip"] is not None:
            clip, clip_rule = float(o["clip"]), "fixed"
        elif o["objective_surrogate"] == "cost_log" and private:
            clip, clip_rule = None, ("private median" if privacy.protect == "row" else "median")
        else:
            clip, clip_rule = 1.0, "fixed"
        eps_m = (recipe.median_epsilon(privacy.epsilon, n) if clip_rule == "private median"
                 else 0.0)
        z = noise_multiplier(privacy.epsilon, privacy.delta, T, q, eps_m) if private else 0.0
        params = {"protect": privacy.protect, "algorithm_unit": unit, "T": T, "sampling_rate": q, "batch_size": q * n,
                  "epochs": o["epochs"], "noise_multiplier": z, "clip": clip, "clip_rule": clip_rule,
                  "median_epsilon": eps_m,
                  "hist_share": o["hist_share"], "lr": o["lr"], "lr_dual": o["lr_dual"],
                  "lambda_max": o["lambda_max"], "ema": o["ema"], "mass_floor": o["mass_floor"],
                  "output": o["output"], "checkpoint_steps": steps,
                  "objective_surrogate": o["objective_surrogate"], "sharpness": o["sharpness"],
                  # the direction-based bands exist for a LinearClassifier's logit only
                  "soft_scale": _soft_scale(o["soft_scale"], r, unit),
                  "sensitive_algorithm": o["sensitive_algorithm"],
                  "group_free_totals": o["group_free_totals"],
                  "angle_sharpness": o["angle_sharpness"],
                  "randomize": o["randomize"], "dual_ball": o["dual_ball"], "normalize": o["normalize"],
                  "dual_scale": o["dual_scale"], "lr_schedule": o["lr_schedule"],
                  "dual_schedule": o["dual_schedule"], "private": private,
                  "public_rate": public_rate(n, q)}
        budget, notes = [], []
        sched = None
        if private:
            sched = _schedule(privacy.epsilon, privacy.delta, T, q, unit, z, eps_m)
            if eps_m > 0:
                budget.append(("the clip scale: the median row norm ‖(x, 1)‖ on a public grid, "
                               "by the exponential mechanism (Δu = 1), composed with the steps",
                               eps_m, 0.0))
            budget.append((f"{T} Poisson-subsampled Gaussian steps (q = {q:.3g}, z = {z:.3g}): "
                           "histogram and clipped Lagrangian gradient in one release"
                           + ("; with the clip scale's release, (ε, δ) in the accountant's "
                              "composition" if eps_m > 0 else ""),
                           privacy.epsilon, privacy.delta))
        if privacy.protect == "sensitive" and unit == "row":
            notes.append("protect='sensitive' runs the row unit's steps (sensitive_algorithm="
                         "'row'): every row's whole Lagrangian gradient is clipped and noised, "
                         "which is DP for a whole row replaced and so for its group changing "
                         "(docs/lagrangian.md)")
        if o["objective_surrogate"] == "cost_log":
            notes.append("trains the cost-sensitive row term (a cross-entropy towards the "
                         "cheaper label, weighted by the cost difference — two labels: label "
                         "1[d < 0], weight |d|; the reductions approach's best response), lr "
                         f"{o['lr']:g}, lr_dual "
                         f"{o['lr_dual']:g}, {o['lr_schedule']} / {o['dual_schedule']} steps"
                         + (" — objective_surrogate='auto' for a parity problem (no "
                            "label-conditional rate)" if "objective_surrogate" not in (options or {})
                            else "")
                         + ("; clip C = the median row norm ‖(x, 1)‖" + (
                             ", chosen privately" if clip_rule == "private median" else
                             " (x is public)") if clip is None else "")
                         + " (docs/lagrangian.md, *The default recipe*)")
        notes.append("predicted excess risk ∞: no utility theorem is proved for this non-convex "
                     "game; ranked on measured behaviour (docs/lagrangian.md)")
        if not private:
            notes.append("ε = ∞: the steps are neither noised nor clipped (the clip only bounds "
                         "what the noise must hide) — the method without privacy, not the "
                         "private run's limit; on Adult's equalized odds it ends near the "
                         "constant rule where ε = 100 does not (docs/lagrangian.md, 'Equalized "
                         "odds on Adult')")
        if getattr(r, "surrogate", None) is None and type(r.decisions).__name__ == \
                "LinearClassifier":
            notes.append("trains on σ(x·w + b) soft predictions; the released rule 1[x·w + b > 0] "
                         "is scaled into the ball (the same rule)")
        out = Plan(self.name, privacy, analysis, problem, params=params, budget=budget,
                   predicted_excess_risk=math.inf if private else math.inf,
                   theorem=self.theorem, notes=notes, rank=0,
                   rank_reason=("a differentiable decision set with any convex f, g of ℓ: the "
                                "private Lagrangian SGDA handles both privacy units, many groups "
                                "and labels; measured on Adult, COMPAS and 8-group synthetic "
                                "data (docs/lagrangian.md)"))
        out.schedule = sched
        out.run_options = o
        return out

    # ----------------------------------------------------------------------------- run
    def run(self, plan, *, rng, accountant, device="cpu", progress=True):
        from privfair.privacy.mechanisms import float_generator
        from privfair.privacy.randomness import as_source
        from privfair.results.result import Result

        from . import solver
        from .models import LinearAdapter, SoftmaxAdapter, TorchAdapter

        problem, P = plan.problem, plan.params
        r = problem.rates
        log_obj = P["objective_surrogate"] == "log"
        if type(r.decisions).__name__ == "SoftmaxClassifier":
            adapter = SoftmaxAdapter(r, log_objective=log_obj, sharpness=P["sharpness"],
                                     soft_scale=P.get("soft_scale", "fixed"),
                                     angle_sharpness=P.get("angle_sharpness", 10.0),
                                     cost_sensitive=P["objective_surrogate"] == "cost_log")
        elif type(r.decisions).__name__ == "TorchModel":
            dev = "cuda" if device == "cuda" else "cpu"
            adapter = TorchAdapter(r, device=dev, log_objective=log_obj,
                                   sharpness=P["sharpness"],
                                   soft_scale=P.get("soft_scale", "fixed"),
                                   angle_sharpness=P.get("angle_sharpness", 10.0))
        else:
            adapter = LinearAdapter(r, log_objective=log_obj, sharpness=P["sharpness"],
                                    cost_sensitive=P["objective_surrogate"] == "cost_log",
                                    soft_scale=P.get("soft_scale", "fixed"),
                                    angle_sharpness=P.get("angle_sharpness", 10.0))
        draws = plan.schedule.open(accountant, rng) if plan.schedule is not None else None
        source = draws.source if draws is not None else as_source(rng)
        gen = float_generator(source)
        if P["clip"] is None:
            # the cost-sensitive recipe's C: the median row norm of the rows trained on (one
            # pass), exact where x is public, else the scheduled exponential mechanism — before
            # the first step, so the steps' noise scale z·C is fixed before they run
            from .recipe import clip_scale

            private_median = P["clip_rule"] == "private median"
            P = dict(P, clip=clip_scale(r.data.rows(), r.n,
                                        draws if private_median else None))
        # a Dask dataset's steps are passes over Poisson samples drawn on the workers from
        # per-partition seeds of ``source`` (solver.PassBatches); in memory, ``gen`` samples
        ckpts, trace, state = solver.train(problem, adapter, P, draws, gen, progress,
                                           source=source)
        if P["output"] == "last" or not ckpts:
            decisions, weights = [state["last"]], [1.0]
        elif P["output"] == "average":
            decisions, weights = [np.mean(ckpts, axis=0)], [1.0]
        else:
            decisions, weights = ckpts, [1.0 / len(ckpts)] * len(ckpts)
        if isinstance(adapter, LinearAdapter) and r.surrogate is None and P["randomize"]:
            # the intercept shifts of the fixed-κ soft rule (under "capped" the rows whose band
            # is angular read a softer one: the shifts are then an approximation)
            decisions, weights = randomized(decisions, weights, P["sharpness"], P["randomize"])
        decisions = [adapter.release(d) for d in decisions]
        z, C, a2 = P["noise_multiplier"], P["clip"], P["hist_share"]
        Hb = math.sqrt(1 - 1 / r.G) if _unit(P) == "sensitive" else 1.0
        info = {"lambda": state["lambda"], "rates_estimate": state["rates_estimate"],
                "label_counts_estimate": state["label_counts"],
                "noise_multiplier": z, "histogram_noise": z * Hb / math.sqrt(a2),
                "gradient_noise": z * C / math.sqrt(1 - a2),
                "checkpoint_steps": list(P["checkpoint_steps"]), "unit": P["protect"],
                "clip": C,
                "algorithm_unit": _unit(P),
                "output": P["output"]}
        return Result(self.name, decisions, weights, r.decisions, plan=plan, trace=trace,
                      info=info)


from .. import register  # noqa: E402

register(LagrangianSGDA())

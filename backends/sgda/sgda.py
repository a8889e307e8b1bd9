"""DP-SGDA on the ERMI regularizer (DP-FERMI) — [L] §3, Algorithm 1, Thm 3.3–3.4, App. C–D.

Problem.  min_θ max_W  L̂(θ) + λ·(1/n) Σ_i ψ_i(θ, W): cross-entropy L̂ as the surrogate of the
error, ψ_i the ERMI min-max pieces of ``backends/sgda/ermi.py`` (demographic parity: ERMI of (Ŷ, A);
equalized odds: the conditional ERMI given Y, one W-slice per label).  Decisions: a
``pf.LinearClassifier`` (logistic regression, θ projected on its ball) or a ``pf.TorchModel``
(any torch module; multi-class labels; any number of groups).

Algorithm (what runs; ``protect="sensitive"``: X and y public, the group A private)::

    release ñ[g, y] = n[g, y] + Lap(2/ε_count)                  (skipped for public p̃)
    p̃ = group probabilities from ñ (p̃(r), or p̃(r | y) for equalized odds)
    for t = 1..T  (stage s: λ = λ_s of the public path, T/k steps each):
        B'_t, B_t ← two independent Poisson samples of rate q   (each row w.p. q)
        public  (on B'_t; no A):  g_θ = Σ ∇θCE_i + λ Σ J̃_iᵀ(v + k_ref)[c_i],  g_W = −2 W ⊙ Σ F_i
        private (on B_t):  S_θ = Σ J̃_iᵀ k̄[c_i, a_i] + N(0, (z_θ C_θ,t)² I),
                           S_W = 2(D̃ + Σ_{B'_t} F/G)/√p̃,  D̃ = Σ F_i ⊗ (e_{a_i} − 1/G)
                                 + z_W √(1 − 1/G)·ΠN(0, I)   (Π: centring over groups)
        θ ← Π_Θ(θ − η_θ/(1 + λ)·(g_θ + λ S_θ)/(qn));   W ← Π_D(W + η_W (g_W + S_W)/(qn·h))
        (h = 1, or with w_step="newton" ψ's public diagonal curvature in W: see ``w_step``)
        θ̄_s = mean of θ over the second half of stage s         (post-processing)
    choose s privately (below: AboveThreshold, or permute-and-flip on err + P·max(0, g)),
    output θ̄_s

Privacy (per-player sensitivities; the module docstring of ``ermi.py`` derives the pieces).
Changing a_i leaves x_i, y_i, hence the public pieces and B'_t, unchanged; only the private
sums move, through row i's contribution on B_t (if sampled):

* W-player: 2w_c F_i/√p̃[c_i, a_i] at one slot (c_i, a_i).  Released as the group-centred
  sums of F (``w_noise="centered"``, ``_sgda_train.w_release``): row i's piece F_i ⊗ (e_{a_i} −
  1/G), norm ≤ √(1 − 1/G), noise z_W·√(1 − 1/G) in the centred subspace; the group totals come
  from the public batch B'_t; then S_W = 2(D̃ + Σ'F/G)/√p̃ is post-processing (p̃ released or
  public: the private ρ of [L] is never read).  Per slot the noise is z_W(1 − 1/G)·B_W[c, r],
  B_W = 2w_c/√p̃ — (1 − 1/G) of the per-slot release's, half for two groups (``"per_slot"``:
  slot (c, r) divided by B_W[c, r], noise z_W·B_W[c, r]; ``"uniform"``: the worst slot's
  C_W = max B_W everywhere).
* θ-player: only the fairness term reads a_i: J̃_iᵀ k̄[c_i, a_i], k̄ = 2W/√p̃ minus its public
  midrange over groups k_ref (whose part J̃_iᵀk_ref[c_i] is a-free and joins g_θ), centred over
  labels, J̃_i = J_i·min(1, ζ/‖J_i‖_F) — a factor that does not depend on a_i (applied to both
  pieces, so their sum is ∇θ Σ f_i ψ_i: a public reweighting), so groups are never clipped
  differently; ‖·‖₂ ≤ C_θ,t = ζ·max_{c,r}‖k̄[c,r]‖ (public at step t).  The loss
  gradient needs no noise (it reads no A) and is taken on the independent sample B'_t, so the
  noiseless part reveals nothing about B_t and amplification by subsampling stays valid.
* One step releases both sums on the same B_t: scaling the blocks by 1/(z_θ C_θ,t) and
  1/(z_W B_W[c, r]) gives unit noise and per-row norm ≤ (z_θ⁻² + z_W⁻²)^½ = 1/z, so T steps are the
  Poisson-subsampled Gaussian mechanism with noise multiplier z under substitution
  (``subsampled_gaussian_event(z, 1, q, count=T, neighbouring="replace")``; at q = 1 the Gaussian
  of sensitivity 2), z fitted at plan time (``schedule.py``: ``privfair.privacy.calibrate``)
  to what the other two releases leave of (ε, δ); z_θ = z/√s_θ, z_W = z/√(1 − s_θ).
* The count release (Laplace, ‖Δñ‖₁ ≤ 2) and the choice of λ (ε_select, pure) compose with it;
  the three are the plan's :class:`~privfair.privacy.Schedule`, and every noise is drawn through
  it (``schedule.open(accountant, rng)``); the certificate is the accountant's total.  [L] Thm 3.3's closed form (σ_w² ≥ 16T ln(1/δ)/(ε²n²ρ),
  σ_θ² ≥ 16L²D² ln(1/δ)T/(ε²n²ρ), stated for ε ≤ 2 ln(1/δ), T ≥ (n√ε/2m)², with the private ρ)
  is reported beside the accountant's σ in ``result.info["noise"]``.

Equalized odds weighs the label slices equally by default (``slice_weights="balanced"``:
ψ_i × n/(S·n_{y_i}), y public; [L]'s conditional ERMI weighs them by p(y): "proportional");
scaling a slice leaves its W-maximiser alone and multiplies its bounds, which C_W and k̄ carry.

Knob mapping (docs/sgda.md; code in ``select.py``).  A constraint g ≤ 0 of the problem
(|gap|, maximum, norm_inf or lse of selection-rate gaps → demographic parity; of fpr/tpr/tnr/fnr
or multi-class rate gaps → equalized odds; one-sided gaps too) maps to λ by one of three rules over
the public path (default 0, 1, 2, 4, …, 128), each ε_select-DP for the one choice it outputs:
``select="first"``: the first checkpoint θ̄_s with g(ℓ(θ̄_s)) ≤ −margin, found with
AboveThreshold (Dwork & Roth 2014, Thm 3.23: threshold noise Lap(2Δg/ε_select), query noise
Lap(4Δg/ε_select)), the last checkpoint if none passes; ``select="penalized"``: permute-and-flip
(McKenna & Sheldon 2020) on −(err_s + P·max(0, g_s + margin)), Δu = P·Δg since the training
error reads x, y only (public under protect="sensitive"); ``select="mixture"``: the same over
the checkpoints and their two-checkpoint mixtures (a mixture's rates move by ≤ Δℓ too).
Δg = min over norms L_g·Δℓ (rates
clamped with the declared group-mass bound, or with lower bounds from the released counts).
``lam=`` fixes λ (no selection, nothing spent on it).

Theorem ([L] Thm 3.4).  E‖∇FERMI(θ̂)‖² = O(√(max(d_θ, kl)·ln(1/δ))/(εn)) for a uniformly random
iterate, with unspecified constants and smoothness assumptions — a stationarity bound, not an
excess risk: the plan predicts ∞ (so ``auto`` does not pick it spuriously); the rate at constant
1 is :func:`privfair.analysis.formulas.l34_bound` (params["stationarity_rate"]), and ``formula`` returns
it times C_L = ∞.

Defaults: chosen on a validation split of adult.data (docs/sgda.md, "How the defaults were
chosen"); equalized odds overrides some, keyed on the public ε (``eo_defaults``).
``temperature`` τ (default 1) makes ψ read F_τ = softmax(z/τ) (a public, a-free change: ‖F_τ‖ ≤ 1
and J_τ is clipped like J, so every bound above holds); it did not help on Adult's validation
split and stays off.

Corrections to [L] Algorithm 1 as printed: P̂_S (and ρ) are private — released here; noise on
the loss gradient is unnecessary under sensitive-attribute privacy (and its minibatch is
independent); per-row clipping is a-independent; Poisson sampling (what the accountant models),
not shuffled epochs; both players' releases are composed, not accounted separately; the θ step is scaled by 1/(1 + λ) and W's step does not carry λ (the
W-maximiser is independent of λ); the output is a stage's tail average, not a random iterate.
"""

from __future__ import annotations

import math

import numpy as np

from privfair.analysis import formulas as F
from privfair.analysis import gap_terms as GT  # the constraint → gap-terms recogniser

from . import ermi as E
from . import schedule as SCH
from . import select as SEL
from . import train as T_
from ..base import PUBLIC, RELEASED, Backend, Plan, Verdict
from ..options import Param, from_options
from .options import (DEFAULTS, EO_DEFAULTS, EO_DEFAULTS_LOW,  # noqa: F401 (public)
                            EO_LOW_EPSILON, OPTIONS, bad_option, declared_p, eo_defaults,
                            problem_shape, resolve_options)
from .train import adapter_for, torch_device, w_step  # noqa: F401 (w_step: public)

BETA = SEL.BETA          # failure probability of the group-mass bounds from the released counts


class SGDABackend(Backend):
    name = "sgda"
    exposes = {
        "lambdas": (PUBLIC, "the planned λ path"),
        "chosen_lambda": (RELEASED, "the private choice of λ"),
        "chosen_index": (RELEASED, "the private choice of λ"),
        "chosen_mixture": (RELEASED, "the private choice of the mixture"),
        "chosen_indices": (RELEASED, "the private choice of the mixture"),
        "train_errors": (RELEASED, "released checkpoints scored on x, y (public under "
                                   "protect='sensitive', the only unit sgda accepts)"),
        "p_tilde": (RELEASED, "group probabilities from the released counts, the declared ones, "
                              "or uniform when the sensitive attribute is not read"),
        "fairness": (PUBLIC, "the fairness notion"),
        "w_radius": (RELEASED, "a function of p̃"),
        "released_counts": (RELEASED, "the Laplace group-label counts"),
        "checkpoints": (RELEASED, "every DP-SGDA iterate"),
        "noise": (RELEASED, "the noise multipliers (public) and C_W and the paper's σ, which "
                            "read the released p̃"),
        "selection": (PUBLIC, "the selection rule's name"),
        "selection_candidates": (PUBLIC, "the number of candidates"),
        "selection_sensitivity": (PUBLIC, "Δu from compiler constants"),
        "selection_noise_scale": (PUBLIC, "the choice's temperature"),
        "selection_query_scale": (PUBLIC, "AboveThreshold's query scale"),
        "selection_margin": (PUBLIC, "the margin from the choice's noise"),
        "selection_passed": (RELEASED, "whether a checkpoint passed AboveThreshold"),
    }
    theorem = "[L] Algorithm 1 / Thm 3.3–3.4 (DP-SGDA on ERMI; Poisson subsampled Gaussian, PLD)"
    needs_group_mass = False      # run() releases its own counts (p̃ and the selection's bound)
    #: every option sgda reads, declared once (``_sgda_options.OPTIONS``; docs/sgda.md,
    #: "Options"); ``option_names`` derives from it.  device, seed, progress, budget and alpha
    #: are solve()'s parameters
    option_table = OPTIONS
    plan_params = (
        Param("d_theta", int, "θ's dimension"),
        Param("d_w", int, "W's dimension"),
        Param("stationarity_rate", float, "[L] Thm 3.4's rate at C_L = 1 (0 when not private)"),
        Param("fairness", (str, None), "the notion (None: no fairness term)"),
        Param("lambdas", list, "the public λ path (floats)"),
        Param("select", bool, "whether λ is chosen along the path (more than one λ)"),
        *from_options(OPTIONS, "epochs"),
        Param("batch_size", float, "the expected Poisson batch q·n"),
        Param("sampling_rate", float, "q, the Poisson sampling rate"),
        Param("T", int, "the steps, ⌈epochs/q⌉ (at least one per λ)"),
        *from_options(OPTIONS, "lr", "lr_w", "clip", "theta_share"),
        Param("private", bool, "whether anything is released (ε < ∞ and a fairness term)"),
        Param("epsilon_sgda", float, "the SGDA steps' nominal share of ε"),
        Param("epsilon_count", float, "ε of the group-label counts' release (0: none)"),
        Param("epsilon_select", float, "ε of the private choice of λ (0: none)"),
        Param("select_rule", str, "as the option select: the knob rule"),
        Param("z", (float, None), "the noise multiplier fitted at plan time (None: not "
              "private)"),
    )

    def accepts(self, problem, analysis) -> Verdict:
        import importlib.util

        from privfair.models.decisions import LinearClassifier

        r = problem.rates
        # the Dask refusal first: installing torch would not make sgda run there, and
        # lagrangian_sgda (no torch needed for a LinearClassifier) does
        if getattr(r.data, "rows_on_workers", False):
            # public: the dataset's kind, decided before anything is spent (the trainer gathers
            # its batches from rows in memory)
            return Verdict(False, "reads its rows in memory, so it does not run on a Dask "
                                  "dataset: use backend='lagrangian_sgda' (it runs on Dask with "
                                  "a pf.LinearClassifier, with or without a surrogate, or a "
                                  "pf.TorchModel), an ERM backend, or data.to_dataset()")
        if importlib.util.find_spec("torch") is None:
            return Verdict(False, "needs torch (the optional extra): pip install torch")
        from privfair.models.torch_model import TorchModel

        ds = getattr(r, "decisions", None)
        if isinstance(ds, LinearClassifier):
            if r.L != 2:
                from privfair.models.decisions import multiclass_hint

                return Verdict(False, multiclass_hint())
        elif isinstance(ds, TorchModel):
            if ds.n_classes != r.L:
                return Verdict(False, f"the model has {ds.n_classes} classes, the data {r.L}")
        else:
            return Verdict(False, "needs pf.LinearClassifier or pf.TorchModel (a decision is a "
                                  f"differentiable model); got {type(ds).__name__}")
        if analysis.privacy.protect != "sensitive":
            return Verdict(False, "implements [L] Thm 3.3's sensitive-attribute privacy only "
                                  "(protect='sensitive'); row privacy is not implemented")
        if analysis.privacy.is_private and problem.g and analysis.privacy.delta <= 0:
            return Verdict(False, "the Gaussian releases need δ > 0, e.g. pf.DP(1.0, 1/n**2)")
        if r.G < 2:
            return Verdict(False, "needs at least two groups")
        try:
            problem_shape(problem)
        except GT.Unsupported as err:
            return Verdict(False, str(err))
        for j, g in enumerate(problem.g):
            if all(g.lipschitz(nm) is None for nm in ("l1", "l2", "linf")):
                return Verdict(False, f"the Lipschitz constant of g[{j}] is unknown, so the "
                                      "private choice of λ has no sensitivity")
        return Verdict(True)

    # ------------------------------------------------------------------------------- plan
    def plan(self, problem, analysis, privacy, options) -> Plan:
        r = problem.rates
        try:
            notion, n_con = problem_shape(problem)
        except GT.Unsupported as err:
            self.refuse(str(err))
        o = resolve_options(options, notion, privacy.epsilon)
        if notion and o.get("fairness") and o["fairness"] != notion:
            bad_option("fairness", o["fairness"],
                       f"the constraint is a {notion} gap; drop fairness=")
        notion = notion or o.get("fairness")
        path = o["path"] if (o.get("lam") is not None or n_con) else (0.0,)
        if o.get("lam") is None and not n_con and o.get("fairness"):
            self.refuse("an unconstrained problem has nothing to map to λ: pass lam=<ERMI weight> "
                        "with fairness=, or state the constraint")
        if max(path) > 0 and notion is None:
            self.refuse("lam > 0 needs fairness='demographic_parity' or 'equalized_odds'")
        select = len(path) > 1
        fair = max(path) > 0
        private = privacy.is_private and fair
        if private and privacy.delta <= 0:
            self.refuse("the Gaussian releases need δ > 0, e.g. pf.DP(1.0, 1/n**2)")
        n = r.n
        # default: at most n/8 rows a batch (amplification); a given batch_size is capped at n
        m = min(float(o["batch_size"]), n if "batch_size" in options else max(1.0, n / 8.0))
        q = min(1.0, max(1.0 / n, m / n))
        T = max(len(path), int(math.ceil(o["epochs"] / q)))
        public_p = o.get("group_probabilities") is not None
        if public_p:     # a bad p̃ is an error here, before anything is drawn (run() reads it)
            declared_p(o["group_probabilities"], r, notion or "demographic_parity")
        if private and select and public_p and r.group_mass_bound is None:
            # the choice of λ needs a group-mass bound (for Δg); with public p̃ no counts are
            # released to derive one, so refuse now, before anything is drawn (not in choose())
            self.refuse("choosing λ privately needs a group-mass bound: declare "
                        "pf.rates(..., group_mass_bound=q), drop group_probabilities= (the "
                        "backend then releases the counts), or fix lam=")
        count_share = o["count_share"] if private and not public_p else 0.0
        select_share = o["select_share"] if private and select else 0.0
        eps_sgda = privacy.epsilon * (1 - count_share - select_share) if private else math.inf
        d_theta = (r.decisions.n_features + 1) if not hasattr(r.decisions, "P") else \
            int(r.decisions.P)
        d_w = (r.L if notion == "equalized_odds" else 1) * r.G * r.L
        params = {"d_theta": d_theta, "d_w": d_w, "stationarity_rate": (
                      F.l34_bound(d_theta=d_theta, k=d_w, l=1, n=n, epsilon=privacy.epsilon,
                                  delta=privacy.delta)
                      if private else 0.0),
                  "fairness": notion, "lambdas": list(path), "select": select, "epochs": o["epochs"],
                  "batch_size": q * n, "sampling_rate": q, "T": T, "lr": o["lr"],
                  "lr_w": o["lr_w"], "clip": o["clip"], "theta_share": o["theta_share"],
                  "private": private, "epsilon_sgda": eps_sgda,
                  "epsilon_count": privacy.epsilon * count_share,
                  "epsilon_select": privacy.epsilon * select_share}
        budget = []
        if private:
            if count_share:
                budget.append((f"Laplace release of the {r.G * r.L} group-label counts (‖Δ‖₁ ≤ 2) "
                               "for p̃", params["epsilon_count"], 0.0))
            budget.append((f"{T} Poisson-subsampled Gaussian steps (q = {q:.3g}) of both players "
                           "(nominal share; z is fitted to what the other releases leave)",
                           eps_sgda, privacy.delta))
            if select:
                rule = ("AboveThreshold" if o["select"] == "first" else "permute-and-flip")
                over = (f"the {len(path)} λ checkpoints and their two-checkpoint mixtures"
                        if o["select"] == "mixture" else f"the {len(path)} λ checkpoints")
                budget.append((f"{rule} over {over}",
                               params["epsilon_select"], 0.0))
        params["select_rule"] = o["select"]
        if not select:
            knob = f"knob: λ = {path[0]:g} (given)"
        elif o["select"] == "mixture":
            knob = (f"knob: the checkpoint of the public path {list(path)}, or the mixture of two "
                    f"on the weights {list(SEL.MIX_GRID)}, that minimises err + "
                    f"{o['select_penalty']:g}·max(0, g + margin) (permute-and-flip on that score; "
                    "err is public under protect='sensitive')")
        elif o["select"] == "penalized":
            knob = (f"knob: the checkpoint of the public path {list(path)} that minimises "
                    f"err + {o['select_penalty']:g}·max(0, g) (permute-and-flip on that score; "
                    "err is public under protect='sensitive')")
        else:
            knob = ("knob: λ = the first value of the public path "
                    f"{list(path)} whose checkpoint meets every constraint (AboveThreshold on the "
                    "constraint values; the last checkpoint if none does)")
        notes = [knob,
                 "predicted excess risk ∞: [L] Thm 3.4 bounds the stationarity gap of FERMI with "
                 "unspecified constants, not an excess risk",
                 "noise multiplier z fitted at plan time by the accountant's rules (PLD, "
                 "substitution) to what the count and selection releases leave of (ε, δ); "
                 "[L] Thm 3.3's closed-form σ is reported beside it in result.info['noise']"]
        sched, z = None, None
        if private:
            sched, z = SCH.schedule(
                privacy, G=r.G, L=r.L, T=T, q=q, epsilon_count=params["epsilon_count"],
                epsilon_select=params["epsilon_select"], rule=o["select"], n_path=len(path),
                penalty=o["select_penalty"], theta_share=o["theta_share"])
        params["z"] = z
        out = Plan(self.name, privacy, analysis, problem, params=params, budget=budget,
                   predicted_excess_risk=math.inf if privacy.is_private else 0.0,
                   theorem=self.theorem, notes=notes)
        out.run_options = o
        out.schedule = sched      # the plan's releases, fixed here; run() draws through it
        return out

    def formula(self, plan):
        """[L] Thm 3.4 as planned: excess = C_L·√(max(d_θ, d_W)·ln(1/δ))/(εn), the rate of
        :func:`privfair.analysis.formulas.l34_bound` (d_W in the place of k·l).  The theorem bounds a
        stationarity gap with an unspecified constant, not an excess risk: ``values`` gives
        C_L = ∞, which is why the plan predicts ∞; the plan records the rate at C_L = 1 as
        ``params["stationarity_rate"]``.  None at ε = ∞ / λ = 0 (nothing private)."""
        import sympy as sp

        P = plan.params
        if not P.get("private"):
            return None
        C, dt, dw = sp.symbols("C_L d_theta d_W", positive=True)
        e, d, n = sp.symbols("epsilon delta n", positive=True)
        expr = C * F.l34_bound(d_theta=dt, k=dw, l=1, n=n, epsilon=e, delta=d,
                               ops=F.symbolic())
        return (sp.Eq(sp.Symbol("excess"), expr, evaluate=False),
                {"C_L": sp.oo, "d_theta": P["d_theta"], "d_W": P["d_w"]})

    # -------------------------------------------------------------------------------- run
    def run(self, plan, *, rng, accountant, device="cpu", progress=True):
        import torch

        from privfair.privacy.randomness import as_source

        problem, privacy, P = plan.problem, plan.privacy, plan.params
        o = plan.run_options
        src = as_source(rng)
        dev = torch_device(torch, device)
        r = problem.rates
        data, ds = r.data, r.decisions
        notion, path = P["fairness"] or "demographic_parity", P["lambdas"]
        private, fair = P["private"], max(path) > 0
        c_np, S = E.slices(notion, data.y, r.L)

        # --- privacy: every noise is drawn through the plan's schedule, whose draws record
        # their events (the plan checked that they fit; a plan is final) -----------------
        draws = plan.schedule.open(accountant, src) if private else None
        z = zt = zw = None
        if private:
            z = P["z"]
            zt, zw = z / math.sqrt(P["theta_share"]), z / math.sqrt(1 - P["theta_share"])
        counts = data.counts().astype(float)
        released = None
        if o.get("group_probabilities") is not None:
            p_tilde = declared_p(o["group_probabilities"], r, notion, counts)
        elif private:
            released = np.asarray(draws.laplace("counts", counts.ravel()),
                                  dtype=float).reshape(counts.shape)
            p_tilde = E.group_probabilities(released, notion)
        else:       # the sensitive attribute is not read (no fairness term) or ε = ∞: under
            # privacy, p̃ must not come from the private counts (it is exposed in info, and was
            # exact there while the certificate said ε = 0 — issue #16): the schema's uniform
            p_tilde = E.group_probabilities(
                np.ones_like(counts) if privacy.is_private else counts, notion)

        # --- training ----------------------------------------------------------------------
        adapter = adapter_for(ds, torch, dev)
        threads = torch.get_num_threads()
        if dev.type == "cpu" and adapter.P * max(1.0, P["sampling_rate"] * r.n) < 1e7:
            torch.set_num_threads(1)   # per-step tensors are small: intra-op threads only cost
        try:
            checkpoints, D, CW = T_.train(torch, adapter, dev, r, P, o, c_np, S, p_tilde,
                                          private, fair, (z, zt, zw), src, draws, progress)
        finally:
            torch.set_num_threads(threads)
        return self._finish(problem, plan, checkpoints, o, P, released, private, draws,
                            p_tilde, (z, zt, zw, D, CW))


    def _finish(self, problem, plan, checkpoints, o, P, released, private, draws, p_tilde,
                noise):
        from privfair.results.result import Result

        r, privacy = problem.rates, plan.privacy
        data, ds, path = r.data, r.decisions, P["lambdas"]
        notion = P["fairness"] or "demographic_parity"
        z, zt, zw, D, CW = noise
        T, n = P["T"], r.n
        mexp = P["sampling_rate"] * n

        # --- the knob: which λ ---------------------------------------------------------------
        errors = _train_errors(ds, checkpoints, data)
        mix, sel = ((len(checkpoints) - 1, 1.0),), {}
        if P["select"]:
            mix, sel = SEL.choose(problem, checkpoints, errors, o, P, released, private, draws)
        chosen = max(mix, key=lambda c: c[1])[0]          # the heaviest component
        info = {"lambdas": list(path), "chosen_lambda": path[chosen], "chosen_index": chosen,
                "chosen_mixture": [(path[i], w) for i, w in mix],
                "chosen_indices": [(i, w) for i, w in mix],     # into checkpoints / lambdas
                "train_errors": errors, "p_tilde": p_tilde.tolist(), "fairness": notion,
                "w_radius": D, "released_counts": None if released is None else released.tolist(),
                "checkpoints": checkpoints}   # every iterate is covered by the DP-SGDA guarantee
        info.update(sel)
        if private:
            rho = float(p_tilde.min())
            ours = zw * CW * T_.w_noise_factor(o["w_noise"], r.G) / mexp
            paper = F.l33_sigma_w(T=T, n=n, epsilon=privacy.epsilon, delta=privacy.delta, rho=rho)
            info["noise"] = {
                "z": z, "z_theta": zt, "z_w": zw, "C_w": CW, "clip_zeta": o["clip"],
                "sigma_w_mean_grad": ours, "paper_sigma_w_mean_grad": paper,
                "paper_over_ours": paper / ours,
                "paper_conditions": {"eps <= 2 ln(1/delta)": privacy.epsilon <= 2 * math.log(1 / privacy.delta),
                                     "T >= (n sqrt(eps)/(2m))^2": T >= (n * math.sqrt(privacy.epsilon) / (2 * mexp)) ** 2},
                "note": "σ on the mean W-gradient in its worst slot: ours z_W·C_W/(qn), × (1 − 1/G) "
                        "with w_noise='centered' (accountant, PLD, substitution), against [L] Thm "
                        "3.3's √(16T ln(1/δ)/(ε²n²ρ)) at ρ = min p̃"}
        trace = [{"stage": s, "lambda": lam, "train_error": e}
                 for s, (lam, e) in enumerate(zip(path, errors))]
        return Result(self.name, [checkpoints[i] for i, _ in mix], [w for _, w in mix], ds,
                      plan=plan, trace=trace,
                      info=info)


# ------------------------------------------------------------------------------ helpers


def _train_errors(ds, checkpoints, data):
    """Each checkpoint's training error (X and y are public under protect="sensitive"), in one
    pass over the rows' chunks: a dataset taken by index (the held-out split's training part)
    is never gathered into a copy of X (#19)."""
    wrong = np.zeros(len(checkpoints))
    for c in data.rows().chunks():
        for j, d in enumerate(checkpoints):
            wrong[j] += np.count_nonzero(np.asarray(ds.predict(d, c.X)) != c.y)
    return [float(w / max(data.n, 1)) for w in wrong]


from .. import register  # noqa: E402

register(SGDABackend())


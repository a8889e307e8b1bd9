"""DP-SGDA on the ERMI regularizer (DP-FERMI) — [L] §3, Algorithm 1, Thm 3.3–3.4, App. C–D.

Problem.  min_θ max_W  L̂(θ) + λ·(1/n) Σ_i ψ_i(θ, W): cross-entropy L̂ as the surrogate of the
error, ψ_i the ERMI min-max pieces of ``backends/_ermi.py`` (demographic parity: ERMI of (Ŷ, A);
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
                           S_W = Σ 2F_i/√p̃[c_i, a_i] e_{c_i, a_i} + N(0, (z_W C_W)² I)
        θ ← Π_Θ(θ − η_θ/(1 + λ)·(g_θ + λ S_θ)/(qn));   W ← Π_D(W + η_W (g_W + S_W)/(qn·h))
        (h = 1, or with w_step="newton" ψ's public diagonal curvature in W: see ``w_step``)
        θ̄_s = mean of θ over the second half of stage s         (post-processing)
    choose s privately (below: AboveThreshold, or permute-and-flip on err + P·max(0, g)),
    output θ̄_s

Privacy (per-player sensitivities; the module docstring of ``_ermi.py`` derives the pieces).
Changing a_i leaves x_i, y_i, hence the public pieces and B'_t, unchanged; only the private
sums move, through row i's contribution on B_t (if sampled):

* W-player: 2w_c F_i/√p̃[c_i, a_i] at one slot (c_i, a_i); ‖·‖₂ ≤ B_W[c_i, a_i] = 2w_c/√p̃
  (‖F‖₂ ≤ 1).  p̃ is released (or public), so B_W is public: the private ρ of [L] is never read.
  Slot (c, r) is divided by B_W[c, r] before the noise (a public diagonal rescaling): each slot's
  noise is z_W·B_W[c, r] (``w_noise="per_slot"``) instead of the worst slot's C_W = max B_W.
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
  (``subsampled_gaussian_event(z, 1, q, count=T, neighbouring="replace")``), calibrated by the
  accountant (PLD) for the share ε_sgda; z_θ = z/√s_θ, z_W = z/√(1 − s_θ).
* The count release (Laplace, ‖Δñ‖₁ ≤ 2) and the choice of λ (ε_select, pure) compose with it;
  the certificate is the accountant's total.  [L] Thm 3.3's closed form (σ_w² ≥ 16T ln(1/δ)/(ε²n²ρ),
  σ_θ² ≥ 16L²D² ln(1/δ)T/(ε²n²ρ), stated for ε ≤ 2 ln(1/δ), T ≥ (n√ε/2m)², with the private ρ)
  is reported beside the accountant's σ in ``result.info["noise"]``.

Equalized odds weighs the label slices equally by default (``slice_weights="balanced"``:
ψ_i × n/(S·n_{y_i}), y public; [L]'s conditional ERMI weighs them by p(y): "proportional");
scaling a slice leaves its W-maximiser alone and multiplies its bounds, which C_W and k̄ carry.

Knob mapping (docs/sgda.md; code in ``_sgda_select.py``).  A constraint g ≤ 0 of the problem
(|gap|, maximum, norm_inf or lse of selection-rate gaps → demographic parity; of fpr/tpr/tnr/fnr
or multi-class rate gaps → equalized odds; one-sided gaps too) maps to λ by one of two rules over
the public path (default 0, 1, 2, 4, …, 128), both ε_select-DP for the one index they output:
``select="first"``: the first checkpoint θ̄_s with g(ℓ(θ̄_s)) ≤ −margin, found with
AboveThreshold (Dwork & Roth 2014, Thm 3.23: threshold noise Lap(2Δg/ε_select), query noise
Lap(4Δg/ε_select)), the last checkpoint if none passes; ``select="penalized"``: permute-and-flip
(McKenna & Sheldon 2020) on −(err_s + P·max(0, g_s + margin)), Δu = P·Δg since the training
error reads x, y only (public under protect="sensitive").  Δg = min over norms L_g·Δℓ (rates
clamped with the declared group-mass bound, or with lower bounds from the released counts).
``lam=`` fixes λ (no selection, nothing spent on it).

Theorem ([L] Thm 3.4).  E‖∇FERMI(θ̂)‖² = O(√max(d_θ, kl) ln(1/δ)/(εn)) for a uniformly random
iterate, with unspecified constants and smoothness assumptions — a stationarity bound, not an
excess risk: the plan predicts ∞ (so ``auto`` does not pick it spuriously); the rate at constant
1 is ``thm34_rate`` (params["stationarity_rate"]), and ``formula`` returns it times C_L = ∞.

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

import functools
import math
import os

import numpy as np

from . import _ermi as E
from . import _jagielski as J
from . import _sgda_select as SEL
from .base import Backend, Plan, Verdict

DEFAULTS = {"epochs": 40, "batch_size": 2048, "lr": 1.0, "lr_w": 1.0, "clip": 1.0,
            "lambdas": (0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0),
            "count_share": 0.05, "select_share": 0.25, "theta_share": 0.5, "margin": "auto",
            "average": True, "slice_weights": "balanced", "w_step": "plain",
            "w_noise": "per_slot", "temperature": 1.0, "select": "first",
            "select_penalty": 1.0}
_OPTIONS = tuple(DEFAULTS) + ("lam", "fairness", "group_probabilities", "w_radius",
                              "_noise_multiplier")
BETA = SEL.BETA          # failure probability of the group-mass bounds from the released counts
_EO_KINDS = ("fpr", "tpr", "tnr", "fnr", "rate")


def _bad(field, value, fix):
    from privfair.errors import InvalidInputError

    raise InvalidInputError(field, value, fix)


def _num(o, key, lo, hi, lo_open=True):
    v = o[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
            or (v <= lo if lo_open else v < lo) or v > hi:
        _bad(key, v, f"pass a number in {'(' if lo_open else '['}{lo}, {hi}]")
    o[key] = float(v)


#: equalized-odds defaults that differ (chosen on a validation split of adult.data; docs/sgda.md):
#: a large θ step (the conditional ERMI converges slowly at lr 1, and the thresholded
#: classifier's gaps follow the soft ones only once they are small), W averaged over ~1/lr_w
#: steps.  Below EO_LOW_EPSILON the noise needs fewer steps (smaller z), slower W averaging
#: and the penalized selection (AboveThreshold's first noisy pass ends on unfair early stages).
#: ε is public, so keying the defaults on it spends nothing.
EO_DEFAULTS = {"epochs": 20, "w_step": "newton", "lr": 10.0, "lr_w": 0.2, "select": "first"}
EO_LOW_EPSILON = 2.0
EO_DEFAULTS_LOW = {"epochs": 10, "w_step": "newton", "lr": 10.0, "lr_w": 0.05,
                   "select": "penalized", "select_penalty": 3.0}


def eo_defaults(epsilon):
    """The equalized-odds defaults at privacy budget ``epsilon`` (public)."""
    return EO_DEFAULTS_LOW if epsilon < EO_LOW_EPSILON else EO_DEFAULTS


def _options(options, notion=None, epsilon=math.inf):
    o = dict(DEFAULTS)
    if (options.get("fairness") or notion) == "equalized_odds":
        o.update(eo_defaults(epsilon))
    o.update({k: options[k] for k in _OPTIONS if k in options})
    for key in ("epochs", "batch_size"):
        if isinstance(o[key], bool) or not isinstance(o[key], (int, float)) or o[key] <= 0:
            _bad(key, o[key], "pass a positive number")
    for key, lo, hi, lo_open in (("lr", 0, 1e6, True), ("lr_w", 0, 1e6, True),
                                 ("clip", 0, 1e6, True), ("count_share", 0, 0.5, True),
                                 ("select_share", 0, 0.5, True), ("theta_share", 0, 1, True),
                                 ("temperature", 0, 1e6, True),
                                 ("select_penalty", 0, 1e6, True)):
        _num(o, key, lo, hi, lo_open)
    if o["margin"] != "auto":
        _num(o, "margin", 0, 1e6, False)
    if o["theta_share"] >= 1:
        _bad("theta_share", o["theta_share"], "pass a share in (0, 1)")
    lams = o["lam"] if o.get("lam") is not None else o["lambdas"]
    lams = np.atleast_1d(np.asarray(lams, dtype=float))
    if o.get("lam") is not None and lams.size != 1:
        _bad("lam", o["lam"], "pass one ERMI weight (a path goes in lambdas=)")
    if lams.size == 0 or not np.isfinite(lams).all() or (lams < 0).any():
        _bad("lambdas" if o.get("lam") is None else "lam", o.get("lam", o["lambdas"]),
             "pass non-negative finite ERMI weights")
    o["path"] = tuple(float(v) for v in lams)
    if o.get("fairness") is not None and o["fairness"] not in E.NOTIONS:
        _bad("fairness", o["fairness"], f"choose one of {E.NOTIONS}")
    m = o.get("_noise_multiplier", 1.0)
    if isinstance(m, bool) or not isinstance(m, (int, float)) or not 0 < m <= 1:
        _bad("_noise_multiplier", m, "test-only knob in (0, 1]")
    o["_noise_multiplier"] = float(m)
    if o["w_noise"] not in ("per_slot", "uniform"):
        _bad("w_noise", o["w_noise"], "choose 'per_slot' or 'uniform'")
    if o["w_step"] not in ("plain", "newton"):
        _bad("w_step", o["w_step"], "choose 'plain' or 'newton'")
    if o["w_step"] == "newton" and o["lr_w"] > 1:
        _bad("lr_w", o["lr_w"], "with w_step='newton' lr_w is an averaging weight in (0, 1]")
    if o["select"] not in SEL.RULES:
        _bad("select", o["select"], f"choose one of {SEL.RULES}")
    if o["slice_weights"] not in ("balanced", "proportional"):
        _bad("slice_weights", o["slice_weights"], "choose 'balanced' or 'proportional'")
    if o.get("w_radius") is not None:
        _num(o, "w_radius", 0, 1e9)
    return o


def _shape(problem):
    """(notion or None, number of constraints); J.Unsupported when the problem is not of the
    shape sgda handles."""
    r = problem.rates
    w, _ = J.objective_weights(problem)
    err = np.zeros(r.K)
    for g in range(r.G):
        for y in range(r.L):
            for j in range(r.L):
                if y != j:
                    err[r._joint[g, y, j]] = 1.0
    scale = float(w @ err) / float(err @ err)
    if scale <= 0 or not np.allclose(w, scale * err, atol=1e-12):
        raise J.Unsupported("the objective must be the error (r.error(), or a positive multiple): "
                            "sgda trains the cross-entropy surrogate of the error")
    if not problem.g:
        return None, 0
    terms, _ = J.extract_terms(problem)
    kinds = set()
    for t in terms:
        for k in np.flatnonzero(np.abs(t.a) > 1e-15):
            kinds.add(r.names[int(k)].split("[")[0])
    if not kinds:
        raise J.Unsupported("the constraints read no coordinate of ℓ")
    if kinds == {"selection"}:
        return "demographic_parity", len(problem.g)
    if kinds <= set(_EO_KINDS):
        return "equalized_odds", len(problem.g)
    raise J.Unsupported(f"the constraints read {sorted(kinds)}: sgda maps gaps of selection rates "
                        "(demographic parity) or of fpr/tpr/tnr/fnr/rate coordinates (equalized odds) "
                        "to the ERMI weight, not joint cells or a mix of both")


@functools.lru_cache(maxsize=64)
def noise_multiplier(epsilon, delta, T, q):
    """z: the smallest noise multiplier of T Poisson-subsampled Gaussian steps (rate q,
    substitution, per-row norm 1) that the accountant (PLD) proves (epsilon, delta)-DP."""
    from privfair.privacy import calibrate_gaussian

    if q >= 1.0:   # no subsampling: a substituted row moves the sum by up to 2 (both ends ≤ 1)
        return float(calibrate_gaussian(epsilon, delta, T=T, sensitivity=2.0))
    return float(calibrate_gaussian(epsilon, delta, T=T, sensitivity=1.0, sampling_rate=q,
                                    neighbouring="replace", method="pld", rtol=5e-3))


def thm34_rate(d_theta, d_w, epsilon, delta, n, log=math.log, sqrt=math.sqrt, Max=max):
    """[L] Thm 3.4's rate √max(d_θ, d_W)·ln(1/δ)/(εn) for E‖∇FERMI(θ̂)‖² (d_W = kl, here the
    S·G·L entries of W), constant 1: the theorem's constant is unspecified.  Pure; the math
    functions may be sympy's (Backend.formula)."""
    return sqrt(Max(d_theta, d_w)) * log(1 / delta) / (epsilon * n)


def paper_sigma_w(epsilon, delta, T, n, rho):
    """[L] Thm 3.3's σ_w (std of the noise on the mean W-gradient), as printed."""
    return math.sqrt(16 * T * math.log(1 / delta) / (epsilon ** 2 * n ** 2 * rho))


class SGDABackend(Backend):
    name = "sgda"
    theorem = "[L] Algorithm 1 / Thm 3.3–3.4 (DP-SGDA on ERMI; Poisson subsampled Gaussian, PLD)"
    needs_group_mass = False      # run() releases its own counts (p̃ and the selection's bound)

    def accepts(self, problem, analysis) -> Verdict:
        import importlib.util

        from privfair.decisions import LinearClassifier

        if importlib.util.find_spec("torch") is None:
            return Verdict(False, "needs torch (the optional extra): pip install torch")
        from privfair.torch_model import TorchModel

        r = problem.rates
        ds = getattr(r, "decisions", None)
        if isinstance(ds, LinearClassifier):
            if r.L != 2:
                return Verdict(False, "pf.LinearClassifier is binary; use pf.TorchModel("
                                      "torch.nn.Linear(d, L), d, L) for multi-class labels")
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
            _shape(problem)
        except J.Unsupported as err:
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
            notion, n_con = _shape(problem)
        except J.Unsupported as err:
            self.refuse(str(err))
        o = _options(options, notion, privacy.epsilon)
        if notion and o.get("fairness") and o["fairness"] != notion:
            _bad("fairness", o["fairness"], f"the constraint is a {notion} gap; drop fairness=")
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
        count_share = o["count_share"] if private and not public_p else 0.0
        select_share = o["select_share"] if private and select else 0.0
        eps_sgda = privacy.epsilon * (1 - count_share - select_share) if private else math.inf
        d_theta = (r.decisions.n_features + 1) if not hasattr(r.decisions, "P") else \
            int(r.decisions.P)
        d_w = (r.L if notion == "equalized_odds" else 1) * r.G * r.L
        params = {"d_theta": d_theta, "d_w": d_w, "stationarity_rate": (
                      thm34_rate(d_theta, d_w, privacy.epsilon, privacy.delta, n)
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
            budget.append((f"{T} Poisson-subsampled Gaussian steps (q = {q:.3g}) of both players",
                           eps_sgda, privacy.delta))
            if select:
                rule = "permute-and-flip" if o["select"] == "penalized" else "AboveThreshold"
                budget.append((f"{rule} over the {len(path)} λ checkpoints",
                               params["epsilon_select"], 0.0))
        params["select_rule"] = o["select"]
        if not select:
            knob = f"knob: λ = {path[0]:g} (given)"
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
                 "noise multiplier calibrated at run time by the accountant (PLD, substitution); "
                 "[L] Thm 3.3's closed-form σ is reported beside it in result.info['noise']"]
        if o["_noise_multiplier"] != 1.0:
            params["_noise_multiplier"] = o["_noise_multiplier"]
            notes.append(f"TEST ONLY: noise × {o['_noise_multiplier']:g} below what the "
                         "certificate records — this run is NOT private")
        out = Plan(self.name, privacy, analysis, problem, params=params, budget=budget,
                   predicted_excess_risk=math.inf if privacy.is_private else 0.0,
                   theorem=self.theorem, notes=notes)
        out.run_options = o
        return out

    def formula(self, plan):
        """[L] Thm 3.4 as planned: excess = C_L·√max(d_θ, d_W)·ln(1/δ)/(εn) (:func:`thm34_rate`).
        The theorem bounds a stationarity gap with an unspecified constant, not an excess risk:
        ``values`` gives C_L = ∞, which is why the plan predicts ∞; the plan records the rate at
        C_L = 1 as ``params["stationarity_rate"]``.  None at ε = ∞ / λ = 0 (nothing private)."""
        import sympy as sp

        P = plan.params
        if not P.get("private"):
            return None
        C, dt, dw = sp.symbols("C_L d_theta d_W", positive=True)
        e, d, n = sp.symbols("epsilon delta n", positive=True)
        expr = C * thm34_rate(dt, dw, e, d, n, log=sp.log, sqrt=sp.sqrt, Max=sp.Max)
        return (sp.Eq(sp.Symbol("excess"), expr, evaluate=False),
                {"C_L": sp.oo, "d_theta": P["d_theta"], "d_W": P["d_w"]})

    # -------------------------------------------------------------------------------- run
    def run(self, plan, *, rng, accountant, device="cpu", progress=True):
        import torch

        from privfair.privacy import (laplace_mechanism, pure_event,
                                      subsampled_gaussian_event)
        from privfair.privacy.randomness import as_source

        problem, privacy, P = plan.problem, plan.privacy, plan.params
        o = plan.run_options
        src = as_source(rng)
        if o["_noise_multiplier"] != 1.0 and not src.seeded:
            self.refuse("the test-only _noise_multiplier runs only seeded (it is not private)")
        dev = _device(torch, device)
        r = problem.rates
        data, ds = r.data, r.decisions
        notion, path = P["fairness"] or "demographic_parity", P["lambdas"]
        private, fair = P["private"], max(path) > 0
        record = private and accountant is not None
        c_np, S = E.slices(notion, data.y, r.L)

        # --- privacy: every event is recorded before anything is drawn -------------------
        z = zt = zw = None
        if private:
            z = noise_multiplier(P["epsilon_sgda"] * (1 - 1e-3), privacy.delta, P["T"],
                                 P["sampling_rate"])
            zt, zw = z / math.sqrt(P["theta_share"]), z / math.sqrt(1 - P["theta_share"])
        if record:
            accountant.record(subsampled_gaussian_event(
                z, 1.0, P["sampling_rate"], count=P["T"], neighbouring="replace",
                label="DP-SGDA steps (θ and W players, one Poisson batch each step)",
                sensitivity_source=(
                    "one row's group changes: W-block 2F_i/√p̃ (‖·‖ ≤ 2/√min p̃) and θ-block "
                    "J̃ᵢᵀk̄ (‖·‖ ≤ ζ·max‖k̄‖), each scaled by 1/(z_part·bound) → per-row norm "
                    f"(z_θ⁻² + z_W⁻²)^½ = 1/z (z_θ = {zt:.4g}, z_W = {zw:.4g})"
                    + (" — TEST-ONLY noise multiplier" if o["_noise_multiplier"] != 1 else ""))))
            if P["select"] and o["select"] == "penalized":
                accountant.record(pure_event(
                    P["epsilon_select"], theorem="permute-and-flip (McKenna & Sheldon 2020, Thm 1)",
                    label=f"choice of λ among {len(path)} checkpoints (score −(err + "
                          f"{o['select_penalty']:g}·max(0, g)))",
                    sensitivity_source="Δu = P·Δg: err reads x, y only (public under "
                                       "protect='sensitive'); Δg = L_g·Δℓ (clamped rates)"))
            elif P["select"]:
                accountant.record(pure_event(
                    P["epsilon_select"], theorem="AboveThreshold (Dwork & Roth 2014, Thm 3.23)",
                    label=f"choice of λ among {len(path)} checkpoints",
                    sensitivity_source="Δg = L_g·Δℓ (compiler constants, clamped rates)"))
        counts = data.counts().astype(float)
        released = None
        if o.get("group_probabilities") is not None:
            p_tilde = _public_p(o["group_probabilities"], r, notion, counts)
        elif private:
            released = np.asarray(laplace_mechanism(
                counts.ravel(), 2.0, P["epsilon_count"], src, accountant=accountant,
                label="group-label counts for p̃",
                sensitivity_source="one row leaves one (group, label) cell and joins another, "
                                   "‖Δ‖₁ ≤ 2"), dtype=float).reshape(counts.shape)
            p_tilde = E.group_probabilities(released, notion)
        else:
            p_tilde = E.group_probabilities(counts, notion)

        # --- training ----------------------------------------------------------------------
        adapter = _adapter(ds, torch, dev)
        threads = torch.get_num_threads()
        if dev.type == "cpu" and adapter.P * max(1.0, P["sampling_rate"] * r.n) < 1e7:
            torch.set_num_threads(1)   # per-step tensors are small: intra-op threads only cost
        try:
            checkpoints, D, CW = self._train(torch, adapter, dev, r, P, o, c_np, S, p_tilde,
                                             private, fair, zt, zw, src)
        finally:
            torch.set_num_threads(threads)
        return self._finish(problem, plan, checkpoints, o, P, released, private, src, p_tilde,
                            (z, zt, zw, D, CW))

    def _train(self, torch, adapter, dev, r, P, o, c_np, S, p_tilde, private, fair, zt, zw, src):
        """The DP-SGDA loop: the tail-averaged θ of every stage (as decisions), the W radius D
        and the W-block bound C_W."""
        from privfair.privacy import gaussian_noise_vector
        from privfair.privacy.randomness import GeneratorSource

        data, path = r.data, P["lambdas"]
        n_rows = float(r.n)
        theta = adapter.theta0(torch, dev)
        adapter.tau = o["temperature"]      # ψ reads F_τ = softmax(z/τ); public, a-free
        gen = src.generator if isinstance(src, GeneratorSource) else np.random.default_rng(
            np.frombuffer(os.urandom(32), dtype=np.uint32))
        X = torch.tensor(data.X, dtype=torch.float32, device=dev)
        yt = torch.tensor(data.y, dtype=torch.long, device=dev)
        at = torch.tensor(data.group, dtype=torch.long, device=dev)
        ct = torch.tensor(c_np, dtype=torch.long, device=dev)
        pt = torch.as_tensor(p_tilde, dtype=torch.float32, device=dev)
        # slice weights: [L]'s conditional ERMI weighs slice y by p(y) ("proportional"); the
        # default "balanced" weighs every slice equally (w_c = 1/(S·p(y=c)), y is public), so the
        # gaps of rare labels are not discounted.  Scaling a slice leaves its W-maximiser alone.
        ny = np.bincount(c_np, minlength=S).astype(float)
        wsl = np.ones(S) if (S == 1 or o["slice_weights"] == "proportional") else \
            n_rows / (S * np.maximum(ny, 1.0))
        wt = torch.as_tensor(wsl, dtype=torch.float32, device=dev)
        psq = pt.sqrt() / wt[:, None]                  # k = 2W/psq = 2 w_c W/√p̃
        G, L, n, q = r.G, r.L, r.n, P["sampling_rate"]
        W = torch.zeros(S, G, L, device=dev)
        D = o.get("w_radius") or E.w_radius(p_tilde, L)
        # per-slot bounds: row i's private W-piece 2F_i/psq[c_i, a_i] sits in slot (c_i, a_i)
        # only, with ‖·‖₂ ≤ Bw[c_i, a_i] = 2/psq[c_i, a_i] (public: p̃ and the slice weights);
        # dividing slot (c, r) by Bw[c, r] gives every row a unit-norm contribution, so the noise
        # of each slot is calibrated to its own bound (a public diagonal rescaling of one
        # Gaussian mechanism) rather than to the worst slot's C_W = max Bw
        Bw = 2.0 / psq                                                   # (S, G)
        CW = float(Bw.max())
        slot_noise = Bw if o["w_noise"] == "per_slot" else torch.full_like(Bw, CW)
        mexp = q * n
        T, k = P["T"], len(path)
        bounds = [round(T * (s + 1) / k) for s in range(k)]
        mult = o["_noise_multiplier"]
        checkpoints, avg, na, stage = [], None, 0, 0
        for t in range(T):
            lam = path[stage]
            start = bounds[stage - 1] if stage else 0
            # public pieces on B'_t (no A): loss + ψ's a-free part; W's a-free part
            idx = _poisson(gen, n, q, dev, torch)
            k_ref, kbar, kmax = E.private_coefficients(W, psq)
            Wsq = (W ** 2).sum(dim=1) * wt[:, None]                         # (S, L)
            g_pub, F2 = adapter.public_grad(torch, theta, X[idx], yt[idx], None, 0.0)
            if fair and lam:
                # ψ's a-free part, clipped by the same a-free factor as the private part, so the
                # fairness gradient is Σ f_i J_iᵀ k[c_i, a_i]: a reweighting, never a distortion
                v = (k_ref - Wsq)[ct[idx]]                                 # (b, L)
                g_psi, F2, _ = adapter.private_sum(torch, theta, X[idx], v, o["clip"])
                g_pub = g_pub + lam * g_psi
            elif adapter.tau != 1.0:
                F2 = adapter.ermi_probs(torch, theta, X[idx])              # W reads F_τ
            Fs = torch.zeros(S, L, device=dev).index_add_(0, ct[idx], F2)
            gW = -2.0 * W * (Fs * wt[:, None])[:, None, :]
            if fair:
                # private pieces on B_t: the only place a_i is read
                idx = _poisson(gen, n, q, dev, torch)
                cb, ab = ct[idx], at[idx]
                s_th, F, _ = adapter.private_sum(torch, theta, X[idx], kbar[cb, ab], o["clip"])
                s_w = torch.zeros(S * G, L, device=dev).index_add_(
                    0, cb * G + ab, 2.0 * F / psq[cb, ab][:, None]).view(S, G, L)
                if private:
                    Ct = o["clip"] * kmax
                    noise = gaussian_noise_vector(adapter.P + S * G * L, 1.0, src,
                                                  namespace="torch", device=dev)
                    s_th = s_th + (mult * zt * Ct) * noise[:adapter.P].view_as(s_th)
                    s_w = s_w + (mult * zw) * slot_noise[:, :, None] * noise[adapter.P:].view(S, G, L)
                step = g_pub + lam * s_th
                W = w_step(W, gW, s_w, Fs, wt, mexp, o["lr_w"], o["w_step"], D)
            else:
                step = g_pub
            theta = adapter.project(torch, theta - o["lr"] / (1.0 + lam) * step / mexp)
            if not o["average"] or t >= (start + bounds[stage]) // 2:
                avg = theta.clone() if na == 0 else avg + (theta - avg) / (na + 1)
                na += 1
            if t + 1 == bounds[stage]:
                checkpoints.append(adapter.to_decision(avg))
                avg, na, stage = None, 0, stage + 1
        return checkpoints, D, CW

    def _finish(self, problem, plan, checkpoints, o, P, released, private, src, p_tilde, noise):
        from privfair.result import Result

        r, privacy = problem.rates, plan.privacy
        data, ds, path = r.data, r.decisions, P["lambdas"]
        notion = P["fairness"] or "demographic_parity"
        z, zt, zw, D, CW = noise
        T, n = P["T"], r.n
        mexp = P["sampling_rate"] * n

        # --- the knob: which λ ---------------------------------------------------------------
        errors = [float(np.mean(np.asarray(ds.predict(d, data.X)) != data.y)) for d in checkpoints]
        chosen, sel = len(checkpoints) - 1, {}
        if P["select"]:
            chosen, sel = SEL.choose(problem, checkpoints, errors, o, P, released, private, src,
                                   self.refuse)
        info = {"lambdas": list(path), "chosen_lambda": path[chosen], "chosen_index": chosen,
                "train_errors": errors, "p_tilde": p_tilde.tolist(), "fairness": notion,
                "w_radius": D, "released_counts": None if released is None else released.tolist(),
                "checkpoints": checkpoints}   # every iterate is covered by the DP-SGDA guarantee
        info.update(sel)
        if private:
            rho = float(p_tilde.min())
            ours = zw * CW / mexp
            paper = paper_sigma_w(privacy.epsilon, privacy.delta, T, n, rho)
            info["noise"] = {
                "z": z, "z_theta": zt, "z_w": zw, "C_w": CW, "clip_zeta": o["clip"],
                "sigma_w_mean_grad": ours, "paper_sigma_w_mean_grad": paper,
                "paper_over_ours": paper / ours,
                "paper_conditions": {"eps <= 2 ln(1/delta)": privacy.epsilon <= 2 * math.log(1 / privacy.delta),
                                     "T >= (n sqrt(eps)/(2m))^2": T >= (n * math.sqrt(privacy.epsilon) / (2 * mexp)) ** 2},
                "note": "σ on the mean W-gradient per coordinate: ours z_W·C_W/(qn) (accountant, PLD, "
                        "substitution) against [L] Thm 3.3's √(16T ln(1/δ)/(ε²n²ρ)) at ρ = min p̃"}
        trace = [{"stage": s, "lambda": lam, "train_error": e}
                 for s, (lam, e) in enumerate(zip(path, errors))]
        return Result(self.name, [checkpoints[chosen]], [1.0], ds, plan=plan, trace=trace,
                      info=info)


# ------------------------------------------------------------------------------ helpers
def _device(torch, device):
    from privfair.errors import InvalidInputError

    if device in ("cpu", "torch"):
        return torch.device("cpu")
    if device == "cuda":
        if not torch.cuda.is_available():
            raise InvalidInputError("device", device, "CUDA is not available; use device='cpu'")
        return torch.device("cuda")
    raise InvalidInputError("device", device, "choose 'cpu', 'torch' or 'cuda'")


def _adapter(ds, torch, dev):
    from privfair.decisions import LinearClassifier

    if isinstance(ds, LinearClassifier):
        return E.LinearAdapter(ds.n_features, 1, radius=ds.radius, layout="wb")
    tmpl = ds._template
    if isinstance(tmpl, torch.nn.Linear) and tmpl.bias is not None:
        a = E.LinearAdapter(ds.n_features, tmpl.out_features, theta0=ds.initial_parameters(),
                            layout="linear")
        if ds.binary_logit != (tmpl.out_features == 1):
            return E.ModuleAdapter(ds)
        return a
    return E.ModuleAdapter(ds)


def _poisson(gen, n, q, dev, torch):
    """A Poisson sample: each row independently with probability q (binomial size, then a
    uniform subset of that size — the same distribution)."""
    k = int(gen.binomial(n, q))
    idx = gen.choice(n, size=k, replace=False, shuffle=False) if k else np.zeros(0, dtype=np.int64)
    return torch.as_tensor(idx, dtype=torch.long, device=dev)


def w_step(W, gW, s_w, Fs, wt, mexp, lr_w, mode, D):
    """The W-player's ascent step on the released gradient gW + s_w (sums over the batches).

    ``"plain"``: W + lr_w (gW + s_w)/(qn).  ``"newton"``: ψ's mean is a separable quadratic in
    W with diagonal curvature h[c, j] = 2 w_c Σ_{i∈B'_t, c_i=c} F_ij/(qn), public (it reads no
    a_i), so dividing by it is post-processing; the step is then W ← (1 − lr_w) W + lr_w Ŵ_t,
    an exponential average of the per-step maximisers Ŵ_t (lr_w = 1: exactly the batch's W*),
    i.e. every coordinate averages the noise over ~1/lr_w steps whatever its curvature."""
    if mode == "newton":
        h = (2.0 * Fs * wt[:, None] / mexp).clamp_min(1.0 / mexp)[:, None, :]
        return _project_w(W + lr_w * (gW + s_w) / mexp / h, D)
    return _project_w(W + lr_w * (gW + s_w) / mexp, D)


def _project_w(W, D):
    nrm = float(W.norm())
    return W if nrm <= D else W * (D / nrm)


def _public_p(given, r, notion, counts):
    """p̃ from a public declaration: {group: P(group)} (demographic parity) or
    {(group, label): P(group | label)} (equalized odds)."""
    G, L = r.G, r.L
    if notion == "demographic_parity":
        vals = np.array([given.get(g, np.nan) if isinstance(given, dict) else np.nan
                         for g in r.groups], dtype=float)[None, :]
    else:
        vals = np.array([[given.get((g, lab), np.nan) if isinstance(given, dict) else np.nan
                          for g in r.groups] for lab in r.label_values], dtype=float)
    if not np.isfinite(vals).all() or (vals <= 0).any():
        _bad("group_probabilities", given,
             "pass public probabilities > 0: {group: p} for demographic parity, "
             "{(group, label): P(group | label)} for equalized odds, covering every group")
    return vals / vals.sum(axis=1, keepdims=True)


from . import register  # noqa: E402

register(SGDABackend())

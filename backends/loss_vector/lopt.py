# Over 500 lines: one backend: Algorithm 2 (corrected) with its privacy and utility proofs in the
#   docstring.
"""Linear-optimization reduction (LOPT) — [A] §5.2–5.3, Algorithm 2 (corrected), Thm 5.5, 5.9,
5.10, Cor 5.11.

(Over 500 lines: one backend whose corrected algorithm and bound are proved in this docstring.)

Algorithm (what runs).  h_s = f̃ + G·s·log(1 + e^{g̃/s}) is the compiler's smooth penalty
(``Analysis.h_smooth_grad``; h ≤ h_s ≤ h + gap), S the support, x₀ a public start (0 on joint
frequencies, ½ on conditional rates)::

    for t = 1..T:
        y_{t−1} = clip_[0,1](mean of the released l̃_1..l̃_{t−1})      (y₀ = x₀)
        r_t     = ∇h_s(y_{t−1}) = ∇f̃ + G·σ(g̃/s)·∇g̃                   (with G: docs/traps.md #3)
        c_t     = LOPT_ε'(r_t), a private approximate minimizer of r_t·ℓ(c, D)
        l̃_t     = ℓ_S(c_t, D) + Laplace(Δℓ₁) or Gaussian(Δℓ₂) noise  (t < T; docs/traps.md #4)
    return the uniform mixture of c_1..c_T

Corrections to Algorithm 2 as printed.  (1) G multiplies ∇g (Algorithm 4 has it).  (2) r_t is
computed from released loss vectors only, so every oracle sees public weights, as [A] Def. 1.4
needs.  (3) The weights are taken at the running *mean* of the released loss vectors, not at the
last iterate: best-responding to ∇h at the last iterate is not a no-regret dynamics (ℓ(a) = (1,0),
ℓ(b) = (0,1), ℓ(c) = (.3,.3), h = ‖ℓ − (.3,.3)‖²: a and b alternate forever, h = 0.08 against
0), whereas ∇h_s at the mean is follow-the-leader for the weight player of
min_p max_u u·ℓ(p) − h_s*(u) — Frank–Wolfe with step 1/(t+1), whose iterate *is* the uniform
mixture.  (4) σ(g/s) smooths 1[g ≥ 0] (s → 0 recovers it).  ``options={"anchor": "last"}`` and
``{"weights": "subgradient"}`` run the printed variants, with no proven bound.

Bound (each step elementary; h_s convex and β-smooth on the box).  With x_t the mean of the true
ℓ_1..ℓ_t, Φ_t = t·h_s(x_t) satisfies Φ_t − Φ_{t−1} ≤ lin_{x_{t−1}}(ℓ_t) + β‖ℓ_t − x_{t−1}‖²/(2t);
lin_x ≤ lin_y + min(β‖x − y‖, 2L)·D (clipping is non-expansive); lin_y(ℓ_t) ≤ h_s(ℓ*) + τ_t by
the oracle and convexity.  Hence, for the uniform mixture p̄ and every norm q,

    h(ℓ(p̄)) − min_p h(ℓ(p)) ≤ gap + (1/T)Σ_t (τ_t + e_t) + β_q (D0_q² + D_q² (H_T − 1))/(2T),

τ_t the oracle's excess on r_t ([A] Thm 3.6 for the exponential mechanism, w.p. 1 − ρ/(2T)
each; AdaGrad-norm noisy GD for linear classifiers, in expectation), e_t = min(β_q‖ξ̄_{t−1}‖_q,
2L_q)·(D_q + ‖ξ̄_{t−1}‖_q) the release noise (Gaussian / sub-exponential tails, w.p. 1 − ρ/2),
D_q, D0_q public diameters of the loss vectors and of their distance to x₀ (``geometry``), H_T
the harmonic number, gap from the softplus (G·s·log 2) and the compiler's rewrites
(``surrogate_gap``).  ``plan`` picks T ∈ {1..100} minimizing it; for constrained problems the
β of h_s grows like G²/α and the bound is vacuous at such T — then ``auto`` prefers others.

Privacy.  The T oracle calls and T − 1 loss releases are scheduled at plan time
(``plan.schedule``, :mod:`privfair.privacy.release`): one calibration
(:func:`~._oracles.calibrate_lopt`, through :func:`privfair.privacy.calibrate`) fits the
per-call budget to (ε, δ) and the events already spent — optimal composition, exact GDP, or
RDP/PLD — and ``run`` draws every noise through ``schedule.open(accountant, rng)``, which
records each release's event before its first draw; the plan is final, ``run`` never
re-calibrates.  r_t, y_t and the mixture are post-processing; the calls and releases compose
adaptively.  A call's sensitivity Δ_t is computed from the public r_t and is at most the
planned bound its event records.  [A] Lemma 5.8's ε' — smaller, and counting the oracle calls
only — is reported beside the budget in the notes.
When the sensitivity of an oracle call is 0 (the scores or gradients do not depend on the
protected part of a row), its exact minimizer is the same on all neighbours and is used for free.

Options (public hyper-parameters): ``T``, ``release_share`` (release budget ÷ oracle budget),
``gd_steps`` (cap of noisy-GD steps per call), ``weights``, ``anchor``, ``oracle``.  The
audit's negative control is :func:`privfair.privacy.reduced_noise` around the solve.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from privfair.analysis import formulas as F
from privfair.errors import BackendRefusedError

from . import oracles as O
from ..base import PUBLIC, RELEASED, Backend, Plan, Verdict
from .exponential import RHO
from ..options import Option, Param, from_options, validate

T_GRID = (1, 2, 3, 5, 7, 10, 14, 20, 28, 40, 56, 80, 100)
T_DEFAULT = 20           # when no bound is proven
T_ROW = 5                # default T of the row-private ERM oracle (no proven bound)
ROW_RELEASE_SHARE = 0.3  # its loss releases' ε ÷ the oracle's ε' (Laplace on ℓ_S)
#: lopt's options, declared once (type, range, default, doc): validated by
#: :func:`backends.options.validate` at plan time, before anything is spent.  ``None`` defaults
#: are decided from public quantities (the docs say how).
OPTIONS = (
    Option("T", "int", None, low=1,
           doc=f"iterations (oracle calls); auto: the bound's best on {T_GRID[0]}..{T_GRID[-1]}, "
               f"{T_DEFAULT} when no bound is proven, {T_ROW} with the row-private ERM oracle"),
    Option("release_share", "float", None, low=0, low_open=True,
           doc=f"each loss release's budget ÷ the oracle call's (auto: 1, {ROW_RELEASE_SHARE:g} "
               "with the row-private ERM oracle)"),
    Option("gd_steps", "int", None, low=1,
           doc=f"cap of noisy-GD steps per oracle call (auto: {O.GD_STEPS})"),
    Option("weights", "str", "smooth", choices=("smooth", "subgradient"),
           doc="r_t = ∇h_s (smooth, proven) or Algorithm 2's printed subgradient (no bound)"),
    Option("anchor", "str", "mean", choices=("mean", "last"),
           doc="weights at the running mean of the releases (proven) or at the last (printed)"),
    Option("oracle", "str", "auto", choices=("auto", "noisy_gd") + O.ROW_METHODS,
           doc="the linear classifier's oracle: auto (objective perturbation for "
               "pf.SparseLinear under protect='row', else noisy GD) or one named"),
)

#: what a plan puts in Plan.params, declared once (checked when the plan is made)
PLAN_PARAMS = (
    Param("oracle", str, "the oracle, in words (exponential mechanism, noisy projected GD or "
          "the row-private weighted ERM)"),
    Param("G", float, "the penalty weight of h = f + G·max(0, g) (the Analysis' G)"),
    Param("smoothing", float, "the softmax smoothing of max(0, g) in h_smooth"),
    *from_options(OPTIONS, "weights", "anchor"),
    Param("T", int, "the iterations (oracle calls)"),
    Param("calibration", (O.LoptBudget, None), "the per-call budget fitted at plan time "
          "(None at ε = ∞)"),
    Param("composition", str, "the accountant's rule that proves the composition (a private "
          "plan with the exponential-mechanism or noisy-GD oracle)", optional=True),
    Param("release_share", float, "each loss release's budget ÷ the oracle call's (a private "
          "plan, and every plan with the row-private ERM oracle)", optional=True),
    Param("gd_steps", int, "noisy-GD steps per oracle call (a private plan with the noisy-GD "
          "oracle)", optional=True),
    Param("oracle_method", str, "the row-private weighted ERM's method (that oracle only)",
          optional=True),
)


def _options(options):
    """``options`` validated by :data:`OPTIONS`, every option present (None: auto)."""
    return validate(OPTIONS, options, "lopt")


def _oracle_kind(problem):
    ds = getattr(problem.rates, "decisions", None)
    if ds is not None and getattr(ds, "is_finite", False):
        return "finite"
    from privfair.models.decisions import LinearClassifier

    if isinstance(ds, LinearClassifier) and problem.rates.surrogate is not None:
        return "erm"
    return None


def _row_method(problem, analysis, opts=None):
    """The row-private weighted-ERM oracle's method under protect="row", else None (noisy GD).

    ``auto``: objective perturbation for a pf.SparseLinear decision set under protect="row"
    (:func:`backends.erm.direct.private_weighted_erm`, public denominators n·q); noisy GD
    otherwise."""
    o = (opts or {}).get("oracle") or "auto"
    if o == "noisy_gd" or _oracle_kind(problem) != "erm":
        return None
    if o in O.ROW_METHODS:
        return o
    from privfair.models.sparse import SparseLinear

    row = analysis.privacy.protect == "row" and analysis.privacy.is_private
    return "objective_perturbation" if row and isinstance(problem.rates.decisions,
                                                          SparseLinear) else None


def _sign_violation(problem, analysis):
    """The first (expression, coordinate) whose monotonicity lets a weight take the wrong sign
    for the surrogate's convexity (None when every r_t gives a convex weighted ERM)."""
    mask = O.erm_sign_mask(problem.rates)
    exprs = [("f", problem.f), ("f", analysis.f_smooth)]
    exprs += [(f"g[{j}]", g) for j, g in enumerate(problem.g)]
    exprs += [(f"g[{j}]", g) for j, g in enumerate(analysis.g_smooth)]
    for name, e in exprs:
        mono = e.monotonicity()
        for k in analysis.support:
            need, m = mask[k], mono[k]
            if m == 0 or (need != 0 and m == need):
                continue
            return name, problem.rates.names[k], need
    return None


class LoptBackend(Backend):
    name = "lopt"
    bound_on_h = True        # predicted_excess_risk bounds h − min h (Plan.bound_terms)
    exposes = {"T": (PUBLIC, "the planned iteration count"),
               "calibration": (PUBLIC, "the per-release budget fitted to the plan")}
    option_table = OPTIONS
    plan_params = PLAN_PARAMS
    theorem = "[A] Algorithm 2 (corrected) with Thm 5.5/5.10 oracles; Frank–Wolfe/FTL regret"

    def accepts(self, problem, analysis) -> Verdict:
        kind = _oracle_kind(problem)
        if kind is None:
            ds = getattr(problem.rates, "decisions", None)
            hint = (" — ℓ of 0-1 predictions is not convex in θ; build the rates with "
                    "pf.rates(..., surrogate='logistic') or 'smoothed_hinge'"
                    if type(ds).__name__ == "LinearClassifier" else "")
            return Verdict(False, "needs a finite decision set (pf.FiniteSet, pf.Thresholds) or a "
                                  f"pf.LinearClassifier with a convex surrogate{hint}")
        if not analysis.is_convex:
            why = "; ".join(v for k, v in analysis.reasons.items() if k.startswith("convexity"))
            return Verdict(False, f"LOPT needs convex f and g: {why}")
        why = analysis.sensitivity_unproven()
        if why:
            return Verdict(False, why)
        if kind == "erm":
            bad = _sign_violation(problem, analysis)
            if bad is not None:
                name, coord, need = bad
                want = {1: "non-decreasing", -1: "non-increasing", 0: "independent of"}[need]
                curv = {1: "convex", -1: "concave", 0: "neither convex nor concave"}[need]
                return Verdict(False, (
                    f"{name} is not {want} in {coord} (a coordinate the {problem.rates.surrogate} "
                    f"surrogate makes {curv} in θ), so some weight r_t on it can have the wrong "
                    "sign and the oracle's weighted ERM is not convex; use non-negative weights "
                    "on fp/fn/fpr/fnr (non-positive on tn/tp/tnr/tpr, none on selection), or a "
                    "finite decision set (pf.Thresholds / pf.FiniteSet) with backend='lopt' or "
                    "'exponential'"))
            method = _row_method(problem, analysis)
            if method is not None:
                why = O.row_oracle_reason(problem.rates, method)
                if why:
                    return Verdict(False, why)
            elif analysis.privacy.is_private and analysis.privacy.delta == 0:
                return Verdict(False, "the linear-classifier oracle is noisy gradient descent, "
                                      "(ε, δ)-DP only: pass pf.DP(epsilon, delta > 0)")
        return Verdict(True)

    # ------------------------------------------------------------------------------ planning
    def plan(self, problem, analysis, privacy, options, spent=()) -> Plan:
        """T, the per-call budget and the releases, scheduled once (``spent``: events already
        recorded against the same (ε, δ), e.g. a private group-mass estimate)."""
        opts = _options(options)
        kind = _oracle_kind(problem)
        c = O.Bound(problem, analysis, kind, opts)
        method = _row_method(problem, analysis, opts) if kind == "erm" else None
        if method is not None:
            why = O.row_oracle_reason(problem.rates, method)
            if why:
                self.refuse(why)
            return self._plan_row(problem, analysis, privacy, opts, method, spent)
        params = {"oracle": {"finite": "exponential mechanism", "erm": "noisy projected GD"}[kind],
                  "G": analysis.G, "smoothing": analysis.smoothing,
                  "weights": opts["weights"], "anchor": opts["anchor"]}
        notes = ["corrections to [A] Algorithm 2 (docs/traps.md #3–5): G·∇g in r_t; r_t from "
                 "privately released loss vectors; weights at the running mean of the releases "
                 "(follow-the-leader) instead of the last iterate, which has no regret bound"]
        if not c.proven:
            notes.append(f"no proven bound: {c.why}")
        if not privacy.is_private:
            T = opts["T"] or T_GRID[-1]
            params.update(T=T, calibration=None)
            out = Plan(self.name, privacy, analysis, problem, params=params,
                       predicted_excess_risk=c.bound(T, None), theorem=self.theorem,
                       notes=notes + ["ε = ∞: exact oracle (argmin / SLSQP), exact loss vectors"])
            out.schedule = None
            return out
        eps, delta = privacy.epsilon, privacy.delta
        dim = len(analysis.support)
        share = opts["release_share"] or 1.0
        kinds = ["gdp"] if kind == "erm" else (["pure"] if delta == 0 else ["pure", "gaussian"])
        if kind == "finite" and delta > 0 and share != 1.0:
            kinds = ["gaussian"]
        Ts = [opts["T"]] if opts["T"] is not None else list(T_GRID)
        if not c.proven and opts["T"] is None:
            Ts = [T_DEFAULT]          # no bound to rank T by: the largest per-call budget at T
        best, why = None, None
        for T in Ts:
            for k in kinds:
                try:
                    cal = O.calibrate_lopt(k, T, eps, delta, share, dim=dim, spent=spent)
                except BackendRefusedError as err:   # no budget split fits (ε too small)
                    why = why or err.fix
                    continue
                key = (c.bound(T, cal), -(cal.oracle_mu if k == "gdp" else cal.oracle_epsilon))
                if best is None or key < best[0]:
                    best = (key, T, k)
        if best is None:
            self.refuse(f"no calibration of the oracle calls and loss releases fits ε = {eps:.3g}"
                        f", δ = {delta:.3g}: {why}")
        (b, _), T, k = best
        if not math.isfinite(b) and opts["T"] is None and T != T_DEFAULT:
            T = T_DEFAULT             # every bound vacuous: the default T, its largest budget
            k = max(kinds, key=lambda kk: _scale_or_zero(kk, T, eps, delta, share, dim, spent))
        cal = O.calibrate_lopt(k, T, eps, delta, share, dim=dim, spent=spent,
                               thorough=(k == "gaussian"))
        tiny = _tiny_noise_reason(cal, analysis, T)
        if tiny:
            self.refuse(tiny)
        risk = c.bound(T, cal)
        params.update(T=T, calibration=cal, composition=cal.rule, release_share=share)
        steps = 1
        if kind == "erm":
            params["gd_steps"] = steps = c.steps(cal.oracle_mu)
        sens = (c.sens_h if kind == "finite" else c.dg)
        schedule = _schedule(cal, analysis, privacy, spent, steps=steps,
                             n_candidates=c.m if kind == "finite" else None,
                             oracle_sensitivity=sens)
        budget, paper = _budget_lines(kind, T, cal, eps, delta)
        notes.append(f"[A] Lemma 5.8 (advanced composition): ε' = {paper} per oracle call "
                     f"(counting the T = {T} calls only); this run, by {cal.rule}: "
                     + "; ".join(f"{w}: ε={e:.4g}, δ={d:.2g}" for w, e, d in budget))
        notes.append("predicted bound: gap + oracle excess + release-noise term + "
                     "FTL regret β·D²·H_T/(2T)" + (f", w.p. ≥ {1 - RHO:g}" if kind == "finite"
                                                   else ", the oracle term in expectation"))
        out = Plan(self.name, privacy, analysis, problem, params=params, budget=budget,
                   predicted_excess_risk=risk, theorem=self.theorem, notes=notes)
        out.schedule = schedule
        return out

    def _plan_row(self, problem, analysis, privacy, opts, method, spent=()):
        """The plan with the row-private weighted-ERM oracle: T calls of ``method`` and T − 1
        Laplace releases of ℓ_S, composed by the accountant.  No bound is claimed: the oracle
        minimizes r'·ℓ (conditional weights rescaled by max(n_gy, nq)/(nq), see
        backends/erm/reduction.cell_coefficients), not r·ℓ, and its excess is in the ERM's
        units."""
        T = opts["T"] or T_ROW
        share = opts["release_share"] or ROW_RELEASE_SHARE
        params = {"oracle": f"row-private weighted ERM ({method})", "oracle_method": method,
                  "G": analysis.G, "smoothing": analysis.smoothing,
                  "weights": opts["weights"], "anchor": opts["anchor"],
                  "T": T, "release_share": share}
        notes = ["corrections to [A] Algorithm 2 as for the other oracles (G·∇g, released loss "
                 "vectors, weights at their running mean)",
                 "protect='row': each oracle call is "
                 "backends/erm/direct.private_weighted_erm — "
                 f"{method} on the weighted GLM ERM of r_t·ℓ with public denominators n·q "
                 "(row-local weights, sensitivity from the clipped features)",
                 "no proven bound: the oracle's ERM has the conditional weights rescaled by "
                 "max(n_gy, nq)/(nq) ≥ 1, so it minimizes r'·ℓ, not r_t·ℓ"]
        budget, cal, schedule = [], None, None
        if privacy.is_private:
            cal = O.calibrate_lopt("row", T, privacy.epsilon, privacy.delta, share,
                                   dim=len(analysis.support), spent=spent, method=method)
            schedule = _schedule(cal, analysis, privacy, spent, method=method)
            budget = [(f"each of {T} oracle calls ({method})", cal.oracle_epsilon,
                       cal.oracle_delta)]
            if T > 1:
                budget.append((f"each of {T - 1} loss releases (Laplace)", cal.release.epsilon,
                               0.0))
        params.update(calibration=cal)
        out = Plan(self.name, privacy, analysis, problem, params=params, budget=budget,
                   predicted_excess_risk=math.inf, theorem=self.theorem, notes=notes)
        out.schedule = schedule
        return out

    def formula(self, plan):
        """excess = gap + oracle + noise + β(D0² + D²(H_T − 1))/(2T) (:func:`_oracles.lopt_bound`),
        the oracle term expanded ([A] Thm 3.6 or noisy GD); None when no bound is proven."""
        import sympy as sp

        if not math.isfinite(plan.predicted_excess_risk) or plan.params.get("oracle_method"):
            return None
        kind = _oracle_kind(plan.problem)
        opts = {k: plan.params[k] for k in ("weights", "anchor", "gd_steps") if k in plan.params}
        c = O.Bound(plan.problem, plan.analysis, kind, opts)
        T, cal = plan.params["T"], plan.params["calibration"]    # a LoptBudget
        q = c.best_norm(T)
        gap, noise, beta, D0, D = sp.symbols("gap noise beta D0 D", nonnegative=True)
        Ts = sp.Symbol("T", positive=True, integer=True)
        values = {"gap": c.gap, "noise": c.noise_term(T, cal), "beta": c.beta[q], "D0": c.D0[q],
                  "D": c.D[q], "T": T}
        if cal is None:
            oracle = sp.Integer(0)
        elif kind == "finite":
            dh, eo, m, rho = sp.symbols("Delta_h epsilon_oracle m rho", positive=True)
            oracle = O.finite_oracle_bound(dh, eo, m, Ts, rho=rho, ops=F.symbolic())
            values.update(Delta_h=c.sens_h, epsilon_oracle=cal.oracle_epsilon, m=c.m, rho=RHO)
        else:
            R, LF, K, P, dg, mu = sp.symbols("R L_F K P Delta_g mu", positive=True)
            oracle = O.gd_oracle_bound(R, LF, K, P, dg, mu, sqrt=sp.sqrt)
            values.update(R=c.R, L_F=c.LF, K=c.steps(cal.oracle_mu), P=c.P, Delta_g=c.dg,
                          mu=cal.oracle_mu)
        expr = O.lopt_bound(gap, oracle, noise, beta, D0, D, Ts,
                            harmonic_minus_1=sp.harmonic(Ts) - 1)
        return sp.Eq(sp.Symbol("excess"), expr, evaluate=False), values

    # ------------------------------------------------------------------------------ running
    def run(self, plan, *, rng, accountant, device="cpu", progress=True):
        from privfair.util.progress import bar
        from privfair.results.result import Result

        problem, an, p = plan.problem, plan.analysis, plan.params
        rates, ds = problem.rates, problem.rates.decisions
        kind, T, S = _oracle_kind(problem), p["T"], np.asarray(an.support, dtype=int)
        private = plan.privacy.is_private
        cal, method = p["calibration"], p.get("oracle_method")
        draws = None
        if private:
            schedule = getattr(plan, "schedule", None)
            if schedule is None:
                self.refuse("the plan has no release schedule (it was planned at ε = ∞)")
            draws = schedule.open(accountant, rng)       # the plan is final: no re-fit here
        torch_dev = device if device in ("cuda", "torch") else None
        if kind == "finite":
            L = rates.evaluate_all()[:, S]
            xp_L = None
            if torch_dev:
                import torch

                xp_L = torch.as_tensor(L, device="cuda" if device == "cuda" else "cpu")
        mask = O.erm_sign_mask(rates) if kind == "erm" else None
        y, total, last, chosen, trace = O.start_point(rates), np.zeros(len(S)), None, [], []
        steps = bar(range(1, T + 1), "lopt", progress)
        for t in steps:
            if t > 1:
                y[S] = np.clip(total / (t - 1) if p["anchor"] == "mean" else last, 0.0, 1.0)
            r = _weights(problem, an, y, p["weights"])
            rec = {"t": t, "weights_l1": float(np.abs(r).sum())}
            if kind == "finite":
                idx, sens = O.finite_oracle(L, r[S], an, draws=draws, xp_L=xp_L)
                chosen.append(idx)
                loss, rec["index"] = L[idx], idx
            else:
                r = np.where(mask * r < 0, 0.0, r) * (mask != 0)   # float noise only (accepts)
                if method is not None:
                    theta = O.row_oracle(rates, r, cal, method, draws=draws,
                                         label=f"LOPT oracle call {t}/{T}")
                    sens = None
                elif private:
                    theta, sens = O.erm_oracle(rates, r, p["gd_steps"], plan.privacy.protect,
                                               draws=draws, device=torch_dev)
                else:
                    theta, sens = O.erm_exact(rates, r), None
                chosen.append(theta)
                loss = rates.evaluate(theta)[S] if t < T else None
            rec["oracle_sensitivity"] = sens
            if t < T:
                if private:
                    loss = _release(draws, cal, loss)
                    rec["released_loss"] = [float(v) for v in loss]
                total, last = total + loss, loss
            trace.append(rec)
        decisions, weights = _merge(ds, chosen, kind)
        return Result(self.name, decisions, weights, ds, plan=plan, trace=trace,
                      info={"T": T, "calibration": cal})


# ---------------------------------------------------------------------------------- helpers
def _weights(problem, analysis, y, mode):
    """r = ∇h_s(y) (smooth) or Algorithm 2's ∇f + G·1[g ≥ 0]·∇g (subgradient, with G)."""
    if mode == "smooth":
        return np.asarray(analysis.h_smooth_grad(y), dtype=float)
    r = np.asarray(problem.f.grad(y), dtype=float)
    if problem.g:
        vals = [float(g.value(y)) for g in problem.g]
        j = int(np.argmax(vals))
        if vals[j] >= 0:
            r = r + analysis.G * np.asarray(problem.g[j].grad(y), dtype=float)
    return r


def _merge(ds, chosen, kind):
    keys, out = {}, []
    for c in chosen:
        key = c if kind == "finite" else tuple(np.round(c, 12))
        if key not in keys:
            keys[key] = len(out)
            out.append([c, 0])
        out[keys[key]][1] += 1
    dec = [ds.decision(c) if kind == "finite" else c for c, _ in out]
    return dec, np.array([k for _, k in out], dtype=float) / len(chosen)


def _schedule(cal, analysis, privacy, spent, *, steps=1, n_candidates=None,
              oracle_sensitivity=None, method=None):
    """The plan's :class:`~privfair.privacy.Schedule` at budget ``cal``: the oracle calls at
    their planned sensitivity bound and the loss releases at the compiler's Δℓ (ℓ2 for
    Gaussian, ℓ1 for Laplace).  A Δℓ of 0 means the loss vectors are the same on every
    neighbour: they are public and nothing is scheduled for them.  Raises the planner's
    refusal (public, nothing drawn) when the releases do not fit."""
    from privfair.privacy import Schedule

    rel = cal.release
    sens = analysis.delta_l("l2" if rel.mechanism == "gaussian" else "l1") if cal.T > 1 else 1.0
    if sens is None:
        raise BackendRefusedError("backend", "lopt", "Δℓ of the loss releases is not proven: "
                                  f"{analysis.reason('delta_l')}")
    releases = O.lopt_releases(cal, dim=len(analysis.support), steps=steps,
                               n_candidates=n_candidates, method=method,
                               oracle_sensitivity=(oracle_sensitivity if oracle_sensitivity
                                                   and math.isfinite(oracle_sensitivity)
                                                   else 1.0),
                               release_sensitivity=sens or 1.0, relation=privacy.protect)
    if not sens:
        releases = [r for r in releases if r.name != "release"]
    return Schedule(releases, privacy.epsilon, privacy.delta, spent)


def _release(draws, cal, loss):
    """ℓ_S(c_t, D) + the scheduled release's noise (Laplace or Gaussian), or ℓ_S itself when
    nothing was scheduled for it (Δℓ = 0: the same on every neighbour)."""
    if "release" not in draws.schedule:
        return np.asarray(loss, dtype=float)
    draw = draws.gaussian if cal.release.mechanism == "gaussian" else draws.laplace
    return np.asarray(draw("release", loss), dtype=float)


def _scale_or_zero(kind, T, eps, delta, share, dim, spent):
    """The calibrated per-call scale of ``kind`` at T (0 where nothing fits): ranks the
    kinds when no bound does."""
    try:
        return O.calibrate_lopt(kind, T, eps, delta, share, dim=dim, spent=spent).scale
    except BackendRefusedError:
        return 0.0


def _tiny_noise_reason(cal, analysis, T):
    """Why the planned releases cannot run at this (tiny) ε — a noise scale Δ/ε' that is not a
    finite float, or an ε' that underflowed to 0 — else None.  Checked at plan time, so a
    refusal spends nothing (the mechanisms would refuse too, but mid-run)."""
    tiny = sys.float_info.min      # below the smallest normal float ε' has lost its precision
    if cal.oracle_epsilon is not None and not cal.oracle_epsilon >= tiny:
        return (f"the oracle's per-call ε' = {cal.oracle_epsilon:.3g} is below the float "
                "range: ε is too small to plan")
    mu = cal.oracle_mu
    if mu is not None and not (mu >= tiny and math.isfinite(1.0 / mu)):
        return f"the oracle's μ = {mu:.3g} is below the float range: ε is too small"
    rel = cal.release
    if T > 1:
        gauss = rel.mechanism == "gaussian"
        size = rel.mu if gauss else rel.epsilon
        sens = analysis.delta_l("l2" if gauss else "l1") or 1.0
        if not (size >= tiny and math.isfinite(sens / size)):
            return (f"the loss releases' noise scale Δ/{'μ' if gauss else 'ε'} = {sens:.3g}/"
                    f"{size:.3g} is not a finite float: ε is too small")
    return None


def _budget_lines(kind, T, cal, eps, delta):
    from privfair.privacy import calibrate_advanced, gaussian_epsilon

    if delta > 0:
        paper = calibrate_advanced(eps, delta, T, 0.0 if kind == "finite" else "paper").epsilon
        paper = f"{paper:.4g}"
    else:
        paper = f"n/a at δ = 0 (basic: {eps / T:.4g})"
    if kind == "finite":
        lines = [(f"each of {T} oracle calls (exponential mechanism)", cal.oracle_epsilon, 0.0)]
    else:
        d = delta / (4 * T)
        lines = [(f"each of {T} oracle calls (noisy GD, μ={cal.oracle_mu:.3g})",
                  gaussian_epsilon(d, cal.oracle_mu), d)]
    rel = cal.release
    if T > 1:
        lines.append((f"each of {T - 1} loss releases ({rel.mechanism})", rel.epsilon,
                      rel.delta))
    return lines, paper


from .. import register  # noqa: E402

register(LoptBackend())

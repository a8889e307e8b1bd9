"""DP oracle learner — [J] §4, Algorithm 3 with Subroutine 2, Thm 4.3/4.4 (the Lagrangian game of
Agarwal et al. 2018, made private).

Algorithm (what runs).  The constraints of the problem are read as K_c linear terms
r_k(ℓ) = a_k·ℓ − c_k ≤ 0 (for equalized odds with |A| groups against a reference, [J]'s
4(|A| − 1) signed gaps minus γ); L(Q, λ) = f(ℓ(Q)) + λ·r(ℓ(Q)), λ ∈ Λ = {λ ≥ 0, ‖λ‖₁ ≤ B}::

    θ_1 = 0 ∈ R^{K_c}
    for t = 1..T:
        λ_t = B·e^{θ_t}/(1 + Σ_k e^{θ_t,k})                       (exponentiated gradient)
        h_t = BEST_ε'(λ_t): a private best response to w_t = ∇f + Σ_k λ_t,k a_k     (Subroutine 2)
        if t < T:
            ℓ̃_t = ℓ_S(h_t, D) + Lap(Δℓ₁(S)/ε')                  (the auditor's release)
            θ_{t+1} = θ_t + η·(a_k·ℓ̃_t − c_k)_k
    output the uniform mixture of h_1..h_T (A-blind: no h_t reads the sensitive attribute)

Private best responses (cost-sensitive classification, Subroutine 2's costs C¹ − C⁰ = n·c_i):

* finite H (``pf.FiniteSet``, ``pf.Thresholds``): the exponential mechanism with score
  −w_t·ℓ(h, D) over every h (McSherry & Talwar 2007), sensitivity
  :func:`~._jagielski.linear_sensitivity` of the public w_t;
* ``pf.LinearClassifier`` (protect="sensitive"): the least-squares cost regression of [J] §5 /
  Kearns et al. 2018a with Smith et al. 2017's noise: v = Σ_i c_i x̂_i released with Laplace
  (ℓ1 sensitivity :func:`~._jagielski.regression_sensitivity`; x̂ = (x, 1) is public under this
  relation, so XᵀX needs no noise), β = (X̂ᵀX̂ + ρI)⁻¹ n·ṽ, h(x) = 1[x̂·β < 0] scaled into the
  ball.  A heuristic oracle: no excess-risk bound is claimed (predicted risk ∞).

Corrections to the paper ([J] Algorithm 3 as printed).  (1) Its noise scale
8|A|√(T ln(1/δ))/((min q̂_ay·m − 1)ε) reads min q̂_ay, which is private: here every conditional
rate is clamped with a public or privately estimated group-mass bound q (privfair.statistics.stats), so the
sensitivities hold on every dataset whatever q̂ is.  (2) The authors' public code passes the
Laplace scale as the *location* argument (noise of scale 1); here every draw goes through
privfair.privacy's exact Laplace and exponential mechanisms.  (3) The auditor releases the rates
ℓ_S (‖Δ‖₁ = Δℓ₁(S) ≈ 2/(nq)) rather than the 4(|A| − 1) violations (‖Δ‖₁ ≈ 2|A|/(nq)), and only
T − 1 times (the last gradient is never used).  (4) The budget: T oracle calls and T − 1 releases,
each ε'-DP, composed by the accountant (exact optimal composition for δ > 0, Kairouz et al. 2017;
basic for δ = 0), rather than ε' = ε/(4√(T ln(1/δ))) from advanced composition (noted in the plan).

Theorem (the argument of [J] Thm 4.3/4.4 with this implementation's constants,
:func:`~._jagielski.oracle_nu`).  W.p. ≥ 1 − β the average plays form a ν-approximate equilibrium,
so f(Q̄) ≤ f(Q*) + 2ν against every γ-fair mixture Q*, and every term r_k(Q̄) ≤ (range f + 2ν)/B.
Since max_{λ∈Λ} λ·r = B·max(0, max_k r_k), the game's value is min h_B for the penalty
h_B = f + B·max(0, max_k r_k): the predicted excess of h = f + G·max(0, g) (G from the compiler) is
2ν for B = G and 2ν + (G − B)(range f + 2ν)/B for B < G (:func:`~._jagielski.penalty_excess`).

Knob mapping (docs/published_algorithms.md).  γ from each constraint's level as for
post-processing (|·|, maximum, norm_inf: γ = c; lse over m entries: γ = c − log(m)/η; affine:
one side).  B and T: given (options ``B=``, ``T=``), else the pair on a public grid minimising the
predicted excess (B ≤ G; B = G turns the game into [A]'s penalty form exactly).
"""

from __future__ import annotations

import math

import numpy as np

from privfair.analysis import gap_terms as GT  # the constraint → gap-terms recogniser
from privfair.util.text import said_once

from . import jagielski as J
from ..base import PUBLIC, RELEASED, Backend, Plan, Verdict
from ..options import Option, Param

T_GRID = (1, 2, 3, 5, 8, 12, 20, 30, 50, 80)
T_DEFAULT = 20            # private runs without a finite bound (regression oracle)
T_NONPRIVATE = 1000       # ε = ∞ reference runs
B_STEPS = 12              # B ∈ {G·2^-k : k < B_STEPS} ∪ {1} for the search
RIDGE = 1e-3              # ρ = RIDGE·n in the least-squares oracle (post-processing)

#: the solve options (declared once: validated by ``options_from`` at plan time, before anything
#: is spent, and listed by ``privfair backends``)
OPTIONS = (
    Option("T", "int", None, low=1,
           doc="rounds: T best responses and T − 1 auditor releases; auto: the grid value with "
               f"the smallest predicted excess ({T_DEFAULT} for the regression oracle)"),
    Option("B", "float", None, low=0, low_open=True,
           doc="bound on the multipliers' ℓ1 norm; auto: the grid value G·2^-k with the "
               "smallest predicted excess"),
    Option("beta", "float", J.BETA, low=0, high=1, low_open=True, high_open=True,
           doc="failure probability of the equilibrium bound (Thm 4.3–4.4)"),
    Option("eta", "float", None, low=0, low_open=True,
           doc="the auditor's exponentiated-gradient step; auto: the regret bound's"),
    Option("ridge", "float", RIDGE, low=0, low_open=True,
           doc="least-squares oracle's ridge ρ = ridge·n"),
)


def _kind(problem):
    from privfair.models.decisions import LinearClassifier

    ds = getattr(problem.rates, "decisions", None)
    if ds is not None and getattr(ds, "is_finite", False):
        return "finite"
    if isinstance(ds, LinearClassifier):
        return "regression"
    return None


def _support(terms, K):
    if not terms:
        return np.zeros(0, dtype=int)
    return np.flatnonzero(np.any(np.abs(np.stack([t.a for t in terms])) > 0, axis=0))


def _group_mass(problem, analysis):
    """The bound the sensitivities use: the analysis's (declared, planning guess or estimate)."""
    gm = analysis.group_mass.get("bound")
    return gm if gm is not None else problem.rates.group_mass_bound


def max_row_l1(data):
    """max_i ‖(x_i, 1)‖₁ — public under protect="sensitive" (X is the same in neighbours).
    A pass merged by maximum (``passes.Max``): chunk by chunk in memory (no |X| copy), on the
    workers for a Dask dataset (#19); the same maximum either way."""
    from privfair.data import passes

    best = passes.rows_of(data).map_sum(row_l1_max)
    return (0.0 if best is None else best.value) + 1.0


def row_l1_max(chunk):
    """A pass function: the chunk's largest ‖x_i‖₁ as a ``passes.Max`` (0 for no rows)."""
    from privfair.data.passes import Max

    return Max(float(np.abs(chunk.X).sum(axis=1).max()) if len(chunk) else 0.0)


def _calibrate(s, T, privacy, spent=()):
    """(ε', rule): the per-mechanism ε of T best responses and T − 1 auditor releases (2T − 1
    pure events of equal ε'), by :func:`privfair.privacy.calibrate` against (ε, δ) and
    ``spent``.  Nothing spent: the closed form is exact and is the whole answer — basic
    composition ε/(2T − 1) at δ = 0, else the exact optimal composition (Kairouz, Oh &
    Viswanath 2017), which ``calibrate`` checks with the accountant's rules."""
    from privfair.privacy import calibrate, calibrate_optimal

    k = 2 * T - 1 if len(s.terms) else T
    target = privacy.epsilon * (1 - 1e-6)
    if privacy.delta == 0:
        hi, rule = target / k, "basic (= optimal for pure events at δ = 0)"
    else:
        hi = calibrate_optimal(target, privacy.delta, k).epsilon
        rule = "optimal composition (Kairouz, Oh & Viswanath 2017)"
    e = calibrate(lambda x: [r.event for r in _releases(s, T, x)], privacy.epsilon,
                  privacy.delta, spent=spent, hi=hi, key=("oracle_learner", s.kind, T, k,
                                                          s.S.size, s.dim))
    return e, (rule if not spent else "accountant (beside the events already spent)")


def _releases(s, T, eps_o, B=None):
    """The plan's releases at ε' each: T best responses (the exponential mechanism over the
    class, or the Laplace release of Σ c_i x̂_i) and T − 1 auditor releases of ℓ_S.  Their
    sensitivities are the planned bounds (``B``: the learner's sup over Λ; a best response's
    own Δ_t, of the public λ_t, is at most it and is what its draw uses)."""
    from privfair.privacy import Scheduled, exponential_event, laplace_event, laplace_scale

    sens = (s.s_learner(B) if B is not None else 0.0) or 1.0     # 0: never drawn (all free)
    src = (f"sup over λ ∈ Λ of the best response's sensitivity, s_f + B·max_k s_k (each "
           f"round's Δ_t, of the public λ_t, is at most it); protect={s.relation!r}")
    if s.kind == "finite":
        first = Scheduled("best responses", exponential_event(
            sens, eps_o, count=T, n_candidates=len(s.rates.decisions), sensitivity_source=src,
            label="[J] Subroutine 2 best responses"))
    else:
        first = Scheduled("best responses", laplace_event(
            sens, eps_o, scale=laplace_scale(sens, eps_o), dimension=s.dim, count=T,
            sensitivity_source="Σ_i c_i x̂_i, x̂ public: max‖x̂_i‖₁ × block bounds; " + src,
            label="[J] least-squares oracle"), exact=True)
    out = [first]
    # Δℓ₁(S) = 0: the audited rates are the same on every neighbour — public, not scheduled
    if T > 1 and len(s.terms) and s.delta_S > 0:
        out.append(Scheduled("auditor", laplace_event(
            s.delta_S, eps_o, scale=laplace_scale(s.delta_S, eps_o), dimension=int(s.S.size),
            count=T - 1, label="[J] auditor releases of ℓ_S",
            sensitivity_source=(f"rates ℓ_S of the played classifier: Δℓ₁(S) = {s.delta_S:.4g} "
                                "(privfair.statistics.stats row influence, group-mass bound, protect="
                                f"{s.relation!r})")), exact=True))
    return out


def _paper_epsilon(T, epsilon, delta):
    """[J] Algorithm 3's split ε' = ε/(4√(T ln(1/δ))) (advanced composition), for the notes."""
    return epsilon / (4 * math.sqrt(T * math.log(1 / delta))) if delta > 0 else float("nan")


class _Setup:
    """Everything plan and run share, from public quantities only."""

    def __init__(self, problem, analysis, privacy):
        r = problem.rates
        self.rates, self.kind = r, _kind(problem)
        self.w_f, _ = GT.objective_weights(problem)
        self.terms, self.knobs = GT.extract_terms(problem)
        self.A = (np.stack([t.a for t in self.terms]) if self.terms
                  else np.zeros((0, r.K)))
        self.c = np.array([t.c for t in self.terms], dtype=float)
        self.S = _support(self.terms, r.K)
        self.gm = _group_mass(problem, analysis)
        rel = privacy.protect
        self.relation, self.private = rel, privacy.is_private
        self.x1 = max_row_l1(r.data) if self.kind == "regression" else None
        self.dim = r.data.n_features + 1 if self.kind == "regression" else None
        self.delta_S, self.s_f, self.s_terms = 0.0, 0.0, [0.0] * len(self.terms)
        self.constants = J.block_constants_for(r, self.gm) if self.private else None
        self._L_all = None
        if self.private:                 # ε = ∞ needs no sensitivity (and maybe no bound)
            if self.S.size:
                self.delta_S = float(r.delta_l("l1", rel, support=self.S, group_mass_bound=self.gm))
            self.s_f = self.sensitivity(self.w_f)
            self.s_terms = [self.sensitivity(t.a) for t in self.terms]
        self.geometry = J.term_geometry(self.terms, self.S)
        lo, hi = problem.f.range()
        self.range_f = min(float(hi - lo), J.affine_range(r, self.w_f))
        self.n_candidates = len(r.decisions) if self.kind == "finite" else math.inf

    def sensitivity(self, w):
        """The best response's sensitivity for public weights w (0 when ε = ∞)."""
        if not self.private:
            return 0.0
        if self.kind == "finite":
            return J.linear_sensitivity(self.rates, w, self.relation, self.gm, self.constants)
        return J.regression_sensitivity(self.rates, w, self.x1, self.gm, self.constants)

    def all_statistics(self):
        """ℓ(h, D) of every h of the finite class, (|H|, K) — private; only ever scored."""
        if self._L_all is None:
            self._L_all = self.rates.evaluate_all()
        return self._L_all

    def s_learner(self, B):
        """sup over λ ∈ Λ of the oracle's sensitivity (a seminorm: subadditive)."""
        return self.s_f + B * max(self.s_terms, default=0.0)

    def nu(self, T, B, eps_oracle, beta):
        b = self.delta_S / eps_oracle if math.isfinite(eps_oracle) and self.S.size else 0.0
        return J.oracle_nu(T=T, B=B, n_terms=len(self.terms), n_candidates=self.n_candidates,
                           geometry=self.geometry, eps_oracle=eps_oracle,
                           s_learner=self.s_learner(B), b=b, n_support=self.S.size, beta=beta)


class OracleLearnerBackend(Backend):
    name = "oracle_learner"
    bound_on_h = True        # predicted_excess_risk bounds h − min h (Plan.bound_terms)
    exposes = {
        "lambda_bar": (RELEASED, "the auditor's averaged multipliers, from released rates"),
        "B": (PUBLIC, "the multiplier bound"), "T": (PUBLIC, "the planned round count"),
        "eta": (PUBLIC, "the step size"),
        "epsilon_per_mechanism": (PUBLIC, "the fitted per-release ε"),
        "gamma": (PUBLIC, "the constraint levels"),
    }
    option_table = OPTIONS
    plan_params = (
        Param("oracle", str, "the learner's oracle, in words"),
        Param("T", int, "rounds: T best responses and T − 1 auditor releases"),
        Param("B", float, "the bound on the multipliers' ℓ1 norm"),
        Param("eta", float, "the auditor's exponentiated-gradient step"),
        Param("G", float, "the penalty weight of h (0 without constraints)"),
        Param("terms", int, "the gap terms the constraints were recognised as"),
        Param("gamma", list, "each constraint's level γ (floats)"),
        Param("nu", float, "ν, the learner's and auditor's regret bound"),
        Param("violation_bound", float, "(range f + 2ν)/B, the bound on the violation"),
        Param("release_sensitivity_l1", float, "Δ₁ of each release of the rates ℓ_S"),
        Param("oracle_sensitivity_max", float, "the best response's score sensitivity at B"),
        Param("beta", float, "as the option: the failure probability of the equilibrium bound"),
        Param("group_mass_bound", (float, dict), "the group-mass bound the sensitivities use, "
              "as declared (a number or a dict per group), estimated or guessed; when there is "
              "one", optional=True),
        Param("epsilon_per_mechanism", float, "ε' of each best response and each release (a "
              "private plan)", optional=True),
        Param("composition", str, "the accountant's rule that proves the composition (a "
              "private plan)", optional=True),
        Param("release_scale", float, "the Laplace scale of each release of ℓ_S (a private "
              "plan)", optional=True),
        Param("ridge", float, "as the option: the least-squares oracle's ridge (the "
              "regression oracle only)", optional=True),
    )
    theorem = "[J] Algorithm 3 + Subroutine 2 / Thm 4.3–4.4 (private Lagrangian game)"
    needs_group_mass = True

    def accepts(self, problem, analysis) -> Verdict:
        r = problem.rates
        kind = _kind(problem)
        if r is None or kind is None:
            ds = getattr(r, "decisions", None)
            return Verdict(False, "needs a finite decision set (pf.FiniteSet, pf.Thresholds) or "
                                  f"pf.LinearClassifier; got {type(ds).__name__}")
        if r.L != 2:
            return Verdict(False, f"needs binary labels; the data has {r.L}")
        if r.surrogate is not None:
            return Verdict(False, "plays 0-1 classifiers: build the rates with surrogate=None")
        if kind == "regression" and analysis.privacy.protect != "sensitive":
            return Verdict(False, "the least-squares oracle releases Σ c_i x̂_i with public x̂ "
                                  "(XᵀX un-noised, [J] §5): it needs protect='sensitive'; use a "
                                  "finite decision set under protect='row'")
        try:
            GT.objective_weights(problem)
            GT.extract_terms(problem)
        except GT.Unsupported as err:
            return Verdict(False, str(err))
        why = analysis.sensitivity_unproven()
        return Verdict(False, why) if why else Verdict(True)

    # ------------------------------------------------------------------------------ planning
    def plan(self, problem, analysis, privacy, options, spent=()) -> Plan:
        """The game's T, B, η and its releases, scheduled (``spent``: events already recorded
        against the same (ε, δ))."""
        given = self.options_from(options or {})   # typed refusals before anything is spent
        o = {k: v for k, v in given.items() if v is not None}   # None: chosen below
        s = _Setup(problem, analysis, privacy)
        G = analysis.G if problem.g and math.isfinite(analysis.G) else 0.0
        beta = o["beta"]
        nterms = len(s.terms)
        notes = ["knobs: " + (said_once((f"g[{j}]", f"{k.form} ≤ {k.level:.4g} → γ = {k.gamma:.4g} "
                                                    f"({k.n_terms} terms)")
                                        for j, k in enumerate(s.knobs))
                              or "no constraint: one oracle call")]
        Ts = [o["T"]] if "T" in o else (list(T_GRID) if privacy.is_private else [T_NONPRIVATE])
        if nterms == 0:
            Ts = [1]
        if "B" in o:
            Bs = [float(o["B"])]
        elif G > 0:
            Bs = sorted({G * 2.0 ** -k for k in range(B_STEPS) if G * 2.0 ** -k >= 0.5} | {min(G, 1.0)})
        else:
            Bs = [1.0]
        best = None
        for T in Ts:
            eps_o = _calibrate(s, T, privacy, spent)[0] if privacy.is_private else math.inf
            for B in Bs:
                nu, eta = s.nu(T, B, eps_o, beta)
                risk = J.penalty_excess(nu, B, G, s.range_f) if nterms else 2 * nu
                if best is None or risk < best[0]:
                    best = (risk, T, B, nu, eta, eps_o)
        risk, T, B, nu, eta, eps_o = best
        if s.kind == "regression":
            if "T" not in o:
                T = T_DEFAULT if privacy.is_private else 100
            if "B" not in o:
                B = G if G > 0 else 1.0
            eps_o = _calibrate(s, T, privacy, spent)[0] if privacy.is_private else math.inf
            nu, eta = s.nu(T, B, eps_o, beta)
            risk = math.inf
            notes.append("no proven bound: the least-squares cost regression is a heuristic "
                         "oracle ([J] §5); η from the finite-class formula")
        eta = float(o.get("eta", eta))
        params = {"oracle": ("exponential mechanism over the finite class" if s.kind == "finite"
                             else "noisy least-squares cost regression"),
                  "T": T, "B": B, "eta": eta, "G": G, "terms": nterms,
                  "gamma": [float(k.gamma) for k in s.knobs], "nu": nu,
                  "violation_bound": (s.range_f + 2 * nu) / B if nterms else 0.0,
                  "release_sensitivity_l1": s.delta_S, "oracle_sensitivity_max": s.s_learner(B),
                  "beta": beta}
        if s.gm is not None:
            params["group_mass_bound"] = s.gm
        budget, schedule = [], None
        if privacy.is_private:
            from privfair.privacy import Schedule

            rule = _calibrate(s, T, privacy, spent)[1]
            schedule = Schedule(_releases(s, T, eps_o, B), privacy.epsilon, privacy.delta, spent)
            params.update(epsilon_per_mechanism=eps_o, composition=rule,
                          release_scale=(s.delta_S / eps_o if s.S.size else 0.0))
            what = ("exponential mechanism over the class" if s.kind == "finite"
                    else "Laplace release of Σ c_i x̂_i (least-squares oracle)")
            budget = [(f"{T} best responses: {what}, each", eps_o, 0.0)]
            if T > 1:
                budget.append((f"{T - 1} Laplace releases of the rates ℓ_S (|S| = {s.S.size}), each",
                               eps_o, 0.0))
            if privacy.delta > 0:
                notes.append(f"[J] Algorithm 3's split (advanced composition) would give "
                             f"ε' = ε/(4√(T ln(1/δ))) = {_paper_epsilon(T, privacy.epsilon, privacy.delta):.4g}; "
                             f"this run: ε' = {eps_o:.4g} by {rule}")
        if s.kind == "finite":
            notes.append(f"bound: ν = {nu:.4g} (learner + auditor regret, w.p. ≥ {1 - beta:g}); "
                         f"excess of h ≤ 2ν" + (f" + (G − B)(range f + 2ν)/B with G = {G:.4g}"
                                               if B < G else "")
                         + (" — relative to the γ-fair optimum (B > G)" if B > G and nterms
                            else ""))
        if s.kind == "regression":          # the only oracle that reads it
            params["ridge"] = o["ridge"]
        out = Plan(self.name, privacy, analysis, problem, params=params, budget=budget,
                   predicted_excess_risk=risk, theorem=self.theorem, notes=notes)
        out.oracle_setup = s                  # public constants, reused by run
        out.schedule = schedule
        return out

    def formula(self, plan):
        """[J] Thm 4.3–4.4 as planned: excess = 2ν (+ (G − B)(range f + 2ν)/B for B < G), ν from
        :func:`~._jagielski.oracle_nu` — the same pure functions the plan evaluates — with
        ε' (``epsilon_o``, the per-mechanism budget the accountant calibrated: no closed form in
        ε) and the plan's T, B, G, β, |H|, learner sensitivity s and release sensitivity Δ_S as
        symbols.  None for the regression oracle (no proven bound) and for ε = ∞ runs."""
        import sympy as sp

        s, P = getattr(plan, "oracle_setup", None), plan.params
        if s is None or s.kind != "finite" or not plan.privacy.is_private:
            return None
        eo, T, B, G, beta, H, sl, dS = sp.symbols(
            "epsilon_o T B G beta H s Delta_S", positive=True)
        nterms = len(s.terms)
        b = dS / eo if s.S.size else 0
        nu, _ = J.oracle_nu(T=T, B=B, n_terms=nterms, n_candidates=H, geometry=s.geometry,
                            eps_oracle=eo, s_learner=sl, b=b, n_support=s.S.size, beta=beta,
                            log=sp.log, sqrt=sp.sqrt, Min=sp.Min, Max=sp.Max)
        expr = J.penalty_excess(nu, B, G, s.range_f, Max=sp.Max) if nterms else 2 * nu
        return (sp.Eq(sp.Symbol("excess"), expr, evaluate=False),
                {"epsilon_o": P["epsilon_per_mechanism"], "T": P["T"], "B": P["B"],
                 "G": P["G"], "beta": P["beta"], "H": max(s.n_candidates, 1),
                 "s": P["oracle_sensitivity_max"], "Delta_S": s.delta_S})

    # ------------------------------------------------------------------------------ running
    def run(self, plan, *, rng, accountant, device="cpu", progress=True):
        """numpy on the CPU (``device`` is ignored: the work is one (|H|, K) matrix product per
        round, or one small least-squares solve)."""
        from privfair.results.result import Result

        from .._draws import laplace, select

        problem, privacy, p = plan.problem, plan.privacy, plan.params
        s = getattr(plan, "oracle_setup", None) or _Setup(problem, plan.analysis, privacy)
        r, ds = s.rates, s.rates.decisions
        T, B, eta = p["T"], p["B"], p["eta"]
        private = privacy.is_private
        eps_o = p.get("epsilon_per_mechanism", math.inf)
        draws = None
        if private:
            if getattr(plan, "schedule", None) is None:
                self.refuse("the plan has no release schedule (it was planned at ε = ∞)")
            draws = plan.schedule.open(accountant, rng)
        L_all = s.all_statistics() if s.kind == "finite" else None   # private; never released
        if s.kind == "regression":
            data = r.data
            # Σ [x_i, 1][x_i, 1]ᵀ and, per round, Σ c_i [x_i, 1]: passes over the rows' chunks
            # (no n×(d+1) design, and the held-out split's training part is never gathered
            # into a copy of X: 6.5 GB at 10⁷ × 101 rows, #19)
            from privfair.data.passes import rows_of

            rows = rows_of(data)
            ridge = p.get("ridge", RIDGE) * data.n
            # public under protect="sensitive" (X is)
            gram = rows.map_sum(hat_gram) + ridge * np.eye(data.n_features + 1)
        theta = np.zeros(len(s.terms))
        decisions, trace = [], []
        for t in range(T):
            lam = J.eg_lambda(theta, B)
            w = s.w_f + lam @ s.A
            rec = {"t": t + 1, "lambda": lam.tolist()}
            if s.kind == "finite":
                scores = -(L_all @ w)
                sens = s.sensitivity(w)
                if private and sens > 0:
                    idx = select(draws, "best responses", scores, sens)
                else:                  # ε = ∞, or a score identical on every neighbour
                    idx = int(np.argmax(scores))
                dec = ds.decision(idx)
                l_S = L_all[idx, s.S]
                rec.update(chosen_index=idx, oracle_sensitivity=sens)
            else:
                # Σ_i a[g_i, y_i]·x̂_i: the (G, 2) table travels, each chunk reads its rows'
                # cells (the n-vector of row coefficients is never formed, and on a Dask
                # dataset the rows' cells stay on the workers: #19)
                v = rows.map_sum(hat_tdot_cells, J.regression_table(r, w))
                sens = s.sensitivity(w)
                if private and sens > 0:
                    v = laplace(draws, "best responses", v, sens)
                beta = np.linalg.solve(gram, data.n * v)
                nb = float(np.linalg.norm(beta))
                dec = (-beta * (ds.radius / nb)) if nb > 0 else np.zeros(ds.P)
                l_S = r.evaluate(dec)[s.S]
                rec.update(oracle_sensitivity=sens)
            decisions.append(dec)
            if t < T - 1 and len(s.terms):
                if private and "auditor" in draws.schedule:
                    l_S = np.asarray(draws.laplace("auditor", l_S), dtype=float)
                    rec["released_rates"] = l_S.tolist()
                gain = s.A[:, s.S] @ l_S - s.c
                theta = theta + eta * gain
            trace.append(rec)
        lam_bar = np.mean([np.asarray(tr["lambda"]) for tr in trace], axis=0) if s.terms else []
        info = {"lambda_bar": np.asarray(lam_bar).tolist(), "B": B, "T": T, "eta": eta,
                "epsilon_per_mechanism": eps_o, "gamma": [k.gamma for k in s.knobs]}
        return Result(self.name, decisions, np.full(T, 1.0 / T), ds, plan=plan, trace=trace,
                      info=info)


def hat_gram(chunk):
    """Σ x̂ x̂ᵀ over a chunk, x̂ = (x, 1) (intercept last), without building x̂."""
    Z = chunk.X
    d = Z.shape[1]
    H = np.empty((d + 1, d + 1))
    H[:d, :d] = Z.T @ Z
    col = Z.sum(axis=0)
    H[:d, d], H[d, :d], H[d, d] = col, col, len(chunk)
    return H


def hat_tdot_cells(chunk, table):
    """Σ a[g_i, y_i]·x̂_i over a chunk (x̂ = (x, 1)): ``table`` (G, L) the coefficient of each
    (group, label) cell, read at the chunk's rows' cells g·L + y — the numbers of the n-vector
    ``rates.row_coefficients`` at those rows."""
    t = np.asarray(table, dtype=float)
    vc = t.ravel()[np.asarray(chunk.group) * t.shape[1] + np.asarray(chunk.y)]
    return np.concatenate([chunk.X.T @ vc, [vc.sum()]])


from .. import register  # noqa: E402

register(OracleLearnerBackend())

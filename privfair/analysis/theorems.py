"""Theorems as report entries: preconditions checked against a problem, constants read from it.

:data:`REGISTRY` maps a citation ("[A] Thm 5.5") to a builder ``fn(Context) -> TheoremEntry``;
:func:`entries` evaluates them all for a report.  The formulas themselves — one pure function
per theorem, evaluated on floats or turned into sympy — live in :mod:`privfair.analysis.formulas`; an
entry names its formula (``TheoremEntry.home``), evaluates it at the problem's constants
(``value``, ``n_needed``) and prints it (``formula``).

This module imports only :mod:`privfair.analysis.formulas`: it reads the problem, its Analysis and the
plans it is given through their public attributes, and never imports a backend or the report.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field

import numpy as np

from . import formulas as F
# re-exported for the backends that import them from here (their home is privfair.analysis.formulas)
from .formulas import NUMERIC, evaluate, formula, symbolic  # noqa: F401

# ================================================================================ theorem entries
# Report entries, one per theorem.  Each states its constants honestly: "explicit" where the
# proof gives them, "order, constant 1" where the paper states O(·)/Õ(·) only.  Preconditions
# are checked against the Analysis (applies / does not apply, with the reason).  The formula an
# entry evaluates is the one in privfair.analysis.formulas (``home``), used both numerically and by sympy.

EXPLICIT = "explicit (from the proof)"
ORDER = "order, constant 1"

#: [A] prints T = O(K⁴/α²) (Thm 5.5, 5.9) and n₀ = Õ(K⁴P/(εα³)) (Cor 5.11, Cor 8.9), but Thm 5.5's
#: explicit T ≥ 36(1+K)K²(1+G)²(3+α)²/α² with G = (α+√K)/α is Θ(K⁴/α⁴) (the proof's
#: "T = O(K³(1+G)²)" drops the 1/α²), so the composition gives Õ(K⁴P/(εα⁴)).
ALPHA_POWER_NOTE = ("corrected: [A] prints T = O(K⁴/α²) and n₀ = Õ(K⁴·P/(εα³)); Thm 5.5's explicit "
                    "T with G = (α+√K)/α is Θ(K⁴/α⁴) (the proof's T = O(K³(1+G)²) drops 1/α²), "
                    "so the composed n₀ is Õ(K⁴·P/(εα⁴))")


@dataclass
class TheoremEntry:
    """One theorem in a report: its preconditions checked, its value here, the n it needs.

    ``value`` is ``quantity`` evaluated at the data's n (None when it does not depend on the
    data); ``n_needed`` the n at which the theorem's guarantee reaches the target α (None when
    n plays no role, e.g. non-private iteration counts; inf when never); ``formula`` a
    ``(sympy.Eq, values)`` pair whose right-hand side with ``values`` and the report's
    ε, δ, n, α, β gives ``value``.
    """

    cite: str
    title: str
    constants: str
    applies: bool
    reason: str
    quantity: str = ""
    value: float | None = None
    n_needed: float | None = None
    T_needed: float | None = None
    formula: tuple | None = None
    correction: str = ""
    home: str = ""
    backend: str = ""


@dataclass
class Context:
    """What the entries read: the problem, its Analysis, the privacy, α, β, and the plans."""

    problem: object
    analysis: object
    privacy: object
    alpha: float
    beta: float
    plans: dict = field(default_factory=dict)      # backend -> Plan (accepting backends)
    refused: dict = field(default_factory=dict)    # backend -> reason

    @property
    def n(self):
        return int(self.problem.rates.n)

    @property
    def K(self):
        return max(len(self.analysis.support), 1)

    @property
    def decisions(self):
        return getattr(self.problem.rates, "decisions", None)

    @property
    def std(self):
        p = self.privacy
        return {"epsilon": p.epsilon, "delta": p.delta, "n": self.n, "alpha": self.alpha,
                "beta": self.beta}

    def lipschitz(self, name, norm="l2"):
        return self.analysis.lipschitz.get(name, {}).get(norm)

    def convex_decision_set(self):
        ds = self.decisions
        P = getattr(ds, "P", None)
        return (ds is not None and not getattr(ds, "is_finite", False) and P is not None
                and getattr(ds, "diameter", None) is not None)

    def convex_loss(self):
        """ℓ convex in the decision: surrogate rates over a convex (ball) decision set."""
        return self.convex_decision_set() and getattr(self.problem.rates, "surrogate", None) is not None


def _why(pairs):
    """'; '.join of the reasons whose condition failed ('' when all hold)."""
    return "; ".join(msg for ok, msg in pairs if not ok)


def _value(fn, values, std, **fixed):
    names = inspect.signature(fn).parameters
    kw = {k: v for k, v in std.items() if k in names}
    return float(fn(**values, **kw, **fixed, ops=NUMERIC))


def _entry_formula(fn, values, lhs, **fixed):
    names = [k for k in inspect.signature(fn).parameters
             if k in ("epsilon", "delta", "n", "alpha", "beta")]
    return formula(fn, values, standard=names, lhs=lhs, **fixed)


REGISTRY: dict = {}


def register(cite):
    """Add an entry builder ``fn(ctx) -> TheoremEntry`` to :data:`REGISTRY` under ``cite``."""
    def deco(fn):
        REGISTRY[cite] = fn
        return fn
    return deco


def entries(ctx) -> list:
    """Every registered theorem's entry for this context, in registry order."""
    return [build(ctx) for build in REGISTRY.values()]


# -------------------------------------------------------------------------- entry builders
def _vc(ctx):
    ds = ctx.decisions
    vc = getattr(ds, "vc_dimension", None)
    if vc is None and getattr(ds, "is_finite", False):
        vc = max(1, math.ceil(math.log2(len(ds))))
    return vc


def _lipschitz_one(ctx):
    """[A] §5's standing assumption: f and g 1-Lipschitz (ℓ2), as (ok, reason) pairs."""
    out = []
    for name in ("f", "g") if ctx.problem.g else ("f",):
        L = ctx.lipschitz(name)
        out.append((L is not None and L <= 1 + 1e-12,
                    f"{name} is not proven 1-Lipschitz in ℓ2 (L = {L if L is None else f'{L:.4g}'})"))
    return out


def _convex(ctx):
    return (ctx.analysis.is_convex, "f or g is not proven convex")


def _approx(ctx):
    return (ctx.privacy.delta > 0, "needs δ > 0 (advanced composition / (ε, δ) statement)")


@register("[A] Thm 5.2")
def _a52(ctx):
    vc, P = _vc(ctx), getattr(ctx.decisions, "P", None)
    convex_branch = ctx.convex_loss() and ctx.analysis.is_monotone
    size = P if convex_branch else vc
    reason = _why([_convex(ctx), (size is not None, "the decision set declares neither P (convex "
                                  "branch) nor a VC dimension")])
    e = TheoremEntry("[A] Thm 5.2", "exponential sampling, n₀ for f ≤ f* + α, g ≤ α", ORDER,
                     not reason, reason or ("convex ℓ, non-decreasing f, g: n₀ = O(K·P/(εα²))"
                                            if convex_branch else
                                            "general case: n₀ = Õ(K·VC/(εα²)) (P → VC)"),
                     quantity="n₀", home="privfair.analysis.formulas.a52_n0")
    if size is not None and ctx.privacy.is_private:
        v = {"K": ctx.K, "P": size}
        e.value = e.n_needed = _value(F.a52_n0, v, ctx.std)
        e.formula = _entry_formula(F.a52_n0, v, "n_0")
    return e


@register("[A] Cor 5.3")
def _a53(ctx):
    an = ctx.analysis
    reason = _why([(ctx.convex_decision_set(), "needs a convex decision set C_P (a finite set is "
                    "handled by backend 'exponential' with [A] Thm 3.6)"),
                   (ctx.convex_loss(), "needs ℓ convex in the decision (a surrogate)"),
                   (an.is_convex and an.is_monotone, "needs h convex and non-decreasing "
                    "(f, g convex, non-decreasing)"),
                   (an.sensitivity_h is not None, "Δh is not proven")])
    e = TheoremEntry("[A] Cor 5.3", "log-concave exponential sampling over convex C_P "
                     "(Bassily et al. 2014), excess of h w.p. ≥ 1 − β", EXPLICIT, not reason,
                     reason or "convex C_P, convex ℓ, convex non-decreasing h; Δ = Δh = D₁/n "
                     "(the compiler's bound), θ = log(1/β)",
                     quantity="excess of h", home="privfair.analysis.formulas.a53_bound",
                     correction="no privfair backend: an exact log-concave sampler is impractical "
                                "for P ≫ 3 ([A] §5.1 uses Bassily et al.'s sampler)")
    if not reason and ctx.privacy.is_private:
        v = {"D_1": an.sensitivity_h * ctx.n, "P": ctx.decisions.P}
        e.value = _value(F.a53_bound, v, ctx.std)
        e.n_needed = _value(F.a53_n0, v, ctx.std)
        e.formula = _entry_formula(F.a53_bound, v, "excess")
    return e


@register("[A] Thm 5.5")
def _a55(ctx):
    G = ctx.analysis.G
    reason = _why([_convex(ctx), *_lipschitz_one(ctx),
                   (math.isfinite(G), "G is not finite (no constraint or unknown constants)")])
    e = TheoremEntry("[A] Thm 5.5", "LOPT reduction without privacy (Kakade et al. 2009): "
                     "E h − h* ≤ 3K(1+G)((3+τ)√((1+K)/T) + τ) ≤ α", EXPLICIT, not reason,
                     reason or "f, g convex and 1-Lipschitz; exact LOPT with additive error τ",
                     quantity="T (oracle calls) for α", home="privfair.analysis.formulas.a55_T",
                     correction=ALPHA_POWER_NOTE)
    if math.isfinite(G):
        v = {"K": ctx.K, "G": G}
        e.value = _value(F.a55_T, v, ctx.std)
        e.T_needed = math.ceil(e.value)
        e.formula = _entry_formula(F.a55_T, v, "T_0")
    return e


@register("[A] Thm 5.9")
def _a59(ctx):
    G = ctx.analysis.G
    reason = _why([_approx(ctx), _convex(ctx), *_lipschitz_one(ctx),
                   (math.isfinite(G), "G is not finite")])
    e = TheoremEntry("[A] Thm 5.9", "LOPT reduction with a private oracle: Thm 5.5's T calls at "
                     "ε' each (Lemma 5.8)", ORDER, not reason,
                     (reason or "needs an oracle with Thm 5.5's guarantee at ε'; n depends on "
                      "the oracle (Thm 5.10, Cor 5.11)")
                     + "; the privacy proof needs the weights r_t released, not read from the "
                       "data (docs/traps.md #4; backend 'lopt' does so)",
                     quantity="ε' per oracle call", home="privfair.analysis.formulas.a58_epsilon",
                     correction=ALPHA_POWER_NOTE)
    if math.isfinite(G) and ctx.privacy.delta > 0 and ctx.privacy.is_private:
        T = math.ceil(F.a55_T(ctx.K, G, ctx.alpha))
        e.T_needed = T
        e.value = _value(F.a58_epsilon, {"T": T}, ctx.std)
        e.formula = _entry_formula(F.a58_epsilon, {"T": T}, "epsilon_prime")
    return e


@register("[A] Thm 5.10")
def _a510(ctx):
    G = ctx.analysis.G
    explicit = ctx.convex_loss() and ctx.analysis.is_monotone
    vc = _vc(ctx)
    reason = _why([(math.isfinite(G), "G is not finite"),
                   (explicit or vc is not None, "the decision set declares no VC dimension")])
    e = TheoremEntry("[A] Thm 5.10", "exponential-mechanism LOPT oracle: one call with additive "
                     "error τ‖w‖ w.p. ≥ 1 − θ (τ from Thm 5.5, θ = β, the whole ε)",
                     EXPLICIT if explicit else ORDER, not reason,
                     reason or ("convex ℓ, non-negative weights (f, g non-decreasing)" if explicit
                                else "general case: Õ(√K/(ετ)(VC + log 1/θ)) (constant 1)"),
                     quantity="n₀ for one oracle call",
                     home="privfair.analysis.formulas.a510_n0" if explicit else
                          "privfair.analysis.formulas.a510_order")
    if not reason and ctx.privacy.is_private:
        v = {"K": ctx.K, "tau": F.a55_tau(ctx.K, G, ctx.alpha), "theta": ctx.beta}
        fn = F.a510_n0 if explicit else F.a510_order
        v.update({"P": ctx.decisions.P} if explicit else {"VC": vc})
        e.value = e.n_needed = _value(fn, v, ctx.std)
        e.formula = _entry_formula(fn, v, "n_0")
    return e


@register("[A] Cor 5.11")
def _a511(ctx):
    G = ctx.analysis.G
    explicit = ctx.convex_loss() and ctx.analysis.is_monotone
    vc = _vc(ctx)
    reason = _why([_approx(ctx), _convex(ctx), *_lipschitz_one(ctx),
                   (math.isfinite(G), "G is not finite"),
                   (explicit or vc is not None, "the decision set declares no VC dimension")])
    e = TheoremEntry("[A] Cor 5.11", "LOPT with the exponential-mechanism oracle: n₀ for "
                     "f ≤ f* + α, g ≤ α w.p. ≥ 9/10", EXPLICIT if explicit else ORDER,
                     not reason, reason or (
                         "explicit composition: Thm 5.10's n₀ at ε' (Lemma 5.8), τ and T "
                         "(Thm 5.5), θ = 1/(10T)" if explicit else
                         "general case, order Õ(K⁴·VC/(εα⁴)) with constant 1"),
                     quantity="n₀", correction=ALPHA_POWER_NOTE,
                     home="privfair.analysis.formulas.a511_n0" if explicit else
                          "privfair.analysis.formulas.a511_order")
    if math.isfinite(G) and ctx.privacy.delta > 0 and ctx.privacy.is_private and (explicit or vc):
        if explicit:
            T = math.ceil(F.a55_T(ctx.K, G, ctx.alpha))
            v, fn = {"K": ctx.K, "P": ctx.decisions.P, "G": G, "T": T}, F.a511_n0
            e.T_needed = T
        else:
            v, fn = {"K": ctx.K, "VC": vc}, F.a511_order
        e.value = e.n_needed = _value(fn, v, ctx.std)
        e.formula = _entry_formula(fn, v, "n_0")
    return e


@register("[A] Cor B.5")
def _ab5(ctx):
    beta_h = ctx.analysis.smoothness.get("h_smooth", {}).get("l2")
    reason = _why([_convex(ctx), (beta_h is not None, "the smoothness of h_smooth is unknown")])
    e = TheoremEntry("[A] Cor B.5", "Frank–Wolfe with an exact LMO (no privacy): E h − h* ≤ "
                     "2Kβ_h·log T/T", EXPLICIT, not reason,
                     reason or "f, g convex and smooth; exact linear optimization oracle",
                     quantity="T for α", home="privfair.analysis.formulas.ab5_T",
                     correction="β_h of the softplus-smoothed penalty h_smooth in place of "
                                "β_f + G·β_g: max(0, g) is not smooth (docs/traps.md #6); "
                                "backend 'frank_wolfe' uses the tighter (★) of its docstring")
    if beta_h is not None and beta_h > 0:
        v = {"K": ctx.K, "beta_h": beta_h}
        e.value = _value(F.ab5_T, v, ctx.std)
        e.T_needed = math.ceil(e.value)
        e.formula = _entry_formula(F.ab5_T, v, "T_0")
    return e


def eo_values(ctx):
    """(|A|, VC, r, q) for the equalized-odds orders; r from the public group-mass bound."""
    rates = ctx.problem.rates
    q = rates.group_mass_bound
    q = float(np.min(q)) if q is not None and rates.group_mass_source == "public" else None
    r = max(0.0, 2 * math.log(q) / math.log(ctx.alpha) - 1) if q else 0.0
    return len(rates.groups), _vc(ctx), r, q


@register("[A] Cor 8.9")
def _a89(ctx):
    A, vc, _, _ = eo_values(ctx)
    L = getattr(ctx.problem.rates, "L", 2)
    reason = _why([(vc is not None, "the decision set declares no VC dimension"),
                   (L == 2, f"needs binary labels (got {L})")])
    e = TheoremEntry("[A] Cor 8.9", "equalized odds via LOPT (K = 3|A|), n₀ as printed", ORDER,
                     not reason, reason or "binary labels, finite VC; privfair does not check "
                     "that g is the smoothed equalized-odds constraint", quantity="n₀",
                     home="privfair.analysis.formulas.a89_n0",
                     correction="with Thm 5.5's explicit T the power of α is 4, not 3: "
                                "Õ(|A|⁴·VC/(εα⁴))")
    if vc is not None and ctx.privacy.is_private:
        v = {"A": A, "VC": vc}
        e.value = e.n_needed = _value(F.a89_n0, v, ctx.std)
        e.formula = _entry_formula(F.a89_n0, v, "n_0")
    return e


@register("[A] Cor C.2")
def _ac2(ctx):
    A, vc, r, q = eo_values(ctx)
    reason = _why([_approx(ctx), (vc is not None, "the decision set declares no VC dimension"),
                   (q is not None, "needs a public bound on min q_ay (r = 0 used)")])
    e = TheoremEntry("[A] Cor C.2", "[J] Thm 4.4 (DP-oracle-learner, B = |A|) solved for n with "
                     "min q_ay = α^{(1+r)/2}", ORDER, not reason,
                     reason or f"r = {r:.3g} from the declared q = {q:.3g}", quantity="n₀",
                     home="privfair.analysis.formulas.ac2_n0")
    if vc is not None and ctx.privacy.is_private:
        v = {"A": A, "VC": vc, "r": r}
        e.value = e.n_needed = _value(F.ac2_n0, v, ctx.std)
        e.formula = _entry_formula(F.ac2_n0, v, "n_0")
    return e


@register("[K] Thm 1")
def _k1(ctx):
    plan = ctx.plans.get("output_perturbation")
    v = plan.params.get("thm1_values") if plan is not None else None
    reason = _why([_approx(ctx), (plan is not None, "backend 'output_perturbation' refuses: "
                                  + str(ctx.refused.get("output_perturbation", "not planned"))),
                   (plan is None or v is not None, "the plan has no unconstrained ERM bound")])
    e = TheoremEntry("[K] Thm 1", "output perturbation with a sparsity norm at λ = L·R₂·√n/G",
                     ORDER, not reason, reason or "ζ = ω·L·‖u‖ for L·R₂; G = G_|P|(F)",
                     quantity="excess of J", home="privfair.analysis.formulas.k1_bound",
                     correction="the plan's own bound is [K] Lemma 1 with explicit constants "
                                "and an explicit ℓ2 term Λ (the trap of [K] Thm 1)")
    if not reason:
        e.value = _value(F.k1_bound, v, ctx.std)
        e.n_needed = _value(F.k1_n0, v, ctx.std)
        e.formula = _entry_formula(F.k1_bound, v, "excess")
    return e


@register("[K] Thm 4")
def _k4(ctx):
    plan = ctx.plans.get("dual_frank_wolfe")
    v = plan.params.get("thm4_values") if plan is not None else None
    reason = _why([_approx(ctx), (plan is not None, "backend 'dual_frank_wolfe' refuses: "
                                  + str(ctx.refused.get("dual_frank_wolfe", "not planned"))),
                   (plan is None or v is not None, "the plan has no unconstrained ERM bound")])
    e = TheoremEntry("[K] Thm 4", "private dual Frank–Wolfe at T = Γ^{4/3}(nε)^{2/3}/(L·G_K)^{2/3}, "
                     "all of ε on the selections", ORDER, not reason,
                     reason or "L = r₂, Γ = λ'·diam, G_K = λ'·G_|P|(F)", quantity="excess of the dual",
                     home="privfair.analysis.formulas.k4_bound")
    if not reason:
        v = {k: x for k, x in v.items() if k != "delta_K"}
        e.value = _value(F.k4_bound, v, ctx.std)
        e.formula = _entry_formula(F.k4_bound, v, "excess")
        e.n_needed = F.n_for_alpha(lambda m: _value(F.k4_bound, v, {**ctx.std, "n": m}),
                                   ctx.alpha, ctx.n)
    return e


@register("[L] Thm 3.4")
def _l34(ctx):
    plan = ctx.plans.get("sgda")
    rates = ctx.problem.rates
    q = rates.group_mass_bound
    reason = _why([_approx(ctx), (plan is not None, "backend 'sgda' refuses: "
                                  + str(ctx.refused.get("sgda", "not planned"))),
                   (q is not None, "needs ρ > 0: a declared lower bound on the group masses")])
    e = TheoremEntry("[L] Thm 3.4", "DP-SGDA on ERMI: stationarity E‖∇FERMI(θ̂_T)‖² (not an "
                     "excess risk)", ORDER, not reason,
                     reason or "smooth Lipschitz loss and F; W a large enough ball; D, λ, ρ, "
                               "Lipschitz and smoothness constants treated as constants",
                     quantity="E‖∇FERMI‖²", home="privfair.analysis.formulas.l34_bound")
    P = getattr(ctx.decisions, "P", None)
    if P is not None and ctx.privacy.delta > 0 and ctx.privacy.is_private:
        v = {"d_theta": P, "k": len(rates.groups), "l": rates.L}
        e.value = _value(F.l34_bound, v, ctx.std)
        e.n_needed = _value(F.l34_n0, v, ctx.std)
        e.formula = _entry_formula(F.l34_bound, v, "grad_sq")
    return e


def _tied(cite, backend, what):
    """An entry for a theorem whose bound *is* a backend's plan (its formula: the backend's)."""
    def build(ctx):
        plan = ctx.plans.get(backend)
        reason = "" if plan is not None else f"backend {backend!r} refuses: " + str(
            ctx.refused.get(backend, "not planned"))
        e = TheoremEntry(cite, what, "see the backend", plan is not None,
                         reason or f"the bound of backend {backend!r} (upper-bounds table)",
                         quantity="excess of h", home=f"backends.{backend}", backend=backend)
        if plan is not None:
            e.value = float(plan.predicted_excess_risk)
        return e
    register(cite)(build)


_tied("[A] Thm 3.6", "exponential", "exponential mechanism over a finite C (McSherry–Talwar)")
_tied("[J] Thm 3.1", "postprocessing", "DP post-processing (Laplace counts + Hardt et al.'s LP)")
_tied("[J] Thm 4.4", "oracle_learner", "DP-oracle-learner (private Lagrangian game)")

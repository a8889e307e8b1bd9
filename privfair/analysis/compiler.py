# Over 500 lines: one Analysis with its proofs; each derived constant cites the lines it needs
#   above it.
"""The compiler: what a private solver needs to know about a problem, proven.

``analyze(problem, DP(...), alpha)`` returns an :class:`Analysis`: curvature and monotonicity of
f and each g, Lipschitz and smoothness constants of f, g and the penalty function
h = f + G·max(0, g) (and of its smooth variant), the bound on ‖Δℓ‖ under the chosen neighbouring
relation (from the row-influence structure of :mod:`privfair.statistics.stats`), the sensitivity of h, the
penalty weight G and the iteration counts [A]'s theorems prescribe for a target α, and — for each
property a backend may need and cannot get — the reason, naming the atom.

Two choices documented here because they change numbers:

* **G from the range of f** ([A] Lemma 4.1/Cor 4.2).  An α-minimizer of h has
  g ≤ (α + sup f − inf f)/G; [A] bounds sup f − inf f by L_f·√K, we use the interval range of f
  over the box, which is never larger and usually much smaller.  G = (α + range f)/α.
* **Smooth surrogates** ([A] App. B; docs/traps.md #6).  max(0, g) and |·| are not smooth.  For backends
  that need β the compiler works with (i) the softplus penalty G·s·log(1 + e^{g/s}) with
  s = α/(2 G log 2), which is within α/2 of G·max(0, g); and (ii) the rewrite
  lse(…, |u|, …) → lse(…, u, −u, …), a smooth *upper* bound of the original within log(2)/η, so a
  constraint satisfied by the rewrite is satisfied by the original.  Every rewrite is listed in
  ``Analysis.rewrites``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import formulas
from ..util.text import group_culprits, wrap
from ..errors import InvalidInputError, InvalidPrivacyError
from ..privacy.spec import DP

NORMS = ("l1", "l2", "linf")
#: an iteration count the theorems prescribe beyond which the Analysis calls it impractical
IMPRACTICAL_T = 1e8
#: the norm of a gradient paired with an input measured in a norm (Hölder)
DUAL = {"l1": "linf", "l2": "l2", "linf": "l1"}


def _min_known(values):
    known = [v for v in values if v is not None and math.isfinite(v)]
    return min(known) if known else None


def _convexity_fix(problem, name, e) -> str:
    """What to do about a non-convex f or g[j], said for the case at hand.

    A maximized convex expression is the common slip (cvxpy users write ``Maximize`` of a loss):
    its fix is ``Minimize``, not an atom swap.  The smax → lse hint only where an smax is there.
    """
    from ..expr.smooth_max import Smax

    alt = "use backend='exponential', which needs no convexity"
    obj = getattr(problem, "objective", None)
    if (name == "f" and getattr(obj, "sense", None) == "maximize"
            and obj.target.curvature in ("convex", "affine")):
        return ("maximizing a convex function is not a convex problem; did you mean "
                f"pf.Minimize({obj.target})? (or {alt})")
    stack, has_smax = [e], False
    while stack and not has_smax:
        node = stack.pop()
        has_smax = isinstance(node, Smax)
        stack.extend(getattr(node, "args", ()))
    return ("replace smax by pf.lse (convex) or " + alt) if has_smax else alt


def _sum_known(*values):
    return None if any(v is None for v in values) else float(sum(values))


# --------------------------------------------------------------------------------- rewrites
def smooth_surrogate(expr, notes: list):
    """Return a smooth upper bound of ``expr`` by rewriting ``|u|`` inside log-sum-exp.

    lse(…, |u|, …) ≤ lse(…, u, −u, …) ≤ lse(…, |u|, …) + log(2)/η, since e^{η|u|} ≤ e^{ηu} + e^{−ηu}
    ≤ 2e^{η|u|}.  The right-hand side is smooth where the left is not.
    """
    from .. import expr as ex

    def walk(e):
        if isinstance(e, ex.Lse):
            args, changed = [], False
            for a in e.args:
                if isinstance(a, ex.Abs):
                    inner = walk(a.args[0])
                    args += [inner, -inner]
                    changed = True
                else:
                    args.append(walk(a))
            if changed:
                notes.append(f"{e} → lse with ±u in place of |u| (upper bound, within log(2)/η = "
                             f"{math.log(2) / e.eta:.3g})")
                return ex.lse(*args, eta=e.eta)
            return e
        if getattr(e, "args", ()) and hasattr(e, "with_args"):
            new = [walk(a) for a in e.args]
            if any(n is not a for n, a in zip(new, e.args)):
                return e.with_args(new)
        return e

    return walk(expr)


# --------------------------------------------------------------------------------- analysis
@dataclass
class Analysis:
    """What the compiler proved about a problem under a privacy requirement.

    Attributes
    ----------
    privacy : DP
        The requirement analysed (its ``protect`` names the neighbouring relation).
    alpha : float
        The target accuracy used for G and the iteration counts.
    n, K : int
        Rows of the data and length of ℓ; ``support`` lists the coordinates f and g read.
    curvature, monotonicity : dict
        For "f" and "g[j]": a curvature string, and "non-decreasing" / "non-increasing" /
        "mixed" / "unknown" over the support.
    lipschitz, smoothness : dict
        ``lipschitz[name][norm]`` for name in "f", "g", "h", "h_smooth"; ``smoothness`` for
        "f", "g" (of their smooth surrogates), "h_smooth"; the norm measures ℓ; None = unknown.
    G, smoothing : float
        Penalty weight of h and softplus temperature of h_smooth.
    sensitivity_h, sensitivity_norm : float or None, str
        Bound on |h(ℓ(c,D)) − h(ℓ(c,D'))| over all decisions and neighbours, and the norm of
        Δℓ that gave the smallest bound.
    iterations : dict
        [A]'s prescriptions: "lopt_T", "lopt_tau" (Thm 5.5), "frank_wolfe_T" (Cor B.5).
    reasons : dict
        For each property that is unknown or unmet: why, naming the atom.
    rewrites : list of str
        Smooth surrogates the compiler substituted (see module docstring).
    f_smooth, g_smooth : Expression, list of Expression
        The smooth surrogates themselves (equal to f and g when nothing was rewritten); the
        ``smoothness`` constants are theirs.  Use :meth:`h_smooth_grad` for ∇h_smooth.
    """

    privacy: DP
    alpha: float
    n: int | None
    K: int
    support: tuple
    curvature: dict
    monotonicity: dict
    lipschitz: dict
    smoothness: dict
    G: float
    smoothing: float
    group_mass: dict
    iterations: dict = field(default_factory=dict)
    reasons: dict = field(default_factory=dict)
    rewrites: list = field(default_factory=list)
    f_smooth: object = field(default=None, repr=False)
    g_smooth: list = field(default_factory=list, repr=False)
    _delta: dict = field(default_factory=dict, repr=False)
    _problem: object = field(default=None, repr=False)

    # -- the proven quantities ------------------------------------------------------------
    def delta_l(self, norm: str = "l1"):
        """Proven bound on ‖ℓ_S(c, D) − ℓ_S(c, D')‖_norm over all decisions and neighbours.

        S is ``support`` (the coordinates f and g read; the others influence nothing). None
        when the bound is unknown (see ``reasons["delta_l"]``).
        """
        _check_norm(norm)
        return self._delta.get(norm)

    @property
    def sensitivity_h(self):
        """min over norms of L_h(norm)·Δℓ(norm): the sensitivity of the penalty function h."""
        return self._best_product("h")[0]

    @property
    def sensitivity_norm(self):
        return self._best_product("h")[1]

    def sensitivity(self, name: str = "h"):
        """Sensitivity of "f", "g", "h" or "h_smooth" (value), from L·Δℓ in the best norm."""
        return self._best_product(name)[0]

    def gradient_sensitivity(self, name: str = "h_smooth", norm: str = "l1"):
        """Bound on ‖∇name(ℓ(c,D)) − ∇name(ℓ(c,D'))‖ in the dual of ``norm`` (β·Δℓ)."""
        beta, d = self.smoothness.get(name, {}).get(norm), self.delta_l(norm)
        return None if beta is None or d is None else beta * d

    def _best_product(self, name):
        best = (None, None)
        for norm in NORMS:
            L, d = self.lipschitz.get(name, {}).get(norm), self._delta.get(norm)
            if L is not None and d is not None and (best[0] is None or L * d < best[0]):
                best = (L * d, norm)
        return best

    # -- questions backends ask -----------------------------------------------------------
    @property
    def is_convex(self) -> bool:
        """True when f and every g are proven convex (affine and constant count)."""
        return all(c in ("constant", "affine", "convex") for c in self.curvature.values())

    @property
    def is_monotone(self) -> bool:
        """True when f and every g are proven non-decreasing in every coordinate of ℓ."""
        return all(m in ("non-decreasing", "constant") for m in self.monotonicity.values())

    def h_value(self, l):
        """h(ℓ) = f(ℓ) + G·max(0, max_j g_j(ℓ)) — for one ℓ (K,) or a batch (N, K)."""
        p = self._problem
        h = np.asarray(p.f.value(l), dtype=float)
        if p.g:
            gmax = np.max(np.stack([np.asarray(g.value(l), dtype=float) for g in p.g]), axis=0)
            h = h + self.G * np.maximum(0.0, gmax)
        return h

    def h_smooth_value(self, l):
        """h_smooth(ℓ) = f̃(ℓ) + G·s·log(1 + e^{g̃(ℓ)/s}) (single constraint; f̃, g̃ surrogates)."""
        h = np.asarray(self.f_smooth.value(l), dtype=float)
        for g in self.g_smooth:
            z = np.asarray(g.value(l), dtype=float) / self.smoothing
            h = h + self.G * self.smoothing * np.logaddexp(0.0, z)
        return h

    def h_smooth_grad(self, l):
        """∇h_smooth(ℓ) (length K): the gradient Frank–Wolfe and LOPT weight the statistics by.

        Its Lipschitz constant is ``smoothness["h_smooth"]`` (one constraint; with several the
        softplus terms add up and the constant is not proven — see ``reasons``).
        """
        from scipy.special import expit

        grad = np.asarray(self.f_smooth.grad(l), dtype=float)
        for g in self.g_smooth:
            sig = expit(float(g.value(l)) / self.smoothing)
            grad = grad + self.G * sig * np.asarray(g.grad(l), dtype=float)
        return grad

    def sensitivity_unproven(self) -> str | None:
        """Why the sensitivity of h cannot be bounded, or None when it can.

        Needs the Lipschitz constants of f and g in some norm and, for a private run, Δℓ —
        which may still be pending a private group-mass estimate at solve time (that is fine:
        the planner resolves it before any backend runs).  The precondition every
        score-releasing backend shares; asked here so that each states it the same way.
        """
        for name in ("f", "g"):
            L = self.lipschitz.get(name)
            if L is not None and all(v is None for v in L.values()):
                return (f"the Lipschitz constant of {name} is unknown: "
                        f"{self.reason(f'lipschitz of {name}')}")
        pending = self.group_mass.get("source") == "private" and self.group_mass.get("bound") is None
        if self.privacy.is_private and self.delta_l("l1") is None and not pending:
            return f"Δℓ is unknown: {self.reason('delta_l')}"
        return None

    def reason(self, prop: str) -> str | None:
        return self.reasons.get(prop)

    def with_group_mass(self, bound):
        """The same analysis once a group-mass lower bound is known (e.g. privately estimated)."""
        if self._problem is None:
            raise InvalidInputError("analysis", self, "re-run problem.analyze(...)")
        return analyze(self._problem, self.privacy, alpha=self.alpha, group_mass_bound=bound)

    # -- rendering ------------------------------------------------------------------------
    def rows(self):
        """The analysis as (property, value) rows — what ``str()``, the markdown and the HTML report
        print."""
        fmt = lambda v: "unknown" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))
        rows = [("privacy", f"ε={self.privacy.epsilon:g}, δ={self.privacy.delta:g}, "
                            f"protect={self.privacy.protect!r}"),
                ("n, K, |support|", f"{self.n}, {self.K}, {len(self.support)}")]
        rows += self._shape_rows()
        for name in ("f", "g", "h", "h_smooth"):
            if name in self.lipschitz:
                rows.append((f"Lipschitz {name} (l1/l2/linf)",
                             " / ".join(fmt(self.lipschitz[name].get(n)) for n in NORMS)))
        for name in ("f", "g", "h_smooth"):
            if name in self.smoothness:
                rows.append((f"smoothness {name} (l1/l2/linf)",
                             " / ".join(fmt(self.smoothness[name].get(n)) for n in NORMS)))
        rows.append(("Δℓ (l1/l2/linf)", " / ".join(fmt(self._delta.get(n)) for n in NORMS)))
        rows.append(("group mass", f"{self.group_mass['source']}"
                     + (f", q_min={self.group_mass['bound']:g}" if self.group_mass.get("bound") else "")))
        rows.append(("G, smoothing s", f"{self.G:.4g}, {self.smoothing:.3g}"))
        rows.append(("sensitivity of h", f"{fmt(self.sensitivity_h)}"
                     + (f" (via {self.sensitivity_norm})" if self.sensitivity_norm else "")))
        for k, v in self.iterations.items():
            cite = "[A] Cor B.5" if k.startswith("frank_wolfe") else "[A] Thm 5.5"
            text = fmt(v)
            if k.endswith("_T") and v is not None and v > IMPRACTICAL_T:
                text = (f"{v:.3g} — impractical (over 10⁸ iterations): the theorem's "
                        "prescription for α, not what a backend runs (each plans its own T)")
            rows.append((f"{k} ({cite})", text))
        return rows

    def _monotonicity_text(self, name):
        """What ``monotonicity[name]`` means, and for "unknown" which atoms make it so."""
        m = self.monotonicity[name]
        if m in ("non-decreasing", "non-increasing"):
            return f"{m} in every coordinate of ℓ it reads"
        if m == "mixed":
            return "mixed: non-decreasing in some coordinates of ℓ, non-increasing in others"
        if m != "unknown":
            return m
        text = "unknown: not provably monotone in every coordinate of ℓ it reads"
        p = self._problem
        if p is None:
            return text
        e = p.f if name == "f" else p.g[int(name[2:-1])]
        counts = {}
        for _, why in e.unknown_culprits("monotonicity"):
            counts[why] = counts.get(why, 0) + 1
        if counts:
            text += " — " + "; ".join(why + (f" ({k} terms)" if k > 1 else "")
                                      for why, k in counts.items())
        return text

    def _shape_rows(self):
        """"curvature X" and "monotonicity X" rows; consecutive constraints g[j] with the same
        curvature and monotonicity share a row ("g[0] … g[29]")."""
        rows, run = [], []

        def flush():
            if run:
                label = run[0][0] if len(run) == 1 else f"{run[0][0]} … {run[-1][0]}"
                rows.append((f"curvature {label}", run[0][1]))
                rows.append((f"monotonicity {label}", run[0][2]))
                run.clear()

        for name, c in self.curvature.items():
            entry = (name, c, self._monotonicity_text(name))
            if name == "f" or not run or run[-1][1:] != entry[1:]:
                flush()
            run.append(entry)
        flush()
        return rows

    def __str__(self):
        rows = self.rows()
        w = max(len(k) for k, _ in rows)
        out = ["Analysis", "-" * 8] + [x for k, v in rows
                                       for x in wrap(f"{k:<{w}}  {v}", continuation=" " * (w + 2))]
        if self.rewrites:
            out += ["", "rewrites:"] + [x for r in self.rewrites for x in wrap(f"  - {r}", "  ")]
        if self.reasons:
            out += ["", "unproven / unmet:"] + [x for k, v in self.reasons.items()
                                                for x in wrap(f"  - {k}: {v}", "  ")]
        return "\n".join(out)

    def to_markdown(self) -> str:
        lines = ["| property | value |", "| --- | --- |"]
        lines += [f"| {k} | {v} |" for k, v in self.rows()]
        if self.rewrites:
            lines += ["", "**Rewrites**", ""] + [f"- {r}" for r in self.rewrites]
        if self.reasons:
            lines += ["", "**Unproven or unmet**", ""] + [f"- *{k}*: {v}" for k, v in self.reasons.items()]
        return "\n".join(lines)

    def _repr_markdown_(self):
        return self.to_markdown()


def _check_norm(norm):
    if norm not in NORMS:
        raise InvalidInputError("norm", norm, f"choose one of {list(NORMS)}")


def _monotonicity_summary(expr, support):
    if expr.curvature == "constant":
        return "constant"
    mono = expr.monotonicity()
    vals = [mono[k] for k in support]
    if any(v is None for v in vals):
        return "unknown"
    if all(v >= 0 for v in vals):
        return "non-decreasing"
    if all(v <= 0 for v in vals):
        return "non-increasing"
    return "mixed"


def _constants(expr, what):
    return {n: getattr(expr, what)(n) for n in NORMS}


def analyze(problem, privacy, alpha: float = 0.05, group_mass_bound=None) -> Analysis:
    """Compile ``problem`` under ``privacy``; see :class:`Analysis`.

    Parameters
    ----------
    problem : privfair.Problem
    privacy : privfair.DP
    alpha : float, default 0.05
        Target accuracy in (0, 1): sets G and the theorems' iteration counts.
    group_mass_bound : float, optional
        A group-mass lower bound to use for conditional rates (overrides the one declared in
        ``pf.rates``); used after a private estimate.
    """
    if not isinstance(privacy, DP):
        raise InvalidPrivacyError("privacy", privacy, "pass pf.DP(epsilon, delta, protect=...)")
    try:
        alpha = float(alpha)
    except (TypeError, ValueError):
        alpha = float("nan")
    if not (0 < alpha < 1):
        raise InvalidInputError("alpha", alpha, "the target accuracy must lie in (0, 1), e.g. 0.05")

    from .. import expr as ex

    f, gs = problem.f, problem.g
    K = problem.variable.size
    support = sorted(set().union(f.support(), *[g.support() for g in gs]))
    reasons, rewrites = {}, []

    curvature = {"f": f.curvature}
    monotonicity = {"f": _monotonicity_summary(f, support)}
    for j, g in enumerate(gs):
        curvature[f"g[{j}]"] = g.curvature
        monotonicity[f"g[{j}]"] = _monotonicity_summary(g, support)
    for name, c in curvature.items():
        if c not in ("constant", "affine", "convex"):
            e = f if name == "f" else gs[int(name[2:-1])]
            culprits = group_culprits(e.unknown_culprits("curvature")) or str(e)
            reasons[f"convexity of {name}"] = (
                f"{name} is {c}, not provably convex, because of {culprits}; "
                + _convexity_fix(problem, name, e))

    # Smooth surrogates for β (never for values or Lipschitz constants, which use the original).
    f_s = smooth_surrogate(f, rewrites)
    g_s = [smooth_surrogate(g, rewrites) for g in gs]
    g_max = gs[0] if len(gs) == 1 else (ex.maximum(*gs) if gs else None)
    g_smooth_max = g_s[0] if len(g_s) == 1 else None  # max of several g is not smooth

    lipschitz = {"f": _constants(f, "lipschitz")}
    smoothness = {"f": _constants(f_s, "smoothness")}
    if g_max is not None:
        lipschitz["g"] = _constants(g_max, "lipschitz")
        smoothness["g"] = (_constants(g_smooth_max, "smoothness") if g_smooth_max is not None
                           else {n: None for n in NORMS})
        if g_smooth_max is None:
            reasons["smoothness of g"] = ("several constraints combine by a max, which is not smooth; "
                                          "combine them with pf.lse(..., eta=...) into one constraint")
    for name, e, what in (("f", f_s, "smoothness"), ("g", g_smooth_max, "smoothness"),
                          ("f", f, "lipschitz"), ("g", g_max, "lipschitz")):
        table = smoothness if what == "smoothness" else lipschitz
        if e is not None and any(v is None for v in table.get(name, {}).values()):
            culprits = group_culprits(e.unknown_culprits(what))
            reasons.setdefault(f"{what} of {name}", f"unknown because of {culprits or e}")

    # Penalty weight from the range of f ([A] Cor 4.2 with range f in place of L_f·√K).
    lo, hi = f.range()
    range_f = hi - lo if math.isfinite(hi - lo) else None
    if range_f is None:
        L2 = lipschitz["f"]["l2"]
        range_f = L2 * math.sqrt(len(support)) if L2 is not None else None
    G = (alpha + range_f) / alpha if (gs and range_f is not None) else (0.0 if not gs else float("nan"))
    s = alpha / (2 * G * math.log(2)) if gs and G > 0 and math.isfinite(G) else 0.0

    if gs:
        lipschitz["h"] = {n: _sum_known(lipschitz["f"][n], None if lipschitz["g"][n] is None
                                        else G * lipschitz["g"][n]) for n in NORMS}
        lipschitz["h_smooth"] = dict(lipschitz["h"])  # softplus' ∈ [0, G], same bound
        smoothness["h_smooth"] = {}
        for n in NORMS:
            bf, bg, Lg = smoothness["f"][n], smoothness["g"][n], lipschitz["g"][n]
            smoothness["h_smooth"][n] = (None if None in (bf, bg, Lg)
                                         else bf + G * (bg + Lg * Lg / (4 * s)))
    else:
        lipschitz["h"] = dict(lipschitz["f"])
        lipschitz["h_smooth"] = dict(lipschitz["f"])
        smoothness["h_smooth"] = dict(smoothness["f"])

    # Row influence → Δℓ on the support.
    rates = problem.rates
    n = getattr(getattr(rates, "data", None), "n", None)
    delta, group_mass = {}, {"source": "none needed", "bound": None}
    if rates is None:
        reasons["delta_l"] = ("ℓ was not built by pf.rates(...), so no row-influence structure "
                              "is known; build the problem from r = pf.rates(decisions, data)")
    else:
        uses_rates = rates.uses_conditional(support)
        q = group_mass_bound if group_mass_bound is not None else rates.group_mass_bound
        if uses_rates:
            group_mass = {"source": "given" if group_mass_bound is not None else rates.group_mass_source,
                          "bound": q}
        if uses_rates and q is None:
            reasons["delta_l"] = ("conditional rates are used and their group-mass lower bound will be "
                                  "estimated privately at solve time (a small share of the budget); "
                                  "declare a public bound with pf.rates(..., group_mass_bound=q) to see "
                                  "numbers now")
        else:
            for norm in NORMS:
                delta[norm] = float(rates.delta_l(norm, privacy.protect, support=support,
                                                  group_mass_bound=q))

    # [A]'s prescriptions for the target α (K = size of the support: h reads nothing else).
    Ks = max(len(support), 1)
    iterations = {}
    # both prescriptions are convergence results for a convex h (Thm 5.5 via Kakade et al.'s
    # online-learning argument, Cor B.5 via Frank–Wolfe's): no count is printed for a problem
    # they do not cover
    convex = all(c in ("constant", "affine", "convex") for c in curvature.values())
    if not convex:
        reasons["iterations"] = ("[A] Thm 5.5 and Cor B.5 prescribe iteration counts for convex "
                                 "f and g only; this problem is not convex")
    if convex and gs and math.isfinite(G):
        iterations["lopt_tau"] = formulas.a55_tau(Ks, G, alpha)
        iterations["lopt_T"] = math.ceil(formulas.a55_T(Ks, G, alpha))
    bh = smoothness["h_smooth"].get("l2") if convex else None
    if bh is not None and bh > 0:
        c = 2 * Ks * bh / alpha
        # below c = e the formula's log < 1; one more step costs nothing and keeps T ≥ c
        iterations["frank_wolfe_T"] = math.ceil(max(float(formulas.ab5_T(Ks, bh, alpha)), c))
    elif bh == 0:
        iterations["frank_wolfe_T"] = 1

    return Analysis(privacy=privacy, alpha=alpha, n=n, K=K, support=tuple(support),
                    curvature=curvature, monotonicity=monotonicity, lipschitz=lipschitz,
                    smoothness=smoothness, G=G, smoothing=s, group_mass=group_mass,
                    iterations=iterations, reasons=reasons, rewrites=rewrites,
                    f_smooth=f_s, g_smooth=g_s, _delta=delta, _problem=problem)

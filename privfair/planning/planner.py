"""The planner: which backend, with which hyper-parameters, and why.

Every registered backend answers ``accepts(problem, analysis)`` (with a reason when not) and,
when it accepts, plans its hyper-parameters from n, ε, δ and α and predicts its excess risk from
its theorem.  ``backend="auto"`` sorts the plans by (``plan.rank``, predicted risk, the backend's
declared priority in :data:`privfair.backends.REGISTRY`) and picks the first; ``Plans.explain()``
shows the ranking.  Nothing here touches private data: conditional rates whose group-mass bound is to be
estimated privately are ranked with a *planning* bound that depends on the schema only, and the
estimate itself is made by :func:`solve` inside the budget reservation.

:func:`solve` first draws a public random partition of the rows (:mod:`privfair.planning.holdout`):
the backend plans and runs on the training part with the whole budget, and the held-out part
checks the released rule (its error against the best constant rule's, each constraint's upper
confidence bound) — by parallel composition within the same (ε, δ) — and sets
``Result.status`` (docs/trust.md).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace

from ..util.progress import check_progress, default_progress
from ..errors import (BackendRefusedError, InvalidInputError, InvalidPrivacyError,
                     PrivateFailureError, PrivfairError)
from ..privacy.spec import DP

#: share of ε spent on the private group-mass estimate when the user declared no public bound
GROUP_MASS_SHARE = 0.1


@dataclass
class Plans:
    """The planner's answer: every backend's verdict, the ranking and the choice."""

    chosen: object            # backends.base.Plan, or None
    ranked: list              # accepted plans, best first
    refused: dict             # name -> reason
    analysis: object
    group_mass_share: float
    #: backends a solve did not plan because a plan that always ranks first was made
    #: (``plan(..., first_only=True)``; ``prob.plan`` plans every backend)
    skipped: tuple = ()
    #: the problem planned for (the held-out check's forecast in :meth:`explain` reads its n,
    #: levels and constants — public)
    problem: object = None

    def resolution(self, holdout=None) -> list:
        """What the held-out check can resolve, per constraint
        (:func:`privfair.planning.holdout.resolution`): public quantities only.  ``holdout``:
        the fraction a solve will hold out (default: the solve's default)."""
        from .holdout import HoldoutOptions, resolution

        if self.problem is None:
            return []
        # the solve's own check of the fraction (a typed error naming ``holdout``)
        options = HoldoutOptions.from_options({} if holdout is None else {"holdout": holdout})
        return resolution(self.problem, self.problem.rates.data.n,
                          self.analysis.privacy.is_private, options)

    def explain(self, refused: bool = True, holdout=None) -> str:
        """The ranking, then the refusals — backends refused for the same reason on one line —
        then what the held-out check can resolve (:meth:`resolution`; ``holdout``: the fraction
        the solve will hold out, default the solve's default).

        Every line is wrapped to ``privfair.util.text.WIDTH`` characters.  ``refused=False`` leaves
        the refusals out (for a page that lists them elsewhere, e.g. ``privfair report``)."""
        from ..util.text import group_names, wrap

        out = []
        if self.group_mass_share:
            out += wrap(f"group-mass bound: estimated privately with {self.group_mass_share:.0%} of "
                        "ε before the backend runs (Laplace on group-label counts)", "    ")
        out.append("accepted (best first):" if self.ranked else "no backend accepts this problem")
        for i, p in enumerate(self.ranked):
            mark = "→" if p is self.chosen else " "
            first, *rest = p.explain_lines()
            out += wrap(f" {mark} {i + 1}. {first}", continuation=" " * 10)
            for line in rest:
                out += wrap("      " + line, "    ")
        if self.refused and refused:
            out.append("refused:")
            for names, why in group_names(self.refused.items()):
                out += wrap(f"   - {names}: {why}", "    ")
        if self.skipped:
            out += wrap(f"not planned (a backend that always ranks first accepted): "
                        f"{', '.join(self.skipped)}", "    ")
        forecast = self.resolution(holdout)
        if forecast:
            from .holdout import CONFIDENCE, HOLDOUT, TOLERANCE

            frac = HOLDOUT if holdout is None else float(holdout)
            which = "the default" if holdout is None else f"holdout={frac:g}"
            out += wrap(f"held-out check ({which}: {forecast[0].held_out:,} rows held out "
                        f"({frac:.0%}), "
                        f"{CONFIDENCE:.0%} confidence, tolerance {TOLERANCE:g}; "
                        "docs/trust.md):", "    ")
            for r in forecast:
                out += wrap("   - " + r.line(), "    ")
            # this ranking planned on every row; a solve plans on its training part, so its
            # steps, noise and predicted risks are those of n − m rows (public: n, the share)
            n = self.problem.rates.data.n
            out += wrap(f"(the ranking above is planned on all {n:,} rows; a solve plans and "
                        f"trains on the {n - forecast[0].held_out:,} rows outside the held-out "
                        "part: its steps, noise scale and predicted risks are theirs — "
                        "result.plan)", "    ")
        return "\n".join(out)

    def __str__(self):
        return self.explain()


def _split_for_group_mass(analysis, privacy, backend):
    """The share of ε the group-mass estimate takes, for backends whose sensitivities need it."""
    needs = getattr(backend, "needs_group_mass", True)
    if needs and analysis.group_mass.get("source") == "private" and analysis.group_mass.get("bound") is None:
        if not privacy.is_private:
            return 0.0, privacy
        share = GROUP_MASS_SHARE
        return share, DP(privacy.epsilon * (1 - share), privacy.delta, privacy.protect)
    return 0.0, privacy


def _planning_analysis(problem, analysis):
    """For ranking only: a schema-based group-mass guess (1 / (2·#groups·#labels)), never data."""
    if analysis.group_mass.get("source") == "private" and analysis.group_mass.get("bound") is None:
        data = problem.rates.data
        guess = 1.0 / (2 * len(data.groups) * data.n_labels)
        return analysis.with_group_mass(guess)
    return analysis


def check_options(backend: str, options: dict) -> None:
    """Refuse a solve option that ``backend`` does not take (typed, before anything is spent).

    A named backend must declare the option in its ``option_names`` (no check where it declares
    none).  ``backend="auto"`` may choose any backend, so only a name that no backend takes is
    refused — and none is while some backend has not declared its options."""
    from privfair.backends import BACKENDS, get
    from privfair.backends.base import unknown_option

    if not options:
        return
    if backend != "auto":
        b = get(backend)
        known = getattr(b, "option_names", None)
        if known is None:
            return
        for name, value in options.items():
            if name not in known:
                raise unknown_option(name, value, b.name, known)
        return
    declared = {n: getattr(b, "option_names", None) for n, b in BACKENDS.items()}
    if any(v is None for v in declared.values()):
        return
    known = set().union(*map(set, declared.values()))
    for name, value in options.items():
        if name not in known:
            import difflib

            fix = ("unknown option: no backend takes it (backend='auto' may choose any backend, "
                   "so any option some backend takes is accepted; name a backend to see its "
                   "options)")
            close = difflib.get_close_matches(str(name), sorted(known), n=3)
            if close:
                fix += " — did you mean " + " or ".join(
                    f"{c!r} (taken by {', '.join(n for n, v in declared.items() if c in v)})"
                    for c in close) + "?"
            raise InvalidInputError(str(name), value, fix)


def _options_for(b, options: dict) -> dict:
    """The options ``b`` takes (all of them where it declares none): under backend="auto" each
    backend sees only its own, the others are noted on its plan as not used."""
    known = getattr(b, "option_names", None)
    if known is None:
        return dict(options)
    return {k: v for k, v in options.items() if k in known}


def _note_unused(p, b, options: dict):
    unused = sorted(k for k in options if k not in _options_for(b, options))
    if unused:
        p.notes.append(f"option(s) not taken by {b.name}, not used: {', '.join(unused)}")
    return p


#: arithmetic that leaves the float range while a backend plans (a huge or tiny ε): that backend
#: cannot plan at these parameters — a refusal, not a crash of every backend's planning
NUMERICAL_ERRORS = (OverflowError, ZeroDivisionError, FloatingPointError)


def _plan_one(b, problem, analysis, privacy, options):
    """``b.plan(...)``, a numerical-range failure turned into ``b``'s refusal (typed; nothing
    has been drawn at plan time).  Other exceptions propagate."""
    try:
        return b.plan(problem, analysis, privacy, options)
    except NUMERICAL_ERRORS as err:
        raise BackendRefusedError(
            "backend", b.name,
            f"numerical range: {type(err).__name__} ({err}) while planning at "
            f"ε={privacy.epsilon:g}, δ={privacy.delta:g}") from err


def plan(problem, privacy, backend: str = "auto", alpha: float = 0.05, *,
         first_only: bool = False, **options) -> Plans:
    """Rank the backends that accept ``problem`` under ``privacy``; see :class:`Plans`.

    An option the named backend does not take (with ``"auto"``: that no backend takes) raises
    :class:`~privfair.errors.InvalidInputError` here, before :func:`solve` reserves any budget.

    ``first_only`` (what :func:`solve` asks): the backends whose every plan ranks first
    (``Backend.always_ranks_first``) are planned before the others, and once one of them has
    planned the others are not — they could not be chosen, and planning one can cost a noise
    calibration of about a second (#19: ~6 numpy passes of a 10⁶-row fit).  They are listed in
    ``Plans.skipped``.  ``prob.plan(...)`` plans every backend (its ``explain()`` ranks them all)."""
    from privfair.backends import BACKENDS, get, priority

    if not isinstance(privacy, DP):
        raise InvalidPrivacyError("privacy", privacy, "pass pf.DP(epsilon, delta, protect=...)")
    check_options(backend, options)
    check_public_scores(problem, privacy)
    analysis = problem.analyze(privacy, alpha=alpha)
    ranking_analysis = _planning_analysis(problem, analysis)
    names = list(BACKENDS) if backend == "auto" else [get(backend).name]
    first = [nm for nm in names if getattr(BACKENDS[nm], "always_ranks_first", False)]
    if first_only and backend == "auto":
        names = first + [nm for nm in names if nm not in first]
    ranked, refused, skipped = [], {}, []
    for name in names:
        b = BACKENDS[name]
        if first_only and name not in first and any(p.backend in first for p in ranked):
            skipped.append(name)
            continue
        if b.non_private_only and privacy.is_private and backend == "auto":
            refused[name] = "reference solver for ε = ∞ only"
            continue
        verdict = b.accepts(problem, analysis)
        if not verdict:
            refused[name] = verdict.reason
            continue
        share, budget = _split_for_group_mass(analysis, privacy, b)
        try:
            p = _plan_one(b, problem, ranking_analysis if share else analysis, budget,
                          _options_for(b, options))
        except (BackendRefusedError, InvalidPrivacyError) as err:
            # a plan-time failure is decided from public quantities (ε, δ, n, options): under
            # "auto" it is that backend's refusal and the next one is tried (a backend that
            # finds no noise scale at a tiny δ must not fail the whole solve)
            if backend != "auto":      # the backend asked for by name says why, as before
                raise
            refused[name] = err.fix or str(err)
            continue
        _note_unused(p, b, options)
        p.params = p.params.with_defaults(group_mass_share=share)
        ranked.append(p)
    # ties of rank and predicted risk go to the registry's declared priority
    # (privfair.backends.REGISTRY: each backend's priority with its reason)
    ranked.sort(key=lambda p: (p.rank, p.predicted_excess_risk, priority(p.backend)))
    chosen = ranked[0] if ranked else None
    return Plans(chosen=chosen, ranked=ranked, refused=refused, analysis=analysis,
                 group_mass_share=chosen.params["group_mass_share"] if chosen else 0.0,
                 skipped=tuple(skipped), problem=problem)


def solve(problem, privacy, backend: str = "auto", device: str = "cpu", seed=None,
          progress=True, alpha: float = 0.05, budget=None, **options):
    """Plan, reserve the budget, then run; see :meth:`privfair.Problem.solve`.

    ``progress``: True (a bar on long steps when stderr is a terminal), "always" or False —
    :mod:`privfair.util.progress`."""
    from .holdout import HoldoutOptions

    if device not in ("cpu", "cuda", "torch"):
        raise InvalidInputError("device", device, "choose 'cpu' (numpy), 'cuda' (torch on GPU) or "
                                "'torch' (torch on CPU)")
    if device == "cuda":
        # decided from the machine (public), before any estimate or draw: a refused solve
        # spends nothing, whichever backend would have run it
        try:
            import torch
        except ImportError:
            raise InvalidInputError("device", device, "device='cuda' needs torch "
                                    "(pip install 'privfair[gpu]'); use device='cpu'") from None
        if not torch.cuda.is_available():
            raise InvalidInputError("device", device, "CUDA is not available on this machine; "
                                    "use device='cpu'")
    progress = check_progress(progress)
    if isinstance(privacy, DP):
        check_public_scores(problem, privacy)
        warn_weak_delta(privacy, problem.rates.data.n)
    options = dict(options)
    holdout = HoldoutOptions.from_options(options)     # typed refusals before anything is drawn
    warn = options.pop("_warn_status", True)           # the estimator re-emits them itself
    with default_progress(progress):       # plan-time work (Gaussian widths) reads it too
        result = _solve(problem, privacy, backend, device, seed, progress, alpha, budget, options,
                        holdout)
    if warn:
        warn_status(result, stacklevel=3)
    return result


def warn_weak_delta(privacy, n: int, stacklevel: int = 3) -> None:
    """A :class:`privfair.errors.WeakPrivacyWarning` when δ ≥ 1/n for the n rows of the data
    (public: neighbouring datasets replace a row, they never add one), before anything is
    drawn."""
    import warnings

    from ..errors import WeakPrivacyWarning

    if privacy.is_private and n > 0 and privacy.delta >= 1.0 / n:
        warnings.warn(f"privfair: δ = {privacy.delta:g} ≥ 1/n = {1.0 / n:.3g} for n = {n} rows: "
                      "a mechanism that publishes one random row in the clear is (0, 1/n)-DP, "
                      "so this guarantee does not rule that out; ask for δ well below 1/n, "
                      f"e.g. 1/n² = {1.0 / n ** 2:.3g} (the estimator's default)",
                      WeakPrivacyWarning, stacklevel=stacklevel + 1)


def warn_status(result, stacklevel: int = 2) -> None:
    """The warning of ``result.status`` (none when it is "certified"): see docs/trust.md."""
    import warnings

    from ..errors import FallbackWarning, UncertifiedConstraintWarning, UncheckedResultWarning
    from .holdout import short_text, unresolvable_note

    def named(c):               # a gap over many groups and labels prints hundreds of terms
        return short_text(c.constraint, 120)

    status = getattr(result, "status", "certified")
    if status.startswith("certified"):          # also "certified (mixed with a constant rule)"
        return
    if status.startswith("fallback") and result.holdout.mix_weight is not None:
        chk = result.holdout
        bad = "; ".join(f"{named(c)}: estimate {c.estimate:.3f}, lower bound "
                        f"{max(c.lower, c.test_lower):.3f}" for c in chk.constraints if c.violated)
        mixed = "; ".join(f"{named(c)}: estimate {c.estimate:.3f}, upper bound "
                          f"{c.upper:.3f}" for c in chk.mixture)
        cls, msg = FallbackWarning, (
            f"privfair: {status} — on {chk.n_held_out} held-out rows the trained rule violates "
            f"its constraint at {chk.confidence:.0%} confidence ({bad}; tolerance "
            f"{chk.tolerance:g}), so the rule returned plays it with probability "
            f"{chk.mix_weight:.3f} and otherwise the constant rule (always "
            f"{chk.constant_label!r}), the largest weight whose estimated constraint values meet "
            f"the levels ({mixed}); its estimated error is {chk.mixture_error:.3f} against the "
            f"trained rule's {chk.error:.3f} and the constant's {chk.constant_error:.3f}.  The "
            "trained rule is result.holdout.trained (holdout_on_violation='fallback' returns the "
            "constant, 'warn' the trained rule)")
    elif status.startswith("fallback") and result.holdout.fallback_reason == "violation":
        chk = result.holdout
        bad = "; ".join(f"{named(c)}: estimate {c.estimate:.3f}, lower bound "
                        f"{max(c.lower, c.test_lower):.3f}" for c in chk.constraints if c.violated)
        cls, msg = FallbackWarning, (
            f"privfair: {status} — on {chk.n_held_out} held-out rows the trained rule violates "
            f"its constraint at {chk.confidence:.0%} confidence ({bad}; tolerance "
            f"{chk.tolerance:g}), so the best constant rule that keeps the constraints is "
            f"returned (always {chk.constant_label!r}, error {chk.constant_error:.3f}); the "
            "trained rule is result.holdout.trained (holdout_on_violation='warn' returns it)")
    elif status.startswith("fallback") and result.holdout.fallback_reason == "unverifiable":
        chk = result.holdout
        # the interval the rule read: the box's (the certificate's upper bound may be the
        # narrower linear one, which is not what "too wide" was judged on)
        bad = "; ".join(f"{named(c)}: estimate {c.estimate:.3f}, interval [{c.lower:.3f}, "
                        f"{min(c.box_upper, c.lower + 1.0):.3f}]"
                        for c in chk.constraints if c.uninformative)
        from .holdout import UNINFORMATIVE_WIDTH

        cls, msg = FallbackWarning, (
            f"privfair: {status} — on {chk.n_held_out} held-out rows the trained rule's "
            f"constraint estimate misses its level and its {chk.confidence:.0%} interval (over "
            f"every rate at once) is at least {UNINFORMATIVE_WIDTH:g} wide, too wide to say "
            f"otherwise ({bad}: too few held-out rows for the rates it reads — below, which), "
            "so the best "
            f"constant rule, which keeps every constraint exactly, is returned (always "
            f"{chk.constant_label!r}, error {chk.constant_error:.3f}); the trained rule is "
            "result.holdout.trained (holdout_on_violation='warn' returns it)")
    elif status.startswith("fallback"):
        chk = result.holdout
        what, mine, theirs = (("objective", chk.objective, chk.constant_objective)
                              if chk.floor == "objective" else
                              ("error", chk.error, chk.constant_error))
        cls, msg = FallbackWarning, (
            f"privfair: {status} — on {chk.n_held_out} held-out rows the trained rule's {what} "
            f"(estimated {mine:.3f}) exceeds the best constant rule's ({theirs:.3f}"
            f", always {chk.constant_label!r}), so the constant rule is returned; the trained "
            "rule is result.holdout.trained")
    elif status.startswith("not checked"):
        cls, msg = UncheckedResultWarning, (
            f"privfair: {status}; nothing says whether the constraints hold on new data (pass "
            "holdout=0.2 with enough rows, or check result.metrics on held-out data)")
    else:
        bad = [c for c in result.holdout.constraints if not c.certified]
        detail = "; ".join(f"{named(c)}: held-out estimate {c.estimate:.4f}, "
                           f"{result.holdout.confidence:.0%} upper bound {c.upper:.4f} > "
                           f"{c.level:g} + tolerance {result.holdout.tolerance:g}"
                           + (f", and its lower bound {c.lower:.4f} is above it too: violated"
                              if c.violated else "")
                           + ("" if c.violated or c.resolvable else
                              f" — {unresolvable_note(c)}; for a certificate hold out more "
                              "rows (holdout=), ask a looser level, or pass "
                              "holdout_certify=True (the rule mixed with the constant until "
                              "certified)") for c in bad)
        cls, msg = UncertifiedConstraintWarning, f"privfair: {status} ({detail})"
    warnings.warn(msg + _sparse_hint(getattr(result, "holdout", None), result), cls,
                  stacklevel=stacklevel + 1)


def _sparse_hint(chk, result=None) -> str:
    """What to do when a constraint's check is uninformative because some groups have few
    held-out rows: names them (their rows read off the released counts — post-processing) and
    the remedies — for a group-blind rule also per-group thresholds, the remedy measured best on
    small data (COMPAS with two races: 0.34 against the constant's 0.47, docs/lagrangian.md).
    Empty when no constraint's check is uninformative."""
    if chk is None or not any(c.uninformative for c in chk.constraints):
        return ""
    trained = chk.trained if chk.trained is not None else result     # the rule that was fit
    reads_group = getattr(getattr(trained, "decision_set", None), "needs_sensitive", False)
    level = min(c.level for c in chk.constraints if c.uninformative)
    # a label-conditional rate (fpr, tpr) divides by a (group, label) cell, not by a group
    per_label = any(c.per_label for c in chk.constraints if c.uninformative)
    few = chk.sparse_groups(level, per_label=per_label)
    if not few:
        return _wide_hint(chk)
    named = ", ".join(f"{g} (~{m})" for g, m in few)
    what = "Groups (and labels)" if per_label else "Groups"
    need = 1.0 / (4.0 * level * level)
    ratio = chk.n_train / max(chk.n_held_out, 1)
    head = (f". {what} with too few held-out rows to check a gap of {level:g} (about "
            f"{math.ceil(need)} are needed; released counts): {named}. ")
    if all(m * ratio >= need for _, m in few):
        # every such cell is large enough in the training part: the check, not the fit, is
        # short of rows (public: the share held out and the released counts)
        total = chk.n_train + chk.n_held_out
        share = min(1.0, chk.n_held_out / max(total, 1) * need / max(min(m for _, m in few), 1))
        more = (f"hold out a larger share (about holdout={math.ceil(share * 20) / 20:g} would "
                "give them enough rows)" if share <= 0.5 else "give more rows")
        return head + (f"The training part holds about {ratio:.0f}× as many, enough to fit such "
                       f"a gap but not to check it on the held-out share: {more}, ask a looser "
                       "level, or pass holdout_on_violation='warn' to take the trained rule "
                       "uncertified")
    return head + (f"The training part holds about {ratio:.0f}× as "
                   "many rows per group, too few to fit such a gap either: merge small groups "
                   "(data.merge_groups({'new name': [groups]})), constrain only the large ones, "
                   "ask a looser level, or "
                   "give more rows" + ("" if reads_group else
                                       "; where the rule may read the group, per-group "
                                       "thresholds (pf.PostProcessed, docs/trust.md) fit such "
                                       "data better"))


def _wide_hint(chk) -> str:
    """The advice when an uninformative check names no small group: every rate rests on enough
    rows, but the check bounds all the rates its constraints read at once (a gap over many
    groups and labels reads dozens), so the box's interval is wider than
    :data:`~privfair.planning.holdout.UNINFORMATIVE_WIDTH`.  Its sampling width shrinks as
    1/√(held-out rows): the share that would narrow the widest interval below that width, with
    a margin (public: the shares and the released bounds)."""
    from .holdout import UNINFORMATIVE_WIDTH

    width = max(c.box_upper - c.lower for c in chk.constraints if c.uninformative)
    total = chk.n_train + chk.n_held_out
    share = chk.n_held_out / max(total, 1) * 1.2 * (width / UNINFORMATIVE_WIDTH) ** 2
    more = (f"hold out a larger share (about holdout={math.ceil(share * 20) / 20:g})"
            if share <= 0.5 else "give more rows")
    return (". No group is short of held-out rows: the check bounds every rate its constraints "
            "read at once (a gap over many groups and labels reads dozens), which widens each "
            f"interval: {more}, ask a looser level, or pass holdout_on_violation='warn' to take "
            "the trained rule uncertified")


def _training_part(problem, data):
    """``problem`` with ℓ on ``data`` (the training rows): the same decision set, surrogate and
    group-mass bound; the expressions keep their coordinates (ℓ's layout depends on the schema
    only), as :meth:`privfair.Problem.with_group_mass` does."""
    import copy

    from ..statistics.stats import Rates

    r = problem.rates
    new = copy.copy(problem)
    new.rates = Rates(r.decisions, data, r.surrogate, r.group_mass_bound,
                      feature_bound=r.feature_bound, group_mass_source=r.group_mass_source)
    return new


def check_public_scores(problem, privacy) -> None:
    """Refuse, before anything is drawn, a private ``protect="row"`` solve whose decision set
    reads a score fitted on the problem's own rows (:class:`privfair.statistics.scores.FittedScore`,
    from ``pf.scores.public_score(data)``): such a score read X and y, which that unit protects,
    and it would reach the released rule un-noised.  Decided from the objects given (public):
    the score knows the rows it read — the Dataset, or any part cut from the same data by
    ``take``/``split``/``subsample`` (``Dataset.lineage``: indices drawn from public
    randomness).  A score fitted on a dataset rebuilt from the same arrays is not recognized —
    the docstring of ``public_score`` says when a score is public."""
    if privacy.protect != "row" or not privacy.is_private:
        return
    decisions, data = problem.rates.decisions, problem.rates.data
    for name in ("score", "base"):
        fitted_on = getattr(getattr(decisions, name, None), "fitted_on", None)
        if callable(fitted_on) and fitted_on(data):
            raise InvalidPrivacyError(
                "protect", privacy.protect,
                f"the decision set's {name} was fitted by pf.scores.public_score on X and y of "
                "rows this problem trains on, which protect='row' protects, and the released "
                "rule would read it un-noised: pass protect='sensitive' (X and y public, only "
                "the sensitive attribute protected), or fit the score on public rows")


def _unit_hint(problem, privacy, backend) -> str:
    """Under ``protect="row"`` (the default since 2026-11-27), the backends that would accept
    the problem's form under ``protect="sensitive"``, appended to the refusal's reasons: a user
    of the old default's methods (``pf.ProxyCells``, ``sgda``) reads the way back.  After the
    reasons, since another fix may be the one they need (e.g. a δ > 0 for ``lagrangian_sgda``).
    Public: the problem's form and the privacy spec only."""
    from privfair.backends import BACKENDS, get

    if privacy.protect != "row":
        return ""
    sensitive = replace(privacy, protect="sensitive")
    try:
        analysis = problem.analyze(sensitive)
        names = list(BACKENDS) if backend == "auto" else [get(backend).name]
        would = [nm for nm in names if BACKENDS[nm].accepts(problem, analysis)
                 and not (BACKENDS[nm].non_private_only and sensitive.is_private)]
    except Exception:  # noqa: BLE001 - a hint must never replace the refusal it annotates
        return ""
    if not would:
        return ""
    return (f". Under protect='sensitive' (only the sensitive attribute protected; features "
            f"and labels public) {', '.join(would)} would take it: pass pf.DP(..., "
            f"protect='sensitive') (command line: --protect sensitive) if that is the "
            f"protection you need — protect='row', the default, protects whole rows")


def _solve(problem, privacy, backend, device, seed, progress, alpha, budget, options,
           holdout=None):
    from privfair.backends import get

    from .holdout import HoldoutOptions, partition
    from ..privacy import Accountant, BudgetFilter, Certificate
    from ..privacy.randomness import as_source

    holdout = HoldoutOptions() if holdout is None else holdout
    rng = as_source(seed)
    data = problem.rates.data
    # the partition depends on n and the options (public) and on the run's randomness only
    m, why = holdout.held_out_rows(data.n)
    held = None
    if m:
        # the held-out part as indices into the data (no copy of its features: 1.5 GB at 10⁷
        # rows × 101), read in chunks by the check
        train, held = partition(data, m, rng)
        problem = _training_part(problem, train)

    plans = plan(problem, privacy, backend=backend, alpha=alpha, first_only=True, **options)
    if plans.chosen is None:
        reasons = "; ".join(f"{k}: {v}" for k, v in plans.refused.items())
        raise BackendRefusedError("backend", backend, f"no backend accepts this problem — "
                                  f"{reasons}{_unit_hint(problem, privacy, backend)}")
    chosen = plans.chosen
    b = get(chosen.backend)

    if not privacy.is_private:
        ref = _note_unused(_plan_one(b, problem, plans.analysis, privacy,
                                     _options_for(b, options)), b, options)
        result = b.run(ref, rng=rng, accountant=None, device=device, progress=progress)
        result.certificate = Certificate.non_private(privacy.protect)
        return _checked(problem, result, held, privacy, holdout, rng, why)

    if budget is None:
        budget = BudgetFilter(privacy.epsilon, privacy.delta, name="this solve")
    # the source marks every event of a seeded run (certificate.seeded), whoever records it
    accountant = Accountant(delta=privacy.delta or None, relation=privacy.protect,
                            limit=(privacy.epsilon, privacy.delta), source=rng)
    try:
        result = _private_run(problem, privacy, plans, b, options, budget, accountant, rng,
                              device, progress, alpha)
    except PrivfairError:
        raise
    except Exception as err:  # noqa: BLE001 - an untyped failure: charged, its message withheld
        raise _withheld(err, chosen.backend, privacy) from (
            err if os.environ.get("PRIVFAIR_UNSAFE_DEBUG") == "1" else None)
    try:
        return _checked(problem, result, held, privacy, holdout, rng, why)
    except PrivfairError:
        raise
    except Exception as err:  # noqa: BLE001 - after releases: its message may carry private values
        raise _withheld(err, chosen.backend, privacy) from (
            err if os.environ.get("PRIVFAIR_UNSAFE_DEBUG") == "1" else None)


def _checked(problem, result, held, privacy, holdout, rng, why):
    """The held-out check (:mod:`privfair.planning.holdout`): set ``result.status`` and
    ``result.holdout``, replace the rule by the best constant one when it is worse, and state
    the parallel composition on the certificate."""
    from dataclasses import replace as _replace

    from .holdout import check, constant_result, public_label_counts, status_of

    if held is None:
        result.status, result.holdout = f"not checked: {why}", None
        return result
    cert = result.certificate
    eps = cert.epsilon if privacy.is_private else float("inf")
    if privacy.is_private and not eps > 0:
        result.status, result.holdout = "not checked: the training released nothing", None
        return result
    # the labels are public under protect="sensitive" (and at ε = ∞): the floor then reads them;
    # else a training run may have released an estimate of them (post-processing)
    public = not privacy.is_private or privacy.protect == "sensitive"
    chk = check(problem, result, held, epsilon=eps, options=holdout, rng=rng,
                relation=privacy.protect, n_train=problem.rates.data.n,
                train_labels=(public_label_counts(problem.rates.data) if public
                              else result.info.get("label_counts_estimate")),
                labels_public=public)
    n, m = problem.rates.data.n + held.n, held.n
    if privacy.is_private:
        note = (f"held-out check: {m} of {n} rows ({m / n:.0%}, a public random partition drawn "
                "independently of the data) were held out from training; on them one release — "
                f"Laplace(b = 2/ε_c) on the {chk.certificate.releases[0].dimension} soft "
                f"confusion counts, ℓ1 sensitivity 2 — is (ε_c = {_fmt(chk.epsilon)}, 0)-DP "
                "(result.holdout.certificate).  A row is in exactly one part, so by parallel "
                "composition the whole output is (max(ε, ε_c), δ) = the (ε, δ) above "
                "(docs/trust.md)")
    else:
        note = f"held-out check: {m} of {n} rows held out from training, measured exactly"
    result.certificate = _replace(cert, notes=tuple(cert.notes) + (note,))
    if chk.fallback:
        chk.trained = result
        # the constant's code: its label's position among the result's labels (the check
        # chose constant_label = labels[code]; labels are distinct)
        code = list(result.labels).index(chk.constant_label)
        if chk.mix_weight is not None:       # holdout_on_violation="mix" (planning/mixing.py)
            from .mixing import mixed_result

            result = mixed_result(result, code, chk.mix_weight)
        else:
            result = constant_result(result, code)
        result.certificate = chk.trained.certificate
    result.holdout, result.status = chk, status_of(chk)
    return result


def _fmt(x) -> str:
    return f"{x:.4g}"


def _withheld(err, backend, privacy):
    """The public face of an untyped failure inside a private solve (already charged)."""
    return PrivateFailureError(
        "backend", backend,
        f"{type(err).__name__} while running on the private data; the reservation "
        f"(ε={privacy.epsilon:g}, δ={privacy.delta:g}) was charged and the original message is "
        "withheld because it may carry values computed from private rows (set "
        "PRIVFAIR_UNSAFE_DEBUG=1 to see it; that output is not covered by the certificate)")


def _private_run(problem, privacy, plans, b, options, budget, accountant, rng, device, progress,
                 alpha):
    """Reserve the budget, estimate what must be estimated, plan finally and run.  A failure
    is refunded only while provably public (see :mod:`privfair.privacy.budget`)."""
    from privfair.backends.base import check_exposure

    from ..statistics.stats import estimate_group_mass_bound

    chosen = plans.chosen
    with budget.reserve(privacy.epsilon, privacy.delta, label=f"solve with {chosen.backend}",
                        watch=accountant):
        analysis, notes = plans.analysis, []
        if plans.group_mass_share:
            eps_q = privacy.epsilon * plans.group_mass_share
            bound = estimate_group_mass_bound(problem.rates.data, eps_q, rng=rng,
                                              accountant=accountant)
            problem = problem.with_group_mass(bound)
            analysis = problem.analyze(privacy, alpha=alpha)
            notes.append(f"group-mass bound estimated privately with ε={eps_q:.3g}")
        backend_privacy = replace(privacy, epsilon=privacy.epsilon * (1 - plans.group_mass_share))
        final = _note_unused(_plan_one(b, problem, analysis, backend_privacy,
                                       _options_for(b, options)), b, options)
        result = b.run(final, rng=rng, accountant=accountant, device=device, progress=progress)
        check_exposure(b, result)
        cert = accountant.certificate(delta=privacy.delta or None, notes=notes + final.notes)
        if cert.epsilon > privacy.epsilon * (1 + 1e-9) or cert.delta > privacy.delta * (1 + 1e-9) + 1e-15:
            raise RuntimeError(f"internal error: {chosen.backend} spent ({cert.epsilon}, {cert.delta}) "
                               f"> ({privacy.epsilon}, {privacy.delta})")
        result.certificate, result.plan = cert, final
    return result

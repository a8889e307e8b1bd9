"""``privfair audit --backend NAME``: solve a built-in instance end to end on two neighbouring
datasets many times (:mod:`privfair.audit.harness`) and print the empirical privacy loss of every
exposed field against the backend's claim, with the negative controls on request."""

from __future__ import annotations

import argparse
import math
import textwrap

from ..errors import PrivfairError
from .args import delta_arg, epsilon_arg, positive_float, positive_int, seed_arg, show_progress
from .errors import EXIT_FAILED, EXIT_OK, CommandError


AUDIT_DOC_HEAD = """The built-in audit instance (20 rows, one feature x, groups a and b of 10 rows each):

  group a: x = 0.25 (y=0), 0.1, -0.8, -0.6, -0.3 (y=0), 0.3, 0.45, 0.8, 0.9, 0.95 (y=1)
  group b: x = 10 points evenly spaced in [-1.2, 1.2], y = 1[x > 0]
  neighbours: D and D' = D with row 0 (x = 0.25, y = 0) moved from group a to group b
  (protect="sensitive": one row's sensitive attribute changes, features and labels fixed)"""


AUDIT_DOC_TAIL = """Every solve is a full problem.solve(...) (planner, budget, accountant), one seed each, and
every exposed field is an output: the decision output above, the released decisions and
weights, each entry of result.info and result.trace (flattened to scalars, numeric arrays
also as vectors), the certificate, the plan's parameters and notes, and whether the solve
raised (type and message).  Each field is tested on an event chosen from a pilot (the first
quarter of the runs on each dataset: outputs histogrammed when few distinct ones occur, else
cut into 20 pilot quantile bins; a vector is first reduced to the sum of its coordinates'
pilot log-likelihood ratios); the other runs test it: with exact binomial bounds
P_D(S) >= p_lo and P_D'(S) <= q_hi, the empirical privacy loss lower bound is
eps_lo = ln((p_lo - delta)/q_hi), and the claim is refuted when eps_lo > eps.  Fields constant
over the pilot are not tested; the decision output gets half the error budget Phi(-z) per
direction, the m other fields share the other half (each at z_f = Phi^-1(1 - Phi(-z)/(2m))).

Negative controls (--negative-control), tested against the same claim: 'noise x 1/2' (the
backend run inside privacy.reduced_noise(0.5): its draws at half the scale its events
record) and 'eps x 2' (the backend run at 2 eps: an exponential mechanism that drops its
factor 2).  A control the instance provably cannot refute is run and reported, not counted
(the instance says why).
"""


def audit_doc() -> str:
    """``privfair audit --help``'s text: the tie instance above, then each backend's instance
    and the default runs read from privfair.audit.instances (their one home)."""
    from ..backends import BACKENDS
    from ..audit.instances import AUDIT_RUNS, DEFAULT_RUNS, audit_instances

    lines = ["Instances, by backend (privfair.audit.instances, whose docstring says why "
             "each lets the", "moved row reach an exposed output with as much of the budget "
             "as the backend lets it):"]
    for name in BACKENDS:
        for inst in audit_instances(name)[:1]:
            opts = ", ".join(f"{k}={v}" for k, v in inst.options.items())
            text = (f"{name}: {inst.description}; {inst.neighbours_doc}; protect="
                    f"{inst.protect!r}, delta={inst.delta:g}" + (f"; options {opts}" if opts
                                                                 else "")
                    + (f"; decision output: {inst.release_doc}" if inst.release_doc else ""))
            lines += textwrap.wrap(text, 92, initial_indent="  ", subsequent_indent="    ")
    other = sorted({n for n in BACKENDS if n in AUDIT_RUNS}, key=list(BACKENDS).index)
    runs = ", ".join(f"{n} {AUDIT_RUNS[n]}" for n in other)
    return "\n".join([AUDIT_DOC_HEAD.rstrip(), "", *lines, "", AUDIT_DOC_TAIL.rstrip(), "",
                       *textwrap.wrap(f"Default runs on each dataset: {DEFAULT_RUNS} ({runs}).",
                                      92)])


def _format_eps(value) -> str:
    """An ε lower bound for printing: below 0 it says nothing (ε ≥ 0 always)."""
    return f"{max(value, 0.0):.3f}"


def _print_condition(title, cond, claim, z, noise_multiplier=1.0):
    """Print one condition's checks (the decision in detail, the other fields summarized)."""
    eps, delta = claim
    extra = ", ".join([f"{k}={v}" for k, v in cond.options.items() if k.startswith("_")]
                      + ([f"reduced_noise({noise_multiplier:g})"] if noise_multiplier != 1.0
                         else []))
    print(f"\n{title}: backend at ε={cond.epsilon_run:g}{' with ' + extra if extra else ''}, "
          f"{cond.runs} solves on D and on D' ({cond.seconds:.1f} s)"
          + (f"; {cond.failures[0]} + {cond.failures[1]} raised" if any(cond.failures) else ""))
    dec = cond.decision
    print(f"  decision output ({dec.check.how}; z = {dec.z:.2f}):" if dec is not None else
          "  decision output: none (every solve raised)")
    for name, est in (() if dec is None else
                      (("D → D'", dec.check.forward), ("D' → D", dec.check.backward))):
        print(f"    {name}: event S of {est.size}/{est.bins} pilot bins; held out: "
              f"P(S) = {est.p:.4f}, P'(S) = {est.q:.4f}; δ̂ at ε={eps:.6g}: "
              f"{est.delta:.4f} ± {est.stderr:.4f}; bounds P ≥ {est.p_lower:.4f}, "
              f"P' ≤ {est.q_upper:.4f}; ε lower bound {_format_eps(est.epsilon_lower(delta))}")
    others = list(cond.others)
    if others:
        top = max(others, key=lambda c: c.epsilon_lower)
        dup = sum(len(c.aliases) for c in others)
        print(f"  other exposed fields: {len(others)} tested at z = {others[0].z:.2f} "
              f"({cond.untested} constant over the pilot, {dup} identical to a tested one); "
              f"largest ε lower bound {_format_eps(top.epsilon_lower)} ({top.name})")
    else:
        print(f"  other exposed fields: none varies over the pilot ({cond.untested} constant)")
    for c in others:
        if c.refuted:
            est = max((c.check.forward, c.check.backward),
                      key=lambda e: e.epsilon_lower(delta))
            print(f"    refutes: {c.name}{' (= ' + ', '.join(c.aliases) + ')' if c.aliases else ''}"
                  f": ε ≥ {_format_eps(c.epsilon_lower)}; P(S) = {est.p:.4f}, "
                  f"P'(S) = {est.q:.4f} ({c.check.how.split(';')[0]})")
    print(f"  empirical privacy loss: ε ≥ {_format_eps(cond.epsilon_lower)} at δ = {delta:.3g} "
          f"(largest over the fields; the family errs with probability ≤ Φ(−{z:g}) per "
          f"direction); claim ε = {eps:.6g}")


def cmd_audit(args) -> int:
    import numpy as np

    import privfair as pf
    from ..backends import BACKENDS, get
    from ..audit.harness import certificate_of, run_condition
    from ..audit.instances import audit_instances, default_runs

    if args.backend not in BACKENDS:      # no 'auto' here: the audit tests one named backend
        raise CommandError(f"--backend {args.backend!r}: audit needs a named backend, one of "
                           f"{sorted(BACKENDS)}")
    backend = get(args.backend)
    if getattr(backend, "non_private_only", False):
        raise CommandError(f"backend {args.backend!r} is a non-private reference solver: "
                           "nothing to audit")
    if math.isinf(args.epsilon):
        raise CommandError("--epsilon inf: a non-private run has no privacy claim to audit")
    refusals, chosen = [], None
    candidates = audit_instances(backend.name)
    if args.instance is not None:
        keys = [inst.key for inst in candidates]
        if args.instance not in keys:
            raise CommandError(f"--instance {args.instance!r}: not an audit instance; one of "
                               f"{keys}")
        candidates = [inst for inst in candidates if inst.key == args.instance]
    for inst in candidates:
        delta = inst.delta if args.delta is None else args.delta
        privacy = pf.DP(args.epsilon, delta, protect=inst.protect)
        D, Dp = inst.pair()
        problem = inst.build(D)
        verdict = backend.accepts(problem, problem.analyze(privacy))
        if verdict:
            chosen = inst
            break
        refusals.append(f"{inst.description}: {verdict.reason}")
    if chosen is None:
        raise CommandError(f"backend {args.backend!r} accepts none of the built-in audit "
                           f"instances ({'; '.join(refusals)})")
    options = chosen.options
    runs = args.runs if args.runs is not None else default_runs(backend.name)
    if runs < 8:
        raise CommandError(f"--runs {runs}: at least 8 runs are needed (a pilot and a test part)")
    controls = chosen.negative_controls() if args.negative_control else ()
    seeds = np.random.SeedSequence(args.seed).spawn(1 + 2 * (1 + len(controls)))
    # progress: a bar per phase (certificate, solves on D and D', tests) on a terminal only
    progress = show_progress(args)
    try:
        cert = certificate_of(backend.name, chosen, D, privacy, options, seeds[0], progress)
    except PrivfairError as err:        # e.g. sgda at δ = 0: a usage error, one line
        raise CommandError(f"the audit instance cannot run at ε={args.epsilon:g}, "
                           f"δ={delta:g}: {err}") from None
    eps, delta = float(cert.epsilon), float(cert.delta)
    opts = ", ".join(f"{k}={v}" for k, v in options.items())
    print(f"privfair audit — backend {backend.name} on the built-in instance: {D.n} rows, "
          f"{chosen.description}{' (' + opts + ')' if opts else ''}; {chosen.neighbours_doc}")
    print("outputs tested: every exposed field of end-to-end solves — "
          + (f"the decision output ({chosen.release_doc})" if chosen.release_doc else
             "the decision output (expected predictions on the rows)")
          + ", the released decisions and weights, result.info, result.trace, the certificate, "
            "the plan, and whether the solve raised")
    print(f"claim (the certificate of a run at ε={args.epsilon:g}, δ={privacy.delta:g}, "
          f"protect={chosen.protect!r}): ε = {eps:.6g}, δ = {delta:.3g}")
    conditions = [("honest run", None, args.epsilon, {})] + [
        (f"negative control '{c.label}'", c, c.epsilon_factor * args.epsilon, c.options)
        for c in controls]
    expected_ok, summary = True, []
    for i, (title, control, eps_run, extra) in enumerate(conditions):
        run_privacy = pf.DP(eps_run, privacy.delta, protect=chosen.protect)
        cond = run_condition(backend.name, chosen, D, Dp, run_privacy, {**options, **extra},
                             (eps, delta), runs, seeds[1 + 2 * i:3 + 2 * i], z=args.z,
                             progress=progress, label=control.label if control else "honest",
                             noise_multiplier=getattr(control, "noise_multiplier", 1.0),
                             option_names=backend.option_names)
        _print_condition(title, cond, (eps, delta), args.z,
                         getattr(control, "noise_multiplier", 1.0))
        bound = _format_eps(cond.epsilon_lower)
        if control is None:
            ok = not cond.refuted
            print("  PASS: no evidence against the claim at z = {:g}".format(args.z) if ok else
                  f"  FAIL: the outputs refute (ε, δ) = ({eps:.6g}, {delta:.3g})"
                  f" — field {cond.worst.name}")
            summary.append(("honest", bound, "PASS" if ok else "FAIL (refuted)"))
        elif control.expect_refuted:
            ok = cond.refuted
            print(f"  FAIL: refuted ({cond.worst.name}) — the audit has power against this "
                  "bug on this instance (expected)" if ok else
                  f"  PASS: the under-noised run is NOT refuted: no power at {runs} runs on "
                  "this instance (raise --runs)")
            summary.append((control.label, bound, "refuted" if ok else "NOT refuted"))
        else:
            ok = True                     # reported, not counted (control.why)
            print(f"  {'FAIL: refuted' if cond.refuted else 'PASS: not refuted'} — not counted: "
                  f"{control.why}")
            summary.append((control.label, bound, ("refuted" if cond.refuted else
                                                   "not refuted") + " (not counted)"))
        expected_ok &= ok
    if len(summary) > 1:
        print(f"\nsummary (claim ε = {eps:.6g}, δ = {delta:.3g}; {runs} solves on each dataset "
              "per condition):")
        for label, bound, verdict in summary:
            print(f"  {label:<12} ε ≥ {bound:<7} {verdict}")
    return EXIT_OK if expected_ok else EXIT_FAILED


def audit_pair():
    """The neighbouring datasets (D, D') of the built-in audit instance (see :func:`audit_doc`)."""
    from ..audit.instances import audit_pair as pair

    return pair()


def add_parser(sub) -> None:
    """Register the command on ``sub`` (argparse's subparsers)."""
    a = sub.add_parser("audit", help="empirical privacy loss of a backend vs its claim "
                       "(neighbouring-dataset tester)",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Solve a built-in instance many times end to end on two "
                       "neighbouring datasets and bound the empirical privacy loss of every "
                       "exposed field from below on an event chosen from held-out runs "
                       "(privfair.audit.harness, privfair.privacy.testing.check_dp_heldout, "
                       "both directions).  Exit 0 when the verdicts are as expected (honest "
                       "run PASS; the negative controls, if asked, refuted), 1 otherwise."
                       "\n\n" + audit_doc())
    a.add_argument("--backend", required=True,
                   help="a name from 'privfair backends' (no 'auto': the audit tests one backend)")
    a.add_argument("--epsilon", type=epsilon_arg, default=1.0, help="ε to run at (default 1)")
    a.add_argument("--delta", type=delta_arg, default=None,
                   help="δ to run at (default: the instance's, listed below — 0, or 0.1 for "
                        "the Gaussian instances of sgda and lagrangian_sgda: a loss above ε at "
                        "δ = 1e-5 lives on events too rare for ~10^3 runs)")
    a.add_argument("--runs", type=positive_int, default=None,
                   help="solves on each dataset per condition (default: the backend's, "
                        "listed below)")
    a.add_argument("--seed", type=seed_arg, default=0, help="seed of the runs (default 0)")
    a.add_argument("--z", type=positive_float, default=4.0,
                   help="confidence: a claim is refuted only when the empirical ε lower "
                        "bound, at level 1 − Φ(−z) in each direction, exceeds it (default 4)")
    a.add_argument("--negative-control", action="store_true",
                   help="also run the negative controls — the backend with half its noise "
                        "and at 2ε — against the same "
                        "claim: the tester should refute them")
    a.add_argument("--instance", default=None,
                   help="audit this instance (its key, e.g. proxy_counts_3groups) instead of "
                        "the first one the backend accepts")
    a.add_argument("--no-progress", action="store_true", help="no progress bars")
    a.set_defaults(func=cmd_audit)

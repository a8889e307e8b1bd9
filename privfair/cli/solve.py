"""``privfair solve PROBLEM.py``: plan, solve privately, and print the plan, the privacy
certificate, the status and the metrics (public ones only, :mod:`privfair.reports.metrics`);
``--certificate`` and ``--report`` also write them (the page:
:func:`privfair.reports.html.solve_page`).
"""

from __future__ import annotations

import pathlib
import time

from .. import __version__
from ..reports.html import solve_page
from ..reports.metrics import format_metrics, metrics_rows
from .args import add_privacy_flags, fraction, privacy_of, seed_arg, show_progress
from .errors import EXIT_OK
from .files import check_outputs, check_writable, load_problem_file, write_text
from .report_cmd import full_report
from ..planning.holdout import ON_VIOLATION, ON_VIOLATION_CHOICES


def status_lines(result) -> str:
    """``status: ...`` and, when a check was made, what it measured (docs/trust.md)."""
    out = f"status: {result.status}"
    if result.holdout is not None:
        out += "\n" + result.holdout.summary()
    return out


def cmd_solve(args) -> int:
    from ..backends import get            # lazily: `privfair --help` loads no backend

    if args.backend != "auto":
        get(args.backend)                 # an unknown name fails before the file is loaded
    check_outputs(args.problem, [("--certificate", args.certificate), ("--report", args.report)])
    check_writable(args.certificate, "--certificate")
    check_writable(args.report, "--report")
    problem, test = load_problem_file(args.problem)
    train = problem.rates.data
    privacy = privacy_of(args, problem)
    t0 = time.perf_counter()
    print(f"privfair {__version__} — solving {args.problem} ({train.n} rows, groups "
          f"{train.groups}); privacy: ε={privacy.epsilon:g}, δ={privacy.delta:.3g}, "
          f"protect={privacy.protect!r}\n")
    print(problem, "\n")
    plans = problem.plan(privacy, backend=args.backend, alpha=args.alpha)
    print(plans.explain(holdout=args.holdout), "\n")
    result = problem.solve(privacy, backend=args.backend, seed=args.seed,
                           progress=show_progress(args), alpha=args.alpha,
                           holdout=args.holdout, holdout_on_violation=args.on_violation,
                           holdout_certify=args.certify)
    print(result.certificate, "\n")
    print(status_lines(result), "\n")
    if "note" in result.info:
        print("note:", result.info["note"], "\n")
    rows = metrics_rows(result, train, test, privacy)
    print(f"backend: {result.backend}   ({time.perf_counter() - t0:.1f} s)")
    print(format_metrics(rows))
    if args.certificate:
        write_text(args.certificate, result.certificate.to_markdown() + "\n")
        print(f"certificate written to {args.certificate}")
    if args.report:
        write_text(args.report, _solve_page(args, problem, privacy, plans, result, test, rows))
        print(f"report written to {args.report}")
    return EXIT_OK


def _solve_page(args, problem, privacy, plans, result, test, rows) -> str:
    """The ``--report`` page of ``privfair solve``, rendered by
    :func:`privfair.reports.html.solve_page` (the one HTML renderer)."""
    rep, note = full_report(problem, privacy, args.alpha, measure=False, result=result,
                            test=test)
    return solve_page(f"privfair solve — {pathlib.Path(args.problem).name}", problem, plans,
                      result, rows, report=rep, note=note)


def add_parser(sub) -> None:
    """Register the command on ``sub`` (argparse's subparsers)."""
    s = sub.add_parser("solve", help="solve a PROBLEM.py privately: plan, certificate, metrics",
                       description="Load PROBLEM.py (a Python file defining `problem`, a "
                       "pf.Problem, or `build()` returning one, and optionally `test`, a "
                       "pf.Dataset), solve it privately and print the plan, the privacy "
                       "certificate and the metrics (train, and test if given).")
    s.add_argument("problem", metavar="PROBLEM.py", help="the problem file")
    add_privacy_flags(s, epsilon_required=True)
    s.add_argument("--backend", default="auto",
                   help="'auto' (smallest predicted risk) or a name from 'privfair backends'")
    s.add_argument("--seed", type=seed_arg, default=None,
                   help="seed for a reproducible run (not for real releases)")
    s.add_argument("--certificate", metavar="OUT.md", default=None,
                   help="also write the privacy certificate as Markdown")
    s.add_argument("--report", metavar="OUT.html", default=None,
                   help="also write a self-contained HTML page (analysis, plan, certificate, "
                        "metrics)")
    s.add_argument("--holdout", type=fraction, default=0.2, metavar="F",
                   help="fraction of the rows held out of training for the out-of-sample check "
                        "(default 0.2; 0: none; see docs/trust.md)")
    s.add_argument("--on-violation", choices=ON_VIOLATION_CHOICES, default=ON_VIOLATION,
                   help="when the held-out rows show a constraint confidently violated: return "
                        "the trained rule mixed with the best constant rule that keeps it, at "
                        "the largest weight whose estimates meet the levels (mix), that constant "
                        "rule (fallback) or the trained rule with a warning (warn); default "
                        f"{ON_VIOLATION} (docs/trust.md)")
    s.add_argument("--certify", action="store_true",
                   help="where the held-out check does not certify the rule, mix it with the "
                        "best constant rule until it does (status 'certified (mixed with a "
                        "constant rule)'; docs/trust.md)")
    s.add_argument("--no-progress", action="store_true", help="no progress bars")
    s.set_defaults(func=cmd_solve)

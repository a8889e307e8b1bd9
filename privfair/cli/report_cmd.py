"""``privfair report PROBLEM.py``: the compiler's analysis, the planner's ranking and the
sample-complexity report (:func:`privfair.reports.report.report`), printed and optionally
written (HTML: :func:`privfair.reports.html.report_page`); spends no privacy budget."""

from __future__ import annotations

import pathlib

from ..errors import PrivfairError
from ..reports.html import report_page
from ..reports.report import report
from .args import add_privacy_flags, positive_float, positive_int, privacy_of
from .errors import EXIT_OK, one_line
from .files import check_outputs, check_writable, load_problem_file, write_text


def full_report(problem, privacy, alpha, **options):
    """``(report or None, note)``: the sample-complexity report
    (:func:`privfair.reports.report.report`), or, if it fails on this problem, ``None`` and a
    one-line note saying why (the commands then show the analysis and the plan ranking only;
    a :class:`~privfair.errors.PrivfairError` is the user's error and is raised)."""
    try:
        return report(problem, privacy, alpha=alpha, **options), ""
    except PrivfairError:
        raise
    except Exception as exc:   # an addition to the output: report it, keep the rest
        return None, (f"the sample-complexity report failed on this problem "
                      f"({type(exc).__name__}: {one_line(exc)})")


def cmd_report(args) -> int:
    check_outputs(args.problem, [("--output", args.output)])
    check_writable(args.output, "--output")
    problem, test, rebuild = load_problem_file(args.problem, with_rebuild=True)
    privacy = privacy_of(args, problem)
    plans = problem.plan(privacy, alpha=args.alpha)
    options = {"measure": args.measure, "seeds": args.seeds, "beta": args.beta}
    if args.measure and rebuild is not None:
        options["build"] = rebuild
    rep, note = full_report(problem, privacy, args.alpha, **options)
    head = (f"privfair report — {args.problem} (ε={privacy.epsilon:g}, δ={privacy.delta:.3g}, "
            f"protect={privacy.protect!r}, α={args.alpha:g})")
    # the sample-complexity report lists the refused backends itself: once is enough
    ranking = ("plan ranking (theorem bounds on the excess risk of h):\n"
               + plans.explain(refused=rep is None)
               + ("\n(refused backends: listed at the end of the report)"
                  if rep is not None and plans.refused else ""))
    blocks = [head, str(problem), str(plans.analysis), ranking]
    blocks.append(str(rep) if rep is not None else
                  f"note: {note}; this is the compiler's analysis and the planner's ranking.")
    text = "\n\n".join(blocks)
    print(text)
    if args.output:
        if args.output.lower().endswith((".html", ".htm")):
            page = report_page(f"privfair report — {pathlib.Path(args.problem).name}",
                               problem, plans, report=rep, note=note)
        else:
            page = text + "\n"
        write_text(args.output, page)
        print(f"report written to {args.output}")
    return EXIT_OK


def add_parser(sub) -> None:
    """Register the command on ``sub`` (argparse's subparsers)."""
    r = sub.add_parser("report", help="the analysis and the plan ranking of a PROBLEM.py "
                       "(spends nothing)",
                       description="Print what the compiler proves about PROBLEM.py, the "
                       "planner's ranking of the backends with their theorem bounds and the "
                       "sample-complexity report (n needed for α, lower bounds).  Spends no "
                       "privacy budget and releases nothing "
                       "computed from the private data (unless --measure).")
    r.add_argument("problem", metavar="PROBLEM.py", help="the problem file")
    add_privacy_flags(r, epsilon_required=False)
    r.add_argument("--output", metavar="FILE", default=None,
                   help="also write the report (HTML if FILE ends in .html, else text)")
    r.add_argument("--beta", type=positive_float, default=0.05,
                   help="failure probability shown with the bounds (default 0.05)")
    r.add_argument("--measure", action="store_true",
                   help="also run the backends and measure their excess risk (on subsamples "
                        "rebuilt by PROBLEM.py's rebuild(data), else on the full data); the "
                        "measurement reads the data non-privately: for the analyst, not for "
                        "release")
    r.add_argument("--seeds", type=positive_int, default=3,
                   help="runs per measured point (default 3)")
    r.set_defaults(func=cmd_report)

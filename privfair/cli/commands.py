# Over 500 lines: one argparse command per subcommand with its help text; the audit and report work
#   lives in privfair.audit and privfair.reports.
"""The ``privfair`` command line.

Commands (``privfair COMMAND --help`` documents each; see also ``docs/cli.md``)::

    privfair solve PROBLEM.py --epsilon 1 [--delta D] [--protect sensitive|row] [--backend auto]
                   [--seed S] [--alpha A] [--holdout F] [--certificate out.md]
                   [--report out.html]
    privfair report PROBLEM.py [--epsilon 1] [--delta D] [--protect ...] [--alpha A] [--output F]
    privfair audit --backend NAME [--epsilon 1] [--delta 0] [--runs N] [--negative-control]
    privfair backends
    privfair datasets
    privfair demo [--epsilon 1] [--constraint equalized_odds|demographic_parity] [--subsample N]

The PROBLEM.py convention
-------------------------
A problem file is ordinary Python, executed with :func:`runpy.run_path` (its directory is put on
``sys.path`` while it loads, as ``python PROBLEM.py`` would; ``__name__`` is
``"__privfair_problem__"``, so an ``if __name__ == "__main__":`` block does not run).  It must
define

* ``problem`` — a :class:`privfair.Problem` over the private training data, **or**
* ``build()`` — a function returning such a problem, or a ``(problem, test)`` pair;

and may define ``test``, a :class:`privfair.Dataset` on which the metrics are also reported (a
held-out split; it is not used by the solve), and ``rebuild(data)``, a function building the same
problem on another :class:`privfair.Dataset` (``privfair report --measure`` uses it to measure on
subsamples).  ``examples/problem_adult_eo.py`` is an example.

Exit codes
----------
``0`` success; ``1`` an audit whose verdict is not the expected one (the honest run refuted, or
a requested negative control not refuted), or an internal error; ``2`` a usage or input error —
a wrong flag, a missing or broken problem file, an invalid privacy parameter, a problem no
backend accepts, an unwritable output file.  Every error is one line on stderr,
``privfair: error: ...``, never a traceback (set ``PRIVFAIR_TRACEBACK=1`` to see the traceback
of an internal error); ``130`` interrupted.
"""

from __future__ import annotations

import argparse
import math
import os
import pathlib
import sys
import time

from ..errors import PrivfairError

#: exit codes (documented in the module docstring and docs/cli.md)
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class CommandError(Exception):
    """A user-facing error of the command line: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``privfair: error: MESSAGE (see 'privfair X --help')``."""

    def error(self, message):  # noqa: D401 - argparse API
        hint = f" (see '{self.prog} --help')"
        self.exit(EXIT_USAGE, f"privfair: error: {_one_line(message)}{hint}\n")


def _one_line(text) -> str:
    return " ".join(str(text).split())


# --------------------------------------------------------------------------- argument types
def _epsilon(text):
    """``--epsilon``: a number, then the privacy core's own check (:class:`privfair.DP`, the one
    place ε is validated), so the command line accepts exactly what the library does."""
    return _privacy_number(text, "ε", "pass a positive number or 'inf'",
                           lambda v: _dp(v, 0.0).epsilon)


def _delta(text):
    """``--delta``: a number, then the privacy core's own check (as for ``--epsilon``)."""
    return _privacy_number(text, "δ", "pass a number in [0, 1)", lambda v: _dp(1.0, v).delta)


def _dp(epsilon, delta):
    from ..privacy import DP

    return DP(epsilon, delta)


def _privacy_number(text, symbol, fix, check):
    """``float(text)`` validated by ``check`` (which raises InvalidPrivacyError), or argparse's
    one-line error naming the flag's value and the privacy core's fix."""
    from ..errors import InvalidPrivacyError

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid {symbol} {text!r}: {fix}") from None
    try:
        return check(value)
    except InvalidPrivacyError as err:
        raise argparse.ArgumentTypeError(f"invalid {symbol} {text!r}: {err.fix}") from None


def _positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: pass a positive number")
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: pass a positive number")
    return value


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid count {text!r}: pass a positive integer")
    if value < 1:
        raise argparse.ArgumentTypeError(f"invalid count {text!r}: pass a positive integer")
    return value


#: the smallest ``demo --subsample`` (δ = 1/n² needs n ≥ 2; a fair fit needs rows in every cell)
MIN_SUBSAMPLE = 100


def _fraction(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1), got {text!r}") from None
    if not 0 <= v < 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1), got {text!r}")
    return v


def status_lines(result) -> str:
    """``status: ...`` and, when a check was made, what it measured (docs/trust.md)."""
    out = f"status: {result.status}"
    if result.holdout is not None:
        out += "\n" + result.holdout.summary()
    return out


def _subsample(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid row count {text!r}: pass an integer "
                                         f"≥ {MIN_SUBSAMPLE}")
    if value < MIN_SUBSAMPLE:
        raise argparse.ArgumentTypeError(f"invalid row count {text!r}: pass an integer "
                                         f"≥ {MIN_SUBSAMPLE}")
    return value


def _seed(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid seed {text!r}: pass a non-negative integer")
    if value < 0:
        raise argparse.ArgumentTypeError(f"invalid seed {text!r}: pass a non-negative integer")
    return value


def _show_progress(args) -> bool:
    """Progress bars go to stderr, only when it is a terminal and --no-progress is not given."""
    return not getattr(args, "no_progress", False) and sys.stderr.isatty()


# --------------------------------------------------------------------------- problem files
def load_problem_file(path, with_rebuild=False):
    """Load a PROBLEM.py file: ``(problem, test or None)``, and its ``rebuild`` (or None) when
    ``with_rebuild``; see the module docstring.

    Raises :class:`CommandError` (one line, naming the file) when the file is missing, is not
    Python, fails to run, or defines no problem.
    """
    import runpy

    from ..data.dataset import Dataset
    from ..analysis.problem import Problem

    p = pathlib.Path(path)
    if not p.exists():
        raise CommandError(f"{path}: no such file")
    if not p.is_file():
        raise CommandError(f"{path}: not a file (pass a PROBLEM.py file)")
    if p.suffix != ".py":
        raise CommandError(f"{path}: expected a Python file defining `problem` (PROBLEM.py)")
    folder = str(p.resolve().parent)
    sys.path.insert(0, folder)
    try:
        try:
            ns = runpy.run_path(str(p), run_name="__privfair_problem__")
        except SyntaxError as exc:
            raise CommandError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
        except SystemExit:
            raise CommandError(f"{path}: the file called sys.exit() while loading") from None
        except PrivfairError as exc:
            raise CommandError(f"{path}: {exc}") from None
        except Exception as exc:   # the user's code failed: report it on one line
            raise CommandError(f"{path}: {type(exc).__name__} while loading: {exc}") from None
        problem, test = ns.get("problem"), ns.get("test")
        if problem is None and callable(ns.get("build")):
            try:
                built = ns["build"]()
            except PrivfairError as exc:
                raise CommandError(f"{path}: build() failed: {exc}") from None
            except Exception as exc:
                raise CommandError(f"{path}: build() raised {type(exc).__name__}: {exc}") from None
            if isinstance(built, tuple) and len(built) == 2:
                problem, test = built
            else:
                problem = built
    finally:
        try:
            sys.path.remove(folder)
        except ValueError:  # pragma: no cover - the file removed it itself
            pass
    if problem is None:
        raise CommandError(f"{path}: defines neither `problem` (a pf.Problem) nor `build()` "
                           "returning one")
    if not isinstance(problem, Problem):
        raise CommandError(f"{path}: `problem` is a {type(problem).__name__}, not a pf.Problem")
    if test is not None and not isinstance(test, Dataset):
        raise CommandError(f"{path}: `test` is a {type(test).__name__}, not a pf.Dataset")
    if getattr(problem, "rates", None) is None or getattr(problem.rates, "data", None) is None:
        raise CommandError(f"{path}: the problem is not built over a dataset (use pf.rates(...))")
    rebuild = ns.get("rebuild")
    if rebuild is not None and not callable(rebuild):
        raise CommandError(f"{path}: `rebuild` must be a function rebuild(data) -> pf.Problem")
    return (problem, test, rebuild) if with_rebuild else (problem, test)


def _privacy(args, problem):
    from ..privacy.spec import DP

    n = problem.rates.data.n
    if math.isinf(args.epsilon):
        delta = 0.0 if args.delta is None else args.delta
    else:
        delta = 1.0 / n ** 2 if args.delta is None else args.delta
    return DP(args.epsilon, delta, protect=args.protect)


def _check_outputs(problem_path, outputs):
    """Fail before any budget is spent when an output path (``outputs``: (flag, path) pairs) is
    the problem file itself or the same file as another output (compared by ``realpath``)."""
    seen = {os.path.realpath(problem_path): "the problem file"}
    for flag, path in outputs:
        if path:
            real = os.path.realpath(path)
            if real in seen:
                raise CommandError(f"{flag} {path}: the same file as {seen[real]} "
                                   "(pass another path)")
            seen[real] = flag


def _check_writable(path, flag):
    """Fail before any budget is spent when an output file cannot be written: the file is really
    opened for appending (and removed again if this created it) — ``os.access`` says yes to root
    and to /proc or /sys paths that no write can create."""
    if path is None:
        return
    if not str(path).strip():
        raise CommandError(f"{flag} {path!r}: empty file name (pass a file name)")
    p = pathlib.Path(path)
    if p.is_dir():
        raise CommandError(f"{path}: is a directory (pass a file name)")
    parent = p.parent if str(p.parent) else pathlib.Path(".")
    if not parent.is_dir():
        raise CommandError(f"{path}: directory {str(parent)!r} does not exist")
    if p.exists() and not p.is_file():      # /dev/stdout, a named pipe: opening may block
        if not os.access(p, os.W_OK):
            raise CommandError(f"{path}: not writable")
        return
    existed = p.exists()
    try:
        with open(p, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None
    if not existed:
        try:
            p.unlink()
        except OSError:  # pragma: no cover - created but not removable: it is written later
            pass


def _write(path, text):
    try:
        pathlib.Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None


def full_report(problem, privacy, alpha, **options):
    """``(report or None, note)``: issue 7's sample-complexity report (:func:`privfair.reports.report.report`)
    when that module is installed; otherwise, or if it fails on this problem, ``None`` and a
    one-line note saying why (the commands then show the analysis and the plan ranking only)."""
    import importlib
    import importlib.util

    if importlib.util.find_spec("privfair.reports.report") is None:
        return None, "the full sample-complexity report (issue 7) is pending"
    fn = getattr(importlib.import_module("privfair.reports.report"), "report", None)
    if not callable(fn):
        return None, "the full sample-complexity report (issue 7) is pending"
    try:
        return fn(problem, privacy, alpha=alpha, **options), ""
    except PrivfairError:
        raise
    except Exception as exc:   # an addition to the output: report it, keep the rest
        return None, (f"the sample-complexity report failed on this problem "
                      f"({type(exc).__name__}: {_one_line(exc)})")


# --------------------------------------------------------------------------- commands
def _cmd_datasets(args) -> int:
    from ..datasets import list_datasets

    for name, description in list_datasets().items():
        print(f"{name:10s} {description}")
    return EXIT_OK


#: the first line of ``privfair backends``: why the list is in this order
PRIORITY_HEADER = ("Backends in registry priority order: backend='auto' ranks the accepting "
                   "backends' plans by (rank, predicted excess risk, priority); the priority "
                   "(smaller first) only breaks ties, e.g. between plans that predict no bound.")


def priority_line(name: str) -> str:
    """``priority N: reason`` for backend ``name``, from :data:`privfair.backends.REGISTRY`
    (the planner's tie-break key, :func:`privfair.backends.priority`); a backend added by hand
    (not in the table) is said to come after every listed one."""
    from ..backends import ENTRIES, priority

    entry = ENTRIES.get(name)
    reason = entry.reason if entry is not None else \
        "not in privfair.backends.REGISTRY: after every listed backend, in the order added"
    return f"priority {priority(name):g}: {reason}"


def _cmd_backends(args) -> int:
    from ..backends import BACKENDS
    from ..util.text import wrap

    if args.markdown:
        print("\n".join(options_markdown(BACKENDS)))
        return EXIT_OK
    print("\n".join(wrap(PRIORITY_HEADER, continuation="")))
    for name, b in BACKENDS.items():
        flags = []
        if getattr(b, "non_private_only", False):
            flags.append("non-private reference (ε = ∞) only")
        if not getattr(b, "needs_group_mass", True):
            flags.append("needs no group-mass bound")
        extra = f"  [{'; '.join(flags)}]" if flags else ""
        print(f"{name:16s} {b.theorem}{extra}")
        print("\n".join(wrap("    " + priority_line(name), continuation="      ")))
        print("\n".join(option_lines(b)))
    return EXIT_OK


#: the columns of a backend's options, as :func:`privfair.backends.options.rows` gives them
OPTION_COLUMNS = ("option", "type", "range", "default", "doc")
#: where the doc column may start at the latest; past it each doc goes under its option
WIDE_COLUMNS = 60


def option_lines(backend, indent: str = "    ") -> list:
    """The lines ``privfair backends`` prints under ``backend``: its declared option table
    (name, type, range, default, one-line doc; the doc wrapped under its column), else the
    option names it declares, else a note that it declares none."""
    from ..util.tables import text_table
    from ..util.text import wrap
    from ..backends.options import rows

    table = getattr(backend, "option_table", None)
    if table is None:
        names = getattr(backend, "option_names", None)
        if names is None:
            return [indent + "options: not declared (any option is passed on unchecked)"]
        public = [n for n in names if not n.startswith("_")]
        return [line for line in wrap(
            indent + "options: " + (", ".join(public) or "none")
            + (" (names only: no table of types, ranges and defaults yet)" if public else ""),
            continuation=indent + "  ")]
    rs = rows(table)
    if not rs:
        return [indent + "options: none"]
    left = text_table(OPTION_COLUMNS[:4], [r[:4] for r in rs])
    width = len(indent) + max(map(len, left)) + 2
    out = []
    for cells, doc in zip(left, [OPTION_COLUMNS[4]] + [r[4] for r in rs]):
        if width <= WIDE_COLUMNS:         # the doc in a fifth column, wrapped under it
            line = indent + cells.ljust(width - len(indent))
            out += wrap(line + doc, continuation=" " * width) if doc else [line.rstrip()]
        else:                             # long ranges or defaults: the doc on its own lines
            out.append(indent + cells)
            if doc and cells is not left[0]:
                out += wrap(indent * 2 + doc, continuation=indent * 2)
    return out


def options_markdown(backends) -> list:
    """Markdown of every backend's options (``privfair backends --markdown``; docs/backends.md
    embeds it), in registry priority order: per backend its priority and the reason for it
    (:func:`priority_line`), then a table per backend with a declared table, a pointer to
    ``privfair backends`` otherwise (a names-only declaration changes too often to pin in a
    page)."""
    from ..util.tables import markdown_table
    from ..backends.options import rows

    out = []
    for name, b in backends.items():
        table = getattr(b, "option_table", None)
        out += ["", f"### `{name}`", "", "P" + priority_line(name)[1:] + ".", ""]
        if table is not None and rows(table):
            out += markdown_table(OPTION_COLUMNS, [(f"`{r[0]}`",) + tuple(r[1:])
                                                   for r in rows(table)])
        elif table is not None:
            out.append("No options: every option is refused.")
        else:          # names only: listed by `privfair backends`, not pinned in the docs
            out.append("No option table yet: `privfair backends` lists the option names it "
                       "takes." if getattr(b, "option_names", None) is not None else
                       "Options not declared.")
    return out[1:]


def _cmd_demo(args) -> int:
    from .demo import run_demo

    run_demo(epsilon=args.epsilon, constraint=args.constraint, seed=args.seed,
             subsample=args.subsample)
    return EXIT_OK


def _cmd_solve(args) -> int:
    import privfair as pf

    from ..backends import get
    from ..reports.metrics import format_metrics, metrics_rows

    if args.backend != "auto":
        get(args.backend)                 # an unknown name fails before the file is loaded
    _check_outputs(args.problem, [("--certificate", args.certificate), ("--report", args.report)])
    _check_writable(args.certificate, "--certificate")
    _check_writable(args.report, "--report")
    problem, test = load_problem_file(args.problem)
    train = problem.rates.data
    privacy = _privacy(args, problem)
    t0 = time.perf_counter()
    print(f"privfair {pf.__version__} — solving {args.problem} ({train.n} rows, groups "
          f"{train.groups}); privacy: ε={privacy.epsilon:g}, δ={privacy.delta:.3g}, "
          f"protect={privacy.protect!r}\n")
    print(problem, "\n")
    plans = problem.plan(privacy, backend=args.backend, alpha=args.alpha)
    print(plans.explain(), "\n")
    result = problem.solve(privacy, backend=args.backend, seed=args.seed,
                           progress=_show_progress(args), alpha=args.alpha,
                           holdout=args.holdout)
    print(result.certificate, "\n")
    print(status_lines(result), "\n")
    if "note" in result.info:
        print("note:", result.info["note"], "\n")
    rows = metrics_rows(result, train, test, privacy)
    print(f"backend: {result.backend}   ({time.perf_counter() - t0:.1f} s)")
    print(format_metrics(rows))
    if args.certificate:
        _write(args.certificate, result.certificate.to_markdown() + "\n")
        print(f"certificate written to {args.certificate}")
    if args.report:
        _write(args.report, _solve_page(args, problem, privacy, plans, result, test, rows))
        print(f"report written to {args.report}")
    return EXIT_OK


def _solve_page(args, problem, privacy, plans, result, test, rows) -> str:
    """The ``--report`` page of ``privfair solve``, rendered by
    :func:`privfair.reports.render.solve_page` (the one HTML renderer)."""
    from ..reports.render import solve_page

    rep, note = full_report(problem, privacy, args.alpha, measure=False, result=result,
                            test=test)
    return solve_page(f"privfair solve — {pathlib.Path(args.problem).name}", problem, plans,
                      result, rows, report=rep, note=note)


def _cmd_report(args) -> int:
    _check_outputs(args.problem, [("--output", args.output)])
    _check_writable(args.output, "--output")
    problem, test, rebuild = load_problem_file(args.problem, with_rebuild=True)
    privacy = _privacy(args, problem)
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
            from ..reports.render import report_page

            page = report_page(f"privfair report — {pathlib.Path(args.problem).name}",
                               problem, plans, report=rep, note=note)
        else:
            page = text + "\n"
        _write(args.output, page)
        print(f"report written to {args.output}")
    return EXIT_OK


# --------------------------------------------------------------------------- audit
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
    import textwrap

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


def _cmd_audit(args) -> int:
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
    for inst in audit_instances(backend.name):
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
    progress = _show_progress(args)
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


# --------------------------------------------------------------------------- parser
def _add_privacy_flags(p, epsilon_required):
    if epsilon_required:
        p.add_argument("--epsilon", type=_epsilon, required=True,
                       help="privacy budget ε (> 0; 'inf' gives a non-private reference run)")
    else:
        p.add_argument("--epsilon", type=_epsilon, default=1.0, help="privacy budget ε (default 1)")
    p.add_argument("--delta", type=_delta, default=None,
                   help="δ (default 1/n² for n training rows; 0 for pure DP)")
    p.add_argument("--protect", choices=["sensitive", "row"], default="sensitive",
                   help="neighbouring relation: one row's sensitive attribute (default) or one "
                        "whole row")
    p.add_argument("--alpha", type=_positive_float, default=0.05,
                   help="target accuracy α: sets the penalty G and iteration counts (default 0.05)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="privfair", description="Private fair optimization with proven DP. "
                     "Exit codes: 0 ok, 1 audit verdict not as expected or internal error, "
                     "2 usage or input error.")
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("solve", help="solve a PROBLEM.py privately: plan, certificate, metrics",
                       description="Load PROBLEM.py (a Python file defining `problem`, a "
                       "pf.Problem, or `build()` returning one, and optionally `test`, a "
                       "pf.Dataset), solve it privately and print the plan, the privacy "
                       "certificate and the metrics (train, and test if given).")
    s.add_argument("problem", metavar="PROBLEM.py", help="the problem file")
    _add_privacy_flags(s, epsilon_required=True)
    s.add_argument("--backend", default="auto",
                   help="'auto' (smallest predicted risk) or a name from 'privfair backends'")
    s.add_argument("--seed", type=_seed, default=None,
                   help="seed for a reproducible run (not for real releases)")
    s.add_argument("--certificate", metavar="OUT.md", default=None,
                   help="also write the privacy certificate as Markdown")
    s.add_argument("--report", metavar="OUT.html", default=None,
                   help="also write a self-contained HTML page (analysis, plan, certificate, "
                        "metrics)")
    s.add_argument("--holdout", type=_fraction, default=0.2, metavar="F",
                   help="fraction of the rows held out of training for the out-of-sample check "
                        "(default 0.2; 0: none; see docs/trust.md)")
    s.add_argument("--no-progress", action="store_true", help="no progress bars")
    s.set_defaults(func=_cmd_solve)

    r = sub.add_parser("report", help="the analysis and the plan ranking of a PROBLEM.py "
                       "(spends nothing)",
                       description="Print what the compiler proves about PROBLEM.py, the "
                       "planner's ranking of the backends with their theorem bounds and, when "
                       "privfair.reports.report is installed, the sample-complexity report (n needed "
                       "for α, lower bounds).  Spends no privacy budget and releases nothing "
                       "computed from the private data (unless --measure).")
    r.add_argument("problem", metavar="PROBLEM.py", help="the problem file")
    _add_privacy_flags(r, epsilon_required=False)
    r.add_argument("--output", metavar="FILE", default=None,
                   help="also write the report (HTML if FILE ends in .html, else text)")
    r.add_argument("--beta", type=_positive_float, default=0.05,
                   help="failure probability shown with the bounds (default 0.05)")
    r.add_argument("--measure", action="store_true",
                   help="also run the backends and measure their excess risk (on subsamples "
                        "rebuilt by PROBLEM.py's rebuild(data), else on the full data); the "
                        "measurement reads the data non-privately: for the analyst, not for "
                        "release")
    r.add_argument("--seeds", type=_positive_int, default=3,
                   help="runs per measured point (default 3)")
    r.set_defaults(func=_cmd_report)

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
    a.add_argument("--epsilon", type=_epsilon, default=1.0, help="ε to run at (default 1)")
    a.add_argument("--delta", type=_delta, default=None,
                   help="δ to run at (default: the instance's, listed below — 0, or 0.1 for "
                        "the Gaussian instances of sgda and lagrangian_sgda: a loss above ε at "
                        "δ = 1e-5 lives on events too rare for ~10^3 runs)")
    a.add_argument("--runs", type=_positive_int, default=None,
                   help="solves on each dataset per condition (default: the backend's, "
                        "listed below)")
    a.add_argument("--seed", type=_seed, default=0, help="seed of the runs (default 0)")
    a.add_argument("--z", type=_positive_float, default=4.0,
                   help="confidence: a claim is refuted only when the empirical ε lower "
                        "bound, at level 1 − Φ(−z) in each direction, exceeds it (default 4)")
    a.add_argument("--negative-control", action="store_true",
                   help="also run the negative controls — the backend with half its noise "
                        "and at 2ε — against the same "
                        "claim: the tester should refute them")
    a.add_argument("--no-progress", action="store_true", help="no progress bars")
    a.set_defaults(func=_cmd_audit)

    b = sub.add_parser("backends", help="list the registered backends, their theorems, "
                       "priorities and options",
                       description="List the registered backends in registry priority order "
                       "with the theorem each one's privacy proof and risk bound come from, its "
                       "priority and the reason for it (backend='auto' ranks plans by rank, "
                       "then predicted excess risk, then this priority), and the solve options "
                       "each takes (problem.solve(..., backend=NAME, OPTION=value)): type, "
                       "range, default and what it does.")
    b.add_argument("--markdown", action="store_true",
                   help="print the options as Markdown tables (docs/backends.md embeds them)")
    b.set_defaults(func=_cmd_backends)

    d = sub.add_parser("datasets", help="list the bundled datasets",
                       description="List the bundled datasets.")
    d.set_defaults(func=_cmd_datasets)

    p = sub.add_parser("demo", help="private fair fit on bundled Adult: analysis, certificate, "
                       "metrics", description="The main job: a private fair fit on the bundled "
                       "UCI Adult data.")
    p.add_argument("--epsilon", type=_epsilon, default=1.0, help="privacy budget ε (default 1)")
    p.add_argument("--constraint", choices=["equalized_odds", "demographic_parity"],
                   default="equalized_odds")
    p.add_argument("--seed", type=_seed, default=None, help="seed for a reproducible run")
    p.add_argument("--subsample", type=_subsample, default=None,
                   help=f"use only this many training rows (at least {MIN_SUBSAMPLE})")
    p.set_defaults(func=_cmd_demo)
    return parser


def _version():
    from .. import __version__

    return f"privfair {__version__}"


def main(argv=None) -> int:
    """Run the command line; returns the exit code (argparse errors raise SystemExit(2))."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (CommandError, PrivfairError) as exc:
        print(f"privfair: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("privfair: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # never a traceback unless asked for
        if os.environ.get("PRIVFAIR_TRACEBACK"):
            raise
        print(f"privfair: error: internal error ({type(exc).__name__}: {_one_line(exc)}); "
              "set PRIVFAIR_TRACEBACK=1 for the traceback and please report it", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""The ``privfair`` command line: the parser and :func:`main` (the console script
``privfair.cli.commands:main``).  Each command lives in its own module, which declares its flags
(``add_parser``) and runs it: :mod:`.solve`, :mod:`.report_cmd`, :mod:`.audit_cmd`,
:mod:`.listings` (``backends``, ``datasets``), :mod:`.demo`; the shared pieces are :mod:`.args`
(argument types, privacy flags), :mod:`.files` (PROBLEM.py, output files) and :mod:`.errors`.

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
import os
import sys

from .. import __version__
from ..errors import PrivfairError
from . import audit_cmd, demo, listings, report_cmd, solve
from .errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, CommandError, one_line

# the names code written before the split imported from this module (tests, scripts): each
# lives in its command's module now and is re-exported here so those imports keep working
from .audit_cmd import audit_doc, audit_pair  # noqa: F401
from .errors import EXIT_OK  # noqa: F401
from .files import load_problem_file  # noqa: F401
from .listings import OPTION_COLUMNS, option_lines, options_markdown, priority_line  # noqa: F401


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``privfair: error: MESSAGE (see 'privfair X --help')``."""

    def error(self, message):  # noqa: D401 - argparse API
        hint = f" (see '{self.prog} --help')"
        self.exit(EXIT_USAGE, f"privfair: error: {one_line(message)}{hint}\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``privfair`` parser: the top-level flags here, each command's own flags registered by
    its module (``add_parser``), in the order ``privfair --help`` lists them."""
    parser = _Parser(prog="privfair", description="Private fair optimization with proven DP. "
                     "Exit codes: 0 ok, 1 audit verdict not as expected or internal error, "
                     "2 usage or input error.")
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    solve.add_parser(sub)
    report_cmd.add_parser(sub)
    audit_cmd.add_parser(sub)
    listings.add_parsers(sub)
    demo.add_parser(sub)
    return parser


def _version():
    return f"privfair {__version__}"


def main(argv=None) -> int:
    """Run the command line; returns the exit code (argparse errors raise SystemExit(2))."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (CommandError, PrivfairError) as exc:
        print(f"privfair: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("privfair: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # never a traceback unless asked for
        if os.environ.get("PRIVFAIR_TRACEBACK"):
            raise
        print(f"privfair: error: internal error ({type(exc).__name__}: {one_line(exc)}); "
              "set PRIVFAIR_TRACEBACK=1 for the traceback and please report it", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

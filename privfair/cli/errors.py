"""The command line's errors and exit codes (``docs/cli.md``, "Exit codes and errors"): a
:class:`CommandError` is a user-facing error, printed as one line (:func:`one_line`) with exit
code 2 by :func:`privfair.cli.commands.main`."""

from __future__ import annotations


#: exit codes (documented in the module docstring and docs/cli.md)
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class CommandError(Exception):
    """A user-facing error of the command line: printed as one line, exit code 2."""


def one_line(text) -> str:
    return " ".join(str(text).split())

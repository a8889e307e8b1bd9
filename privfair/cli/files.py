"""The files a command reads and writes: the PROBLEM.py convention (:func:`load_problem_file`;
``docs/cli.md``) and the output files, checked before any budget is spent (:func:`check_outputs`,
:func:`check_writable`) and written with a one-line error (:func:`write_text`)."""

from __future__ import annotations

import os
import pathlib
import runpy
import sys

from ..analysis.problem import Problem
from ..data.dataset import Dataset
from ..errors import PrivfairError
from .errors import CommandError


def load_problem_file(path, with_rebuild=False):
    """Load a PROBLEM.py file: ``(problem, test or None)``, and its ``rebuild`` (or None) when
    ``with_rebuild``; see the module docstring.

    Raises :class:`CommandError` (one line, naming the file) when the file is missing, is not
    Python, fails to run, or defines no problem.
    """
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


def check_outputs(problem_path, outputs):
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


def check_writable(path, flag):
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


def write_text(path, text):
    try:
        pathlib.Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None

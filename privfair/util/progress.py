"""Progress bars: on a terminal, never in a log, unless asked for.

``progress`` (``Problem.solve(progress=...)``, and every backend's ``run``) means:

* ``True`` (the default): a bar on stderr for a step that can take more than a few seconds,
  *only* when stderr is a terminal (or a Jupyter kernel) — a log file, a pipe or a CI job gets
  no bar fragments;
* ``"always"``: the bar even when stderr is not a terminal;
* ``False``: never a bar.

:func:`default_progress` sets, for the duration of a solve, the value that code without a
``progress`` argument of its own reads (e.g. the Monte-Carlo Gaussian width a plan computes).
"""

from __future__ import annotations

import contextlib
import contextvars
import sys

from ..errors import InvalidInputError

ALWAYS = "always"
_DEFAULT = contextvars.ContextVar("privfair_progress", default=True)


def check_progress(progress):
    """``progress`` itself when it is True, False or "always"; InvalidInputError otherwise."""
    if isinstance(progress, str) and progress == ALWAYS:
        return progress
    if progress is True or progress is False or (
            type(progress).__name__ == "bool_" and progress in (True, False)):
        return bool(progress)
    raise InvalidInputError("progress", progress,
                            "pass True (a bar on long runs when stderr is a terminal), "
                            "'always' (also into logs) or False (never)")


def _interactive(stream) -> bool:
    try:
        if stream is not None and stream.isatty():
            return True
    except (AttributeError, ValueError, OSError):
        pass
    if "IPython" in sys.modules:          # a notebook's stderr is no tty, but shows bars
        try:
            ip = sys.modules["IPython"].get_ipython()
            return ip is not None and "IPKernelApp" in getattr(ip, "config", {})
        except Exception:  # noqa: BLE001 - no kernel: not interactive
            return False
    return False


def wanted(progress=None) -> bool:
    """Whether to draw a bar: ``progress`` resolved as the module docstring says (None: the
    value :func:`default_progress` set, True outside any)."""
    p = _DEFAULT.get() if progress is None else check_progress(progress)
    if p == ALWAYS:
        return True
    return bool(p) and _interactive(sys.stderr)


@contextlib.contextmanager
def default_progress(progress):
    """Within the block, ``wanted()`` without an argument resolves ``progress``."""
    token = _DEFAULT.set(check_progress(progress))
    try:
        yield
    finally:
        _DEFAULT.reset(token)


class _NoBar:
    """What :func:`bar` returns when no bar is drawn: iterates, ignores tqdm's methods."""

    def __init__(self, iterable):
        self._it = iterable

    def __iter__(self):
        return iter(self._it)

    def __len__(self):
        return len(self._it)

    def set_postfix(self, *a, **k):
        pass

    set_postfix_str = set_description = update = refresh = close = set_postfix


def bar(iterable, desc: str, progress=None, min_steps: int = 0, total=None):
    """``iterable`` with a tqdm bar on stderr when :func:`wanted` and it has at least
    ``min_steps`` steps; otherwise an object that iterates the same and ignores bar calls."""
    n = total if total is not None else (len(iterable) if hasattr(iterable, "__len__") else None)
    if not wanted(progress) or (n is not None and n < min_steps):
        return _NoBar(iterable)
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return _NoBar(iterable)
    return tqdm(iterable, desc=desc, total=n, leave=False, file=sys.stderr)

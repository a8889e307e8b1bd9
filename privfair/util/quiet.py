"""Silence what native solvers write straight to the process's standard output.

HiGHS (cvxpy's ``solver=cp.HIGHS``) prints "Running HiGHS ... Copyright ..." from C++ to file
descriptor 1 when it starts, whatever ``output_flag`` says, so every ``cells`` solve put two
lines of banner into the user's output.  :func:`native_stdout_silenced` points descriptor 1 at
the null device for the duration of a call and restores it afterwards (also on error); Python's
``sys.stdout`` is flushed first, so nothing the program printed before is lost or reordered.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

_LOCK = threading.RLock()      # descriptor 1 is process-wide: one redirection at a time


def _flush_c_stdio():
    """fflush(NULL): push out anything the native library buffered before descriptor 1 returns."""
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except Exception:  # noqa: BLE001 - no libc to flush (e.g. Windows): nothing buffered to lose
        pass


@contextlib.contextmanager
def native_stdout_silenced():
    """Within the block, writes to file descriptor 1 go to ``os.devnull``.

    Where descriptor 1 cannot be duplicated (closed, or a platform without it) the block runs
    unchanged."""
    with _LOCK:
        try:
            if sys.stdout is not None:
                sys.stdout.flush()
        except (OSError, ValueError):
            pass
        try:
            saved = os.dup(1)
        except OSError:
            saved = None
        if saved is None:
            yield
            return
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, 1)
            finally:
                os.close(devnull)
            yield
        finally:
            _flush_c_stdio()
            os.dup2(saved, 1)
            os.close(saved)

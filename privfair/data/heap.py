"""A steady heap for the duration of a pass on a Dask worker (#19).

A pass allocates and frees the same per-chunk temporaries (the logits, the residuals, the
chunk's partial sums: a few hundred KiB each) once per chunk.  A Dask nanny starts its workers
with ``MALLOC_TRIM_THRESHOLD_=65536`` (``distributed.nanny.pre-spawn-environ``), so that freed
memory goes back to the operating system at once.  That setting also fixes glibc's
``mmap`` threshold at 128 KiB.  Between two chunks, every temporary is then unmapped (or the
heap's top trimmed) and faulted back in by the next chunk: measured on a worker, 10⁶ × 20
float32 rows, the cast and arithmetic of one partition took 23–37 ms against 14–16 ms in a
worker started without the variable (docs/scale.md).

:func:`steady_heap` raises both thresholds while a pass runs and restores the nanny's values
afterwards, then calls ``malloc_trim(0)``: the memory the pass freed still goes back to the
system, once per pass instead of once per chunk.  It acts only where the variable is set (a
nanny's worker: the dynamic thresholds are already off, so restoring the variable's values
restores the process exactly) and the C library is glibc; elsewhere it does nothing.
Process-wide settings: a count of the passes running (a worker with several threads) keeps
them raised until the last one ends.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import threading

__all__ = ["steady_heap"]

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3      # glibc's mallopt parameters
_MMAP_DEFAULT = 128 * 1024                         # glibc's fixed threshold (no dynamic one)
_MMAP_MAX = 32 * 1024 * 1024                       # glibc's largest mmap threshold (64-bit)
_TRIM_STEADY = 1 << 30

_lock = threading.Lock()
_active = 0
_libc = None


def _glibc():
    """glibc's handle with ``mallopt`` and ``malloc_trim``, or None (another C library)."""
    global _libc
    if _libc is None:
        _libc = False
        name = ctypes.util.find_library("c")
        try:
            lib = ctypes.CDLL(name or "libc.so.6")
            lib.mallopt.argtypes, lib.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
            lib.malloc_trim.argtypes, lib.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
            _libc = lib
        except (OSError, AttributeError):
            pass
    return _libc or None


def _env_int(name):
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None


@contextlib.contextmanager
def steady_heap():
    """Keep freed per-chunk memory in the heap while the block runs (a pass), then return it
    to the system; a no-op unless ``MALLOC_TRIM_THRESHOLD_`` is set and the C library is glibc.

    Examples
    --------
    >>> import numpy as np
    >>> with steady_heap():
    ...     total = sum(float(np.ones(50_000).sum()) for _ in range(3))
    >>> total
    150000.0
    """
    global _active
    trim = _env_int("MALLOC_TRIM_THRESHOLD_")
    lib = _glibc() if trim is not None else None
    if lib is None:
        yield
        return
    with _lock:
        if _active == 0:
            lib.mallopt(_M_TRIM_THRESHOLD, _TRIM_STEADY)
            lib.mallopt(_M_MMAP_THRESHOLD, _MMAP_MAX)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                mmap = _env_int("MALLOC_MMAP_THRESHOLD_")
                lib.mallopt(_M_MMAP_THRESHOLD, _MMAP_DEFAULT if mmap is None else mmap)
                lib.mallopt(_M_TRIM_THRESHOLD, trim)
                lib.malloc_trim(0)

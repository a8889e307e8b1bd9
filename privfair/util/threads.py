"""BLAS threads: a context that runs numpy's linear algebra on one thread.

Why (#19): the backends' products are small — a Newton Hessian over d ≤ ~200 columns
(``backends.cells``), one Poisson batch times θ a step (``backends.lagrangian``) — and on a
loaded machine OpenBLAS's extra threads spin-wait for cores: a 16,000 × 102 product cost 7.5 ms
of CPU on two threads against 0.37 ms on one.  Threads change nothing but the float summation
order, so results no longer depend on the thread count either.
"""

from __future__ import annotations

import sys

from threadpoolctl import ThreadpoolController

#: (len(sys.modules), controller) of the last scan of the loaded BLAS libraries
_SCAN: list = [None, None]


def _controller() -> ThreadpoolController:
    """threadpoolctl's view of the loaded BLAS libraries, rescanned only when a module was
    imported since the last scan.  ``threadpool_limits`` rescans on every call — it reads
    /proc/self/maps, ~3 ms, half of a small solve's held-out check (a neighbouring-dataset test
    runs thousands) — and libraries arrive with imports (numpy's, scipy's, torch's).  A
    library loaded without an import would go unlimited: its products would run on more
    threads, with the same results up to summation order."""
    if _SCAN[0] != len(sys.modules):
        _SCAN[1] = ThreadpoolController()
        _SCAN[0] = len(sys.modules)
    return _SCAN[1]


def blas_single_thread():
    """A context limiting BLAS to one thread (threadpoolctl).

    Examples
    --------
    >>> import numpy as np
    >>> with blas_single_thread():
    ...     float(np.ones((3, 3)) @ np.ones(3) @ np.ones(3))
    9.0
    """
    return _controller().limit(limits=1, user_api="blas")

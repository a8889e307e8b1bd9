"""BLAS threads: a context that runs numpy's linear algebra on one thread.

Why (#19): the backends' products are small — a Newton Hessian over d ≤ ~200 columns
(``backends.cells``), one Poisson batch times θ a step (``backends.lagrangian``) — and on a
loaded machine OpenBLAS's extra threads spin-wait for cores: a 16,000 × 102 product cost 7.5 ms
of CPU on two threads against 0.37 ms on one.  Threads change nothing but the float summation
order, so results no longer depend on the thread count either.
"""

from __future__ import annotations

from threadpoolctl import threadpool_limits


def blas_single_thread():
    """A context limiting BLAS to one thread (threadpoolctl).

    Examples
    --------
    >>> import numpy as np
    >>> with blas_single_thread():
    ...     float(np.ones((3, 3)) @ np.ones(3) @ np.ones(3))
    9.0
    """
    return threadpool_limits(1, user_api="blas")

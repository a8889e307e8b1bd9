"""privfair.util.threads: one BLAS thread inside the context, the caller's threads after it, and
the loaded libraries scanned once per set of imported modules (threadpoolctl's
``threadpool_limits`` rescans /proc/self/maps on every call: ~3 ms a solve)."""

import sys
import types

import numpy as np
from threadpoolctl import threadpool_info

import privfair.util.threads as threads


def _blas_threads():
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_one_blas_thread_inside_and_the_callers_threads_after():
    before = _blas_threads()
    assert before, "numpy's BLAS is loaded"
    with threads.blas_single_thread():
        assert set(_blas_threads()) == {1}
        assert float(np.ones((4, 4)) @ np.ones(4) @ np.ones(4)) == 16.0
    assert _blas_threads() == before


def test_the_libraries_are_rescanned_only_after_an_import(monkeypatch):
    scans = []
    real = threads.ThreadpoolController

    def counting():
        scans.append(1)
        return real()

    monkeypatch.setattr(threads, "ThreadpoolController", counting)
    monkeypatch.setitem(sys.modules, "privfair_test_fresh_import", types.ModuleType("x"))
    for _ in range(3):
        with threads.blas_single_thread():
            pass
    assert len(scans) == 1                        # one scan for three contexts
    monkeypatch.setitem(sys.modules, "privfair_test_another_import", types.ModuleType("y"))
    with threads.blas_single_thread():
        assert set(_blas_threads()) == {1}
    assert len(scans) == 2                        # a new module: scanned again

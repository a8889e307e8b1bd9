"""privfair.data.heap.steady_heap: a pass on a Dask nanny's worker keeps its per-chunk
temporaries in the heap (#19).

The nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``; glibc then unmaps every freed
block above 128 KiB at once, and the next chunk's temporaries fault their pages back in.  The
tests run a child Python with that variable set (glibc reads it at start-up, and the
allocator's settings are process-wide: the test process's own are left alone) and count the
minor page faults of 200 allocations of 400 KB."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import textwrap

import pytest

from privfair.data.heap import steady_heap

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
    reason="steady_heap acts on glibc's allocator only (a no-op elsewhere)")

CHILD = textwrap.dedent("""
    import json, resource
    import numpy as np
    from privfair.data.heap import steady_heap

    def churn(k=200):
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(k):
            a = np.ones(50_000)          # 400 KB, as a chunk's logits
            del a
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0

    out = {"before": churn()}
    with steady_heap():
        out["inside"] = churn()
    out["after"] = churn()
    outer = steady_heap()
    outer.__enter__()
    with steady_heap():                  # a second pass on another thread of the worker
        pass
    out["outer_still"] = churn()         # the first pass still runs: thresholds still raised
    outer.__exit__(None, None, None)
    out["after_both"] = churn()
    try:
        with steady_heap():
            raise RuntimeError("a pass that fails")
    except RuntimeError:
        pass
    out["after_error"] = churn()
    print(json.dumps(out))
""")


def _child(env_extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env.update(env_extra)
    p = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_a_nanny_worker_churns_pages_without_it_and_not_inside_it():
    out = _child({"MALLOC_TRIM_THRESHOLD_": "65536"})
    # the negative control: under the nanny's setting every 400 KB block is faulted in again
    # (~98 pages each)
    assert out["before"] > 200 * 50
    assert out["inside"] < out["before"] / 20
    assert out["outer_still"] < out["before"] / 20
    # the nanny's settings are back afterwards (memory returned to the system again), also
    # after the last of two overlapping passes and after a pass that raised
    for k in ("after", "after_both", "after_error"):
        assert out[k] > out["before"] / 2, (k, out)


def test_without_the_nanny_setting_it_changes_nothing():
    out = _child({})
    # glibc's dynamic threshold keeps the blocks: no churn before, inside or after
    assert max(out.values()) < 200 * 50 / 20, out


def test_it_is_transparent_in_this_process():
    import numpy as np

    with steady_heap():
        x = np.arange(10.0).sum()
    assert x == 45.0


"""Solvers print nothing of their own (issue #20: "the HiGHS banner goes to stdout on every
``cells`` solve").  HiGHS writes its banner from C++ to descriptor 1 whatever cvxpy's
``output_flag`` says, once per process, so these tests read the descriptor of a fresh process
or capture it (capfd), not sys.stdout."""

import os
import subprocess
import sys

import pytest

from privfair.util.quiet import native_stdout_silenced


CELLS = """
import privfair as pf
data = pf.datasets.load_adult("train").subsample(1500, rng=0)
r = pf.rates(pf.ProxyCells(6, 3), data)
prob = pf.Problem(pf.minimize(r.error()),
                  [pf.abs(r.selection["Female"] - r.selection["Male"]) <= 0.05])
res = prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend="cells", seed=0, progress=False)
assert res.backend == "cells"
"""


def test_cells_solve_prints_nothing():
    # HiGHS prints its banner once per process: a fresh one sees it if it is not silenced
    proc = subprocess.run([sys.executable, "-c", CELLS], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "", proc.stdout
    assert "HiGHS" not in proc.stderr


def test_highs_banner_is_silenced_and_descriptor_restored(capfd):
    cp = pytest.importorskip("cvxpy")
    if cp.HIGHS not in cp.installed_solvers():
        pytest.skip(reason="HiGHS is not installed")
    from privfair.backends.cells.cells import solve_any

    x = cp.Variable(2)
    status = solve_any(cp.Problem(cp.Minimize(cp.sum(x)), [x >= 0, cp.sum(x) >= 1]))
    assert status == "optimal"
    assert capfd.readouterr().out == ""
    # descriptor 1 is back: what is written after the block arrives, in order
    with native_stdout_silenced():
        os.write(1, b"lost\n")
    os.write(1, b"kept\n")
    print("printed")
    assert capfd.readouterr().out == "kept\nprinted\n"

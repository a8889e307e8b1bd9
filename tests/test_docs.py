"""The runnable code of the README and the quickstart runs as printed.

Why: these are the first code a user copies; an API change that breaks them should fail here,
not in a user's terminal.  Blocks of one page run in order in one namespace (a tutorial builds
on its earlier steps).  Other pages' snippets are fragments (``X_train``, ``backend.run(...)``)
and are covered by the examples and the modules' doctests instead.
"""

import os
import re

import numpy as np
import pytest

ROOT = os.path.join(os.path.dirname(__file__), os.pardir)


def python_blocks(page):
    with open(os.path.join(ROOT, page), encoding="utf-8") as fh:
        return re.findall(r"```python\n(.*?)```", fh.read(), re.S)


def run_page(page, blocks):
    ns = {}
    for i, code in enumerate(blocks):
        exec(compile(code, f"{page}, python block {i}", "exec"), ns)
    return ns


def test_readme_first_problem_runs(capsys):
    ns = run_page("README.md", python_blocks("README.md")[:1])
    out = capsys.readouterr().out
    assert "Analysis" in out and "sensitivity of h" in out
    # the compiler's bound on ‖Δℓ‖₁ under a move between groups is the README's 2/(n·q)-type
    # figure: positive and far below 1 on 30,162 rows
    assert 0 < ns["prob"].analyze(ns["pf"].DP(1, 1e-9, protect="sensitive")).delta_l("l1") < 0.01


def test_quickstart_runs_end_to_end(capsys):
    blocks = python_blocks("docs/quickstart.md")
    assert len(blocks) >= 4, "the quickstart's steps 1, 3, 4, 5 are python blocks"
    ns = run_page("docs/quickstart.md", blocks)
    result, privacy = ns["result"], ns["privacy"]
    assert result.certificate.epsilon <= privacy.epsilon * (1 + 1e-9)
    m = result.metrics(ns["test"])
    assert 0 < m["error"] < 0.5
    p = result.predict_proba(ns["test"].X)
    assert p.shape == (ns["test"].n,) and np.all((0 <= p) & (p <= 1))


def test_cli_problem_file_defines_a_problem():
    import privfair as pf

    blocks = [b for b in python_blocks("docs/cli.md") if b.startswith("# problem.py")]
    assert blocks, "docs/cli.md shows the problem file the CLI loads"
    ns = run_page("docs/cli.md", blocks)
    assert isinstance(ns["problem"], pf.Problem)


@pytest.mark.parametrize("page", ["README.md", "docs/quickstart.md", "docs/cli.md"])
def test_pages_have_blocks(page):
    # a page reorganised so that its code is no longer a ```python block would make the tests
    # above pass vacuously
    assert python_blocks(page)

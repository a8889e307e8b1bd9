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


def _blocks(text):
    return re.findall(r"```python\n(.*?)```", text, re.S)


def python_blocks(page):
    with open(os.path.join(ROOT, page), encoding="utf-8") as fh:
        return _blocks(fh.read())


FROM_FAIRLEARN = "## 6. From fairlearn"


def quickstart_blocks():
    """(the quickstart's blocks outside its 'From fairlearn' section, that section's blocks):
    the section needs the dev extras fairlearn and scikit-learn, the rest of the page does not."""
    with open(os.path.join(ROOT, "docs/quickstart.md"), encoding="utf-8") as fh:
        text = fh.read()
    head, found, tail = text.partition(FROM_FAIRLEARN)
    assert found, f"docs/quickstart.md has a section {FROM_FAIRLEARN!r}"
    section, sep, rest = tail.partition("\n## ")
    return _blocks(head) + _blocks(sep + rest), _blocks(section)


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


@pytest.fixture(scope="module")
def quickstart():
    """The quickstart's namespace after its blocks outside 'From fairlearn' ran (once)."""
    blocks, _ = quickstart_blocks()
    assert len(blocks) >= 4, "the quickstart's steps 1, 3, 4, 5 are python blocks"
    return run_page("docs/quickstart.md", blocks)


def test_quickstart_runs_end_to_end(quickstart):
    ns = quickstart
    result, privacy = ns["result"], ns["privacy"]
    assert result.certificate.epsilon <= privacy.epsilon * (1 + 1e-9)
    m = result.metrics(ns["test"])
    assert 0 < m["error"] < 0.5
    p = result.predict_proba(ns["test"].X)
    assert p.shape == (ns["test"].n,) and np.all((0 <= p) & (p <= 1))


def test_quickstart_from_fairlearn_runs_both_sides(quickstart, capsys):
    """The side-by-side section: fairlearn's ExponentiatedGradient and privfair on the same task,
    both run as printed, scored with the same calls (#20)."""
    pytest.importorskip("fairlearn", reason="fairlearn is a dev extra")
    pytest.importorskip("sklearn", reason="scikit-learn is a dev extra")
    _, section = quickstart_blocks()
    assert len(section) >= 3, "fairlearn's block, privfair's block and the scoring block"
    assert any("ExponentiatedGradient" in b for b in section)
    ns = dict(quickstart)                 # the section builds on steps 1-5
    for i, code in enumerate(section):
        exec(compile(code, f"docs/quickstart.md, From fairlearn, python block {i}", "exec"), ns)
    out = capsys.readouterr().out
    assert "fairlearn  test error" in out and "privfair   test error" in out
    prob, test = ns["dp_prob"], ns["test"]
    assert prob.status == "solved" and prob.value == None            # private: no value # noqa: E711
    assert ns["dp_result"].certificate.epsilon <= 1.0 * (1 + 1e-9)
    assert ns["ref_prob"].status == "solved" and 0 < ns["ref_prob"].value < 0.5
    for y_hat in (ns["y_fl"], ns["y_pf"]):
        assert y_hat.shape == (test.n,) and set(np.unique(y_hat)) <= {0, 1}
    assert 0 < prob.value_on(test) < 0.5


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

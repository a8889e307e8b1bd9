"""Every ```python block of the README and of docs/*.md runs as printed.

Why: these are the first code a user copies; an API change that breaks them should fail here,
not in a user's terminal.  Blocks of one page run in order in one namespace (a tutorial builds
on its earlier steps), in a temporary working directory (pages save reports).

A block that is not meant to run — a signature listing, a sketch of a backend's internals, an
error transcript — is preceded by an HTML comment naming why, invisible on the rendered page::

    <!-- no-run: a sketch of a backend's run(), not a program -->
    ```python
    ...

Keep those few: a snippet a user can copy should run.  :data:`KNOWN_BROKEN` lists the blocks of
pages this test's owner does not maintain that do not run today (each a strict xfail: a fixed
block must be removed from it).
"""

import os
import re

import numpy as np
import pytest

ROOT = os.path.join(os.path.dirname(__file__), os.pardir)


NO_RUN = re.compile(r"<!--\s*no-run:\s*(?P<why>[^>]*?)\s*-->\s*\n```python\n", re.S)


def _blocks(text):
    """The runnable ```python blocks of a page (those not marked no-run), in order."""
    skipped = {m.end() for m in NO_RUN.finditer(text)}
    return [m.group(1) for m in re.finditer(r"```python\n(.*?)```", text, re.S)
            if m.start() + len("```python\n") not in skipped]


def no_run_blocks(text):
    """(reason, code) of the blocks marked no-run."""
    out = []
    for m in NO_RUN.finditer(text):
        code = text[m.end():text.index("```", m.end())]
        out.append((m.group("why"), code))
    return out


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
    # #20: the README said ‖Δℓ‖₁ ≤ 2/n while the analysis printed 0.003382; the text now quotes
    # the printed number and its formula 2/n + 2/(n·q), with the n it is computed at
    printed = re.search(r"Δℓ \(l1/l2/linf\)\s+(\S+)", out).group(1)
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    assert f"`Δℓ (l1)` reads {printed} = 2/n + 2/(n·q)" in text
    r = ns["r"]
    q = r.group_mass_bound
    assert float(printed) == pytest.approx(2 / r.n + 2 / (r.n * q), rel=1e-3)
    assert f"n = {r.n:,}" in text and f"q = {q:g}" in text
    train = round(0.8 * r.n)                       # the training part of a solve's holdout=0.2
    assert f"n = {train:,}" in text
    assert f"Δℓ₁ = {2 / train + 2 / (train * q):.4g}" in text


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


def test_the_status_warning_is_explained_where_a_first_reader_meets_it(quickstart):
    """#20: every README/quickstart solve on Adult warns "constraint not certified", which
    confused a first reader; the README (after the demo, and in its held-out paragraph) and the
    quickstart's step 5 say what it means and what to do, quoting what the solves print."""
    from privfair.cli.demo import build_problem

    def flat(page):
        return " ".join(open(os.path.join(ROOT, page), encoding="utf-8").read().split())

    readme, page = flat("README.md"), flat("docs/quickstart.md")
    result = quickstart["result"]
    # the quickstart quotes its own solve's status; the check's bound is above the level by
    # more than the tolerance (its 95% bound is ~0.2 there; ε = ∞ alone leaves ~0.11)
    assert f'result.status == "{result.status}"' in page
    assert all(c.upper > c.level + 0.01 for c in result.holdout.constraints)
    for text in (readme, page):
        assert "cannot prove the level" in text and "holdout=" in text and "trust.md" in text
    # the demo's warning, quoted by the README at the demo's own level
    level = float(build_problem(quickstart["data"]).constraints[0].rhs.data)
    assert (f"UncertifiedConstraintWarning: privfair: constraint not certified at level "
            f"{level:g}") in readme


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


# ------------------------------------------------------------------------- every page, every block
def documented_pages(runnable=False):
    """README.md and docs/*.md with a ```python block (``runnable``: one not marked no-run)."""
    pages = ["README.md"] + sorted(os.path.join("docs", f) for f in os.listdir(
        os.path.join(ROOT, "docs")) if f.endswith(".md"))
    out = []
    for p in pages:
        text = open(os.path.join(ROOT, p), encoding="utf-8").read()
        if (_blocks(text) if runnable else "```python" in text):
            out.append(p)
    return out


#: page → why its blocks do not run today, for pages maintained elsewhere (strict xfail).
KNOWN_BROKEN = {
    # maintained with the scale work (#19): block 3 connects to a Dask cluster
    # (Client("tcp://scheduler.example.org:8786")) — to be marked no-run by its owner
    "docs/scale.md": "block 3 needs a Dask cluster; its owner marks it no-run",
}

#: page → why its blocks run too long for the suite today (skipped, with the reason; remove when
#: fixed — the page then runs like the others).  README.md was here until #20: its pf.report on
#: full Adult planned sgda and lagrangian_sgda (the only backends that accept its
#: LinearClassifier problem, with torch; their bounds are ∞) at ~30 what-if points, each a PLD
#: calibration — minutes.  privfair/reports/report.py now reads sgda's ∞ off its formula and skips the
#: trade-off grid of a backend that is ∞ at every n: the page's blocks took ~18 s of CPU.
KNOWN_TOO_SLOW = {}

#: pages whose blocks need an optional extra
EXTRAS = {"docs/sgda.md": "torch", "docs/sklearn.md": "sklearn", "README.md": "sklearn"}


def _page_params():
    out = []
    for page in documented_pages(runnable=True):
        marks = [pytest.mark.slow]
        if page in KNOWN_BROKEN:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_BROKEN[page]))
        if page in KNOWN_TOO_SLOW:
            marks.append(pytest.mark.skip(reason=KNOWN_TOO_SLOW[page]))
        out.append(pytest.param(page, marks=marks, id=page))
    return out


@pytest.mark.parametrize("page", _page_params())
def test_every_python_block_of_the_page_runs(page, tmp_path, monkeypatch):
    extra = EXTRAS.get(page)
    if extra:
        pytest.importorskip(extra, reason=f"{page} uses the optional {extra}")
    monkeypatch.chdir(tmp_path)                 # pages save report.html and the like
    import matplotlib

    matplotlib.use("Agg")
    run_page(page, python_blocks(page))


def test_no_run_markers_name_a_reason_and_stay_few():
    total, marked = 0, []
    for page in documented_pages():
        text = open(os.path.join(ROOT, page), encoding="utf-8").read()
        total += len(re.findall(r"```python\n", text))
        for why, _ in no_run_blocks(text):
            assert len(why) >= 10, f"{page}: say why a block does not run (got {why!r})"
            marked.append((page, why))
    assert len(marked) <= total // 3, marked     # most snippets run as printed


def test_the_no_run_marker_is_recognised():
    text = ("```python\nx = 1\n```\n<!-- no-run: a signature listing -->\n```python\nf(a, ...)\n```\n"
            "```python\ny = 2\n```\n")
    assert _blocks(text) == ["x = 1\n", "y = 2\n"]
    assert no_run_blocks(text) == [("a signature listing", "f(a, ...)\n")]

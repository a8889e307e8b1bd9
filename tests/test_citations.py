"""Every citation in the package, the docs and the examples points at something a reader has.

Issue #20: notes and docstrings cited a design card (``ALGORITHMS.md §n``) that the repository
does not contain.  Papers are cited by key ([A], [J], [K], [L], [E], listed in docs/traps.md,
"The papers") and the project's own corrections by their row in docs/traps.md ("docs/traps.md
#6")."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
DESIGN_CARD = "ALGORITHMS" + ".md"          # spelled apart so that this file does not match


def _sources():
    for pattern in ("privfair/**/*.py", "backends/**/*.py", "examples/**/*.py", "bench/**/*.py",
                    "docs/**/*.md", "bench/**/*.md", "README.md"):
        yield from sorted(ROOT.glob(pattern))


def test_no_citation_of_a_file_the_repository_does_not_have():
    assert not (ROOT / DESIGN_CARD).exists()
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in _sources()
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if DESIGN_CARD in line]
    assert not hits, f"cite the paper or the project's docs instead: {hits}"


def test_trap_citations_name_existing_rows_and_paper_keys_are_listed():
    traps = (ROOT / "docs" / "traps.md").read_text(encoding="utf-8")
    rows = {int(m) for m in re.findall(r"^\| (\d+) \|", traps, flags=re.M)}
    assert rows and max(rows) == len(rows)
    cited = set()
    for p in _sources():
        for m in re.finditer(r"traps\.md #(\d+)(?:[–-](\d+))?", p.read_text(encoding="utf-8")):
            lo = int(m.group(1))
            cited |= set(range(lo, int(m.group(2) or lo) + 1))
    assert cited and cited <= rows, sorted(cited - rows)
    papers = traps.split("## The papers")[1].split("## The traps")[0]
    for key in ("[A]", "[J]", "[K]", "[L]", "[E]"):
        assert f"| {key} |" in papers, key

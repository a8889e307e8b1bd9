"""Every file path the documentation names exists, and docs/internals.md's map lists every module.

Why: the layout moved (issue #17 item 4: privfair/ and backends/ in subpackages); a page that
sends a contributor to `backends/_erm.py` or `privfair/stats.py` is wrong in a way no other test
sees.  The check is textual and exact: every token of the pages that looks like a repository path
(`privfair/…`, `backends/…`, `tests/…`, `bench/…`, `examples/…`, `docs/…`, a `*` read as a glob)
must exist, and so must every relative `dir/module.py` (resolved from the repository root,
`privfair/` or `backends/`, as the pages use it).  :data:`NAMED_AS_ABSENT` lists the few tokens a
page names on purpose although they do not exist (a placeholder, a directory said not to exist).
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PAGES = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")) + [
    "bench/README.md", "README.md"]

#: (page, token) pairs a page names knowing they do not exist
NAMED_AS_ABSENT = {
    ("docs/internals.md", "privfair/backends/"),   # "there is no privfair/backends/ directory"
    ("docs/internals.md", "tests/test_x.py"),      # a placeholder in a command line
}

ROOTED = re.compile(r"(?<![\w./*-])((?:privfair|backends|tests|bench|examples|docs)/[\w./*-]*[\w/*])")
RELATIVE = re.compile(r"(?<![\w./*-])([A-Za-z_]\w*/[\w/]*\w\.py)\b")


def _exists(path: str) -> bool:
    path = path.split("::")[0]
    if "*" in path:
        return any(ROOT.glob(path))
    return (ROOT / path).exists()


def missing_paths(page: str) -> list:
    """The path tokens of ``page`` that name nothing in the checkout (less NAMED_AS_ABSENT)."""
    text = (ROOT / page).read_text(encoding="utf-8")
    out = []
    for token in sorted(set(ROOTED.findall(text))):
        if (page, token) not in NAMED_AS_ABSENT and not _exists(token.rstrip(".")):
            out.append(token)
    for token in sorted(set(RELATIVE.findall(text))):
        if token.split("/")[0] in ("privfair", "backends", "tests", "bench", "examples", "docs"):
            continue                                  # rooted: checked above
        if not any(_exists(base + token) for base in ("", "privfair/", "backends/")):
            out.append(token)
    return out


@pytest.mark.parametrize("page", PAGES)
def test_every_path_a_page_names_exists(page):
    assert missing_paths(page) == [], (
        f"{page} names paths that do not exist (the layout moved? see docs/internals.md, "
        "'The map')")


def map_listing() -> dict:
    """directory → the module names docs/internals.md's map lists under it."""
    text = (ROOT / "docs" / "internals.md").read_text(encoding="utf-8")
    start = text.index("## The map")
    block = text[text.index("```\n", start) + 4:text.index("\n```", text.index("```\n", start) + 4)]
    listing, top, current = {}, None, None
    for line in block.splitlines():
        if re.match(r"^(privfair|backends)/", line):
            top, current = line.split("/")[0], None
        elif m := re.match(r"^  (\w+)/\s", line):
            current = f"{top}/{m.group(1)}"
            listing[current] = []
        elif current and re.match(r"^    \w", line):
            listing[current] += [n.strip() for n in line.split(",") if n.strip()]
        else:
            current = None
    return listing


def test_the_map_lists_every_module_of_every_directory():
    listing = map_listing()
    assert len(listing) >= 15, sorted(listing)        # the parse found the map
    for directory, names in listing.items():
        actual = sorted(p.stem for p in (ROOT / directory).glob("*.py") if p.name != "__init__.py")
        assert sorted(names) == actual, (directory, sorted(names), actual)
    for top in ("privfair", "backends"):
        subpackages = {f"{top}/{p.parent.name}" for p in (ROOT / top).glob("*/__init__.py")}
        assert subpackages <= set(listing), sorted(subpackages - set(listing))

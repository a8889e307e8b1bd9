"""Every import path the documentation names still imports (issue #17 item 4).

The layers became subpackages (docs/internals.md, "The map").  The paths the user documentation
tells users to import from (``privfair.scores``, ``privfair.metrics``, ``privfair.report``, the
modules the namespace exposes by name) keep their old name: :data:`privfair.DOCUMENTED_PATHS`
maps each to its module, registered under both names as one module object.  Internal modules
have no alias, so every other page names the layer's path — and every dotted ``privfair.…`` name
a page prints must resolve (a module, or an attribute of one), so a page cannot keep naming a
removed path.
"""

import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import privfair

ROOT = Path(__file__).resolve().parent.parent
PAGES = (["README.md", "bench/README.md"]
         + sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))
         + sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "examples").glob("*.py")))
DOTTED = re.compile(r"(?<![\w.])privfair(?:\.[A-Za-z_]\w*)+")
#: ``backends.family.module.name``: the pages' short form of ``privfair.backends.…`` (not a
#: link such as ``backends.md``)
DOTTED_BACKENDS = re.compile(r"(?<![\w./])backends(?:\.[A-Za-z_]\w*)+(?!\w)")
#: the internal paths aliased before this test's change, gone on purpose (#17): a page naming
#: one would send a reader to an import that fails
REMOVED = ("privfair.direct_erm", "privfair.erm", "privfair.formulas", "privfair.passes",
           "privfair.privacy.audit", "privfair.privacy.audit_instances", "privfair.projections",
           "privfair.stats", "privfair.theorems")


def resolve(dotted: str) -> bool:
    """Whether ``dotted`` names a module, or an attribute (chain) of the longest module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError as exc:
            if getattr(exc, "name", None) == "torch":    # a torch-only module (the README
                return True                              # install has no torch): it exists
            continue
        for name in parts[cut:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


@pytest.mark.parametrize("old,new", sorted(privfair.DOCUMENTED_PATHS.items()))
def test_documented_path_is_the_layer_module(old, new):
    assert importlib.import_module(old) is importlib.import_module(new)


@pytest.mark.parametrize("old", sorted(privfair.DOCUMENTED_PATHS))
def test_from_import_of_a_documented_path(old):
    parent, name = old.rsplit(".", 1)
    namespace = {}
    exec(f"from {parent} import {name} as m", namespace)
    bound = getattr(importlib.import_module(parent), name, None)
    # the namespace binds some names to a function of the module (pf.report is report.report),
    # as it did before the relayout; any other name is the module itself
    expected = bound if bound is not None and not inspect.ismodule(bound) else         importlib.import_module(old)
    assert namespace["m"] is expected


def test_the_namespace_keeps_its_documented_attributes():
    import privfair as pf

    for name in ['holdout', 'metrics', 'norms', 'pareto', 'report', 'scores', 'sparse']:
        assert hasattr(pf, name), name


def test_only_user_facing_paths_are_aliased():
    # the user-facing set (README.md, docs/quickstart.md, sklearn.md, language.md, cli.md,
    # report.md and examples/ import from these; the rest are modules pf exposes by name)
    assert set(privfair.DOCUMENTED_PATHS) == {
        "privfair.holdout", "privfair.metrics", "privfair.norms", "privfair.pareto",
        "privfair.report", "privfair.scores", "privfair.sparse"}
    for old in REMOVED:
        with pytest.raises(ImportError):
            importlib.import_module(old)


def test_import_privfair_loads_no_backend_and_not_the_audit_harness():
    code = ("import sys, privfair; print(sorted(m for m in sys.modules if m.startswith("
            "('privfair.audit', 'privfair.backends', 'privfair.cli'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.strip() == "[]", out


@pytest.mark.parametrize("page", PAGES)
def test_every_dotted_privfair_name_a_page_prints_resolves(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    names = sorted(set(DOTTED.findall(text)) | {
        "privfair." + n for n in DOTTED_BACKENDS.findall(text) if not n.endswith(".md")})
    stale = [n for n in names if not resolve(n)]
    assert stale == [], (f"{page} names privfair paths that do not resolve (moved in the "
                         "layout? docs/internals.md, 'The map')")

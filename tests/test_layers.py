"""The import contract: privfair's layers import one way (issue #17 item 4).

Every import in ``privfair/`` and ``backends/`` (installed as ``privfair.backends``) is read with
``ast`` — including the imports inside functions, which a runtime check would miss — and the
layers of :data:`LAYERS` (docs/internals.md, "The map") are checked, bottom to top:

0. the utilities (``privfair.errors``, ``privfair.util``) and the pure formulas
   (``privfair.analysis.formulas``, which imports nothing at all, tests/test_formulas.py);
1. the privacy core (``privfair.privacy``) and the language (``privfair.expr``): *sealed* —
   they import nothing of privfair but themselves and rank 0;
2. the rows (``privfair.data``) and the bundled datasets; 3. decision sets
   (``privfair.models``); 4. statistics (``privfair.statistics``); 5. the problem and the
   compiler (``privfair.analysis``); 6. results (``privfair.results``);
7. the backends (``privfair.backends``, the top-level ``backends/`` directory);
8. the planner (``privfair.planning``); 9. reports and the audit (``privfair.reports``,
   ``privfair.audit``); 10. the command line and the public namespace.

A module imports modules of its own rank or lower: nothing in ``privfair/`` below the planner
imports a backend, and the audit sits above the planner.

A second check counts reads of another module's underscore attribute (``rates._joint``,
``from .base import _fmt``, a private module imported from outside its package), in privfair,
backends *and tests* (the issue asks for no such reads, or a documented testing API).

Today's violations are listed in :data:`IMPORT_ALLOWLIST` and :data:`UNDERSCORE_ALLOWLIST`, and
the tests check that the lists are *exact*: a new violation fails, and so does a fixed one that
is still listed — remove it, so the lists only shrink.  ``python tests/test_layers.py`` prints
the current lists (to paste after a fix, never to grow them without a reviewed reason).
"""

from __future__ import annotations

import ast
import collections
import functools
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCES = ("privfair", "backends")

#: layer ranks, bottom to top (docs/internals.md, "The map"); a module's rank is that of the
#: longest prefix listed.  A module imports modules of its own rank or lower only, and the two
#: sealed layers (the privacy core, the language) import nothing of privfair but themselves and
#: rank 0.  So nothing in privfair/ below the planner (rank 8) imports a backend (rank 7), and
#: the audit (rank 9) is above the planner.
LAYERS = {
    'privfair.analysis.formulas': 0,
    'privfair.errors': 0,
    'privfair.util': 0,
    'privfair.expr': 1,
    'privfair.privacy': 1,
    'privfair.data': 2,
    'privfair.datasets': 2,
    'privfair.models': 3,
    'privfair.statistics': 4,
    'privfair.analysis': 5,
    'privfair.results': 6,
    'privfair.backends': 7,
    'privfair.planning': 8,
    'privfair.audit': 9,
    'privfair.reports': 9,
    'privfair': 10,
    'privfair.cli': 10,
}

#: rank 0: imported by every layer, importing only each other (kept for the scanner's tests)
UTILITIES = {m for m, r in LAYERS.items() if r == 0}

#: the layers that import nothing of privfair but themselves and rank 0
SEALED = ("privfair.privacy", "privfair.expr")

#: the modules at or above the planner (rank ≥ 8, or the public namespace): they may import a
#: backend.  Computed from LAYERS for the scanner's callers.
PLANNER_RANK = 8


def rank(mod: str) -> int:
    """The layer rank of a privfair module (the longest listed prefix)."""
    best, size = LAYERS.get("privfair", 10), 0
    for prefix, r in LAYERS.items():
        if (mod == prefix or mod.startswith(prefix + ".")) and len(prefix) > size:
            best, size = r, len(prefix)
    return best


# ------------------------------------------------------------------------------ the allowlists
#: (importer, imported) pairs breaking a rule today; each to be removed when fixed (#17 item 4).
IMPORT_ALLOWLIST = {
    # Problem.solve/plan call the planner lazily (a convenience in the style of cvxpy's
    # prob.solve()); the planner is above the problem
    ("privfair.analysis.problem", "privfair.planning.planner"),
    # pf.sparse.fit runs a row-private ERM backend named by the user: it resolves the name at call
    # time through the planner-level direct_erm, as Problem.solve calls the planner
    ("privfair.models.sparse", "privfair.planning.direct_erm"),
}

#: "module: name" → number of reads of another module's underscore attribute ``name``.
UNDERSCORE_ALLOWLIST: dict[str, int] = {}   # 204 reads at the start of #17's work → none


# ------------------------------------------------------------------------------ the scanner
def module_name(path: pathlib.Path) -> str:
    """The import path of a source file: ``backends/x.py`` is ``privfair.backends.x``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "backends":
        parts = ["privfair", "backends"] + parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def source_files(dirs=SOURCES):
    for d in dirs:
        yield from sorted((ROOT / d).rglob("*.py"))


@functools.lru_cache(maxsize=None)
def _tree(path: pathlib.Path):
    """A file's syntax tree, parsed once per test session."""
    return ast.parse(path.read_text(), filename=str(path))


def _modules():
    return {module_name(p): p for p in source_files()}


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` reads from."""
    if not node.level:
        return node.module or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(path: pathlib.Path, known: set) -> set:
    """The privfair modules ``path`` imports anywhere in its body (functions included).

    ``from pkg import name`` counts as importing ``pkg.name`` when that is a module, else ``pkg``.
    """
    me = module_name(path)
    tree = _tree(path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            src = _resolve(me, path.name == "__init__.py", node)
            for a in node.names:
                full = f"{src}.{a.name}"
                out.add(full if full in known else src)
    return {m for m in out if m == "privfair" or m.startswith("privfair.")}


def import_graph() -> dict:
    mods = _modules()
    known = set(mods)
    return {m: imports_of(p, known) for m, p in mods.items()}


def _inside(mod: str, pkg: str) -> bool:
    return mod == pkg or mod.startswith(pkg + ".")


def import_violations(graph=None) -> set:
    """(importer, imported) pairs that break a rule of the module docstring: a module imports
    its own layer's rank or lower (:data:`LAYERS`); a sealed layer imports itself and rank 0."""
    graph = import_graph() if graph is None else graph
    bad = set()
    for importer, targets in graph.items():
        for t in targets:
            if t == importer:
                continue
            if rank(t) > rank(importer):
                bad.add((importer, t))
            for layer in SEALED:
                if _inside(importer, layer) and not _inside(t, layer) and rank(t) > 0:
                    bad.add((importer, t))
    return bad


# -------------------------------------------------------------------- underscore attribute reads
def _private(name: str) -> bool:
    """``_x``, not a dunder, not ``_``, not a Jupyter display hook (``_repr_html_``: a protocol)."""
    return (name.startswith("_") and not name.startswith("__") and name != "_"
            and not (name.startswith("_repr_") and name.endswith("_")))


def _defined_names(tree) -> set:
    """Names a module defines itself: functions, classes, assigned names and attributes."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.attr)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            out.add(node.arg)           # dataclass(..., _field=...) / namedtuple-style kwargs
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _private(
                node.value) and node.value.isidentifier():
            out.add(node.value)         # __slots__ = ("_x",), setattr(obj, "_x", ...)
    return out


@functools.lru_cache(maxsize=1)
def _project_private_names() -> frozenset:
    """Underscore names defined somewhere in privfair or backends (others' are not ours)."""
    out = set()
    for p in source_files():
        out |= {n for n in _defined_names(_tree(p)) if _private(n)}
    return frozenset(out)


def underscore_reads(path: pathlib.Path, known: set, ours: set, me: str | None = None) -> list:
    """Names of another module's underscore attributes that ``path`` reads, one per read.

    * ``from m import _x`` (m another module) — one read of ``_x``;
    * a private module imported from outside its package (``privfair.backends._erm`` from
      ``privfair.models.sparse`` or a test) — one read of the module's name;
    * ``obj._x`` where ``obj`` is not ``self``/``cls`` and ``_x`` is defined in privfair or
      backends but not in this module.
    """
    me = module_name(path) if me is None else me
    tree = _tree(path)
    mine = _defined_names(tree)
    reads = []

    def private_module(mod):
        """The private module component of ``mod`` that ``me`` is outside of, or None."""
        parts = mod.split(".")
        for i, part in enumerate(parts):
            if _private(part) and not _inside(me, ".".join(parts[:i])):
                return part
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                hit = private_module(a.name) if a.name.startswith("privfair") else None
                if hit:
                    reads.append(hit)
        elif isinstance(node, ast.ImportFrom):
            src = _resolve(me, path.name == "__init__.py", node)
            if not (src == "privfair" or src.startswith("privfair.")):
                continue
            hit = private_module(src)
            if hit:
                reads.append(hit)
                continue
            for a in node.names:
                full = f"{src}.{a.name}"
                if full in known:
                    hit = private_module(full)
                    if hit:
                        reads.append(hit)
                elif _private(a.name) and src != me:
                    reads.append(a.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            if not _private(node.attr) or node.attr in mine or node.attr not in ours:
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            reads.append(node.attr)
    return reads


def underscore_counts(include_tests=True) -> dict:
    known = set(_modules())
    ours = _project_private_names()
    files = [(module_name(p), p) for p in source_files()]
    if include_tests:
        files += [(f"tests.{p.stem}", p) for p in sorted((ROOT / "tests").glob("*.py"))
                  if p.name != "test_layers.py"]
    counts = collections.Counter()
    for me, p in files:
        for name in underscore_reads(p, known, ours, me=me):
            counts[f"{me}: {name}"] += 1
    return dict(sorted(counts.items()))


# -------------------------------------------------------------------------------------- tests
def test_import_graph_sees_imports_inside_functions():
    """The scanner is not blind to lazy imports (the report imports theorems inside functions)."""
    graph = import_graph()
    assert "privfair.analysis.theorems" in graph["privfair.reports.report"]
    assert "privfair.analysis.formulas" in graph["privfair.analysis.theorems"]
    assert "privfair.backends" in graph["privfair.planning.planner"] or any(
        _inside(t, "privfair.backends") for t in graph["privfair.planning.planner"])


def test_layers_import_one_way_except_the_exact_allowlist():
    found = import_violations()
    new = sorted(found - IMPORT_ALLOWLIST)
    fixed = sorted(IMPORT_ALLOWLIST - found)
    assert not new, ("new layer violations (fix them; the allowlist only shrinks):\n"
                     + "\n".join(f"  {a} imports {b}" for a, b in new))
    assert not fixed, ("fixed violations still allowlisted — remove them from IMPORT_ALLOWLIST:\n"
                       + "\n".join(f"  {a} → {b}" for a, b in fixed))


def test_the_theorems_no_longer_close_an_import_cycle():
    """#17: theorems imported report and two backends, closing a 19-module cycle."""
    graph = import_graph()
    assert not {t for t in graph["privfair.analysis.theorems"]
                if t != "privfair.analysis.formulas"}, graph["privfair.analysis.theorems"]


def test_underscore_reads_match_the_exact_allowlist():
    found = underscore_counts()
    changed = {k: (UNDERSCORE_ALLOWLIST.get(k, 0), found.get(k, 0))
               for k in set(found) | set(UNDERSCORE_ALLOWLIST)
               if UNDERSCORE_ALLOWLIST.get(k, 0) != found.get(k, 0)}
    grown = {k: v for k, v in changed.items() if v[1] > v[0]}
    shrunk = {k: v for k, v in changed.items() if v[1] < v[0]}
    assert not grown, ("new reads of another module's underscore attribute (allowed → found):\n"
                       + "\n".join(f"  {k}: {a} → {b}" for k, (a, b) in sorted(grown.items())))
    assert not shrunk, ("fewer reads than allowlisted — lower UNDERSCORE_ALLOWLIST "
                        "(allowed → found):\n"
                        + "\n".join(f"  {k}: {a} → {b}" for k, (a, b) in sorted(shrunk.items())))


def test_the_scanner_finds_each_kind_of_underscore_read(tmp_path):
    """A private attribute read, a private name imported, a private module from outside."""
    src = tmp_path / "probe.py"
    src.write_text("from privfair.backends import _erm\n"
                   "from privfair.privacy.events import _fmt\n"
                   "def f(rates):\n"
                   "    self_x = rates._cell\n"
                   "    return self_x\n")
    reads = underscore_reads(src, set(_modules()), _project_private_names(), me="tests.probe")
    assert sorted(reads) == ["_cell", "_erm", "_fmt"]


if __name__ == "__main__":      # print the current lists (see the module docstring)
    sys.stdout.write("IMPORT_ALLOWLIST = {\n")
    for a, b in sorted(import_violations()):
        sys.stdout.write(f"    ({a!r}, {b!r}),\n")
    sys.stdout.write("}\n\nUNDERSCORE_ALLOWLIST = {\n")
    for k, v in underscore_counts().items():
        sys.stdout.write(f"    {k!r}: {v},\n")
    sys.stdout.write("}\n")


def test_every_package_directory_is_declared_for_the_wheel():
    """pyproject.toml lists its packages explicitly (``backends/`` installs as
    ``privfair.backends``): a new subpackage left out works in an editable checkout and is
    missing from a wheel (backends/erm/ was, #17)."""
    import tomllib

    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                   ["packages"])
    found = set()
    for top, name in (("privfair", "privfair"), ("backends", "privfair.backends")):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top).parts
            found.add(".".join((name,) + rel))
    assert found - declared == set()

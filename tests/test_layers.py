"""The import contract: privfair's layers import one way (issue #17 item 4).

Every import in ``privfair/`` and ``backends/`` (installed as ``privfair.backends``) is read with
``ast`` — including the imports inside functions, which a runtime check would miss — and three
rules are checked:

0. the utilities (:data:`UTILITIES`: typed errors, text and table helpers, progress, the
   formulas) import nothing of privfair but each other (``privfair.formulas`` nothing at all,
   tests/test_formulas.py);
1. the privacy core (``privfair.privacy``) imports nothing of privfair but itself and the
   utilities;
2. the language (``privfair.expr``) imports nothing of privfair but itself and the utilities;
3. nothing in ``privfair/`` below the planner imports a backend (``privfair.backends``); the
   modules at or above the planner are listed in :data:`AT_OR_ABOVE_PLANNER`.

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

#: the bottom layer: imported by every layer, importing only each other
UTILITIES = {"privfair.errors", "privfair._text", "privfair._tables", "privfair._quiet",
             "privfair._progress", "privfair.formulas"}

#: the modules of privfair/ at or above the planner: they may import a backend.  Everything else
#: in privfair/ is below it (a new module is below until it is listed here with a reason).
AT_OR_ABOVE_PLANNER = {
    "privfair",                  # the public namespace re-exports the user-facing API
    "privfair.__main__",         # python -m privfair → the command line
    "privfair.planner",          # asks every backend accepts/plan, runs the chosen one
    "privfair.report",           # plans backends at what-if n, measures them (above solve)
    "privfair._report_render",   # renders the report (backend formulas, plans)
    "privfair.cli",              # the command line: lists backends, runs audits
    "privfair.sklearn",          # estimators that call solve
    "privfair.pareto",           # a grid of solves
    "privfair.demo",             # a solve, printed
    "privfair.direct_erm",       # pf.sparse.fit's backend lookup (a solve without a Problem)
}

# ------------------------------------------------------------------------------ the allowlists
#: (importer, imported) pairs breaking a rule today; each to be removed when fixed (#17 item 4).
IMPORT_ALLOWLIST = {
    # the audit harness lives in the privacy core but builds whole problems with `import privfair`
    # (the audit belongs in its own layer above the planner: privfair/audit/, #17 item 4)
    ("privfair.privacy.audit_instances", "privfair"),
}

#: "module: name" → number of reads of another module's underscore attribute ``name``.
UNDERSCORE_ALLOWLIST: dict[str, int] = {   # 132 reads: 81 in privfair/backends, 51 in tests
    # the language: protocol methods of Expression (_cvx, _bounds, _mono, _lip, ...) called on
    # child expressions from sibling modules — to become public hooks of the atom protocol
    'privfair.expr.affine: _affine': 1,
    'privfair.expr.affine: _cvx': 8,
    'privfair.expr.atom: _bounds': 2,
    'privfair.expr.atom: _cvx': 1,
    'privfair.expr.atom: _fwd': 1,
    'privfair.expr.atom: _gbound': 1,
    'privfair.expr.atom: _lip': 1,
    'privfair.expr.atom: _mono': 1,
    'privfair.expr.atom: _smooth': 1,
    'privfair.expr.elementwise: _bounds': 1,
    'privfair.expr.elementwise: _cvx': 1,
    'privfair.expr.indexing: _cvx': 1,
    'privfair.expr.means: _bounds': 1,
    'privfair.expr.norms: _can_win': 1,
    'privfair.expr.norms: _sign_by_range': 1,
    # the privacy core: helpers shared between its own modules (_validate, _fmt, _float_generator)
    'privfair.privacy.certificate: _fmt': 1,
    'privfair.privacy.release: _float_generator': 1,
    # backends: Rates' private layout (_joint, _rate, _sel, _Xc, _phiB, ...) → the public layout of ℓ
    # (Rates.layout, group_mass(), denominators(), clip_scale, phi_at_bound, ...: #17 item 2);
    # left: Expression's protocol (_bounds, _dependency, _local_*), TorchModel._template,
    # postprocess._labels, and erm/ and lagrangian/ until they read the public names
    'privfair.backends._oracles: _bounds': 4,
    'privfair.backends._oracles: _dependency': 1,
    'privfair.backends._oracles: _local_gbound': 1,
    'privfair.backends._oracles: _local_mono': 1,
    'privfair.backends._sgda_train: _template': 1,
    'privfair.backends.lagrangian.histogram: _joint': 1,
    'privfair.backends.lagrangian.histogram: _rate': 1,
    'privfair.backends.lagrangian.histogram: _sel': 2,
    'privfair.backends.lagrangian.models: _phiB': 2,
    'privfair.backends.lagrangian.solver: _q': 2,
    'privfair.backends.lagrangian: _float_generator': 1,
    'privfair.backends.postprocessing: _labels': 1,
    # privfair/: a decision set's _theta/_as_X, the report renderer's helpers, ...
    # (gap_terms: the recogniser moved from backends/_jagielski.py with its one _affine read)
    'privfair.gap_terms: _affine': 1,
    'privfair._report_render: _fmt': 2,
    'privfair._report_render: _headline': 2,
    'privfair._report_render: _numerics': 1,
    'privfair._report_render: _rows': 1,
    'privfair.cells: _as_X': 1,
    'privfair.holdout: _gbound': 1,
    'privfair.postprocess: _as_X': 1,
    'privfair.sparse: _as_X': 1,
    'privfair.stats: _find_group': 1,
    'privfair.stats: _theta': 2,
    'privfair.torch_model: _as_X': 1,
    # tests: white-box reads of private helpers → a documented testing API or public names
    'tests.test_backend_cells: _proxy': 2,
    'tests.test_backend_lopt: _oracles': 1,
    'tests.test_backend_oracle_learner: _jagielski': 1,
    'tests.test_backend_postprocessing: _jagielski': 3,
    'tests.test_backend_sgda: _ermi': 2,
    'tests.test_backend_sgda: _sgda_schedule': 1,
    'tests.test_backend_sgda: _sgda_select': 1,
    'tests.test_backend_sgda: _sgda_train': 3,
    'tests.test_designs: _oracles': 1,
    'tests.test_designs: _x1': 1,
    'tests.test_explain: _text': 1,
    'tests.test_extreme_epsilon: _accept': 1,
    'tests.test_extreme_epsilon: _exact': 1,
    'tests.test_extreme_epsilon: _gamma': 1,
    'tests.test_extreme_epsilon: _oracles': 1,
    'tests.test_formulas: _jagielski': 1,
    'tests.test_privacy_samplers: _bernoulli_exp_minus_half': 1,
    'tests.test_privacy_samplers: _bernoulli_exp_minus_one': 1,
    'tests.test_privacy_samplers: _exact': 1,
    'tests.test_privacy_samplers: _less': 3,
    'tests.test_privacy_samplers: _round_release': 1,
    'tests.test_privacy_samplers: _small_below': 1,
    'tests.test_privacy_statistical: _exact': 1,
    'tests.test_progress: _dual_bruteforce': 1,
    'tests.test_progress: _dual_overlap_lp': 2,
    'tests.test_progress: _progress': 1,
    'tests.test_quiet_output: _quiet': 1,
    'tests.test_quiet_output: _solve_any': 1,
    'tests.test_report: _fmt': 1,
    'tests.test_report: _report_render': 7,
    'tests.test_report: _rows': 1,
    'tests.test_result_multiclass: _template': 1,
    'tests.test_scores: _Intercept': 2,
    'tests.test_sgda_tiny_delta: _sgda_schedule': 1,
    'tests.test_solve_options: _sgda_options': 1,
    # the ERM family's modules (backends/erm/, split from _erm.py: the same reads of Rates'
    # internals, now under their concern's name) and test_report's reads of the renderer
    'privfair.backends.erm.constraint: _from_counts': 1,
    'privfair.backends.erm.constraint: _joint': 1,
    'privfair.backends.erm.constraint: _n_gy': 1,
    'privfair.backends.erm.constraint: _q': 1,
    'privfair.backends.erm.constraint: _rate': 1,
    'privfair.backends.erm.reduction: _bound': 2,
    'privfair.backends.erm.reduction: _cell': 1,
    'privfair.backends.erm.reduction: _clip_scale': 1,
    'privfair.backends.erm.reduction: _denominators': 2,
    'privfair.backends.erm.reduction: _joint': 2,
    'privfair.backends.erm.reduction: _n_gy': 2,
    'privfair.backends.erm.reduction: _phiB': 1,
    'privfair.backends.erm.reduction: _rate': 4,
    'privfair.backends.erm.reduction: _sel': 3,
}


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
    """(importer, imported) pairs that break one of the three rules of the module docstring."""
    graph = import_graph() if graph is None else graph
    bad = set()
    for importer, targets in graph.items():
        for t in targets:
            if importer in UTILITIES and t not in UTILITIES:
                bad.add((importer, t))
            for layer in ("privfair.privacy", "privfair.expr"):
                if _inside(importer, layer) and not _inside(t, layer) and t not in UTILITIES:
                    bad.add((importer, t))
            if (not _inside(importer, "privfair.backends") and importer not in AT_OR_ABOVE_PLANNER
                    and _inside(t, "privfair.backends")):
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
      ``privfair.sparse`` or a test) — one read of the module's name;
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
    assert "privfair.theorems" in graph["privfair.report"]
    assert "privfair.formulas" in graph["privfair.theorems"]
    assert "privfair.backends" in graph["privfair.planner"] or any(
        _inside(t, "privfair.backends") for t in graph["privfair.planner"])


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
    assert not {t for t in graph["privfair.theorems"]
                if t != "privfair.formulas"}, graph["privfair.theorems"]


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
                   "    self_x = rates._joint\n"
                   "    return self_x\n")
    reads = underscore_reads(src, set(_modules()), _project_private_names(), me="tests.probe")
    assert sorted(reads) == ["_erm", "_fmt", "_joint"]


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

"""``privfair backends`` (each backend's theorem, priority and option table; ``--markdown``
for docs/backends.md; ``privfair backends NAME``: one backend, with its plan parameters) and
``privfair datasets``: the listing commands."""

from __future__ import annotations

from ..util.tables import markdown_table, text_table
from ..util.text import wrap
from .errors import EXIT_OK, CommandError


#: the first line of ``privfair backends``: why the list is in this order
PRIORITY_HEADER = ("Backends in registry priority order: backend='auto' ranks the accepting "
                   "backends' plans by (rank, predicted excess risk, priority); the priority "
                   "(smaller first) only breaks ties, e.g. between plans that predict no bound.")


def priority_line(name: str) -> str:
    """``priority N: reason`` for backend ``name``, from :data:`privfair.backends.REGISTRY`
    (the planner's tie-break key, :func:`privfair.backends.priority`); a backend added by hand
    (not in the table) is said to come after every listed one."""
    from ..backends import ENTRIES, priority

    entry = ENTRIES.get(name)
    reason = entry.reason if entry is not None else \
        "not in privfair.backends.REGISTRY: after every listed backend, in the order added"
    return f"priority {priority(name):g}: {reason}"


def cmd_backends(args) -> int:
    from ..backends import BACKENDS

    if args.markdown:
        print("\n".join(options_markdown(BACKENDS)))
        return EXIT_OK
    one = getattr(args, "name", None)
    if one is None:
        print("\n".join(wrap(PRIORITY_HEADER, continuation="")))
    if one is not None and one not in BACKENDS:
        raise CommandError(f"no backend {one!r}: choose one of {', '.join(BACKENDS)}")
    chosen = {one: BACKENDS[one]} if one is not None else BACKENDS
    for name, b in chosen.items():
        flags = []
        if getattr(b, "non_private_only", False):
            flags.append("non-private reference (ε = ∞) only")
        if not getattr(b, "needs_group_mass", True):
            flags.append("needs no group-mass bound")
        extra = f"  [{'; '.join(flags)}]" if flags else ""
        print(f"{name:16s} {b.theorem}{extra}")
        print("\n".join(wrap("    " + priority_line(name), continuation="      ")))
        print("\n".join(option_lines(b)))
        if one is not None:
            print("\n".join(plan_param_lines(b)))
    if one is None:
        print("\n".join(wrap(FOOTER, continuation="")))
    return EXIT_OK


#: the last line of ``privfair backends``
FOOTER = "`privfair backends NAME` also lists a backend's plan parameters (Plan.params)."


#: the columns of a backend's options, as :func:`privfair.backends.options.rows` gives them
OPTION_COLUMNS = ("option", "type", "range", "default", "doc")


#: where the doc column may start at the latest; past it each doc goes under its option
WIDE_COLUMNS = 60


def option_lines(backend, indent: str = "    ") -> list:
    """The lines ``privfair backends`` prints under ``backend``: its declared option table
    (name, type, range, default, one-line doc; the doc wrapped under its column), else the
    option names it declares, else a note that it declares none."""
    from ..backends.options import rows

    table = getattr(backend, "option_table", None)
    if table is None:
        names = getattr(backend, "option_names", None)
        if names is None:
            return [indent + "options: not declared (any option is passed on unchecked)"]
        public = [n for n in names if not n.startswith("_")]
        return [line for line in wrap(
            indent + "options: " + (", ".join(public) or "none")
            + (" (names only: no table of types, ranges and defaults yet)" if public else ""),
            continuation=indent + "  ")]
    rs = rows(table)
    if not rs:
        return [indent + "options: none"]
    return _table_lines(OPTION_COLUMNS, rs, indent)


#: the columns of a backend's plan parameters (:func:`privfair.backends.options.param_rows`)
PARAM_COLUMNS = ("plan parameter", "type", "set", "doc")


def plan_param_lines(backend, indent: str = "    ") -> list:
    """The lines ``privfair backends NAME`` prints after the options: the backend's declared
    plan parameters (``Backend.plan_params``: name, type, whether every plan sets it, doc)."""
    from ..backends.options import param_rows

    declared = getattr(backend, "plan_params", None)
    if declared is None:
        return [indent + "plan parameters: not declared (not checked)"]
    return _table_lines(PARAM_COLUMNS, param_rows(declared), indent)


def _table_lines(columns, rs, indent) -> list:
    """``rs`` under ``columns`` as text, the last column (a doc) wrapped under its column, or
    on its own lines when the others are wide."""
    left = text_table(columns[:-1], [r[:-1] for r in rs])
    width = len(indent) + max(map(len, left)) + 2
    out = []
    for cells, doc in zip(left, [columns[-1]] + [r[-1] for r in rs]):
        if width <= WIDE_COLUMNS:         # the doc in a fifth column, wrapped under it
            line = indent + cells.ljust(width - len(indent))
            out += wrap(line + doc, continuation=" " * width) if doc else [line.rstrip()]
        else:                             # long ranges or defaults: the doc on its own lines
            out.append(indent + cells)
            if doc and cells is not left[0]:
                out += wrap(indent * 2 + doc, continuation=indent * 2)
    return out


def options_markdown(backends) -> list:
    """Markdown of every backend's options (``privfair backends --markdown``; docs/backends.md
    embeds it), in registry priority order: per backend its priority and the reason for it
    (:func:`priority_line`), then a table per backend with a declared table, a pointer to
    ``privfair backends`` otherwise (a names-only declaration changes too often to pin in a
    page)."""
    from ..backends.options import rows

    out = []
    for name, b in backends.items():
        table = getattr(b, "option_table", None)
        out += ["", f"### `{name}`", "", "P" + priority_line(name)[1:] + ".", ""]
        if table is not None and rows(table):
            out += markdown_table(OPTION_COLUMNS, [(f"`{r[0]}`",) + tuple(r[1:])
                                                   for r in rows(table)])
        elif table is not None:
            out.append("No options: every option is refused.")
        else:          # names only: listed by `privfair backends`, not pinned in the docs
            out.append("No option table yet: `privfair backends` lists the option names it "
                       "takes." if getattr(b, "option_names", None) is not None else
                       "Options not declared.")
    return out[1:]


def cmd_datasets(args) -> int:
    from ..datasets import list_datasets

    for name, description in list_datasets().items():
        print(f"{name:10s} {description}")
    return EXIT_OK


def add_parsers(sub) -> None:
    """Register ``backends`` and ``datasets`` on ``sub`` (argparse's subparsers)."""
    b = sub.add_parser("backends", help="list the registered backends, their theorems, "
                       "priorities and options",
                       description="List the registered backends in registry priority order "
                       "with the theorem each one's privacy proof and risk bound come from, its "
                       "priority and the reason for it (backend='auto' ranks plans by rank, "
                       "then predicted excess risk, then this priority), and the solve options "
                       "each takes (problem.solve(..., backend=NAME, OPTION=value)): type, "
                       "range, default and what it does.  With NAME, that backend only, and "
                       "also its plan parameters: what its plan chooses (Plan.params), with "
                       "their types, declared once and checked when a plan is made.")
    b.add_argument("name", nargs="?", metavar="NAME",
                   help="one backend: its theorem, priority, options and plan parameters "
                        "(the names, types and docs of what its plan chooses)")
    b.add_argument("--markdown", action="store_true",
                   help="print the options as Markdown tables (docs/backends.md embeds them)")
    b.set_defaults(func=cmd_backends)

    d = sub.add_parser("datasets", help="list the bundled datasets",
                       description="List the bundled datasets.")
    d.set_defaults(func=cmd_datasets)

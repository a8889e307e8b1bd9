"""The sample-complexity report as terminal text (``str(report)``) and as markdown
(``report.to_markdown()``): the sections of :mod:`.sections`, laid out as text tables."""

from __future__ import annotations

import textwrap

from ..util.tables import markdown_table, text_table
from .mathml import formulas
from .sections import (GROUP_HEAD, HOLDOUT_HEAD, TABLES, TRADEOFF_HEAD, bound_rows, fmt_value,
                       footer_notes, glance, group_rows, group_summary, header, holdout_lines,
                       scale_note, theorem_notes, tradeoff_note, tradeoff_rows)


def to_text(rep):
    """The report as terminal text (``str(report)``)."""
    out = [header(rep), "", "At a glance", "-----------"] + glance(rep) + [""]
    for title, fn, head in TABLES:
        rows = fn(rep)
        if not rows:
            continue
        out += [title, "-" * len(title)] + text_table(head, rows) + [""]
        if fn is bound_rows:
            out += textwrap.wrap(scale_note(rep), 100) + [""]
    checked = holdout_lines(getattr(rep, "result", None))
    out += [HOLDOUT_HEAD, "-" * len(HOLDOUT_HEAD)] + checked + [""]
    t = "Per-group rates of the released decision (held-out data)"
    out += [t, "-" * len(t)]
    if getattr(rep, "group_rates", None) is not None:
        out += text_table(GROUP_HEAD, group_rows(rep)) + textwrap.wrap(group_summary(rep), 100)
    else:
        out += textwrap.wrap(getattr(rep, "group_rates_note", "") or "—", 100)
    t = "Objective/violation trade-off guaranteed by the bounds"
    out += ["", t, "-" * len(t)]
    if getattr(rep, "tradeoff", None):
        out += text_table(TRADEOFF_HEAD, tradeoff_rows(rep)) + textwrap.wrap(tradeoff_note(rep), 100)
    else:
        out += textwrap.wrap(getattr(rep, "tradeoff_note", "") or "—", 100)
    out.append("")
    if rep.theorems:
        out += ["Theorem notes", "-------------"] + theorem_notes(rep) + [""]
    return "\n".join(out + footer_notes(rep))


def to_markdown(rep):
    """The report as markdown (``report.to_markdown()``; formulas as LaTeX)."""
    lines = [f"# {header(rep)}", "", "## At a glance", ""] + [f"- {x}" for x in glance(rep)]
    lines.append("")
    for title, fn, head in TABLES:
        rows = fn(rep)
        if rows:
            lines += [f"## {title}", ""] + markdown_table(head, rows) + [""]
            if fn is bound_rows:
                lines += [scale_note(rep), ""]
    checked = holdout_lines(getattr(rep, "result", None))
    lines += [f"## {HOLDOUT_HEAD}", "", "```"] + checked + ["```", ""]
    lines += ["## Per-group rates of the released decision (held-out data)", ""]
    if getattr(rep, "group_rates", None) is not None:
        lines += markdown_table(GROUP_HEAD, group_rows(rep)) + ["", group_summary(rep), ""]
    else:
        lines += [getattr(rep, "group_rates_note", "") or "—", ""]
    lines += ["## Objective/violation trade-off guaranteed by the bounds", ""]
    if getattr(rep, "tradeoff", None):
        lines += markdown_table(TRADEOFF_HEAD, tradeoff_rows(rep)) + ["", tradeoff_note(rep), ""]
    else:
        lines += [getattr(rep, "tradeoff_note", "") or "—", ""]
    if rep.theorems:
        lines += ["## Theorem notes", ""] + [f"- {x}" for x in theorem_notes(rep)] + [""]
    lines += ["## Formulas", ""]
    for title, _, tex, vals in formulas(rep):
        extra = (" with " + ", ".join(f"{k}={fmt_value(v) if isinstance(v, float) else v}"
                                      for k, v in vals.items())) if vals else ""
        lines.append(f"- {title}: $${tex}$${extra}")
    if rep.pareto is not None:
        lines += ["", "## Error–violation frontier", "", rep.pareto.to_markdown()]
    return "\n".join(lines + [""] + [f"- {x}" for x in footer_notes(rep)])

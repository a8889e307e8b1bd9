"""Plain-text helpers for what privfair prints: grouped reasons and wrapped lines.

``explain()`` and the Analysis print reasons that often repeat — one per pair of groups when a
constraint compares every pair — so identical reasons are said once, with how many terms share
them, and every printed line is wrapped to :data:`WIDTH` characters.
"""

from __future__ import annotations

import textwrap

#: the width every explanation line is wrapped to
WIDTH = 100
#: how many of the terms that share a reason are named before "and k more"
NAMED = 3


def name_some(items, named: int = NAMED) -> str:
    """``"a, b, c and 27 more"`` (all of them when there are at most ``named + 1``)."""
    items = [str(i) for i in items]
    if len(items) <= named + 1:
        return ", ".join(items)
    return ", ".join(items[:named]) + f" and {len(items) - named} more"


def group_culprits(pairs) -> str:
    """``[(term, reason), ...]`` → one clause per distinct reason, in first-seen order.

    A reason shared by several terms is said once: ``"t1, t2, t3 and 27 more (same reason for
    all 30): reason"``; a reason of one term reads ``"term: reason"``."""
    order, terms = [], {}
    for term, reason in pairs:
        if reason not in terms:
            order.append(reason)
            terms[reason] = []
        terms[reason].append(str(term))
    out = []
    for reason in order:
        ts = terms[reason]
        if len(ts) == 1:
            out.append(f"{ts[0]}: {reason}")
        else:
            out.append(f"{name_some(ts)} (same reason for all {len(ts)}): {reason}")
    return "; ".join(out)


def group_names(items) -> list:
    """``[(name, reason), ...]`` → ``[(names, reason), ...]``, one per distinct reason in
    first-seen order, ``names`` the comma-joined names that share it."""
    order, names = [], {}
    for name, reason in items:
        if reason not in names:
            order.append(reason)
            names[reason] = []
        names[reason].append(str(name))
    return [(", ".join(names[r]), r) for r in order]


def said_once(items) -> str:
    """``[(name, text), ...]`` → ``"name1: text1; name2, name3 and 27 more: text2"``: each
    distinct text once, after the names that share it (see :func:`name_some`)."""
    order, names = [], {}
    for name, text in items:
        if text not in names:
            order.append(text)
            names[text] = []
        names[text].append(str(name))
    return "; ".join(f"{name_some(names[t])}: {t}" for t in order)


def wrap(line: str, indent: str = "", width: int = WIDTH, continuation: str | None = None) -> list:
    """``line`` (which starts with its own indentation) wrapped to ``width``; continuation lines
    start with the line's indentation plus ``indent`` (or with ``continuation`` when given)."""
    if len(line) <= width:
        return [line]
    if continuation is None:
        continuation = line[:len(line) - len(line.lstrip())] + indent
    return textwrap.wrap(line, width=width, subsequent_indent=continuation,
                         break_on_hyphens=False) or [line]


def wrap_text(text: str, indent: str = "    ", width: int = WIDTH) -> str:
    """Every line of ``text`` wrapped (see :func:`wrap`)."""
    return "\n".join(part for line in text.split("\n") for part in wrap(line, indent, width))

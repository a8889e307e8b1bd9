"""Plain-text and Markdown tables of strings: the one formatter the report, the Pareto table
and the path table share."""


def text_table(head, rows):
    """Lines of a column-aligned table, header first."""
    rows = [tuple(head)] + [tuple(r) for r in rows]
    w = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return ["  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip() for r in rows]


def markdown_table(head, rows):
    """Lines of a Markdown table (``|`` in a cell escaped)."""
    def esc(s):
        return str(s).replace("|", "\\|")

    lines = ["| " + " | ".join(map(esc, head)) + " |", "|" + " --- |" * len(head)]
    return lines + ["| " + " | ".join(map(esc, r)) + " |" for r in rows]

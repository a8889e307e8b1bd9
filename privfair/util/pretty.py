"""Line layout for printed expressions: break long lines between terms, never inside one.

``str(problem)`` of a constraint over every pair of 6 groups is a 900-character expression.
Wrapping it at spaces (``textwrap``) cuts terms in two (``abs(fpr[g0] -`` / ``fpr[g4])``);
:func:`layout` breaks it the way one would by hand: between the words of the outermost level
(``maximum(...)`` / ``<=`` / ``0.03``), and inside a bracket between its comma-separated items,
continuation lines hanging under the bracket.  Only where a break goes changes: the text with
its whitespace collapsed is the input (tests/test_compiler.py and test_problem_api.py check it).
"""

from __future__ import annotations

from .text import WIDTH

_OPEN, _CLOSE = "([{", ")]}"


def _split(text: str, sep: str) -> list:
    """``text`` split at the occurrences of ``sep`` outside every bracket."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(depth - 1, 0)
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            start = i = i + len(sep)
            continue
        i += 1
    parts.append(text[start:])
    return parts


def _first_bracket(text: str):
    """(index of the first opening bracket, index of its matching close), or None."""
    start = next((i for i, ch in enumerate(text) if ch in _OPEN), None)
    if start is None:
        return None
    depth = 0
    for i in range(start, len(text)):
        if text[i] in _OPEN:
            depth += 1
        elif text[i] in _CLOSE:
            depth -= 1
            if depth == 0:
                return start, i
    return None


def layout(text: str, col: int = 0, width: int = WIDTH) -> list:
    """``text`` placed at column ``col``, as lines of at most ``width`` characters where it can.

    The first line is returned without the ``col`` characters before it; the others carry their
    own indentation.  A term longer than the line (a name with no break inside) stays whole.
    """
    if col + len(text) <= width:
        return [text]
    words = _split(text, " ")
    if len(words) > 1:            # break between the outermost level's words first
        return _pack("", words, col, col + 4, width)
    found = _first_bracket(text)
    if found is None:
        return [text]
    i, j = found
    head, items, tail = text[:i + 1], _split(text[i + 1:j], ", "), text[j:]
    pieces = [item + "," for item in items[:-1]] + [items[-1] + tail]
    # continuation lines hang under the bracket, unless that is past half the line
    hang = col + len(head) if col + len(head) <= width // 2 else col + 4
    return _pack(head, pieces, col, hang, width)


def _pack(head: str, pieces: list, col: int, hang: int, width: int) -> list:
    """``head`` then ``pieces`` joined by single spaces, as many to a line as fit; a piece that
    does not fit on a line of its own is laid out inside (:func:`layout`)."""
    lines, line, start = [], head, col      # start: the column the current line's text begins at
    fresh = True                            # nothing but head/indentation on the line yet
    for piece in pieces:
        joiner = "" if fresh else " "
        if start + len(line) + len(joiner) + len(piece) > width and not fresh:
            lines.append(line)
            line, start, joiner = " " * hang, 0, ""
        sub = layout(piece, start + len(line) + len(joiner), width)
        line += joiner + sub[0]
        if len(sub) > 1:
            lines.append(line)
            lines.extend(sub[1:-1])
            line, start = sub[-1], 0
        fresh = False
    lines.append(line)
    return lines

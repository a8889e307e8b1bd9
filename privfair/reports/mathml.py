"""The report's formulas: each once (:func:`formulas`), simplified, and printed as presentation
MathML with its LaTeX source kept as an annotation (:func:`formula_mathml`); sympy is imported
when a formula is printed."""

from __future__ import annotations

import html


def formulas(rep):
    """The formulas of ``rep`` (bounds, lower bounds, theorems, EO orders), each once, as
    (label, sympy expression, LaTeX, values) tuples."""
    import sympy as sp

    out = []
    for b in rep.bounds:
        if b.formula is not None:
            expr, vals = b.formula
            out.append((f"{b.backend} ({b.theorem})", expr, vals))
    for lb in rep.lower_bounds:
        out.append((f"{lb.theorem}, {lb.name} (order, constant 1)", lb.formula, {}))
    for t in rep.theorems:
        if t.formula is not None:
            eq, vals = t.formula
            label = f"{t.cite} ({t.constants}{'' if t.applies else '; does not apply here'})"
            out.append((label, eq, vals))
    if rep.eo is not None:
        out.append(("[A] Cor 8.9 (order)", rep.eo["formula_A"], {}))
        out.append(("[J] (order)", rep.eo["formula_J"], {}))
    seen, once = set(), []
    for t, e, v in out:           # each formula once: the EO orders repeat Cor 8.9 / Cor C.2
        e = simplify_piecewise(e)
        key = sp.srepr(getattr(e, "rhs", e))
        if key not in seen:
            seen.add(key)
            once.append((t, e, sp.latex(e), v))
    return once


def simplify_piecewise(expr):
    """``expr`` with every Piecewise whose first branch always holds replaced by that branch
    (``Piecewise((x, True))`` → x); other Piecewise are kept (MathML shows them as cases)."""
    import sympy as sp

    def trivial(e):
        return isinstance(e, sp.Piecewise) and e.args and e.args[0].cond is sp.true

    try:
        return expr.replace(trivial, lambda e: e.args[0].expr)
    except AttributeError:   # not a sympy expression
        return expr


def _printer():
    """A sympy presentation-MathML printer that writes Piecewise as cases (sympy's own prints
    the text ``piecewise((…, …), (…, True))``)."""
    from sympy.printing.mathml import MathMLPresentationPrinter

    class Printer(MathMLPresentationPrinter):
        def _text(self, tag, text):
            el = self.dom.createElement(tag)
            el.appendChild(self.dom.createTextNode(text))
            return el

        def _print_Piecewise(self, expr):
            import sympy as sp

            if len(expr.args) == 1 and expr.args[0].cond is sp.true:
                return self._print(expr.args[0].expr)
            table = self.dom.createElement("mtable")
            table.setAttribute("columnalign", "left left")
            for piece in expr.args:
                tr = self.dom.createElement("mtr")
                value = self.dom.createElement("mtd")
                value.appendChild(self._print(piece.expr))
                cond = self.dom.createElement("mtd")
                if piece.cond is sp.true:
                    cond.appendChild(self._text("mtext", "\u2003otherwise"))
                else:
                    row = self.dom.createElement("mrow")
                    row.appendChild(self._text("mtext", "\u2003if\u2002"))
                    row.appendChild(self._print(piece.cond))
                    cond.appendChild(row)
                tr.appendChild(value)
                tr.appendChild(cond)
                table.appendChild(tr)
            mrow = self.dom.createElement("mrow")
            brace = self._text("mo", "{")
            brace.setAttribute("stretchy", "true")
            mrow.appendChild(brace)
            mrow.appendChild(table)
            return mrow

    return Printer({})


def formula_mathml(expr):
    """One formula as ``<math>``: presentation MathML, its LaTeX source kept as an
    ``<annotation>`` (not displayed) for copying and for readers without MathML."""
    import sympy as sp

    expr = simplify_piecewise(expr)
    body = _printer().doprint(expr)
    tex = html.escape(sp.latex(expr))
    return (f"<math display='block'><semantics><mrow>{body}</mrow>"
            f"<annotation encoding='application/x-tex'>{tex}</annotation></semantics></math>")

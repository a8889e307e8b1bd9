"""Rendering of :class:`privfair.report.Report`: terminal text, markdown and a self-contained HTML
page (matplotlib figures embedded as base64 PNG, formulas as sympy MathML; no external assets)."""

from __future__ import annotations

import base64
import html
import io
import math

from ._tables import markdown_table, text_table


def _n(v):
    """A sample size n (needed, or a lower bound n ≥ ...): rounded up, never down."""
    if v is None:
        return "—"
    if isinstance(v, float) and math.isinf(v):
        return "∞ (not reached ≤ 1e12)"
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return f"{math.ceil(v):,}"


def _r(v):
    return "∞" if v is None or (isinstance(v, float) and math.isinf(v)) else f"{v:.4g}"


def _bound_rows(rep):
    return [(b.backend, _r(b.bound), _n(b.n_needed), b.theorem) for b in rep.bounds]


def _lower_rows(rep):
    return [(lb.theorem, lb.name, _n(lb.n), "yes" if lb.applies else "no", lb.note)
            for lb in rep.lower_bounds]


def _meas_rows(rep):
    return [(m.backend, str(m.n), f"{m.mean:.4g}", f"{m.worst:.4g}", _r(m.bound),
             "yes" if m.within else "NO", m.reference) for m in rep.measurements]


def _eo_rows(rep):
    e = rep.eo
    if e is None:   # the decision set has no VC dimension (e.g. ProxyCells)
        return []
    return [("[A] Cor 8.9", "|A|⁴·VC/(εα³)", _n(e["agarwal"])),
            ("[A] Cor 8.9, corrected α power", "|A|⁴·VC/(εα⁴)", _n(e["agarwal_corrected"])),
            ("[A] Cor C.2 ([J] Thm 4.4)", f"|A|³·VC/(εα^(3+r)), r={e['r']:.3g}",
             _n(e["jagielski"]))]


def _theorem_rows(rep):
    out = []
    for e in rep.theorems:
        val = "—" if e.value is None else f"{e.quantity} = {_r(e.value) if e.value < 1e4 else _n(e.value)}"
        T = "—" if e.T_needed is None else f"{e.T_needed:,}"
        out.append((e.cite, e.constants, "applies" if e.applies else "does not apply", val,
                    _n(e.n_needed), T))
    return out


TABLES = (
    ("Upper bounds (each backend's theorem, via its plan)", _bound_rows,
     ("backend", "bound at n", "n for α", "theorem")),
    ("Theorems (checked against this problem; n for α where the theorem gives one)",
     _theorem_rows, ("theorem", "constants", "preconditions", "value at n", "n for α", "T")),
    ("Lower bounds ([A] §6)", _lower_rows, ("theorem", "setting", "n ≥", "applies", "note")),
    ("Equalized odds: [A] against [J]", _eo_rows, ("source", "order", "n₀ (constant 1)")),
    ("Measured excess risk of h (non-private reference; not released)", _meas_rows,
     ("backend", "n", "mean", "worst", "bound at n", "within", "reference")),
)


def _header(rep):
    p = rep.privacy
    return (f"privfair sample-complexity report — n={rep.n}, K={rep.K}, ε={p.epsilon:g}, "
            f"δ={p.delta:g}, α={rep.alpha:g}, β={rep.beta:g}")


def _theorem_notes(rep):
    """One line per theorem: what it bounds, why it (does not) apply, corrections, its home."""
    out = []
    for e in rep.theorems:
        line = f"{e.cite} — {e.title}: {'applies' if e.applies else 'does not apply'} ({e.reason})"
        if e.correction:
            line += f"; {e.correction}"
        if e.home:
            line += f" [formula: {e.home}]"
        out.append(line)
    return out


def _footer(rep):
    e = rep.eo
    lines = ([f"EO: |A|={e['A']}, VC={e['VC']} ({e['vc_source']}), q_min={e['q_min']}; {e['note']}"]
             if e is not None else ["EO comparison: omitted (the decision set declares no VC dimension)"])
    lines += [f"refused: {k}: {v}" for k, v in rep.refused.items()]
    return lines


def to_text(rep):
    out = [_header(rep), ""]
    for title, fn, head in TABLES:
        rows = fn(rep)
        if not rows:
            continue
        out += [title, "-" * len(title)] + text_table(head, rows) + [""]
    if rep.theorems:
        out += ["Theorem notes", "-------------"] + _theorem_notes(rep) + [""]
    return "\n".join(out + _footer(rep))


def _formulas(rep):
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


def to_markdown(rep):
    lines = [f"# {_header(rep)}", ""]
    for title, fn, head in TABLES:
        rows = fn(rep)
        if rows:
            lines += [f"## {title}", ""] + markdown_table(head, rows) + [""]
    if rep.theorems:
        lines += ["## Theorem notes", ""] + [f"- {x}" for x in _theorem_notes(rep)] + [""]
    lines += ["## Formulas", ""]
    for title, _, tex, vals in _formulas(rep):
        extra = (" with " + ", ".join(f"{k}={_r(v) if isinstance(v, float) else v}"
                                      for k, v in vals.items())) if vals else ""
        lines.append(f"- {title}: $${tex}$${extra}")
    if rep.pareto is not None:
        lines += ["", "## Error–violation frontier", "", rep.pareto.to_markdown()]
    return "\n".join(lines + [""] + [f"- {x}" for x in _footer(rep)])


# ------------------------------------------------------------------------------ formulas
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
    return (f"<math><semantics><mrow>{body}</mrow>"
            f"<annotation encoding='application/x-tex'>{tex}</annotation></semantics></math>")


# ------------------------------------------------------------------------------ figures
def _png(fig):
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def figures(rep):
    """base64 PNGs: the bounds against n (with α and the lower bounds), and the measured curve."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    out = []
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for b in rep.bounds:
        pts = [(m, v) for m, v in b.curve if math.isfinite(v) and v > 0]
        if pts:
            ax.plot(*zip(*pts), label=f"{b.backend} bound")
    ax.axhline(rep.alpha, color="k", ls=":", label=f"α = {rep.alpha:g}")
    for lb in rep.lower_bounds:
        if lb.applies:
            ax.axvline(lb.n, color="r", ls="--", label=f"{lb.theorem} (order)")
    ax.axvline(rep.n, color="grey", ls="-.", label=f"data n = {rep.n}")
    for name in sorted({m.backend for m in rep.measurements}):
        ms = [m for m in rep.measurements if m.backend == name]
        ax.plot([m.n for m in ms], [max(m.worst, 1e-6) for m in ms], "o", label=f"{name} measured (worst)")
    ax.set(xscale="log", yscale="log", xlabel="n", ylabel="excess risk of h",
           title="theorem bounds against n")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    out.append(("Bounds against n", _png(fig)))
    if rep.measurements:
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for name in sorted({m.backend for m in rep.measurements}):
            ms = [m for m in rep.measurements if m.backend == name]
            ns = [m.n for m in ms]
            ax.errorbar(ns, [m.mean for m in ms],
                        yerr=[[m.mean - min(m.excess) for m in ms],
                              [m.worst - m.mean for m in ms]], fmt="o-", capsize=3,
                        label=f"{name} measured")
        ax.set(xscale="log", xlabel="n (subsample)", ylabel="excess risk of h",
               title="measured excess risk (seeds: min / mean / max)")
        ax.legend(fontsize=7)
        out.append(("Measured excess risk against n", _png(fig)))
    if rep.pareto is not None:
        out.append(("Error–violation frontier", _png(rep.pareto.plot())))
    return out


def to_html(rep):
    e = html.escape
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'>",
             f"<title>{e(_header(rep))}</title><style>body{{font-family:sans-serif;margin:2em}}"
             "table{border-collapse:collapse}td,th{border:1px solid #999;padding:3px 8px}"
             "code{background:#eee}</style></head><body>", f"<h1>{e(_header(rep))}</h1>"]
    for title, fn, head in TABLES:
        rows = fn(rep)
        if not rows:
            continue
        parts.append(f"<h2>{e(title)}</h2><table><tr>" + "".join(f"<th>{e(h)}</th>" for h in head)
                     + "</tr>")
        parts += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows]
        parts.append("</table>")
    if rep.theorems:
        parts.append("<h2>Theorem notes</h2><ul>" + "".join(f"<li>{e(x)}</li>"
                                                          for x in _theorem_notes(rep)) + "</ul>")
    parts.append("<h2>Formulas</h2><p class='note'>Each formula once, as MathML; its LaTeX "
                 "source is embedded in the formula (an annotation) for copying.</p><ul>")
    for title, expr, tex, vals in _formulas(rep):
        extra = (" with " + ", ".join(f"{k}={_r(v) if isinstance(v, float) else v}"
                                      for k, v in vals.items())) if vals else ""
        parts.append(f"<li>{e(title)}: {formula_mathml(expr)}{e(extra)}</li>")
    parts.append("</ul>")
    for title, b64 in figures(rep):
        parts.append(f"<h2>{e(title)}</h2><img alt='{e(title)}' src='data:image/png;base64,{b64}'>")
    if rep.pareto is not None:
        parts.append("<pre>" + e(str(rep.pareto)) + "</pre>")
    parts.append("<ul>" + "".join(f"<li>{e(x)}</li>" for x in _footer(rep)) + "</ul>")
    return "\n".join(parts + ["</body></html>"])

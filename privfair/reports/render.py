# Over 500 lines: one renderer for three formats (text, markdown, HTML) of the same report
#   sections; splitting by format would split each section's logic.
"""Rendering of :class:`privfair.reports.report.Report`: terminal text, markdown and a self-contained HTML
page (matplotlib figures embedded as base64 PNG, formulas as sympy MathML; no external assets)."""

from __future__ import annotations

import base64
import html
import io
import math
import textwrap

from ..util.tables import markdown_table, text_table


def format_n(v):
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


def _ratio(v, n):
    r = v / n
    return f"{r:,.0f}×" if r >= 10 else f"{r:.2g}×"


def n_cell(v, n):
    """A sample size n needed for α, and how it compares with the data's n: a guarantee that
    needs more rows than the data has says nothing about this data."""
    s = format_n(v)
    if (n and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            and v > n):
        s += f" ({_ratio(v, n)} the data's n)"
    return s


def t_cell(T):
    """An iteration count a theorem prescribes, labelled *impractical* beyond 10⁸ (as the
    Analysis does): it is the theorem's prescription for α, not what a backend runs."""
    from ..analysis.compiler import IMPRACTICAL_T

    if isinstance(T, float) and not math.isfinite(T):
        return _r(T)
    s = f"{math.ceil(T):,}"                  # an iteration count: rounded up, never down
    if T > IMPRACTICAL_T:
        s += " [impractical: > 10⁸ iterations]"
    return s


def bound_cell(B, scale):
    """A bound on the excess risk of h, labelled *vacuous* at or above the range of h."""
    if B is None:
        return "—"
    if not math.isfinite(B):
        return "∞ (no bound)"
    if scale is not None and scale.vacuous(B):
        return f"{B:.4g} [vacuous: ≥ {scale.range_h:.4g}]"
    return f"{B:.4g}"


def terms_cell(B, scale):
    """A bound B on the excess risk of h in error/violation terms ([A] Cor 4.2):
    f ≤ f* + B and max(0, g) ≤ (B + range f)/G, each labelled vacuous at its trivial bound."""
    if scale is None or B is None or not math.isfinite(B):
        return "—"
    obj, ov = scale.objective(B)
    out = f"f − f* ≤ {obj:.3g}"
    if ov:
        out += f" [vacuous: ≥ {scale.range_f:.3g}]"
    vio, vv = scale.violation(B)
    if vio is not None:
        out += f"; violation ≤ {vio:.3g}"
        if vv:
            out += f" [vacuous: ≥ {max(0.0, scale.g_max):.3g}]"
    return out


def _bound_rows(rep):
    sc = getattr(rep, "scale", None)
    return [(b.backend, bound_cell(b.bound, sc), terms_cell(b.bound, sc), n_cell(b.n_needed, rep.n),
             b.theorem) for b in rep.bounds]


def _lower_rows(rep):
    return [(lb.theorem, lb.name, format_n(lb.n), "yes" if lb.applies else "no", lb.note)
            for lb in rep.lower_bounds]


def _meas_rows(rep):
    sc = getattr(rep, "scale", None)
    return [(m.backend, str(m.n), f"{m.mean:.4g}", f"{m.worst:.4g}", bound_cell(m.bound, sc),
             ("yes (the bound is vacuous)" if sc is not None and sc.vacuous(m.bound) else "yes")
             if m.within else "NO", m.reference) for m in rep.measurements]


def _eo_rows(rep):
    e = rep.eo
    if e is None:   # the decision set has no VC dimension (e.g. ProxyCells)
        return []
    return [("[A] Cor 8.9", "|A|⁴·VC/(εα³)", format_n(e["agarwal"])),
            ("[A] Cor 8.9, corrected α power", "|A|⁴·VC/(εα⁴)", format_n(e["agarwal_corrected"])),
            ("[A] Cor C.2 ([J] Thm 4.4)", f"|A|³·VC/(εα^(3+r)), r={e['r']:.3g}",
             format_n(e["jagielski"]))]


def theorem_rows(rep):
    """One row per theorem entry of ``rep``: (theorem, constants, preconditions, value at n,
    n for α, T)."""
    out = []
    for e in rep.theorems:
        if not e.applies:
            # its preconditions fail here: a value, an n for α or a T evaluated at this problem's
            # constants would read as a guarantee it does not give (the notes say why)
            out.append((e.cite, e.constants, "does not apply", "—", "—", "—"))
            continue
        val = "—" if e.value is None else f"{e.quantity} = {_r(e.value) if e.value < 1e4 else format_n(e.value)}"
        sc = getattr(rep, "scale", None)
        if e.quantity == "excess of h" and sc is not None and sc.vacuous(e.value):
            val += f" [vacuous: ≥ {sc.range_h:.4g}]"
        if e.value is not None and str(e.quantity).startswith("T"):
            val = f"{e.quantity} = {t_cell(e.value)}"
        T = "—" if e.T_needed is None else t_cell(e.T_needed)
        out.append((e.cite, e.constants, "applies" if e.applies else "does not apply", val,
                    n_cell(e.n_needed, rep.n), T))
    return out


def _pct(v):
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


def group_rows(rep):
    """(group, held-out rows, selection rate, TPR, FPR) of the released decision."""
    g = getattr(rep, "group_rates", None)
    if g is None:
        return []
    return [(name, f"{n:,}", _pct(s), _pct(t), _pct(f))
            for name, n, s, t, f in zip(g.groups, g.n, g.selection, g.tpr, g.fpr)]


GROUP_HEAD = ("group", "held-out rows", "selection rate P(ŷ=1)", "TPR P(ŷ=1|y=1)",
              "FPR P(ŷ=1|y=0)")


def group_summary(rep):
    """One line: the released decision's metrics on the held-out data."""
    g = rep.group_rates
    m = g.metrics
    return (f"On {g.rows:,} held-out rows (expected prediction of the released decision): "
            f"error {_pct(m.get('error'))}, demographic-parity gap {_pct(m.get('dp_violation'))}, "
            f"equalized-odds gap {_pct(m.get('eo_violation'))}.  Held-out data, never the "
            f"private training data.")


def tradeoff_rows(rep):
    """(ε, α, G, bound on the excess of h, f − f* ≤, violation ≤) per planned point."""
    out = []
    for t in getattr(rep, "tradeoff", ()):
        obj = f"{t.objective:.3g}" + (" [vacuous]" if t.objective_vacuous else "")
        vio = ("—" if t.violation is None else
               f"{t.violation:.3g}" + (" [vacuous]" if t.violation_vacuous else ""))
        mark = " (this report)" if (t.epsilon == rep.privacy.epsilon
                                    and t.alpha == rep.alpha) else ""
        out.append((f"{t.epsilon:g}{mark}", f"{t.alpha:.3g}", f"{t.G:.4g}", f"{t.bound:.4g}",
                    obj, vio))
    return out


TRADEOFF_HEAD = ("ε", "α", "G", "bound on excess of h", "f − f* ≤", "violation ≤")


def tradeoff_note(rep):
    name = rep.tradeoff[0].backend if rep.tradeoff else ""
    return (f"What the theorem of the chosen backend{f' ({name})' if name else ''} guarantees "
            "in error/violation terms ([A] Cor 4.2) when planned at each (ε, α): a smaller α "
            "raises the penalty G = (α + range f)/α, which tightens the violation guarantee and "
            "loosens the objective one; a larger ε tightens both.  Guarantees (upper bounds), "
            "not measurements; public: plans read the schema and n only.")


TABLES = (
    ("Upper bounds (each backend's theorem, via its plan)", _bound_rows,
     ("backend", "bound at n", "in error/violation terms", "n for α", "theorem")),
    ("Theorems (checked against this problem; n for α where the theorem gives one)",
     theorem_rows, ("theorem", "constants", "preconditions", "value at n", "n for α", "T")),
    ("Lower bounds ([A] §6)", _lower_rows, ("theorem", "setting", "n ≥", "applies", "note")),
    ("Equalized odds: [A] against [J]", _eo_rows, ("source", "order", "n₀ (constant 1)")),
    ("Measured excess risk of h (non-private reference; not released)", _meas_rows,
     ("backend", "n", "mean", "worst", "bound at n", "within", "reference")),
)


def _header(rep):
    p = rep.privacy
    return (f"privfair sample-complexity report — n={rep.n}, K={rep.K}, ε={p.epsilon:g}, "
            f"δ={p.delta:g}, α={rep.alpha:g}, β={rep.beta:g}")


def scale_note(rep):
    """What 'vacuous' means here and how a bound reads in error/violation terms."""
    sc = getattr(rep, "scale", None)
    if sc is None or sc.range_h is None:
        return ("No trivial bound: the range of f over ℓ ∈ [0, 1]^K is unknown, so no bound is "
                "labelled vacuous.")
    out = ("[vacuous: ≥ X] marks a bound at or above its trivial bound X: it says nothing. "
           "'k× the data's n' marks an n for α beyond the data: no guarantee at α on this "
           "data. [impractical: > 10⁸ iterations] marks a theorem's T for α that no run would "
           f"make (each backend plans its own T). Trivial bounds (public: interval ranges over ℓ ∈ [0, 1]^K, no data read): "
           f"f varies by at most {sc.range_f:.4g}")
    if sc.g_max is None:
        out += (f", so a bound on the excess risk of h = f at or above {sc.range_h:.4g} is "
                "vacuous (it says nothing). A bound B gives f ≤ f* + B; n for α is where B ≤ α.")
        return out
    out += (f" and max(0, g) by at most {max(0.0, sc.g_max):.4g}, so h = f + G·max(0, g) with "
            f"G = {sc.G:.4g} varies by at most {sc.range_h:.4g}: a bound at or above it is "
            f"vacuous (it says nothing). In error/violation terms ([A] Lemma 4.1/Cor 4.2, when "
            f"some decision is feasible) a bound B on the excess risk of h gives f ≤ f* + B "
            f"(f* the best feasible value) and violation max(0, g) ≤ (B + {sc.range_f:.4g})/"
            f"{sc.G:.4g}, each vacuous at its own trivial bound; n for α is where B ≤ α, "
            f"i.e. f ≤ f* + α and violation ≤ α.")
    return out


def glance(rep):
    """A few sentences a practitioner reads first: the planner's (or the result's) backend,
    what its bound says at this n — vacuous or not, in error/violation terms — and the n it
    needs for α (and why nothing was measured, when measuring was asked and is impossible)."""
    out = _glance(rep)
    if getattr(rep, "measure_note", ""):
        out.append(rep.measure_note)
    return out


def _glance(rep):
    sc = getattr(rep, "scale", None)
    out = []
    result = getattr(rep, "result", None)
    pick = None
    if result is not None:
        pick = next((b for b in rep.bounds if b.backend == result.backend), None)
        cert = getattr(result, "certificate", None)
        if cert is not None:
            out.append(f"Released decision: backend {result.backend}, {cert.headline()}.")
    if pick is None and rep.bounds:
        pick = rep.bounds[0]
        out.append(f"Planner's choice: {pick.backend} ({pick.theorem}).")
    if pick is None:
        out.append("No backend gives a bound on this problem.")
        return out
    B = pick.bound
    if not math.isfinite(B):
        out.append(f"{pick.backend}'s theorem gives no finite bound at n = {rep.n:,}.")
        return out
    if sc is not None and sc.vacuous(B):
        out.append(f"Its bound on the excess risk of h at n = {rep.n:,} is {B:.4g}: vacuous — at "
                   f"or above {sc.range_h:.4g}, the most h can vary, so the theorem says nothing "
                   f"about this data.")
    else:
        out.append(f"Its bound on the excess risk of h at n = {rep.n:,} is {B:.4g}"
                   + (f" (h varies by at most {sc.range_h:.4g})." if sc is not None
                      and sc.range_h is not None and math.isfinite(sc.range_h) else "."))
    terms = terms_cell(B, sc)
    if terms != "—":
        out.append(f"In error/violation terms: {terms}.")
    v = pick.n_needed
    if v is not None and math.isinf(v):
        out.append(f"The bound does not reach α = {rep.alpha:g} at any n ≤ 1e12.")
    elif v is not None and v > rep.n:
        out.append(f"It reaches α = {rep.alpha:g} at n = {format_n(v)}, {_ratio(v, rep.n)} this "
                   f"data's n = {rep.n:,}: no guarantee at α on this data.")
    elif v is not None:
        out.append(f"It reaches α = {rep.alpha:g} at n = {format_n(v)} ≤ this data's n = {rep.n:,}.")
    return out


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
    out = [_header(rep), "", "At a glance", "-----------"] + glance(rep) + [""]
    for title, fn, head in TABLES:
        rows = fn(rep)
        if not rows:
            continue
        out += [title, "-" * len(title)] + text_table(head, rows) + [""]
        if fn is _bound_rows:
            out += textwrap.wrap(scale_note(rep), 100) + [""]
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
        out += ["Theorem notes", "-------------"] + _theorem_notes(rep) + [""]
    return "\n".join(out + _footer(rep))


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


def to_markdown(rep):
    lines = [f"# {_header(rep)}", "", "## At a glance", ""] + [f"- {x}" for x in glance(rep)]
    lines.append("")
    for title, fn, head in TABLES:
        rows = fn(rep)
        if rows:
            lines += [f"## {title}", ""] + markdown_table(head, rows) + [""]
            if fn is _bound_rows:
                lines += [scale_note(rep), ""]
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
        lines += ["## Theorem notes", ""] + [f"- {x}" for x in _theorem_notes(rep)] + [""]
    lines += ["## Formulas", ""]
    for title, _, tex, vals in formulas(rep):
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
    return (f"<math display='block'><semantics><mrow>{body}</mrow>"
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
    sc = getattr(rep, "scale", None)
    if sc is not None and sc.range_h is not None and math.isfinite(sc.range_h) and sc.range_h > 0:
        lo, hi = ax.get_ylim()
        top = max(hi, sc.range_h * 10)
        ax.axhspan(sc.range_h, top, color="#f0a030", alpha=0.15, lw=0,
                   label=f"vacuous: ≥ {sc.range_h:.3g}, the range of h")
        ax.axhline(sc.range_h, color="#b06000", lw=1)
        ax.set_ylim(min(lo, sc.range_h / 10), top)
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
    return out


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def group_rates_figure(g):
    """Grouped bars: selection rate, TPR and FPR of each group (held-out data)."""
    import numpy as np

    plt = _plt()
    k = len(g.groups)
    fig, ax = plt.subplots(figsize=(max(5.5, 1.3 * k + 3), 3.8))
    x = np.arange(k)
    w = 0.26
    series = (("selection rate", g.selection, "#4c72b0"), ("TPR", g.tpr, "#55a868"),
              ("FPR", g.fpr, "#c44e52"))
    for i, (name, vals, colour) in enumerate(series):
        v = np.array([np.nan if u is None else u for u in vals], dtype=float)
        bars = ax.bar(x + (i - 1) * w, np.nan_to_num(v), w, label=name, color=colour)
        for b, u in zip(bars, v):
            ax.annotate("n/a" if np.isnan(u) else f"{u:.2f}", (b.get_x() + b.get_width() / 2,
                        0 if np.isnan(u) else u), ha="center", va="bottom", fontsize=7,
                        xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(x, [f"{name}\n({n:,} rows)" for name, n in zip(g.groups, g.n)])
    ax.set_ylim(0, 1.08)
    ax.set_ylabel("rate (expected prediction)")
    ax.set_title("per-group rates of the released decision on held-out data")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig


def tradeoff_figure(rep):
    """The guaranteed objective excess against the guaranteed violation, one curve per ε
    over α (vacuous regions shaded); objective against ε when there is no constraint."""
    plt = _plt()
    sc = rep.scale
    pts = rep.tradeoff
    fig, ax = plt.subplots(figsize=(7, 4.4))
    colours = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3")
    levels = sorted({t.epsilon for t in pts})
    constrained = any(t.violation is not None for t in pts)
    for i, eps in enumerate(levels):
        ts = sorted((t for t in pts if t.epsilon == eps), key=lambda t: t.alpha)
        c = colours[i % len(colours)]
        if constrained:
            xs, ys = [t.violation for t in ts], [t.objective for t in ts]
        else:
            xs, ys = [t.alpha for t in ts], [t.objective for t in ts]
        ax.plot(xs, ys, "o-", color=c, ms=4, label=f"ε = {eps:g}")
        if eps == rep.privacy.epsilon:
            for t, xv, yv in zip(ts, xs, ys):
                ax.annotate(f"α={t.alpha:.2g}", (xv, yv), fontsize=6, xytext=(3, 3),
                            textcoords="offset points", color=c)
    here = [t for t in pts if t.epsilon == rep.privacy.epsilon and t.alpha == rep.alpha]
    if here:
        t = here[0]
        ax.plot([t.violation if constrained else t.alpha], [t.objective], "*", ms=15,
                color="k", label=f"this report (ε = {t.epsilon:g}, α = {t.alpha:g})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    if sc.range_f is not None and sc.range_f > 0:
        ax.axhspan(sc.range_f, max(y1, sc.range_f * 3), color="#f0a030", alpha=0.15, lw=0,
                   label=f"objective vacuous (≥ {sc.range_f:.3g})")
        y1 = max(y1, sc.range_f * 3)
    if constrained and sc.g_max is not None and 0 < sc.g_max < float("inf"):
        ax.axvspan(sc.g_max, max(x1, sc.g_max * 3), color="#c44e52", alpha=0.10, lw=0,
                   label=f"violation vacuous (≥ {sc.g_max:.3g})")
        x1 = max(x1, sc.g_max * 3)
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_xlabel("guaranteed violation max(0, g) ≤" if constrained else "α (target)")
    ax.set_ylabel("guaranteed objective excess f − f* ≤")
    ax.set_title("objective/violation trade-off the bounds guarantee ([A] Cor 4.2)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig


# ------------------------------------------------------------------------------ HTML
CSS = (".pf-report{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:72em;"
       "margin:1.5em auto;padding:0 1em;color:#1b1f23;line-height:1.45}"
       ".pf-report h1{font-size:1.6em;margin-bottom:.2em}"
       ".pf-report h2{margin-top:1.8em;border-bottom:1px solid #d0d7de;padding-bottom:.2em}"
       ".pf-report table{border-collapse:collapse;margin:.6em 0;font-size:.92em}"
       ".pf-report td,.pf-report th{border:1px solid #d0d7de;padding:.25em .6em;"
       "text-align:left;vertical-align:top}"
       ".pf-report th{background:#f6f8fa}"
       ".pf-report table.kv td:first-child{white-space:nowrap;color:#444}"
       ".pf-report tr.chosen td{background:#eef6ff;font-weight:600}"
       ".pf-report .vacuous,.pf-report tr td.vacuous{color:#8a4b00;background:#fff4e5}"
       ".pf-report .note,.pf-report figcaption{color:#555;font-size:.92em}"
       ".pf-report .headline{font-size:1.1em;font-weight:600}"
       ".pf-report details summary{cursor:pointer;color:#0550ae}"
       ".pf-report figure{margin:1em 0}.pf-report img{max-width:100%}"
       ".pf-report .formula{overflow-x:auto;font-size:1.15em;padding:.2em 0}"
       ".pf-report dt{font-weight:600;margin-top:.8em}.pf-report dd{margin-left:1.5em}"
       ".pf-report .glance{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;"
       "padding:.6em 1em}.pf-report .glance li{margin:.2em 0}")


class Raw(str):
    """A table cell that is already HTML (everything else is escaped)."""


def _cell(c):
    if isinstance(c, Raw):
        return str(c)
    return html.escape(str(c))


def html_table(head, rows, cls=None, row_classes=None):
    """An HTML table: ``rows`` of cells (str escaped, :class:`Raw` as is); a cell whose text
    says "vacuous" is marked with the class ``vacuous``."""
    out = [f"<table{f' class={chr(39)}{cls}{chr(39)}' if cls else ''}>"]
    if head:
        out.append("<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>")
    for i, r in enumerate(rows):
        rc = (row_classes or {}).get(i)
        cells = []
        for c in r:
            mark = " class='vacuous'" if "vacuous" in str(c) and not isinstance(c, Raw) else ""
            cells.append(f"<td{mark}>{_cell(c)}</td>")
        out.append(f"<tr{f' class={chr(39)}{rc}{chr(39)}' if rc else ''}>" + "".join(cells) + "</tr>")
    return "".join(out) + "</table>"


def analysis_html(analysis):
    """The compiler's :class:`~privfair.analysis.compiler.Analysis` as a property/value table, with its
    rewrites and its unproven or unmet properties as lists."""
    e = html.escape
    rows = analysis.rows()
    parts = [html_table(("property", "value"), rows, cls="kv")]
    if analysis.rewrites:
        parts.append("<p><b>Smooth surrogates substituted</b></p><ul>"
                     + "".join(f"<li>{e(r)}</li>" for r in analysis.rewrites) + "</ul>")
    if analysis.reasons:
        parts.append("<p><b>Unproven or unmet</b></p>"
                     + html_table(("property", "why"), list(analysis.reasons.items())))
    return "".join(parts)


def _param(v):
    try:
        from privfair.backends.base import format_param
    except ImportError:   # pragma: no cover
        format_param = str
    return format_param(v)


def _plan_details(p):
    e = html.escape
    items = [f"<li><b>{e(str(k))}</b> = {e(_param(v))}</li>" for k, v in p.params.items()]
    items += [f"<li>spends ε={eps:.4g}, δ={delta:.3g} on {e(str(what))}</li>"
              for what, eps, delta in p.budget]
    items += [f"<li>note: {e(str(n))}</li>" for n in p.notes]
    if not items:
        return Raw("—")
    return Raw(f"<details><summary>{len(p.params)} parameters, {len(p.budget)} releases, "
               f"{len(p.notes)} notes</summary><ul>{''.join(items)}</ul></details>")


def plan_rows(plans, scale=None):
    """One row per accepted plan, best first: (chosen, rank, backend, bound, terms, theorem)."""
    rows = []
    for i, p in enumerate(plans.ranked):
        B = float(p.predicted_excess_risk)
        rows.append(("→ chosen" if p is plans.chosen else "", str(i + 1), p.backend,
                     bound_cell(B, scale), terms_cell(B, scale), p.theorem))
    return rows


def plans_html(plans, scale=None):
    """The planner's :class:`~privfair.planning.planner.Plans` as tables: the ranking (the chosen plan
    marked, each plan's parameters and budget folded) and the refusals (one row per reason)."""
    e = html.escape
    parts = []
    if plans.group_mass_share:
        parts.append(f"<p>Group-mass bound: estimated privately with "
                     f"{plans.group_mass_share:.0%} of ε before the backend runs (Laplace on "
                     f"group-label counts).</p>")
    if plans.ranked:
        head = ("", "rank", "backend", "predicted excess risk of h", "in error/violation terms",
                "theorem", "details")
        rows = [r + (_plan_details(p),) for r, p in zip(plan_rows(plans, scale), plans.ranked)]
        chosen = {i: "chosen" for i, p in enumerate(plans.ranked) if p is plans.chosen}
        parts.append(html_table(head, rows, row_classes=chosen))
    else:
        parts.append("<p><b>No backend accepts this problem.</b></p>")
    if plans.refused:
        from ..util.text import group_names

        parts.append("<p><b>Refused</b></p>"
                     + html_table(("backends", "why"), group_names(plans.refused.items())))
    return "".join(parts)


def certificate_html(cert):
    """A :class:`~privfair.privacy.certificate.Certificate` as a summary table and one row per
    release (mechanism, sensitivity, noise scale, ε and δ each, theorem)."""
    from ..privacy.events import fmt_number as _fmt
    from ..privacy.spec import RELATIONS

    e = html.escape
    kv = [("neighbouring datasets", RELATIONS.get(cert.relation, cert.relation))]
    if cert.is_private:
        kv.append(("composition", f"{cert.rule} — {cert.rule_description}"))
    kv.append(("numerics", cert.numerics()))
    if cert.seeded:
        kv.append(("randomness", "seeded generator (reproducible, not cryptographic)"))
    tried = [f"{r}: {_fmt(x)}" for r, x in cert.candidates.items() if x is not None]
    if tried:
        kv.append(("ε by rule at this δ", ", ".join(tried)))
    parts = [f"<p class='headline'>{e(cert.headline())}</p>", html_table(None, kv, cls="kv")]
    if cert.releases:
        rows = []
        for i, ev in enumerate(cert.releases, 1):
            sens = "—" if ev.sensitivity is None else f"{_fmt(ev.sensitivity)} ({ev.norm})"
            scale = _fmt(ev.scale)
            if ev.sampling_rate is not None:
                scale += f", q={_fmt(ev.sampling_rate)} ({ev.neighbouring})"
            rows.append((str(i), ev.mechanism + (f" ×{ev.count}" if ev.count > 1 else ""),
                         sens, ev.sensitivity_source or "—", scale,
                         "—" if ev.epsilon is None else _fmt(ev.epsilon),
                         _fmt(ev.delta) if ev.delta else "0", ev.theorem or "—",
                         (ev.sampler or "—") + (" (idealized)" if ev.idealized else "")))
        parts.append(html_table(("#", "mechanism", "sensitivity", "sensitivity from",
                                 "noise scale", "ε each", "δ each", "theorem", "sampler"), rows))
    else:
        parts.append("<p>No releases.</p>")
    if cert.notes:
        parts.append("<ul>" + "".join(f"<li>{e(n)}</li>" for n in cert.notes) + "</ul>")
    return "".join(parts)


def pareto_html(table):
    """A :class:`~privfair.reports.pareto.ParetoTable` as an HTML table."""
    return html_table(table.HEADER, table.rows())


def _figure(title, b64, caption=""):
    e = html.escape
    cap = f"<figcaption>{e(caption)}</figcaption>" if caption else ""
    return (f"<figure><img alt='{e(title)}' src='data:image/png;base64,{b64}'>{cap}</figure>")


def problem_html(problem):
    """A problem's statement (``str(problem)``) as lines of code, not a <pre> dump."""
    lines = [ln for ln in str(problem).splitlines() if ln.strip()]
    return "<p>" + "<br>".join(f"<code>{html.escape(ln.strip())}</code>" for ln in lines) + "</p>"


def to_html(rep, title=None, sections=()):
    """The report as one self-contained page (no scripts, no external assets).

    ``title`` replaces the heading; ``sections`` — (heading, HTML fragment) pairs, e.g. a
    command's metrics table or :func:`problem_html` — go right after "At a glance"."""
    e = html.escape
    parts = ["<div class='glance'><b>At a glance</b><ul>"
             + "".join(f"<li{' class=vacuous' if 'vacuous' in x else ''}>{e(x)}</li>"
                       for x in glance(rep)) + "</ul></div>"]
    for heading, fragment in sections:
        parts.append(f"<h2>{e(heading)}</h2>{fragment}")
    result = getattr(rep, "result", None)
    if result is not None and getattr(result, "certificate", None) is not None:
        parts.append("<h2>Privacy certificate</h2>" + certificate_html(result.certificate))
    parts.append("<h2>Per-group rates of the released decision</h2>")
    g = getattr(rep, "group_rates", None)
    if g is not None:
        parts.append(_figure("per-group rates", _png(group_rates_figure(g)),
                             "Selection rate, true-positive rate and false-positive rate of each "
                             "group: the expected prediction of the released (randomized) "
                             "decision on the held-out data given to the report."))
        parts.append(html_table(GROUP_HEAD, group_rows(rep)))
        parts.append(f"<p class='note'>{e(group_summary(rep))}</p>")
    else:
        parts.append(f"<p>{e(getattr(rep, 'group_rates_note', '') or '—')}</p>")
    parts.append("<h2>Accuracy/fairness trade-off</h2>")
    if getattr(rep, "tradeoff", None):
        parts.append("<h3>Guaranteed by the bounds</h3>"
                     + _figure("trade-off guaranteed by the bounds", _png(tradeoff_figure(rep)),
                               tradeoff_note(rep))
                     + "<details><summary>the planned points</summary>"
                     + html_table(TRADEOFF_HEAD, tradeoff_rows(rep)) + "</details>")
    else:
        parts.append(f"<p>{e(getattr(rep, 'tradeoff_note', '') or '—')}</p>")
    if rep.pareto is not None:
        parts.append("<h3>Measured: objective–violation frontier</h3>"
                     + _figure("objective–violation frontier", _png(rep.pareto.plot()),
                               "pf.pareto: the objective f and the violation max(0, g) of the "
                               "released decision at each privacy and constraint level (mean "
                               "over seeds), evaluated on the data the solves used; ★ marks "
                               "the points no other point of the same ε beats in both.")
                     + pareto_html(rep.pareto))
    plans = getattr(rep, "plans", None)
    if plans is not None:
        parts.append("<h2>Analysis</h2><p class='note'>What the compiler proved about f, g and "
                     "h = f + G·max(0, g) under this privacy requirement.</p>"
                     + analysis_html(plans.analysis))
        parts.append("<h2>Plan ranking</h2><p class='note'>Every backend's theorem bound on the "
                     "excess risk of h at this n, best first.</p>"
                     + plans_html(plans, getattr(rep, "scale", None)))
    for heading, fn, head in TABLES:
        rows = fn(rep)
        if rows:
            parts.append(f"<h2>{e(heading)}</h2>" + html_table(head, rows))
            if fn is _bound_rows:
                parts.append(f"<p class='note'>{e(scale_note(rep))}</p>")
    figs = figures(rep)
    for heading, b64 in figs:
        parts.append(f"<h2>{e(heading)}</h2>" + _figure(heading, b64))
    if rep.theorems:
        parts.append("<h2>Theorem notes</h2><ul>" + "".join(f"<li>{e(x)}</li>"
                                                          for x in _theorem_notes(rep)) + "</ul>")
    parts.append("<h2>Formulas</h2><p class='note'>Each formula once, as MathML; its LaTeX "
                 "source is embedded in the formula (an annotation) for copying.</p><dl>")
    for label, expr, tex, vals in formulas(rep):
        extra = ("<div class='note'>with " + e(", ".join(
            f"{k} = {_r(v) if isinstance(v, float) else v}" for k, v in vals.items()))
            + "</div>") if vals else ""
        parts.append(f"<dt>{e(label)}</dt><dd><div class='formula'>{formula_mathml(expr)}"
                     f"</div>{extra}</dd>")
    parts.append("</dl>")
    parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{e(x)}</li>" for x in _footer(rep))
                 + "</ul>")
    return page(title or "privfair report", parts, subtitle=_header(rep),
                head_title=title or _header(rep))


def page(title, body, subtitle=None, head_title=None) -> str:
    """THE page shell every HTML page of privfair is built in (the report's, and the pages of
    ``privfair solve --report`` and ``privfair report --output X.html``): one self-contained
    document, its style inline, no scripts and no external assets.

    ``body`` is a list of HTML fragments (already escaped), ``subtitle`` a line of text under
    the heading, ``head_title`` the browser title (``title`` by default)."""
    e = html.escape
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             f"<title>{e(head_title or title)}</title></head><body>",
             f"<div class='pf-report'><style>{CSS}</style>",
             f"<h1>{e(title)}</h1>" + (f"<p class='note'>{e(subtitle)}</p>" if subtitle else "")]
    return "\n".join(parts + list(body) + ["</div></body></html>"])


def metrics_html(rows) -> str:
    """The metrics of a solve (:func:`privfair.reports.metrics.metrics_rows`) as a table; a
    private solve's training-set fairness gaps are withheld there, and said so here."""
    from .metrics import METRICS_HEAD, metric_cells

    return (html_table(METRICS_HEAD, [metric_cells(r) for r in rows])
            + "<p>Metrics of the expected prediction of the (randomized) decision; a "
              "private solve's training-set fairness gaps read the private sensitive column "
              "and are withheld.</p>")


def command_page(title, report=None, note="", sections=(), plans=None, certificate=None) -> str:
    """A command's page: the sample-complexity ``report``'s page with ``sections`` —
    (heading, HTML fragment) pairs — after "At a glance"; where no report could be built on
    this problem (``report`` None, ``note`` says why), the same page shell with the note, the
    sections, the Analysis and plan ranking of ``plans`` and the ``certificate``."""
    e = html.escape
    if report is not None:
        return to_html(report, title=title, sections=sections)
    body = [f"<h2>Sample-complexity report</h2><p class='note'>{e(note or '—')}</p>"]
    body += [f"<h2>{e(heading)}</h2>{fragment}" for heading, fragment in sections]
    if plans is not None:
        body.append("<h2>Analysis</h2>" + analysis_html(plans.analysis))
        body.append("<h2>Plan ranking</h2>" + plans_html(plans))
    if certificate is not None:
        body.append("<h2>Privacy certificate</h2>" + certificate_html(certificate))
    return page(title, body)


def solve_page(title, problem, plans, result, metrics, report=None, note="") -> str:
    """The page of ``privfair solve --report``: the report of the solve (its certificate,
    per-group rates on the held-out split only, analysis, plan ranking, bounds) with the
    command's ``metrics`` rows (:func:`privfair.reports.metrics.metrics_rows`: public ones
    only), the problem and the result's note on top."""
    sections = [("Metrics", metrics_html(metrics)), ("Problem", problem_html(problem))]
    if "note" in result.info:
        sections.append(("Note", f"<p>{html.escape(str(result.info['note']))}</p>"))
    return command_page(title, report, note, sections, plans, result.certificate)


def report_page(title, problem, plans, report=None, note="") -> str:
    """The page of ``privfair report --output X.html``: the sample-complexity report with the
    problem on top (spends nothing, releases nothing computed from the private data)."""
    return command_page(title, report, note, [("Problem", problem_html(problem))], plans)

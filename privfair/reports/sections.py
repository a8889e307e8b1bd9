"""The sample-complexity report's content, independent of the format: its cells (a sample size,
an iteration count, a bound and whether it is vacuous), its tables as rows (:data:`TABLES`), and
its sentences (at a glance, the scale note, theorem notes, the footer).

Every format reads these: :mod:`.text` (terminal text, markdown) and :mod:`.html` (the page).
"""

from __future__ import annotations

import math


def format_n(v):
    """A sample size n (needed, or a lower bound n ≥ ...): rounded up, never down."""
    if v is None:
        return "—"
    if isinstance(v, float) and math.isinf(v):
        return "∞ (not reached ≤ 1e12)"
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return f"{math.ceil(v):,}"


def fmt_value(v):
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
        return fmt_value(T)
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


def bound_rows(rep):
    sc = getattr(rep, "scale", None)
    return [(b.backend, bound_cell(b.bound, sc), terms_cell(b.bound, sc), n_cell(b.n_needed, rep.n),
             b.theorem) for b in rep.bounds]


def lower_rows(rep):
    return [(lb.theorem, lb.name, format_n(lb.n), "yes" if lb.applies else "no", lb.note)
            for lb in rep.lower_bounds]


def measurement_rows(rep):
    sc = getattr(rep, "scale", None)
    return [(m.backend, str(m.n), f"{m.mean:.4g}", f"{m.worst:.4g}", bound_cell(m.bound, sc),
             ("yes (the bound is vacuous)" if sc is not None and sc.vacuous(m.bound) else "yes")
             if m.within else "NO", m.reference) for m in rep.measurements]


def eo_rows(rep):
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
        val = "—" if e.value is None else f"{e.quantity} = {fmt_value(e.value) if e.value < 1e4 else format_n(e.value)}"
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


#: the heading of the held-out check's section
HOLDOUT_HEAD = "The held-out check of the released decision"


def holdout_lines(result):
    """The held-out check of ``result`` (a report's released decision, or None):
    ``result.holdout.summary()`` — released or public numbers only — as lines, its status
    first; or one line saying why there is none."""
    chk = getattr(result, "holdout", None)
    if chk is None:
        why = ("the report was given no released decision" if result is None else
               f"status: {getattr(result, 'status', None) or 'not checked'}")
        return [f"No held-out check ({why})."]
    return [f"status: {result.status}"] + chk.summary().splitlines()


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
    ("Upper bounds (each backend's theorem, via its plan)", bound_rows,
     ("backend", "bound at n", "in error/violation terms", "n for α", "theorem")),
    ("Theorems (checked against this problem; n for α where the theorem gives one)",
     theorem_rows, ("theorem", "constants", "preconditions", "value at n", "n for α", "T")),
    ("Lower bounds ([A] §6)", lower_rows, ("theorem", "setting", "n ≥", "applies", "note")),
    ("Equalized odds: [A] against [J]", eo_rows, ("source", "order", "n₀ (constant 1)")),
    ("Measured excess risk of h (non-private reference; not released)", measurement_rows,
     ("backend", "n", "mean", "worst", "bound at n", "within", "reference")),
)


def header(rep):
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


def theorem_notes(rep):
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


def footer_notes(rep):
    e = rep.eo
    lines = ([f"EO: |A|={e['A']}, VC={e['VC']} ({e['vc_source']}), q_min={e['q_min']}; {e['note']}"]
             if e is not None else ["EO comparison: omitted (the decision set declares no VC dimension)"])
    lines += [f"refused: {k}: {v}" for k, v in rep.refused.items()]
    return lines

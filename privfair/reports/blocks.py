"""The HTML blocks of a page: tables (cells escaped unless :class:`Raw`, a "vacuous" cell
marked), and the compiler's Analysis, the planner's ranking, the privacy certificate, a Pareto
table, a problem's statement, a solve's metrics and an embedded figure as HTML fragments.

Each block shows public, released or post-processed quantities only: the Analysis and plans
read the schema and n, the certificate describes the releases, and the metrics rows come from
:func:`privfair.reports.metrics.metrics_rows`, which withholds what would read private data.
"""

from __future__ import annotations

import html

from .sections import bound_cell, terms_cell


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


def figure_html(title, b64, caption=""):
    e = html.escape
    cap = f"<figcaption>{e(caption)}</figcaption>" if caption else ""
    return (f"<figure><img alt='{e(title)}' src='data:image/png;base64,{b64}'>{cap}</figure>")


def problem_html(problem):
    """A problem's statement (``str(problem)``) as lines of code, not a <pre> dump."""
    lines = [ln for ln in str(problem).splitlines() if ln.strip()]
    return "<p>" + "<br>".join(f"<code>{html.escape(ln.strip())}</code>" for ln in lines) + "</p>"


def metrics_html(rows) -> str:
    """The metrics of a solve (:func:`privfair.reports.metrics.metrics_rows`) as a table; a
    private solve's training-set fairness gaps are withheld there, and said so here."""
    from .metrics import METRICS_HEAD, metric_cells

    return (html_table(METRICS_HEAD, [metric_cells(r) for r in rows])
            + "<p>Metrics of the expected prediction of the (randomized) decision; a "
              "private solve's training-set fairness gaps read the private sensitive column "
              "and are withheld.</p>")

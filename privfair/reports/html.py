"""THE HTML renderer: one self-contained page shell (:func:`page`; style inline, no scripts, no
external assets) for every page privfair writes — the report's (:func:`to_html`,
``report.save(...)``), and the pages of ``privfair solve --report`` (:func:`solve_page`) and
``privfair report --output X.html`` (:func:`report_page`), which the command line only calls.
"""

from __future__ import annotations

import html

from .blocks import (analysis_html, certificate_html, figure_html, html_table, metrics_html,
                     pareto_html, plans_html, problem_html)
from .figures import figures, group_rates_figure, png_base64, tradeoff_figure
from .mathml import formula_mathml, formulas
from .sections import (GROUP_HEAD, HOLDOUT_HEAD, TABLES, TRADEOFF_HEAD, bound_rows, fmt_value,
                       footer_notes, glance, group_rows, group_summary, header, holdout_lines,
                       scale_note, theorem_notes, tradeoff_note, tradeoff_rows)

#: the page's one style sheet, inline and scoped to .pf-report
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
    parts.append(f"<h2>{e(HOLDOUT_HEAD)}</h2>" + holdout_html(result))
    parts.append("<h2>Per-group rates of the released decision</h2>")
    g = getattr(rep, "group_rates", None)
    if g is not None:
        parts.append(figure_html("per-group rates", png_base64(group_rates_figure(g)),
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
                     + figure_html("trade-off guaranteed by the bounds", png_base64(tradeoff_figure(rep)),
                               tradeoff_note(rep))
                     + "<details><summary>the planned points</summary>"
                     + html_table(TRADEOFF_HEAD, tradeoff_rows(rep)) + "</details>")
    else:
        parts.append(f"<p>{e(getattr(rep, 'tradeoff_note', '') or '—')}</p>")
    if rep.pareto is not None:
        parts.append("<h3>Measured: objective–violation frontier</h3>"
                     + figure_html("objective–violation frontier", png_base64(rep.pareto.plot()),
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
            if fn is bound_rows:
                parts.append(f"<p class='note'>{e(scale_note(rep))}</p>")
    figs = figures(rep)
    for heading, b64 in figs:
        parts.append(f"<h2>{e(heading)}</h2>" + figure_html(heading, b64))
    if rep.theorems:
        parts.append("<h2>Theorem notes</h2><ul>" + "".join(f"<li>{e(x)}</li>"
                                                          for x in theorem_notes(rep)) + "</ul>")
    parts.append("<h2>Formulas</h2><p class='note'>Each formula once, as MathML; its LaTeX "
                 "source is embedded in the formula (an annotation) for copying.</p><dl>")
    for label, expr, tex, vals in formulas(rep):
        extra = ("<div class='note'>with " + e(", ".join(
            f"{k} = {fmt_value(v) if isinstance(v, float) else v}" for k, v in vals.items()))
            + "</div>") if vals else ""
        parts.append(f"<dt>{e(label)}</dt><dd><div class='formula'>{formula_mathml(expr)}"
                     f"</div>{extra}</dd>")
    parts.append("</dl>")
    parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{e(x)}</li>" for x in footer_notes(rep))
                 + "</ul>")
    return page(title or "privfair report", parts, subtitle=header(rep),
                head_title=title or header(rep))


def holdout_html(result) -> str:
    """The held-out check of ``result`` (or None): its plot, when there is a check, and its
    lines (:func:`holdout_lines`)."""
    chk = getattr(result, "holdout", None)
    fig = "" if chk is None else figure_html(
        "held-out check", png_base64(chk.plot()),
        "The released rule's held-out error against the best constant rule's, and each "
        "constraint's estimate, confidence bounds and violation test against its level "
        "(docs/trust.md): post-processing of the check's one noisy release.")
    first, *rest = holdout_lines(result)
    items = "".join(f"<li>{html.escape(x.strip())}</li>" for x in rest)
    return (fig + f"<p>{html.escape(first)}</p>"
            + (f"<ul class='note'>{items}</ul>" if items else ""))


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
    if report is None:               # (a report's page has the section itself)
        sections.append((HOLDOUT_HEAD, holdout_html(result)))
    return command_page(title, report, note, sections, plans, result.certificate)


def report_page(title, problem, plans, report=None, note="") -> str:
    """The page of ``privfair report --output X.html``: the sample-complexity report with the
    problem on top (spends nothing, releases nothing computed from the private data)."""
    return command_page(title, report, note, [("Problem", problem_html(problem))], plans)

"""The metrics a solve may show: error and fairness gaps of the released decision, on the
training data and on a held-out split, with what would read the private data withheld.

``privfair solve`` prints them (:func:`format_metrics`) and its ``--report`` page shows them as a
table (:func:`privfair.reports.html.metrics_html`); both read the rows :func:`metrics_rows` gives.
"""

from __future__ import annotations


#: what the training row of the metrics may show, by privacy unit (issue #16): the fairness
#: gaps read the private sensitive column, so they are never shown for the training data of a
#: private solve; the error reads x and y only, public under protect="sensitive" (the released
#: decision scored on public columns is post-processing); under protect="row" every column is
#: private and the training row is omitted.  The test split is the user's held-out data, which
#: the certificate does not cover.
WITHHELD = "withheld"


#: the column headings of a metrics table (HTML), in the order of a row's cells
METRICS_HEAD = ("split", "rows", "error", "DP violation", "EO violation")


def metrics_rows(result, train, test, privacy=None):
    """[(split, metrics dict, rows)] of ``result`` on the training data and, if given, the test
    data; a private solve's training metrics keep only what is public (:data:`WITHHELD`
    otherwise, and no training row at all under ``protect="row"``)."""
    rows = []
    for split, data in (("train", train), ("test", test)):
        if data is None:
            continue
        if split == "train" and privacy is not None and privacy.is_private:
            if privacy.protect == "row":
                continue
            m = {"error": result.metrics(data)["error"], "dp_violation": WITHHELD,
                 "eo_violation": WITHHELD}
        else:
            m = result.metrics(data)
        rows.append((split, m, data.n))
    return rows


def fmt_metric(v) -> str:
    """A metric for display: four decimals, or the :data:`WITHHELD` marker as it is."""
    return v if isinstance(v, str) else f"{v:.4f}"


def metric_cells(row) -> tuple:
    """One row of :func:`metrics_rows` as the cells of :data:`METRICS_HEAD`."""
    split, m, n = row
    return (split, str(n), fmt_metric(m["error"]), fmt_metric(m["dp_violation"]),
            fmt_metric(m["eo_violation"]))


def format_metrics(rows) -> str:
    """The rows as the lines ``privfair solve`` prints (and why a gap is withheld)."""
    out = [f"{split:5s}: error {fmt_metric(m['error'])}   DP violation "
           f"{fmt_metric(m['dp_violation'])}   EO violation {fmt_metric(m['eo_violation'])}   "
           f"(expected prediction, {n} rows)" for split, m, n in rows]
    if any(WITHHELD in m.values() for _, m, _ in rows):
        out.append("(training-set fairness gaps read the private sensitive column: withheld; "
                   "measure them on held-out data)")
    return "\n".join(out)

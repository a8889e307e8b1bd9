"""One run's path of checkpoints on held-out data: ``result.path(test)``.

A path-following backend (``sgda``: one checkpoint per ERMI weight λ of its public path)
releases every checkpoint — the certificate covers them all — and then chooses one, or a
mixture of two, privately.  The table shows what the choice was among: each checkpoint's error
and fairness gaps on the data passed in, the chosen ones marked.  Pass held-out data: scoring
the checkpoints on the training data reads its sensitive attribute without noise, and what you
read off such a table is not covered by the certificate.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..util.tables import markdown_table, text_table


@dataclass
class PathPoint:
    lam: float
    error: float
    dp_violation: float
    eo_violation: float
    weight: float          # the checkpoint's weight in the released mixture (0: not chosen)


class PathTable:
    """Rows of :class:`PathPoint` in path order; ``str()``, ``to_markdown()``, ``plot()``.

    ``fairness`` ("demographic_parity" or "equalized_odds") names the gap the plot shows;
    ``released`` is the metrics dict of what the run released (a mixture of two checkpoints
    can be fairer than either: their signed gaps can cancel), shown as the last row.  ``note``
    (empty unless set) is printed above the table and in the plot's title: ``Result.path``
    sets it when the table is the path of ``result.holdout.trained``, not of the result itself
    (a held-out fallback returned a constant rule instead), and ``released_label`` (the last
    row's name, "released") is then "trained (not returned)".
    """

    HEADER = ("λ", "error", "DP violation", "EO violation", "chosen")

    def __init__(self, points, fairness="demographic_parity", released=None, note="",
                 released_label="released"):
        self.points = list(points)
        self.fairness = fairness
        self.released = released
        self.note = note
        self.released_label = released_label

    def rows(self):
        rows = [(f"{p.lam:g}", f"{p.error:.4f}", f"{p.dp_violation:.4f}",
                 f"{p.eo_violation:.4f}", f"★ {p.weight:g}" if p.weight > 0 else "")
                for p in self.points]
        if self.released is not None:
            m = self.released
            rows.append((self.released_label, f"{m['error']:.4f}", f"{m['dp_violation']:.4f}",
                         f"{m['eo_violation']:.4f}", ""))
        return rows

    def __str__(self):
        head = [f"note: {self.note}"] if self.note else []
        return "\n".join(head + list(text_table(self.HEADER, self.rows())))

    def to_markdown(self):
        head = [f"*Note: {self.note}.*", ""] if self.note else []
        return "\n".join(head + list(markdown_table(self.HEADER, self.rows())))

    def plot(self, ax=None):
        """Error against the fairness gap, checkpoints joined in path order and labelled by λ;
        the chosen ones as stars."""
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        fig = None
        if ax is None:
            fig, ax = plt.subplots(figsize=(6, 4))
        eo = self.fairness == "equalized_odds"
        v = [p.eo_violation if eo else p.dp_violation for p in self.points]
        e = [p.error for p in self.points]
        ax.plot(v, e, "o-", color="0.6", ms=4, label="checkpoints (path order)")
        for p, x, y in zip(self.points, v, e):
            ax.annotate(f"λ={p.lam:g}", (x, y), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
        chosen = [(x, y) for p, x, y in zip(self.points, v, e) if p.weight > 0]
        if chosen:
            ax.scatter(*zip(*chosen), marker="*", s=120, color="C3", zorder=3, label="chosen")
        if self.released is not None:
            m = self.released
            label = ("released (the chosen mixture)" if not self.note
                     else "the trained rule's release (not returned)")
            ax.scatter([m["eo_violation" if eo else "dp_violation"]], [m["error"]], marker="D",
                       s=40, color="C0", zorder=4, label=label)
        ax.set_xlabel("equalized-odds violation" if eo else "demographic-parity violation")
        ax.set_ylabel("error")
        title = "the run's λ path on held-out data"
        if self.note:      # the trained rule's path after a fallback: the title says whose
            title = "the trained rule's λ path (not returned: held-out fallback)"
        ax.set_title(title)
        ax.legend(fontsize=8)
        return fig if fig is not None else ax.figure

"""The report's figures (matplotlib, Agg backend), each as a base64 PNG for the self-contained
page: the bounds against n, the measured excess risk, the per-group rates of the released
decision on held-out data, and the objective/violation trade-off the bounds guarantee."""

from __future__ import annotations

import base64
import io
import math


def png_base64(fig):
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
    out.append(("Bounds against n", png_base64(fig)))
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
        out.append(("Measured excess risk against n", png_base64(fig)))
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

"""Sample-complexity reports (privfair.reports.report) and error–violation frontiers (privfair.reports.pareto)."""

import base64
import math
import re
import shutil
import subprocess

import numpy as np
import pytest

import privfair as pf
from privfair.errors import InvalidInputError, InvalidPrivacyError
from privfair.reports.report import at_n, bound_at, n_needed

PRIV = pf.DP(1.0, 1e-6, protect="sensitive")
ALPHA = 0.1


def synthetic(n, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.choice(["a", "b"], n)
    x = rng.normal(size=n) + 0.8 * (a == "a")
    y = (x + rng.normal(scale=0.8, size=n) > 0.5).astype(int)
    return pf.Dataset(x[:, None], y, sensitive=a, group_names=["a", "b"])


def build(data, level=0.1):
    r = pf.rates(pf.Thresholds(np.linspace(-1.5, 2.0, 12), score=0), data, group_mass_bound=0.1)
    u = r.selection["a"] - r.selection["b"]
    return pf.Problem(pf.minimize(r.error()), [pf.lse(u, -u, eta=20) <= level])


@pytest.fixture(scope="module")
def data():
    return synthetic(600)


@pytest.fixture(scope="module")
def rep(data):
    return pf.report(build(data), PRIV, alpha=ALPHA, build=build, backends="all",
                     ns=[80, 200, 600], seeds=2)


# ------------------------------------------------------------------------------ bounds
def test_what_if_n_reproduces_the_plan_and_decreases(data):
    prob = build(data)
    for name in ("exponential", "frank_wolfe"):
        here = prob.plan(PRIV, backend=name, alpha=ALPHA).chosen.predicted_excess_risk
        assert bound_at(prob, PRIV, name, ALPHA, data.n) == pytest.approx(here)
        assert bound_at(prob, PRIV, name, ALPHA, 10 * data.n) < here
    assert at_n(prob, 5000).rates.n == 5000 and prob.rates.n == data.n   # the original untouched


def test_n_needed_solves_the_exponential_bound(data, rep):
    b = next(b for b in rep.bounds if b.backend == "exponential")
    fn = lambda m: bound_at(build(data), PRIV, "exponential", ALPHA, m)  # noqa: E731
    assert fn(b.n_needed) <= ALPHA < fn(b.n_needed / 1.05)
    # Δh ∝ 1/n, so the bound scales as n/n_needed
    assert b.bound == pytest.approx(ALPHA * b.n_needed / data.n, rel=0.05)
    assert n_needed(lambda m: 1.0 / m, 0.5, 10) == pytest.approx(2.0, rel=0.05)
    assert math.isinf(n_needed(lambda m: 1.0, 0.5, 10))


def test_measured_excess_stays_under_every_bound(rep):
    """The issue's "Done means": measured ≤ the backend's bound at each n where it applies."""
    accepting = {b.backend for b in rep.bounds}
    assert {"exponential", "frank_wolfe", "lopt"} <= accepting
    assert {m.backend for m in rep.measurements} == accepting
    assert {m.n for m in rep.measurements} == {80, 200, 600}
    for m in rep.measurements:
        assert len(m.excess) == 2
        assert min(m.excess) >= -1e-6          # the reference is the exact minimum
        if math.isfinite(m.bound):
            assert m.worst <= m.bound, (m.backend, m.n, m.excess, m.bound)
    assert rep.within_bounds()


def test_lower_bounds_below_upper_bounds_n(rep):
    assert [lb.theorem for lb in rep.lower_bounds] == ["[A] Thm 6.1", "[A] Thm 6.2"]
    assert [lb.applies for lb in rep.lower_bounds] == [False, True]   # δ > 0
    K = rep.K
    assert rep.lower_bounds[0].n == pytest.approx(K / (1.0 * ALPHA))
    assert rep.lower_bounds[1].n == pytest.approx(math.sqrt(K) / (1.0 * ALPHA))
    for b in rep.bounds:
        for lb in rep.lower_bounds:
            assert lb.n <= b.n_needed


def test_equalized_odds_comparison(rep):
    e = rep.eo
    assert e["A"] == 2 and e["VC"] == 1
    # q = 0.1 = α^{(1+r)/2} with α = 0.1 gives r = 1
    assert e["r"] == pytest.approx(1.0)
    assert e["agarwal"] == pytest.approx(16 / ALPHA ** 3)
    assert e["jagielski"] == pytest.approx(8 / ALPHA ** 4)


def test_theorem_entries_state_constants_preconditions_and_n(rep):
    by = {e.cite: e for e in rep.theorems}
    assert {"[A] Thm 5.5", "[A] Cor 5.11", "[A] Cor B.5", "[A] Cor C.2", "[K] Thm 1",
            "[L] Thm 3.4", "[J] Thm 3.1", "[J] Thm 4.4"} <= set(by)
    assert by["[A] Thm 5.5"].constants.startswith("explicit")
    assert by["[A] Cor 8.9"].constants == "order, constant 1"
    assert "α⁴" in by["[A] Cor 5.11"].correction                   # the corrected α power
    # tied to a plan: the backend's own n for α, not a second formula
    exp = next(b for b in rep.bounds if b.backend == "exponential")
    assert by["[A] Thm 3.6"].n_needed == exp.n_needed and by["[A] Thm 3.6"].formula is None
    # [A] Cor C.2's order at the report's numbers (|A| = 2, VC = 1, r = 1)
    assert by["[A] Cor C.2"].n_needed == pytest.approx(8 / (1.0 * ALPHA ** 4))
    assert not by["[K] Thm 1"].applies and "refuses" in by["[K] Thm 1"].reason


@pytest.mark.slow
def test_theorem_entries_are_rendered_everywhere(rep):
    text, md, page = str(rep), rep.to_markdown(), rep.to_html()
    for e in rep.theorems:
        assert e.cite in text and e.cite in md and e.cite in page
    assert "does not apply" in text and "order, constant 1" in text
    assert "## Theorem notes" in md and "T_{0}" in md            # Thm 5.5's T as LaTeX
    assert "<h2>Theorem notes</h2>" in page and page.count("<math ") >= len(
        [e for e in rep.theorems if e.formula is not None])


# ------------------------------------------------------------------------------ renders
def test_text_and_markdown_name_every_accepting_backend(rep):
    text, md = str(rep), rep.to_markdown()
    for b in rep.bounds:
        assert b.backend in text and b.backend in md
    assert "Thm 6.1" in md and "Cor 8.9" in md and "| --- |" in md
    assert "\\frac" in md                                   # sympy LaTeX of the formulas


def test_html_is_self_contained_with_png_figures(rep, tmp_path):
    path = rep.save(tmp_path / "report.html")
    page = open(path, encoding="utf-8").read()
    assert "http" not in page.lower() and "<script" not in page.lower()
    for b in rep.bounds:
        assert b.backend in page
    assert "<math " in page and "<mfrac>" in page
    imgs = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", page)
    assert len(imgs) >= 2
    for b64 in imgs:
        assert base64.b64decode(b64)[:8] == b"\x89PNG\r\n\x1a\n"


def cells_data(n, seed=0):
    """Two features (a score and a group proxy): a problem for the cells backend, whose bound
    is a Piecewise formula and, at this n, vacuous."""
    rng = np.random.default_rng(seed)
    a = rng.choice(["a", "b"], n)
    x = np.c_[rng.normal(size=n) + 0.8 * (a == "a"), (a == "a") + rng.normal(scale=0.5, size=n)]
    y = (x[:, 0] + rng.normal(scale=0.8, size=n) > 0.5).astype(int)
    return pf.Dataset(x, y, sensitive=a, group_names=["a", "b"])


def cells_problem(data):
    r = pf.rates(pf.ProxyCells(5, 2), data)
    return pf.Problem(pf.minimize(r.error()), [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.05])


@pytest.fixture(scope="module")
def cells_rep():
    return pf.report(cells_problem(cells_data(2000)), PRIV, alpha=ALPHA, measure=False)


def test_html_shows_each_formula_once_as_mathml(rep, cells_rep):
    """#20: each formula was shown twice (MathML, then its LaTeX source as visible text)."""
    import html as _html

    from privfair.reports.mathml import formulas

    for r in (rep, cells_rep):
        page = r.to_html()
        assert "<code>" not in page
        for _, _, tex, _ in formulas(r):
            esc = _html.escape(tex)
            assert page.count(esc) == 1, tex            # once, and only as an annotation
            i = page.index(esc)
            assert page.rfind("<annotation encoding='application/x-tex'>", 0, i) > \
                page.rfind("</annotation>", 0, i)


def test_piecewise_formulas_render_as_cases(cells_rep):
    """#20: a Piecewise bound (cells: ∞ unless n·q > S) was printed as the text
    'piecewise((…, …), (∞, True))'; it is a MathML table of cases, and a Piecewise whose first
    branch always holds is that branch."""
    import sympy as sp

    from privfair.reports.mathml import formula_mathml, simplify_piecewise

    page = cells_rep.to_html()
    assert "piecewise" not in page.lower()
    assert "<mtable" in page and "otherwise" in page
    x = sp.Symbol("x")
    trivial = sp.Piecewise((x + 1, sp.true), evaluate=False)
    assert simplify_piecewise(2 * trivial) == 2 * (x + 1)
    assert "piecewise" not in formula_mathml(sp.Eq(sp.Symbol("y"), trivial)).lower()


@pytest.fixture(scope="module")
def solved(data):
    prob = build(data)
    return prob, prob.solve(PRIV, seed=0, progress=False, alpha=ALPHA)


def _section(page, title):
    """The HTML between ``<h2>title</h2>`` and the next ``<h2>``."""
    start = page.index(f"<h2>{title}</h2>")
    end = page.find("<h2>", start + 1)
    return page[start:end if end >= 0 else len(page)]


def _cells(fragment):
    import html as _html

    return [_html.unescape(re.sub(r"<[^>]+>", "", c))
            for c in re.findall(r"<td[^>]*>(.*?)</td>", fragment, re.S)]


@pytest.mark.slow
def test_html_renders_analysis_plan_and_certificate_as_tables(solved, data):
    """#20: the page dumped Analysis, Plan and Certificate as raw <pre> text; they are tables."""
    prob, res = solved
    front = pf.pareto(lambda c: build(data, c), [1.0], [0.1], seeds=1)
    rep = pf.report(prob, PRIV, alpha=ALPHA, measure=False, result=res, frontier=front)
    page = rep.to_html()
    assert "<pre" not in page
    # Analysis: property / value rows, the reasons as a table
    an = _section(page, "Analysis")
    cells = _cells(an)
    for prop, value in rep.plans.analysis.rows():
        i = cells.index(prop)
        assert cells[i + 1] == value
    # Plan ranking: backend, predicted excess risk, the chosen one marked
    plan = _section(page, "Plan ranking")
    rows = re.findall(r"<tr( class='chosen')?>(.*?)</tr>", plan, re.S)
    ranked = [r for r in rows if any(p.backend in r[1] for p in rep.plans.ranked)]
    assert len(ranked) >= len(rep.plans.ranked)
    for p in rep.plans.ranked:
        row = next(r for r in ranked if f"<td>{p.backend}</td>" in r[1])
        assert (row[0] != "") == (p is rep.plans.chosen)
        assert f"{p.predicted_excess_risk:.4g}" in row[1]
    assert "chosen" in _cells(plan)[0]
    for name in rep.refused:
        assert name in plan
    # Certificate: one row per release with mechanism, sensitivity, noise scale, ε, δ, theorem
    cert = _section(page, "Privacy certificate")
    ev = res.certificate.releases[0]
    from privfair.privacy.events import fmt_number as _fmt

    row = _cells(cert.split("<th>theorem</th>")[1])
    assert row[1].startswith(ev.mechanism) and row[2].startswith(_fmt(ev.sensitivity))
    assert row[4] == _fmt(ev.scale) and row[5] == _fmt(ev.epsilon)
    assert row[7] == ev.theorem
    # the frontier is a table too
    assert "<th>frontier</th>" in page
    with pytest.raises(InvalidInputError, match="result"):
        pf.report(prob, PRIV, measure=False, result="not a result")


def test_vacuous_bounds_are_labelled_in_text_markdown_and_html(cells_rep):
    """#20: 'excess risk 107' and 'n for α = 56,644,969' were printed as if meaningful.  A
    bound at or above the range of h (public: interval ranges over the box) is labelled
    vacuous, also in error/violation terms, and an n beyond the data says how far beyond."""
    sc = cells_rep.scale
    G = cells_rep.plans.analysis.G
    assert sc.range_f == pytest.approx(4.0)                     # error: four joint cells
    assert sc.g_max == pytest.approx(0.95)                      # |u| − 0.05 on the box
    assert sc.range_h == pytest.approx(4.0 + G * 0.95)
    b = cells_rep.bounds[0]
    assert b.backend == "cells" and b.bound > sc.range_h and b.n_needed > cells_rep.n
    label = f"{b.bound:.4g} [vacuous: ≥ {sc.range_h:.4g}]"
    terms = (f"f − f* ≤ {b.bound:.3g} [vacuous: ≥ 4]; violation ≤ {(b.bound + 4) / G:.3g} "
             f"[vacuous: ≥ 0.95]")
    ratio = f"({b.n_needed / cells_rep.n:,.0f}× the data's n)"
    text, md, page = str(cells_rep), cells_rep.to_markdown(), cells_rep.to_html()
    for out in (text, md):
        assert label in out and terms in out and ratio in out
        assert "the theorem says nothing about this data" in out       # at a glance
    upper = _section(page, "Upper bounds (each backend&#x27;s theorem, via its plan)")
    assert f"<td class='vacuous'>{label}</td>" in upper
    assert f"<td class='vacuous'>{terms}</td>" in upper
    assert ratio.replace("'", "&#x27;") in upper
    plan = _section(page, "Plan ranking")
    assert f"<td class='vacuous'>{label}</td>" in plan


def test_a_bound_below_the_range_of_h_is_not_vacuous_and_translates(rep, data):
    """The exponential bound at n = 600 is below the range of h (not vacuous) but above the
    range of f: its objective term is vacuous, its violation term is not."""
    sc = rep.scale
    b = next(b for b in rep.bounds if b.backend == "exponential")
    assert sc.range_f < b.bound < sc.range_h
    row = next(r for r in str(rep).splitlines() if r.startswith("exponential "))
    assert f"{b.bound:.4g} " in row and f"{b.bound:.4g} [vacuous" not in row
    assert f"violation ≤ {(b.bound + sc.range_f) / sc.G:.3g};" not in row
    assert f"[vacuous: ≥ {sc.range_f:.3g}]; violation ≤ {(b.bound + sc.range_f) / sc.G:.3g} " in row
    # [A] Cor 4.2, checked on every threshold: an excess B of h over min h gives
    # f ≤ f* + B and max(0, g) ≤ (B + range f)/G
    prob = build(data)
    an = prob.analyze(PRIV, alpha=ALPHA)
    assert an.G == pytest.approx(sc.G)
    L = prob.rates.evaluate_all()
    h = an.h_value(L)
    vals = [prob.evaluate(l) for l in L]
    f = np.array([v[0] for v in vals])
    viol = np.array([max(0.0, *v[1]) for v in vals])
    fstar = f[viol <= 0].min()
    B = h - h.min()
    assert np.all(f <= fstar + B + 1e-12)
    assert np.all(viol <= (B + sc.range_f) / sc.G + 1e-12)


def test_bounds_figure_marks_the_vacuous_region(cells_rep):
    import matplotlib

    matplotlib.use("Agg")
    from privfair.reports import figures as rf

    seen = []
    real = rf.png_base64
    try:
        rf.png_base64 = lambda fig: seen.append(fig) or real(fig)
        rf.figures(cells_rep)
    finally:
        rf.png_base64 = real
    ax = seen[0].axes[0]
    labels = [h.get_label() for h in ax.get_legend().legend_handles]
    assert f"vacuous: ≥ {cells_rep.scale.range_h:.3g}, the range of h" in labels


@pytest.mark.slow
def test_per_group_rate_plot_on_held_out_data(solved):
    """#20: no per-group rate plot.  With a released decision and held-out data the page plots
    (and tabulates) each group's selection rate, TPR and FPR of the expected prediction."""
    prob, res = solved
    test = synthetic(400, seed=1)
    rep = pf.report(prob, PRIV, alpha=ALPHA, measure=False, result=res, test=test)
    g = rep.group_rates
    p = res.predict_proba(test.X)
    for k, name in enumerate(test.groups):
        m = test.group == k
        i = g.groups.index(name)
        assert g.n[i] == m.sum()
        assert g.selection[i] == pytest.approx(p[m].mean())
        assert g.tpr[i] == pytest.approx(p[m & (test.y == 1)].mean())
        assert g.fpr[i] == pytest.approx(p[m & (test.y == 0)].mean())
    assert g.metrics == res.metrics(test)
    page = rep.to_html()
    sec = _section(page, "Per-group rates of the released decision")
    b64 = re.search(r"<img alt='per-group rates' src='data:image/png;base64,([^']+)'", sec)
    assert b64 and base64.b64decode(b64.group(1))[:4] == b"\x89PNG"
    cells = _cells(sec)
    for i, name in enumerate(g.groups):
        j = cells.index(name)
        assert cells[j + 2:j + 5] == [f"{g.selection[i]:.3f}", f"{g.tpr[i]:.3f}", f"{g.fpr[i]:.3f}"]
    text = str(rep)
    assert "Per-group rates of the released decision (held-out data)" in text
    assert f"{g.selection[0]:.3f}" in text


@pytest.mark.slow
def test_per_group_rates_never_read_the_training_data(solved, data):
    """A report never shows exact statistics of the private training data: the training rows
    passed as 'held-out' are refused, and without held-out data the plot is omitted, saying
    why."""
    import copy

    prob, res = solved
    for same in (data, copy.copy(data)):
        with pytest.raises(InvalidInputError, match="training data"):
            pf.report(prob, PRIV, alpha=ALPHA, measure=False, result=res, test=same)
    with pytest.raises(InvalidInputError, match="test"):
        pf.report(prob, PRIV, alpha=ALPHA, measure=False, result=res, test=data.X)
    no_test = pf.report(prob, PRIV, alpha=ALPHA, measure=False, result=res, tradeoff_plot=False)
    no_result = pf.report(prob, PRIV, alpha=ALPHA, measure=False, test=synthetic(100, seed=2),
                          tradeoff_plot=False)
    for r, why in ((no_test, "no held-out data was given"),
                   (no_result, "no released decision")):
        assert r.group_rates is None and why in r.group_rates_note
        sec = _section(r.to_html(), "Per-group rates of the released decision")
        assert "<img" not in sec and why in sec
        assert why in str(r) and why in r.to_markdown()


def test_tradeoff_plot_from_the_bounds(rep, data):
    """#20: no accuracy/fairness trade-off plot.  The chosen backend is planned over a grid of
    ε and α; each point is its bound in error/violation terms ([A] Cor 4.2), plotted as the
    guaranteed objective excess against the guaranteed violation."""
    prob = build(data)
    sc = rep.scale
    pts = rep.tradeoff
    assert {t.epsilon for t in pts} == {0.25, 1.0, 4.0}
    assert any(t.epsilon == 1.0 and t.alpha == ALPHA for t in pts)
    assert len({t.alpha for t in pts}) >= 5
    for t in pts:
        assert t.backend == rep.bounds[0].backend == "exponential"
        B = prob.plan(pf.DP(t.epsilon, PRIV.delta, protect="sensitive"), backend=t.backend,
                      alpha=t.alpha).chosen.predicted_excess_risk
        assert t.bound == pytest.approx(B)
        G = (t.alpha + sc.range_f) / t.alpha                  # the compiler's penalty at α
        assert t.G == pytest.approx(G)
        assert t.objective == pytest.approx(B)
        assert t.violation == pytest.approx((B + sc.range_f) / G)
        assert t.objective_vacuous == (B >= sc.range_f)
        assert t.violation_vacuous == (t.violation >= sc.g_max)
    # a larger ε tightens the guarantee at every α
    for a in {t.alpha for t in pts}:
        by = sorted((t.epsilon, t.bound) for t in pts if t.alpha == a)
        assert all(x[1] >= y[1] for x, y in zip(by, by[1:]))
    page = rep.to_html()
    sec = _section(page, "Accuracy/fairness trade-off")
    assert "<img alt='trade-off guaranteed by the bounds'" in sec
    assert "Objective/violation trade-off guaranteed by the bounds" in str(rep)
    off = pf.report(prob, pf.DP(math.inf, protect="sensitive"), alpha=ALPHA, measure=False)
    assert off.tradeoff == [] and "non-private" in off.tradeoff_note


NO_CHROMIUM = not (shutil.which("chromium") or shutil.which("chromium-browser"))


@pytest.mark.slow
@pytest.mark.skipif(NO_CHROMIUM, reason="chromium is not installed (apt-get install -y chromium)")
def test_html_renders_non_blank_in_headless_chromium(rep, tmp_path):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    html_path = rep.save(tmp_path / "report.html")
    png = tmp_path / "shot.png"
    subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu",
                    f"--screenshot={png}", "--window-size=1000,1400", f"file://{html_path}"],
                   check=True, timeout=60, capture_output=True)
    import matplotlib.image as mpimg

    img = mpimg.imread(png)
    assert img.std() > 0.01                                 # not a blank page


# ------------------------------------------------------------------------------ errors
@pytest.mark.parametrize("alpha", [0, 1, 1.5, -0.1, "x"])
def test_alpha_outside_unit_interval_raises(data, alpha):
    with pytest.raises(InvalidInputError):
        pf.report(build(data), PRIV, alpha=alpha, measure=False)


def test_bad_arguments_raise_typed_errors(data):
    prob = build(data)
    with pytest.raises(InvalidInputError):
        pf.report(prob, PRIV, ns=[], build=build)
    with pytest.raises(InvalidInputError):
        pf.report(prob, PRIV, beta=1.0)
    with pytest.raises(InvalidInputError):
        pf.report(prob, PRIV, seeds=0)
    with pytest.raises(InvalidPrivacyError):
        pf.report(prob, 1.0)
    with pytest.raises(InvalidInputError):
        pf.report(prob, PRIV, backends=("cells",), measure=False)


def test_report_rejects_bad_problem_build_ns_and_backends(data):
    prob = build(data)
    with pytest.raises(InvalidInputError, match="problem"):
        pf.report(None, PRIV)
    with pytest.raises(InvalidInputError, match="build"):
        pf.report(prob, PRIV, build=lambda d: None, ns=[100], seeds=1)
    with pytest.raises(InvalidInputError, match="at most the data's n = 600"):
        pf.report(prob, PRIV, build=build, ns=[200, 5000])          # not silently clipped
    with pytest.raises(InvalidInputError, match="backends"):
        pf.report(prob, PRIV, backends=5, measure=False)
    with pytest.raises(InvalidInputError, match="build"):
        pf.pareto(lambda c: None, [1.0], [0.1], seeds=1)


@pytest.mark.slow
def test_backends_as_a_string_is_one_name(data):
    small = synthetic(200)
    for backends in ("exponential", "auto"):          # "auto": the planner's pick, exponential
        rep = pf.report(build(small), PRIV, alpha=ALPHA, seeds=1, backends=backends)
        assert [m.backend for m in rep.measurements] == ["exponential"]
    with pytest.raises(InvalidInputError, match="cells"):
        pf.report(build(small), PRIV, alpha=ALPHA, backends="cells", measure=False)
    table = pf.pareto(lambda c: build(small, c), [1.0], [0.1, 0.3], backends="exponential",
                      seeds=1)
    assert [p.backend for p in table.points] == ["exponential", "exponential"]


def test_sample_sizes_are_rounded_up(rep):
    from privfair.reports.sections import format_n as _n

    assert (_n(24.49), _n(24.0), _n(0.3), _n(1234.2), _n(math.inf)) == (
        "25", "24", "1", "1,235", "∞ (not reached ≤ 1e12)")
    lb = rep.lower_bounds[1]                     # √K/(εα): not a whole number
    assert lb.n != math.ceil(lb.n)
    shown = f"{math.ceil(lb.n):,}"
    assert re.search(rf"{re.escape(lb.theorem)}\s+{re.escape(lb.name)}\s+{shown}\s", str(rep))
    assert f"| {lb.theorem} | {lb.name} | {shown} |" in rep.to_markdown()
    assert f"<td>{lb.theorem}</td><td>{lb.name}</td><td>{shown}</td>" in rep.to_html()


def test_without_build_only_the_full_data_is_measured(data):
    rep = pf.report(build(data), pf.DP(1.0, protect="sensitive"), alpha=ALPHA, seeds=1)
    assert [m.backend for m in rep.measurements] == ["exponential"]   # "auto": the planner's pick
    assert [m.n for m in rep.measurements] == [data.n]
    assert not rep.lower_bounds[1].applies and rep.lower_bounds[0].applies


# ------------------------------------------------------------------------------ pareto
@pytest.mark.slow
def test_pareto_frontier_table_and_plot(data, tmp_path):
    table = pf.pareto(lambda c: build(data, c), [0.5, 4.0], [0.05, 0.3], seeds=2,
                      test=synthetic(600, seed=7))
    assert len(table.points) == 4
    for eps in (0.5, 4.0):
        assert any(p.frontier for p in table.points if p.epsilon == eps)
    assert all(p.violation >= 0 for p in table.points)
    assert "frontier" in str(table) and "| ε |" in table.to_markdown()
    fig = table.plot()
    fig.savefig(tmp_path / "f.png")
    rep = pf.report(build(data), PRIV, alpha=ALPHA, measure=False, frontier=table)
    page = rep.to_html()     # bounds against n, the trade-off of the bounds, the frontier
    assert page.count("data:image/png;base64,") == 3
    assert "<img alt='objective–violation frontier'" in page
    with pytest.raises(InvalidInputError):
        pf.pareto(lambda c: build(data, c), [], [0.1])


def _frontier_with_coinciding_levels():
    from privfair.reports.pareto import ParetoPoint, ParetoTable

    pts = []
    for eps in (1.0, 4.0):                    # ε = 1 and ε = 4 reach the same two points
        pts += [ParetoPoint(eps, 0.05, "exponential", 0.20, 0.01),
                ParetoPoint(eps, 0.30, "exponential", 0.15, 0.05)]
    pts.append(ParetoPoint(0.5, 0.05, "exponential", 0.25, 0.02))   # a one-point frontier
    return ParetoTable(pts)


def test_pareto_plot_shows_every_epsilon_and_its_starred_frontier():
    """#20: the plot hid ε = 1 under ε = 4 (same marker, colour cycle, size, drawn on top) and
    drew no starred frontier (a one-point frontier was an invisible line)."""
    from matplotlib.collections import PathCollection

    table = _frontier_with_coinciding_levels()
    ax = table.plot().axes[0]
    series = [c for c in ax.collections if isinstance(c, PathCollection)]
    by = {c.get_label(): c for c in series}
    assert set(by) == {"ε=0.5", "ε=1", "ε=4"}
    # distinct marker shape and colour per ε, hollow, so coinciding points stay visible
    paths = {lab: tuple(map(tuple, c.get_paths()[0].vertices.round(3))) for lab, c in by.items()}
    colours = {lab: tuple(c.get_edgecolor()[0]) for lab, c in by.items()}
    assert len(set(paths.values())) == 3 and len(set(colours.values())) == 3
    assert all(len(c.get_facecolor()) == 0 or c.get_facecolor()[0][3] == 0 for c in series)
    # ε = 1 is drawn larger and underneath ε = 4 (nested outlines where they coincide)
    assert by["ε=1"].get_sizes()[0] > by["ε=4"].get_sizes()[0]
    assert by["ε=1"].get_zorder() < by["ε=4"].get_zorder()
    # each ε's frontier: star markers joined in order of violation, including a single point
    for eps in (0.5, 1.0, 4.0):
        line = next(ln for ln in ax.get_lines() if ln.get_label() == f"ε={eps:g} frontier (★)")
        assert line.get_marker() == "*"
        fr = sorted((p.violation, p.error) for p in table.points
                    if p.epsilon == eps and p.frontier)
        assert list(zip(line.get_xdata(), line.get_ydata())) == fr


def test_a_command_can_build_its_page_on_the_report(solved):
    """For `privfair solve --report`: the command's own sections go inside the report's page
    (no second Analysis/Plan/Certificate as <pre> text); the problem is lines of code."""
    from privfair.reports.blocks import problem_html

    prob, res = solved
    rep = pf.report(prob, PRIV, alpha=ALPHA, measure=False, result=res, tradeoff_plot=False)
    page = rep.to_html(title="privfair solve — p.py",
                       sections=[("Metrics", "<table><tr><td>0.1</td></tr></table>"),
                                 ("Problem", problem_html(prob))])
    assert "<h1>privfair solve — p.py</h1>" in page and "<pre" not in page
    heads = re.findall(r"<h2>(.*?)</h2>", page)
    assert heads[:5] == ["Metrics", "Problem", "Privacy certificate",
                         "The held-out check of the released decision",
                         "Per-group rates of the released decision"]
    assert heads.count("Analysis") == 1 and heads.count("Plan ranking") == 1
    assert "<code>minimize" in _section(page, "Problem")


def test_pareto_measures_on_held_out_data_and_warns_without_it(data):
    """A frontier of private solves measured on their own training data shows exact statistics
    of the private rows (issue #16): with test= the points are the released decisions on
    held-out data; without it a private level warns and the table says where it measured."""
    from privfair.reports.pareto import TrainingDataMeasurementWarning

    held_out = synthetic(600, seed=7)
    table = pf.pareto(lambda c: build(data, c), [1.0], [0.1], seeds=1, test=held_out)
    assert table.measured_on == "held-out data" and "measured on: held-out data" in str(table)
    res = build(data, 0.1).solve(pf.DP(1.0, protect="sensitive"), seed=0, progress=False)
    other = pf.rates(pf.Thresholds(np.linspace(-1.5, 2.0, 12), score=0), held_out,
                     group_mass_bound=0.1)
    assert table.points[0].error == pytest.approx(
        float(other.error().value(other.evaluate_mixture(res.decisions, res.weights))))
    with pytest.warns(TrainingDataMeasurementWarning):
        table = pf.pareto(lambda c: build(data, c), [1.0], [0.1], seeds=1)
    assert "training data (not private)" in table.to_markdown()
    with pytest.raises(InvalidInputError):
        pf.pareto(lambda c: build(data, c), [1.0], [0.1], seeds=1, test=held_out.X)


def test_report_on_a_differentiable_decision_set_skips_measuring_and_says_why(data):
    """The README's report call on its LinearClassifier problem raised 'evaluate_all needs a
    finite set' (#20): measuring needs an exact reference minimum, which only finite sets give."""
    r = pf.rates(pf.LinearClassifier(1, radius=1.0), data, surrogate="logistic",
                 group_mass_bound=0.1)
    prob = pf.Problem(pf.minimize(r.error()),
                      [pf.lse(r.selection["a"] - r.selection["b"],
                              r.selection["b"] - r.selection["a"], eta=20) <= 0.1])
    rep = pf.report(prob, pf.DP(1.0, 1e-9, protect="sensitive"), alpha=ALPHA)
    assert rep.measurements == [] and "No measured excess risk" in rep.measure_note
    assert "No measured excess risk" in str(rep) and "No measured excess risk" in rep.to_html()


def test_bounds_that_are_infinite_everywhere_are_not_planned_at_what_if_points(data, monkeypatch):
    """The README's report on its LinearClassifier problem took minutes with torch (#20): the
    only accepting backends (sgda, lagrangian_sgda) bound no excess risk, and the report planned
    each at ~40 what-if n and the trade-off's 24 (ε, α) points, each plan a PLD calibration.
    Now sgda's ∞ is read off its formula (C_L = ∞), lagrangian_sgda's from two what-if plans,
    and the trade-off grid of a top backend that is ∞ at every n and at 4ε is not planned."""
    pytest.importorskip("torch", reason="sgda and lagrangian_sgda, the only backends that "
                                        "accept this problem, need the optional torch")
    r = pf.rates(pf.LinearClassifier(1, radius=1.0), data, surrogate="logistic",
                 group_mass_bound=0.1)
    prob = pf.Problem(pf.minimize(r.error()),
                      [pf.lse(r.selection["a"] - r.selection["b"],
                              r.selection["b"] - r.selection["a"], eta=20) <= 0.1])
    calls = []
    real = pf.Problem.plan

    def counting(self, privacy, *args, **kwargs):
        calls.append((self.rates.n, privacy.epsilon, kwargs.get("backend")))
        return real(self, privacy, *args, **kwargs)

    monkeypatch.setattr(pf.Problem, "plan", counting)
    rep = pf.report(prob, pf.DP(1.0, 1e-9, protect="sensitive"), alpha=ALPHA)
    assert {b.backend for b in rep.bounds} == {"sgda", "lagrangian_sgda"}
    for b in rep.bounds:
        assert math.isinf(b.n_needed) and all(math.isinf(v) for _, v in b.curve)
    assert not any(c[2] == "sgda" for c in calls)        # read off its formula: no what-if plan
    assert len(calls) <= 4, calls     # the plan, lagrangian_sgda at 2 n, the top backend at 4ε
    assert rep.tradeoff == [] and "was not planned" in rep.tradeoff_note
    assert "was not planned" in " ".join(str(rep).split())          # the text page says why


def test_impractical_iteration_counts_are_labelled():
    """A theorem's T for α beyond 10⁸ (e.g. [A] Thm 5.5's 5·10¹¹ on the README problem) was
    printed as if a run would make it (#20); the Analysis already says 'impractical'."""
    from privfair.reports.sections import t_cell

    assert t_cell(518_814_802_944.0) == "518,814,802,944 [impractical: > 10⁸ iterations]"
    assert t_cell(12_000) == "12,000" and t_cell(1e8) == "100,000,000"
    assert t_cell(math.inf) == "∞"


def test_the_theorem_table_labels_an_impractical_T(rep):
    """The report's theorem table labels every T above 10⁸ (value and T columns)."""
    from privfair.reports.sections import theorem_rows

    rows = theorem_rows(rep)
    assert any(e.T_needed is not None and e.T_needed > 1e8 for e in rep.theorems)
    for row, e in zip(rows, rep.theorems):
        if e.T_needed is not None and e.applies:
            assert ("impractical" in row[5]) == (e.T_needed > 1e8), row


def test_a_theorem_that_does_not_apply_prints_no_number(rep):
    """#20: "[L] Thm 3.4: does not apply" still printed an n for α (and [A] Thm 5.5 a T): a
    number evaluated at constants whose preconditions fail reads as a guarantee."""
    by = {e.cite: e for e in rep.theorems}
    assert not by["[L] Thm 3.4"].applies and by["[L] Thm 3.4"].n_needed is not None
    assert not by["[A] Thm 5.5"].applies and by["[A] Thm 5.5"].T_needed is not None
    for text in (str(rep), rep.to_markdown()):
        for cite, e in by.items():
            # the theorem table's row: the cite, then its constants column (the notes and the
            # formulas below it read "cite — title: ..." and "cite (constants; ...)")
            (row,) = [ln.strip("|- ") for ln in text.splitlines()
                      if re.match(re.escape(cite) + r"[\s|]+" + re.escape(e.constants),
                                  ln.lstrip("|- "))]
            after = row.split("does not apply" if not e.applies else "applies", 1)[1]
            if not e.applies:
                assert not re.search(r"\d", after), row
            elif e.n_needed is not None:
                assert re.search(r"\d", after), row


def test_the_report_shows_the_released_decisions_held_out_check(solved):
    """The held-out check (docs/trust.md) in every format: its status and summary lines (the
    check's released numbers) and, in HTML, its plot; a report without a result says why."""
    import html as _html

    prob, small = solved                 # 600 rows: too few to hold out, and it says so
    assert f"No held-out check (status: {small.status})." in str(
        pf.report(prob, PRIV, alpha=ALPHA, measure=False, result=small))
    prob = build(synthetic(2500, seed=3))
    res = prob.solve(PRIV, seed=0, progress=False, alpha=ALPHA)
    assert res.holdout is not None
    rep = pf.report(prob, PRIV, alpha=ALPHA, measure=False, result=res)
    head = "The held-out check of the released decision"
    for text in (str(rep), rep.to_markdown()):
        assert head in text and f"status: {res.status}" in text
        assert res.holdout.summary().splitlines()[1] in text
    sec = _section(rep.to_html(), head)
    b64 = re.search(r"<img alt='held-out check' src='data:image/png;base64,([^']+)'", sec)
    assert b64 and base64.b64decode(b64.group(1))[:4] == b"\x89PNG"
    assert f"status: {_html.escape(res.status)}" in sec
    bare = pf.report(prob, PRIV, alpha=ALPHA, measure=False)
    assert "No held-out check (the report was given no released decision)." in str(bare)
    assert "<img alt='held-out check'" not in bare.to_html()

"""Progress bars: on a terminal, never in a log unless asked for (issue #20: "tqdm fragments
leak into non-tty logs while the slowest paths show no progress at all").

``progress=True`` (the default) draws a bar only when stderr is a terminal; "always" forces it;
False never draws one.  pytest's captured stderr is not a terminal, like a log file."""

import io
import math

import numpy as np
import pytest

import privfair as pf
from privfair.models import norms
from privfair.util.progress import default_progress, wanted
from privfair.errors import InvalidInputError


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _problem(n=300):
    rng = np.random.default_rng(0)
    a = rng.choice(["a", "b"], n)
    x = rng.normal(size=n) + 0.8 * (a == "a")
    y = (x + rng.normal(scale=0.8, size=n) > 0.5).astype(int)
    data = pf.Dataset(x[:, None], y, sensitive=a, group_names=["a", "b"])
    r = pf.rates(pf.Thresholds(np.linspace(-1.5, 2.0, 15), score=0), data, group_mass_bound=0.1)
    return pf.Problem(pf.minimize(r.error()), [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.1])


def test_default_progress_writes_no_bar_into_a_log(capsys):
    # lopt drew its bar whenever progress=True, terminal or not
    _problem().solve(pf.DP(1.0, protect="sensitive"), backend="lopt", T=5, seed=0)
    err = capsys.readouterr().err
    assert "lopt" not in err and "\r" not in err, err


def test_always_forces_the_bar_and_false_turns_it_off(capsys):
    _problem().solve(pf.DP(1.0, protect="sensitive"), backend="lopt", T=5, seed=0, progress="always")
    assert "lopt" in capsys.readouterr().err
    _problem().solve(pf.DP(1.0, protect="sensitive"), backend="lopt", T=5, seed=0, progress=False)
    assert capsys.readouterr().err == ""


def test_a_terminal_gets_the_bar(monkeypatch):
    term = _Terminal()
    monkeypatch.setattr("sys.stderr", term)
    assert wanted(True) and wanted("always") and not wanted(False)
    _problem().solve(pf.DP(1.0, protect="sensitive"), backend="lopt", T=5, seed=0)
    assert "lopt" in term.getvalue()


def test_an_invalid_progress_is_refused_before_anything_is_spent():
    budget = pf.BudgetFilter(1.0)
    with pytest.raises(InvalidInputError, match="progress"):
        _problem().solve(pf.DP(1.0, protect="sensitive"), backend="exponential", progress="yes", budget=budget)
    assert budget.spent == (0.0, 0.0)


def test_slow_gaussian_width_shows_a_bar_on_request_only(monkeypatch, capsys):
    # an overlapping group norm: one LP per Monte-Carlo sample (at plan time, a thousand)
    norm = pf.norms.group([[0, 1], [1, 2], [2, 3]], p=4)
    monkeypatch.setattr(norms, "SLOW_SECONDS", 0.0)
    w = norm.gaussian_width("primal", n_samples=20)
    assert math.isfinite(w.value) and capsys.readouterr().err == ""     # not a terminal
    with default_progress("always"):
        norm.gaussian_width("primal", n_samples=20)
    assert "Gaussian width of the primal ball" in capsys.readouterr().err
    with default_progress(False):
        norm.gaussian_width("primal", n_samples=20)
    assert capsys.readouterr().err == ""


def test_overlapping_group_dual_builds_its_lp_once():
    # the LP is parameterized by s: a thousand samples re-solve it instead of rebuilding it
    norm = pf.norms.group([[0, 1], [1, 2], [2, 3]], p=4)
    s = np.array([1.0, -2.0, 3.0, 0.5])
    first = norm.dual(s)
    lp = norm.dual_overlap_lp()
    assert norm.dual(2 * s) == pytest.approx(2 * first, rel=1e-7)
    assert norm.dual_overlap_lp() is lp
    # Ω*(s) = sup_{Ω(w) ≤ 1} <s, w>, checked against the brute-force dual of the same norm
    assert first == pytest.approx(pf.norms.SubmodularNorm.dual_bruteforce(norm, s), rel=1e-6)


def test_certified_erm_solve_shows_its_steps_on_request(capsys):
    rng = np.random.default_rng(1)
    n = 400
    x = rng.normal(size=(n, 2))
    y = (x[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    data = pf.Dataset(x, y, sensitive=np.array(["a", "b"] * (n // 2)), group_names=["a", "b"])
    ds = pf.SparseLinear(2, norm=pf.norms.l1(2), radius=2.0, l2=0.05, feature_bound=1.0)
    prob = pf.Problem(pf.minimize(pf.rates(ds, data, surrogate="logistic",
                                           feature_bound=1.0).error()), [])
    privacy = pf.DP(1.0, 1e-6, protect="row")
    prob.solve(privacy, backend="output_perturbation", seed=0, progress="always")
    assert "certified ERM solve" in capsys.readouterr().err
    prob.solve(privacy, backend="output_perturbation", seed=0)          # not a terminal
    assert capsys.readouterr().err == ""

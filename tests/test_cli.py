"""The command line: every command runs (a few through ``python -m privfair`` in a subprocess,
the rest through ``privfair.cli.commands.main``), ``--help`` everywhere, and wrong flags or bad files give
one line on stderr with exit code 2 — never a traceback."""

import importlib.util
import io
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

from privfair.cli.audit_cmd import audit_pair
from privfair.cli.commands import build_parser, main
from privfair.cli.files import load_problem_file

ROOT = pathlib.Path(__file__).resolve().parents[1]

# A small, fast PROBLEM.py: thresholds on one feature, a demographic-parity constraint.
TINY = textwrap.dedent('''
    import numpy as np
    import privfair as pf

    rng = np.random.default_rng(0)
    n = 400
    a = rng.choice(["a", "b"], n)
    x = rng.normal(size=n) + 0.8 * (a == "a")
    y = (x + rng.normal(scale=0.8, size=n) > 0.5).astype(int)
    data = pf.Dataset(x[:, None], y, sensitive=a, group_names=["a", "b"])
    train, test = data.split(0.25, rng=0)
    r = pf.rates(pf.Thresholds(np.linspace(-1.5, 2.0, 15), score=0), train, group_mass_bound=0.1)
    problem = pf.Problem(pf.minimize(r.error()),
                         [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.1])
''')


@pytest.fixture()
def tiny(tmp_path):
    path = tmp_path / "tiny_problem.py"
    path.write_text(TINY)
    return path


def run_module(*args, env=None, cwd=None):
    """``python -m privfair ARGS`` in a subprocess (the installed entry point's module)."""
    full_env = dict(os.environ, **(env or {}))
    full_env.pop("PRIVFAIR_TRACEBACK", None)
    return subprocess.run([sys.executable, "-m", "privfair", *map(str, args)], capture_output=True,
                          text=True, env=full_env, cwd=cwd, timeout=120)


def assert_one_line_error(err: str):
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("privfair: error: "), err
    assert "Traceback" not in err


# ------------------------------------------------------------------ through the real entry point
def test_module_help_lists_every_command():
    proc = run_module("--help")
    assert proc.returncode == 0, proc.stderr
    for command in ("solve", "report", "audit", "backends", "datasets", "demo"):
        assert command in proc.stdout


def test_module_solve_writes_certificate_and_report(tiny, tmp_path):
    cert, page = tmp_path / "cert.md", tmp_path / "out.html"
    proc = run_module("solve", tiny, "--epsilon", "1", "--seed", "0", "--certificate", cert,
                      "--report", page, "--no-progress", "--protect", "sensitive")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "accepted (best first)" in out                 # the plan explanation
    assert "privfair privacy certificate" in out
    assert "train: error" in out and "test : error" in out
    assert cert.read_text().startswith("### Privacy certificate")
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "</html>" in html
    # the report's page: sections as tables (Analysis, the plan ranking, the certificate),
    # the command's metrics and problem on top
    for section in ("Metrics", "Problem", "Analysis", "Plan ranking", "Privacy certificate"):
        assert f"<h2>{section}</h2>" in html, section
    assert "<table" in html
    assert "<script" not in html and "http://" not in html and "https://" not in html


def test_module_bad_file_is_one_line_exit_2(tmp_path):
    bad = tmp_path / "broken.py"
    bad.write_text("problem = (\n")
    proc = run_module("solve", bad, "--epsilon", "1")
    assert proc.returncode == 2
    assert_one_line_error(proc.stderr)
    assert "syntax error" in proc.stderr


def test_console_script_is_installed():
    script = pathlib.Path(sys.executable).parent / "privfair"
    if not script.exists():
        pytest.skip(reason="the privfair console script is not installed next to this interpreter")
    proc = subprocess.run([str(script), "backends"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "exponential" in proc.stdout


# ------------------------------------------------------------------ --help everywhere
@pytest.mark.parametrize("command", [[], ["solve"], ["report"], ["audit"], ["backends"],
                                     ["datasets"], ["demo"]])
def test_help_everywhere(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main(command + ["--help"])
    assert exc.value.code == 0
    assert "usage: privfair" in capsys.readouterr().out


def test_audit_help_documents_the_instance(capsys):
    with pytest.raises(SystemExit):
        main(["audit", "--help"])
    out = capsys.readouterr().out
    assert "neighbours" in out and "negative control" in out.lower()
    # the postprocessing instance as privfair.audit.instances builds it
    assert "1[0.2 <= x <= 0.5]), minimize the error" in out and "1[0 <= x" not in out


def test_audit_needs_a_named_backend(capsys):
    assert main(["audit", "--backend", "auto"]) == 2
    err = capsys.readouterr().err
    assert_one_line_error(err)
    assert "named backend" in err and "exponential" in err and "'auto' or" not in err


# ------------------------------------------------------------------ wrong flags: exit 2, one line
@pytest.mark.parametrize("argv", [
    [],
    ["frobnicate"],
    ["solve"],                                              # no PROBLEM.py
    ["solve", "p.py"],                                      # --epsilon is required
    ["solve", "p.py", "--epsilon", "abc"],
    ["solve", "p.py", "--epsilon", "-1"],
    ["solve", "p.py", "--epsilon", "nan"],
    ["solve", "p.py", "--epsilon", "1", "--delta", "2"],
    ["solve", "p.py", "--epsilon", "1", "--protect", "everything"],
    ["solve", "p.py", "--epsilon", "1", "--seed", "-3"],
    ["solve", "p.py", "--epsilon", "1", "--alpha", "0"],
    ["solve", "p.py", "--epsilon", "1", "--on-violation", "ignore"],
    ["audit"],                                              # --backend is required
    ["audit", "--backend", "exponential", "--runs", "0"],
    ["audit", "--backend", "exponential", "--bogus"],
    ["demo", "--epsilon", "abc"],
    ["demo", "--constraint", "calibration"],
    ["demo", "--subsample", "1"],                           # δ = 1/n² would be 1
])
def test_wrong_flags_exit_2_with_one_line(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert_one_line_error(capsys.readouterr().err)


# ------------------------------------------------------------------ bad files: exit 2, one line
BAD_FILES = {
    "syntax.py": ("x = (\n", "syntax error"),
    "noproblem.py": ("x = 1\n", "defines neither `problem`"),
    "wrongtype.py": ("problem = 3\n", "not a pf.Problem"),
    "raises.py": ("raise RuntimeError('boom')\n", "RuntimeError while loading: boom"),
    "imports.py": ("import no_such_module_xyz\n", "ModuleNotFoundError"),
    "exits.py": ("import sys\nsys.exit(3)\n", "sys.exit()"),
    "badbuild.py": ("def build():\n    return 1 / 0\n", "build() raised ZeroDivisionError"),
    "badtest.py": (TINY + "test = 'not a dataset'\n", "`test` is a str"),
    "privfairerror.py": ("import privfair as pf\npf.DP(-1)\n", "epsilon"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_problem_files_exit_2_with_one_line(name, tmp_path, capsys):
    text, message = BAD_FILES[name]
    path = tmp_path / name
    path.write_text(text)
    assert main(["solve", str(path), "--epsilon", "1"]) == 2
    err = capsys.readouterr().err
    assert_one_line_error(err)
    assert message in err and name in err


@pytest.mark.parametrize("target", ["missing.py", "folder", "data.csv"])
def test_missing_folder_or_non_python_file_exit_2(target, tmp_path, capsys):
    (tmp_path / "folder").mkdir()
    (tmp_path / "data.csv").write_text("a,b\n")
    assert main(["report", str(tmp_path / target)]) == 2
    assert_one_line_error(capsys.readouterr().err)


def test_unknown_backend_and_unwritable_output_fail_before_solving(tiny, tmp_path, capsys):
    assert main(["solve", str(tiny), "--epsilon", "1", "--backend", "nope"]) == 2
    captured = capsys.readouterr()
    assert_one_line_error(captured.err)
    assert "backend" in captured.err and captured.out == ""
    assert main(["solve", str(tiny), "--epsilon", "1",
                 "--report", str(tmp_path / "no" / "such" / "dir.html")]) == 2
    captured = capsys.readouterr()
    assert_one_line_error(captured.err)
    assert "does not exist" in captured.err and captured.out == ""


def test_output_path_that_is_the_problem_or_the_other_output_is_refused(tiny, tmp_path, capsys):
    original = tiny.read_text()
    same = tmp_path / "same.html"
    alias = tmp_path / "sub" / ".." / tiny.name            # resolves to the problem file
    (tmp_path / "sub").mkdir()
    for argv, message in (
            (["--certificate", str(tiny)], "--certificate"),
            (["--report", str(alias)], "--report"),
            (["--report", str(same), "--certificate", str(same)], "the same file as")):
        assert main(["solve", str(tiny), "--epsilon", "1", "--seed", "0", *argv]) == 2
        captured = capsys.readouterr()
        assert_one_line_error(captured.err)
        assert message in captured.err and captured.out == ""     # nothing solved
    assert tiny.read_text() == original and not same.exists()
    assert main(["report", str(tiny), "--output", str(tiny)]) == 2
    assert "the problem file" in capsys.readouterr().err and tiny.read_text() == original


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc")
def test_output_is_opened_before_solving_not_only_permission_checked(tiny, tmp_path, capsys):
    # os.access says yes to root here; opening the file says no — before anything is spent
    assert main(["solve", str(tiny), "--epsilon", "1", "--report",
                 "/proc/privfair_no_such_report.html"]) == 2
    captured = capsys.readouterr()
    assert_one_line_error(captured.err)
    assert "cannot write" in captured.err and captured.out == ""
    # the probe leaves no file behind (the solve is refused after the outputs are checked)
    probe = tmp_path / "probe.html"
    assert main(["solve", str(tiny), "--epsilon", "1", "--backend", "cells",
                 "--report", str(probe)]) == 2
    capsys.readouterr()
    assert not probe.exists()
    for flag in ("--report", "--certificate"):
        assert main(["solve", str(tiny), "--epsilon", "1", flag, ""]) == 2
        err = capsys.readouterr().err
        assert_one_line_error(err)
        assert f"{flag} '': empty file name" in err


def test_demo_subsample_minimum_names_the_flag(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--subsample", "1"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert_one_line_error(err)
    assert "--subsample" in err and "100" in err


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_demo_under_the_row_unit_solves_the_natural_problem(capsys):
    """``privfair demo --protect row``: whole rows protected, a linear rule, lagrangian_sgda;
    the default demo names its unit (one row's sex) and how to ask for whole rows."""
    assert main(["demo", "--protect", "row", "--subsample", "3000", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert "privacy unit: one whole row (protect='row')" in out
    assert "backend: lagrangian_sgda" in out
    assert "replacing one whole row" in out                # the certificate's relation
    assert main(["demo", "--subsample", "3000", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert "privacy unit: one row's sex (protect='sensitive'; --protect row" in out
    assert "backend: cells" in out


def test_refused_problem_is_a_one_line_error(tiny, capsys):
    # cells needs pf.ProxyCells: refused, nothing spent, exit 2
    assert main(["solve", str(tiny), "--epsilon", "1", "--backend", "cells"]) == 2
    err = capsys.readouterr().err
    assert_one_line_error(err)
    assert "ProxyCells" in err


# ------------------------------------------------------------------ commands
def test_solve_in_process_with_build_and_delta_default(tmp_path, capsys):
    path = tmp_path / "built.py"
    path.write_text(TINY.replace("problem = pf.Problem(", "_p = pf.Problem(")
                    + "\ndef build():\n    return _p, test\n")
    assert main(["solve", str(path), "--epsilon", "2", "--seed", "1", "--backend", "exponential",
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "δ=1.11e-05" in out                      # default δ = 1/n², n = 300 training rows
    assert "backend: exponential" in out and "test : error" in out


def test_solve_non_private_reference(tiny, capsys):
    assert main(["solve", str(tiny), "--epsilon", "inf", "--backend", "exponential"]) == 0
    assert "NOT PRIVATE (ε = ∞)" in capsys.readouterr().out


def test_report_prints_analysis_and_ranking(tiny, tmp_path, capsys):
    page = tmp_path / "report.html"
    assert main(["report", str(tiny), "--epsilon", "1", "--output", str(page)]) == 0
    out = capsys.readouterr().out
    assert "plan ranking" in out and "exponential" in out
    assert "Lipschitz" in out or "lipschitz" in out          # the compiler's analysis
    html = page.read_text()
    assert "<h2>Analysis</h2>" in html and "<h2>Plan ranking</h2>" in html


def test_backends_lists_every_registered_backend(capsys):
    from privfair.backends import BACKENDS

    assert main(["backends"]) == 0
    out = capsys.readouterr().out
    for name, backend in BACKENDS.items():
        assert any(line.startswith(name) and backend.theorem in line for line in out.splitlines())


def test_backends_shows_each_priority_and_its_reason(capsys, monkeypatch):
    """#17: `privfair backends` says why backend='auto' breaks ties the way it does: each
    backend's registry priority and reason, in that order; a stand-in added by hand comes last."""
    from privfair.backends import BACKENDS, ENTRIES, REGISTRY, priority
    from privfair.backends.base import Backend
    from privfair.cli.listings import options_markdown

    class Extra(Backend):
        name, theorem = "extra_standin", "none"

    monkeypatch.setitem(BACKENDS, "extra_standin", Extra())
    assert main(["backends"]) == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())                     # the header and reasons are wrapped
    assert "(rank, predicted excess risk, priority)" in flat
    positions = []
    for entry in REGISTRY:
        said = f"priority {entry.priority}: {' '.join(entry.reason.split())}"
        assert said in flat, said
        positions.append(flat.index(said))
    assert positions == sorted(positions)            # listed in priority order
    listed = [n for n in BACKENDS if n in ENTRIES]
    assert listed == [e.name for e in sorted(REGISTRY, key=lambda e: e.priority)]
    assert f"priority {priority('extra_standin'):g}: not in privfair.backends.REGISTRY" in flat
    md = "\n".join(options_markdown(BACKENDS))
    for entry in REGISTRY:
        assert f"Priority {entry.priority}: {entry.reason}." in md


def test_datasets(capsys):
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert "adult" in out and "compas" in out


def test_example_problem_file_loads_and_solves(capsys, monkeypatch):
    monkeypatch.setenv("PRIVFAIR_SUBSAMPLE", "2000")
    path = ROOT / "examples" / "problem_adult_eo.py"
    problem, test = load_problem_file(path)
    assert problem.rates.data.n == 2000 and test.n == 15060
    assert main(["solve", str(path), "--epsilon", "1", "--seed", "0",
                 "--protect", "sensitive"]) == 0
    out = capsys.readouterr().out
    assert "backend: cells" in out and "test : error" in out and "protect='sensitive'" in out
    # the default unit is whole rows, which the cells rules cannot protect: refused before any
    # draw, the error saying how to ask for the sensitive unit
    assert main(["solve", str(path), "--epsilon", "1", "--seed", "0"]) == 2
    err = capsys.readouterr().err
    assert "--protect sensitive" in err and "cells" in err


# ------------------------------------------------------------------ audit
def test_audit_pair_differs_in_one_sensitive_value_only():
    import numpy as np

    D, Dp = audit_pair()
    assert np.array_equal(D.X, Dp.X) and np.array_equal(D.y, Dp.y)
    assert np.flatnonzero(D.group != Dp.group).tolist() == [0]


# the full audits of every backend with both negative controls: tests/test_audit.py (slow)


def test_every_backend_has_an_audit_instance():
    import privfair as pf
    from privfair.backends import BACKENDS
    from privfair.audit.instances import audit_instances

    offered = set()
    for name, backend in BACKENDS.items():
        for inst in audit_instances(name):
            D, _ = inst.pair()
            problem = inst.build(D)
            privacy = pf.DP(1.0, inst.delta, protect=inst.protect)
            if backend.accepts(problem, problem.analyze(privacy)):
                offered.add(name)
                break
    # every backend is audited (sgda's instance needs torch, its optional extra); lagrangian_sgda
    # has a numpy LinearClassifier instance (lagrangian_w2), so it is audited without torch too
    has_torch = importlib.util.find_spec("torch") is not None
    assert offered == set(BACKENDS) - (set() if has_torch else {"sgda"})


def test_audit_without_power_exits_1(capsys):
    # 60 runs (15 pilot + 45 held out) cannot refute lopt's under-noised runs
    assert main(["audit", "--backend", "lopt", "--runs", "60", "--negative-control"]) == 1
    out = capsys.readouterr().out
    assert "NOT refuted" in out and "noise × 1/2" in out and "ε × 2" in out


def test_audit_prints_every_condition_and_a_summary(capsys):
    assert main(["audit", "--backend", "oracle_learner", "--runs", "400", "--negative-control",
                 "--no-progress"]) in (0, 1)
    out = capsys.readouterr().out
    assert "honest run: backend at ε=1" in out and "PASS: no evidence" in out
    assert "negative control 'noise × 1/2': backend at ε=1 with reduced_noise(0.5)" in out
    assert "negative control 'ε × 2': backend at ε=2" in out
    assert "other exposed fields:" in out and "empirical privacy loss: ε ≥" in out
    assert re.search(r"summary \(claim ε = .*\n  honest\s+ε ≥ \S+\s+PASS", out)


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_audit_shows_a_bar_per_phase_on_a_terminal_and_none_in_a_log(monkeypatch, capsys):
    """#20: the audit's certificate and test phases showed no progress (the test bar needed
    ≥ 20 tested fields); every phase has a bar on a terminal, a log gets none."""
    import warnings

    from privfair.errors import ResultStatusWarning

    argv = ["audit", "--backend", "exponential", "--runs", "16"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(argv) == 0                     # pytest's stderr is no terminal: a log
    out, err = capsys.readouterr()
    assert "\r" not in err and "it/s" not in err and "PASS" in out
    # the instance is too small for the held-out check: its status is a tested field, not a
    # warning per solve in the log
    assert not [w for w in caught if issubclass(w.category, ResultStatusWarning)]
    term = _Terminal()
    monkeypatch.setattr("sys.stderr", term)
    assert main(argv) == 0
    bars = term.getvalue()
    for phase in ("claim: certificate of one honest solve", "honest D:", "honest D':",
                  "honest tests:"):
        assert phase in bars, (phase, bars)
    term = _Terminal()
    monkeypatch.setattr("sys.stderr", term)
    assert main(argv + ["--no-progress"]) == 0
    assert term.getvalue() == ""


def test_heldout_tester_passes_equal_laws_and_bounds_a_known_loss():
    import math

    import numpy as np

    from privfair.privacy.testing import check_dp_heldout

    rng = np.random.default_rng(0)
    same = check_dp_heldout(rng.integers(0, 3, 4000), rng.integers(0, 3, 4000), 0.1)
    assert same.passed and same.epsilon_lower < 0.1
    # randomized response at ε = 2: the loss bound approaches 2 from below, never above
    p = math.exp(2) / (1 + math.exp(2))
    a, b = rng.random(20000) < p, rng.random(20000) < 1 - p
    rr = check_dp_heldout(a.astype(int), b.astype(int), 1.0)
    assert not rr.passed and 1.5 < rr.epsilon_lower < 2.0
    assert check_dp_heldout(a.astype(int), b.astype(int), 2.0).passed
    # continuous outputs: Laplace with a unit shift at scale 1/2 (ε = 2)
    x, y = rng.laplace(0, 0.5, 20000), rng.laplace(1, 0.5, 20000)
    lap = check_dp_heldout(x, y, 1.0)
    assert not lap.passed and lap.epsilon_lower < 2.0 and "quantile bins" in lap.how


def test_audit_refusals_are_one_line_errors(monkeypatch, capsys):
    from privfair.backends import BACKENDS
    from privfair.backends.base import Backend, Verdict

    class Picky(Backend):
        name, theorem = "picky", "none"

        def accepts(self, problem, analysis):
            return Verdict(False, "accepts nothing")

    class Reference(Backend):
        name, theorem, non_private_only = "reference", "none", True

    monkeypatch.setitem(BACKENDS, "picky", Picky())
    monkeypatch.setitem(BACKENDS, "reference", Reference())
    for name, message in (("picky", "accepts nothing"), ("reference", "non-private"),
                          ("nope", "backend")):
        assert main(["audit", "--backend", name]) == 2
        err = capsys.readouterr().err
        assert_one_line_error(err)
        assert message in err


def test_parser_is_buildable_without_side_effects():
    parser = build_parser()
    assert parser.prog == "privfair"


# ---------------------------------------------- issue #16 item 3: nothing private in the output
NEIGHBOUR = textwrap.dedent('''
    import numpy as np
    import privfair as pf

    rng = np.random.default_rng(0)
    n = 200
    a = np.array(["a"] * 100 + ["b"] * 100)
    x = rng.normal(size=n)
    y = (x > 0).astype(int)
    if MOVE:
        a[np.flatnonzero((y == 1) & (a == "a"))[:10]] = "b"   # ten rows' group, one at a time
    data = pf.Dataset(x[:, None], y, sensitive=a, group_names=["a", "b"])
    r = pf.rates(pf.Thresholds([0.0], score=0), data, group_mass_bound=0.1)   # one candidate
    problem = pf.Problem(pf.minimize(r.error()))
''')


@pytest.mark.parametrize("protect", ["sensitive", "row"])
def test_solve_prints_nothing_that_reads_the_private_column(tmp_path, capsys, protect):
    """On main ``privfair solve`` printed (and wrote into --report) the training-set DP and EO
    violations from the private sensitive column: with one fixed candidate the decision is the
    same on both datasets, yet the printed violation differed.  Now the two outputs (and
    reports) are identical up to the timing."""
    outs, pages = [], []
    for move in (False, True):
        path = tmp_path / f"p{int(move)}.py"
        path.write_text(f"MOVE = {move}\n" + NEIGHBOUR)
        page = tmp_path / f"p{int(move)}.html"
        assert main(["solve", str(path), "--epsilon", "1", "--backend", "exponential",
                     "--seed", "0", "--protect", protect, "--report", str(page)]) == 0
        text = capsys.readouterr().out
        text = re.sub(r"\(\d+\.\d s\)", "", text).replace(str(path), "P")
        outs.append(text.replace(str(page), "R"))
        pages.append(page.read_text().replace(path.name, "P"))
    assert outs[0] == outs[1]
    assert pages[0] == pages[1]
    if protect == "sensitive":
        assert "withheld" in outs[0]
    else:
        assert "train:" not in outs[0]


# ---------------------------------------------- issue #18 item 3: the status line
def test_solve_prints_the_status_and_the_held_out_check(tmp_path, capsys):
    path = tmp_path / "big.py"
    path.write_text(TINY.replace("n = 400", "n = 2000"))
    from privfair.errors import ResultStatusWarning, UncheckedResultWarning

    with pytest.warns(ResultStatusWarning):
        assert main(["solve", str(path), "--epsilon", "1", "--seed", "0", "--backend",
                     "exponential", "--no-progress"]) == 0
    out = capsys.readouterr().out
    status = [line for line in out.splitlines() if line.startswith("status: ")]
    assert len(status) == 1 and status[0] != "status: certified"
    assert "held-out check on 300 rows (1200 trained on)" in out
    assert "parallel composition" in out                    # the certificate's note
    with pytest.warns(UncheckedResultWarning):
        assert main(["solve", str(path), "--epsilon", "1", "--seed", "0", "--backend",
                     "exponential", "--no-progress", "--holdout", "0"]) == 0
    assert "status: not checked: holdout=0" in capsys.readouterr().out
    with pytest.warns(ResultStatusWarning):     # --on-violation reaches the check
        assert main(["solve", str(path), "--epsilon", "1", "--seed", "0", "--backend",
                     "exponential", "--no-progress", "--on-violation", "warn"]) == 0
    assert "held-out check on 300 rows" in capsys.readouterr().out
    # --certify reaches the check: certified by mixing with the constant, no status warning
    # (8,000 rows: at 300 held-out rows the check is uninformative and returns the constant)
    import warnings

    path.write_text(TINY.replace("n = 400", "n = 8000"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResultStatusWarning)
        assert main(["solve", str(path), "--epsilon", "1", "--seed", "0", "--backend",
                     "exponential", "--no-progress", "--certify"]) == 0
    out = capsys.readouterr().out
    assert "status: certified (mixed with a constant rule)" in out
    assert "returned: the trained rule with probability" in out


# ---------------------------------------------- issue #17: one HTML renderer
def test_pages_without_the_report_use_the_one_renderer(tiny, tmp_path, monkeypatch, capsys):
    """#17: the command line had a second page builder for when the sample-complexity report
    cannot be built; now both commands' pages come from privfair.reports.html (one shell, the
    report's style) and keep every section the old page had: the note, the metrics (training
    fairness gaps of a private solve withheld), the problem, the Analysis, the plan ranking and,
    for a solve, the certificate."""
    import privfair.cli.report_cmd as report_cmd
    import privfair.cli.solve as solve

    def unavailable(*args, **kwargs):
        return None, "the sample-complexity report failed on this problem (stand-in)"

    monkeypatch.setattr(solve, "full_report", unavailable)
    monkeypatch.setattr(report_cmd, "full_report", unavailable)
    solved, reported = tmp_path / "solve.html", tmp_path / "report.html"
    assert main(["solve", str(tiny), "--epsilon", "1", "--seed", "0", "--backend", "exponential",
                 "--report", str(solved), "--no-progress", "--protect", "sensitive"]) == 0
    assert main(["report", str(tiny), "--output", str(reported)]) == 0
    capsys.readouterr()
    pages = {"solve": solved.read_text(), "report": reported.read_text()}
    want = {"solve": ("Sample-complexity report", "Metrics", "Problem",
                      "The held-out check of the released decision", "Analysis",
                      "Plan ranking", "Privacy certificate"),
            "report": ("Sample-complexity report", "Problem", "Analysis", "Plan ranking")}
    for name, page in pages.items():
        assert page.startswith("<!DOCTYPE html>") and "<div class='pf-report'>" in page, name
        assert "(stand-in)" in page, name
        headings = re.findall(r"<h2>([^<]*)</h2>", page)
        assert headings == list(want[name]), (name, headings)
        assert "<script" not in page and "http" not in page, name
    train = re.search(r"<tr><td>train</td>.*?</tr>", pages["solve"]).group(0)
    assert train.count("withheld") == 2                  # DP and EO gaps: never shown
    assert "Privacy certificate" not in pages["report"]  # report spends nothing


def test_full_and_fallback_pages_share_the_page_shell(tiny, tmp_path, capsys):
    """The report's own page (``privfair report --output X.html``) is built in the same shell."""
    page = tmp_path / "r.html"
    assert main(["report", str(tiny), "--output", str(page)]) == 0
    capsys.readouterr()
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<div class='pf-report'>" in html
    assert "<h1>privfair report — tiny_problem.py</h1>" in html
    assert "<title>privfair report — tiny_problem.py</title>" in html


def test_names_imported_from_commands_before_the_split_still_import():
    """#17 split privfair/cli/commands.py by command; the names code imported from it (the
    console script ``privfair.cli.commands:main`` first) keep working."""
    from privfair.cli import commands

    for name in ("main", "build_parser", "load_problem_file", "audit_pair", "audit_doc",
                 "option_lines", "options_markdown", "OPTION_COLUMNS", "priority_line",
                 "CommandError", "EXIT_OK", "EXIT_USAGE"):
        assert hasattr(commands, name), name
    assert commands.main(["datasets"]) == 0

"""The declarative option tables (issue #17): every table is well formed, the backends that
declare one refuse a bad value with a typed error naming the option, the value and the fix
*before anything is spent*, the validated values are the ones the plan uses, and
``privfair backends`` and docs/backends.md list each option from its table."""

import math
import pathlib

import numpy as np
import pytest

import privfair as pf
from privfair.backends import BACKENDS, get
from privfair.backends.options import REQUIRED, rows
from privfair.cli.commands import OPTION_COLUMNS, main, option_lines, options_markdown
from privfair.errors import InvalidInputError

ROOT = pathlib.Path(__file__).resolve().parents[1]
TABLED = [n for n, b in BACKENDS.items() if b.option_table is not None]


# ------------------------------------------------------------------------------ problems
def _data(seed=0, n=400):
    rng = np.random.default_rng(seed)
    a = rng.choice(["a", "b"], n, p=[0.6, 0.4])
    X = np.column_stack([rng.normal(size=n) + 0.8 * (a == "a"), rng.normal(size=n)])
    y = (X[:, 0] + rng.normal(scale=0.8, size=n) > 0.5).astype(int)
    return pf.Dataset(X, y, sensitive=a, group_names=["a", "b"])


def thresholds_problem():
    """A finite decision set: exponential and oracle_learner accept it."""
    r = pf.rates(pf.Thresholds(np.linspace(-1.5, 2.0, 9), score=0), _data(), group_mass_bound=0.1)
    return pf.Problem(pf.minimize(r.error()),
                      [pf.abs(r.fpr["a"] - r.fpr["b"]) <= 0.1])


def postprocessed_problem():
    r = pf.rates(pf.PostProcessed(lambda X: 1.0 / (1.0 + np.exp(-3.0 * (X[:, 0] - 0.5)))),
                 _data(1))
    return pf.Problem(pf.minimize(r.error()), [pf.abs(r.fpr["a"] - r.fpr["b"]) <= 0.05])


def cells_problem():
    r = pf.rates(pf.ProxyCells(score_bins=4, proxy_bins=2), _data(2))
    return pf.Problem(pf.minimize(r.error()),
                      [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.05])


PROBLEMS = {"exponential": thresholds_problem, "oracle_learner": thresholds_problem,
            "postprocessing": postprocessed_problem, "cells": cells_problem}


@pytest.fixture(scope="module")
def problems():
    return {name: build() for name, build in PROBLEMS.items()}


# ------------------------------------------------------------------------------ every table
@pytest.mark.parametrize("name", TABLED)
def test_every_table_is_well_formed(name):
    b = get(name)
    names = [o.name for o in b.option_table]
    assert len(set(names)) == len(names), "an option declared twice"
    assert b.option_names == tuple(names)          # the planner's name check reads the table
    public = [o for o in b.option_table if not o.name.startswith("_")]
    for o in public:
        assert o.doc and "\n" not in o.doc, f"{name}.{o.name}: one line of doc"
        # "any" says nothing about the type: such an option checks its value itself
        assert o.kind != "any" or o.check is not None, f"{name}.{o.name}: type or check"
        if o.default is not None and o.default is not REQUIRED:
            assert o.validate(o.default, name) == o.default, f"{name}.{o.name}: bad default"
    assert set(b.options_from({})) == {o.name for o in public if o.default is not REQUIRED}


# ------------------------------------------------------------------------------ refusals
BAD = [
    ("postprocessing", "beta", 1.0, "(0, 1)"), ("postprocessing", "beta", True, "(0, 1)"),
    ("postprocessing", "slack", "loose", "'paper', 'none'"),
    ("postprocessing", "base", 3, "callable"),
    ("oracle_learner", "T", 0, "whole number ≥ 1"), ("oracle_learner", "T", 2.5, "whole number"),
    ("oracle_learner", "B", -1.0, "> 0"), ("oracle_learner", "B", math.inf, "finite"),
    ("oracle_learner", "eta", 0, "> 0"), ("oracle_learner", "beta", 0, "(0, 1)"),
    ("oracle_learner", "ridge", "big", "> 0"),
    ("cells", "proxy_share", 1.0, "(0, 1)"), ("cells", "proxy_share", 0, "(0, 1)"),
    ("cells", "margin_z", -1.0, "≥ 0"), ("cells", "margin_z", math.nan, "finite"),
    ("cells", "proxy_interactions", 1, "True or False"),
]


@pytest.mark.parametrize("backend, option, value, fix", BAD)
def test_a_bad_value_is_refused_naming_it_before_anything_is_spent(problems, backend, option,
                                                                   value, fix):
    budget = pf.BudgetFilter(1.0, 1e-6)
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    with pytest.raises(InvalidInputError) as info:
        problems[backend].solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend=backend, seed=rng, budget=budget,
                                progress=False, **{option: value})
    err = info.value
    assert err.field == option
    if option == "base":       # the predictor check (postprocess.as_base) names its type
        assert err.value == type(value).__name__
    else:                      # the table's own error also names the backend
        assert err.value is value or err.value == value
        assert f"backend {backend!r}" in str(err)
    assert fix in str(err)
    assert budget.spent == (0.0, 0.0)                 # nothing reserved or spent
    assert rng.bit_generator.state == state           # nothing drawn
    with pytest.raises(InvalidInputError):            # plan() refuses it too
        problems[backend].plan(pf.DP(1.0, 1e-6, protect="sensitive"), backend=backend, **{option: value})


@pytest.mark.parametrize("backend", sorted(PROBLEMS))
def test_the_backend_itself_validates_not_only_the_planner(problems, backend):
    # a caller that reaches the backend's plan directly (the report's what-if plans, a test)
    # gets the same typed refusal: the table is checked in plan(), not only by the planner
    b, prob = get(backend), problems[backend]
    privacy = pf.DP(1.0, 1e-6, protect="sensitive")
    analysis = prob.analyze(privacy)
    with pytest.raises(InvalidInputError, match="unknown option"):
        b.plan(prob, analysis, privacy, {"not_an_option": 1})


# ------------------------------------------------------------------------------ values used
def test_oracle_learner_uses_the_validated_values(problems):
    plan = problems["oracle_learner"].plan(pf.DP(1.0, protect="sensitive"), backend="oracle_learner", T=3.0, B=2,
                                           beta=0.1, eta=0.5).chosen
    p = plan.params
    assert p["T"] == 3 and isinstance(p["T"], int)
    assert p["B"] == 2.0 and p["beta"] == 0.1 and p["eta"] == 0.5
    assert "ridge" not in p                       # the finite class's oracle reads no ridge
    auto = problems["oracle_learner"].plan(pf.DP(1.0, protect="sensitive"), backend="oracle_learner").chosen
    assert auto.params["beta"] == get("oracle_learner").options_from({})["beta"]


def test_postprocessing_uses_the_validated_values(problems):
    prob = problems["postprocessing"]
    plan = prob.plan(pf.DP(1.0, protect="sensitive"), backend="postprocessing", beta=0.2, slack="none").chosen
    assert plan.params["beta"] == 0.2 and plan.params["slack"] == "none"
    assert any("slack='none'" in n for n in plan.notes)
    default = prob.plan(pf.DP(1.0, protect="sensitive"), backend="postprocessing").chosen
    assert default.params["slack"] == "paper" and default.params["beta"] == 0.05


def test_cells_uses_the_validated_values(problems):
    prob = problems["cells"]
    plan = prob.plan(pf.DP(1.0, 1e-6, protect="sensitive"), backend="cells", proxy_share=0.25, margin_z=1,
                     proxy_interactions=True).chosen
    p = plan.params
    assert p["epsilon_M1"] == pytest.approx(0.25) and p["epsilon_M2"] == pytest.approx(0.75)
    assert p["margin_z"] == 1.0 and isinstance(p["margin_z"], float)
    assert p["interactions"] is True
    default = prob.plan(pf.DP(1.0, 1e-6, protect="sensitive"), backend="cells").chosen.params
    assert default["margin_z"] == 1.645 and default["interactions"] is False


# ------------------------------------------------------------------------------ listing
def test_privfair_backends_lists_every_option_from_its_table(capsys):
    assert main(["backends"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for name, b in BACKENDS.items():
        assert any(line.startswith(name) and b.theorem in line for line in lines)
        if b.option_table is None:
            for opt in (n for n in b.option_names or () if not n.startswith("_")):
                assert opt in out
            continue
        for opt, kind, rng, default, _ in rows(b.option_table):
            # the option's own row: name, type, range and default in their columns
            assert any(line.split()[:2] == [opt, kind] and rng in line and default in line
                       for line in lines if line.startswith("    ") and line.strip()), (name, opt)
    assert "_noise_multiplier" not in out             # test-only knobs are not listed


def test_option_lines_wrap_the_doc_under_its_column():
    lines = option_lines(get("oracle_learner"))
    assert lines[0].split() == list(OPTION_COLUMNS)
    doc_col = lines[0].index("doc")
    for line in lines[1:]:
        assert len(line) <= 100
        if not line[:doc_col].strip():                # a continuation: only doc text
            assert line[doc_col] != " "
    assert option_lines(get("exponential")) == ["    options: none"]


def test_docs_list_the_option_tables():
    text = (ROOT / "docs" / "backends.md").read_text(encoding="utf-8")
    start = text.index("\n", text.index("<!-- options:")) + 1
    block = text[start:text.index("<!-- /options -->")].strip("\n")
    expected = "\n".join(options_markdown(BACKENDS))
    assert block == expected, ("docs/backends.md's option tables are stale: replace the block "
                               "between its <!-- options --> markers with the output of "
                               "`privfair backends --markdown`")


def test_markdown_flag_prints_the_tables(capsys):
    assert main(["backends", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert out.strip("\n") == "\n".join(options_markdown(BACKENDS))
    for name in TABLED:
        for row in rows(get(name).option_table):
            assert f"| `{row[0]}` | {row[1]} |" in out



def test_a_plans_parameters_are_final():
    """run() reads what plan() chose and cannot change it (#17: plans are final); a typo in a
    name is an error listing the names there are, not a silent default."""
    plan = cells_problem().plan(pf.DP(1.0, 1e-6, protect="sensitive"), backend="cells").chosen
    with pytest.raises(TypeError):
        plan.params["T"] = 1
    with pytest.raises(AttributeError, match="final"):
        plan.params.T = 1
    name = next(iter(plan.params))
    assert plan.params[name] is getattr(plan.params, name)
    with pytest.raises(KeyError, match="not set; this plan has"):
        plan.params["no_such_parameter"]

"""str(problem) reads as written (#20, first contact): a constraint over every pair of groups is
broken between its terms, never inside one, and a very long one is summarized in ``str`` (its
first and last lines) while ``repr`` keeps all of it."""

import itertools
import re

import numpy as np

import privfair as pf

WIDTH = 100          # the project's line width for printed output (privfair/util/text.py)


def _pairs_problem(n_groups):
    rng = np.random.default_rng(0)
    G = [f"g{i}" for i in range(n_groups)]
    data = pf.Dataset(rng.normal(size=(300, 2)), rng.integers(0, 2, 300),
                      sensitive=rng.choice(G, 300), group_names=G)
    r = pf.rates(pf.Thresholds(np.linspace(-1, 1, 5), score=0), data)
    terms = []
    for g, h in itertools.combinations(G, 2):
        terms += [pf.abs(r.fpr[g] - r.fpr[h]), pf.abs(r.tpr[g] - r.tpr[h])]
    return pf.Problem(pf.minimize(r.error()), [pf.maximum(*terms) <= 0.03]), terms


def _flat(text):
    return " ".join(text.split())


def test_thirty_terms_break_between_terms_never_inside_one():
    prob, terms = _pairs_problem(6)
    assert len(terms) == 30
    text = str(prob)
    lines = text.splitlines()
    assert max(map(len, lines)) <= WIDTH and len(lines) > 3
    # every term is whole on one line (textwrap cut 'abs(fpr[g0] -' / 'fpr[g4])' apart)
    for term in map(str, terms):
        assert any(term in line for line in lines), term
    # continuation lines of the constraint hang under its opening bracket
    start = lines[2].index("(") + 1
    assert lines[2].startswith("  subject to maximum(")
    assert all(line.startswith(" " * start + "abs(") for line in lines[3:-1])
    # nothing is lost: with its whitespace collapsed it is the problem as written
    assert _flat(text) == _flat(f"minimize {prob.objective.target} subject to {prob.g[0]} <= 0")
    assert str(prob) == repr(prob)                    # 30 terms: short enough to show all


def test_a_very_long_constraint_is_summarized_in_str_and_whole_in_repr():
    prob, terms = _pairs_problem(12)                  # 132 terms
    full, short = repr(prob).splitlines(), str(prob).splitlines()
    assert max(map(len, full + short)) <= WIDTH
    assert _flat(repr(prob)) == _flat(f"minimize {prob.objective.target} "
                                      f"subject to {prob.g[0]} <= 0")
    constraint = [i for i, line in enumerate(full) if line.startswith("  subject to")][0]
    shown = len(short) - constraint
    assert shown == pf.Problem.SHOWN_LINES
    hidden = int(re.search(r"\.\.\. (\d+) more lines", str(prob)).group(1))
    assert hidden + shown - 1 == len(full) - constraint   # every line is shown or counted
    assert short[-2:] == full[-2:]                          # the end, with "<= 0", is shown

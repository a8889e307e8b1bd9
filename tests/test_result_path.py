"""Result.path: every checkpoint of sgda's λ path scored on held-out data, the chosen marked."""

import math

import numpy as np
import pytest

import privfair as pf
from privfair.errors import InvalidInputError
from _synthetic import binary as _binary

pytest.importorskip("torch", reason="torch is an optional extra (sgda needs it)")


@pytest.fixture(scope="module")
def dp_run():
    train, test = _binary(3000, 0), _binary(2000, 1)
    r = pf.rates(pf.LinearClassifier(2, radius=20.0), train)
    prob = pf.Problem(pf.minimize(r.error()), [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.05])
    res = prob.solve(pf.DP(math.inf, protect="sensitive"), backend="sgda", seed=0, epochs=10, progress=False)
    return res, test


def test_one_row_per_checkpoint_with_its_own_metrics(dp_run):
    res, test = dp_run
    table = res.path(test)
    assert [p.lam for p in table.points] == [float(v) for v in res.info["lambdas"]]
    for p, ckpt in zip(table.points, res.info["checkpoints"], strict=True):
        pred = res.decision_set.predict(ckpt, test.X)            # another code path
        groups = np.asarray(test.groups, dtype=object)[test.group]
        assert p.error == pytest.approx(pf.metrics.error(test.y, pred))
        assert p.dp_violation == pytest.approx(pf.metrics.dp_violation(pred, groups))
        assert p.eo_violation == pytest.approx(pf.metrics.eo_violation(test.y, pred, groups))
    # the path trades error for fairness: λ = 0 is the least fair point on held-out data too
    assert table.points[0].dp_violation > table.points[-1].dp_violation + 0.02


def test_the_chosen_checkpoint_is_marked(dp_run):
    res, test = dp_run
    table = res.path(test)
    marked = [i for i, p in enumerate(table.points) if p.weight > 0]
    assert marked == [res.info["chosen_index"]] and table.points[marked[0]].weight == 1.0
    text = str(table)
    assert text.splitlines()[0].split()[:2] == ["λ", "error"] and text.count("★") == 1
    assert table.to_markdown().count("\n") == len(table.points) + 2     # header, rule, released
    assert text.splitlines()[-1].startswith("released")
    assert table.released == res.metrics(test)


@pytest.mark.slow     # ~13 s of CPU: sgda's plan calibrates its steps by PLD at ε = 2
def test_a_mixture_marks_both_components_with_their_weights():
    train, test = _binary(3000, 2), _binary(1500, 3)
    r = pf.rates(pf.LinearClassifier(2, radius=20.0), train)
    prob = pf.Problem(pf.minimize(r.error()), [pf.maximum(pf.abs(r.fpr["a"] - r.fpr["b"]),
                                                          pf.abs(r.tpr["a"] - r.tpr["b"])) <= 0.05])
    res = prob.solve(pf.DP(2.0, 1e-6, protect="sensitive"), backend="sgda", seed=0, epochs=2, progress=False)
    table = res.path(test)
    assert table.fairness == "equalized_odds"
    got = {i: p.weight for i, p in enumerate(table.points) if p.weight > 0}
    want = {}
    for i, w in res.info["chosen_indices"]:
        want[i] = want.get(i, 0.0) + w
    assert got == pytest.approx(want) and sum(got.values()) == pytest.approx(1.0)
    # the released row is the mixture's expected prediction: its error is the weighted errors'
    assert table.released["error"] == pytest.approx(
        sum(w * table.points[i].error for i, w in want.items()))
    assert [res.info["lambdas"][i] for i in sorted(want)] == \
        sorted(lam for lam, _ in res.info["chosen_mixture"])


def test_plot_draws_the_path_and_stars_the_choice(dp_run):
    res, test = dp_run
    fig = res.path(test).plot()
    ax = fig.axes[0]
    line = ax.lines[0]
    assert len(line.get_xdata()) == len(res.info["lambdas"])
    stars, released = ax.collections                      # the chosen star, the released ◆
    assert len(stars.get_offsets()) == 1 and len(released.get_offsets()) == 1
    m = res.metrics(test)
    assert tuple(released.get_offsets()[0]) == pytest.approx((m["dp_violation"], m["error"]))
    assert "demographic-parity" in ax.get_xlabel()
    assert len(ax.texts) == len(res.info["lambdas"])                               # λ labels


def test_a_result_without_a_path_is_a_clear_error():
    data = _binary(200, 4)
    ds = pf.LinearClassifier(2, radius=1.0)
    res = pf.Result("cells", [np.zeros(3)], [1.0], ds)
    with pytest.raises(InvalidInputError, match="sgda"):
        res.path(data)


@pytest.mark.parametrize("bad", [None, "test", np.zeros((5, 2))])
def test_scoring_on_something_other_than_a_dataset_is_a_clear_error(dp_run, bad):
    res, _ = dp_run
    for score in (res.path, res.metrics):
        with pytest.raises(InvalidInputError, match="pf.Dataset"):
            score(bad)


# ------------------------------------------------------------- after a held-out fallback (#20)
@pytest.fixture(scope="module")
def fallback_run():
    """A real sgda solve whose held-out check is made to fall back (the check's own numbers are
    kept; only its verdict is forced, since no small instance reliably trains a rule worse than
    a constant): the planner then returns the constant rule with ``holdout.trained``."""
    import privfair.planning.holdout as H

    real = H.check

    def forced(*args, **kwargs):
        out = real(*args, **kwargs)
        out.fallback = True
        if out._constant_code is None:        # no constant meets the constraints: say 0
            out._constant_code, out.constant_label = 0, 0
        return out

    train, test = _binary(3000, 5), _binary(1500, 6)
    r = pf.rates(pf.LinearClassifier(2, radius=20.0), train)
    prob = pf.Problem(pf.minimize(r.error()), [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.05])
    mp = pytest.MonkeyPatch()
    mp.setattr(H, "check", forced)
    try:
        with pytest.warns(pf.errors.FallbackWarning):
            res = prob.solve(pf.DP(math.inf, protect="sensitive"), backend="sgda", seed=0, epochs=5, progress=False)
    finally:
        mp.undo()
    return res, test


def test_after_a_fallback_the_path_is_the_trained_rules_and_says_so(fallback_run):
    res, test = fallback_run
    assert res.status == "fallback: constant rule"
    trained = res.holdout.trained
    assert trained is not res and "checkpoints" not in res.info        # the constant has none
    table = res.path(test)
    own = trained.path(test)
    assert [(p.lam, p.error, p.weight) for p in table.points] == \
        [(p.lam, p.error, p.weight) for p in own.points]
    # the released row is the trained rule's release, not the constant that was returned
    assert table.released == trained.metrics(test) != res.metrics(test)
    assert table.released_label == "trained (not returned)"
    assert "result.holdout.trained" in table.note and "constant rule" in table.note
    assert repr(res.holdout.constant_label) in table.note
    lines = str(table).splitlines()
    assert lines[0].startswith("note: ") and lines[-1].startswith("trained (not returned)")
    assert table.to_markdown().startswith("*Note: ")
    ax = table.plot().axes[0]
    assert "trained rule" in ax.get_title()
    assert own.note == "" and own.released_label == "released"      # the trained result's own


def test_a_run_that_did_not_fall_back_has_no_note(dp_run):
    res, test = dp_run
    table = res.path(test)
    assert table.note == "" and not str(table).startswith("note")
    assert "trained" not in table.plot().axes[0].get_title()

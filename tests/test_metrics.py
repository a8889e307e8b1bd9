"""Metrics agree with fairlearn on hard predictions and extend to expected predictions."""

import numpy as np
import pytest

from privfair import metrics

fairlearn_metrics = pytest.importorskip("fairlearn.metrics", reason="fairlearn is a dev extra")


@pytest.mark.parametrize("seed", range(5))
def test_agree_with_fairlearn_on_hard_predictions(seed):
    rng = np.random.default_rng(seed)
    n = 500
    a = rng.choice(["F", "M", "X"], n, p=[0.3, 0.5, 0.2])
    y = rng.integers(0, 2, n)
    p = (rng.random(n) < 0.3 + 0.2 * (a == "M")).astype(int)
    assert metrics.dp_violation(p, a) == pytest.approx(
        fairlearn_metrics.demographic_parity_difference(y, p, sensitive_features=a), abs=1e-12)
    assert metrics.eo_violation(y, p, a) == pytest.approx(
        fairlearn_metrics.equalized_odds_difference(y, p, sensitive_features=a), abs=1e-12)
    assert metrics.error(y, p) == pytest.approx(np.mean(y != p))


def test_expected_predictions_are_the_mixture_average():
    rng = np.random.default_rng(0)
    n = 300
    a = rng.choice(["F", "M"], n)
    y = rng.integers(0, 2, n)
    h1, h2 = rng.integers(0, 2, n), rng.integers(0, 2, n)
    w = 0.3
    mix = w * h1 + (1 - w) * h2
    for fn in (lambda p: metrics.error(y, p), lambda p: metrics.selection_rates(p, a)["F"]):
        assert fn(mix) == pytest.approx(w * fn(h1) + (1 - w) * fn(h2))


def test_bad_inputs_name_the_field():
    with pytest.raises(metrics.InvalidInputError, match="sensitive"):
        metrics.dp_violation([0, 1, 1], ["a", "b"])
    with pytest.raises(metrics.InvalidInputError, match="y_pred"):
        metrics.dp_violation([0, 2], ["a", "b"])

"""Results on more than two classes, and what a Result refuses to predict on."""

import numpy as np
import pytest

import privfair as pf
from privfair.statistics import metrics
from privfair.errors import DataError, InvalidPrivacyError
from privfair.results.result import Result

torch = pytest.importorskip("torch", reason="TorchModel needs the optional torch extra")


def _three_class_result():
    model = pf.TorchModel(torch.nn.Linear(2, 3), n_features=2, n_classes=3)
    # two decisions: logits = W x + b with W picking class by the sign of x0 / of x1
    th1 = np.zeros(model.P)
    th2 = np.zeros(model.P)
    w = [p.numel() for p in model.template.parameters()]     # weight (3×2), bias (3)
    W1 = np.array([[1.0, 0], [-1.0, 0], [0, 0]])
    W2 = np.array([[0, 0], [0, 1.0], [0, -1.0]])
    th1[:w[0]], th2[:w[0]] = W1.ravel(), W2.ravel()
    return model, Result("test", [th1, th2], [0.25, 0.75], model)


def test_multiclass_predict_proba_is_the_mixture_of_one_hot_labels():
    model, res = _three_class_result()
    X = np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]])
    c1, c2 = model.predict(res.decisions[0], X), model.predict(res.decisions[1], X)
    P = res.predict_proba(X)
    assert P.shape == (3, 3) and np.allclose(P.sum(axis=1), 1.0)
    want = 0.25 * np.eye(3)[c1] + 0.75 * np.eye(3)[c2]
    assert np.allclose(P, want)
    # the deterministic threshold is an explicit option; predict draws from the mixture
    assert np.array_equal(res.predict(X, randomized=False), np.argmax(want, axis=1))
    draws = np.array([res.sample(X, rng=s) for s in range(4000)])
    keyed = np.array([res.predict(X, random_state=s) for s in range(4000)])
    for i in range(3):
        for d in (draws, keyed):
            freq = np.bincount(d[:, i], minlength=3) / len(d)
            assert np.abs(freq - want[i]).max() < 0.03


def test_multiclass_metrics_and_their_binary_special_case():
    model, res = _three_class_result()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2))
    y = rng.integers(0, 3, 400)
    groups = rng.choice(["a", "b"], 400)
    data = pf.Dataset(X, y, sensitive=groups, group_names=["a", "b"], labels=[0, 1, 2])
    m = res.metrics(data)
    P = res.predict_proba(X)
    assert m["error"] == pytest.approx(1 - P[np.arange(400), data.y].mean())
    dp = max(abs(P[groups == "a", k].mean() - P[groups == "b", k].mean()) for k in range(3))
    assert m["dp_violation"] == pytest.approx(dp)
    # K = 2: the matrix form gives the binary numbers
    p = rng.random(400)
    yb = rng.integers(0, 2, 400)
    two = metrics.summary(yb, np.column_stack([1 - p, p]), groups)
    one = metrics.summary(yb, p, groups)
    assert two == pytest.approx(one)


def test_predicting_on_nan_or_on_the_wrong_width_is_a_data_error():
    model, res = _three_class_result()
    with pytest.raises(DataError, match="NaN"):
        res.predict(np.array([[np.nan, 0.0]]))
    with pytest.raises(DataError, match="2 columns"):
        res.predict_proba(np.zeros((4, 5)))


def test_a_module_of_the_wrong_width_is_refused_with_the_fix():
    with pytest.raises(pf.errors.InvalidInputError, match="n_features=12"):
        pf.TorchModel(torch.nn.Linear(13, 2), 12, 2)


@pytest.mark.parametrize("eps,delta", [("1", 1e-6), (True, 0.0), (1.0, "1e-6"), (1.0, False)])
def test_privacy_parameters_must_be_numbers(eps, delta):
    with pytest.raises(InvalidPrivacyError):
        pf.DP(eps, delta, protect="sensitive")

"""Every privacy map, calibration and mechanism rejects bad parameters with an
InvalidPrivacyError (or InvalidInputError for data) that names the field — before drawing."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privfair.privacy as pp
from privfair.errors import InvalidInputError, InvalidPrivacyError

BAD_EPS = [0, -1.0, math.nan, math.inf, "x", None]
BAD_DELTA = [-1e-9, 1.0, 1.5, math.nan, math.inf, "x"]
BAD_SENS = [0, -1.0, math.nan, math.inf, "x", None]


class ExplodingSource(pp.RandomSource):
    """A random source that fails the test if anything is drawn."""

    def words(self, n):
        raise AssertionError("randomness drawn before validation")

    def below(self, bound, size=None):
        raise AssertionError("randomness drawn before validation")


RNG = ExplodingSource()


def _calls_with_epsilon(eps):
    return [
        lambda: pp.DP(eps, protect="sensitive") if eps is not math.inf else (_ for _ in ()).throw(
            InvalidPrivacyError("epsilon", eps, "")),
        lambda: pp.laplace_mechanism(1.0, 1.0, eps, rng=RNG),
        lambda: pp.gaussian_mechanism(1.0, 1.0, eps, 1e-6, rng=RNG),
        lambda: pp.exponential_mechanism([1.0, 2.0], 1.0, eps, rng=RNG),
        lambda: pp.permute_and_flip([1.0, 2.0], 1.0, eps, rng=RNG),
        lambda: pp.calibrate_gaussian_sigma(1.0, eps, 1e-6),
        lambda: pp.calibrate_advanced(eps, 1e-6, 10),
        lambda: pp.calibrate_optimal(eps, 1e-6, 10),
        lambda: pp.calibrate_gaussian(eps, 1e-6, 10),
        lambda: pp.laplace_event(1.0, eps),
        lambda: pp.BudgetFilter(eps, 1e-6),
    ]


@pytest.mark.parametrize("eps", BAD_EPS)
def test_bad_epsilon_names_the_field(eps):
    for call in _calls_with_epsilon(eps):
        with pytest.raises(InvalidPrivacyError) as info:
            call()
        assert info.value.field == "epsilon"


def test_dp_accepts_infinite_epsilon_but_mechanisms_do_not():
    assert not pp.DP(math.inf, protect="sensitive").is_private
    with pytest.raises(InvalidPrivacyError, match="finite"):
        pp.laplace_mechanism(1.0, 1.0, math.inf, rng=RNG)


@pytest.mark.parametrize("delta", BAD_DELTA)
def test_bad_delta_names_the_field(delta):
    calls = [
        lambda: pp.DP(1.0, delta, protect="sensitive"),
        lambda: pp.gaussian_mechanism(1.0, 1.0, 1.0, delta, rng=RNG),
        lambda: pp.calibrate_gaussian_sigma(1.0, 1.0, delta),
        lambda: pp.calibrate_advanced(1.0, delta, 10),
        lambda: pp.calibrate_gaussian(1.0, delta, 10),
        lambda: pp.BudgetFilter(1.0, delta),
        lambda: pp.Accountant(delta=delta),
    ]
    for call in calls:
        with pytest.raises(InvalidPrivacyError) as info:
            call()
        assert info.value.field == "delta"


def test_gaussian_needs_positive_delta():
    for call in (lambda: pp.gaussian_mechanism(1.0, 1.0, 1.0, 0.0, rng=RNG),
                 lambda: pp.calibrate_gaussian_sigma(1.0, 1.0, 0.0),
                 lambda: pp.calibrate_advanced(1.0, 0.0, 5)):
        with pytest.raises(InvalidPrivacyError, match="delta > 0") as info:
            call()
        assert info.value.field == "delta"


@pytest.mark.parametrize("sens", BAD_SENS)
def test_bad_sensitivity_names_the_field(sens):
    calls = [
        lambda: pp.laplace_mechanism(1.0, sens, 1.0, rng=RNG),
        lambda: pp.gaussian_mechanism(1.0, sens, 1.0, 1e-6, rng=RNG),
        lambda: pp.exponential_mechanism([1.0, 2.0], sens, 1.0, rng=RNG),
        lambda: pp.permute_and_flip([1.0, 2.0], sens, 1.0, rng=RNG),
        lambda: pp.calibrate_gaussian_sigma(sens, 1.0, 1e-6),
        lambda: pp.calibrate_gaussian(1.0, 1e-6, 3, sensitivity=sens),
        lambda: pp.laplace_event(sens, 1.0),
        lambda: pp.gaussian_event(sens, 1.0),
        lambda: pp.exponential_event(sens, 1.0),
    ]
    for call in calls:
        with pytest.raises(InvalidPrivacyError) as info:
            call()
        assert info.value.field == "sensitivity"


@pytest.mark.parametrize("value", [math.nan, math.inf, [1.0, math.nan], "abc"])
def test_bad_values_are_input_errors(value):
    with pytest.raises(InvalidInputError) as info:
        pp.laplace_mechanism(value, 1.0, 1.0, rng=RNG)
    assert info.value.field == "value"


@pytest.mark.parametrize("scores", [[], [1.0, math.nan], [[1.0, 2.0]], [-math.inf, 1.0]])
def test_bad_scores_are_input_errors(scores):
    with pytest.raises(InvalidInputError) as info:
        pp.exponential_mechanism(scores, 1.0, 1.0, rng=RNG)
    assert info.value.field == "scores"


def test_huge_scores_refused():
    with pytest.raises(InvalidInputError, match="rescale"):
        pp.exponential_mechanism([0.0, 1e300], 1.0, 1.0, rng=RNG)


@pytest.mark.parametrize("T", [0, -3, 2.5, "x", None, True])
def test_bad_counts(T):
    for call in (lambda: pp.calibrate_advanced(1.0, 1e-6, T),
                 lambda: pp.calibrate_optimal(1.0, 1e-6, T),
                 lambda: pp.calibrate_gaussian(1.0, 1e-6, T)):
        with pytest.raises(InvalidPrivacyError) as info:
            call()
        assert info.value.field == "T"


@pytest.mark.parametrize("q", [0.0, -0.1, 1.5, math.nan])
def test_bad_sampling_rate(q):
    with pytest.raises(InvalidPrivacyError) as info:
        pp.subsampled_gaussian_event(1.0, 1.0, q)
    assert info.value.field == "sampling_rate"
    with pytest.raises(InvalidPrivacyError):
        pp.calibrate_gaussian(1.0, 1e-6, 3, sampling_rate=q)


def test_bad_sigma_and_scale():
    with pytest.raises(InvalidPrivacyError) as info:
        pp.gaussian_event(1.0, -2.0)
    assert info.value.field == "sigma"
    with pytest.raises(InvalidPrivacyError) as info:
        pp.gaussian_noise_vector(3, math.nan)
    assert info.value.field == "sigma"
    with pytest.raises(InvalidPrivacyError, match="Laplace scale") as info:
        pp.laplace_event(1.0, 1.0, scale=0.5)
    assert info.value.field == "scale"
    # a σ that does not give the claimed (ε, δ) is refused
    with pytest.raises(InvalidPrivacyError) as info:
        pp.gaussian_event(1.0, 1.0, epsilon=0.1, delta=1e-6)
    assert info.value.field == "sigma"


def test_bad_rng_and_relation():
    with pytest.raises(InvalidInputError) as info:
        pp.laplace_mechanism(1.0, 1.0, 1.0, rng="seed")
    assert info.value.field == "rng"
    with pytest.raises(InvalidInputError):
        pp.as_source(-5)
    with pytest.raises(InvalidPrivacyError) as info:
        pp.Accountant(relation="person")
    assert info.value.field == "relation"
    with pytest.raises(InvalidPrivacyError) as info:
        pp.DP(1.0, protect="person")
    assert info.value.field == "protect"


def test_delta_prime_must_leave_room():
    with pytest.raises(InvalidPrivacyError) as info:
        pp.calibrate_advanced(1.0, 1e-6, 10, delta_prime=1e-7)
    assert info.value.field == "delta_prime"
    with pytest.raises(InvalidPrivacyError):
        pp.calibrate_optimal(1.0, 1e-6, 10, delta_prime=1e-6)


def test_event_needs_a_sensitivity_source_and_theorem():
    with pytest.raises(InvalidPrivacyError) as info:
        pp.laplace_event(1.0, 1.0, sensitivity_source="  ")
    assert info.value.field == "sensitivity_source"
    with pytest.raises(InvalidPrivacyError) as info:
        pp.pure_event(1.0, theorem="")
    assert info.value.field == "theorem"


def test_report_noisy_max_noise_choice():
    with pytest.raises(InvalidInputError) as info:
        pp.report_noisy_max([1.0, 2.0], 1.0, 1.0, rng=0, noise="laplace")
    assert info.value.field == "noise"


def test_validation_precedes_any_draw_for_valid_calls_too():
    # sanity: the exploding source really explodes once validation passes
    with pytest.raises(AssertionError, match="randomness drawn"):
        pp.laplace_mechanism(np.zeros(2), 1.0, 1.0, rng=RNG)


# ----------------------------------------------------------------- one check for ε and δ (#17)
EPS_TEXTS = ["1", "0.5", "1e-9", "inf", "1e308", "0", "-0", "-1", "nan", "-inf", "x", ""]
DELTA_TEXTS = ["0", "1e-6", "0.999", "1", "1.5", "-1e-9", "nan", "inf", "y"]


def _cli_accepts(flag, text, capsys):
    """Whether ``privfair audit --FLAG TEXT`` parses, and argparse's message when not."""
    from privfair.cli.commands import build_parser

    try:
        # FLAG=TEXT: argparse would read "-inf" or "-1e-9" after a space as another flag
        build_parser().parse_args(["audit", "--backend", "exponential", f"{flag}={text}"])
    except SystemExit as exc:
        assert exc.code == 2
        return False, capsys.readouterr().err
    return True, ""


def _dp_accepts(**kw):
    try:
        pp.DP(**kw)
    except InvalidPrivacyError as err:
        return False, err.fix
    return True, ""


@pytest.mark.parametrize("text", EPS_TEXTS)
def test_the_command_line_accepts_exactly_the_epsilon_dp_accepts(text, capsys):
    # --epsilon is checked by the privacy core (pf.DP), not by a second rule of its own: the
    # same values pass, and a refusal carries the core's fix
    try:
        value = float(text)
    except ValueError:
        value = None
    ok, err = _cli_accepts("--epsilon", text, capsys)
    want, fix = _dp_accepts(epsilon=value) if value is not None else (False, "")
    assert ok == want
    if not ok:
        assert f"invalid ε {text!r}" in err and fix in err


@pytest.mark.parametrize("text", DELTA_TEXTS)
def test_the_command_line_accepts_exactly_the_delta_dp_accepts(text, capsys):
    try:
        value = float(text)
    except ValueError:
        value = None
    ok, err = _cli_accepts("--delta", text, capsys)
    want, fix = _dp_accepts(epsilon=1.0, delta=value) if value is not None else (False, "")
    assert ok == want
    if not ok:
        assert f"invalid δ {text!r}" in err and fix in err

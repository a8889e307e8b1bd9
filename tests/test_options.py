"""Declarative solve options (backends/options.py): one table per backend, one validator."""

import pytest

from privfair.backends.base import Backend
from privfair.backends.options import Option, rows, validate
from privfair.errors import InvalidInputError

TABLE = (Option("steps", "int", 100, low=1, doc="iterations"),
         Option("lr", "float", 0.5, low=0, low_open=True, high=10),
         Option("margin", "float", "auto", low=0, choices=("auto",)),
         Option("average", "bool", True),
         Option("rule", "str", "first", choices=("first", "best")),
         Option("_test_knob", "float", None, low=0, high=1))


def test_defaults_filled_and_numbers_normalised():
    out = validate(TABLE, {"steps": 20.0, "lr": 1}, "demo")
    assert out == {"steps": 20, "lr": 1.0, "margin": "auto", "average": True, "rule": "first"}
    assert isinstance(out["steps"], int) and isinstance(out["lr"], float)
    assert validate(TABLE, {"margin": 0.02}, "demo")["margin"] == 0.02


@pytest.mark.parametrize("name,value,fix", [
    ("steps", 2.5, "whole number ≥ 1"), ("steps", True, "whole number"),
    ("lr", 0.0, "in (0, 10]"), ("lr", float("nan"), "finite"), ("average", 1, "True or False"),
    ("rule", "worst", "'first', 'best'"), ("margin", "manual", "or one of 'auto'")])
def test_bad_values_name_the_field_the_value_and_the_fix(name, value, fix):
    with pytest.raises(InvalidInputError) as err:
        validate(TABLE, {name: value}, "demo")
    assert err.value.field == name and fix in str(err.value)


def test_unknown_option_suggests_the_closest_and_hides_test_knobs():
    with pytest.raises(InvalidInputError, match="did you mean 'steps'") as err:
        validate(TABLE, {"step": 3}, "demo")
    assert "_test_knob" not in str(err.value).split("did you mean")[0]


def test_rows_list_public_options_only():
    names = [r[0] for r in rows(TABLE)]
    assert names == ["steps", "lr", "margin", "average", "rule"]
    assert rows(TABLE)[1] == ("lr", "float", "(0, 10]", "0.5", "")


def test_a_backend_with_a_table_derives_its_option_names():
    class B(Backend):
        name = "b"
        option_table = TABLE
    assert B.option_names == tuple(o.name for o in TABLE)
    assert B().options_from({"steps": 3})["steps"] == 3


@pytest.mark.parametrize("backend, name, value", [
    ("sgda", "epochs", 0), ("sgda", "theta_share", 1.0), ("sgda", "select", "best"),
    ("sgda", "lambdas", [0, -1]), ("lopt", "T", 2.5), ("lopt", "oracle", "sgd"),
    ("lopt", "release_share", 0), ("frank_wolfe", "T_range", (5, 2)),
    ("frank_wolfe", "T_range", ("a", 3)), ("frank_wolfe", "mechanism", "exponential")])
def test_declared_backends_validate_from_their_table(backend, name, value):
    """sgda, lopt and frank_wolfe declare their options as tables (#17): the validator names
    the field and the value, and ``privfair backends`` can list type, range and default."""
    from privfair.backends import get

    b = get(backend)
    assert b.option_names == tuple(o.name for o in b.option_table)
    listed = {r[0]: r for r in rows(b.option_table)}
    assert name in listed and all(isinstance(c, str) for c in listed[name])
    with pytest.raises(InvalidInputError) as err:
        b.options_from({name: value})
    assert err.value.field == name and err.value.value == value


def test_declared_tables_normalise_good_values():
    from privfair.backends import get

    assert get("frank_wolfe").options_from({"T_range": [3.0, 9]})["T_range"] == (3, 9)
    lopt = get("lopt").options_from({"T": 4.0})
    assert lopt["T"] == 4 and isinstance(lopt["T"], int) and lopt["release_share"] is None
    assert get("sgda").options_from({"lambdas": [0, 2]})["lambdas"] == (0.0, 2.0)

"""Smoke tests: every example and the demo run on subsamples and print a certificate."""

import importlib.util
import pathlib

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"

ARGS = {
    "ols_subgroup_weights": ["--n", "4000", "--seed", "0"],
    "compas_equalized_odds": ["--subsample", "1500", "--seed", "0"],
    "compas_held_out_mixture": ["--seed", "0"],
    "gmean_hmean": ["--subsample", "3000", "--seed", "0"],
    "gini_constraint": ["--subsample", "1500", "--seed", "0"],
    "private_test_selection": ["--n", "3000", "--seed", "0"],
    "adult_demographic_parity": ["--subsample", "3000", "--seed", "0"],
    "adult_equalized_odds": ["--subsample", "3000", "--seed", "0"],
    "problem_adult_eo": ["--subsample", "3000", "--seed", "0"],
    "compare_published_algorithms": ["--subsample", "3000", "--seed", "0", "--oracle-B", "3"],
    "group_thresholds_row": ["--subsample", "3000", "--seed", "0"],
    "multiclass_sklearn": ["--n", "3000", "--seed", "0"],
    # Dask's scheduler in this process (--workers 0): the smoke test starts no cluster
    "adult_parquet_dask": ["--subsample", "3000", "--seed", "0", "--workers", "0",
                           "--files", "3"],
}

#: examples that need an optional extra, and the modules it provides
NEEDS = {"adult_parquet_dask": ("dask.dataframe", "pyarrow"), "multiclass_sklearn": ("sklearn",)}


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", sorted(p.stem for p in EXAMPLES.glob("*.py")))
def test_example_runs(name, capsys):
    assert name in ARGS, f"add smoke-test arguments for examples/{name}.py"
    for module in NEEDS.get(name, ()):
        pytest.importorskip(module, reason=f"examples/{name}.py needs {module} (an extra)")
    _load(name).main(ARGS[name])
    out = capsys.readouterr().out
    assert "differentially private" in out or "privacy certificate" in out


def test_demo_runs_on_a_subsample(capsys):
    from privfair.cli.commands import main

    assert main(["demo", "--subsample", "3000", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert "privacy certificate" in out and "test error" in out


def test_cli_bad_flag_exits_2(capsys):
    from privfair.cli.commands import main

    with pytest.raises(SystemExit) as exc:
        main(["demo", "--epsilon", "abc"])
    assert exc.value.code == 2

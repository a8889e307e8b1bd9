"""Every import path the user documentation names still imports (issue #17 item 4).

The layers became subpackages (docs/internals.md, "The map"); the modules the README, docs/,
examples/ and bench/ import by their old path keep it: :data:`privfair.DOCUMENTED_PATHS` maps
each old path to its module, registered under both names as one module object.
"""

import importlib
import inspect

import pytest

import privfair


@pytest.mark.parametrize("old,new", sorted(privfair.DOCUMENTED_PATHS.items()))
def test_documented_path_is_the_layer_module(old, new):
    assert importlib.import_module(old) is importlib.import_module(new)


@pytest.mark.parametrize("old", sorted(privfair.DOCUMENTED_PATHS))
def test_from_import_of_a_documented_path(old):
    parent, name = old.rsplit(".", 1)
    namespace = {}
    exec(f"from {parent} import {name} as m", namespace)
    bound = getattr(importlib.import_module(parent), name, None)
    # the namespace binds some names to a function of the module (pf.report is report.report),
    # as it did before the relayout; any other name is the module itself
    expected = bound if bound is not None and not inspect.ismodule(bound) else         importlib.import_module(old)
    assert namespace["m"] is expected


def test_the_namespace_keeps_its_documented_attributes():
    import privfair as pf

    for name in ['holdout', 'metrics', 'norms', 'pareto', 'report', 'scores', 'sparse']:
        assert hasattr(pf, name), name

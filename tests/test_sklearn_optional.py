"""privfair.sklearn without scikit-learn (issue #20: ``from privfair.sklearn import
PrivateFairClassifier`` failed on a plain ``pip install -e .``, scikit-learn being only a dev
extra).  The module imports; building the estimator raises a typed ImportError naming the extra.
Runs in a subprocess where ``sys.modules['sklearn'] = None`` makes every sklearn import fail."""

import subprocess
import sys
import textwrap

CODE = textwrap.dedent("""
    import sys
    sys.modules["sklearn"] = None           # as if scikit-learn were not installed
    import privfair as pf
    from privfair.sklearn import (PrivateFairClassifier, NoSensitiveFeaturesWarning,
                                  ScikitLearnMissingError)
    assert pf.sklearn.PrivateFairClassifier is PrivateFairClassifier
    try:
        PrivateFairClassifier(groups=["F", "M"])
    except ImportError as err:
        assert isinstance(err, ScikitLearnMissingError) and isinstance(err, pf.errors.PrivfairError)
        assert "privfair[sklearn]" in str(err), str(err)
        print("OK", err.field)
    else:
        raise SystemExit("built an estimator without scikit-learn")
""")


def test_the_module_imports_without_scikit_learn_and_building_says_what_to_install():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "OK scikit-learn"


def test_the_sklearn_extra_is_declared():
    import tomllib
    from pathlib import Path

    meta = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    extra = meta["project"]["optional-dependencies"]["sklearn"]
    assert any(req.replace(" ", "").startswith("scikit-learn") for req in extra)

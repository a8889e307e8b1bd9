"""The ``privfair`` command line (:mod:`.commands`; ``python -m privfair``) and the demo.

The top layer with the public namespace: may import everything (tests/test_layers.py).
"""

from .commands import main  # noqa: F401  (privfair.cli:main, the console script)

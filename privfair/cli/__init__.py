"""The ``privfair`` command line (``python -m privfair``): :mod:`.commands` holds the parser and
:func:`~.commands.main` (the console script); each command is its own module — :mod:`.solve`,
:mod:`.report_cmd`, :mod:`.audit_cmd`, :mod:`.listings` (``backends``, ``datasets``),
:mod:`.demo` — on the shared :mod:`.args`, :mod:`.files` and :mod:`.errors`.  The pages the
commands write are rendered by :mod:`privfair.reports.html`; the command line only calls it.

The top layer with the public namespace: may import everything (tests/test_layers.py).
"""

from .commands import main  # noqa: F401  (privfair.cli:main, the console script)

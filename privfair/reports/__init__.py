"""Reports built from plans and solves: the sample-complexity report (:mod:`.report`), the
error–violation frontier (:func:`~.pareto.pareto`), the metrics a solve may show
(:mod:`.metrics`), and their one renderer — :mod:`.sections` (the content, format-free),
:mod:`.text` (text, markdown), :mod:`.html` (the one page shell, with :mod:`.blocks`,
:mod:`.figures`, :mod:`.mathml`), which the command line's pages only call.

Above the planner: may import it, the backends and every layer below (tests/test_layers.py).
"""

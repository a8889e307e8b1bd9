"""Reports built from plans and solves: the sample-complexity report and its renderer
(text, markdown, HTML), and the error–violation frontier (:func:`~.pareto.pareto`).

Above the planner: may import it, the backends and every layer below (tests/test_layers.py).
"""

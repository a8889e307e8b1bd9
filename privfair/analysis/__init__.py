"""The problem and what the compiler proves about it: :class:`~.problem.Problem`,
:func:`~.compiler.analyze` (curvature, constants, sensitivities), every theorem's pure formula
(:mod:`.formulas`, which imports nothing) and the theorems as report entries (:mod:`.theorems`).

May import: the layers below (statistics, decision sets, rows, language, privacy core,
utilities).  ``Problem.solve``/``plan`` call the planner lazily, the one upward import,
listed in tests/test_layers.py.
"""

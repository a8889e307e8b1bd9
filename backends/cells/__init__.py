"""Proxy cells: two releases of the sensitive column (:mod:`.proxy`), then a convex
program on released counts (:mod:`.cells`).

Installed as ``privfair.backends.cells``.  May import the backends' shared modules and
privfair's layers below the planner (tests/test_layers.py).
"""

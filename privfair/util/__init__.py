"""Utilities: the bottom layer — plain-text and table formatting, printed-expression
layout, progress bars, silencing native solvers' output.

May import: the other utilities and :mod:`privfair.errors`; nothing else of privfair
(tests/test_layers.py).
"""

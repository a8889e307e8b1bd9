"""The statistics ℓ(c, D) of a decision on the data, with their proven sensitivities
(:mod:`.stats`, the documented path, re-exporting :mod:`.rates`, :mod:`.layout`,
:mod:`.group_mass`, :mod:`.sensitivity`, :mod:`.counts` and :mod:`.soft`), public scores
(:mod:`.scores`), and the metrics of a released decision (:mod:`.metrics`).

May import: the layers below — utilities, privacy core, language, rows, decision sets
(tests/test_layers.py).
"""

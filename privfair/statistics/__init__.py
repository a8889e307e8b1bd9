"""The statistics ℓ(c, D) of a decision on the data, with their proven sensitivities
(:mod:`.stats`), public scores (:mod:`.scores`), and the metrics of a released decision
(:mod:`.metrics`).

May import: the layers below — utilities, privacy core, language, rows, decision sets
(tests/test_layers.py).
"""

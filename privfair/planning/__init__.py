"""The planner — which backend, with which hyper-parameters, and why — and what it runs
around a backend: the held-out check, the direct ERM fit by backend name.

Above the backends (``privfair.backends``): may import them and every layer below
(tests/test_layers.py).
"""

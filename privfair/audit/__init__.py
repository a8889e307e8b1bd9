"""The statistical privacy audit behind ``privfair audit``: end-to-end solves on
neighbouring datasets, every exposed field tested, honest runs against negative controls
(:mod:`.harness`), and the built-in instances (:mod:`.instances`).

Above the planner (it solves whole problems): may import it, the backends and every layer
below; only the command line imports it (tests/test_layers.py).
"""

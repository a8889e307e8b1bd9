"""What a backend returns: :class:`~.result.Result` (the decision or mixture, its
certificate, metrics, trace) and a run's path of checkpoints.

May import: the layers below; never a backend or the planner (tests/test_layers.py).
"""

"""Loss-vector methods ([A]): exponential sampling over a finite set, LOPT and
Frank–Wolfe on the loss vector, sharing one private loop and its oracles (:mod:`.oracles`).

Installed as ``privfair.backends.loss_vector``.  May import the backends' shared modules
(base, options, _draws), the other families' public modules, and privfair's layers below the
planner (tests/test_layers.py).
"""

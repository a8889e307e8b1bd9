"""DP-SGDA on the ERMI regularizer (DP-FERMI, [L]): the backend (:mod:`.sgda`), its
options, release schedule, checkpoint selection, training loop and the ERMI pieces.

Installed as ``privfair.backends.sgda``.  May import the backends' shared modules, the other
families' public modules and privfair's layers below the planner (tests/test_layers.py).
"""

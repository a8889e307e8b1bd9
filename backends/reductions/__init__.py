"""[J]'s two backends (Jagielski et al. 2019): DP post-processing (Alg. 1) and the DP
oracle learner (Alg. 3, the reductions approach of Agarwal et al. 2018), and their shared
building blocks (:mod:`.jagielski`).

Installed as ``privfair.backends.reductions``.  May import the backends' shared modules and
privfair's layers below the planner (tests/test_layers.py).
"""

"""Small synthetic datasets shared by test modules (imported; not a test module)."""

import numpy as np

import privfair as pf


def binary(n, seed):
    """Two groups (a: 60%), binary labels whose base rate and one feature depend on the group:
    an unconstrained classifier is unfair in both DP and EO."""
    rng = np.random.default_rng(seed)
    a = rng.choice(["a", "b"], n, p=[0.6, 0.4])
    y = rng.binomial(1, np.where(a == "a", 0.5, 0.25))
    x = np.column_stack([1.5 * y + rng.normal(size=n) + 0.8 * (a == "a"), rng.normal(size=n)])
    return pf.Dataset(x, y, sensitive=a, group_names=["a", "b"])

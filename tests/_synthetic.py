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


def multiclass(n, seed):
    """8 groups (one of 1%), 3 labels whose distribution and a feature depend on the group."""
    rng = np.random.default_rng(seed)
    p = np.array([0.01] + [0.99 / 7] * 7)
    g = rng.choice(8, n, p=p)
    shift = (g - 3.5) / 3.5
    logits = np.stack([np.zeros(n), 0.8 * shift, -0.8 * shift], axis=1)
    pr = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = (pr.cumsum(axis=1) < rng.random(n)[:, None]).sum(axis=1)
    X = np.column_stack([np.eye(3)[y] @ np.array([[1.0, 0], [0, 1.0], [-1.0, -1.0]]) * 1.2
                         + rng.normal(size=(n, 2)), shift + 0.5 * rng.normal(size=n)])
    return pf.Dataset(X, y, sensitive=g.astype(str), group_names=[str(i) for i in range(8)],
                      labels=[0, 1, 2])


def released_runs(backend, plan, runs, read, multiplier=1.0):
    """The neighbouring-dataset tests' samples: ``runs`` runs of ``plan`` by ``backend`` (seeds
    0, 1, …; a reduced-noise control's from 10,000, with the noise times ``multiplier``), each
    result read by ``read`` into the array the tester compares."""
    from privfair.privacy import Accountant, reduced_noise

    rows = []
    with reduced_noise(multiplier):
        for s in range(runs):
            res = backend.run(plan, rng=np.random.default_rng(10_000 * (multiplier < 1) + s),
                              accountant=Accountant(delta=plan.privacy.delta), progress=False)
            rows.append(np.asarray(read(res)))
    return np.asarray(rows)

"""Ordinary least squares with subgroup weights, row-private ([A] §1.3.1).

minimize (1/n) Σ_i c_{g(i)} (y_i − θ·x_i − b)² + (Λ/2)‖θ‖² over a ball, where a minority group is
up-weighted (c = 3) so that its error counts as much as the majority's.  protect="row": one whole
row (features, response, group) may be replaced; features are clipped to a public norm bound and
the responses to a public range, and the weights' bound (3) is declared, never read from data.
Compares per-group mean squared error of the private fit with the non-private weighted fit and an
unweighted private fit.

Run: python examples/ols_subgroup_weights.py [--n N] [--seed S]
"""

import argparse

import numpy as np

import privfair as pf
from privfair.backends.erm.solver import solve


def make_data(n, rng):
    g = (rng.random(n) < 0.15).astype(int)                 # 15% minority
    X = rng.normal(size=(n, 5)) / np.sqrt(5)
    beta = np.array([[0.8, -0.5, 0.3, 0.0, 0.2], [0.2, 0.4, -0.6, 0.5, 0.0]])
    y = np.einsum("ij,ij->i", X, beta[g]) + 0.1 * rng.normal(size=n)
    return X, np.clip(y, -1, 1), g


def group_mse(theta, X, y, g):
    pred = np.clip(X, None, None) @ theta[:-1] + theta[-1]
    return [float(np.mean((y[g == k] - pred[g == k]) ** 2)) for k in (0, 1)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    X, y, g = make_data(args.n, rng)
    Xt, yt, gt = make_data(20_000, rng)
    ds = pf.SparseLinear(5, norm=pf.norms.l1(5), radius=3.0, l2=1e-3, feature_bound=1.0)
    weights = np.where(g == 1, 3.0, 1.0)
    privacy = pf.DP(1.0, 1.0 / args.n ** 2, protect="row")
    rows = []
    for name, w in (("weighted", weights), ("unweighted", None)):
        erm = pf.sparse.glm(X, y, ds, loss="squared", sample_weight=w,
                            weight_bound=3.0 if w is not None else None)
        res = pf.sparse.fit(erm, privacy, method="objective_perturbation", seed=args.seed)
        rows.append((f"private {name} (ε=1)", group_mse(np.asarray(res.decision), Xt, yt, gt)))
        if name == "weighted":
            print(res.certificate)
            exact = solve(erm).theta
            rows.append(("non-private weighted", group_mse(exact, Xt, yt, gt)))
    print(f"{'fit':28s} MSE majority  MSE minority")
    for name, (m0, m1) in rows:
        print(f"{name:28s} {m0:12.4f}  {m1:12.4f}")


if __name__ == "__main__":
    main()

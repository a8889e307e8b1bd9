"""Public scores: models of y learned from (X, y) alone.

Under ``protect="sensitive"`` only the sensitive attribute is protected, so a model of y fitted on
the features and labels is *public*: it can define a decision set (``pf.Thresholds(grid,
score=public_score(data))``) or the score axis of :class:`privfair.ProxyCells` at no privacy cost.
Under ``protect="row"`` it is not — such a score must then come from public data.
"""

from __future__ import annotations

import numpy as np

from .cells import sigmoid


def logistic_from_statistic(Z, T, ridge=1.0, iters=50, tol=1e-10) -> np.ndarray:
    """argmin_θ Σ_i log(1 + e^{z_i·θ}) − θ·T + (ridge/2)‖θ‖² by damped Newton.

    With T = Σ_i t_i z_i this is ridge logistic regression of t on Z; the labels enter only
    through T, so a noisy T gives a private fit.  The ridge term keeps the problem strongly
    convex even when a noisy T lies outside the set of attainable statistics.
    """
    Z = np.asarray(Z, dtype=float)
    T = np.asarray(T, dtype=float)
    d = Z.shape[1]
    theta = np.zeros(d)

    def objective(t):
        return float(np.sum(np.logaddexp(0.0, Z @ t)) - t @ T + 0.5 * ridge * t @ t)

    f = objective(theta)
    for _ in range(iters):
        p = sigmoid(Z @ theta)
        g = Z.T @ p - T + ridge * theta
        H = (Z * (p * (1.0 - p))[:, None]).T @ Z
        H[np.diag_indices(d)] += ridge
        step = np.linalg.solve(H, g)
        decrement = float(g @ step)
        if decrement / 2.0 < tol:
            break
        t = 1.0
        while True:   # backtracking (Armijo) line search
            f_new = objective(theta - t * step)
            if f_new <= f - 0.25 * t * decrement or t < 1e-10:
                break
            t *= 0.5
        theta, f = theta - t * step, f_new
    return theta


def fit_score(X, y, ridge=1.0) -> np.ndarray:
    """Coefficients (intercept first) of the public score s(x) = P(y = 1 | x)."""
    Z = np.hstack([np.ones((X.shape[0], 1)), np.asarray(X, dtype=float)])
    return logistic_from_statistic(Z, Z.T @ np.asarray(y, dtype=float), ridge)



def public_score(data, ridge: float = 1.0):
    """The logit of a ridge logistic regression of y on X, as a callable X → scores.

    Public only under ``protect="sensitive"`` (it reads X and y, not the sensitive attribute).

    Examples
    --------
    >>> import numpy as np, privfair as pf
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2)); y = (X[:, 0] > 0).astype(int)
    >>> data = pf.Dataset(X, y, sensitive=rng.integers(0, 2, 200))
    >>> s = pf.scores.public_score(data)
    >>> bool(np.mean((s(X) > 0) == y) > 0.9)
    True
    """
    coef = fit_score(data.X, data.y, ridge)
    return lambda X: coef[0] + np.asarray(X, dtype=float) @ coef[1:]

"""Public scores: models of y learned from (X, y) alone.

Under ``protect="sensitive"`` only the sensitive attribute is protected, so a model of y fitted on
the features and labels is *public*: it can define a decision set (``pf.Thresholds(grid,
score=public_score(data))``) or the score axis of :class:`privfair.ProxyCells` at no privacy cost.
Under ``protect="row"`` it is not — such a score must then come from public data.

The fits are damped Newton iterations over chunked passes (:func:`logistic_from_statistic`;
several fits over the same rows can share their passes, :func:`logistic_fits`).  Precision: the
objective, its gradient and the statistic T are float64; a Hessian far from the optimum may be
summed in float32 — it only picks a step direction, which the line search checks on the float64
objective, and the stopping test reads float64 Hessians only — so a fit stops by the same test
at the float64 Newton iterate up to the tolerance.  No noise scale or sensitivity reads a fitted
θ: the fits are post-processing.
"""

from __future__ import annotations

import numpy as np

from ..data import passes
from ..errors import InvalidInputError


def logistic_from_statistic(Z, T, ridge=1.0, iters=50, tol=1e-10, *, design=None,
                            chunk_rows=None, start=None, start_single=False) -> np.ndarray:
    """argmin_θ Σ_i log(1 + e^{z_i·θ}) − θ·T + (ridge/2)‖θ‖² by damped Newton.

    With T = Σ_i t_i z_i this is ridge logistic regression of t on Z; the labels enter only
    through T, so a noisy T gives a private fit.  The ridge term keeps the problem strongly
    convex even when a noisy T lies outside the set of attainable statistics.

    Every iteration is one pass over the rows (:mod:`privfair.data.passes`): the objective, the
    gradient and the Hessian at a candidate are summed chunk by chunk in the same pass, so no
    n×d temporary is built (the previous version rebuilt a weighted copy of Z each iteration:
    50 of 73 s of a 3M-row ``cells`` solve).  A rejected full step costs one value-only pass
    per halving.  The iterates are those of the dense computation up to float summation order.

    Mixed precision (#19): far from the optimum — while the Newton decrement λ²/2 exceeds
    ``_SINGLE_ABOVE`` — the next Hessian is summed in single precision
    (:data:`passes.SINGLE`, ~2.7× faster than float64 per chunk): it only chooses a step that
    the line search then checks on the float64 value.  The Hessians of the quadratic phase
    (and of the stopping test) are float64, so the returned θ is the float64 Newton iterate up
    to rounding and a relative ~1e-6 of the last single-precision step (Newton's map is flat
    near the optimum: a start moved by ε ends O(ε·‖θ − θ*‖) apart).  Privacy does not depend on any of it: the fit is
    post-processing of T (noisy or exact) and of rows public under the relation; no
    sensitivity or noise scale reads θ.

    Parameters
    ----------
    Z : (n, d) array, or a row source (a Dataset, a Dask dataset, :class:`passes.ArrayRows`)
        The rows z_i (with ``design``, the rows are ``design``'s map of the source's rows).
    T : (d,) array -- the statistic Σ t_i z_i (noisy or exact).
    ridge, iters, tol : the ridge weight (a number, or one weight ≥ 0 per coordinate: the
        penalty is Σ_j ridge_j θ_j²/2), the Newton iteration cap, the Newton-decrement
        tolerance (stop when λ²/2 < tol).
    design : None or a :mod:`privfair.data.passes` design -- how rows become z (default: z is the
        row itself; ``passes.INTERCEPT`` prepends a 1 without copying the rows).
    chunk_rows : int, optional -- rows per chunk of an in-memory source.
    start : None or (f, g, H) -- the pass sums of :func:`passes.logistic_terms` at θ = 0 (with
        the Hessian) over the same rows and design, when the caller had them computed in the
        pass that summed T (:func:`passes.sum_and_logistic_terms`): saves the first pass.
    start_single : bool -- whether ``start``'s Hessian was summed in single precision
        (``hessian=passes.SINGLE``, as the fit's own first pass does; then the same iterates as
        without ``start``): the stopping test never reads a single-precision Hessian (if the
        fit is already near the optimum at θ = 0, it recomputes that one in float64).
    """
    rows = passes.rows_of(Z, chunk_rows)
    design = passes.PLAIN if design is None else design
    return logistic_fits(rows, [dict(T=T, design=design, start=start,
                                     start_single=start_single)], ridge, iters, tol)[0]


def logistic_fits(rows, fits, ridge=1.0, iters=50, tol=1e-10) -> list:
    """Several :func:`logistic_from_statistic` fits over the same rows **in lockstep** (#19):
    every round is one pass whose chunks each serve every fit still running
    (:func:`privfair.data.passes.several`), so a fit's pass costs no read of the rows of its
    own — an index view's rows are gathered once per round, not once per fit.  Each fit makes
    the same passes and the same float operations on the same chunks as alone, merged in the
    same order: it returns the same θ, bit for bit.

    Parameters
    ----------
    rows : a row source (:func:`privfair.data.passes.rows_of`)
    fits : list of dicts with ``T`` and optionally ``design``, ``start``, ``start_single``
        (as :func:`logistic_from_statistic` takes them)
    ridge, iters, tol : shared by the fits

    Returns
    -------
    list of θ, one per fit, in order.
    """
    rows = passes.rows_of(rows)
    gens = []
    for spec in fits:
        design = spec.get("design")
        design = passes.PLAIN if design is None else design
        T = np.asarray(spec["T"], dtype=float).reshape(-1)
        d = design.dim(rows.n_features)
        if d is None:
            d = T.size
        if T.size != d:
            raise InvalidInputError("T", f"{T.size} entries", f"pass one entry per column of "
                                    f"the design ({d})")
        start = spec.get("start")
        if start is not None and (len(start) != 3 or start[2] is None
                                  or np.shape(start[2]) != (d, d) or np.shape(start[1]) != (d,)):
            raise InvalidInputError("start", "a partial of another shape", "pass the (f, g, H) "
                                    "of passes.logistic_terms at θ = 0 with the Hessian")
        gens.append(_newton(design, d, T, _ridge(ridge, d), iters, tol, start,
                            bool(spec.get("start_single", False))))
    out, asked = [None] * len(gens), {}
    for i, gen in enumerate(gens):
        try:
            asked[i] = next(gen)
        except StopIteration as stop:
            out[i] = stop.value
    while asked:
        keys = list(asked)
        if len(keys) == 1:
            fn, params = asked[keys[0]]
            sums = [rows.map_sum(fn, *params)]
        else:
            sums = rows.map_sum(passes.several, tuple(asked[k] for k in keys))
        for k, got in zip(keys, sums):
            try:
                asked[k] = gens[k].send(got)
            except StopIteration as stop:
                out[k] = stop.value
                del asked[k]
    return out


def _ridge(ridge, d):
    """``ridge`` as the fit uses it: a float (one weight for every coordinate: the same float
    operations as always), or a (d,) array of per-coordinate weights ≥ 0 (e.g. 0 on the
    intercept, as scikit-learn's ``LogisticRegression``; #19)."""
    if np.ndim(ridge) == 0:
        return float(ridge)
    r = np.asarray(ridge, dtype=float)
    if r.shape != (d,) or not np.all(np.isfinite(r)) or np.any(r < 0):
        raise InvalidInputError("ridge", f"array of shape {r.shape}", f"pass one finite weight "
                                f"≥ 0 per column of the design ({d}), or one number")
    return r


def _newton(design, d, T, ridge, iters, tol, start, start_single):
    """The damped Newton iteration of :func:`logistic_from_statistic` as a generator: it yields
    each pass it needs as ``(fn, params)`` (``rows.map_sum(fn, *params)``), is sent the merged
    sums, and returns θ (so several fits can share the passes: :func:`logistic_fits`)."""

    def finish(theta, sums, copy=False):
        """(f, ∇f, ∇²f) at θ from one pass's sums (∇²f None when not asked)."""
        f, g, H = (sums[0], np.array(sums[1], dtype=float), np.array(sums[2], dtype=float)) \
            if copy else sums
        f = f - theta @ T + 0.5 * ridge * theta @ theta
        g = g - T + ridge * theta
        if H is not None:
            H[np.diag_indices(d)] += ridge
        return f, g, H

    def evaluate(theta, hessian):            # the pass's request for (f, ∇f, ∇²f) at θ
        return passes.logistic_terms, (design, theta, hessian)

    theta = np.zeros(d)
    # θ = 0 is far from the optimum but for a T near its value there: single precision (the
    # stopping test below recomputes it in float64 if the fit would stop or probe at once)
    if start is None:
        f, g, H = finish(theta, (yield evaluate(theta, passes.SINGLE)))
    else:
        f, g, H = finish(theta, start, copy=True)
    single = start is None or bool(start_single)          # whether H is a float32 sum
    for _ in range(iters):
        if H is None:        # the last step was a halved one, or a probe (below) that did not
            _, g, H = finish(theta, (yield evaluate(theta, True)))   # certify: as before
            single = False
        step = np.linalg.solve(H, g)
        decrement = float(g @ step)
        probe = decrement / 2.0 < _PROBE * max(tol, 1e-300) ** 0.5
        if single and probe:
            # the stopping test and a certified stop read float64 Hessians only (rare: the
            # decrement fell from above _SINGLE_ABOVE to below the probe level in one step)
            _, g, H = finish(theta, (yield evaluate(theta, True)))
            single = False
            step = np.linalg.solve(H, g)
            decrement = float(g @ step)
        # converged to working precision: λ²/2 ≈ f − f* below what f itself can resolve (at
        # 8·10⁷ rows f ≈ 5·10⁷, whose rounding is ~10⁻⁸ ≫ tol = 10⁻¹⁰) — past it no Armijo test
        # can succeed, and the line search halved t to 10⁻¹⁰ at every step: 387 probes, each a
        # pass over the rows, on one Dask fit of 1.6·10⁶ rows (#19).  Below ~10⁵ rows
        # 16·eps·|f| < tol and nothing changes.
        if decrement / 2.0 < max(tol, 16.0 * np.finfo(float).eps * abs(f)):
            break
        # far from the optimum the next Hessian only needs to point downhill: float32
        hessian = passes.SINGLE if decrement / 2.0 > _SINGLE_ABOVE else True
        # near the optimum the next iterate is usually the last one, whose Hessian would only
        # serve the stopping test: probe it with value, gradient and how far the margins moved
        probe = decrement / 2.0 < _PROBE * max(tol, 1e-300) ** 0.5
        t, shift = 1.0, None
        while True:   # backtracking (Armijo) line search
            cand = theta - t * step
            if t == 1.0 and probe:
                f_new, g_new, moved = yield (passes.logistic_terms_shift,
                                             (design, cand, cand - theta))
                f_new = f_new - cand @ T + 0.5 * ridge * cand @ cand
                g_new, H_new, shift = g_new - T + ridge * cand, None, moved.value
            elif t == 1.0:    # usually accepted: its gradient and Hessian come in the same pass
                f_new, g_new, H_new = finish(cand, (yield evaluate(cand, hessian)))
            else:
                f_new = ((yield (passes.logistic_value, (design, cand))) - cand @ T
                         + 0.5 * ridge * cand @ cand)
                g_new = H_new = None
            if f_new <= f - 0.25 * t * decrement or t < 1e-10:
                break
            t *= 0.5
        if t == 1.0 and shift is not None and certified_stop(H, g_new, shift, tol):
            return cand       # the iterate the full test stops at: its Hessian is not needed
        theta, f, g, H = cand, f_new, g_new, H_new
        single = H is not None and hessian is passes.SINGLE
    return theta


#: sum the next Newton Hessian in single precision while the decrement λ²/2 is above this
#: (far from the optimum: Newton's quadratic phase starts below ~1, and the steps from there on
#: take float64 Hessians); only the cost depends on it
_SINGLE_ABOVE = 1.0

#: probe for a certified stop once the decrement λ²/2 is below this × √tol (Newton's quadratic
#: convergence then usually puts the next one below tol); only the cost depends on it
_PROBE = 0.1


def certified_stop(H_prev, g, shift, tol) -> bool:
    """Whether the Newton decrement at a new iterate is surely below ``tol`` — the test the fit
    would make with that iterate's Hessian H — from the previous Hessian: with margins moved by
    at most Δ = ``shift``, every weight σ(1 − σ) changed by a factor in [e^{−Δ}, e^{Δ}] (its
    log has slope 1 − 2σ ∈ (−1, 1)), so H ⪰ e^{−Δ}·H_prev (ridge included) and
    gᵀH⁻¹g ≤ e^{Δ}·gᵀH_prev⁻¹g.  Half of ``tol`` is kept as margin for rounding — including the
    single-precision Hessians' (a relative error far below that factor of 2) — so a stop here
    is a stop of the full test (the same returned iterate)."""
    if not (np.all(np.isfinite(g)) and np.isfinite(shift)):
        return False
    bound = np.exp(shift + 1e-12) * float(g @ np.linalg.solve(H_prev, g)) / 2.0
    return bool(bound < 0.5 * tol)


def fit_score(X, y=None, ridge=1.0, *, chunk_rows=None) -> np.ndarray:
    """Coefficients (intercept first) of the public score s(x) = P(y = 1 | x).

    ``fit_score(X, y)`` on arrays, or ``fit_score(data)`` on a Dataset or a Dask dataset
    (its label codes; binary labels).  The design [1, x] is never materialised: Zᵀy and every
    Newton step are chunked passes (:mod:`privfair.data.passes`), on the Dask workers for a Dask
    dataset, where only the (d+1)-vectors and (d+1)² matrices come back.  ``ridge``: one
    weight, or d+1 of them, intercept first (``[0, 1/C, …]`` is scikit-learn's
    ``LogisticRegression(C=C)``, whose intercept is not penalised).
    """
    if y is None:
        rows = passes.rows_of(X, chunk_rows)
        if getattr(rows, "y", True) is None:
            raise InvalidInputError("y", None, "pass the labels: fit_score(X, y), or a Dataset")
    else:
        y = np.asarray(y)
        X = np.asarray(X)
        rows = passes.ArrayRows(X if X.dtype.kind in "fiub" else X.astype(float), y,
                                chunk_rows=chunk_rows)
    # Zᵀy and the first Newton step's terms (at θ = 0) in one pass
    d = passes.INTERCEPT.dim(rows.n_features)
    T, start = rows.map_sum(passes.sum_and_logistic_terms, passes.INTERCEPT, "y", np.zeros(d),
                            passes.SINGLE)
    return logistic_from_statistic(rows, T, ridge, design=passes.INTERCEPT, start=start,
                                   start_single=True)


class FittedScore:
    """The logit x ↦ θ₀ + x·θ of a score fitted on a dataset's X and y (:func:`public_score`).

    It remembers which rows it read — the :class:`~privfair.Dataset`'s
    :attr:`~privfair.Dataset.lineage`, so a part cut from the same data (a split, a
    subsample, the held-out partition) is recognized too; a Dask dataset by identity — so a
    solve under ``protect="row"`` on rows it read can refuse it before anything is drawn
    (:func:`privfair.planning.planner.check_public_scores`): it read X and y, which that unit
    protects.  Fitted on other, public rows it is public under either unit.
    """

    def __init__(self, coef, data):
        import weakref

        self.coef = np.asarray(coef, dtype=float)
        self._lineage = getattr(data, "lineage", None)
        try:
            self._data = weakref.ref(data)
        except TypeError:           # not weak-referenceable: identity is not checked
            self._data = lambda: None

    def __call__(self, X):
        return self.coef[0] + np.asarray(X, dtype=float) @ self.coef[1:]

    def fitted_on(self, data) -> bool:
        """Whether this score read a row of ``data``: ``data`` is the dataset it was fitted on,
        or shares a row with it (:meth:`privfair.Dataset.shares_rows_with`)."""
        from ..data.dataset import lineages_overlap

        return self._data() is data or lineages_overlap(self._lineage,
                                                        getattr(data, "lineage", None))

    def __repr__(self):
        return f"FittedScore(d={self.coef.size - 1})"


def public_score(data, ridge: float = 1.0):
    """The logit of a ridge logistic regression of y on X, as a callable X → scores.

    Public only under ``protect="sensitive"`` (it reads X and y, not the sensitive attribute),
    or when ``data`` holds public rows.  A solve under ``protect="row"`` whose decision set's
    score was fitted on the problem's own rows is refused (:class:`FittedScore`).

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
    return FittedScore(fit_score(data, ridge=ridge), data)

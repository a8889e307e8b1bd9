"""The group-mass lower bound q ≤ n_{g,y}/n that clamps the conditional rates: a declared bound
read as arrays (:func:`group_mass_arrays`), or one estimated privately
(:func:`estimate_group_mass_bound`, a Laplace release of the group-label counts)."""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..data.dataset import Dataset
from ..errors import GroupMassError, InvalidInputError
from ..privacy import laplace_mechanism  # the privacy core owns every noisy release

__all__ = ["estimate_group_mass_bound", "group_mass_arrays"]


def estimate_group_mass_bound(data, epsilon, rng=None, beta=0.05, *, accountant=None,
                              return_event=False):
    """A private lower bound on every group-label mass n_{g,y}/n, valid w.p. ≥ 1 − β.

    Releases the G·L counts n_{g,y} with the Laplace mechanism (ℓ1 sensitivity 2 under both
    relations: one row leaves one cell and joins another) and returns, per cell,
    ``q = max(ñ_{g,y} − b·ln(G·L / (2β)), 1) / n`` with b = 2/ε: by the Laplace tail
    P(noise > t) = e^{−t/b}/2 and a union bound, all G·L bounds hold at once w.p. ≥ 1 − β.
    (The floor of one row keeps q > 0; if Σq > 1, which only a failed bound can cause, q is
    rescaled to sum to 1.)  The result is post-processing of an ε-DP release.

    Parameters
    ----------
    data : Dataset, or a Dask dataset (``Dataset.from_parquet``): the counts are then a pass on
        the workers, merged on the client, and the noise is drawn once, here.
    epsilon : float -- the share of the budget spent on the estimate.
    rng : None, int or numpy.random.Generator -- None draws from the OS CSPRNG.
    beta : float in (0, 1) -- failure probability of the bound (accuracy only, never privacy).
    accountant : privfair.privacy.Accountant, optional -- records the Laplace event.
    return_event : bool -- return ``(bound, event)``.

    Returns
    -------
    dict
        ``{(group, label): q}``, ready for ``rates(..., group_mass_bound=...)`` or
        ``Rates.delta_l(..., group_mass_bound=...)``.

    Examples
    --------
    >>> import numpy as np
    >>> from privfair.data.dataset import Dataset
    >>> from privfair.statistics.group_mass import estimate_group_mass_bound
    >>> d = Dataset(np.zeros((4000, 1)), [0, 1] * 2000, ["a"] * 1000 + ["b"] * 3000)
    >>> q = estimate_group_mass_bound(d, epsilon=1.0, rng=0)
    >>> 0.11 < q[("a", 0)] < 0.125 and 0.36 < q[("b", 1)] < 0.375
    True
    """
    if not isinstance(data, Dataset) and type(data).__name__ != "DaskDataset":
        raise InvalidInputError("data", type(data).__name__, "pass a privfair.data.dataset.Dataset")
    if isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not 0 < beta < 1:
        raise InvalidInputError("beta", beta, "pass a failure probability in (0, 1), e.g. 0.05")
    counts = data.counts().astype(float).ravel()
    release = laplace_mechanism(counts, 2.0, epsilon, rng, accountant=accountant,
                                sensitivity_source="group-label counts: one row leaves one cell "
                                "and joins another, ‖Δ‖₁ ≤ 2",
                                label="group-mass lower bound", return_event=True)
    b = 2.0 / float(epsilon)
    slack = b * max(0.0, math.log(counts.size / (2.0 * beta)))
    q = np.maximum(np.asarray(release.value, dtype=float) - slack, 1.0) / data.n
    if q.sum() > 1.0:
        q = q / q.sum()
    bound = {(g, lab): float(q[gi * data.n_labels + li])
             for gi, g in enumerate(data.groups) for li, lab in enumerate(data.label_values)}
    return (bound, release.event) if return_event else bound


def group_mass_arrays(bound, data):
    """A declared group-mass bound as arrays: (q per (group, label), (G, L); q per group, (G,)),
    or (None, None) for ``None``.  Raises :class:`~privfair.errors.GroupMassError` naming the
    key that is missing, not a group, or out of (0, 1], or bounds that sum above 1."""
    G, L = data.n_groups, data.n_labels
    if bound is None:
        return None, None
    q = np.full((G, L), np.nan)
    if isinstance(bound, dict):
        li = {v: k for k, v in enumerate(data.label_values)}
        find = data.find_group
        for key, val in bound.items():
            if isinstance(val, bool) or not isinstance(val, numbers.Real):
                raise GroupMassError(f"group_mass_bound[{key!r}]", val, "pass a float in (0, 1]")
            # a group is its name or its value (a value may itself be a tuple of attributes)
            whole = find(key)
            pair = (find(key[0]) if isinstance(key, tuple) and len(key) == 2 and key[1] in li
                    else None)
            if pair is not None:
                q[pair, li[key[1]]] = val
            elif whole is not None:
                q[whole, :] = np.where(np.isnan(q[whole]), val, q[whole])
            else:
                raise GroupMassError("group_mass_bound", key, f"keys are groups "
                                     f"{data.group_choices()} or "
                                     f"(group, label) pairs with labels {data.label_values}")
        if np.isnan(q).any():
            g, y = np.argwhere(np.isnan(q))[0]
            raise GroupMassError("group_mass_bound", bound, f"no bound for (group, label) = "
                                 f"({data.groups[g]!r}, {data.label_values[y]!r}); cover every pair")
    elif isinstance(bound, numbers.Real) and not isinstance(bound, bool):
        q[:] = float(bound)
    else:
        raise GroupMassError("group_mass_bound", bound, "pass None, a float in (0, 1] or a dict")
    if not (np.isfinite(q).all() and (q > 0).all() and (q <= 1).all()):
        raise GroupMassError("group_mass_bound", bound, "every bound must lie in (0, 1]")
    if q.sum() > 1 + 1e-12:
        raise GroupMassError("group_mass_bound", bound, f"the bounds sum to {q.sum():g} > 1 over "
                             f"the {G}x{L} group-label cells, so no dataset satisfies them")
    return q, q.sum(axis=1)

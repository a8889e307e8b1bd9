"""The surrogates φ of the indicator 1[z > 0], in numpy and torch: the one home of their formulas.

Below both the decision sets that fit a loss (:mod:`privfair.models.sparse`'s GLMs) and the
statistics that smooth a rate (:class:`privfair.statistics.stats.Rates`, which rescales φ to
φ̃ = min(1, φ/φ(B))); both read :data:`SURROGATE_TABLE` (issue #17: one table, no upward import).

>>> val, der = SURROGATES["hinge"](np.array([-2.0, 0.5]))
>>> val.tolist(), der.tolist()
([0.0, 1.5], [0.0, 1.0])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["Surrogate", "SURROGATE_TABLE", "SURROGATES"]


def _logistic(z):
    return np.logaddexp(0.0, z), 0.5 * (1.0 + np.tanh(0.5 * z))  # stable log(1+e^z), sigmoid


def _hinge(z):
    return np.maximum(0.0, 1.0 + z), (z > -1.0).astype(float)


def _smoothed_hinge(z):
    val = np.where(z <= -1.0, 0.0, np.where(z < 0.0, 0.5 * (1.0 + z) ** 2, 0.5 + z))
    return val, np.clip(1.0 + z, 0.0, 1.0)


def _logistic_torch(z):
    import torch

    return torch.nn.functional.softplus(z), torch.sigmoid(z)


def _hinge_torch(z):
    import torch

    return torch.clamp(1 + z, min=0.0), (z > -1).to(z.dtype)


def _smoothed_hinge_torch(z):
    import torch

    val = torch.where(z <= -1, 0.0 * z, torch.where(z < 0, 0.5 * (1 + z) ** 2, 0.5 + z))
    return val, torch.clamp(1 + z, 0.0, 1.0)


@dataclass(frozen=True)
class Surrogate:
    """A convex, non-decreasing surrogate φ(z) of the indicator 1[z > 0], in numpy and torch.

    ``numpy(z)`` and ``torch(z)`` both return ``(φ(z), φ'(z))`` (arrays, resp. tensors, of
    z's shape); they are the same function written for each array library (the torch one keeps
    the computation on z's device).  :class:`Rates` rescales φ to φ̃ = min(1, φ/φ(B)) with the
    margin bound B (:attr:`Rates.phi_at_bound`)."""

    name: str
    numpy: Callable
    torch: Callable
    smooth: bool          # φ' is Lipschitz (logistic, smoothed hinge); the hinge's is not


#: The surrogates, one row each (numpy and torch side by side): the one home of their formulas.
SURROGATE_TABLE = {
    "logistic": Surrogate("logistic", _logistic, _logistic_torch, True),
    "hinge": Surrogate("hinge", _hinge, _hinge_torch, False),
    "smoothed_hinge": Surrogate("smoothed_hinge", _smoothed_hinge, _smoothed_hinge_torch, True),
}

#: name → numpy ``φ(z) ↦ (value, derivative)`` (the numpy column of :data:`SURROGATE_TABLE`).
SURROGATES = {name: row.numpy for name, row in SURROGATE_TABLE.items()}

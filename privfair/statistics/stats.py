"""Group statistics ℓ(c, D) ∈ [0,1]^K and the structure that makes their sensitivity tight — the
documented import path (``from privfair.statistics.stats import rates, Rates, ...``), re-exporting
the modules that hold each concern:

* :mod:`privfair.statistics.rates` — :func:`rates` and :class:`Rates`: names, index expressions,
  evaluation, the coefficient map, ``delta_l``;
* :mod:`privfair.statistics.layout` — :class:`Layout`, the public layout of ℓ (which coordinate
  is which, from the schema alone), its hull geometry and the one map from weights on ℓ to
  per-row coefficients (``Layout.coefficients``);
* :mod:`privfair.statistics.group_mass` — the group-mass lower bound q that clamps the
  conditional rates, declared or estimated privately (:func:`estimate_group_mass_bound`);
* :mod:`privfair.statistics.sensitivity` — one row's influence on ℓ (:class:`Influence`,
  :func:`block_constants`) and the proof behind ``Rates.delta_l``;
* :mod:`privfair.statistics.counts` — per-(group, label, prediction) counts;
* :mod:`privfair.statistics.soft` — surrogate masses (φ̃ of the clipped margin), with the
  surrogate table of :mod:`privfair.models.surrogates`.

``rates(decisions, data)`` returns a :class:`Rates`.  ℓ is laid out (docs/internals.md) as

1. **joint frequencies** -- for every group g (``data.groups`` order), true label y and
   predicted label ŷ (row-major in (y, ŷ)): count / n.  Binary labels give, per group,
   ``tn, fp, fn, tp``; names ``"fp[Female]"``; multi-class ``"cell[g,y=a,yhat=b]"``.
2. **conditional rates** -- per group, binary: ``fpr, tnr`` (over rows of g with y=0),
   ``tpr, fnr`` (y=1) and ``selection`` (all rows of g); multi-class: the row-normalised
   confusion matrix ``"rate[g,y=a,yhat=b]"``.  The denominator is clamped to
   ``max(n_{g,y}, n·q_{g,y})`` with the group-mass lower bound q, so one row moves a rate by at
   most ``1/(n·q)`` on every dataset, whether or not the bound is true for it.
"""

from __future__ import annotations

from ..models.surrogates import SURROGATE_TABLE, SURROGATES, Surrogate
from .group_mass import estimate_group_mass_bound
from .layout import Layout
from .rates import Rates, rates
from .sensitivity import NORMS, RELATIONS, Influence, block_constants

__all__ = ["rates", "Rates", "Layout", "Influence", "block_constants",
           "estimate_group_mass_bound", "Surrogate", "SURROGATE_TABLE", "SURROGATES", "NORMS",
           "RELATIONS"]

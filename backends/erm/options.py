"""The row-private ERM backends' declared options (:class:`backends.options.Option`): the
projection every backend reads and the constraint form's three public hyper-parameters."""

from __future__ import annotations

from ..options import Option
from .constraint import PROBE_SHARE, RELEASE_SHARE, RHO

#: post-processing of every row-private ERM's release (all three backends read it)
PROJECT = Option("project", "bool", True,
                 doc="project the noisy θ back onto the decision set (post-processing: free)")
#: the constraint form's public hyper-parameters (:func:`lagrange_run`; docs/sparsity.md §4)
CONSTRAINT_OPTIONS = (
    Option("probe_share", "float", PROBE_SHARE, low=0,
           doc="constraint form: ε of a ν = 0 probe ERM ÷ the final ERM's (0: no probe, the "
               "labels' statistic ŷ = y is released instead)"),
    Option("release_share", "float", RELEASE_SHARE, low=0, low_open=True,
           doc="constraint form: ε of each Laplace release of the constraint statistic ÷ the "
               "final ERM's"),
    Option("slack", "float", None, low=0,
           doc="constraint form: the repair margin m (auto: the u releases' noise bound, "
               f"holding w.p. ≥ {1 - RHO:g})"),
)
#: the option table of an ERM backend that takes the constraint form (output and objective
#: perturbation; dual Frank–Wolfe declares its own)
ERM_OPTIONS = (PROJECT,) + CONSTRAINT_OPTIONS

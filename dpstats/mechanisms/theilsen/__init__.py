"""DP Theil-Sen (Alabi et al. 2022, Algorithms 2-5): the median of pairwise predictions.

``mechanism`` (the fit), ``matchings`` (which pairs), ``pair_estimates`` and
``pair_counting`` (the pairs' predictions, listed or counted), ``dp_median``
(the exponential and widened medians), ``grid_median`` (the exponential
median on a public lattice of candidates) and ``smooth_sensitivity`` (the
Student-t median); for the standard errors ``inference`` (the bootstrap),
``spread`` (the density window), ``row_counts`` (the rows' pair signs),
``pair_sources`` (listed or counted pairs) and ``release_laws`` (each
median's noise law).
"""

from __future__ import annotations

from ..base import MechanismSpec
from .mechanism import DEFAULTS, check_request, fit, se_share

SPEC = MechanismSpec(
    name="theilsen",
    title="DP Theil-Sen (median of pairwise predictions: exp on a candidate grid / wide / smooth)",
    citation="Alabi, McMillan, Sarathy, Smith, Vadhan (2022), Algorithms 2-5, Lemmas 5, 10, 20, 21; "
    "McKenna, Sheldon (2020), permute-and-flip",
    estimators=frozenset({"ols"}),
    needs_bounds=True,
    max_slopes=1,
    needs_delta=False,
    options=DEFAULTS,
    fit=fit,
    se_share=se_share,
    check_request=check_request,
    unweighted_reason=(
        "a weighted Theil-Sen would be a weighted median of the pairs' slopes, each pair weighing w_i w_j, so that "
        "one row moves the weight of every pair it is in by up to W^2; that median's sensitivity is not proven "
        "here, and it is not built"
    ),
)

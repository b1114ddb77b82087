"""DP gradient descent (Alabi et al. 2022, Algorithms 6 and 7): pure, approximate or zCDP.

``mechanism`` holds the descent, its noise calibration and the privacy accounting.
"""

from __future__ import annotations

from ..base import MechanismSpec
from .mechanism import DEFAULTS, check_request, fit, request_notion, se_share

SPEC = MechanismSpec(
    name="gradient",
    title="DP gradient descent (DPGradDescent: pure / approx / zCDP)",
    citation="Alabi, McMillan, Sarathy, Smith, Vadhan (2022), Algorithms 6 and 7, Lemmas 22-24",
    estimators=frozenset({"ols"}),
    needs_bounds=True,
    max_slopes=1,
    needs_delta=False,
    options=DEFAULTS,
    fit=fit,
    se_share=se_share,
    check_request=check_request,
    request_notion=request_notion,
    unweighted_reason=(
        "its clipped per-row gradients would take weights (each times w <= W, Lemmas 22-24's sensitivities "
        "times W), but that is not built"
    ),
)

"""DP Newton's method for binary-response models (Avella-Medina, Bradshaw & Loh 2023): noisy scores and
Hessians, pure DP through the float-safe Laplace mechanism.

``scaling`` maps the design to the box [-1, 1] and back; ``steps`` holds the noisy
Newton iteration with its sensitivities; ``mechanism`` the release, its budget and
its standard errors.
"""

from __future__ import annotations

from ..base import MechanismSpec
from .mechanism import DEFAULTS, check_request, fit

SPEC = MechanismSpec(
    name="newton",
    title="DP Newton's method (noisy score and Hessian, Laplace)",
    citation="Avella-Medina, Bradshaw & Loh (2023), noisy Newton for M-estimators",
    estimators=frozenset({"logit", "probit"}),
    needs_bounds=True,
    max_slopes=None,
    needs_delta=False,
    options=DEFAULTS,
    fit=fit,
    check_request=check_request,
    weighted=frozenset({"logit", "probit"}),
)

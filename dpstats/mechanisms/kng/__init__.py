"""The K-norm gradient mechanism (Reimherr & Awan 2019, Theorem 3.1): least squares and quantile regression.

``mechanism`` (the scaled problem, sensitivities, the release), ``sampler``
(exact and MCMC draws from the KNG density) and ``quantile_lines`` (quantile regression's target:
exact draws on a line).
"""

from __future__ import annotations

from .mechanism import DEFAULTS, KNGSpec, check_request, fit, se_share

SPEC = KNGSpec(
    name="kng",
    title="K-norm gradient mechanism (KNG)",
    citation="Reimherr & Awan (2019), Theorem 3.1; linear regression section 4.2, quantile regression section 4.5",
    estimators=frozenset({"ols", "quantreg"}),
    needs_bounds=True,
    max_slopes=None,
    needs_delta=False,
    options=DEFAULTS,
    fit=fit,
    se_share=se_share,
    check_request=check_request,
    distributed=frozenset({"ols"}),
)

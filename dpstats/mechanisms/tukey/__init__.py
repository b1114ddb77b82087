"""Approximate Tukey depth with propose-test-release (Amin et al. 2023): no data bounds needed.

``mechanism`` (the fit), ``models`` (the disjoint batches' OLS models), ``quantile_models`` (their
quantile regressions, for ``dp_quantreg``), ``logit_models`` (their bias-corrected logit or probit MLEs, for
``dp_logit`` / ``dp_probit``),
``depth`` (volumes, distance to unsafety, sampling by depth), ``dealt`` (the batches of rows on a Dask
DataFrame's partitions, dealt row by row and summed on the workers) and
``default_m`` (the number of models, from public facts).
"""

from __future__ import annotations

from ..base import MechanismSpec
from .mechanism import DEFAULTS, check_request, fit, se_share

SPEC = MechanismSpec(
    name="tukey",
    title="Tukey depth with propose-test-release (no data bounds)",
    citation="Amin, Joseph, Ribero, Vassilvitskii (2023), Algorithm 2; Brown et al. (2021), Lemma 3.8",
    estimators=frozenset({"ols", "quantreg", "logit", "probit"}),
    needs_bounds=False,
    max_slopes=None,
    needs_delta=True,
    options=DEFAULTS,
    fit=fit,
    se_share=se_share,
    check_request=check_request,
    unit_native=True,
    weighted=frozenset({"ols", "quantreg", "logit", "probit"}),
    distributed=frozenset({"ols"}),
)

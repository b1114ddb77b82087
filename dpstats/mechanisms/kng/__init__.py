"""The K-norm gradient mechanism (Reimherr & Awan 2019, Theorem 3.1): least squares, quantile regression, logit
and probit.

``mechanism`` (the scaled problem, sensitivities, the release), ``sampler``
(exact and MCMC draws from the KNG density) and ``quantile_lines`` (quantile regression's target:
exact draws on a line); ``binary``, ``binary_sampler`` and ``binary_inference`` (logit and probit:
the negative log-likelihood as the loss).
"""

from __future__ import annotations

import numpy as np

from ...design.matrix import Design
from ..base import PrivacyRequest, Release
from . import binary, mechanism
from .mechanism import DEFAULTS, KNGSpec, check_request, se_share


def fit(
    design: Design, privacy: PrivacyRequest, rng: np.random.Generator, *, link: str | None = None, **options: object
) -> Release:
    """KNG for ``design``: least squares or quantile regression (``mechanism.fit``) when ``link`` is None, else
    the logit or probit (``binary.fit``)."""
    if link is None:
        return mechanism.fit(design, privacy, rng, **options)
    return binary.fit(design, privacy, rng, link=link, **options)


SPEC = KNGSpec(
    name="kng",
    title="K-norm gradient mechanism (KNG)",
    citation=(
        "Reimherr & Awan (2019), Theorem 3.1; linear regression section 4.2, quantile regression section 4.5; "
        "logit and probit: the negative log-likelihood as the convex loss"
    ),
    estimators=frozenset({"ols", "quantreg", "logit", "probit"}),
    needs_bounds=True,
    max_slopes=None,
    needs_delta=False,
    options=DEFAULTS,
    fit=fit,
    se_share=se_share,
    check_request=check_request,
    distributed=frozenset({"ols"}),
    weighted=frozenset({"ols", "quantreg"}),
    unweighted_reason="its weighted loss is built for least squares and the check loss, not the log-likelihood yet",
)

"""The public entry points: formula -> design -> mechanism -> results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from .formula import build_design, caller_environment, check_bounds
from .mechanisms import PrivacyRequest, choose_auto, get_mechanism
from .noise import RandomState, make_rng
from .privacy import check_delta, check_eps
from .results import DPRegressionResults


def dp_ols(
    formula: str,
    data: pd.DataFrame,
    eps: float,
    bounds: Mapping[str, Sequence[float]] | None = None,
    levels: Mapping[str, Sequence] | None = None,
    method: str = "auto",
    delta: float = 0.0,
    random_state: RandomState = None,
    missing: str = "raise",
    **options: object,
) -> DPRegressionResults:
    """Differentially private least squares from a formula.

    Parameters
    ----------
    formula : patsy formula, e.g. ``"y ~ x + C(region)"``. Fixed transforms
        (``np.log(x)``, ``I(x**2)``), interactions and ``- 1`` are allowed;
        data-dependent transforms (``center``, ``standardize``) are not.
    data : DataFrame (or dict of columns) holding the private rows.
    eps : total privacy budget of the call (> 0, finite).
    bounds : public bounds ``{name: (lower, upper)}`` for every numeric variable
        (or expression) the formula uses; the data are clipped to them.
    levels : public levels ``{name: [...]}`` of every categorical variable.
    method : ``"auto"`` or a registered mechanism (``"noisystats"``).
    delta : for approximate-DP mechanisms; must be 0 for pure ones.
    random_state : None (fresh OS entropy), an int, or a numpy Generator.
    missing : ``"raise"`` (default) or ``"midpoint"``, which replaces a missing
        numeric value by the midpoint of its declared bounds: a row-wise map,
        so the guarantee is unchanged (the estimate is biased towards it).
    **options : the mechanism's hyperparameters.

    Neighbouring datasets differ in one row and have the same n (public).
    """
    return _fit("ols", formula, data, eps, bounds, levels, method, delta, random_state, missing, options)


def _fit(
    estimator: str,
    formula: str,
    data: pd.DataFrame,
    eps: float,
    bounds: Mapping[str, Sequence[float]] | None,
    levels: Mapping[str, Sequence] | None,
    method: str,
    delta: float,
    random_state: RandomState,
    missing: str,
    options: Mapping[str, object],
) -> DPRegressionResults:
    eps = check_eps(eps)
    delta = check_delta(delta)
    reason = None
    if method == "auto":
        method, reason = choose_auto(estimator)
    spec = get_mechanism(method, estimator)
    hyper = spec.check_options(options)
    spec.check_privacy(delta, hyper)
    rng = make_rng(random_state)
    design, formula_spec = build_design(
        formula, data, bounds, levels, caller_environment(2), need_bounds=spec.needs_bounds, missing=missing
    )
    spec.check_design(design)
    release = spec.fit(design, PrivacyRequest(eps=eps, delta=delta), rng, **hyper)
    return DPRegressionResults(
        estimator=estimator,
        spec=formula_spec,
        y_name=design.y_name,
        method=spec.name,
        method_title=spec.title,
        citation=spec.citation,
        method_reason=reason,
        nobs=design.n,
        privacy=release.privacy,
        failed=release.failed,
        reason=release.reason,
        se_note=release.se_note,
        declared_bounds=check_bounds(bounds),
        hyperparameters={**hyper, **release.hyperparameters},
        _params=release.params,
        _cov=release.cov,
        _noisy_stats=dict(release.noisy_stats),
    )

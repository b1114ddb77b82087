"""``dp_logit`` and ``dp_probit``: binary-response models from a formula, with their marginal effects.

The response is 0/1 (a bool, a 0/1 number, or a comparison such as
``I(hours > 0)``) or a fraction in [0, 1] (the quasi-likelihood of Papke &
Wooldridge); any other value is clipped to [0, 1] row-wise and a missing one
imputed at 1/2 (dpstats/frontend/cells.py), so no row can make the call raise.
The mechanisms (``method=``): ``"histogram"`` (Lei 2011, section 3.1: a weighted
MLE on the released cells), ``"tukey"`` (Amin et al. 2023: Tukey depth over batch
MLEs, delta > 0), ``"kng"`` (Reimherr & Awan 2019 on the log-likelihood) and
``"objective"`` (objective perturbation: Chaudhuri, Monteleoni & Sarwate 2011;
Kifer, Smith & Thakurta 2012) and ``"newton"`` (DP Newton's method: Avella-Medina, Bradshaw & Loh 2023);
``"auto"`` chooses by dpstats/planning/binary_choice.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import pandas as pd

from ..design.units import check_unit
from ..distributed.dask_design import is_dask
from ..mechanisms import PrivacyRequest
from ..privacy.accounting import check_delta, check_eps, check_share
from ..privacy.budget import Accountant, check_accountant
from ..privacy.noise import RandomState
from ..results.regression import DPRegressionResults
from .binary_release import DEFAULT_MARGINS_SHARE
from .estimators import _charged, _fit, _plan, surveyed


def dp_logit(
    formula: str,
    data: pd.DataFrame,
    eps: float | None = None,
    bounds: Mapping[str, Sequence[float]] | None = None,
    levels: Mapping[str, Sequence] | None = None,
    method: str = "auto",
    delta: float = 0.0,
    random_state: RandomState = None,
    missing: str = "impute",
    **kwargs: object,
) -> DPRegressionResults:
    """Differentially private logistic regression from a formula (module docstring).

    Parameters
    ----------
    formula, data, eps, bounds, levels, delta, random_state, missing, se_share, budget, force, target, integers,
    unit, max_rows : as for :func:`dpstats.dp_ols`. The response needs no declared bounds (it lives in [0, 1]);
        every numeric regressor does, also for ``method="tukey"`` (the marginal effects' release reads them).
    method : ``"auto"`` or one of ``"newton"``, ``"histogram"``, ``"tukey"``, ``"kng"``, ``"objective"``.
    integers : as for :func:`dpstats.dp_ols`; naming a bare response column there declares it 0/1 (a comparison
        such as ``I(hours > 0)`` is 0/1 already), and the histogram then gives it a cell per value instead of
        bins for a fractional response.
    margins_share : the part of eps spent on what the average marginal effects need (``res.get_margeff()``,
        dpstats/glm/at_fit.py); default 0.05, 0 spends nothing on them.
    weights : the survey-weight column, its range declared in ``bounds`` (``bounds={"wt": (0, 5000)}``:
        dpstats/frontend/weights.py). The fit is the weighted (pseudo-)MLE, survey::svyglm's point estimate, with
        design-based standard errors (the weighted sandwich, one PSU per row) and weighted marginal effects;
        the methods of :func:`dpstats.mechanisms.weighted_methods` take them, auto chooses among them.
    cluster, strata : the survey's PSUs and strata, as for :func:`dpstats.dp_ols`: svyglm's linearisation
        standard errors.
    **options : the mechanism's hyperparameters.

    Returns a :class:`~dpstats.results.regression.DPRegressionResults` whose ``predict`` gives probabilities and
    whose ``get_margeff()`` gives statsmodels' average marginal effects.
    """
    return _binary("logit", formula, data, eps, bounds, levels, method, delta, random_state, missing, **kwargs)


def dp_probit(
    formula: str,
    data: pd.DataFrame,
    eps: float | None = None,
    bounds: Mapping[str, Sequence[float]] | None = None,
    levels: Mapping[str, Sequence] | None = None,
    method: str = "auto",
    delta: float = 0.0,
    random_state: RandomState = None,
    missing: str = "impute",
    **kwargs: object,
) -> DPRegressionResults:
    """Differentially private probit regression from a formula: as :func:`dp_logit` with the normal link."""
    return _binary("probit", formula, data, eps, bounds, levels, method, delta, random_state, missing, **kwargs)


def _binary(
    link: str,
    formula: str,
    data: pd.DataFrame,
    eps: float | None,
    bounds: Mapping[str, Sequence[float]] | None,
    levels: Mapping[str, Sequence] | None,
    method: str,
    delta: float,
    random_state: RandomState,
    missing: str,
    *,
    se_share: float | None = None,
    margins_share: float | None = None,
    budget: Accountant | None = None,
    force: bool = False,
    target: float | None = None,
    integers: Sequence[str] | None = None,
    unit: str | None = None,
    max_rows: int | None = None,
    weights: str | None = None,
    cluster: str | None = None,
    strata: str | None = None,
    **options: object,
) -> DPRegressionResults:
    """One binary-response call: every public check, then the fit charged to ``budget``."""
    for name in ("rho", "by", "groups", "group_sizes", "count_share", "n_jobs"):
        if name in options:
            raise ValueError(f"{name}= is not available for dp_{link} yet: a binary fit takes eps (and delta), "
                             "on one pandas DataFrame")  # fmt: skip
    if is_dask(data):
        raise ValueError(f"dp_{link} runs on a pandas DataFrame (a Dask DataFrame is for dp_ols and dp_quantreg)")
    privacy = PrivacyRequest(eps=check_eps(eps), delta=check_delta(delta), se_share=check_share(se_share))
    share = check_share(margins_share, "margins_share")
    accountant = check_accountant(budget)
    plan = _plan(link, privacy, method, options, force, target, integers, check_unit(unit, max_rows))
    plan = replace(plan, margins_share=DEFAULT_MARGINS_SHARE if share is None else share)
    plan = surveyed(plan, link, weights, cluster, strata)
    return _charged(
        accountant,
        plan,
        lambda: _fit(link, formula, data, plan, bounds, levels, random_state, missing),
        formula=formula,
    )

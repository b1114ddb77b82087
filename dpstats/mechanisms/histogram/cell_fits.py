"""Fits on the cells of a released histogram (Lei 2011, Algorithm 1): post-processing only.

The design of the formula is evaluated at the cell centres (numeric
variables) and levels (categorical ones) by a public ``encode`` map handed
over by the front end, and fitted by weighted least squares or weighted
quantile regression with the thresholded noisy counts as weights
(dpstats/mechanisms/histogram/weighted_fits.py); see the family's docstring
(dpstats/mechanisms/histogram/__init__.py) for the response modes and
Sheppard's correction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...privacy import PrivacySpent
from ..base import Release
from .layout import Threshold
from .release import HistogramRelease
from .weighted_fits import (
    WeightedFit,
    weighted_least_squares,
    weighted_quantile_regression,
    weighted_quantile_regression_binned,
)

RESPONSE_MODES = ("auto", "integrated", "centre")
SE_NOTE = (
    "The perturbed histogram releases no valid standard error: one must cover the sampling error, "
    "the Laplace noise, the binning and the thresholding. SEs, tests and intervals are NaN."
)

Encode = Callable[[pd.DataFrame], tuple[np.ndarray, np.ndarray]]
"""A public map from rows of the formula's variables to the response and design matrix."""


@dataclass(frozen=True)
class CellFit:
    """A weighted fit on the cells of a histogram, before it is wrapped as a result."""

    fit: WeightedFit
    term_names: tuple[str, ...]
    columns: tuple[str, ...]
    hyperparameters: dict[str, object]


def check_response(response: object) -> str:
    """Validate the quantile-regression ``response`` mode."""
    if response not in RESPONSE_MODES:
        raise ValueError(f"response must be one of {RESPONSE_MODES}")
    return str(response)


def check_sheppard(sheppard: object, continuous: Sequence[str], estimator: str) -> list[str]:
    """The columns to correct: all continuous regressors for True, the named ones for a list."""
    if sheppard is False or sheppard is None:
        return []
    if estimator != "ols":
        raise ValueError("sheppard applies to least squares only")
    if sheppard is True:
        return list(continuous)
    if isinstance(sheppard, str) or not isinstance(sheppard, Sequence):
        raise TypeError("sheppard must be True, False or a list of column names")
    unknown = [name for name in sheppard if name not in continuous]
    if unknown:
        raise ValueError(f"sheppard names columns that are not numeric regressors of the formula: {unknown}")
    return [str(name) for name in sheppard]


def fit_cells(
    estimator: str,
    X: np.ndarray,
    y: np.ndarray,
    weights: np.ndarray,
    q: float | None,
    response: str = "auto",
    bin_width: float | None = None,
    correction: np.ndarray | None = None,
) -> tuple[WeightedFit, str | None]:
    """The weighted fit on the cells, and the quantile-regression mode used (module docstring).

    ``bin_width`` is the width of the response's bins, None when the response
    is not a binned column (a transform), which rules out ``"integrated"``.
    ``correction`` is subtracted from ``X'WX`` (least squares only).
    """
    if estimator == "ols":
        return weighted_least_squares(X, y, weights, correction), None
    if response == "integrated" and bin_width is None:
        raise ValueError(
            "response='integrated' needs the formula's response to be a numeric column of the histogram; "
            "use response='centre'"
        )
    if response == "centre" or bin_width is None:
        return weighted_quantile_regression(X, y, weights, q), "centre"
    half = 0.5 * bin_width
    return weighted_quantile_regression_binned(X, y - half, y + half, weights, q), "integrated"


def _sheppard_term(encode: Encode, cells: pd.DataFrame, name: str, weights: np.ndarray, width: float) -> np.ndarray:
    """``sum_r w_r (h^2 / 12) g_r g_r'`` for column ``name`` (the family's docstring)."""
    step = width * 1e-3
    up, down = cells.copy(), cells.copy()
    up[name] = up[name] + step
    down[name] = down[name] - step
    gradient = (encode(up)[1] - encode(down)[1]) / (2.0 * step)
    return width**2 / 12.0 * (gradient.T @ (weights[:, None] * gradient))


def fit_on_cells(
    hist: HistogramRelease,
    estimator: str,
    names: Sequence[str],
    response_names: Sequence[str],
    encode: Encode,
    term_names: tuple[str, ...],
    y_name: str,
    q: float | None,
    threshold: Threshold | None,
    response: str = "auto",
    sheppard: bool | Sequence[str] = False,
) -> CellFit:
    """Fit the design ``encode`` gives on the cells of the variables ``names`` (summed over the others)."""
    policy = hist.policy(threshold)
    continuous = [c for c in names if c not in response_names and not hist.layout.axis(c).categorical]
    corrected = check_sheppard(sheppard, continuous, estimator)
    cells, weights = hist.marginal(names, policy, clip=estimator == "quantreg")
    y, X = encode(cells)
    correction = None
    if corrected:
        correction = sum(_sheppard_term(encode, cells, c, weights, hist.bin_width(c)) for c in corrected)
    fit, mode = fit_cells(estimator, X, y, weights, q, response, hist.bin_width(y_name), correction)
    hyper = hist.hyperparameters(policy, names, weights, q, mode)
    if estimator == "ols":
        hyper["sheppard"] = list(corrected)
    return CellFit(fit, term_names, tuple(names), hyper)


def as_release(cell_fit: CellFit, privacy: PrivacySpent) -> Release:
    """A cell fit as a mechanism's release (standard errors NaN: see :data:`SE_NOTE`)."""
    p = len(cell_fit.term_names)
    return Release(
        params=cell_fit.fit.params,
        cov=np.full((p, p), np.nan),
        privacy=privacy,
        se_note=SE_NOTE,
        failed=cell_fit.fit.failed,
        reason=cell_fit.fit.reason,
        noisy_stats=dict(cell_fit.fit.stats),
        hyperparameters=cell_fit.hyperparameters,
    )

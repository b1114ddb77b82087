"""Fits on the cells of a released histogram (Lei 2011, Algorithm 1): post-processing only.

The design of the formula is evaluated at the cell centres (numeric
variables) and levels (categorical ones) by a public ``encode`` map handed
over by the front end, and fitted by weighted least squares, weighted
quantile regression or a weighted logit or probit MLE with the thresholded
noisy counts as weights (dpstats/mechanisms/histogram/weighted_fits.py; the
last two clip them at 0, Algorithm 1'); see the family's docstring
(dpstats/mechanisms/histogram/__init__.py) for the response modes and
Sheppard's correction. Every fit carries its standard errors and intervals
(dpstats/mechanisms/histogram/inference.py, binary_inference.py),
post-processing too.

The fallback to Algorithm 1'. Enhanced thresholding (or a cut-off ``A``)
zeroes every noisy count below ``A log(n) / eps``. On few rows a sparse bin
of a regressor (a skewed x with one or two rows in its upper bins) can lose
all its cells, and then no retained cell identifies the slope: ``X'WX`` is
singular and the fit fails. The fit is then redone on the non-negative noisy
counts (``max(n^_r, 0)``, Lei 2011, Algorithm 1'), which keep about half of
the empty cells' noise but every cell a row is in, and the result's
hyperparameters name the fallback. On benchmarks/calibrate_error_model.py's
skewed design (x ~ Beta(1, 4), n = 30, eps = 1, seeds 0-39) 11 of 40 fits
failed without it and 2 with it (both of x's upper cells were negative). Choosing the weights from the released
counts is post-processing, so it spends nothing; the intervals are those of
the policy used. A policy without a cut-off (``"nonnegative"``, ``"none"``)
has no fallback. A fit at the cells' noisy means counts as failed, and falls
back, where the centres of its retained cells do not identify the design
(:func:`_centres_identify`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...glm.links import LINKS, get_link
from ...privacy.accounting import PrivacySpent
from ..base import Release
from .binary_binning_bias import binary_fit_bias_bound
from .binary_inference import binary_intervals
from .binning_bias import BinnedCells, CoefficientSet, EffectClass, fit_bias_bound
from .cell_means import CellMeans, Encode, place, response_widths, unit_steps
from .cell_meat import CellMeat
from .inference import (
    SE_NOTE,
    CellProblem,
    Intervals,
    PointMove,
    least_squares_intervals,
    quantile_intervals,
    sparse_layout_note,
)
from .layout import HistogramLayout, Threshold
from .release import HistogramRelease
from .weighted_fits import (
    NOT_IDENTIFIED,
    WeightedFit,
    identifies,
    response_intervals,
    weighted_binary_mle,
    weighted_least_squares,
    weighted_quantile_regression,
    weighted_quantile_regression_binned,
)

RESPONSE_MODES = ("auto", "integrated", "centre")
FALLBACK = "nonnegative"
"""The thresholding a fit falls back to when a cut-off leaves it failed (module docstring)."""


@dataclass(frozen=True)
class CellFit:
    """A weighted fit on the cells of a histogram, before it is wrapped as a result."""

    fit: WeightedFit
    term_names: tuple[str, ...]
    columns: tuple[str, ...]
    hyperparameters: dict[str, object]
    intervals: Intervals
    bias_bound: np.ndarray | None = None


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
    widths: np.ndarray | None = None,
    correction: np.ndarray | None = None,
) -> tuple[WeightedFit, str | None]:
    """The weighted fit on the cells, and the quantile-regression mode used (module docstring).

    ``estimator``: "ols", "quantreg", or a link of :data:`dpstats.glm.links.LINKS` (a weighted binary MLE).

    ``widths`` are the cells' widths along the response (0 at a bound's
    cell), None when the response is not a binned column (a transform),
    which rules out ``"integrated"``. ``correction`` is subtracted from
    ``X'WX`` (least squares only).
    """
    if estimator == "ols":
        return weighted_least_squares(X, y, weights, correction), None
    if estimator in LINKS:
        return weighted_binary_mle(get_link(estimator), X, y, weights), None
    if response == "integrated" and widths is None:
        raise ValueError(
            "response='integrated' needs the formula's response to be a numeric column of the histogram; "
            "use response='centre'"
        )
    if response == "centre" or widths is None:
        return weighted_quantile_regression(X, y, weights, q), "centre"
    lower, upper = response_intervals(y, widths)
    return weighted_quantile_regression_binned(X, lower, upper, weights, q), "integrated"


def _sheppard_rows(encode: Encode, cells: pd.DataFrame, name: str, widths: np.ndarray) -> np.ndarray:
    """``(h_r^2 / 12) g_r g_r'`` per cell for column ``name`` (the family's docstring): cells x p x p.

    ``h_r`` is the cell's width along ``name``: 0 at a bound's cell, whose rows all lie at the bound.
    """
    step = float(np.max(widths)) * 1e-3
    up, down = cells.copy(), cells.copy()
    up[name] = up[name] + step
    down[name] = down[name] - step
    gradient = (encode(up)[1] - encode(down)[1]) / (2.0 * step)
    return (widths**2 / 12.0)[:, None, None] * (gradient[:, :, None] * gradient[:, None, :])


def cell_intervals(
    hist: HistogramRelease,
    estimator: str,
    names: Sequence[str],
    policy: Threshold,
    X: np.ndarray,
    y: np.ndarray,
    fit: WeightedFit,
    q: float | None,
    widths: np.ndarray | None,
    correction: np.ndarray | None = None,
    moves: tuple[PointMove, ...] = (),
    meat: CellMeat | None = None,
) -> Intervals:
    """The standard errors and intervals of a fit on the cells of ``names`` (inference.py).

    The weights' moments are taken per cell of the release, at its released
    weight, and summed over the cells the fit pools, like the weights (a
    binary fit's: the raw noisy counts and their variances, binary_inference.py).
    ``moves`` are the noisy points' moves
    (dpstats/mechanisms/histogram/cell_means.py). A
    least-squares fit on a sparse layout says in its note that its intervals
    are too narrow (:func:`~dpstats.mechanisms.histogram.inference.sparse_layout_note`). ``meat``: with survey
    weights, the release of the rows' design-based meat at the fit's cell scores (cell_meat.py).
    """
    p = X.shape[1]
    if fit.failed:
        return Intervals(np.full((p, p), np.nan), None, SE_NOTE)
    clip = estimator != "ols"
    weights = hist.weights(policy)
    if clip:
        weights = np.maximum(weights, 0.0)
    if estimator in LINKS:
        pooled = [hist.sum_over(names, values) for values in (weights, hist.counts, hist.count_variances())]
        return binary_intervals(X, y, *pooled, fit.params, get_link(estimator), moves, hist.postprocessing(), meat)
    model = hist.count_model(policy, clip)
    problem = CellProblem(
        X=X,
        y=y,
        weights=hist.sum_over(names, weights),
        mapped=hist.sum_over(names, weights + model.shift(weights)),
        moments=model.moments(weights).summed(lambda values: hist.sum_over(names, values)),
        n=hist.n,
        correction=correction,
        moves=moves,
        meat=meat,
    )
    if estimator == "ols":
        intervals = least_squares_intervals(problem, fit.params, hist.postprocessing())
        note = intervals.note + sparse_layout_note(hist.n, hist.layout.n_cells, hist.cutoff(policy))
        return dataclasses.replace(intervals, note=note)
    return quantile_intervals(problem, fit.params, q, widths, hist.postprocessing())


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
    meat: CellMeat | None = None,
    effects: EffectClass | None = None,
) -> CellFit:
    """Fit the design ``encode`` gives on the cells of the variables ``names`` (summed over the others).

    A cut-off policy whose retained cells leave the fit failed (a term with
    no retained cell, so ``X'WX`` is singular) falls back to Algorithm 1'
    (module docstring); the hyperparameters say so. ``meat``: with survey weights, what releases the rows'
    design-based meat at the fit (cell_meat.py; ``names`` are then all the release's columns, in its order).
    A failed fit has no intervals, so the meat is released at most once. ``effects``: the class of coefficients
    of the binning bias bound from the declared ranges (binning_bias.py), None where they are not known (the
    class is then the estimate's standard errors alone).
    """
    policy = hist.policy(threshold)
    continuous = [c for c in names if c not in response_names and not hist.layout.axis(c).categorical]
    corrected = check_sheppard(sheppard, continuous, estimator)
    fit_with = functools.partial(
        _fit_with, hist, estimator, names, encode, term_names, y_name, q, response=response, corrected=corrected,
        meat=meat, effects=effects,
    )  # fmt: skip
    cell_fit = fit_with(policy)
    if not cell_fit.fit.failed or policy in (FALLBACK, "none"):
        return cell_fit
    fallback = fit_with(FALLBACK)
    if fallback.fit.failed:
        reason = f"{cell_fit.fit.reason}; on the non-negative counts (Algorithm 1'): {fallback.fit.reason}"
        return dataclasses.replace(cell_fit, fit=dataclasses.replace(cell_fit.fit, reason=reason))
    fallback.hyperparameters["threshold_fallback"] = f"from {policy!r}, whose retained cells did not identify the fit"
    return fallback


def _fit_with(
    hist: HistogramRelease,
    estimator: str,
    names: Sequence[str],
    encode: Encode,
    term_names: tuple[str, ...],
    y_name: str,
    q: float | None,
    policy: Threshold,
    response: str,
    corrected: Sequence[str],
    meat: CellMeat | None = None,
    effects: EffectClass | None = None,
) -> CellFit:
    """:func:`fit_on_cells` with the thresholding ``policy``, and Sheppard's correction of the ``corrected`` columns;
    a least-squares fit carries its binning bias bound (binning_bias.py), a logit or probit of a 0/1 response its
    first-order one (binary_binning_bias.py; its set is the standard errors', without the class)."""
    cells, weights = hist.marginal(names, policy, clip=estimator != "ols")
    means = hist.cell_means(names)
    points = cells if means is None else place(cells, hist.layout, names, means)
    y, X = encode(points)
    per_cell = None
    if corrected:
        per_cell = sum(_sheppard_rows(encode, cells, c, hist.widths(names, c)) for c in corrected)
    correction = None if per_cell is None else np.einsum("r,rij->ij", weights, per_cell)
    widths = hist.widths(names, y_name)
    if widths is not None and means is not None and y_name in means.names:
        widths = response_widths(widths, means.axes[means.names.index(y_name)].offsets)
    fit, mode = fit_cells(estimator, X, y, weights, q, response, widths, correction)
    if means is not None and not fit.failed and not _centres_identify(encode, cells, weights):
        fit = WeightedFit(np.full(X.shape[1], np.nan), True, NOT_IDENTIFIED)
    hyper = hist.hyperparameters(policy, names, weights, q, mode)
    if estimator == "ols":
        hyper["sheppard"] = list(corrected)
    if means is not None:
        hyper["cell_means"] = list(means.names)
    moves = () if means is None else point_moves(encode, points, hist.layout, names, means)
    intervals = cell_intervals(hist, estimator, names, policy, X, y, fit, q, widths, per_cell, moves, meat)
    bound = None
    if not fit.failed and (estimator == "ols" or estimator in LINKS):
        binned = BinnedCells.of(hist.layout, names, encode, cells, weights, () if means is None else means.names)
        rows = np.column_stack([y, X])
        if estimator == "ols":
            effects = EffectClass.unknown(X.shape[1]) if effects is None else effects
            bound = fit_bias_bound(
                binned, rows, weights, CoefficientSet(fit.params, intervals.cov, effects), correction
            )
        else:
            unknown = CoefficientSet(fit.params, intervals.cov, EffectClass.unknown(X.shape[1]))
            bound = binary_fit_bias_bound(binned, encode, rows, weights, unknown, get_link(estimator))
    return CellFit(fit, term_names, tuple(names), hyper, intervals, bound)


def _centres_identify(encode: Encode, cells: pd.DataFrame, weights: np.ndarray) -> bool:
    """Whether the centres of the cells with weight identify the design (the module docstring's fallback).

    At the cells' noisy means two retained cells of one bin have slightly different points, so a fit on them
    is identified in name only (engel's 0.75 quantile at eps = 1 on two cells of one income bin: slope 10.4,
    QuantReg's 0.64); it is held to the identification of Algorithm 1 at the centres. A transform undefined
    at a bound's cell is left out, as in the default layout's check (mechanism.py).
    """
    X = encode(cells)[1]
    kept = (weights > 0) & np.all(np.isfinite(X), axis=1)
    return identifies(X[kept])


def point_moves(
    encode: Encode, points: pd.DataFrame, layout: HistogramLayout, names: Sequence[str], means: CellMeans
) -> tuple[PointMove, ...]:
    """The derivative of each cell's response and design row along every axis with a mean, its bin and the bins'
    variances."""
    moves = []
    for axis in means.axes:
        dy, dX = unit_steps(encode, points, layout, names, axis.name)
        moves.append(PointMove(dy, dX, axis.cell_variances, axis.bins, axis.bin_share, axis.bin_variances))
    return tuple(moves)


BINNING_BIAS = (
    "the binning bias (at the cells' noisy means, the spread of the rows inside a cell, which vanishes as the "
    "bins refine with eps; at the bins' centres, with moment_share=0, the distance of the rows from the centres, "
    "kept at any eps; Lei 2011, Theorem 3) and, in sparse layouts, the pull of the noise in empty cells towards "
    "the middle of the box"
)
"""The bias every fit on a perturbed histogram keeps beyond what its bootstrap covers (inference.py: **Binning**
and **Sparse layouts**; the bootstrap corrects the thresholding's bias only as far as its world shows it). A
quantile fit (or a binary one of a fractional response) leaves it unbounded; least squares, the logit and the probit
of a 0/1 response bound it (``BOUNDED_BINNING_BIAS``)."""
BOUNDED_BINNING_BIAS = (
    "the binning bias (at the cells' noisy means, the spread of the rows inside a cell, which vanishes as the "
    "bins refine with eps; at the bins' centres, with moment_share=0, the distance of the rows from the centres, "
    "kept at any eps; Lei 2011, Theorem 3), bounded over a class of within-cell spreads and coefficients "
    "(dpstats/mechanisms/histogram/binning_bias.py; for a logit or probit, to first order, binary_binning_bias.py); "
    "a sparse layout's pull of the empty cells' noise is the note's, not the bound's"
)
"""A least-squares or binary fit's binning bias, with its bound (binning_bias.py, binary_binning_bias.py)."""


def as_release(cell_fit: CellFit, privacy: PrivacySpent) -> Release:
    """A cell fit as a mechanism's release, with its standard errors (inference.py), its binning bias and, for
    least squares and a 0/1 logit or probit, the bias's bound (binning_bias.py, binary_binning_bias.py)."""
    failed = cell_fit.fit.failed
    return Release(
        params=cell_fit.fit.params,
        cov=cell_fit.intervals.cov,
        privacy=privacy,
        se_note=cell_fit.intervals.note,
        failed=failed,
        reason=cell_fit.fit.reason,
        noisy_stats=dict(cell_fit.fit.stats),
        hyperparameters=cell_fit.hyperparameters,
        replicates=cell_fit.intervals.replicates,
        bias=None if failed else BINNING_BIAS if cell_fit.bias_bound is None else BOUNDED_BINNING_BIAS,
        bias_bound=None if failed else cell_fit.bias_bound,
    )

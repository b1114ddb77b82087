"""The class's within-cell spread, and interval arithmetic over a cell's quadratics (issue 45).

The binning bias bounds of the perturbed histogram's fits
(dpstats/mechanisms/histogram/binning_bias.py for least squares,
binary_binning_bias.py for a logit or probit) bound, per cell, the
covariances and mean gaps of functions that are quadratic in the rows'
normalised positions ``tau`` in [-1, 1] along the binned axes (their
gradients, curvatures and mixed terms: cell_models.py), over a class of
within-cell spreads: a variance of at most ``VARIANCE`` along each axis and a
correlation of at most ``CORRELATION`` between two (binning_bias.py's module
docstring, classes 2 and 3, says why these values). Unknown coefficients
enter as intervals, elementwise over the cells: ``(lo, hi)`` arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .cell_models import CellModels

VARIANCE = 1.0 / 3.0
"""The largest within-cell variance of a normalised position (binning_bias.py's module docstring, 2)."""
CORRELATION = 0.5
"""The largest within-cell correlation of two axes' positions (binning_bias.py's module docstring, 3)."""

Interval = tuple[np.ndarray, np.ndarray]


def point(values: np.ndarray) -> Interval:
    """A known value as an interval."""
    return values, values


def absmax(interval: Interval) -> np.ndarray:
    return np.maximum(np.abs(interval[0]), np.abs(interval[1]))


def times(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a b`` elementwise, 0 where either is 0 (an absent term times an unbounded one)."""
    with np.errstate(invalid="ignore"):
        return np.where((a == 0) | (b == 0), 0.0, a * b)


def product(a: Interval, b: Interval) -> Interval:
    """The interval of products of elements of two intervals, elementwise."""
    corners = np.stack([times(a[0], b[0]), times(a[0], b[1]), times(a[1], b[0]), times(a[1], b[1])])
    return corners.min(axis=0), corners.max(axis=0)


def linear_sd(gradient: np.ndarray) -> np.ndarray:
    """The largest sd of ``sum_a G_a tau_a`` (``gradient``: cells x axes, absolute values) over the class."""
    square, total = (gradient**2).sum(axis=-1), gradient.sum(axis=-1) ** 2
    with np.errstate(invalid="ignore"):
        sd = np.sqrt(VARIANCE * (square + CORRELATION * (total - square)))
    return np.where(np.isfinite(total), sd, np.inf)


def quadratic_sd(curvature: np.ndarray, mixed: np.ndarray) -> np.ndarray:
    """The largest sd of the quadratic part (absolute coefficients) by Popoviciu: ``tau^2`` in [0, 1], ``tau_a
    tau_b`` in [-1, 1]."""
    return 0.25 * curvature.sum(axis=-1) + mixed.sum(axis=-1)


def linear_covariance(gradient: np.ndarray, f_gradient: Interval) -> Interval:
    """Where ``Cov(sum_a g_a tau_a, sum_a f_a tau_a)`` lies over the class: variances in [0, VARIANCE],
    cross-covariances within CORRELATION VARIANCE."""
    own = product((gradient, gradient), f_gradient)
    size, f_size = np.abs(gradient), absmax(f_gradient)
    pairs = times(size[..., :, None], f_size[..., None, :])  # cells x axes x axes
    cross = np.where(np.eye(size.shape[-1], dtype=bool), 0.0, pairs).sum(axis=(-2, -1))
    lo = VARIANCE * np.minimum(own[0], 0.0).sum(axis=-1) - CORRELATION * VARIANCE * cross
    hi = VARIANCE * np.maximum(own[1], 0.0).sum(axis=-1) + CORRELATION * VARIANCE * cross
    return lo, hi


def gap(curvature: Interval, mixed: Interval, models: CellModels, means: np.ndarray, gradient: Interval) -> Interval:
    """Where a function's mean over a cell's rows less its value at the point lies: ``1/2 sum_a K_aa Var_a +
    sum_ab K_ab Cov_ab`` over the class, plus, along axes without means, the function's reach across the cell."""
    variance = 0.5 * VARIANCE
    mixed_size = absmax(mixed)
    lo = variance * np.minimum(curvature[0], 0.0).sum(axis=-1) - CORRELATION * VARIANCE * mixed_size.sum(axis=-1)
    hi = variance * np.maximum(curvature[1], 0.0).sum(axis=-1) + CORRELATION * VARIANCE * mixed_size.sum(axis=-1)
    free = ~np.asarray(means, dtype=bool)
    if free.any():  # at the centre: the mean can be anywhere in the cell (Lei 2011, Theorem 3)
        touching = np.array([free[a] or free[b] for a, b in models.pairs], dtype=bool)
        reach = (absmax(gradient)[:, free] + 0.5 * absmax(curvature)[:, free]).sum(axis=-1)
        reach = reach + mixed_size[:, touching].sum(axis=-1) if touching.size else reach
        lo, hi = lo - reach, hi + reach
    return lo, hi


@dataclass(frozen=True)
class RowTerms:
    """A function ``zeta = row' z`` of the design over each cell: its gradient (cells x axes), its value at the
    fit's point, the interval of its mean less that value (:func:`gap`), and the largest sds of its linear and
    quadratic parts over the class."""

    gradient: np.ndarray
    value: np.ndarray
    gap: Interval
    linear_sd: np.ndarray
    quadratic_sd: np.ndarray


def row_terms(models: CellModels, points: np.ndarray, means: np.ndarray, row: np.ndarray) -> RowTerms:
    """``zeta = row' z``'s terms per cell (``points``: cells x (1 + p), the response and design row at each fit
    point; ``means`` as :func:`gap`'s)."""
    gradient, curvature, mixed = (c[..., 1:] @ row for c in (models.gradient, models.curvature, models.mixed))
    return RowTerms(
        gradient=gradient,
        value=points[:, 1:] @ row,
        gap=gap(point(curvature), point(mixed), models, means, point(gradient)),
        linear_sd=linear_sd(np.abs(gradient)),
        quadratic_sd=quadratic_sd(np.abs(curvature), np.abs(mixed)),
    )


def covariance(zeta: RowTerms, gradient: Interval, linear: np.ndarray, quadratic: np.ndarray) -> Interval:
    """Where ``Cov(zeta, f)`` lies per cell over the class, for a function ``f`` whose gradient lies in
    ``gradient`` and whose linear and quadratic parts have sds of at most ``linear`` and ``quadratic``: the
    linear parts' covariance (:func:`linear_covariance`), widened by Cauchy-Schwarz for the quadratic parts."""
    lo, hi = linear_covariance(zeta.gradient, gradient)
    slack = times(zeta.quadratic_sd, linear) + times(zeta.linear_sd + zeta.quadratic_sd, quadratic)
    return lo - slack, hi + slack

"""Heteroskedasticity-robust (sandwich) covariances of least squares from noisy moments.

For least squares on design rows ``w_i`` with residuals ``r_i`` the HC0
covariance (White 1980) is

    V = (W'W)^{-1} M (W'W)^{-1},    M = sum_i r_i^2 w_i w_i',

and HC1 multiplies it by n / (n - p). Both the bread W'W and the meat M are
sums of one term per row, so each can be released with Laplace noise once its
row terms are bounded: every row lies in a public box (the declared bounds of
the design columns) and the residual ``r_i = y_i - w_i'theta`` is evaluated at
an estimate theta that has already been released. Over the declared box, with
y in its declared range, ``|r_i|`` is at most ``R(theta)``
(:func:`residual_bound`, exact for a linear fit); R is capped at
``RESIDUAL_CAP`` widths of the response's range and the residuals are
clipped to ``[-R, R]``, so a wild noisy theta cannot blow up the noise while a
sensible one (a fit that stays within a width of the response's range on the
box) leaves every residual untouched. theta is public when the meat is
computed, so this is adaptive composition of two releases; the replay
(dpstats/audit/replay.py) forces the released theta on both neighbours and
checks the meat's sensitivity.

Sensitivity (replace-one): the entry (j, k) of one row's meat term is
``w_j w_k r^2`` with ``w_j w_k`` in the product interval ``I_jk`` of the two
columns' bounds and ``r^2`` in ``[0, R^2]``; replacing a row moves that entry by
at most the width of ``I_jk * [0, R^2]``, and the L1 sensitivity of the upper
triangle is the sum of these widths (:func:`meat_sensitivity`). Likewise the
bread's entry moves by at most the width of ``I_jk`` (:func:`bread_sensitivity`).

Precision. The entries that decide the slopes' variances,
``sum r_i^2 (u_ij - c_j)(u_ik - c_k)`` for slope columns centred at a public c
(the noisy column means), are small next to one row's reach, while the
intercept column's entries are large. The release therefore weights each
entry (:func:`meat_weights`): a weight w scales the entry's contribution to the
L1 sensitivity by w and its noise, once divided back, by 1/w, so down-weighting
the well-determined intercept entries buys precision for the slope block at
the same eps. Then each noisy entry is shrunk towards the homoskedastic meat
``sigma^2 W'W`` (``sigma^2 = sum r_i^2 / n`` from the intercept entry) by the
factor ``d^2 / (d^2 + var)``, with d the entry's departure from that target and
var its (public) noise variance (:func:`shrink_to_homoskedastic`): an entry
the noise swamps falls back to the homoskedastic value, a well-measured one
keeps its heteroskedasticity-robust value. Finally the meat is projected onto
the positive semi-definite matrices. All of this is post-processing.
"""

from __future__ import annotations

import numpy as np

from .intervals import power, product
from .uncertainty import infinite_cov, nearest_psd


def upper_triangle(matrix: np.ndarray) -> np.ndarray:
    """The entries (j, k), j <= k, of a symmetric matrix, row by row."""
    return matrix[np.triu_indices(matrix.shape[0])]


def from_upper_triangle(upper: np.ndarray, p: int) -> np.ndarray:
    """The symmetric p x p matrix whose upper triangle is ``upper`` (inverse of :func:`upper_triangle`)."""
    out = np.zeros((p, p))
    out[np.triu_indices(p)] = upper
    return out + np.triu(out, 1).T


def product_ranges(bounds: np.ndarray) -> list[tuple[float, float]]:
    """The range of ``w_j w_k`` over the box ``bounds`` (p x 2), for each upper-triangle entry (exact)."""
    p = bounds.shape[0]
    return [
        power(tuple(bounds[j]), 2) if j == k else product(tuple(bounds[j]), tuple(bounds[k]))
        for j in range(p)
        for k in range(j, p)
    ]


def bread_sensitivity(bounds: np.ndarray) -> float:
    """L1 replace-one sensitivity of the upper triangle of ``W'W`` for rows in the box ``bounds``."""
    return float(sum(hi - lo for lo, hi in product_ranges(bounds)))


def meat_sensitivity(bounds: np.ndarray, residual_bound: float, weights: np.ndarray | None = None) -> float:
    """L1 replace-one sensitivity of the (weighted) upper triangle of ``sum r^2 w w'``, ``|r| <= residual_bound``."""
    square = (0.0, float(residual_bound) ** 2)
    widths = np.array([hi - lo for lo, hi in (product(entry, square) for entry in product_ranges(bounds))])
    return float(widths.sum() if weights is None else (np.asarray(weights) * widths).sum())


INTERCEPT_WEIGHT = 0.2
"""Weight of the meat entries in the intercept's row (:func:`meat_weights`)."""


def meat_weights(p: int, intercept_index: int | None) -> np.ndarray:
    """Weights of the upper-triangle entries: INTERCEPT_WEIGHT in the intercept's row and column, 1 elsewhere."""
    rows, cols = np.triu_indices(p)
    weights = np.ones(rows.size)
    if intercept_index is not None:
        weights[(rows == intercept_index) | (cols == intercept_index)] = INTERCEPT_WEIGHT
    return weights


def shrink_to_homoskedastic(
    noisy_meat: np.ndarray, noise_variance: np.ndarray, bread: np.ndarray, intercept_index: int
) -> np.ndarray:
    """Each entry shrunk towards ``sigma^2 W'W`` by ``d^2 / (d^2 + var)`` (module docstring); symmetric p x p."""
    p = bread.shape[0]
    n = bread[intercept_index, intercept_index]
    target = noisy_meat[intercept_index, intercept_index] / n * bread
    departure = noisy_meat - target
    variance = from_upper_triangle(noise_variance, p)
    with np.errstate(invalid="ignore", divide="ignore"):
        keep = np.where(variance > 0, departure**2 / (departure**2 + variance), 1.0)
    return target + keep * departure


def meat(W: np.ndarray, residuals: np.ndarray) -> np.ndarray:
    """The upper triangle of ``sum_i r_i^2 w_i w_i'`` (the statistic the noise is added to)."""
    return upper_triangle((W * residuals[:, None] ** 2).T @ W)


RESIDUAL_CAP = 2.0
"""The residual bound R never exceeds this many widths of the response's declared range."""


def residual_bound(theta: np.ndarray, bounds: np.ndarray, y_bounds: tuple[float, float]) -> float:
    """``min(max |y - w'theta|, RESIDUAL_CAP * width(y))`` over w in the box ``bounds`` and y in ``y_bounds``.

    A linear function attains its extremes over a box at corners: the fitted
    range is ``sum_j [min, max](theta_j lo_j, theta_j hi_j)``.
    """
    ends = bounds * np.asarray(theta, dtype=float)[:, None]
    fit_lo, fit_hi = float(ends.min(axis=1).sum()), float(ends.max(axis=1).sum())
    exact = max(y_bounds[1] - fit_lo, fit_hi - y_bounds[0])
    cap = RESIDUAL_CAP * (y_bounds[1] - y_bounds[0])
    return min(exact, cap) if np.isfinite(exact) else cap


def clipped_residuals(y: np.ndarray, fitted: np.ndarray, bound: float) -> np.ndarray:
    """``y - fitted`` clipped to ``[-bound, bound]`` (a row-wise map: each row's term stays bounded)."""
    return np.clip(y - fitted, -bound, bound)


def hc_covariance(bread: np.ndarray, noisy_meat: np.ndarray, n: int) -> np.ndarray:
    """HC1 ``n / (n - p) B^{-1} M+ B^{-1}`` with M+ the PSD projection of the noisy meat.

    Infinite variances if the bread is singular or n <= p (nothing to say).
    """
    p = bread.shape[0]
    try:
        inverse = np.linalg.inv(bread)
    except np.linalg.LinAlgError:
        inverse = None
    if inverse is None or n <= p or not np.all(np.isfinite(inverse)):
        return infinite_cov(p)
    cov = inverse @ nearest_psd(noisy_meat) @ inverse.T * (n / (n - p))
    return (cov + cov.T) / 2.0

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
triangle is the sum of these widths (:func:`entry_widths`). Likewise the
bread's entry moves by at most the width of ``I_jk`` (:func:`bread_sensitivity`).

Precision. The entry that decides the sampling variance when n * eps is
small is the residual sum of squares ``sum r_i^2`` (the intercept's entry): it
is released on its own (:data:`RSS_SHARE` of the budget). The entries that
decide the slopes' variances, ``sum r_i^2 (u_ij - c_j)(u_ik - c_k)`` for slope
columns centred at a public c, are small next to one row's reach; they are
released together with the intercept's cross entries, which are down-weighted
(:func:`meat_weights`: a weight w scales the entry's contribution to the L1
sensitivity by w and its noise, once divided back, by 1/w).

Post-processing (:func:`robust_meat`). The residuals are taken at the
released estimate theta~ = theta^ + delta, not at least squares theta^, which
adds ``sum_i (w_i'delta)^2 w_i w_i'`` to the meat; its expectation over the
privacy noise is approximated by ``tr(W'W V_p) / n * W'W`` (V_p the privacy
covariance of theta~) and subtracted. Each noisy entry is then shrunk towards
the homoskedastic meat ``sigma^2 W'W`` (``sigma^2`` from the RSS) by the
positive-part James-Stein factor ``max(0, 1 - var / d^2)``, with d the entry's
departure from that target and var its public noise variance: an entry the
noise swamps falls back to the homoskedastic value, a well-measured one keeps
its heteroskedasticity-robust value. Finally the meat is projected onto the positive semi-definite matrices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..design.bounds import power, product
from ..privacy.noise import laplace_mechanism
from .intervals import infinite_cov, nearest_psd


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


def entry_widths(bounds: np.ndarray, residual_bound: float) -> np.ndarray:
    """How far one row can move each upper-triangle entry of ``sum r^2 w w'`` (rows in ``bounds``, ``|r| <= R``)."""
    square = (0.0, float(residual_bound) ** 2)
    return np.array([hi - lo for lo, hi in (product(entry, square) for entry in product_ranges(bounds))])


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


@dataclass(frozen=True)
class RowNorms:
    """Bounds on ``||w||_1`` and ``||w||_2^2`` over a design's possible rows w (intercept excluded).

    For a box alone these are what the box gives; with one-hot blocks (a
    categorical term's treatment dummies: at most one 1 per row) they do not
    grow with the number of levels (:func:`row_norms`). A quadratic form's
    entries then move by at most ``||upper(w w')||_1 <= (||w||_1^2 + ||w||_2^2) / 2``.
    """

    l1: float
    l2sq: float

    def quadratic(self) -> float:
        """The bound on ``||upper(w w')||_1 = (||w||_1^2 + ||w||_2^2) / 2``."""
        return (self.l1**2 + self.l2sq) / 2.0


def row_norms(n_columns: int, blocks: tuple[tuple[int, ...], ...], centre: np.ndarray | None = None) -> RowNorms:
    """Bounds on the norms of ``w = u - m`` for unit-scale rows u (columns in [0, 1], one-hot ``blocks``).

    With ``centre=None`` m is any possible row (so that ``w`` is the difference
    of two rows): a column outside the blocks adds at most 1 to both norms, a
    block of two or more columns at most 2 (``e_i - e_j``), a one-column block 1.
    With a public ``centre`` c, m = c: a column adds ``max(c_j, 1 - c_j)`` and
    its square, a block the largest norms of ``e_i - c`` over its levels (the
    reference level's row is 0).
    """
    in_block = {j for block in blocks for j in block}
    free = [j for j in range(n_columns) if j not in in_block]
    if centre is None:
        l1 = len(free) + sum(2.0 if len(block) > 1 else 1.0 for block in blocks)
        return RowNorms(float(l1), float(l1))
    c = np.asarray(centre, dtype=float)
    reach = np.maximum(c[free], 1.0 - c[free])
    l1, l2sq = float(reach.sum()), float((reach**2).sum())
    for block in blocks:
        cb = c[list(block)]
        rows = np.vstack([np.zeros(len(block)), np.eye(len(block))]) - cb
        l1 += float(np.abs(rows).sum(axis=1).max())
        l2sq += float((rows**2).sum(axis=1).max())
    return RowNorms(l1, l2sq)


INTERCEPT_WEIGHT = 0.2
"""Weight of the intercept's cross entries in the meat's release (:func:`meat_weights`)."""
SHRINK = 2.0
"""The shrinkage factor's noise multiplier (:func:`robust_meat`)."""
RSS_SHARE = 0.45
"""With an intercept, the part of the meat's budget spent on the residual sum of squares alone."""


def meat_weights(p: int, intercept_index: int | None) -> np.ndarray:
    """Weights of the upper-triangle entries: INTERCEPT_WEIGHT in the intercept's row and column, 1 elsewhere."""
    rows, cols = np.triu_indices(p)
    weights = np.ones(rows.size)
    if intercept_index is not None:
        weights[(rows == intercept_index) | (cols == intercept_index)] = INTERCEPT_WEIGHT
    return weights


@dataclass(frozen=True)
class NoisyMeat:
    """A released meat (symmetric, unweighted) and each upper-triangle entry's noise variance."""

    meat: np.ndarray
    noise_variance: np.ndarray


MEAT_NAMES = ("SE: RSS", "SE: HC meat")
"""The names of :func:`release_meat`'s two releases: the intercept's entry alone, then the rest."""


def meat_split(
    eps: float, p: int, intercept_index: int | None, names: tuple[str, str] = MEAT_NAMES
) -> tuple[tuple[str, float], ...]:
    """The releases of :func:`release_meat` for p columns and their budgets (for ``res.privacy.split``)."""
    alone, rest = names
    if intercept_index is None:
        return ((rest, eps),)
    if p == 1:
        return ((alone, eps),)
    return ((alone, eps * RSS_SHARE), (rest, eps * (1.0 - RSS_SHARE)))


def release_meat(
    rng: np.random.Generator,
    W: np.ndarray,
    residuals: np.ndarray,
    bounds: np.ndarray,
    residual_bound: float,
    eps: float,
    intercept_index: int | None,
    norms: RowNorms | None = None,
    names: tuple[str, str] = MEAT_NAMES,
) -> NoisyMeat:
    """Release the meat of rows ``W`` (in the box ``bounds``) with ``|residuals| <= residual_bound``, at budget eps.

    With an intercept: its entry (the RSS) alone at ``RSS_SHARE * eps``, then
    the other entries weighted (:func:`meat_weights`) at the rest; without,
    every entry in one release. ``norms`` (with an intercept: bounds on the
    norms of the non-intercept part of a row) gives a second valid sensitivity
    of the rest, ``2 R^2 (w0 ||w||_1 + (||w||_1^2 + ||w||_2^2) / 2)`` with w0 the
    intercept entries' weight (one row's weighted entries, each at most R^2
    times ``|w_j w_k|``, for the row leaving and the row arriving); the smaller
    of the two is used. ``names`` name the two releases (any weighted sum of
    ``r_i^2 w_i w_i'`` with bounded ``r_i`` is released the same way).
    """
    return release_meat_sums(rng, meat(W, residuals), bounds, residual_bound, eps, intercept_index, norms, names)


def release_meat_sums(
    rng: np.random.Generator,
    full: np.ndarray,
    bounds: np.ndarray,
    residual_bound: float,
    eps: float,
    intercept_index: int | None,
    norms: RowNorms | None = None,
    names: tuple[str, str] = MEAT_NAMES,
    widths: np.ndarray | None = None,
) -> NoisyMeat:
    """:func:`release_meat` from the meat's exact upper triangle ``full`` (:func:`meat`, summed over
    chunks of the rows where they are partitioned: dpstats/design/moments.py), for rows in the box ``bounds``.

    ``widths``: how far one neighbour moves each entry, when that is not one row's term
    (:func:`entry_widths`): a meat summed by units of k rows (dpstats/uncertainty/cluster_meat.py), whose
    ``residual_bound`` is then k R, the bound that one unit's score puts in the ``norms`` bound."""
    p = bounds.shape[0]
    alone, rest = names
    widths = entry_widths(bounds, residual_bound) if widths is None else widths
    parts = dict(meat_split(eps, p, intercept_index, names))
    if intercept_index is None:
        sensitivity, budget = float(widths.sum()), parts[rest]
        noisy = np.atleast_1d(laplace_mechanism(rng, full, sensitivity, budget, rest))
        return NoisyMeat(from_upper_triangle(noisy, p), np.full(full.size, 2.0 * (sensitivity / budget) ** 2))
    rows, cols = np.triu_indices(p)
    rss = (rows == intercept_index) & (cols == intercept_index)
    noisy, variance = full.astype(float), np.zeros(full.size)
    budget = parts[alone]
    noisy[rss] = laplace_mechanism(rng, full[rss], float(widths[rss].sum()), budget, alone)
    variance[rss] = 2.0 * (widths[rss].sum() / budget) ** 2
    if p > 1:  # an intercept alone has no other entry
        weights = meat_weights(p, intercept_index)[~rss]
        sensitivity, budget = float((weights * widths[~rss]).sum()), parts[rest]
        if norms is not None:
            structured = 2.0 * residual_bound**2 * (INTERCEPT_WEIGHT * norms.l1 + norms.quadratic())
            sensitivity = min(sensitivity, structured)
        released = laplace_mechanism(rng, weights * full[~rss], sensitivity, budget, rest)
        noisy[~rss] = np.atleast_1d(released) / weights
        variance[~rss] = 2.0 * (sensitivity / budget / weights) ** 2
    return NoisyMeat(from_upper_triangle(noisy, p), variance)


def robust_meat(
    released: NoisyMeat, bread: np.ndarray, privacy_cov: np.ndarray, n: int, intercept_index: int | None
) -> np.ndarray:
    """The released meat corrected for the residuals' privacy noise, shrunk and made PSD (module docstring)."""
    noisy = released.meat - np.trace(bread @ privacy_cov) / n * bread
    if intercept_index is None:
        return nearest_psd(noisy)
    p = bread.shape[0]
    rss = max(noisy[intercept_index, intercept_index], 0.0)
    target = rss / bread[intercept_index, intercept_index] * bread
    departure = noisy - target
    variance = from_upper_triangle(released.noise_variance, p)
    with np.errstate(invalid="ignore", divide="ignore"):
        keep = np.where(variance > 0, np.maximum(0.0, 1.0 - SHRINK * variance / departure**2), 1.0)
    return nearest_psd(target + keep * departure)


def hc_covariance(bread: np.ndarray, meat_psd: np.ndarray, n: int, clusters: int | None = None) -> np.ndarray:
    """HC1 ``n / (n - p) B^{-1} M B^{-1}`` for a PSD meat M (:func:`robust_meat`); with ``clusters`` = G,
    a meat summed by unit, CR1 ``G / (G - 1) (n - 1) / (n - p) B^{-1} M B^{-1}``
    (dpstats/uncertainty/cluster_meat.py).

    Infinite variances if the bread is singular, n <= p or G <= 1 (nothing to say).
    """
    p = bread.shape[0]
    try:
        inverse = np.linalg.inv(bread)
    except np.linalg.LinAlgError:
        inverse = None
    if inverse is None or n <= p or (clusters is not None and clusters <= 1) or not np.all(np.isfinite(inverse)):
        return infinite_cov(p)
    factor = n / (n - p) if clusters is None else clusters / (clusters - 1) * (n - 1) / (n - p)
    cov = inverse @ meat_psd @ inverse.T * factor
    return (cov + cov.T) / 2.0

"""Standard errors, tests and confidence intervals from what a release reports about its own error.

A mechanism reports its uncertainty in one of two forms (both post-processing
of its release, both covering the sampling error *and* the privacy noise), and
every test and interval of a fit comes from that one law:

* a covariance ``cov`` of the estimates: normal (Wald) intervals, z-test
  p-values and chi-square F tests;
* bootstrap ``replicates`` (B x p draws of the estimates' law around the
  released ``params``, from a model fitted to the release), with one of two
  kinds of interval (Davison & Hinkley 1997, section 5.2): ``"basic"``
  (pivotal), ``[2 theta - q_(1 - alpha/2), 2 theta - q_(alpha/2)]``, right when
  the law of the error does not depend on the parameter, as Ferrando, Wang &
  Sheldon (2022) use for parametric bootstraps of DP releases; or
  ``"percentile"``, ``[q_(alpha/2), q_(1 - alpha/2)]``, right when a monotone
  transformation makes the error symmetric and pivotal, as for a ratio whose
  noisy denominator skews it (NoisyStats). Their p-values invert the same
  intervals (:func:`bootstrap_pvalues`), and F tests take the replicates'
  departures as the null law (:func:`wald_test`). Their robust covariance
  gives the standard errors.

**The estimate lies inside its own interval.** A bootstrap interval leaves
the estimate out when the replicates sit off it: a mechanism whose replicates
carry a bias correction (the perturbed histogram's thresholding,
dpstats/mechanisms/histogram/inference.py) centres its interval at the
corrected value, and a skewed law (a noisy denominator) moves a percentile
interval off the point. Every interval is therefore the smallest interval that
holds both the bootstrap interval and the estimate (the hull): it keeps the
bootstrap's promise (its coverage can only grow) and the reader's, that the
printed point is one of the values the interval calls plausible. Where the
estimate was outside, the interval reaches from it to the far end of the
bootstrap interval: how far a bias correction moved the centre is then part of
the interval. Normal intervals are symmetric about the estimate already.

A covariance of ``inf`` marks a release whose interval part failed (a noisy
variance that came out <= 0, say): the intervals are then infinite, never
silently narrower, and z and p are NaN (no test). NaN marks a mechanism that
reports no standard error: NaN intervals, z and p.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
from scipy.stats import chi2

MIN_REPLICATES = 20
"""Fewer finite replicates than this and the bootstrap says nothing: infinite intervals."""


def check_alpha(alpha: float) -> float:
    """Validate a significance level in (0, 1)."""
    if isinstance(alpha, bool) or not isinstance(alpha, int | float | np.floating) or not 0.0 < float(alpha) < 1.0:
        raise ValueError("alpha must be a number in (0, 1)")
    return float(alpha)


def infinite_cov(p: int) -> np.ndarray:
    """The covariance of a release whose standard-error part failed: infinite variances."""
    cov = np.zeros((p, p))
    np.fill_diagonal(cov, np.inf)
    return cov


def finite_replicates(replicates: np.ndarray) -> np.ndarray:
    """The replicates whose every coordinate is finite (a replicate of a failed refit is NaN)."""
    replicates = np.asarray(replicates, dtype=float)
    return replicates[np.all(np.isfinite(replicates), axis=1)]


IQR_NORMAL = 1.3489795003921634
"""The interquartile range of the standard normal distribution."""


def replicate_covariance(replicates: np.ndarray) -> np.ndarray:
    """A robust covariance of the finite replicates (infinite if too few are finite).

    Standard deviations are interquartile ranges / 1.349 and correlations
    those of the replicates winsorised at their 1% and 99% quantiles: for
    normal replicates this is their covariance, and a ratio's heavy tail (a
    noisy denominator near 0 in a few refits) cannot make the standard error
    disagree with the intervals, which use quantiles too.
    """
    good = finite_replicates(replicates)
    p = replicates.shape[1]
    if good.shape[0] < MIN_REPLICATES:
        return infinite_cov(p)
    q1, q3 = np.quantile(good, [0.25, 0.75], axis=0)
    scale = (q3 - q1) / IQR_NORMAL
    low, high = np.quantile(good, [0.01, 0.99], axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = np.atleast_2d(np.corrcoef(np.clip(good, low, high), rowvar=False))
    corr = np.where(np.isfinite(corr), corr, 0.0)
    np.fill_diagonal(corr, 1.0)
    return corr * np.outer(scale, scale)


INTERVALS = ("basic", "percentile")
"""The kinds of bootstrap interval (module docstring)."""


def _hull(params: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The smallest intervals that hold ``[lower, upper]`` and the estimate (NaN where the estimate is NaN)."""
    with np.errstate(invalid="ignore"):
        return np.fmin(lower, params) + 0.0 * params, np.fmax(upper, params) + 0.0 * params


def confidence_intervals(
    params: np.ndarray, cov: np.ndarray, replicates: np.ndarray | None, alpha: float, kind: str = "basic"
) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper ends at level ``1 - alpha``: the hull of the estimate and a bootstrap interval of ``kind``
    from replicates, else normal ones (module docstring)."""
    alpha = check_alpha(alpha)
    params = np.asarray(params, dtype=float)
    if replicates is not None:
        good = finite_replicates(replicates)
        if good.shape[0] < MIN_REPLICATES:
            infinite = np.where(np.isnan(params), np.nan, np.inf)
            return -infinite, infinite
        low_q, high_q = np.quantile(good, [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
        if kind == "percentile":
            return _hull(params, low_q, high_q)
        return _hull(params, 2.0 * params - high_q, 2.0 * params - low_q)
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    with np.errstate(invalid="ignore"):
        half = z * np.sqrt(np.diag(np.asarray(cov, dtype=float)))
    return params - half, params + half


def _quantile_level(sorted_values: np.ndarray, x: float, side: str) -> float:
    """Where numpy's default (linear) quantile function Q of ``sorted_values`` crosses ``x``: with ``side="left"``
    the u below which Q < x, with ``side="right"`` the u above which Q > x (they differ only where Q is flat
    at x, on tied replicates); 0 or 1 beyond the replicates."""
    k = int(np.searchsorted(sorted_values, x, side=side))
    if k == 0 or k == sorted_values.size:
        return float(k > 0)
    below, above = sorted_values[k - 1], sorted_values[k]
    return (k - 1 + (x - below) / (above - below)) / (sorted_values.size - 1)


def bootstrap_pvalues(params: np.ndarray, replicates: np.ndarray, kind: str = "basic") -> np.ndarray:
    """Two-sided p-values that invert :func:`confidence_intervals`: p < alpha exactly when 0 is outside the
    ``1 - alpha`` interval, from the same replicates.

    With the estimate inside every interval, 0 can leave only through the end on the far side of the estimate.
    For ``theta > 0`` that end is ``2 theta - Q(1 - alpha/2)`` (basic), positive when ``1 - alpha/2`` is above
    the level where Q crosses ``2 theta``, so ``p = 2 (1 - level)``; or ``Q(alpha/2)`` (percentile), positive
    when ``alpha/2`` is above the level where Q crosses 0, so ``p = 2 level``. Mirrored for ``theta < 0``;
    1 at ``theta = 0``; capped at 1. NaN where too few replicates are finite (infinite intervals: no test)
    and where the estimate is not finite.
    """
    params = np.asarray(params, dtype=float)
    good = finite_replicates(replicates)
    out = np.full(params.shape, math.nan)
    if good.shape[0] < MIN_REPLICATES:
        return out
    for j, theta in enumerate(params):
        if not math.isfinite(theta):
            continue
        column = np.sort(good[:, j])
        point = 0.0 if kind == "percentile" else 2.0 * theta
        if (theta > 0) == (kind == "percentile"):  # 0 leaves when Q at the lower level rises above the point
            tail = _quantile_level(column, point, "right")
        else:  # 0 leaves when Q at the upper level falls below the point
            tail = 1.0 - _quantile_level(column, point, "left")
        out[j] = 1.0 if theta == 0 else min(1.0, 2.0 * tail)
    return out


def pvalues(params: np.ndarray, cov: np.ndarray, replicates: np.ndarray | None, kind: str = "basic") -> np.ndarray:
    """The fit's p-values from its one law: the bootstrap's where the release carries replicates, two-sided
    normal (z) ones otherwise; NaN wherever the standard error is not finite (module docstring)."""
    if replicates is not None:
        with np.errstate(invalid="ignore"):
            tested = np.isfinite(np.sqrt(np.diag(np.asarray(cov, dtype=float))))
        return np.where(tested, bootstrap_pvalues(params, replicates, kind), math.nan)
    z = z_statistics(params, cov)
    return np.array([math.erfc(abs(v) / math.sqrt(2.0)) if math.isfinite(v) else math.nan for v in z])


def z_statistics(params: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """Estimate over standard error, NaN wherever the standard error is not finite (no test)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.sqrt(np.diag(np.asarray(cov, dtype=float)))
        return np.where(np.isfinite(se), np.asarray(params, dtype=float) / se, math.nan)


def law(replicates: np.ndarray | None, kind: str) -> str:
    """The name of a fit's reference law, as tables and summaries print it."""
    return "normal" if replicates is None else f"bootstrap ({kind})"


def nearest_psd(matrix: np.ndarray) -> np.ndarray:
    """A positive semi-definite version of a noisy symmetric matrix that keeps its (non-negative) diagonal.

    Negative diagonal entries become 0; the correlation matrix of the rest has
    its eigenvalues clipped at 0 and is rescaled to a unit diagonal, so noisy
    off-diagonal entries cannot inflate the variances, as clipping the
    eigenvalues of the matrix itself would (post-processing).
    """
    return nearest_psds(np.asarray(matrix, dtype=float)[None])[0]


def nearest_psds(matrices: np.ndarray) -> np.ndarray:
    """:func:`nearest_psd` of each matrix of a stack (leading axis): a coordinate without a positive diagonal
    entry gets a unit row in the correlation matrix, which leaves the eigenvalues of the rest as they were, and
    a zero row and column in the result."""
    sym = (matrices + np.swapaxes(matrices, 1, 2)) / 2.0
    diagonal = np.diagonal(sym, axis1=1, axis2=2)
    scale = np.sqrt(np.where(diagonal > 0.0, diagonal, 0.0))  # a NaN variance counts as none, as a negative one
    outer = scale[:, :, None] * scale[:, None, :]
    identity = np.broadcast_to(np.eye(scale.shape[1]), sym.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = np.where(outer > 0, sym / outer, identity)
    values, vectors = np.linalg.eigh(corr)
    corr = (vectors * np.maximum(values, 0.0)[:, None, :]) @ np.swapaxes(vectors, 1, 2)
    unit = np.sqrt(np.maximum(np.diagonal(corr, axis1=1, axis2=2), 1e-300))
    return corr / (unit[:, :, None] * unit[:, None, :]) * outer


def wald_test(
    params: np.ndarray, cov: np.ndarray, replicates: np.ndarray | None, R: np.ndarray, q: np.ndarray
) -> tuple[float, int, float, str]:
    """The Wald test of ``R theta = q`` from a release: ``(F, df, p-value, reference)``.

    ``F = W / df`` with ``W = (R theta - q)' (R V R')^{-1} (R theta - q)``, V the
    release's covariance (sampling error and privacy noise). Alabi & Vadhan
    (2023) show that the DP F-statistic of noisy sufficient statistics
    converges to the non-private one's law and calibrate it by simulation from
    the release; here the simulation is the release's own bootstrap: with
    replicates, the p-value is the share of ``W*_b`` (the statistic of
    ``theta*_b - theta``, the replicates' departure from the estimate: the law of
    W under the null) at least W, ``(1 + #) / (B + 1)``; without, ``chi2_df``.
    NaN where the covariance is NaN; F = 0 and p = 1 where it is infinite.
    """
    params, cov = np.asarray(params, dtype=float), np.asarray(cov, dtype=float)
    R = np.atleast_2d(np.asarray(R, dtype=float))
    df = R.shape[0]
    if np.isnan(cov).any() or np.isnan(params).any():
        return math.nan, df, math.nan, "none"
    if np.isinf(cov).any():
        return 0.0, df, 1.0, "none"
    middle = np.linalg.pinv(R @ cov @ R.T)
    gap = R @ params - np.asarray(q, dtype=float)
    statistic = float(gap @ middle @ gap)
    if replicates is None:
        return statistic / df, df, float(chi2.sf(statistic, df)), "chi2"
    good = finite_replicates(replicates)
    if good.shape[0] < MIN_REPLICATES:
        return statistic / df, df, 1.0, "none"
    departures = (good - params) @ R.T
    null = np.einsum("bi,ij,bj->b", departures, middle, departures)
    return statistic / df, df, float((1 + np.sum(null >= statistic)) / (null.size + 1)), "bootstrap"

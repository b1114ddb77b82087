"""Standard errors and confidence intervals from what a release reports about its own error.

A mechanism reports its uncertainty in one of two forms (both post-processing
of its release, both covering the sampling error *and* the privacy noise):

* a covariance ``cov`` of the estimates: normal (Wald) intervals;
* bootstrap ``replicates`` (B x p draws of the estimates' law around the
  released ``params``, from a model fitted to the release), with one of two
  kinds of interval (Davison & Hinkley 1997, section 5.2): ``"basic"``
  (pivotal), ``[2 theta - q_(1 - alpha/2), 2 theta - q_(alpha/2)]``, right when
  the law of the error does not depend on the parameter, as Ferrando, Wang &
  Sheldon (2022) use for parametric bootstraps of DP releases; or
  ``"percentile"``, ``[q_(alpha/2), q_(1 - alpha/2)]``, right when a monotone
  transformation makes the error symmetric and pivotal, as for a ratio whose
  noisy denominator skews it (NoisyStats). Their covariance gives the
  standard errors.

A covariance of ``inf`` marks a release whose interval part failed (a noisy
variance that came out <= 0, say): the intervals are then infinite, never
silently narrower. NaN marks a mechanism that reports no standard error.
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


def confidence_intervals(
    params: np.ndarray, cov: np.ndarray, replicates: np.ndarray | None, alpha: float, kind: str = "basic"
) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper ends at level ``1 - alpha``: a bootstrap interval of ``kind`` from replicates, else normal."""
    alpha = check_alpha(alpha)
    params = np.asarray(params, dtype=float)
    if replicates is not None:
        good = finite_replicates(replicates)
        if good.shape[0] < MIN_REPLICATES:
            infinite = np.where(np.isnan(params), np.nan, np.inf)
            return -infinite, infinite
        low_q, high_q = np.quantile(good, [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
        if kind == "percentile":
            return low_q, high_q
        return 2.0 * params - high_q, 2.0 * params - low_q
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    with np.errstate(invalid="ignore"):
        half = z * np.sqrt(np.diag(np.asarray(cov, dtype=float)))
    return params - half, params + half


def normal_pvalues(params: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """Two-sided normal (z) p-values of ``params`` with the standard errors of ``cov`` (NaN where a z is not finite)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.asarray(params, dtype=float) / np.sqrt(np.diag(np.asarray(cov, dtype=float)))
    return np.array([math.erfc(abs(v) / math.sqrt(2.0)) if np.isfinite(v) else math.nan for v in z])


def nearest_psd(matrix: np.ndarray) -> np.ndarray:
    """A positive semi-definite version of a noisy symmetric matrix that keeps its (non-negative) diagonal.

    Negative diagonal entries become 0; the correlation matrix of the rest has
    its eigenvalues clipped at 0 and is rescaled to a unit diagonal, so noisy
    off-diagonal entries cannot inflate the variances, as clipping the
    eigenvalues of the matrix itself would (post-processing).
    """
    sym = (np.asarray(matrix, dtype=float) + np.asarray(matrix, dtype=float).T) / 2.0
    scale = np.sqrt(np.maximum(np.diag(sym), 0.0))
    positive = scale > 0
    out = np.zeros_like(sym)
    if not positive.any():
        return out
    sub = sym[np.ix_(positive, positive)] / np.outer(scale[positive], scale[positive])
    values, vectors = np.linalg.eigh(sub)
    corr = (vectors * np.maximum(values, 0.0)) @ vectors.T
    unit = np.sqrt(np.maximum(np.diag(corr), 1e-300))
    corr = corr / np.outer(unit, unit)
    out[np.ix_(positive, positive)] = corr * np.outer(scale[positive], scale[positive])
    return out


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

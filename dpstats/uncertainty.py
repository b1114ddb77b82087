"""Standard errors and confidence intervals from what a release reports about its own error.

A mechanism reports its uncertainty in one of two forms (both post-processing
of its release, both covering the sampling error *and* the privacy noise):

* a covariance ``cov`` of the estimates: normal (Wald) intervals;
* bootstrap ``replicates`` (B x p draws of the estimates' law around the
  released ``params``, from a model fitted to the release): basic (pivotal)
  intervals ``[2 theta - q_(1 - alpha/2), 2 theta - q_(alpha/2)]`` (Davison &
  Hinkley 1997, eq. 5.6), as Ferrando, Wang & Sheldon (2022) recommend for
  parametric bootstraps of DP releases. Their covariance gives the standard
  errors.

A covariance of ``inf`` marks a release whose interval part failed (a noisy
variance that came out <= 0, say): the intervals are then infinite, never
silently narrower. NaN marks a mechanism that reports no standard error.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

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


def replicate_covariance(replicates: np.ndarray) -> np.ndarray:
    """Covariance of the finite replicates (infinite if too few are finite)."""
    good = finite_replicates(replicates)
    p = replicates.shape[1]
    if good.shape[0] < MIN_REPLICATES:
        return infinite_cov(p)
    return np.atleast_2d(np.cov(good, rowvar=False))


def confidence_intervals(
    params: np.ndarray, cov: np.ndarray, replicates: np.ndarray | None, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper ends at level ``1 - alpha``: basic bootstrap from replicates, else normal from ``cov``."""
    alpha = check_alpha(alpha)
    params = np.asarray(params, dtype=float)
    if replicates is not None:
        good = finite_replicates(replicates)
        if good.shape[0] < MIN_REPLICATES:
            infinite = np.where(np.isnan(params), np.nan, np.inf)
            return -infinite, infinite
        low_q, high_q = np.quantile(good, [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
        return 2.0 * params - high_q, 2.0 * params - low_q
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    with np.errstate(invalid="ignore"):
        half = z * np.sqrt(np.diag(np.asarray(cov, dtype=float)))
    return params - half, params + half


def nearest_psd(matrix: np.ndarray) -> np.ndarray:
    """The symmetric matrix's eigenvalues clipped at 0 (post-processing of a noisy covariance)."""
    sym = (np.asarray(matrix, dtype=float) + np.asarray(matrix, dtype=float).T) / 2.0
    values, vectors = np.linalg.eigh(sym)
    return (vectors * np.maximum(values, 0.0)) @ vectors.T

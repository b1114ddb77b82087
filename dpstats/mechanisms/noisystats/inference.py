"""Standard errors and intervals for NoisyStats: a budgeted sandwich and a parametric bootstrap.

The estimate is ``b~ = (S_xx + E)^{-1} (S_xy + e)`` (and the intercept), so its
error is the sampling error of least squares plus the privacy noise pushed
through the inverse. Both parts are reported:

1. **Sampling error, released.** With the share ``se_share`` of the budget,
   two Laplace releases: the sums of the slope columns (``sum_i u_i``,
   sensitivity 1 each on the unit scale, a tenth of the share), whose means c
   centre the columns; then the upper triangle of the HC meat
   ``sum_i r_i^2 w_i w_i'`` with ``w_i = (1, u_i - c)`` and residuals at the
   released estimate, bounded by ``R`` (dpstats/sandwich.py: the weighted
   release, its sensitivity, and the shrinkage of noise-swamped entries
   towards the homoskedastic meat). With the released S_xx these give the
   bread and the HC1 sandwich of (intercept, slopes): White's (1980)
   heteroskedasticity-robust covariance, from noisy statistics as Barrientos
   et al. (2024) release a noisy residual variance beside X'X and X'y.
   Without an intercept the bread is the released X'X and the meat is
   released alone, unweighted and unshrunk (there is no constant column to
   shrink towards).
2. **Privacy noise, simulated.** The parametric bootstrap of Ferrando, Wang &
   Sheldon (2022), at the level of the sufficient statistics: treating the
   release as the truth, draw least-squares estimates ``b* ~ N(b~, V)`` from
   the sandwich, their statistics ``S_xy* = S~_xx b*``, fresh noise ``E*, e*``
   of the mechanism's scales, and refit exactly as the mechanism does, the
   intercept's noise included. The B refits (all at once: one batched solve)
   are post-processing of the release and cost no budget; a refit whose noisy
   S_xx is not positive definite is the mechanism's failure and is dropped, as
   the release itself succeeded. Intervals are the basic bootstrap ones
   (dpstats/uncertainty.py), standard errors the replicates' spread.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import noise, sandwich
from ...uncertainty import infinite_cov, replicate_covariance

DEFAULT_SHARE = 0.2
"""The part of eps spent on the sandwich unless the user sets ``se_share``."""
REPLICATES = 1000
"""Bootstrap refits (public)."""


SUM_SHARE = 0.1
"""The part of the standard errors' budget spent on the column sums."""


@dataclass(frozen=True)
class CenteredSandwich:
    """The standard errors' releases for a model with an intercept, on the unit scale."""

    u_sum: np.ndarray
    centre: np.ndarray
    meat: np.ndarray
    noise_variance: np.ndarray


def release_centered_sandwich(
    rng: np.random.Generator, U: np.ndarray, v: np.ndarray, coef_unit: np.ndarray, eps: float
) -> CenteredSandwich:
    """Noisy ``sum_i u_i``, then the weighted HC meat of rows ``(1, u_i - c)``, at budget eps in all.

    ``coef_unit`` = (intercept, slopes) on the unit scale, already released;
    c = the noisy means clipped to [0, 1], public once released.
    """
    n, p = U.shape
    eps_sum = eps * SUM_SHARE
    eps_meat = eps - eps_sum
    u_sum = np.atleast_1d(noise.laplace_mechanism(rng, U.sum(axis=0), float(p), eps_sum, "SE: sum(x)"))
    centre = np.clip(u_sum / n, 0.0, 1.0)
    W = np.column_stack([np.ones(n), U - centre])
    box = np.vstack([[1.0, 1.0], np.column_stack([-centre, 1.0 - centre])])
    coef_centred = np.concatenate([[coef_unit[0] + coef_unit[1:] @ centre], coef_unit[1:]])
    bound = sandwich.residual_bound(coef_centred, box, (0.0, 1.0))
    residuals = sandwich.clipped_residuals(v, W @ coef_centred, bound)
    weights = sandwich.meat_weights(p + 1, 0)
    sensitivity = sandwich.meat_sensitivity(box, bound, weights)
    noisy = noise.laplace_mechanism(rng, weights * sandwich.meat(W, residuals), sensitivity, eps_meat, "SE: HC meat")
    return CenteredSandwich(
        u_sum=u_sum,
        centre=centre,
        meat=sandwich.from_upper_triangle(np.atleast_1d(noisy) / weights, p + 1),
        noise_variance=2.0 * (sensitivity / eps_meat / weights) ** 2,
    )


def centered_covariance(released: CenteredSandwich, s_xx: np.ndarray, n: int) -> np.ndarray:
    """HC1 covariance of (intercept, slopes) on the unit scale from the releases (post-processing).

    In the centred coordinates ``(a + b'c, b)`` the bread is
    ``[[n, sum(u) - n c], [., S_xx + n (u_bar - c)(u_bar - c)']]``; the
    covariance is mapped back by ``a = a_c - b'c``.
    """
    c, p = released.centre, released.centre.size
    offset = released.u_sum / n - c
    bread = np.empty((p + 1, p + 1))
    bread[0, 0] = n
    bread[0, 1:] = bread[1:, 0] = n * offset
    bread[1:, 1:] = s_xx + n * np.outer(offset, offset)
    meat = sandwich.shrink_to_homoskedastic(released.meat, released.noise_variance, bread, 0)
    cov_centred = sandwich.hc_covariance(bread, meat, n)
    back = np.eye(p + 1)
    back[0, 1:] = -c
    return back @ cov_centred @ back.T


def _normal_draws(rng: np.random.Generator, mean: np.ndarray, cov: np.ndarray, size: int) -> np.ndarray:
    """``size`` draws of N(mean, cov) for a PSD ``cov`` (its symmetric square root)."""
    values, vectors = np.linalg.eigh(cov)
    root = vectors * np.sqrt(np.maximum(values, 0.0))
    return mean + noise.gaussian(rng, 1.0, (size, mean.size)) @ root.T


def _noisy_solve(
    rng: np.random.Generator, s_xx: np.ndarray, targets: np.ndarray, xx_scale: float, xy_scale: float
) -> np.ndarray:
    """Refits ``(S + E*)^{-1} (S b* + e*)`` for each row b* of ``targets``; NaN where S + E* is not PD."""
    size, p = targets.shape
    upper = noise.laplace(rng, xx_scale, (size, p * (p + 1) // 2))
    E = np.zeros((size, p, p))
    rows, cols = np.triu_indices(p)
    E[:, rows, cols] = upper
    E[:, cols, rows] = upper
    S = s_xx + E
    rhs = targets @ s_xx + noise.laplace(rng, xy_scale, (size, p))
    definite = np.linalg.eigvalsh(S)[:, 0] > 0
    out = np.full((size, p), np.nan)
    if definite.any():
        out[definite] = np.linalg.solve(S[definite], rhs[definite][..., None])[..., 0]
    return out


def centered_replicates(
    rng: np.random.Generator,
    coef_unit: np.ndarray,
    cov_unit: np.ndarray,
    s_xx: np.ndarray,
    u_bar: np.ndarray,
    n: int,
    scales: tuple[float, float, float],
) -> np.ndarray:
    """Bootstrap refits of (intercept, slopes) on the unit scale (module docstring, step 2).

    ``scales`` are the Laplace scales of S_xx's entries, S_xy's entries and
    the intercept's ``1 / (n eps_3)`` factor (times ``1 + sum |b~|``).
    """
    xx_scale, xy_scale, intercept_scale = scales
    draws = _normal_draws(rng, coef_unit, cov_unit, REPLICATES)
    a_s, b_s = draws[:, 0], draws[:, 1:]
    b_t = _noisy_solve(rng, s_xx, b_s, xx_scale, xy_scale)
    spread = intercept_scale * (1.0 + np.abs(b_t).sum(axis=1))
    a_t = a_s + (b_s - b_t) @ u_bar + noise.laplace(rng, 1.0, REPLICATES) * spread
    return np.column_stack([a_t, b_t])


def origin_replicates(
    rng: np.random.Generator,
    coef: np.ndarray,
    cov: np.ndarray,
    xtx: np.ndarray,
    scales: tuple[float, float],
) -> np.ndarray:
    """Bootstrap refits of the coefficients on the scaled problem without an intercept."""
    draws = _normal_draws(rng, coef, cov, REPLICATES)
    return _noisy_solve(rng, xtx, draws, scales[0], scales[1])


def user_replicates(replicates_unit: np.ndarray, jacobian: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """Replicates mapped to the user's units by the affine map of the estimate itself."""
    return replicates_unit @ jacobian.T + offset


def covariance_or_infinite(cov_unit: np.ndarray, replicates: np.ndarray) -> np.ndarray:
    """The replicates' covariance, or infinite variances where the sandwich said nothing."""
    if not np.all(np.isfinite(cov_unit)):
        return infinite_cov(replicates.shape[1])
    return replicate_covariance(replicates)

"""Standard errors and intervals for NoisyStats: a budgeted sandwich and a parametric bootstrap.

The estimate is ``b~ = (S_xx + E)^{-1} (S_xy + e)`` (and the intercept), so its
error is the sampling error of least squares plus the privacy noise pushed
through the inverse. Both parts are reported:

1. **Sampling error, released.** With the share ``se_share`` of the budget:
   the sums of the slope columns (``sum_i u_i``, sensitivity 1 each on the
   unit scale, :data:`SUM_SHARE` of the share), whose means c centre the
   columns; then the HC meat ``sum_i r_i^2 w_i w_i'`` of the rows
   ``w_i = (1, u_i - c)`` with residuals at the released estimate, bounded by R:
   its residual sum of squares alone, then its other entries
   (dpstats/uncertainty/sandwich.py: the releases, their sensitivities, the correction for
   the residuals' privacy noise and the shrinkage of noise-swamped entries
   towards the homoskedastic meat). With the released S_xx these give the
   bread and the HC1 sandwich of (intercept, slopes): White's (1980)
   heteroskedasticity-robust covariance, from noisy statistics as Barrientos
   et al. (2024) release a noisy residual variance beside X'X and X'y.
   Without an intercept the bread is the released X'X and the meat is
   released in one piece (there is no constant column to shrink towards).
2. **Privacy noise, simulated.** The parametric bootstrap of Ferrando, Wang &
   Sheldon (2022), at the level of the sufficient statistics: treating the
   release as the truth, draw least-squares estimates ``b* ~ N(b~, V)`` from
   the sandwich, their statistics ``S_xy* = S~_xx b*``, fresh noise ``E*, e*``
   of the mechanism's scales, and refit exactly as the mechanism does, the
   intercept's noise included. The B refits (all at once: one batched solve)
   are post-processing of the release and cost no budget; a refit whose noisy
   S_xx is not positive definite is the mechanism's failure and is dropped, as
   the release itself succeeded. With ``singular="repair"`` every refit's
   matrix is repaired as the release's was, at the same public floor, and the
   repaired release is the truth the refits start from
   (dpstats/mechanisms/noisystats/repair.py), so the replicates have the
   repaired estimator's law. Standard errors are the replicates' spread.
3. **Percentile intervals** (dpstats/uncertainty/intervals.py). The error is a ratio
   with a noisy denominator, skewed by the noise; the basic interval reflects
   that skew the wrong way and over-covers once the noise in S_xx is a tenth
   of S_xx or more (simulated with the exact noise laws: at 15% relative noise
   the basic interval covers 0.99, the percentile one 0.95), while the two
   agree where S_xx is well determined. Measured by
   benchmarks/bench_coverage.py.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ...design.units import Units
from ...privacy import noise
from ...uncertainty import cluster_meat, sandwich
from ...uncertainty.intervals import infinite_cov, replicate_covariance
from . import repair, structured

DEFAULT_SHARE = 0.2
"""The part of eps spent on the sandwich unless the user sets ``se_share``."""
REPLICATES = 1000
"""Bootstrap refits (public)."""


UnitStatistic = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""Sums of the rows ``(U, v)`` on the unit scale: what the standard errors read from the data."""
ClusteredStatistic = Callable[[np.ndarray, np.ndarray, Units], np.ndarray]
"""Sums by unit of the rows ``(U, v)``, given the units of those rows (on a Dask DataFrame, a partition's)."""


class UnitRows(Protocol):
    """A statistic of the unit-scale rows summed over all of them (``Design.total``, dpstats/design/moments.py);
    ``by_unit``: a :data:`ClusteredStatistic`, given the units of the rows it sums."""

    def __call__(self, statistic: UnitStatistic | ClusteredStatistic, by_unit: bool = False) -> np.ndarray: ...


SUM_SHARE = 0.1
"""With an intercept, the part of the standard errors' budget spent on the column sums."""


def centered_split(eps: float, p: int, sums: bool = True) -> tuple[tuple[str, float], ...]:
    """The standard errors' releases with an intercept and their budgets: the sums (unless known), the meat's."""
    if not sums:
        return sandwich.meat_split(eps, p + 1, 0)
    return (("SE: sum(x)", eps * SUM_SHARE), *sandwich.meat_split(eps * (1.0 - SUM_SHARE), p + 1, 0))


@dataclass(frozen=True)
class CenteredSandwich:
    """The standard errors' releases for a model with an intercept, on the unit scale."""

    u_sum: np.ndarray
    centre: np.ndarray
    meat: sandwich.NoisyMeat


def release_centered_sandwich(
    rng: np.random.Generator,
    rows: UnitRows,
    n: int,
    coef_unit: np.ndarray,
    eps: float,
    blocks: tuple[tuple[int, ...], ...] = (),
    *,
    u_sum: np.ndarray,
    sums_released: bool = False,
    units: Units | None = None,
) -> CenteredSandwich:
    """Noisy ``sum_i u_i``, then the meat of rows ``(1, u_i - c)``, at budget eps in all (:func:`centered_split`).

    ``coef_unit`` = (intercept, slopes) on the unit scale, already released;
    c = the noisy means clipped to [0, 1], public once released. ``u_sum``
    are the exact column sums, released here with noise, or sums that were
    already released (``sums_released``: the first row of a released
    ``W'W``), which are not released again. The meat's sensitivity uses the
    rows' one-hot ``blocks`` too (dpstats/uncertainty/sandwich.py, ``row_norms``); its
    statistic is summed by ``rows`` (a second pass over the data). With ``units`` (the
    privacy unit holds up to k of the rows: its name, number and k) the sums' sensitivity is k p
    and the meat is summed by unit, with its unit-level widths (dpstats/uncertainty/cluster_meat.py), by the
    units ``rows`` gives each of its chunks of rows (on a Dask DataFrame, each partition's).
    """
    p = u_sum.size
    reach = 1 if units is None else units.max_rows
    eps_sum = 0.0 if sums_released else eps * SUM_SHARE
    if not sums_released:
        u_sum = np.atleast_1d(noise.laplace_mechanism(rng, u_sum, float(p * reach), eps_sum, "SE: sum(x)"))
    centre = np.clip(u_sum / n, 0.0, 1.0)
    box = np.vstack([[1.0, 1.0], np.column_stack([-centre, 1.0 - centre])])
    coef_centred = _centred(coef_unit, centre)
    bound = sandwich.residual_bound(coef_centred, box, (0.0, 1.0))
    norms = sandwich.row_norms(p, blocks, centre)
    if units is None:
        full = rows(functools.partial(centred_meat, centre, coef_centred, bound))
        released = sandwich.release_meat_sums(rng, full, box, bound, eps - eps_sum, 0, norms)
    else:  # a unit's score is bounded as one row's with residual bound k R (dpstats/uncertainty/cluster_meat.py)
        full = rows(functools.partial(clustered_centred_meat, centre, coef_centred, bound), by_unit=True)
        widths = cluster_meat.unit_widths(box, bound, units.max_rows)
        reach = units.max_rows * bound
        released = sandwich.release_meat_sums(rng, full, box, reach, eps - eps_sum, 0, norms, widths=widths)
    return CenteredSandwich(u_sum=u_sum, centre=centre, meat=released)


def centred_meat(
    centre: np.ndarray, coef_centred: np.ndarray, bound: float, U: np.ndarray, v: np.ndarray
) -> np.ndarray:
    """The meat's upper triangle of the rows ``w = (1, u - c)``, residuals at ``coef_centred`` clipped at ``bound``."""
    W = np.column_stack([np.ones(U.shape[0]), U - centre])
    return sandwich.meat(W, sandwich.clipped_residuals(v, W @ coef_centred, bound))


def clustered_centred_meat(
    centre: np.ndarray, coef_centred: np.ndarray, bound: float, U: np.ndarray, v: np.ndarray, units: Units
) -> np.ndarray:
    """As :func:`centred_meat`, summed by unit (``units.codes``: the units of these rows, in their order) before
    the outer products."""
    W = np.column_stack([np.ones(U.shape[0]), U - centre])
    residuals = sandwich.clipped_residuals(v, W @ coef_centred, bound)
    return cluster_meat.cluster_meat(W, residuals, units.codes, units.count)


def _centred(coef: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """(intercept, slopes) -> (intercept at u = c, slopes)."""
    return np.concatenate([[coef[0] + coef[1:] @ centre], coef[1:]])


def privacy_covariance(
    coef: np.ndarray, s_xx: np.ndarray, scales: tuple[float, ...], u_bar: np.ndarray | None
) -> np.ndarray:
    """Delta-method covariance of the privacy noise in the estimate (unit scale).

    ``b~ - b^ ~ S^-1 (e - E b)`` with e iid Laplace(s_xy) and E symmetric with
    iid Laplace(s_xx) upper entries, so ``Var(E b) = 2 s_xx^2 (|b|^2 I + b b' - diag(b^2))``.
    With an intercept (``u_bar`` given; ``coef = (a, b)``) ``a~ - a^ ~ -(b~ - b^)'u_bar + Lap``,
    the Laplace scale being ``scales[2] (1 + sum |b|)``.
    """
    b = coef if u_bar is None else coef[1:]
    xx, xy = scales[0], scales[1]
    inverse = np.linalg.inv(s_xx)
    middle = 2.0 * xy**2 * np.eye(b.size) + 2.0 * xx**2 * (b @ b * np.eye(b.size) + np.outer(b, b) - np.diag(b * b))
    v_b = inverse @ middle @ inverse.T
    if u_bar is None:
        return v_b
    out = np.empty((b.size + 1, b.size + 1))
    out[1:, 1:] = v_b
    out[1:, 0] = out[0, 1:] = -v_b @ u_bar
    out[0, 0] = u_bar @ v_b @ u_bar + 2.0 * (scales[2] * (1.0 + np.abs(b).sum())) ** 2
    return out


def centered_covariance(
    released: CenteredSandwich, s_xx: np.ndarray, n: int, privacy_cov: np.ndarray, clusters: int | None = None
) -> np.ndarray:
    """HC1 covariance of (intercept, slopes) on the unit scale from the releases (post-processing); CR1 with
    ``clusters`` units, for a meat summed by unit.

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
    to_centred = np.eye(p + 1)
    to_centred[0, 1:] = c
    meat = sandwich.robust_meat(released.meat, bread, to_centred @ privacy_cov @ to_centred.T, n, 0)
    cov_centred = sandwich.hc_covariance(bread, meat, n, clusters)
    back = np.eye(p + 1)
    back[0, 1:] = -c
    return back @ cov_centred @ back.T


def normal_draws(rng: np.random.Generator, mean: np.ndarray, cov: np.ndarray, size: int) -> np.ndarray:
    """``size`` draws of N(mean, cov) for a PSD ``cov`` (its symmetric square root)."""
    values, vectors = np.linalg.eigh(cov)
    root = vectors * np.sqrt(np.maximum(values, 0.0))
    return mean + noise.gaussian(rng, 1.0, (size, mean.size)) @ root.T


def _noisy_solve(
    rng: np.random.Generator,
    s_xx: np.ndarray,
    targets: np.ndarray,
    scales: tuple[float, float],
    floor: float | None,
) -> np.ndarray:
    """Refits ``(S + E*)^{-1} (S b* + e*)`` for each row b* of ``targets``, S + E* repaired at ``floor``.

    Without a floor (``singular="fail"``), NaN where S + E* is not PD.
    """
    size, p = targets.shape
    S = s_xx + repair.noise_matrices(rng, scales[0], p, *repair.upper_pattern(p), size)
    rhs = targets @ s_xx + noise.laplace(rng, scales[1], (size, p))
    return repair.solve_refits(S, rhs, floor)


def centered_replicates(
    rng: np.random.Generator,
    coef_unit: np.ndarray,
    cov_unit: np.ndarray,
    s_xx: np.ndarray,
    u_bar: np.ndarray,
    scales: tuple[float, float, float],
    floor: float | None = None,
) -> np.ndarray:
    """Bootstrap refits of (intercept, slopes) on the unit scale (module docstring, step 2).

    ``scales`` are the Laplace scales of S_xx's entries, S_xy's entries and
    the intercept's ``1 / (n eps_3)`` factor (times ``1 + sum |b~|``);
    ``floor`` the repair's (dpstats/mechanisms/noisystats/repair.py), None for none.
    """
    intercept_scale = scales[2]
    draws = normal_draws(rng, coef_unit, cov_unit, REPLICATES)
    a_s, b_s = draws[:, 0], draws[:, 1:]
    b_t = _noisy_solve(rng, s_xx, b_s, scales[:2], floor)
    spread = intercept_scale * (1.0 + np.abs(b_t).sum(axis=1))
    a_t = a_s + (b_s - b_t) @ u_bar + noise.laplace(rng, 1.0, REPLICATES) * spread
    return np.column_stack([a_t, b_t])


def origin_replicates(
    rng: np.random.Generator,
    coef: np.ndarray,
    cov: np.ndarray,
    xtx: np.ndarray,
    scales: tuple[float, float],
    floor: float | None = None,
) -> np.ndarray:
    """Bootstrap refits of the coefficients on the scaled problem without an intercept."""
    draws = normal_draws(rng, coef, cov, REPLICATES)
    return _noisy_solve(rng, xtx, draws, scales, floor)


Uncertainty = tuple[np.ndarray, np.ndarray | None]
"""The covariance of the estimates and the bootstrap replicates (None where the covariance is not finite)."""


def centered_uncertainty(
    rng: np.random.Generator,
    released: CenteredSandwich,
    coef_unit: np.ndarray,
    s_xx: np.ndarray,
    n: int,
    scales: tuple[float, float, float],
    to_user: tuple[np.ndarray, np.ndarray, np.ndarray],
    floor: float | None = None,
    clusters: int | None = None,
) -> Uncertainty:
    """Covariance and replicates in the user's units, design order (post-processing; never warns or raises).

    ``to_user`` = (jacobian, offset, column order) of the unit scale's
    (intercept, slopes) to the design's columns; ``s_xx`` is the matrix the
    estimate solved with (repaired at ``floor`` with ``singular="repair"``);
    ``clusters``: the number of units of a meat summed by unit (CR1).
    """
    jacobian, offset, order = to_user
    p = coef_unit.size
    with np.errstate(all="ignore"):
        inputs = (released.u_sum, released.meat.meat, s_xx, coef_unit)
        if not all(np.all(np.isfinite(a)) for a in inputs):
            return infinite_cov(p), None
        privacy_cov = privacy_covariance(coef_unit, s_xx, scales, released.u_sum / n)
        cov_unit = centered_covariance(released, s_xx, n, privacy_cov, clusters)
        if not np.all(np.isfinite(cov_unit)):
            return infinite_cov(p), None
        draws = centered_replicates(rng, coef_unit, cov_unit, s_xx, released.u_sum / n, scales, floor)
        return finish((draws @ jacobian.T + offset)[:, order])


def structured_uncertainty(
    rng: np.random.Generator,
    released: CenteredSandwich,
    coef_unit: np.ndarray,
    wtw: np.ndarray,
    layout: structured.Layout,
    noise_scale: float,
    n: int,
    to_user: tuple[np.ndarray, np.ndarray, np.ndarray],
    floor: float | None = None,
    clusters: int | None = None,
) -> Uncertainty:
    """As :func:`centered_uncertainty` for the release of :mod:`.structured` (``wtw`` as released)."""
    jacobian, offset, order = to_user
    p = coef_unit.size
    with np.errstate(all="ignore"):
        if not all(np.all(np.isfinite(a)) for a in (released.meat.meat, wtw, coef_unit)):
            return infinite_cov(p), None
        privacy_cov = structured.privacy_covariance(coef_unit, wtw, layout, noise_scale)
        u_total = layout.totals(wtw)[1:]
        s_xx = wtw[1:, 1:] - np.outer(u_total, u_total) / n
        cov_unit = centered_covariance(released, s_xx, n, privacy_cov, clusters)
        if not np.all(np.isfinite(cov_unit)):
            return infinite_cov(p), None
        draws = normal_draws(rng, coef_unit, cov_unit, REPLICATES)
        refits = structured.noisy_refits(rng, wtw, draws, layout, noise_scale, floor)
        return finish((refits @ jacobian.T + offset)[:, order])


def origin_uncertainty(
    rng: np.random.Generator,
    released: sandwich.NoisyMeat,
    coef: np.ndarray,
    xtx: np.ndarray,
    n: int,
    scales: tuple[float, float],
    to_user: np.ndarray,
    floor: float | None = None,
    clusters: int | None = None,
) -> Uncertainty:
    """As :func:`centered_uncertainty` without an intercept; ``to_user`` scales each coefficient."""
    p = coef.size
    with np.errstate(all="ignore"):
        if not all(np.all(np.isfinite(a)) for a in (released.meat, xtx, coef)):
            return infinite_cov(p), None
        privacy_cov = privacy_covariance(coef, xtx, scales, None)
        meat = sandwich.robust_meat(released, xtx, privacy_cov, n, None)
        cov = sandwich.hc_covariance(xtx, meat, n, clusters)
        if not np.all(np.isfinite(cov)):
            return infinite_cov(p), None
        return finish(origin_replicates(rng, coef, cov, xtx, scales, floor) * to_user)


def finish(replicates: np.ndarray) -> Uncertainty:
    """The replicates' covariance with the replicates, or infinite variances and none if too few are finite."""
    cov = replicate_covariance(replicates)
    return (cov, replicates) if np.all(np.isfinite(cov)) else (cov, None)

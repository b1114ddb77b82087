"""The standard errors' releases of NoisyStats for many groups at once: column sums and the HC meat.

Per group this is :func:`.inference.release_centered_sandwich` on the
group's m_g rows (Alabi et al. 2022 NoisyStats' point release first, then
the budgeted sandwich of dpstats/uncertainty/sandwich.py: White 1980's HC
meat from noisy moments): the noisy column sums ``sum_i u_i`` (sensitivity
p, :data:`.inference.SUM_SHARE` of the share), the centre c = the noisy
means clipped to [0, 1], the residual bound R at the released estimate
(:func:`dpstats.uncertainty.sandwich.residual_bound`), the meat of the rows
``(1, u_i - c)`` with residuals clipped at R, its residual sum of squares
alone and its other entries weighted, each at the smaller of its two
sensitivities (:func:`dpstats.uncertainty.sandwich.release_meat_sums`). The
same statistics, sensitivities, budgets and noise scales, computed for all
groups at once: each release is one vector over the groups, divided by each
group's sensitivity before the noise (:func:`.grouped_noise.release_per_group`), so that
it records the claim of ``changed_groups`` changed groups.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...uncertainty import sandwich
from . import inference
from .grouped_noise import release_per_group


@dataclass(frozen=True)
class GroupSandwiches:
    """Every group's released column sums, centre and meat (G x (p+1) x (p+1)) with each upper entry's noise
    variance (G x entries): :class:`.inference.CenteredSandwich` with a leading group axis."""

    u_sum: np.ndarray
    centre: np.ndarray
    meat: np.ndarray
    noise_variance: np.ndarray


def residual_bounds(coef_centred: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """:func:`sandwich.residual_bound` of each group, rows ``(1, u - c)`` in their box, the response in [0, 1]."""
    b = coef_centred[:, 1:]
    low, high = np.minimum(-centre * b, (1.0 - centre) * b), np.maximum(-centre * b, (1.0 - centre) * b)
    fit_lo, fit_hi = coef_centred[:, 0] + low.sum(axis=1), coef_centred[:, 0] + high.sum(axis=1)
    exact = np.maximum(1.0 - fit_lo, fit_hi)
    cap = sandwich.RESIDUAL_CAP
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(exact), np.minimum(exact, cap), cap)


def entry_widths(centre: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """:func:`sandwich.entry_widths` of each group's box (intercept column [1, 1], slope j [-c_j, 1 - c_j])."""
    G, p = centre.shape
    lo = np.column_stack([np.ones(G), -centre])
    hi = np.column_stack([np.ones(G), 1.0 - centre])
    rows, cols = np.triu_indices(p + 1)
    corners = np.stack([lo[:, rows] * lo[:, cols], lo[:, rows] * hi[:, cols], hi[:, rows] * lo[:, cols],
                        hi[:, rows] * hi[:, cols]])  # fmt: skip
    e_lo, e_hi = corners.min(axis=0), corners.max(axis=0)
    square = (rows == cols)[None, :]  # bounds.power(., 2): exact, 0 inside an interval that holds 0
    holds_zero = (lo[:, rows] < 0) & (hi[:, rows] > 0)
    e_lo = np.where(square, np.where(holds_zero, 0.0, np.minimum(lo[:, rows] ** 2, hi[:, rows] ** 2)), e_lo)
    e_hi = np.where(square, np.maximum(lo[:, rows] ** 2, hi[:, rows] ** 2), e_hi)
    r2 = (bound**2)[:, None]
    ends = np.stack([e_lo * 0.0, e_lo * r2, e_hi * 0.0, e_hi * r2])  # bounds.product(entry, [0, R^2])
    return ends.max(axis=0) - ends.min(axis=0)


def meats(U: np.ndarray, v: np.ndarray, sizes: np.ndarray, centre: np.ndarray, coef: np.ndarray, bound: np.ndarray):
    """Each group's exact :func:`.inference.centred_meat` upper triangle (G x entries), rows group by group.

    The rows are ``w = (1, u - c)``; each fitted value is summed term by term, the intercept first, and the
    products of the intercept's column (1) are the other column's exactly, so no column of ones is built.
    """
    p = U.shape[1]
    w = U.T - np.repeat(centre.T, sizes, axis=1)  # p x n: w[j] is the column of slope j
    fitted = np.repeat(coef[:, 0], sizes)
    for j in range(p):
        fitted += w[j] * np.repeat(coef[:, j + 1], sizes)
    r2 = sandwich.clipped_residuals(v, fitted, np.repeat(bound, sizes)) ** 2
    products = np.empty(((p + 1) * (p + 2) // 2, U.shape[0]))
    for entry, (i, j) in enumerate(zip(*np.triu_indices(p + 1), strict=True)):
        if j == 0:  # (1 * 1) r^2
            products[entry] = r2
        elif i == 0:  # (1 * w_j) r^2
            np.multiply(w[j - 1], r2, out=products[entry])
        else:
            np.multiply(w[i - 1], w[j - 1], out=products[entry])
            products[entry] *= r2
    return np.add.reduceat(products, np.cumsum(sizes) - sizes, axis=1).T


def release(
    rng: np.random.Generator,
    U: np.ndarray,
    v: np.ndarray,
    sizes: np.ndarray,
    coef_unit: np.ndarray,
    eps: float,
    changed_groups: int,
) -> GroupSandwiches:
    """The groups' sums then meats at budget eps each (module docstring); ``coef_unit`` (G x (p+1)) are the
    released (intercept, slopes) on the unit scale, finite (a failed group's are any finite values: its
    releases are drawn and not used)."""
    G, p = coef_unit.shape[0], U.shape[1]
    m = sizes.astype(float)
    starts = np.cumsum(sizes) - sizes
    eps_sum = eps * inference.SUM_SHARE
    u_sum = release_per_group(rng, np.add.reduceat(U, starts, axis=0), np.ones(G), p, eps_sum, changed_groups,
                              "SE: sum(x)")  # fmt: skip
    centre = np.clip(u_sum / m[:, None], 0.0, 1.0)
    coef = np.column_stack([coef_unit[:, 0] + np.einsum("gj,gj->g", coef_unit[:, 1:], centre), coef_unit[:, 1:]])
    bound = residual_bounds(coef, centre)
    full = meats(U, v, sizes, centre, coef, bound)
    widths = entry_widths(centre, bound)
    parts = dict(sandwich.meat_split(eps - eps_sum, p + 1, 0))
    alone, rest = sandwich.MEAT_NAMES
    noisy, variance = np.empty_like(full), np.empty_like(full)
    noisy[:, 0] = release_per_group(rng, full[:, 0], widths[:, 0], 1, parts[alone], changed_groups, alone)
    variance[:, 0] = 2.0 * (widths[:, 0] / parts[alone]) ** 2
    weights = sandwich.meat_weights(p + 1, 0)[1:]
    reach = np.maximum(centre, 1.0 - centre)  # sandwich.row_norms(p, (), c): no one-hot blocks here
    l1, l2sq = reach.sum(axis=1), (reach**2).sum(axis=1)
    structured = 2.0 * bound**2 * (sandwich.INTERCEPT_WEIGHT * l1 + (l1**2 + l2sq) / 2.0)
    sensitivity = np.minimum((weights * widths[:, 1:]).sum(axis=1), structured)
    released = release_per_group(rng, weights * full[:, 1:], sensitivity, 1, parts[rest], changed_groups, rest)
    noisy[:, 1:] = released / weights
    variance[:, 1:] = 2.0 * (sensitivity[:, None] / parts[rest] / weights) ** 2
    meat = np.zeros((G, p + 1, p + 1))
    rows, cols = np.triu_indices(p + 1)
    meat[:, rows, cols] = noisy
    meat[:, cols, rows] = noisy
    return GroupSandwiches(u_sum=u_sum, centre=centre, meat=meat, noise_variance=variance)

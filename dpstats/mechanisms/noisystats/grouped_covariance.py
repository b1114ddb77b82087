"""The HC1 covariance of every group's NoisyStats estimate from its released sandwich (post-processing).

Per group this is :func:`.inference.privacy_covariance` (the delta-method
covariance of the privacy noise) and :func:`.inference.centered_covariance`:
the released meat corrected for the residuals' noise, shrunk towards the
homoskedastic meat and made positive semi-definite
(:func:`dpstats.uncertainty.sandwich.robust_meat`,
:func:`dpstats.uncertainty.intervals.nearest_psd`), then White's (1980) HC1
``n / (n - p) B^{-1} M B^{-1}`` (:func:`dpstats.uncertainty.sandwich.hc_covariance`),
on a leading group axis. A group whose inputs or result are not finite gets
infinite variances, as there.
"""

from __future__ import annotations

import numpy as np

from ...uncertainty import sandwich
from ...uncertainty.intervals import nearest_psds
from .grouped_sandwich import GroupSandwiches


def inverses(matrices: np.ndarray) -> np.ndarray:
    """Each matrix's inverse; NaN for a singular one (never raises)."""
    try:
        return np.linalg.inv(matrices)
    except np.linalg.LinAlgError:
        return np.stack([_inverse(matrix) for matrix in matrices])


def _inverse(matrix: np.ndarray) -> np.ndarray:
    """The matrix's inverse, NaN if it is singular."""
    try:
        return np.linalg.inv(matrix)
    except np.linalg.LinAlgError:
        return np.full_like(matrix, np.nan)


def _eye(G: int, q: int) -> np.ndarray:
    """G writable copies of the q x q identity."""
    return np.broadcast_to(np.eye(q), (G, q, q)).copy()


def privacy_covariances(coef: np.ndarray, s_xx: np.ndarray, scales: np.ndarray, u_bar: np.ndarray) -> np.ndarray:
    """:func:`.inference.privacy_covariance` of each group (``scales``: G x 3, ``u_bar``: G x p)."""
    G, q = coef.shape
    b, xx, xy = coef[:, 1:], scales[:, 0, None, None], scales[:, 1, None, None]
    eye = _eye(G, q - 1)
    bb = np.einsum("gj,gk->gjk", b, b)
    sq = np.einsum("gj,gj->g", b, b)[:, None, None]
    middle = 2.0 * xy**2 * eye + 2.0 * xx**2 * (sq * eye + bb - eye * (b * b)[:, None, :])
    inverse = inverses(s_xx)
    v_b = inverse @ middle @ np.swapaxes(inverse, 1, 2)
    out = np.empty((G, q, q))
    out[:, 1:, 1:] = v_b
    out[:, 1:, 0] = out[:, 0, 1:] = -np.einsum("gjk,gk->gj", v_b, u_bar)
    spread = scales[:, 2] * (1.0 + np.abs(b).sum(axis=1))
    out[:, 0, 0] = np.einsum("gj,gjk,gk->g", u_bar, v_b, u_bar) + 2.0 * spread**2
    return out


def robust_meats(released: GroupSandwiches, bread: np.ndarray, privacy_cov: np.ndarray, m: np.ndarray):
    """:func:`sandwich.robust_meat` of each group, with an intercept in column 0."""
    trace = np.einsum("gjk,gkj->g", bread, privacy_cov)
    noisy = released.meat - (trace / m)[:, None, None] * bread
    rss = np.maximum(noisy[:, 0, 0], 0.0)
    target = (rss / bread[:, 0, 0])[:, None, None] * bread
    departure = noisy - target
    q = bread.shape[1]
    rows, cols = np.triu_indices(q)
    variance = np.zeros_like(bread)
    variance[:, rows, cols] = released.noise_variance
    variance[:, cols, rows] = released.noise_variance
    with np.errstate(invalid="ignore", divide="ignore"):
        keep = np.where(variance > 0, np.maximum(0.0, 1.0 - sandwich.SHRINK * variance / departure**2), 1.0)
    return nearest_psds(target + keep * departure)


def covariances(
    released: GroupSandwiches, coef: np.ndarray, s_xx: np.ndarray, m: np.ndarray, scales: np.ndarray
) -> np.ndarray:
    """Each group's HC1 covariance of (intercept, slopes) on the unit scale (module docstring); inputs finite."""
    G, q = coef.shape
    privacy_cov = privacy_covariances(coef, s_xx, scales, released.u_sum / m[:, None])
    c = released.centre
    offset = released.u_sum / m[:, None] - c
    bread = np.empty((G, q, q))
    bread[:, 0, 0] = m
    bread[:, 0, 1:] = bread[:, 1:, 0] = m[:, None] * offset
    bread[:, 1:, 1:] = s_xx + m[:, None, None] * np.einsum("gj,gk->gjk", offset, offset)
    to_centred = _eye(G, q)
    to_centred[:, 0, 1:] = c
    centred_privacy = to_centred @ privacy_cov @ np.swapaxes(to_centred, 1, 2)
    meat = robust_meats(released, bread, centred_privacy, m)
    inverse = inverses(bread)
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = inverse @ meat @ np.swapaxes(inverse, 1, 2) * (m / (m - q))[:, None, None]
    cov = (cov + np.swapaxes(cov, 1, 2)) / 2.0
    bad = (m <= q) | ~np.all(np.isfinite(inverse), axis=(1, 2))
    cov[bad] = np.diag(np.full(q, np.inf))
    back = _eye(G, q)
    back[:, 0, 1:] = -c
    with np.errstate(invalid="ignore"):
        return back @ cov @ np.swapaxes(back, 1, 2)

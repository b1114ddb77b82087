"""The parametric bootstrap of every group's NoisyStats estimate at once (post-processing; no budget).

Per group this is :func:`.inference.centered_replicates` then
:func:`.inference.finish` (Ferrando, Wang & Sheldon 2022's parametric
bootstrap at the level of the sufficient statistics, for Alabi et al. 2022's
NoisyStats): draws ``b* ~ N(b~, V)`` from the group's HC1 covariance, fresh
noise of the group's own Laplace scales on S_xx, S_xy and the intercept,
refits through the group's repair floor or its failure rule
(dpstats/mechanisms/noisystats/repair.py), and the replicates' robust
covariance (:func:`dpstats.uncertainty.intervals.replicate_covariance`).

Common random numbers. The standardised draws (the normal vectors and the
unit Laplace noise) are drawn once, :data:`REPLICATES` of each, and every
group scales them by its own covariance root and noise scales. Each group's
replicates are then B independent draws of exactly its ungrouped bootstrap's
law; only their Monte Carlo errors are shared across groups (two groups'
standard errors err in related directions). They read only released values,
public sizes and draws independent of the data: post-processing, whatever
their joint law across groups.

:data:`REPLICATES` (public) is smaller than the ungrouped
:data:`.inference.REPLICATES` (1,000): at 400 the standard error (an
interquartile range / 1.349) has Monte Carlo relative error about
1.17 / sqrt(400) = 5.8% (3.7% at 1,000), and a 95% percentile interval's
end about 0.12 standard errors (0.085 at 1,000), which moves the coverage of
a normal estimate by less than 0.002 (a second-order effect of the ends'
jitter). tests/test_grouped_se_vectorised.py compares the two paths' laws.
"""

from __future__ import annotations

import numpy as np

from ...privacy import noise
from ...uncertainty.intervals import IQR_NORMAL, MIN_REPLICATES
from . import repair

REPLICATES = 400
"""Bootstrap refits per group in a vectorised grouped fit (public; module docstring)."""


Columns = list[np.ndarray]
"""Replicates held one coordinate at a time: q arrays of G x B (the arithmetic stays on contiguous planes)."""


def _refits(S: np.ndarray, rhs: Columns, floor: np.ndarray | None) -> Columns:
    """``S[g, b]^{-1} rhs[g, b]`` repaired at the group's floor, or NaN where S is not positive definite."""
    p = len(rhs)
    if p == 1:  # a 1 x 1 matrix: its eigenvalue is its entry
        s = S[..., 0, 0]
        if floor is not None:
            return [rhs[0] / np.maximum(s, floor[:, None])]
        with np.errstate(invalid="ignore", divide="ignore"):
            return [np.where(s > 0, rhs[0] / s, np.nan)]
    G, B = rhs[0].shape
    bound = None if floor is None else np.repeat(floor, B)[:, None]
    solved = repair.solve_refits(S.reshape(G * B, p, p), np.stack(rhs, axis=-1).reshape(G * B, p), bound)
    return list(np.moveaxis(solved.reshape(G, B, p), -1, 0))


def replicates(
    rng: np.random.Generator,
    coef: np.ndarray,
    cov: np.ndarray,
    s_xx: np.ndarray,
    u_bar: np.ndarray,
    scales: np.ndarray,
    floor: np.ndarray | None,
) -> Columns:
    """Each group's refits of (intercept, slopes) on the unit scale (q columns of G x B), common random numbers.

    ``scales`` (G x 3): the Laplace scales of S_xx's and S_xy's entries and the intercept's ``1 / (n eps_3)``;
    ``floor`` (G) the repair's, None for the failure rule; ``cov`` finite and PSD.
    """
    q = coef.shape[1]
    p = q - 1
    rows, cols = np.triu_indices(p)
    z = noise.gaussian(rng, 1.0, (REPLICATES, q))
    e_xx = noise.laplace(rng, 1.0, (REPLICATES, rows.size))
    e_xy = noise.laplace(rng, 1.0, (REPLICATES, p))
    e_a = noise.laplace(rng, 1.0, REPLICATES)
    values, vectors = np.linalg.eigh(cov)
    root = vectors * np.sqrt(np.maximum(values, 0.0))[:, None, :]
    draws = [coef[:, j, None] + sum(root[:, j, k, None] * z[:, k] for k in range(q)) for j in range(q)]
    a_s, b_s = draws[0], draws[1:]
    unit = np.zeros((REPLICATES, p, p))
    unit[:, rows, cols] = e_xx
    unit[:, cols, rows] = e_xx
    S = s_xx[:, None] + scales[:, 0, None, None, None] * unit[None]
    rhs = [sum(b_s[j] * s_xx[:, j, k, None] for j in range(p)) + scales[:, 1, None] * e_xy[:, k] for k in range(p)]
    b_t = _refits(S, rhs, floor)
    spread = scales[:, 2, None] * (1.0 + sum(np.abs(b) for b in b_t))
    a_t = a_s + sum((b_s[j] - b_t[j]) * u_bar[:, j, None] for j in range(p)) + e_a * spread
    return [a_t, *b_t]


def _quantiles(ordered: np.ndarray, count: np.ndarray, level: float) -> np.ndarray:
    """numpy's default (linear) quantile at ``level`` of each group's first ``count`` sorted values (G x B)."""
    h = (count - 1) * level
    below = np.floor(h).astype(np.intp)
    above = np.minimum(below + 1, count - 1)
    t = h - below
    a = np.take_along_axis(ordered, below[:, None], axis=1)[:, 0]
    b = np.take_along_axis(ordered, above[:, None], axis=1)[:, 0]
    with np.errstate(invalid="ignore"):
        return np.where(t >= 0.5, b - (b - a) * (1.0 - t), a + (b - a) * t)


def replicate_covariances(reps: Columns) -> np.ndarray:
    """:func:`dpstats.uncertainty.intervals.replicate_covariance` of each group's replicates (q columns, G x B)."""
    q = len(reps)
    good = np.logical_and.reduce([np.isfinite(r) for r in reps])
    count = good.sum(axis=1)
    safe = np.maximum(count, 1)
    scale, centred = [], []
    with np.errstate(invalid="ignore", divide="ignore"):
        for r in reps:
            ordered = np.sort(np.where(good, r, np.inf), axis=1)
            q1, q3 = _quantiles(ordered, safe, 0.25), _quantiles(ordered, safe, 0.75)
            low, high = _quantiles(ordered, safe, 0.01), _quantiles(ordered, safe, 0.99)
            scale.append((q3 - q1) / IQR_NORMAL)
            clipped = np.where(good, np.clip(r, low[:, None], high[:, None]), 0.0)
            centred.append(np.where(good, clipped - (clipped.sum(axis=1) / safe)[:, None], 0.0))
        moments = np.array([[np.einsum("gb,gb->g", a, b) for b in centred] for a in centred])  # q x q x G
        sd = np.sqrt(np.diagonal(moments).T)  # q x G
        corr = np.moveaxis(moments / (sd[:, None] * sd[None, :]), -1, 0)
    corr = np.where(np.isfinite(corr), corr, 0.0)
    corr[:, np.arange(q), np.arange(q)] = 1.0
    sds = np.column_stack(scale)
    cov = corr * sds[:, :, None] * sds[:, None, :]
    cov[count < MIN_REPLICATES] = np.diag(np.full(q, np.inf))
    return cov

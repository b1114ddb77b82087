"""The parametric bootstrap of every group's NoisyStats estimate at once (post-processing; no budget).

Per group this is :func:`.inference.centered_replicates` then
:func:`.inference.finish` (Ferrando, Wang & Sheldon 2022's parametric
bootstrap at the level of the sufficient statistics, for Alabi et al. 2022's
NoisyStats): draws ``b* ~ N(b~, V)`` from the group's HC1 covariance, fresh
noise of the group's own Laplace scales on S_xx, S_xy and the intercept,
refits through the group's repair floor or its failure rule
(dpstats/mechanisms/noisystats/repair.py), the refits in the user's units,
and the replicates' robust covariance
(:func:`dpstats.uncertainty.intervals.replicate_covariance`).

Common random numbers. The standardised draws (the normal vectors and the
unit Laplace noise) are drawn once, :data:`REPLICATES` of each
(:func:`standard_draws`), and every group scales them by its own covariance
root and noise scales. Each group's replicates are then B independent draws
of exactly its ungrouped bootstrap's law; only their Monte Carlo errors are
shared across groups (two groups' standard errors err in related
directions). They read only released values, public sizes and draws
independent of the data: post-processing, whatever their joint law across
groups.

Blocks. :func:`bootstrap` runs :data:`BLOCK` groups at a time, so that a
block's (groups x replicates) planes stay in the processor's cache while
the refits, the change of units, the sorts and the moments pass over them.
Every group's arithmetic is its own, so the numbers do not depend on the
block size.

:data:`REPLICATES` (public) is smaller than the ungrouped
:data:`.inference.REPLICATES` (1,000): at 400 the standard error (an
interquartile range / 1.349) has Monte Carlo relative error about
1.17 / sqrt(400) = 5.8% (3.7% at 1,000), and a 95% percentile interval's
end about 0.12 standard errors (0.085 at 1,000), which moves the coverage of
a normal estimate by less than 0.002 (a second-order effect of the ends'
jitter). tests/test_grouped_se_vectorised.py compares the two paths' laws.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...privacy import noise
from ...uncertainty.intervals import IQR_NORMAL, MIN_REPLICATES
from . import repair

REPLICATES = 400
"""Bootstrap refits per group in a vectorised grouped fit (public; module docstring)."""

BLOCK = 128
"""Groups per block of :func:`bootstrap` (module docstring): 128 x 400 doubles are 400 KB a plane."""


Columns = list[np.ndarray]
"""Replicates held one coordinate at a time: q arrays of G x B (the arithmetic stays on contiguous planes)."""


class StandardDraws(NamedTuple):
    """The draws every group shares (module docstring): normals ``z`` (q x B, one row per coordinate) and unit
    Laplace noise of S_xx's upper entries (entries x B), of S_xy (p x B) and of the intercept (B)."""

    z: np.ndarray
    e_xx: np.ndarray
    e_xy: np.ndarray
    e_a: np.ndarray


def standard_draws(rng: np.random.Generator, q: int) -> StandardDraws:
    """:data:`REPLICATES` draws of each standardised variable, in the ungrouped bootstrap's order of draws."""
    p = q - 1
    z = noise.gaussian(rng, 1.0, (REPLICATES, q))
    e_xx = noise.laplace(rng, 1.0, (REPLICATES, p * (p + 1) // 2))
    e_xy = noise.laplace(rng, 1.0, (REPLICATES, p))
    e_a = noise.laplace(rng, 1.0, REPLICATES)
    return StandardDraws(*(np.ascontiguousarray(e.T) for e in (z, e_xx, e_xy)), e_a)


def _refits(entries: Columns, rhs: Columns, floor: np.ndarray | None) -> Columns:
    """``S[g, b]^{-1} rhs[g, b]`` repaired at the group's floor, or NaN where S is not positive definite; S given
    by its upper ``entries`` (row by row, G x B each) and ``rhs`` overwritten."""
    p = len(rhs)
    if p == 1:  # a 1 x 1 matrix: its eigenvalue is its entry
        s = entries[0]
        if floor is not None:
            return [np.divide(rhs[0], np.maximum(s, floor[:, None]), out=rhs[0])]
        with np.errstate(invalid="ignore", divide="ignore"):
            np.divide(rhs[0], s, out=rhs[0])
        rhs[0][s <= 0] = np.nan  # a NaN s gave NaN already
        return rhs
    G, B = rhs[0].shape
    S = np.empty((G, B, p, p))
    for (i, j), entry in zip(_upper(p), entries, strict=True):
        S[:, :, i, j] = S[:, :, j, i] = entry
    bound = None if floor is None else np.repeat(floor, B)[:, None]
    solved = repair.solve_refits(S.reshape(G * B, p, p), np.stack(rhs, axis=-1).reshape(G * B, p), bound)
    return list(np.moveaxis(solved.reshape(G, B, p), -1, 0))


def _upper(p: int) -> list[tuple[int, int]]:
    """The upper triangle's entries row by row (``np.triu_indices``' order)."""
    return [(i, j) for i in range(p) for j in range(i, p)]


def _combination(weights: np.ndarray, planes: Columns | np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """``sum_k weights[:, k, None] * planes[k]`` (G x B; planes of B or G x B), summed in order, ``scratch`` the
    temporary."""
    out = np.multiply(weights[:, 0, None], planes[0])
    for k in range(1, weights.shape[1]):
        out += np.multiply(weights[:, k, None], planes[k], out=scratch)
    return out


def replicates(
    draws: StandardDraws,
    coef: np.ndarray,
    root: np.ndarray,
    s_xx: np.ndarray,
    u_bar: np.ndarray,
    scales: np.ndarray,
    floor: np.ndarray | None,
) -> Columns:
    """Each group's refits of (intercept, slopes) on the unit scale (q columns of G x B) from the shared draws.

    ``root`` (G x q x q) is the square root of each group's covariance (:func:`covariance_roots`); ``scales``
    (G x 3) the Laplace scales of S_xx's and S_xy's entries and the intercept's ``1 / (n eps_3)``; ``floor``
    (G) the repair's, None for the failure rule.
    """
    q = coef.shape[1]
    p = q - 1
    scratch = np.empty((coef.shape[0], REPLICATES))
    drawn = []
    for j in range(q):
        column = _combination(root[:, j], draws.z, scratch)
        column += coef[:, j, None]
        drawn.append(column)
    a_s, *b_s = drawn
    entries = []
    for (i, j), unit in zip(_upper(p), draws.e_xx, strict=True):
        entry = np.multiply(scales[:, 0, None], unit)
        entry += s_xx[:, i, j, None]
        entries.append(entry)
    rhs = []
    for k in range(p):
        column = _combination(s_xx[:, :, k], b_s, scratch)
        column += np.multiply(scales[:, 1, None], draws.e_xy[k], out=scratch)
        rhs.append(column)
    b_t = _refits(entries, rhs, floor)
    spread = np.abs(b_t[0])
    for b in b_t[1:]:
        spread += np.abs(b, out=scratch)
    spread += 1.0
    spread *= scales[:, 2, None]
    a_t = np.subtract(b_s[0], b_t[0])
    a_t *= u_bar[:, 0, None]
    for j in range(1, p):
        np.subtract(b_s[j], b_t[j], out=scratch)
        a_t += np.multiply(scratch, u_bar[:, j, None], out=scratch)
    a_t += a_s
    spread *= draws.e_a
    a_t += spread
    return [a_t, *b_t]


def covariance_roots(cov: np.ndarray) -> np.ndarray:
    """Each PSD covariance's symmetric square root (:func:`.inference.normal_draws`'), G x q x q."""
    values, vectors = np.linalg.eigh(cov)
    return vectors * np.sqrt(np.maximum(values, 0.0))[:, None, :]


def _quantiles(ordered: np.ndarray, count: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """numpy's default (linear) quantiles at ``levels`` (L) of each group's first ``count`` sorted values, for
    every column of ``ordered`` (q x G x B): q x L x G."""
    h = (count - 1) * levels[:, None]
    below = np.floor(h).astype(np.intp)
    above = np.minimum(below + 1, count - 1)
    t = h - below
    groups = np.arange(count.size)
    a, b = ordered[:, groups, below], ordered[:, groups, above]
    with np.errstate(invalid="ignore"):
        return np.where(t >= 0.5, b - (b - a) * (1.0 - t), a + (b - a) * t)


LEVELS = np.array([0.25, 0.75, 0.01, 0.99])
"""The quantiles :func:`replicate_covariances` reads: the quartiles and the winsorising levels."""


def replicate_covariances(reps: np.ndarray) -> np.ndarray:
    """:func:`dpstats.uncertainty.intervals.replicate_covariance` of each group's replicates (q x G x B, one
    plane per coordinate)."""
    q = reps.shape[0]
    good = np.logical_and.reduce(np.isfinite(reps), axis=0)
    bad = np.flatnonzero(~good)
    count = good.sum(axis=1)
    safe = np.maximum(count, 1)
    ordered = reps.copy()
    ordered.reshape(q, -1)[:, bad] = np.inf
    ordered.sort(axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        q1, q3, low, high = np.moveaxis(_quantiles(ordered, safe, LEVELS), 1, 0)
        scale = (q3 - q1) / IQR_NORMAL
        centred = np.maximum(reps, low[:, :, None], out=ordered)  # np.clip's arithmetic
        np.minimum(centred, high[:, :, None], out=centred)
        centred.reshape(q, -1)[:, bad] = 0.0
        centred -= (centred.sum(axis=2) / safe)[:, :, None]
        centred.reshape(q, -1)[:, bad] = 0.0
        moments = np.empty((q, q, count.size))
        for i, j in _upper(q):
            moments[i, j] = moments[j, i] = np.einsum("gb,gb->g", centred[i], centred[j])
        sd = np.sqrt(np.diagonal(moments).T)  # q x G
        corr = np.moveaxis(moments / (sd[:, None] * sd[None, :]), -1, 0)
    corr = np.where(np.isfinite(corr), corr, 0.0)
    corr[:, np.arange(q), np.arange(q)] = 1.0
    cov = corr * scale.T[:, :, None] * scale.T[:, None, :]
    cov[count < MIN_REPLICATES] = np.diag(np.full(q, np.inf))
    return cov


def _to_user(unit: Columns, weights: np.ndarray, offset: float, out: np.ndarray) -> None:
    """``out = offset + sum_k weights[k] unit[k]`` over the nonzero weights (a row of the unit scale's jacobian;
    the sum in order, a zero offset not added)."""
    (first, plane), *rest = [(w, plane) for w, plane in zip(weights, unit, strict=True) if w != 0]
    np.multiply(plane, first, out=out)
    for w, plane in rest:
        out += plane * w
    if offset != 0:
        out += offset


def bootstrap(
    rng: np.random.Generator,
    coef: np.ndarray,
    cov: np.ndarray,
    s_xx: np.ndarray,
    u_bar: np.ndarray,
    scales: np.ndarray,
    floor: np.ndarray | None,
    to_user: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """Each group's replicates in the user's units, design order (G x B x q: a view of G x q x B, each group's
    coordinate planes side by side), and their robust covariance (G x q x q), :data:`BLOCK` groups at a time
    (module docstring).

    The arguments are :func:`replicates`' on the unit scale (``cov`` finite and PSD) and ``to_user`` =
    (jacobian, offset, column order) from the unit scale's (intercept, slopes) to the design's columns.
    """
    jacobian, offset, order = to_user
    G, q = coef.shape
    draws = standard_draws(rng, q)
    root = covariance_roots(cov)
    out = np.empty((G, q, REPLICATES))
    robust = np.empty((G, q, q))
    for start in range(0, G, BLOCK):
        block = slice(start, start + BLOCK)
        unit = replicates(draws, coef[block], root[block], s_xx[block], u_bar[block], scales[block],
                          None if floor is None else floor[block])  # fmt: skip
        user = out[block].swapaxes(0, 1)
        for column, i in zip(user, order, strict=True):
            _to_user(unit, jacobian[i], offset[i], column)
        robust[block] = replicate_covariances(user)
    return out.swapaxes(1, 2), robust

"""The law of one thresholded noisy count, for the perturbed histogram's intervals (post-processing).

A cell of the histogram whose expected count is ``mu`` releases
``W = T(N + L)``: ``N`` its count, ``L ~ Laplace(s)`` with ``s = 2 / eps``
(dpstats/mechanisms/histogram/release.py), and ``T`` the fit's thresholding
(dpstats/mechanisms/histogram/layout.py): ``T(v) = v 1{v >= c}`` with the
cut-off ``c = A log(n) / eps`` of enhanced thresholding (Lei 2011, section
4.2), ``c = 0`` for ``max(v, 0)`` (Algorithm 1', and the clipping quantile
regression applies), or no ``T`` at all (``threshold="none"`` in least
squares). Under Poisson sampling of the rows (Poissonisation: the weighted
fits are invariant to the total, so the multinomial's fixed n matters only
through the cut-off, at order ``mu / n``), ``N ~ Poisson(mu)`` independently
across cells, and everything the intervals need is a moment of ``W`` as a
function of ``mu``:

* the mean map ``M(mu) = E W`` and its shift ``delta(mu) = M(mu) - mu``: the
  thresholding's bias (negative where it erodes small counts, positive where
  it lets pure noise through empty cells, ``M(0) = P(L >= c) (c + s)``);
* ``Var W``, and the joint moments of ``(W, M(W))``, which give the law of the
  bias-corrected statistic ``2 W - M(W)`` (dpstats/mechanisms/histogram/inference.py).

Given ``N = k`` the moments of ``W`` are closed-form Laplace tail integrals
(:func:`_given_count`); those of ``delta(W)`` are integrated numerically
against the Laplace law (midpoint rule on cells of exact probability, plus the
exact atom at ``W = 0``). Mixing over ``k`` with Poisson weights gives each
moment as a smooth function of ``mu``, tabulated once per cut-off and scale on
a grid and interpolated at every cell. When the noise is wide (``s >= 16``),
counts above 64 are mixed in groups at most ``s / 8`` and a quarter of the
Poisson's sd wide, at the group's midpoint (the conditional moments vary on
the scale s), so the tables stay small at any eps. Beyond the grid (``mu`` more than ``c + 40 s + 30``)
thresholding never acts: ``W = N + L``, mean ``mu``, variance ``mu + 2 s^2``.
Everything here depends on public quantities (n, eps, the threshold) only;
evaluated at released counts it is post-processing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.special import gammaln, ndtr

GRID_POINTS = 400
"""Points of the tabulation grid in ``mu`` (denser near 0, where the moments bend)."""
QUADRATURE_POINTS = 300
"""Midpoint cells per conditional expectation over the Laplace noise."""
TAIL = 30.0
"""Laplace noise beyond ``TAIL`` scales is ignored (probability e^-30)."""
REACH = 40.0
"""Counts above ``c + REACH s + 30`` are never thresholded (probability below e^-19)."""
COUNT_STEP = 8.0
EXACT_COUNTS = 64
"""Counts above ``EXACT_COUNTS`` are mixed in groups at most ``s / COUNT_STEP`` wide (module docstring)."""


def _laplace_cdf(u: np.ndarray) -> np.ndarray:
    """The standard Laplace distribution function."""
    return np.where(u < 0, 0.5 * np.exp(np.minimum(u, 0.0)), 1.0 - 0.5 * np.exp(-np.maximum(u, 0.0)))


def _given_count(k: np.ndarray, c: float, s: float) -> tuple[np.ndarray, np.ndarray]:
    """``E[W | N = k]`` and ``E[W^2 | N = k]`` for ``W = (k + L) 1{k + L >= c}``, ``L ~ Laplace(s)``.

    With ``t = c - k``: for ``t >= 0`` only the upper tail counts,
    ``P(L >= t) = e^{-t/s} / 2``, ``E[L 1{L >= t}] = e^{-t/s} (t + s) / 2`` and
    ``E[L^2 1{L >= t}] = e^{-t/s} (t^2 + 2 t s + 2 s^2) / 2``; for ``t < 0`` the
    lower tail ``L < t`` is removed from the full moments (by symmetry).
    """
    t = c - k
    upper = 0.5 * np.exp(-np.maximum(t, 0.0) / s)
    lower = 0.5 * np.exp(-np.maximum(-t, 0.0) / s)
    first = np.where(t >= 0, upper * (k + t + s), k - lower * (k + t - s))
    second_upper = upper * (k * k + 2 * k * (t + s) + t * t + 2 * t * s + 2 * s * s)
    second_lower = (k * k + 2 * s * s) - lower * (k * k + 2 * k * (t - s) + t * t - 2 * t * s + 2 * s * s)
    return first, np.where(t >= 0, second_upper, second_lower)


def _count_groups(top: float, s: float) -> tuple[np.ndarray, np.ndarray]:
    """Consecutive groups of counts covering ``0 .. top``: their starts and widths (module docstring).

    Counts below ``EXACT_COUNTS`` stand alone; above, a group is at most
    ``s / COUNT_STEP`` wide (the moments vary on the scale s) and a quarter of
    the Poisson's sd at its count.
    """
    starts = list(range(EXACT_COUNTS))
    k = float(EXACT_COUNTS)
    while k <= top:
        starts.append(k)
        k += max(1.0, math.floor(min(s / COUNT_STEP, math.sqrt(k) / 4.0)))
    start = np.asarray(starts, dtype=float)
    return start, np.diff(np.append(start, k))


def _poisson_masses(start: np.ndarray, width: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """``P(start_j <= Poisson(mu) < start_j + width_j)`` on the grid ``mu`` (rows) x groups (columns).

    Exact for single counts; for wider groups (all above ``EXACT_COUNTS``,
    where a Poisson with mass there has mean over 30) the normal
    approximation with continuity correction (the groups' contributions are
    smooth in the count, so its skewness error is of third order).
    """
    mu = mu[:, None]
    log_mu = np.log(np.where(mu > 0, mu, 1.0))
    exact = np.where(mu > 0, np.exp(start * log_mu - mu - gammaln(start + 1.0)), (start == 0).astype(float))
    sd = np.sqrt(np.maximum(mu, 1e-300))
    upper = ndtr((start + width - 0.5 - mu) / sd) - ndtr((start - 0.5 - mu) / sd)
    return np.where(width == 1, exact, np.where(mu > 0, upper, 0.0))


@dataclass(frozen=True)
class CellMoments:
    """Moments of ``W`` and ``M(W)`` at the cells' expected counts (arrays, one entry per cell)."""

    mean: np.ndarray
    """``E W = M(mu)``."""
    var: np.ndarray
    """``Var W``."""
    mean_m: np.ndarray
    """``E M(W)``."""
    cov_m: np.ndarray
    """``Cov(W, M(W))``."""
    var_m: np.ndarray
    """``Var M(W)``."""

    def summed(self, reduce) -> CellMoments:
        """The moments of sums of independent cells: ``reduce`` sums an array over the cells pooled."""
        return CellMoments(*(reduce(getattr(self, name)) for name in ("mean", "var", "mean_m", "cov_m", "var_m")))


class CountModel:
    """The law of ``W = T(N + L)``, ``N ~ Poisson(mu)``, for one cut-off and noise scale (module docstring).

    ``cutoff`` is ``c >= 0`` (thresholding at c) or ``-inf`` (no thresholding);
    ``scale`` is the Laplace scale ``s = 2 / eps``.
    """

    def _cut(self, cutoff: float, scale: float) -> bool:
        """Keep the cut-off and the noise scale; whether the counts are thresholded (a finite cut-off)."""
        self.cutoff, self.scale = float(cutoff), float(scale)
        self.thresholded = math.isfinite(self.cutoff)
        return self.thresholded

    def __init__(self, cutoff: float, scale: float) -> None:
        if not self._cut(cutoff, scale):
            return
        c, s = max(self.cutoff, 0.0), self.scale
        self.mu_max = c + REACH * s + 30.0
        start, width = _count_groups(self.mu_max, s)
        k = start + (width - 1) / 2.0
        dense = np.linspace(0.0, 1.0, GRID_POINTS // 8, endpoint=False)
        self.grid = np.concatenate([dense, np.geomspace(1.0, self.mu_max, GRID_POINTS - dense.size)])
        pmf = _poisson_masses(start, width, self.grid)
        first, second = _given_count(k, c, s)
        self.shift_table = pmf @ (first - k)
        mean = self.grid + self.shift_table
        var = self.grid + self.grid**2 + 2 * s * s + pmf @ (second - k * k - 2 * s * s) - mean**2
        d_mean, wd_mean, d_square = (pmf @ part for part in self._noise_integrals(k, c, s))
        self.tables = {
            "mean": mean,
            "var": var,
            "mean_m": mean + d_mean,
            "cov_m": var + wd_mean - mean * d_mean,
            "var_m": var + 2 * (wd_mean - mean * d_mean) + d_square - d_mean**2,
        }

    def _noise_integrals(self, k: np.ndarray, c: float, s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``E[delta(W) | k]``, ``E[W delta(W) | k]``, ``E[delta(W)^2 | k]``: the atom at 0 plus a midpoint rule."""
        low = np.maximum((c - k) / s, -TAIL)
        width = (TAIL - low) / QUADRATURE_POINTS
        edges = low[:, None] + width[:, None] * np.arange(QUADRATURE_POINTS + 1)
        mass = np.diff(_laplace_cdf(edges), axis=1)
        w = k[:, None] + s * (edges[:, :-1] + edges[:, 1:]) / 2.0
        d = self.shift(w)
        atom = _laplace_cdf((c - k) / s)
        d0 = float(self.shift(np.zeros(1))[0])
        return (
            atom * d0 + np.sum(mass * d, axis=1),
            np.sum(mass * w * d, axis=1),
            atom * d0 * d0 + np.sum(mass * d * d, axis=1),
        )

    def shift(self, w: np.ndarray) -> np.ndarray:
        """``delta(w) = M(w) - w``, the thresholding's bias at expected count ``w`` (0 beyond the grid)."""
        w = np.asarray(w, dtype=float)
        if not self.thresholded:
            return np.zeros_like(w)
        return np.interp(np.maximum(w, 0.0), self.grid, self.shift_table, right=0.0)

    def moments(self, mu: np.ndarray) -> CellMoments:
        """The moments at expected counts ``mu``.

        Without thresholding a released count is unbiased, so a negative one is
        kept as the mean (its Poisson variance is read at 0); with it, released
        weights are never negative.
        """
        mu = np.asarray(mu, dtype=float)
        noise = 2.0 * self.scale**2
        if not self.thresholded:
            var = self.sampling(mu) + noise
            return CellMoments(mu, var, mu, var, var)
        mu = np.maximum(mu, 0.0)
        beyond = mu > self.mu_max
        out = {}
        for name, table in self.tables.items():
            value = np.interp(mu, self.grid, table)
            far = mu if name in ("mean", "mean_m") else self.sampling(mu) + noise
            out[name] = np.where(beyond, far, value)
        return CellMoments(**out)

    def sampling(self, mu: np.ndarray) -> np.ndarray:
        """The rows' part of a count's variance at expected count ``mu``: Poisson's ``mu`` (0 below 0)."""
        return np.maximum(mu, 0.0)


class NoiseModel(CountModel):
    """The law of ``W = T(mu + L)``: a cell's weighted count ``mu`` held fixed, its noise and thresholding only.

    The world of a survey-weighted histogram's intervals (dpstats/mechanisms/histogram/survey_weights.py): a
    weighted count's sampling variance is not Poisson's, and the rows' sampling error enters through the
    design-based meat instead (dpstats/mechanisms/histogram/cell_meat.py). The moments given ``N = k`` are
    :func:`_given_count` at ``k = mu``, tabulated on a grid spanning the cut-off's reach of the noise (below it
    W is 0 but for a negligible tail, above it ``mu + L``).
    """

    def __init__(self, cutoff: float, scale: float) -> None:
        if not self._cut(cutoff, scale):
            return
        c, s = max(self.cutoff, 0.0), self.scale
        self.mu_max = c + REACH * s
        self.grid = np.unique(np.concatenate([[0.0], np.linspace(max(c - TAIL * s, 0.0), self.mu_max, GRID_POINTS)]))
        first, second = _given_count(self.grid, c, s)
        self.shift_table = first - self.grid
        var = second - first**2
        d_mean, wd_mean, d_square = self._noise_integrals(self.grid, c, s)
        self.tables = {
            "mean": first,
            "var": var,
            "mean_m": first + d_mean,
            "cov_m": var + wd_mean - first * d_mean,
            "var_m": var + 2 * (wd_mean - first * d_mean) + d_square - d_mean**2,
        }

    def sampling(self, mu: np.ndarray) -> np.ndarray:
        """No rows' part: the count is held fixed."""
        return np.zeros_like(np.asarray(mu, dtype=float))


@lru_cache(maxsize=64)
def count_model(cutoff: float, scale: float) -> CountModel:
    """The :class:`CountModel` of a cut-off and scale, built once (its tables depend on public values only)."""
    return CountModel(cutoff, scale)


@lru_cache(maxsize=64)
def noise_model(cutoff: float, scale: float) -> NoiseModel:
    """The :class:`NoiseModel` of a cut-off and scale, built once (public values only)."""
    return NoiseModel(cutoff, scale)

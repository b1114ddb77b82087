"""Pairwise Theil-Sen estimates of a prediction (Alabi et al. 2022, Algorithm 2).

For a pair of rows (x_j, y_j), (x_l, y_l) on the unit scale with x_j != x_l, the
estimate of the prediction at ``x0`` (0.25 for p25, 0.75 for p75) is the value
at ``x0`` of the line through the two points, computed as in Algorithm 2:

    s = (y_l - y_j) / (x_l - x_j),   z = s (x0 - (x_l + x_j) / 2) + (y_l + y_j) / 2.

A pair with x_j == x_l defines no line and contributes no estimate (the
algorithm's ``if x_l - x_j != 0``). These explicit (floating-point) estimates
feed the k-matching variants and the smooth-sensitivity median; the all-pairs
exponential medians use the exact counting engine of
:mod:`dpstats.mechanisms.theilsen.pair_counting` instead, which never lists the pairs.
"""

from __future__ import annotations

import functools

import numpy as np

PILOT_SIZE = 4096


def pair_estimates(x: np.ndarray, y: np.ndarray, i: np.ndarray, j: np.ndarray, x0: float) -> np.ndarray:
    """Algorithm 2's estimates for the row pairs (i, j); NaN where the pair defines no line.

    A NaN also marks the (theoretical) overflow case of a slope beyond the
    float range with x0 at the pair's midpoint; a dropped pair is, like a tied
    one, a function of that pair only, so Lemma 20's coupling still holds.
    """
    xi, xj, yi, yj = x[i], x[j], y[i], y[j]
    dx = xj - xi
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        slope = (yj - yi) / dx
        z = slope * (x0 - (xj + xi) / 2.0) + (yj + yi) / 2.0
    z[dx == 0] = np.nan
    return z


CACHED_PAIRS_MAX = 1 << 16
"""All-pairs index arrays up to this many pairs are built once per n and shared (read-only)."""


def all_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every unordered pair i < j of ``n`` rows (the union of all perfect matchings).

    Up to CACHED_PAIRS_MAX pairs the arrays are cached and read-only: the
    audits run the same small fit many thousand times.
    """
    if n_pairs(n) <= CACHED_PAIRS_MAX:
        return _cached_pairs(n)
    return np.triu_indices(n, k=1)


@functools.lru_cache(maxsize=16)
def _cached_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    i, j = np.triu_indices(n, k=1)
    i.flags.writeable = False
    j.flags.writeable = False
    return i, j


def n_pairs(n: int) -> int:
    """Number of unordered pairs of ``n`` rows."""
    return n * (n - 1) // 2


def valid_sorted(z: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, int]:
    """The defined estimates clipped to [lo, hi] and sorted, and the number of dropped pairs."""
    keep = ~np.isnan(z)
    values = np.clip(z[keep], lo, hi)
    values.sort()
    return values, int(z.size - values.size)


@functools.lru_cache(maxsize=8)
def pilot_pairs(n: int, size: int = PILOT_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """A deterministic, well-spread set of about ``size`` distinct-row pairs (all pairs when fewer).

    Used only to place the starting knots of the exact sampler of
    :mod:`dpstats.mechanisms.theilsen.dp_median`: its choice changes the running time,
    never the output distribution, so it needs no randomness.
    """
    if n_pairs(n) <= size:
        return all_pairs(n)
    k = np.arange(size, dtype=np.int64)
    i = k % n
    step = 1 + (k * 2654435761) % (n - 1)
    j = (i + step) % n
    i.flags.writeable = False
    j.flags.writeable = False
    return i, j


def pilot_estimates(x: np.ndarray, y: np.ndarray, x0: float, size: int = PILOT_SIZE) -> np.ndarray:
    """Sorted estimates of the pilot pairs (NaN-free), approximating the quantiles of all pairs."""
    i, j = pilot_pairs(x.size, size)
    z = pair_estimates(x, y, i, j, x0)
    z = z[~np.isnan(z)]
    z.sort()
    return z

"""The restricted exponential mechanism on approximate Tukey depth, sampled exactly (float-safe).

Amin et al. 2023, section 3.3 and Lemma 3.9 (geometry in dpstats/mechanisms/tukey/depth.py): the
piece ``R_ij`` of the shell of depth i (split by the first coordinate j at
which the depth is exactly i, Lemma 7.4) is chosen with probability
proportional to ``vol(R_ij) exp(beta i)``, then the point is uniform in it:
coordinates before j on the depth ``> i`` side, coordinate j on the two end
gaps together, coordinates after j on the depth ``>= i`` side.

Here every step is exact (Mironov 2012; notes/FLOAT_SAFETY.md):

* every side length is the exact difference of two doubles, an integer in
  the models' common unit (a power of two), and a piece's volume is the
  exact product of its sides;
* the piece is chosen by :func:`~dpstats.privacy.noise.exponential_choice`
  with those volumes as counts and utility ``i`` (the depth; the exponent's
  rate ``beta`` is rounded down, so the eps spent is at most the one reported);
* each coordinate is a uniform real on its side (coordinate j: on the union
  of its two end gaps) rounded down to a double
  (:func:`~dpstats.privacy.samplers.uniform_double`): post-processing of an
  exact draw.
"""

from __future__ import annotations

import numpy as np

from ...privacy import noise
from ...privacy.random_bits import RandomBits
from ...privacy.samplers import common_ticks, uniform_floor_double
from .depth import max_depth


def _ticks(P: np.ndarray) -> tuple[list[list[int]], int]:
    """Every order statistic as an exact integer in the models' common unit 2^-unit, and that unit."""
    d, m = P.shape
    flat, unit = common_ticks(np.asarray(P, dtype=float).ravel().tolist())
    return [flat[j * m : (j + 1) * m] for j in range(d)], unit


def _sides(ticks: list[list[int]], i: int, m: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Per coordinate, the depth ``> i`` side and the depth ``>= i`` side, as (low, high) ticks."""
    top = max_depth(m)
    inner = [(row[i], row[m - i - 1]) if i < top else (0, 0) for row in ticks]
    outer = [(row[i - 1], row[m - i]) for row in ticks]
    return inner, outer


def _gaps(row: list[int], i: int, m: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Coordinate's two end gaps at depth exactly i (the whole middle as the left gap at the top depth)."""
    if i < max_depth(m):
        return (row[i - 1], row[i]), (row[m - i - 1], row[m - i])
    return (row[i - 1], row[m - i]), (0, 0)


def _length(side: tuple[int, int]) -> int:
    return max(side[1] - side[0], 0)


def sample_point(rng: np.random.Generator, P: np.ndarray, t: int, beta: float) -> np.ndarray:
    """One exact draw from the density proportional to ``exp(beta T(y))`` on ``{T(y) >= t}`` (module docstring).

    ``P`` is ``(d, m)``, each row sorted; at least one piece must have
    positive volume (the caller checks
    :func:`~dpstats.mechanisms.tukey.depth.restricted_mass_is_positive`).
    """
    d, m = P.shape
    ticks, unit = _ticks(P)
    pieces, volumes, depths = [], [], []
    for i in range(t, max_depth(m) + 1):
        inner, outer = _sides(ticks, i, m)
        before = [1]  # products of the depth > i sides before coordinate j
        for side in inner[:-1]:
            before.append(before[-1] * _length(side))
        after = [1]  # products of the depth >= i sides after coordinate j (built from the end)
        for side in outer[:0:-1]:
            after.append(after[-1] * _length(side))
        for j in range(d):
            left, right = _gaps(ticks[j], i, m)
            pieces.append((i, j, inner, outer, left, right))
            volumes.append(before[j] * (_length(left) + _length(right)) * after[d - 1 - j])
            depths.append(i)
    # utility i, sensitivity 1, rate beta = eps / (2 * 1) with eps = 2 beta
    k = noise.exponential_choice(rng, np.asarray(depths, dtype=float), 2.0 * beta, 1.0, volumes)
    i, j, inner, outer, left, right = pieces[k]
    point = np.empty(d)
    bits = RandomBits(rng)
    for coord in range(d):
        if coord == j:
            offset = bits.below(_length(left) + _length(right))
            gap, offset = (left, offset) if offset < _length(left) else (right, offset - _length(left))
            point[coord] = uniform_floor_double(bits, gap[0] + offset, 1, unit)
        else:
            low, high = (inner if coord < j else outer)[coord]
            point[coord] = uniform_floor_double(bits, low, high - low, unit)  # a chosen piece has no empty side
    return point


def sample_restricted(
    rng: np.random.Generator, P: np.ndarray, t: int, beta: float, size: int | None = None
) -> np.ndarray:
    """:func:`sample_point` once (``(d,)``, ``size=None``) or ``size`` times independently (``(size, d)``)."""
    if size is None:
        return sample_point(rng, P, t, beta)
    return np.array([sample_point(rng, P, t, beta) for _ in range(int(size))])

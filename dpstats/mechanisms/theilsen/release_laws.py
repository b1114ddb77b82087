"""The laws of the three medians' privacy errors, given the count density of the pair estimates.

Near the median m of the P pair estimates their count function K(r) =
#{estimates <= r} has slope g (estimates per unit on the unit scale of y).
Each median's release minus m then has a law that depends on the data only
through g (Alabi et al. 2022; dpstats/mechanisms/theilsen/dp_median.py and
smooth_sensitivity.py give the mechanisms):

* ``exp`` (Algorithm 3): the density of r is proportional to
  exp(-eps/(2L) |K(r) - P/2|) = exp(-eps g / (2 L) |r - m|): Laplace with scale
  2 L / (eps g);
* ``wide`` (Algorithm 4): the rank distance is 0 on [m - theta, m + theta] and
  grows like g (|r - m| - theta) beyond, so the release is uniform on that
  interval with probability theta / (theta + b) and otherwise
  ``m +- (theta + Exp(b))``, b = 2 L / (eps g);
* ``exp`` on the candidate grid (dpstats/mechanisms/theilsen/grid_median.py):
  a cell at distance a from m (0 for m's own cell) has rank distance about
  g a, and permute-and-flip picks among the cells near m with those
  weights; the error is the chosen centre minus m, whose offset from its
  cell's centre is taken uniform (:func:`grid_errors`);
* ``smooth`` (Algorithm 5): m + (S / s) T with T Student-t(df). Lemma 10's bound S
  reads the estimates near the median, whose spacings are close to those of
  a Poisson process of rate g there, so S = Z / g with Z the same bound on a
  unit-rate process (:func:`unit_rate_bounds`, simulated; its law depends
  on L and t only), and S is at least the bound's saturated and padded terms,
  which need no density (:func:`smooth_floor`).

All of these are local approximations: they hold when the mechanism's rank
error (about 2 L / eps, or the (l + 1) L estimates Lemma 10 reads) is a
small part of the P estimates, as it is for the n and eps where intervals are
useful. The draws are post-processing and go through dpstats/privacy/noise.py.
"""

from __future__ import annotations

import math

import numpy as np

from ...privacy import noise

GRID_FOLDS = 12.0
"""Cells farther than GRID_FOLDS e-folds of weight from m are left out of :func:`grid_errors` (weight < 7e-6)."""
GRID_REACH = 256
"""The most cells on each side of m's cell that :func:`grid_errors` draws among; finer grids take its Laplace limit."""
ENVELOPE_FOLDS = 4.0
"""Lemma 10's terms are simulated up to l = ENVELOPE_FOLDS / t: beyond, e^{-lt} (l + 1) is under a fifth of its peak."""
BOUND_DRAWS = 64
"""Draws of Z (each replicate takes one at random)."""


def laplace_errors(rng: np.random.Generator, g: np.ndarray, lipschitz: int, eps: float) -> np.ndarray:
    """Algorithm 3's error for each density in ``g``: Laplace(2 L / (eps g))."""
    return noise.laplace(rng, 1.0, g.shape) * (2.0 * lipschitz / (eps * g))


def grid_errors(rng: np.random.Generator, g: np.ndarray, lipschitz: int, eps: float, width: float) -> np.ndarray:
    """The grid median's error for each density in ``g``: permute-and-flip over the cells near m, minus m.

    m sits at a uniform offset from the centre of its cell (width h). Cell j
    (j = 0 is m's) is at distance ``max(0, |j h - offset| - h / 2)`` from m,
    weight exp(-eps g distance / (2 L)); the choice is report-noisy-max with
    Exp(1) noise over the cells within GRID_FOLDS e-folds. Where those number
    more than GRID_REACH on a side the grid is fine against the noise, and the
    error is Laplace(2 L / (eps g)) rounded to the lattice (permute-and-flip
    then behaves as the exponential mechanism). The noisy max is drawn only
    for the other densities, in groups whose reach (a power of two, at least
    the GRID_FOLDS e-folds each density needs) is shared.
    """
    rate = eps * g / (2.0 * lipschitz)
    offset = noise.uniform(rng, -0.5 * width, 0.5 * width, g.shape)
    with np.errstate(divide="ignore"):
        spread = noise.laplace(rng, 1.0, g.shape) / rate
    errors = width * np.round((offset + spread) / width) - offset
    steps = rate * width  # e-folds of weight per cell
    coarse = steps * GRID_REACH >= GRID_FOLDS
    with np.errstate(divide="ignore"):
        reach = 2 ** np.ceil(np.log2(np.maximum(GRID_FOLDS / steps, 1.0)))  # at most GRID_REACH where coarse
    for group in np.unique(reach[coarse]):
        members = coarse & (reach == group)
        cells = np.arange(-int(group), int(group) + 1)
        distance = np.maximum(np.abs(cells[None, :] * width - offset[members, None]) - 0.5 * width, 0.0)
        scores = -rate[members, None] * distance - np.log1p(-noise.uniform(rng, 0.0, 1.0, distance.shape))
        errors[members] = cells[np.argmax(scores, axis=1)] * width - offset[members]
    return errors


def widened_errors(rng: np.random.Generator, g: np.ndarray, lipschitz: int, eps: float, theta: float) -> np.ndarray:
    """Algorithm 4's error: uniform on [-theta, theta] w.p. theta / (theta + b), else +-(theta + Exp(b))."""
    b = 2.0 * lipschitz / (eps * g)
    flat = noise.uniform(rng, 0.0, 1.0, g.shape) * (theta + b) < theta
    sign = np.where(noise.uniform(rng, 0.0, 1.0, g.shape) < 0.5, -1.0, 1.0)
    tail = theta + b * np.abs(noise.laplace(rng, 1.0, g.shape))
    return np.where(flat, noise.uniform(rng, -theta, theta, g.shape), sign * tail)


def unit_rate_bounds(rng: np.random.Generator, lipschitz: int, t: float, last_local: int) -> np.ndarray:
    """:data:`BOUND_DRAWS` draws of Z, Lemma 10's bound on a unit-rate Poisson process of estimates.

    With v_0 = 0 the median estimate and v_j its neighbours (unit exponential
    spacings), Z = max(v_L - v_0, v_0 - v_-L, max_{1 <= l <= l_max} e^{-lt}
    max_{-(l+1)L <= a <= 0} (v_{a+(l+1)L} - v_a)): the doubled vector's
    window of (l + 1) 2L entries spans (l + 1) L estimates. ``last_local`` is the
    last l whose windows stay inside the estimates (the padded terms are
    :func:`smooth_floor`'s).
    """
    top = max(0, min(last_local, math.ceil(ENVELOPE_FOLDS / t)))
    reach = (top + 1) * lipschitz
    gaps = np.abs(noise.laplace(rng, 1.0, (BOUND_DRAWS, 2 * reach)))  # |Laplace(1)| is Exp(1)
    below = -np.cumsum(gaps[:, :reach], axis=1)[:, ::-1]
    v = np.concatenate([below, np.zeros((BOUND_DRAWS, 1)), np.cumsum(gaps[:, reach:], axis=1)], axis=1)
    z = np.maximum(v[:, reach + lipschitz] - v[:, reach], v[:, reach] - v[:, reach - lipschitz])
    for ell in range(1, top + 1):
        span = (ell + 1) * lipschitz
        window = v[:, reach : reach + span + 1] - v[:, reach - span : reach + 1]
        z = np.maximum(z, math.exp(-ell * t) * window.max(axis=1))
    return z


def smooth_floor(pairs: int, lipschitz: int, t: float, center: float, lo: float, hi: float) -> tuple[float, int]:
    """A lower bound on S that needs no density, and the last l whose windows stay inside the estimates.

    Once a window of (l + 1) 2L entries is as long as half the doubled vector
    (2P entries), it reaches a pad: its term is at least e^{-lt} times the
    distance from the median (here ``center``) to the farther end of the range.
    """
    k = 2 * lipschitz
    first_padded = max(0, math.ceil(pairs / k) - 1)
    reach = max(hi - center, center - lo, 0.0)
    return math.exp(-first_padded * t) * reach, first_padded - 1


def smooth_errors(
    rng: np.random.Generator, g: np.ndarray, bounds: np.ndarray, floor: float, s: float, df: float
) -> np.ndarray:
    """Algorithm 5's error (S / s) T with S = max(Z / g, floor), Z drawn from ``bounds``."""
    pick = np.minimum((noise.uniform(rng, 0.0, 1.0, g.shape) * bounds.size).astype(int), bounds.size - 1)
    smooth = np.maximum(bounds[pick] / g, floor)
    return smooth / s * noise.student_t(rng, df, g.shape)

"""The spread release: a DP quantile of the pair estimates' distances from a released prediction.

The standard errors need the density of the pair estimates at their median
(dpstats/mechanisms/theilsen/inference.py). Around the released prediction c
(clipped to the output range [r_l, r_u], width W), every one of the P pairs
(a public number: all pairs, or k matchings) gets the distance
``a_p = |clip(z_p) - c|``, and ``a_p = W`` if it defines no line. The release
is the exponential mechanism (Alabi et al. 2022, Algorithm 3, on the a_p)
for the order statistic of rank ``tau`` over the outputs [0, W]. It is run as
the median of the a_p padded with public values: ``P - 2 tau`` zeros when
tau < P/2 (``2 tau - P`` copies of W otherwise), so that the padded median
is the a_p of rank tau.

Sensitivity. Replacing one row changes at most L of the a_p (L the pairing's
Lipschitz constant, dpstats/mechanisms/theilsen/matchings.py); the padding
and the number of values are public, so every count moves by at most L and
the utility (minus the rank distance) by at most L, as for the medians
(dpstats/mechanisms/theilsen/dp_median.py): utility sensitivity L.

Reading. The released w is a window: ``[c - w, c + w]`` holds ``tau + xi``
estimates, where xi, the mechanism's rank error, is close to
Laplace(2 L / eps) wherever the estimates are dense. The count density of
the estimates near c is then ``g = (tau + xi) / (2 w)``.

The window's mass q = tau / P trades the rank noise (relative error about
2 L / (eps tau) = 4 / (n eps q)) against the curvature of the estimates'
distribution (a relative bias of order q^2; measured: 2-6% of the
variance at q = 0.25 on the coverage designs, under 2% at q = 0.1), so q is
the minimiser of their squared sum, ``(1.5 rho)^(1/3)`` with rho = 2 L / (eps P),
kept in [0.1, 0.25].
"""

from __future__ import annotations

import numpy as np

from . import dp_median
from .pair_counting import AllPairsCounter

MASS_RANGE = (0.1, 0.25)
"""Smallest and largest window mass q."""


def window_rank(pairs: int, lipschitz: int, eps: float) -> int:
    """tau: the rank released, ``round(q P)`` with q = clip((1.5 * 2 L / (eps P))^(1/3)) (module docstring)."""
    rho = 2.0 * lipschitz / (eps * pairs)
    mass = min(MASS_RANGE[1], max(MASS_RANGE[0], (1.5 * rho) ** (1.0 / 3.0)))
    return int(min(pairs, max(1, round(mass * pairs))))


def padding(pairs: int, tau: int) -> tuple[int, int]:
    """Public zeros and public W's that make the padded median the a_p of rank tau."""
    return max(0, pairs - 2 * tau), max(0, 2 * tau - pairs)


def listed_oracle(z: np.ndarray, center: float, lo: float, hi: float, tau: int) -> dp_median.SortedOracle:
    """The padded distances of listed estimates (NaN: an undefined pair, at W), sorted."""
    width = hi - lo
    a = np.abs(np.clip(z, lo, hi) - center)
    a = np.where(np.isnan(a), width, np.minimum(a, width))
    low, high = padding(z.size, tau)
    return dp_median.SortedOracle(np.concatenate([np.zeros(low), np.sort(a), np.full(high, width)]))


class CountedDistances:
    """Counts of the padded distances over all pairs, from the exact pair counter (never listed)."""

    def __init__(
        self, counter: AllPairsCounter, pilot: np.ndarray, center: float, lo: float, hi: float, pairs: int, tau: int
    ) -> None:
        self.counter, self.center, self.lo, self.hi = counter, float(center), float(lo), float(hi)
        self.low, high = padding(pairs, tau)
        self.n_valid = pairs + self.low + high
        width = hi - lo
        a = np.sort(np.minimum(np.abs(np.clip(pilot, lo, hi) - center), width))
        m = a.size
        self._hint = np.concatenate([np.zeros(round(self.low * m / pairs)), a, np.full(round(high * m / pairs), width)])

    def counts_many(self, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(#{a < t}, #{a <= t})`` at distances t in [0, W], padding included."""
        ts = np.asarray(ts, dtype=float).ravel()
        up, down = self.center + ts, self.center - ts
        lt, le = self.counter.counts_many(np.concatenate([up, down]))
        lt_up, lt_down = lt[: ts.size], lt[ts.size :]
        le_up, le_down = le[: ts.size], le[ts.size :]
        defined = self.counter.n_valid
        below = np.where(up > self.hi, defined, lt_up) - np.where(down < self.lo, 0, le_down)
        at_most = np.where(up >= self.hi, defined, le_up) - np.where(down <= self.lo, 0, lt_down)
        return self.low + np.maximum(below, 0), self.low + at_most

    def counts(self, t: float) -> tuple[int, int]:
        """:meth:`counts_many` at one distance."""
        lt, le = self.counts_many(np.array([t]))
        return int(lt[0]), int(le[0])

    def hint(self) -> tuple[np.ndarray, bool]:
        """The pilot pairs' padded distances: approximate quantiles."""
        return self._hint, False


def release_window(
    rng: np.random.Generator, oracle: dp_median.CountOracle, lo: float, hi: float, lipschitz: int, eps: float, name: str
) -> float:
    """The window w: the exponential-mechanism median of the padded distances over [0, W] (recorded)."""
    return dp_median.release(rng, oracle, 0.0, hi - lo, lipschitz, eps, 0.0, name)

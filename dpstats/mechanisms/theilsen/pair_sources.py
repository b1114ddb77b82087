"""The pair estimates of one prediction, listed or counted, as the releases read them.

A source answers what the median, the spread window
(dpstats/mechanisms/theilsen/spread.py) and the per-row signs
(dpstats/mechanisms/theilsen/row_counts.py) need: listed estimates for k
matchings and small all-pairs problems, the exact O(n log n) counter
(dpstats/mechanisms/theilsen/pair_counting.py) for all pairs beyond, so that
memory stays linear in n.
"""

from __future__ import annotations

import functools

import numpy as np

from . import dp_median, row_counts, spread
from .pair_counting import AllPairsCounter
from .pair_estimates import n_pairs, pair_estimates, pilot_estimates, valid_sorted


class ListedPairs:
    """Algorithm 2's floating-point estimates of the given pairs (NaN where a pair defines no line)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, pairs: tuple[np.ndarray, np.ndarray], x0: float) -> None:
        self.i, self.j = pairs
        self.n = x.size
        self.z = pair_estimates(x, y, self.i, self.j, x0)
        self.total = int(self.z.size)

    def sorted_valid(self, lo: float, hi: float) -> tuple[np.ndarray, int]:
        """The defined estimates clipped and sorted, and the number of undefined pairs."""
        return valid_sorted(self.z, lo, hi)

    def median_oracle(self, lo: float, hi: float) -> dp_median.SortedOracle:
        """Counts for the exponential medians."""
        return dp_median.SortedOracle(self.sorted_valid(lo, hi)[0])

    def window_oracle(self, center: float, lo: float, hi: float, tau: int) -> dp_median.SortedOracle:
        """The padded distances from ``center`` (spread.py)."""
        return spread.listed_oracle(self.z, center, lo, hi, tau)

    def signs(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Per-row sums D_i and the pair signs d_p about t."""
        return row_counts.listed_signs(self.z, self.i, self.j, self.n, t)


class CountedPairs:
    """All pairs, never listed: the exact counter (built on first use) and a pilot sample of estimates."""

    def __init__(self, x: np.ndarray, y: np.ndarray, x0: float) -> None:
        self.x, self.y, self.x0 = x, y, float(x0)
        self.total = n_pairs(x.size)

    @functools.cached_property
    def counter(self) -> AllPairsCounter:
        """The exact counter of estimates below a threshold."""
        return AllPairsCounter(self.x, self.y, self.x0)

    @functools.cached_property
    def pilot(self) -> np.ndarray:
        """Sorted estimates of a deterministic spread of pairs (knots for the samplers)."""
        return pilot_estimates(self.x, self.y, self.x0)

    def median_oracle(self, lo: float, hi: float) -> dp_median.CountingOracle:
        """Counts for the exponential medians."""
        return dp_median.CountingOracle(self.counter, self.pilot)

    def window_oracle(self, center: float, lo: float, hi: float, tau: int) -> spread.CountedDistances:
        """The padded distances from ``center``, counted."""
        return spread.CountedDistances(self.counter, self.pilot, center, lo, hi, self.total, tau)

    def signs(self, t: float) -> tuple[np.ndarray, None]:
        """Per-row sums D_i about t (the pair signs are not listed)."""
        return row_counts.all_pairs_signs(self.x, self.y, self.x0, t), None

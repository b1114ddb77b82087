"""Statistics of rows that add over disjoint chunks of the rows (one machine or a Dask cluster's partitions).

A mechanism reads its rows only through ``Design.total(statistic)``
(dpstats/design/matrix.py): ``statistic`` maps the rows of a design to something that
adds, a numpy array of sums or :class:`Moments`. On one machine it is applied
to all the rows at once; on a Dask DataFrame (dpstats/distributed/dask_design.py) to each
partition on the workers, and the partial results are added. Either way the
release that follows is the same code.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Moments:
    """The count, means and centred cross-products ``sum_i (z_i - mean)(z_i - mean)'`` of rows z_i.

    ``+`` merges the moments of two disjoint chunks exactly (Chan, Golub &
    LeVeque 1979, the pairwise update): ``C = C_a + C_b + d d' n_a n_b / n``
    with ``d = mean_b - mean_a``. Centring inside each chunk keeps the
    precision of the two-pass formula, which the uncentred ``Z'Z - n m m'``
    loses when the means are large next to the spread.
    """

    n: int
    mean: np.ndarray
    comoment: np.ndarray

    @classmethod
    def of(cls, Z: np.ndarray) -> Moments:
        """The moments of the rows of ``Z`` (n x k; zero rows give zero moments)."""
        n, k = Z.shape
        if n == 0:
            return cls(0, np.zeros(k), np.zeros((k, k)))
        mean = Z.mean(axis=0)
        centred = Z - mean
        return cls(n, mean, centred.T @ centred)

    def __add__(self, other: Moments) -> Moments:
        if other.n == 0:
            return self
        if self.n == 0:
            return other
        n = self.n + other.n
        d = other.mean - self.mean
        mean = self.mean + d * (other.n / n)
        comoment = self.comoment + other.comoment + np.outer(d, d) * (self.n * other.n / n)
        return Moments(n, mean, comoment)


@dataclass(frozen=True)
class GroupMoments:
    """:class:`Moments` of the rows of each of G groups at once: counts (G,), means (G, k), comoments (G, k, k).

    ``+`` merges two disjoint chunks group by group with the same pairwise
    update as :class:`Moments`; a group with no rows has count 0, mean 0 and
    comoment 0, and merging it changes nothing.
    """

    n: np.ndarray
    mean: np.ndarray
    comoment: np.ndarray

    @classmethod
    def of(cls, Z: np.ndarray, codes: np.ndarray, groups: int) -> GroupMoments:
        """The moments of the rows of ``Z`` (n x k) in each group; ``codes[i]`` is row i's group, -1 for none."""
        inside = codes >= 0
        Z, codes = Z[inside], codes[inside]
        k = Z.shape[1]
        n = np.bincount(codes, minlength=groups)
        sums = np.column_stack([np.bincount(codes, weights=Z[:, j], minlength=groups) for j in range(k)])
        mean = sums.reshape(groups, k) / np.maximum(n, 1)[:, None]
        centred = Z - mean[codes]
        comoment = np.zeros((groups, k, k))
        for i in range(k):
            for j in range(i, k):
                comoment[:, i, j] = np.bincount(codes, weights=centred[:, i] * centred[:, j], minlength=groups)
                comoment[:, j, i] = comoment[:, i, j]
        return cls(n, mean, comoment)

    def __add__(self, other: GroupMoments) -> GroupMoments:
        n = self.n + other.n
        share = np.divide(other.n, n, out=np.zeros(n.shape), where=n > 0)
        d = other.mean - self.mean
        mean = np.where((self.n == 0)[:, None], other.mean, self.mean + d * share[:, None])
        mean = np.where((other.n == 0)[:, None], self.mean, mean)
        weight = self.n * share  # n_a n_b / n
        comoment = self.comoment + other.comoment + d[:, :, None] * d[:, None, :] * weight[:, None, None]
        return GroupMoments(n, mean, comoment)

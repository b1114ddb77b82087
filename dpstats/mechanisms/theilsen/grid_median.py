"""The candidate-grid exponential median: Algorithm 3's utility on a public lattice of cells, permute-and-flip.

Why a grid. Algorithm 3 (Alabi et al. 2022; dpstats/mechanisms/theilsen/dp_median.py)
draws r from the density proportional to exp(-eps/(2L) dist(r)) over the whole
output range [r_l, r_u]. An interval with every estimate on one side has
dist = N/2, so the tails carry mass (r_u - r_l) e^{-A}, with

    A = eps P / (4 L)        (P the public number of pairs, L the Lipschitz constant),

against a core of the width over which the estimates' counts cross N/2. When
A is small (n eps of a few hundred or less) and the estimates are
concentrated (small noise in y), the tails win and the release is nearly
uniform on the range. A public finite set of candidates caps that mass at
(number of candidates) x e^{-A}, whatever the data.

The mechanism. The output range [lo, hi] is cut into C cells of width
h = (hi - lo) / C with edges e_0 = lo < e_1 < ... < e_C = hi; candidate j is
the centre of cell j. With lt(t) = #{defined estimates < t} (clipping to the
range changes no count at an interior edge), put a_j = lt(e_j) for j >= 1,
a_0 = 0, and b_j = a_{j+1} with b_{C-1} = N (the outer cells are closed at the
range's ends). The utility of candidate j is minus

    dist_j = ceil( max( gap(N/2, [a_j, b_j]), (N mod 2)/2 ) ),

the rank distance from the median to the cell: 0 when the median's rank lies
in the cell's count interval. This is Algorithm 4's widened distance with
theta = h/2 evaluated at the cell's centre (dp_median.py), so a cell holding
every estimate wins even when they are all equal, where Algorithm 3 is
uniform on the range.

Sensitivity L. Replacing one row changes at most L estimates (Lemma 20,
dpstats/mechanisms/theilsen/matchings.py). A changed estimate moves every
count a_j, b_j by at most one, and N by at most one when the pair starts or
stops defining a line; as for Algorithm 3 (dp_median.py), the quantity inside
the ceiling, a half-integer, then moves by at most 1 and so does its ceiling.
So every dist_j moves by at most L (tests/test_theilsen_grid.py checks this by
brute force and the replay reaches it).

Selection: permute-and-flip (McKenna & Sheldon 2020), sampled exactly: the
cells in a uniformly random order, each kept with probability
``exp(-eps/(2L) (dist_j - min dist))`` drawn in integer arithmetic
(dpstats/privacy/exact_choice.py; the rate rounded down). It is eps-DP for a utility of
sensitivity L, like the exponential mechanism, and its expected utility is
never lower (McKenna & Sheldon 2020). Here it matters: with one cell at
distance 0 and C - 1 cells of weight w = e^{-A}, the exponential mechanism
leaves the median's cell with probability about (C - 1) w, permute-and-flip
with about half of it (:func:`far_probability`), so the grid can have twice
the cells for the same risk.

Rules (public: n, eps, the bounds; docs/ALGORITHMS.md):

* **Candidates** (:func:`auto_candidates`): the most cells C, odd, for which,
  when every estimate lies in one cell, permute-and-flip leaves that cell with
  probability at most FAR_PROBABILITY = 0.1 (about 2 FAR e^A cells: 111 at
  A = 6.25, i.e. n = 100 and eps = 1 for the pair). More cells add tail mass,
  fewer add rounding (at most h/2). The target was chosen by simulating the
  exact law on the cells of the Alabi et al. grid with A <= 6.25 and a
  dithered intercept (the setting of benchmarks/bench_theilsen_vs_opendp.py
  --dither; 10 data sets per cell): with far probabilities of about 5%, 10%,
  20%, 40% and 80% the grid was within 1.1 x OpenDP in 23, 24, 23, 20 and 8
  of the 24 cells. Above A = 12.7 (more than MAX_CANDIDATES cells) the tails
  of the continuous mechanism are negligible and Algorithm 3 is used (no
  rounding). Below A = 2.3 there is one cell: the
  release is the centre of the output range, whatever the data. With so
  little budget every candidate is almost equally likely, and a near-uniform
  draw over the range is farther from any truth inside the bounds than the
  centre is.
* **Matchings** (:func:`grid_matchings`): the privacy error does not depend on
  k. With k matchings the estimates number N = k floor(n/2) and L = k, with
  all pairs N = n(n - 1)/2 and L = n - 1, so N / L (hence A and the exponent
  per unit of the estimates' distribution function, eps N/(2L)) is the same
  for every k. k changes the sampling error (an incomplete U-statistic's
  extra variance falls like 1/k) and the cost. On the grid the estimates are
  listed, so the counts at the C + 1 edges are one sorted search: every pair
  when there are at most LISTED_MAX, else the most matchings whose
  k floor(n/2) estimates are at most LISTED_MAX (k >= 13 up to n = 10^4).

Measured by benchmarks/bench_theilsen_vs_opendp.py on the Alabi et al. grid.
"""

from __future__ import annotations

import math

import numpy as np

from ...privacy import noise
from .dp_median import CountOracle, SortedOracle, gap_distance
from .matchings import rounds_max
from .pair_estimates import n_pairs

FAR_PROBABILITY = 0.1
"""The most probability with which the grid leaves the median's cell when every estimate lies in it."""
MAX_CANDIDATES = (1 << 16) - 1
"""The most cells (odd); when more would do, the continuous mechanism (Algorithm 3) is used instead."""
LISTED_MAX = 1 << 16
"""The most pair estimates listed on the grid (:func:`grid_matchings`)."""
COUNT_BATCH = 256
"""Edges per batch of the all-pairs counter (its work array is edges x rows)."""


def far_exponent(eps: float, pairs: int, lipschitz: int) -> float:
    """A = eps P / (4 L): the log-weight gap between the median's cell and a cell with every estimate on one side."""
    return eps * pairs / (4.0 * lipschitz)


def far_probability(count: int, exponent: float) -> float:
    """Probability that permute-and-flip leaves the median's cell (weight 1) for one of count - 1 cells of weight e^-A.

    The cells come in a uniformly random order and each is accepted with its
    weight, so the median's cell is reached after J ~ Uniform{0, ..., C - 1}
    far cells, each refused with probability 1 - w: the probability is
    1 - E[(1 - w)^J] = 1 - (1 - (1 - w)^C) / (C w).
    """
    w = math.exp(-exponent)
    if count <= 1 or w == 0.0:
        return 0.0
    return 1.0 + math.expm1(count * math.log1p(-w)) / (count * w)


def auto_candidates(eps: float, pairs: int, lipschitz: int) -> int | None:
    """The most cells C, odd, with :func:`far_probability` at most FAR_PROBABILITY; None beyond MAX_CANDIDATES.

    An odd C keeps the lattice symmetric about the centre of the range and
    holding it: with C = 2 the candidates would be the range's quarter points
    (the bounds of y on the default range), no closer on average to a truth
    uniform in the bounds than the centre alone (C = 1).
    """
    exponent = far_exponent(eps, pairs, lipschitz)
    if far_probability(MAX_CANDIDATES + 2, exponent) <= FAR_PROBABILITY:
        return None
    low, high = 1, MAX_CANDIDATES + 2  # far_probability(low) <= FAR < far_probability(high); it increases with C
    while high - low > 1:
        mid = (low + high) // 2
        if far_probability(mid, exponent) <= FAR_PROBABILITY:
            low = mid
        else:
            high = mid
    return low if low % 2 else low - 1


def grid_matchings(n: int) -> int:
    """k on the grid: all pairs if n(n - 1)/2 <= LISTED_MAX, else the most matchings with k floor(n/2) <= LISTED_MAX."""
    if n_pairs(n) <= LISTED_MAX:
        return rounds_max(n)
    return max(1, min(rounds_max(n), LISTED_MAX // (n // 2)))


def lattice(lo: float, hi: float, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The C + 1 cell edges and the C centres of the lattice on [lo, hi] (public)."""
    width = (hi - lo) / count
    edges = lo + width * np.arange(count + 1)
    edges[-1] = hi
    return edges, lo + width * (np.arange(count) + 0.5)


def cell_utilities(oracle: CountOracle, edges: np.ndarray) -> np.ndarray:
    """``-dist_j`` for every cell (module docstring), from the counts at the interior edges."""
    inner = np.asarray(edges[1:-1], dtype=float)
    if isinstance(oracle, SortedOracle) or inner.size <= COUNT_BATCH:
        below = oracle.counts_many(inner)[0]
    else:
        parts = [oracle.counts_many(inner[s : s + COUNT_BATCH])[0] for s in range(0, inner.size, COUNT_BATCH)]
        below = np.concatenate(parts)
    total = oracle.n_valid
    lower = np.concatenate([[0], below]).astype(np.int64)
    upper = np.concatenate([below, [total]]).astype(np.int64)
    return -np.asarray(gap_distance(lower, upper, total), dtype=float).reshape(-1)


def permute_and_flip(rng: np.random.Generator, utilities: np.ndarray, eps: float, sensitivity: float) -> int:
    """Permute-and-flip over the cells, sampled exactly (:func:`dpstats.privacy.noise.permute_and_flip`)."""
    return noise.permute_and_flip(rng, utilities, eps, sensitivity)


def release(
    rng: np.random.Generator,
    oracle: CountOracle,
    lo: float,
    hi: float,
    count: int,
    lipschitz: int,
    eps: float,
    name: str,
) -> float:
    """One recorded draw of the grid median at budget eps (utility sensitivity ``lipschitz``); the chosen centre."""
    edges, centres = lattice(lo, hi, count)
    utilities = cell_utilities(oracle, edges)

    def sample(generator: np.random.Generator) -> float:
        return float(centres[permute_and_flip(generator, utilities, eps, lipschitz)])

    return float(noise.exponential_mechanism_release(rng, sample, lambda: utilities, lipschitz, eps, name))

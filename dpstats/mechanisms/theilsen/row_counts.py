"""Per-row signs of the pair estimates about a threshold: the U-statistic's projection, in O(n log n).

For a threshold t (a released prediction) every pair p = {i, j} of rows gets
a status ``b_p`` in {0, 1} ("its estimate is below t") and a sign
``d_p = b_p - 1/2``; row i's sum ``D_i = sum_{p containing i} d_p`` is its
share of the count K(t) = sum_p b_p, centred (Hoeffding's projection of the
U-statistic K, up to the factor 1 / (n - 1)). The standard errors need the
sums of squares of the D_i (dpstats/mechanisms/theilsen/inference.py).

The status of a pair is a function of the two rows (their values and their
positions in the data) and of public numbers only: replacing one row changes
the status of its own pairs only, so every other D_i moves by at most 1. That
is all the sensitivity argument needs; ties are broken by row position, which
changes no status of a continuous problem and keeps the rule pair-wise.

Listed pairs (k matchings, small all-pairs problems): ``b_p = 1`` iff the
estimate is defined and <= t.

All pairs, counted (Alabi et al.'s estimate at x0 is the value there of the line
through the two rows; dpstats/mechanisms/theilsen/pair_counting.py derives
the geometry). With X_i = x_i - x0 and sigma_i = (y_i - t) / X_i:

* rows on the same side of x0: below iff (x, row) and (sigma, row) order the
  two rows the same way (concordant; ties by row position);
* rows on both sides: below iff the left row's (sigma, row) is the larger;
* a row at x0 (X_i = 0) with any other row: below iff y_i <= t; two rows at x0: 0.

The concordant counts per row are ``2 a_i + (m - 1 - r_i) - pos_i`` for a row
at position ``pos_i`` in the (x, row) order with rank ``r_i`` in the
(sigma, row) order, where ``a_i`` counts the earlier rows of smaller rank
(:func:`earlier_smaller`, a vectorised bottom-up merge sort).
"""

from __future__ import annotations

import numpy as np

LEAF = 32
"""Blocks of this many positions are counted by direct comparison before the merges start."""


def earlier_smaller(values: np.ndarray) -> np.ndarray:
    """For each position p, the number of earlier positions q < p with ``values[q] < values[p]`` (distinct ints).

    Blocks of :data:`LEAF` positions are counted by direct comparison and
    sorted; then a bottom-up merge sort: at width w every block of w
    positions holds its values sorted, each element of the right half of a
    2w-block counts the smaller values of the left half (a binary search),
    and both halves are merged at the positions those searches give.
    O(m log m), no Python loop over elements.
    """
    vals = np.asarray(values, dtype=np.int64)
    m = vals.size
    if m < 2:
        return np.zeros(m, dtype=np.int64)
    vals = vals - vals.min()
    big = int(vals.max()) + 1
    blocks = -(-m // LEAF)
    padded = np.full(blocks * LEAF, big, dtype=np.int64)  # padding sits after every real position
    padded[:m] = vals
    grid = padded.reshape(blocks, LEAF)
    earlier = np.tri(LEAF, k=-1, dtype=bool)
    out = ((grid[:, None, :] < grid[:, :, None]) & earlier).sum(axis=2).ravel()[:m].astype(np.int64)
    leaf_order = np.argsort(grid, axis=1, kind="stable")
    origin = (leaf_order + LEAF * np.arange(blocks)[:, None]).ravel()[:m]
    vals = np.take_along_axis(grid, leaf_order, axis=1).ravel()[:m]
    pos = np.arange(m, dtype=np.int64)
    width = LEAF
    while width < m:
        block = pos // (2 * width)
        offset = pos - 2 * width * block
        right = offset >= width
        key = block * big + vals
        left_keys, right_keys = key[~right], key[right]
        before = block * width  # elements of each half in the (full) earlier blocks
        smaller_left = np.searchsorted(left_keys, right_keys) - before[right]
        smaller_right = np.searchsorted(right_keys, left_keys) - before[~right]
        out[origin[right]] += smaller_left
        target = np.empty(m, dtype=np.int64)
        target[right] = 2 * width * block[right] + offset[right] - width + smaller_left
        target[~right] = 2 * width * block[~right] + offset[~right] + smaller_right
        new_vals, new_origin = np.empty_like(vals), np.empty_like(origin)
        new_vals[target], new_origin[target] = vals, origin
        vals, origin = new_vals, new_origin
        width *= 2
    return out


def _concordant(rank_in_x_order: np.ndarray) -> np.ndarray:
    """Per row of one side (listed in (x, row) order), the rows of that side ordered alike by ``rank``."""
    m = rank_in_x_order.size
    a = earlier_smaller(rank_in_x_order)
    return 2 * a + (m - 1 - rank_in_x_order) - np.arange(m)


def _side_ranks(order: np.ndarray, member: np.ndarray) -> np.ndarray:
    """Ranks, among the members, of the members of an ordering (``order`` lists all rows; O(n))."""
    listed = member[order]
    ranks = np.empty(member.size, dtype=np.int64)
    ranks[order[listed]] = np.arange(int(listed.sum()))
    return ranks


def all_pairs_below(x: np.ndarray, y: np.ndarray, x0: float, t: float, x_order: np.ndarray | None = None) -> np.ndarray:
    """Per row, the number of its n - 1 pairs whose status is "below t" (module docstring), O(n log n).

    ``x_order`` (optional) is a stable argsort of x, shared by several thresholds.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    n = x.size
    counts = np.zeros(n, dtype=np.int64)
    dx = x - x0
    on = dx == 0.0
    n_off = n - int(on.sum())
    counts[on] = np.where(y[on] <= t, n_off, 0)
    counts[~on] += int(np.count_nonzero(on & (y <= t)))
    if n_off == 0:
        return counts
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        sigma = np.where(on, 0.0, (y - t) / np.where(on, 1.0, dx))
    # (sigma, row) order of the rows off x0: a stable sort keeps ties in row order
    by_sigma = np.argsort(sigma, kind="stable")
    by_sigma = by_sigma[~on[by_sigma]]
    by_x = np.argsort(x, kind="stable") if x_order is None else x_order
    left, right = dx < 0.0, dx > 0.0
    rank = np.full(n, -1, dtype=np.int64)
    rank[by_sigma] = np.arange(n_off)
    rank_left, rank_right = rank[left], rank[right]
    counts[left] += np.searchsorted(np.sort(rank_right), rank_left)
    counts[right] += rank_left.size - np.searchsorted(np.sort(rank_left), rank_right, side="right")
    for side in (left, right):
        side_rank = _side_ranks(by_sigma, side)
        rows_in_x_order = by_x[side[by_x]]
        counts[rows_in_x_order] += _concordant(side_rank[rows_in_x_order])
    return counts


def all_pairs_signs(x: np.ndarray, y: np.ndarray, x0: float, t: float) -> np.ndarray:
    """``D_i`` over all pairs: the below-count minus (n - 1) / 2."""
    return all_pairs_below(x, y, x0, t) - (np.asarray(x).size - 1) / 2.0


def listed_signs(z: np.ndarray, i: np.ndarray, j: np.ndarray, n: int, t: float) -> tuple[np.ndarray, np.ndarray]:
    """``D_i`` and the pair signs ``d_p`` for listed estimates (NaN, an undefined pair, has status 0)."""
    with np.errstate(invalid="ignore"):
        d = np.where(z <= t, 0.5, -0.5)
    return np.bincount(i, d, n) + np.bincount(j, d, n), d

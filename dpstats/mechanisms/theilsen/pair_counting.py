"""Exact counting of all-pairs Theil-Sen estimates below a threshold, in O(n log n).

The all-pairs exponential median needs, for a threshold t, the counts

    lt(t) = #{pairs i < j, x_i != x_j : z_ij < t},    le(t) = #{... : z_ij <= t},

where z_ij is the *exact* value at x0 of the line through rows i and j (the
real number Algorithm 2 approximates in floating point). Listing the
n(n - 1)/2 estimates costs O(n^2); the geometry of the problem gives the
counts in O(n log n) instead.

Derivation. Put q = (x0, t), X_i = x_i - x0, Y_i = y_i - t. Then

    z_ij - t = (Y_i X_j - Y_j X_i) / (X_j - X_i),

so, with sigma_i = Y_i / X_i the slope of the segment from q to row i:

* both rows right of x0 (or both left), x_i < x_j: z_ij < t iff sigma_i < sigma_j
  (the numerator is X_i X_j (sigma_i - sigma_j), X_i X_j > 0): a *concordant* pair
  of (x, sigma), counted with Kendall's tau machinery from the number of
  discordant pairs (a Fenwick-tree sweep: scipy's compiled ``_kendall_dis``,
  with a vectorised merge-sort fallback) and the tie counts;
* x_i < x0 < x_j: z_ij < t iff sigma_i > sigma_j (X_i X_j < 0): a sorted search;
* x_i == x0: z_ij = y_i for every partner with x_j != x0;
* z_ij == t exactly iff sigma_i == sigma_j (rows collinear with q), which gives le.

Exactness. Only comparisons of sigmas are needed. They are computed in
floating point, sigma^_i = fl(fl(y_i - t) / fl(x_i - x0)), with
|sigma^_i - sigma_i| <= 3.01 u |sigma^_i| + 2^-1075 (u = 2^-53: three roundings,
each relative error <= u or exact when subnormal; |X_i| >= 2^-56 for x_i != x0
in [0, 1], so nothing overflows for a threshold within 1e12 of [0, 1]). Each row gets
the interval sigma^_i +- eta_i with eta_i = 4 u |sigma^_i| + 2^-1060. After sorting
by sigma^, a *cluster boundary* is put between consecutive positions when every
interval after it lies strictly above every interval before it (suffix
minimum of the lower ends > prefix maximum of the upper ends); then the exact
order across clusters is the float order. Within a cluster of several rows
the order is decided exactly: a cluster of copies of one point is one tie, and
any other cluster is sorted with exact rational arithmetic
(:class:`fractions.Fraction`). The dense ranks obtained are the exact ranks of
the sigmas, and every count above is an exact integer function of them.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

try:  # compiled Fenwick-tree sweep used by scipy.stats.kendalltau (private; a fallback follows)
    from scipy.stats._stats import _kendall_dis as _scipy_kendall_dis
except ImportError:  # pragma: no cover - depends on the scipy build
    _scipy_kendall_dis = None

UNIT_ROUNDOFF = 2.0**-53
TINY = 2.0**-1060
MAX_ABS_THRESHOLD = 1e12


def _pairs(counts: np.ndarray) -> int:
    counts = np.asarray(counts, dtype=np.int64)
    return int((counts * (counts - 1) // 2).sum())


def count_inversions(a: np.ndarray) -> int:
    """Number of positions p < q with ``a[p] > a[q]`` (vectorised bottom-up merge sort)."""
    vals = np.asarray(a, dtype=np.int64).copy()
    n = vals.size
    if n < 2:
        return 0
    vals -= vals.min()
    big = int(vals.max()) + 1
    pos = np.arange(n, dtype=np.int64)
    total = 0
    width = 1
    while width < n:
        block = pos // (2 * width)
        right = (pos % (2 * width)) >= width
        key = block * big + vals
        left_keys = key[~right]
        right_keys, right_block = key[right], block[right]
        end = np.searchsorted(left_keys, (right_block + 1) * big, side="left")
        not_greater = np.searchsorted(left_keys, right_keys, side="right")
        total += int((end - not_greater).sum())
        key.sort(kind="stable")
        vals = key - block * big
        width *= 2
    return total


def discordant_pairs(x_ranks_sorted: np.ndarray, y_ranks: np.ndarray) -> int:
    """Pairs with x strictly increasing and y strictly decreasing; ``x_ranks_sorted`` ascending, ranks >= 1."""
    if x_ranks_sorted.size < 2:
        return 0
    if _scipy_kendall_dis is not None:
        return int(_scipy_kendall_dis(x_ranks_sorted.astype(np.intp, copy=False), y_ranks.astype(np.intp, copy=False)))
    return discordant_pairs_numpy(x_ranks_sorted, y_ranks)


def discordant_pairs_numpy(x_ranks_sorted: np.ndarray, y_ranks: np.ndarray) -> int:
    """The fallback of :func:`discordant_pairs`: inversions of y once ties in x are ordered by y."""
    order = np.lexsort((y_ranks, x_ranks_sorted))
    return count_inversions(np.asarray(y_ranks)[order])


class _Side:
    """Rows on one side of x0: a contiguous run of the rows sorted by (x, y), with its tie counts."""

    def __init__(self, start: int, stop: int, x_sorted: np.ndarray, y_sorted: np.ndarray) -> None:
        self.index = slice(start, stop)
        self.size = m = stop - start
        xs, ys = x_sorted[self.index], y_sorted[self.index]
        new_x = np.concatenate([[True], xs[1:] != xs[:-1]]) if m else np.zeros(0, bool)
        new_point = new_x | np.concatenate([[True], ys[1:] != ys[:-1]]) if m else new_x
        self.x_ranks = np.cumsum(new_x, dtype=np.intp)
        self.total = m * (m - 1) // 2
        self.x_ties = _pairs(_run_lengths(new_x))
        self.point_ties = _pairs(_run_lengths(new_point))

    def concordant(self, ranks: np.ndarray, sigma_ties: int) -> int:
        """Pairs with x and sigma both strictly increasing (Kendall: tot - xtie - ytie + bothtie - dis)."""
        if self.size < 2:
            return 0
        dis = discordant_pairs(self.x_ranks, ranks[self.index])
        return self.total - self.x_ties - sigma_ties + self.point_ties - dis


def _run_lengths(starts: np.ndarray) -> np.ndarray:
    """Lengths of the runs whose first positions are flagged in ``starts``."""
    first = np.flatnonzero(starts)
    return np.diff(np.append(first, starts.size))


class AllPairsCounter:
    """Exact ``lt(t)`` and ``le(t)`` over all pairs for the prediction at ``x0`` (module docstring).

    ``x`` and ``y`` are the unit-scale rows (``presorted=True``: already
    sorted by x, then y, e.g. shared by the p25 and p75 counters). ``n_valid`` (pairs with distinct
    x) is the number of estimates N of the all-pairs median.
    """

    def __init__(self, x: np.ndarray, y: np.ndarray, x0: float, presorted: bool = False) -> None:
        xs = np.asarray(x, dtype=float)
        ys = np.asarray(y, dtype=float)
        self.x0 = float(x0)
        if not presorted:
            order = np.lexsort((ys, xs))
            xs, ys = xs[order], ys[order]
        n = xs.size
        lo = int(np.searchsorted(xs, self.x0, side="left"))
        hi = int(np.searchsorted(xs, self.x0, side="right"))
        new_x = np.concatenate([[True], xs[1:] != xs[:-1]]) if n else np.zeros(0, bool)
        self.n_valid = n * (n - 1) // 2 - _pairs(_run_lengths(new_x))
        self.on_y = ys[lo:hi]
        self.partners_of_on = n - (hi - lo)
        self.x_off = np.concatenate([xs[:lo], xs[hi:]])
        self.y_off = np.concatenate([ys[:lo], ys[hi:]])
        self.dx = self.x_off - self.x0
        self.left = _Side(0, lo, self.x_off, self.y_off)
        self.right = _Side(lo, self.x_off.size, self.x_off, self.y_off)

    def _check(self, t: np.ndarray) -> None:
        if not np.all(np.abs(t) <= MAX_ABS_THRESHOLD):
            raise ValueError("threshold out of the supported range")

    def _on(self, t: float) -> tuple[int, int]:
        """Pairs with a row at x = x0 (estimate = that row's y): below t, and equal to t."""
        if not self.on_y.size:
            return 0, 0
        return (
            int((self.on_y < t).sum()) * self.partners_of_on,
            int((self.on_y == t).sum()) * self.partners_of_on,
        )

    def counts(self, t: float) -> tuple[int, int]:
        """``(lt(t), le(t))``: estimates strictly below ``t`` and at most ``t`` (exact integers)."""
        t = float(t)
        self._check(np.asarray(t))
        on_lt, on_eq = self._on(t)
        if self.x_off.size == 0:
            return on_lt, on_lt + on_eq
        ranks, tied = self._ranks(t)
        left, right = self.left, self.right
        if tied:
            tie_l = _pairs(np.bincount(ranks[left.index]))
            tie_r = _pairs(np.bincount(ranks[right.index]))
            bl = np.bincount(ranks[left.index], minlength=ranks.max() + 1)
            br = np.bincount(ranks[right.index], minlength=ranks.max() + 1)
            cross_eq = int((bl * br).sum())
        else:
            tie_l = tie_r = cross_eq = 0
        lt = left.concordant(ranks, tie_l) + right.concordant(ranks, tie_r)
        if left.size and right.size:
            below = np.cumsum(np.bincount(ranks[right.index], minlength=ranks.size + 1))
            lt += int(below[ranks[left.index] - 1].sum())
        eq = (tie_l - left.point_ties) + (tie_r - right.point_ties) + cross_eq
        return lt + on_lt, lt + on_lt + eq + on_eq

    def counts_many(self, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`counts` at many thresholds, vectorised across them (same exact integers).

        Thresholds whose sigmas form no cluster (the usual case) share one
        sort of a (thresholds x rows) array; the others take :meth:`counts`.
        """
        ts = np.asarray(ts, dtype=float).ravel()
        self._check(ts)
        lt = np.empty(ts.size, dtype=np.int64)
        le = np.empty(ts.size, dtype=np.int64)
        m = self.x_off.size
        if ts.size == 0:
            return lt, le
        if m < 2 or ts.size == 1:
            for i, t in enumerate(ts):
                lt[i], le[i] = self.counts(t)
            return lt, le
        sigma = (self.y_off[None, :] - ts[:, None]) / self.dx[None, :]
        eta = 4.0 * UNIT_ROUNDOFF * np.abs(sigma) + TINY
        order = np.argsort(sigma, axis=1)
        s_sorted = np.take_along_axis(sigma, order, axis=1)
        e_sorted = np.take_along_axis(eta, order, axis=1)
        upper = np.maximum.accumulate(s_sorted + e_sorted, axis=1)
        lower = np.minimum.accumulate((s_sorted - e_sorted)[:, ::-1], axis=1)[:, ::-1]
        clean = (lower[:, 1:] > upper[:, :-1]).all(axis=1)
        ranks = np.empty(sigma.shape, dtype=np.intp)
        np.put_along_axis(ranks, order, np.arange(1, m + 1, dtype=np.intp)[None, :], axis=1)
        cross = np.zeros(ts.size, dtype=np.int64)
        left, right = self.left, self.right
        if left.size and right.size:
            t_count = ts.size
            flat = (ranks[:, right.index] + (np.arange(t_count) * (m + 1))[:, None]).ravel()
            below = np.cumsum(np.bincount(flat, minlength=t_count * (m + 1)).reshape(t_count, m + 1), axis=1)
            cross = np.take_along_axis(below, ranks[:, left.index] - 1, axis=1).sum(axis=1)
        for i, t in enumerate(ts):
            if not clean[i]:
                lt[i], le[i] = self.counts(t)
                continue
            on_lt, on_eq = self._on(float(t))
            value = left.concordant(ranks[i], 0) + right.concordant(ranks[i], 0) + int(cross[i]) + on_lt
            lt[i] = value
            le[i] = value + on_eq
        return lt, le

    def _ranks(self, t: float) -> tuple[np.ndarray, bool]:
        """Exact dense ranks (from 1) of the sigmas of the off-x0 rows, and whether any tie exists."""
        sigma = (self.y_off - t) / self.dx
        eta = 4.0 * UNIT_ROUNDOFF * np.abs(sigma) + TINY
        order = np.argsort(sigma)
        s_sorted = sigma[order]
        e_sorted = eta[order]
        m = sigma.size
        upper = np.maximum.accumulate(s_sorted + e_sorted)
        lower = np.minimum.accumulate((s_sorted - e_sorted)[::-1])[::-1]
        boundary = lower[1:] > upper[:-1]
        ranks = np.empty(m, dtype=np.intp)
        if boundary.all():
            ranks[order] = np.arange(1, m + 1)
            return ranks, False
        cluster = np.concatenate([[0], np.cumsum(boundary)])
        starts = np.flatnonzero(np.concatenate([[True], boundary]))
        x_sorted, y_sorted = self.x_off[order], self.y_off[order]
        first = starts[cluster]
        differs = (x_sorted != x_sorted[first]) | (y_sorted != y_sorted[first])
        impure = np.flatnonzero(np.bincount(cluster, weights=differs, minlength=starts.size) > 0)
        local = np.zeros(m, dtype=np.int64)
        distinct = np.ones(starts.size, dtype=np.int64)
        tied = bool((np.diff(np.append(starts, m)) > 1).any())
        for c in impure:
            lo = int(starts[c])
            hi = int(starts[c + 1]) if c + 1 < starts.size else m
            members = order[lo:hi]
            keys = [self._exact_sigma(int(i), t) for i in members]
            levels = {key: rank for rank, key in enumerate(sorted(set(keys)))}
            local[lo:hi] = [levels[key] for key in keys]
            distinct[c] = len(levels)
        base = np.cumsum(distinct) - distinct
        ranks[order] = base[cluster] + local + 1
        return ranks, tied

    def _exact_sigma(self, i: int, t: float) -> Fraction:
        return (Fraction(self.y_off[i]) - Fraction(t)) / (Fraction(self.x_off[i]) - Fraction(self.x0))

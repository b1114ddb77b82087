"""Exponential-mechanism medians of pair estimates: Alabi et al. 2022, Algorithms 3 and 4, exact and fast.

The distribution. The N estimates are clipped to the output range [lo, hi].
For an output r in (lo, hi) let ``lt(a) = #{clipped estimates < a}`` and

    dist(r) = ceil( max( gap(N/2, [lt(r - theta), lt(r + theta)]), (N mod 2)/2 ) ),

where gap(c, [a, b]) is the distance from c to the interval [a, b]. The
mechanism outputs r with density proportional to ``exp(-eps / (2 L) dist(r))``:
the exponential mechanism with utility ``-dist`` of sensitivity L at budget
eps (L = the most estimates one row can change, :mod:`.matchings`).

* theta = 0 is Algorithm 3: on the interval between the i-th and (i+1)-th
  sorted value, dist = ceil(|i - N/2|), the rank distance of the paper's
  ``distFromMedian`` (its utility ``-|#above - #below|`` has sensitivity 2 per
  changed estimate and rank distances are half of it, whence eps/2 per rank).
* theta > 0 is Algorithm 4: shifting the lower half of the sorted values down
  by theta and the upper half up by theta (the middle value of an odd N stays)
  gives exactly the breakpoints of dist above; Algorithm 4's insertion of the
  median for even N shifts every interval's distance by one, which leaves the
  distribution unchanged (tests/test_theilsen_privacy.py checks both against
  the literal pseudo-code).

Sensitivity. Replacing one row changes at most L estimates; each change
(replace, or drop/add when the pair stops or starts defining a line) moves
every lt(.) by at most one and N/2 by at most 1/2, so the quantity inside the
ceiling moves by at most 1 (replace) or 1/2 (drop/add) and dist, the ceiling
of a half-integer, by at most 1 per estimate: at most L in all.

The sampler: adaptive rejection sampling, exact. Knots lo = t_0 < ... < t_K = hi
carry ``le(t - theta)`` and ``lt(t + theta)``. For r in (t_k, t_{k+1}),
``le(t_k - theta) <= lt(r - theta)`` and ``lt(r + theta) <= lt(t_{k+1} + theta)``,
so dist(r) >= d_k := dist of the hull [le(t_k - theta), lt(t_{k+1} + theta)]:
the step function g(r) = exp(-eps/(2L) d_k) is an envelope of the target
density f. Each round picks block k with probability proportional to
``(t_{k+1} - t_k) g_k`` (exactly: lengths in units of 2^-1074, exponents
rational; dpstats/privacy/exact_choice.py), draws r uniformly in it (a uniform
real rounded down to a double), and accepts with probability f(r)/g(r) =
exp(-eps/(2L) (dist(r) - d_k)) (an exact Bernoulli). On rejection r becomes a knot. Given the
history, an accepted r has density proportional to g(r) f(r)/g(r) = f(r), so
the output is distributed exactly as the mechanism prescribes (adaptive
rejection sampling, Gilks & Wild 1992: the envelope changes only after
rejections). The knots only change the running time; the starting ones are
placed at (approximate) quantiles of the estimates near the median rank.
Only ``lt``/``le`` counts are needed, from an *oracle*: a sorted array
(:class:`SortedOracle`) or the O(n log n) all-pairs counter
(:class:`~dpstats.mechanisms.theilsen.pair_counting.AllPairsCounter`), so the
all-pairs median never lists its n(n - 1)/2 estimates.

Small problems. For a sorted oracle of at most ``DIRECT_MAX`` estimates
:func:`exponential_median` runs Algorithm 3/4 literally instead (an exact
choice over all N + 1 intervals of :func:`interval_distribution`): the same law.

Floating point (Mironov 2012). With theta = 0 both samplers are exact for the
doubles released: the output is a uniform real rounded down to a double, and
no estimate (a double) lies strictly between it and the next double, so the
density there is dist just right of it (:meth:`RejectionSampler._evaluate`).
With theta > 0 the breakpoints z +- theta are computed in floating point: that
release says it is not float-safe (dpstats/mechanisms/theilsen/mechanism.py).
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from ...privacy import exact_choice, noise
from ...privacy.random_bits import RandomBits
from ...privacy.samplers import uniform_double
from .pair_counting import AllPairsCounter

UTILITY_GRID = 257
DIRECT_MAX = 1 << 16
REFINE_FOLDS = (0.0,)
REFINE_ROUNDS = 3
REFINE_BRACKET = 8.0
GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


class CountOracle(Protocol):
    """``counts(t) = (#{z < t}, #{z <= t})`` over the N defined estimates; a sorted sample as a hint."""

    n_valid: int

    def counts(self, t: float) -> tuple[int, int]: ...

    def counts_many(self, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

    def hint(self) -> tuple[np.ndarray, bool]: ...


class SortedOracle:
    """Counts from the sorted estimates themselves (k matchings, or small all-pairs problems)."""

    def __init__(self, values_sorted: np.ndarray) -> None:
        self.values = np.asarray(values_sorted, dtype=float)
        self.n_valid = int(self.values.size)

    def counts(self, t: float) -> tuple[int, int]:
        """Exact counts by binary search."""
        return int(self.values.searchsorted(t, side="left")), int(self.values.searchsorted(t, side="right"))

    def counts_many(self, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`counts` at many thresholds."""
        return np.searchsorted(self.values, ts, side="left"), np.searchsorted(self.values, ts, side="right")

    def hint(self) -> tuple[np.ndarray, bool]:
        """The full sorted array: knots can sit on exact order statistics."""
        return self.values, True


class CountingOracle:
    """All-pairs counts without listing the pairs (exact; see :mod:`.pair_counting`)."""

    def __init__(self, counter: AllPairsCounter, pilot_sorted: np.ndarray) -> None:
        self.counter = counter
        self.pilot = pilot_sorted
        self.n_valid = counter.n_valid

    def counts(self, t: float) -> tuple[int, int]:
        """Exact counts in O(n log n)."""
        return self.counter.counts(t)

    def counts_many(self, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`counts` at many thresholds, vectorised."""
        return self.counter.counts_many(ts)

    def hint(self) -> tuple[np.ndarray, bool]:
        """Estimates of a deterministic spread of pairs: approximate quantiles."""
        return self.pilot, False


class _Clipped:
    """Counts of the estimates clipped to [lo, hi], at any threshold."""

    def __init__(self, oracle: CountOracle, lo: float, hi: float) -> None:
        self.oracle, self.lo, self.hi, self.n = oracle, lo, hi, oracle.n_valid

    def __call__(self, a: float) -> tuple[int, int]:
        if a < self.lo:
            return 0, 0
        if a > self.hi:
            return self.n, self.n
        lt, le = self.oracle.counts(a)
        if a == self.lo:
            lt = 0
        if a == self.hi:
            le = self.n
        return lt, le

    def many(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The same counts at many thresholds."""
        a = np.asarray(a, dtype=float)
        lt = np.where(a > self.hi, self.n, 0).astype(np.int64)
        le = np.where(a >= self.hi, self.n, 0).astype(np.int64)
        inside = (a >= self.lo) & (a <= self.hi)
        if inside.any():
            got_lt, got_le = self.oracle.counts_many(a[inside])
            got_lt = np.where(a[inside] == self.lo, 0, got_lt)
            got_le = np.where(a[inside] == self.hi, self.n, got_le)
            lt[inside], le[inside] = got_lt, got_le
        return lt, le


def gap_distance(a: np.ndarray | int, b: np.ndarray | int, n: int) -> np.ndarray | int:
    """dist for the count interval [a, b]: ceil(max(gap(n/2, [a, b]), (n mod 2)/2)), in integers."""
    if type(a) is int and type(b) is int:
        twice = n - 2 * b if 2 * b < n else (2 * a - n if 2 * a > n else 0)
        return (max(int(twice), n % 2) + 1) // 2
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    twice = np.where(2 * b < n, n - 2 * b, np.where(2 * a > n, 2 * a - n, 0))
    out = (np.maximum(twice, n % 2) + 1) // 2
    return int(out) if out.ndim == 0 else out


def _initial_knots(
    hint: np.ndarray, exact: bool, n: int, rate: float, lo: float, hi: float, theta: float
) -> np.ndarray:
    """Starting knots near the median rank: 0, 2, 6 and 20 e-folds of the weight away from it.

    With an exact hint (the sorted estimates) the order statistics next to
    the median are knots too, so the central intervals start exact. With an
    approximate hint (a pilot sample) knots closer than the pilot's rank
    resolution are merged. Beyond 20 e-folds the weight is below 2e-9 of its
    peak, so the two outer blocks are rarely proposed; when they are, a
    rejection refines them. Only the running time depends on this choice.
    """
    m = hint.size
    if m == 0 or n == 0:
        return np.zeros(0)
    fold = 1.0 / rate if rate > 0 else float(n)
    steps = [0.0, 2.0, 6.0, 20.0]
    offsets = sorted({s * fold * sign for s in steps for sign in (1.0, -1.0)}, key=abs)
    if exact:
        offsets = sorted({*offsets, -2.0, -1.0, 1.0}, key=abs)
    min_gap = 1 if exact else max(1, int(math.sqrt(m) / 2))
    chosen: list[tuple[int, float]] = []
    for off in offsets:
        idx = min(m - 1, max(0, math.floor((n / 2.0 + off) * m / n)))
        if all(abs(idx - j) >= min_gap for j, _ in chosen):
            chosen.append((idx, off))
    knots = []
    for idx, off in chosen:
        # a pilot value is (nearly) some pair's estimate: the midpoint to its neighbour avoids near-ties
        v = float(hint[idx]) if exact or idx + 1 >= m else 0.5 * (float(hint[idx]) + float(hint[idx + 1]))
        if theta == 0.0 or off <= 0:
            knots.append(v - theta)
        if theta > 0.0 and off >= 0:
            knots.append(v + theta)
    out = np.unique(np.asarray(knots, dtype=float))
    return out[(out > lo) & (out < hi)]


def _knot_counts(clipped: _Clipped, t: np.ndarray, theta: float) -> tuple[list[int], list[int]]:
    """``le(t - theta)`` (a knot as the left end of a block) and ``lt(t + theta)`` (as the right end)."""
    if theta == 0.0:
        lt, le = clipped.many(t)
        return le.tolist(), lt.tolist()
    return clipped.many(t - theta)[1].tolist(), clipped.many(t + theta)[0].tolist()


def _refine(
    clipped: _Clipped, ts: list[float], left: list[int], right: list[int], n: int, rate: float, theta: float
) -> tuple[list[float], list[int], list[int]]:
    """Regula falsi on the knots' counts towards the median rank N/2 (deterministic).

    A pilot places knots only to its own rank resolution; a few batched
    rounds of interpolation bring knots within about one e-fold of those
    ranks, so that the rejection sampler starts from a tight envelope. Any
    knots give an exact sampler; these only save rejections. It runs only
    while the bracket of N/2 spans more than REFINE_BRACKET e-folds.
    """
    fold = 1.0 / rate if rate > 0 else float(n)
    targets = [n / 2.0 + f * fold for f in REFINE_FOLDS if 0.0 < n / 2.0 + f * fold < n]
    for _ in range(REFINE_ROUNDS):
        new: list[float] = []
        for rho in targets:
            g = right if rho <= n / 2.0 else left
            k = int(np.searchsorted(g, rho, side="right")) - 1
            if k < 0 or k + 1 >= len(ts) or g[k + 1] - g[k] <= REFINE_BRACKET * fold:
                continue
            frac = min(0.9, max(0.1, (rho - g[k]) / (g[k + 1] - g[k])))
            point = ts[k] + frac * (ts[k + 1] - ts[k])
            if ts[k] < point < ts[k + 1]:
                new.append(point)
        if not new:
            break
        points = np.unique(np.asarray(new))
        new_left, new_right = _knot_counts(clipped, points, theta)
        order = np.argsort(np.concatenate([ts, points]), kind="stable")
        ts = np.concatenate([ts, points])[order].tolist()
        left = np.concatenate([left, new_left])[order].tolist()
        right = np.concatenate([right, new_right])[order].tolist()
    return ts, left, right


def exponential_median(
    rng: np.random.Generator,
    oracle: CountOracle,
    lo: float,
    hi: float,
    eps: float,
    sensitivity: float,
    theta: float = 0.0,
    method: str = "auto",
) -> float:
    """One draw of the (widened) exponential-mechanism median (module docstring); exact.

    ``method="direct"`` is Algorithm 3/4 literally (an exact choice over all N + 1
    intervals, :func:`interval_distribution`; needs a :class:`SortedOracle`),
    ``"rejection"`` the adaptive rejection sampler; ``"auto"`` takes the
    direct one for a sorted oracle of at most ``DIRECT_MAX`` estimates.
    """
    if method not in ("auto", "direct", "rejection"):
        raise ValueError("method must be 'auto', 'direct' or 'rejection'")
    direct = method == "direct" or (
        method == "auto" and isinstance(oracle, SortedOracle) and oracle.n_valid <= DIRECT_MAX
    )
    if direct:
        if not isinstance(oracle, SortedOracle):
            raise ValueError("the direct sampler needs the sorted estimates")
        edges, utilities = interval_distribution(oracle.values, lo, hi, theta)
        return noise.exponential_mechanism_intervals(rng, edges, utilities, eps, sensitivity)
    return RejectionSampler(oracle, lo, hi, eps, sensitivity, theta).draw(rng)


class RejectionSampler:
    """The adaptive rejection sampler of the module docstring, with its envelope kept between draws.

    The starting knots are deterministic (pilot or order statistics, then
    :func:`_refine`); every rejection adds a knot. Each :meth:`draw` is an
    exact draw given everything before it, so repeated draws are i.i.d. from
    the mechanism's distribution (the tests draw many from one sampler; a
    release makes one).
    """

    def __init__(
        self, oracle: CountOracle, lo: float, hi: float, eps: float, sensitivity: float, theta: float = 0.0
    ) -> None:
        self.n = oracle.n_valid
        self.eps, self.sensitivity = eps, sensitivity
        self.rate = eps / (2.0 * sensitivity)
        self.theta = float(theta)
        self.clipped = _Clipped(oracle, lo, hi)
        hint, exact = oracle.hint()
        ts = [lo, *_initial_knots(hint, exact, self.n, self.rate, lo, hi, self.theta).tolist(), hi]
        left, right = _knot_counts(self.clipped, np.asarray(ts), self.theta)
        if not exact:
            ts, left, right = _refine(self.clipped, ts, left, right, self.n, self.rate, self.theta)
        self.ts, self.left, self.right = ts, left, right
        self._update()

    def _update(self) -> None:
        self.d = gap_distance(np.asarray(self.left[:-1]), np.asarray(self.right[1:]), self.n)
        self.lengths = exact_choice.exact_lengths(np.asarray(self.ts))

    def _block(self, k: int) -> tuple[int, int]:
        """Envelope distance and exact length (in units of 2^-1074) of block k (between knots k and k + 1)."""
        d = gap_distance(self.left[k], self.right[k + 1], self.n)
        return d, exact_choice.exact_lengths(np.asarray(self.ts[k : k + 2]))[0]

    def _insert(self, k: int, r: float, new_left: int, new_right: int) -> None:
        """Split block k at r (a rejected proposal) and update only the two new blocks."""
        self.ts.insert(k + 1, r)
        self.left.insert(k + 1, new_left)
        self.right.insert(k + 1, new_right)
        (d0, s0), (d1, s1) = self._block(k), self._block(k + 1)
        self.d = np.insert(self.d, k + 1, d1)
        self.lengths.insert(k + 1, s1)
        self.d[k], self.lengths[k] = d0, s0

    def _evaluate(self, r: float) -> tuple[int, int, int]:
        """dist just right of r (the density on (r, next double)), and r's counts as a knot.

        A draw is a uniform real rounded down to the double r; no estimate lies
        strictly between r and the next double, so with theta = 0 the density
        there is dist at the rank ``le(r)``. With theta > 0 the knots are
        ``le(r - theta)`` and ``lt(r + theta)``, computed in floating point.
        """
        if self.theta == 0.0:
            lt, le = self.clipped(r)
            return gap_distance(le, le, self.n), le, lt
        lt_lo, le_lo = self.clipped(r - self.theta)
        lt_hi = self.clipped(r + self.theta)[0]
        return gap_distance(lt_lo, lt_hi, self.n), le_lo, lt_hi

    def draw(self, rng: np.random.Generator) -> float:
        """One draw (module docstring), exact for theta = 0: block, point and acceptance in integer arithmetic.

        A rejection splits its block at the proposal. A block one double wide cannot be split; its envelope
        is then set to the density there (constant: no estimate lies inside it). Without that, a median on
        tied estimates (a resample's duplicated rows) at a large eps rejected forever: the block holding the
        tie kept an envelope of distance 0 that no split could tighten.
        """
        while True:
            k = noise.exponential_choice(rng, -self.d.astype(float), self.eps, self.sensitivity, self.lengths)
            r = uniform_double(RandomBits(rng), self.ts[k], self.ts[k + 1])
            dist, new_left, new_right = self._evaluate(r)
            excess = dist - int(self.d[k])
            if excess < 0:
                raise RuntimeError("exponential_median: envelope below the density (a bug, not a data property)")
            if excess == 0 or exact_choice.keep(rng, float(excess), self.eps, self.sensitivity):
                return r
            if self.theta == 0.0 and r == self.ts[k] and math.nextafter(r, math.inf) == self.ts[k + 1]:
                self.d[k] = dist  # one double wide: the density is dist on all of it, and no knot can split it
                continue
            self._insert(k, r, new_left, new_right)


def release(
    rng: np.random.Generator,
    oracle: CountOracle,
    lo: float,
    hi: float,
    lipschitz: int,
    eps: float,
    theta: float,
    name: str,
) -> float:
    """One recorded draw of Algorithm 3 (theta = 0) or 4 at budget eps with utility sensitivity ``lipschitz``."""

    def sample(generator: np.random.Generator) -> float:
        return exponential_median(generator, oracle, lo, hi, eps, lipschitz, theta)

    def utility() -> np.ndarray:
        return utility_on_grid(oracle, lo, hi, theta, utility_grid(lo, hi))

    return float(noise.exponential_mechanism_release(rng, sample, utility, lipschitz, eps, name))


def utility_grid(lo: float, hi: float, size: int = UTILITY_GRID) -> np.ndarray:
    """A fixed, public grid of outputs strictly inside (lo, hi) (golden-ratio offset avoids round numbers)."""
    return lo + (hi - lo) * (np.arange(size) + GOLDEN) / size


def utility_on_grid(oracle: CountOracle, lo: float, hi: float, theta: float, grid: np.ndarray) -> np.ndarray:
    """``-dist(r)`` at each grid point (the utility the audit replays)."""
    clipped = _Clipped(oracle, lo, hi)
    below = clipped.many(grid - theta)[0]
    above = below if theta == 0.0 else clipped.many(grid + theta)[0]
    return -np.asarray(gap_distance(below, above, oracle.n_valid), dtype=float)


def interval_distribution(
    values: np.ndarray, lo: float, hi: float, theta: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 3 (theta = 0) or 4 (theta > 0), literally: interval edges and utilities.

    The reference the fast sampler is tested against. Algorithm 4 as printed
    (with its evident typo ``z[n-i-1] = min(r_u, z[i] + theta)`` read as
    ``z[n-i-1] + theta``): clip, insert the median when N is even, move the
    lower half down and the upper half up by theta (the middle value stays),
    insert r_l and r_u, and give interval i the utility ``-ceil(|i - n/2|)``
    (its density is proportional to ``exp(eps/(2L) utility)``).
    """
    z = np.sort(np.clip(np.asarray(values, dtype=float), lo, hi))
    if theta > 0.0:
        if z.size % 2 == 0 and z.size > 0:
            z = np.insert(z, z.size // 2, (z[z.size // 2 - 1] + z[z.size // 2]) / 2.0)
        half = z.size // 2
        z[:half] = np.maximum(lo, z[:half] - theta)
        z[z.size - half :] = np.minimum(hi, z[z.size - half :] + theta)
    edges = np.concatenate([[lo], z, [hi]])
    n_edges = edges.size
    i = np.arange(1, n_edges)
    return edges, -np.ceil(np.abs(i - n_edges / 2.0))

"""All pairs' estimates for the smooth-sensitivity median, in memory linear in n.

Lemma 10's bound (dpstats/mechanisms/theilsen/smooth_sensitivity.py) reads the
doubled vector w only at positions within ``(l + 1) K`` of the median, for the
l it evaluates, and it never evaluates an l beyond
``l* = min(saturation, floor(log((r_u - r_l) / S_0) / t))``, where S_0 is its
l = 0 term (the local sensitivity): the bound's running maximum only grows,
so its stopping rule only tightens. So only the estimates of the ranks in that
band are needed, about ``2 (l* + 2) K`` of the n(n - 1)/2, and ``K = 2 (n - 1)``
for all pairs: memory O(l* n) instead of O(n^2) (l* depends on eps through t,
about 55 at eps = 1, not on n).

The band is found in two rounds (the l = 0 band, then the l* band). For each,
:class:`~dpstats.mechanisms.theilsen.pair_counting.AllPairsCounter` (exact
counts of the estimates below a threshold, in O(n log n), never listing the
pairs) brackets the band's end values by bisection; one streamed pass over
the pairs in row blocks then keeps the estimates between them and counts those
below. The stream, which computes every estimate exactly as the full vector
does, is the source of truth: if its counts show that the band misses a rank
(the counter's arithmetic may round differently), the band is widened to the
whole range and the pass repeated. The vector that results equals the full
one at every position the bound reads, so the bound, and the release, are
exactly those of the full vector (tests/test_theilsen_privacy.py checks it).
"""

from __future__ import annotations

import math

import numpy as np

from .pair_counting import MAX_ABS_THRESHOLD, AllPairsCounter
from .pair_estimates import n_pairs, pair_estimates
from .smooth_sensitivity import DoubledVector

BISECTIONS = 40
"""Bisection steps per band end: the bracket shrinks to 2^-40 of the output range."""
ROW_BLOCK = 1 << 20
"""About this many pairs per streamed block (bounded temporary memory)."""


def _blocks(n: int):
    """Row blocks (i, j) of the pairs i < j, about :data:`ROW_BLOCK` pairs each."""
    row = 0
    while row < n - 1:
        rows = [row]
        size = n - 1 - row
        while rows[-1] + 1 < n - 1 and size + (n - 2 - rows[-1]) <= ROW_BLOCK:
            rows.append(rows[-1] + 1)
            size += n - 1 - rows[-1]
        r = np.asarray(rows)
        counts = n - 1 - r
        i = np.repeat(r, counts)
        yield i, np.arange(size) - np.repeat(np.cumsum(counts) - counts, counts) + i + 1
        row = rows[-1] + 1


def _stream(x, y, x0, lo, hi, v_a, v_b) -> tuple[np.ndarray, int, int]:
    """The clipped estimates in [v_a, v_b] (sorted), the number below v_a, and the undefined pairs."""
    kept, below, undefined = [], 0, 0
    for i, j in _blocks(x.size):
        z = pair_estimates(x, y, i, j, x0)
        defined = ~np.isnan(z)
        undefined += int(z.size - defined.sum())
        values = np.clip(z[defined], lo, hi)
        below += int((values < v_a).sum())
        kept.append(values[(values >= v_a) & (values <= v_b)])
    band = np.concatenate(kept) if kept else np.zeros(0)
    band.sort()
    return band, below, undefined


def _bracket(counter: AllPairsCounter, lo: float, hi: float, r_a: int, r_b: int) -> tuple[float, float]:
    """Values v_a <= (estimate of rank r_a) and v_b >= (estimate of rank r_b), as the counter counts."""
    lo_c, hi_c = max(lo, -MAX_ABS_THRESHOLD), min(hi, MAX_ABS_THRESHOLD)
    a, b = lo_c, hi_c  # lt(a) <= r_a holds at lo (no clipped value is below lo)
    for _ in range(BISECTIONS):
        mid = 0.5 * (a + b)
        if counter.counts(mid)[0] <= r_a:
            a = mid
        else:
            b = mid
    v_a = a if a > lo_c else lo
    a, b = lo_c, hi_c  # le(b) >= r_b + 1 holds at hi
    for _ in range(BISECTIONS):
        mid = 0.5 * (a + b)
        if counter.counts(mid)[1] >= r_b + 1:
            b = mid
        else:
            a = mid
    v_b = b if b < hi_c else hi
    return v_a, v_b


def _band_vector(x, y, x0, lo, hi, counter, positions: tuple[int, int]) -> DoubledVector:
    """The doubled vector, keeping the estimates behind the 1-based ``positions`` (both ends included)."""
    total = n_pairs(x.size)
    undefined = total - counter.n_valid
    for attempt in range(2):
        defined = total - undefined
        r_a = min(max((positions[0] - undefined - 1) // 2, 0), max(defined - 1, 0))
        r_b = min(max((positions[1] - undefined - 1) // 2, 0), max(defined - 1, 0))
        v_a, v_b = (lo, hi) if attempt else _bracket(counter, lo, hi, r_a, r_b)
        band, below, streamed_undefined = _stream(x, y, x0, lo, hi, v_a, v_b)
        if streamed_undefined == undefined and below <= r_a and below + band.size >= r_b + 1:
            break
        undefined = streamed_undefined  # the stream is the source of truth: widen and repeat
    return DoubledVector(band, undefined, lo, hi, offset=below, n_defined=total - undefined)


def all_pairs_vector(
    x: np.ndarray, y: np.ndarray, x0: float, lo: float, hi: float, lipschitz: int, t: float
) -> DoubledVector:
    """The all-pairs doubled vector at every position Lemma 10's bound reads (module docstring)."""
    counter = AllPairsCounter(x, y, x0)
    k = 2 * int(lipschitz)
    m = n_pairs(x.size)
    first = _band_vector(x, y, x0, lo, hi, counter, (m - k, m + k))
    med = float(first.at(first.m))
    best = max(float(first.at(first.m + k)) - med, med - float(first.at(first.m - k)), 0.0)
    saturation = max(1, math.ceil((2 * first.m + 1) / k) - 1)
    width = hi - lo
    stop = saturation if best <= 0 or width <= 0 else min(saturation, math.floor(math.log(width / best) / t))
    reach = (max(stop, 0) + 1) * k
    return _band_vector(x, y, x0, lo, hi, counter, (first.m - reach, first.m + reach))

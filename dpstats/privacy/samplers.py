"""Exact samplers in integer arithmetic: Bernoulli(exp(-gamma)), discrete Laplace, discrete Gaussian.

Canonne, Kamath & Steinke (2020), "The discrete Gaussian for differential
privacy", Algorithms 1-3. Every draw is made from uniform integers
(``Generator.integers``, exact bounded rejection on the generator's bits), with
no floating-point operation on the way, so the law of each output is exactly
the one its proof assumes (notes/FLOAT_SAFETY.md). The generator itself is
cryptographic (dpstats/privacy/noise.py, :func:`~dpstats.privacy.noise.make_rng`).

The vectorised samplers work on int64 arrays: every rational is given as a
numerator and a denominator whose products with the loop counters stay below
2^62 (callers keep denominators at or below :data:`MAX_DENOMINATOR`).
:func:`bernoulli_exp_int` is the scalar version on Python integers of any size,
for the discrete Gaussian's acceptance step.

Exactness caveat: the whole part of an exponent is capped at 2^62 (the chance
of reaching that cap is below exp(-2^62), zero in any double).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

MAX_DENOMINATOR = 1 << 40
"""The largest denominator (and integer scale) the vectorised samplers take."""
_WHOLE_CAP = 1 << 62


def _as_int64(values, name: str) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integers")
    return array.astype(np.int64)


def bernoulli_exp(rng: np.random.Generator, num, den) -> np.ndarray:
    """Independent Bernoulli(exp(-num / den)) draws, for integers num >= 0 and 1 <= den <= MAX_DENOMINATOR.

    Canonne, Kamath & Steinke (2020), Algorithm 1 (:func:`bernoulli_exp_parts`
    on num's whole and fractional parts).
    """
    num, den = np.broadcast_arrays(_as_int64(num, "num"), _as_int64(den, "den"))
    if np.any(num < 0) or np.any(den < 1):
        raise ValueError("bernoulli_exp needs num >= 0 and den >= 1")
    return bernoulli_exp_parts(rng, num // den, num % den, den)


def bernoulli_exp_parts(rng: np.random.Generator, whole, frac, den) -> np.ndarray:
    """Independent Bernoulli(exp(-(whole + frac / den))) draws (int64 arrays, 0 <= frac < den <= MAX_DENOMINATOR).

    Canonne, Kamath & Steinke (2020), Algorithm 1: the whole part is ``whole``
    independent Bernoulli(exp(-1)) draws that must all succeed, and the
    fraction f in [0, 1) is sampled by the series: K = 1; while
    Bernoulli(f / K): K += 1; succeed iff K is odd.
    """
    whole, frac, den = np.broadcast_arrays(_as_int64(whole, "whole"), _as_int64(frac, "frac"), _as_int64(den, "den"))
    if np.any(den > MAX_DENOMINATOR) or np.any(frac < 0) or np.any(frac >= den) or np.any(whole < 0):
        raise ValueError("bernoulli_exp_parts needs whole >= 0 and 0 <= frac < den <= MAX_DENOMINATOR")
    shape = whole.shape
    whole, frac, den = np.minimum(whole.ravel(), _WHOLE_CAP), frac.ravel(), den.ravel()
    alive = np.ones(whole.size, dtype=bool)
    pending = np.flatnonzero(whole > 0)
    while pending.size:  # the whole part: Bernoulli(exp(-1)) until one fails or the count is spent
        ok = _bernoulli_exp_fraction(rng, np.ones(pending.size, np.int64), np.ones(pending.size, np.int64))
        alive[pending[~ok]] = False
        whole[pending[ok]] -= 1
        pending = pending[ok & (whole[pending] > 0)]
    live = np.flatnonzero(alive)
    alive[live] = _bernoulli_exp_fraction(rng, frac[live], den[live])
    return alive.reshape(shape)


def _bernoulli_exp_fraction(rng: np.random.Generator, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Bernoulli(exp(-num/den)) for 0 <= num <= den (CKS 2020, Algorithm 1, gamma in [0, 1])."""
    k = np.ones(num.size, dtype=np.int64)
    pending = np.arange(num.size)
    while pending.size:
        going = rng.integers(0, den[pending] * k[pending]) < num[pending]  # Bernoulli(gamma / K)
        k[pending[going]] += 1
        pending = pending[going]
    return (k % 2) == 1


def discrete_laplace(rng: np.random.Generator, scale: int, size: int | tuple[int, ...]) -> np.ndarray:
    """Draws of the discrete Laplace law on the integers, P(z) proportional to exp(-|z| / scale), scale an integer.

    Canonne, Kamath & Steinke (2020), Algorithm 2 with s = 1, t = scale: U
    uniform on {0, ..., t - 1} kept with probability exp(-U/t); V geometric
    (the number of Bernoulli(exp(-1)) successes before a failure); the
    magnitude is U + tV, its sign a fair coin, and (sign -, 0) is rejected so
    that 0 is not counted twice. Vectorised by redrawing the rejected entries.
    """
    scale = int(scale)
    if not 1 <= scale <= MAX_DENOMINATOR:
        raise ValueError("discrete_laplace needs an integer scale in [1, MAX_DENOMINATOR]")
    out = np.empty(int(np.prod(size)), dtype=np.int64)
    pending = np.arange(out.size)
    t = np.int64(scale)
    while pending.size:
        u = rng.integers(0, t, pending.size)
        keep = bernoulli_exp(rng, u, np.full(pending.size, t))
        u, slots = u[keep], pending[keep]
        v = _geometric_exp1(rng, slots.size)
        magnitude = u + t * v
        negative = rng.integers(0, 2, slots.size) == 1
        valid = ~(negative & (magnitude == 0))
        out[slots[valid]] = np.where(negative, -magnitude, magnitude)[valid]
        done = np.zeros(pending.size, dtype=bool)
        done[np.flatnonzero(keep)[valid]] = True
        pending = pending[~done]
    return out.reshape(size)


def _geometric_exp1(rng: np.random.Generator, count: int) -> np.ndarray:
    """The number of Bernoulli(exp(-1)) successes before the first failure, ``count`` times."""
    v = np.zeros(count, dtype=np.int64)
    pending = np.arange(count)
    while pending.size:
        ok = bernoulli_exp(rng, np.ones(pending.size, np.int64), np.ones(pending.size, np.int64))
        v[pending[ok]] += 1
        pending = pending[ok]
    return v


def uniform_below(rng: np.random.Generator, bound: int) -> int:
    """A uniform integer in [0, bound) for a Python integer ``bound`` >= 1 of any size (rejection on random bytes)."""
    bound = int(bound)
    if bound < 1:
        raise ValueError("uniform_below needs bound >= 1")
    if bound <= 1 << 62:
        return int(rng.integers(0, bound))
    bits = bound.bit_length()
    nbytes = (bits + 7) // 8
    while True:
        draw = int.from_bytes(rng.bytes(nbytes), "little") >> (8 * nbytes - bits)
        if draw < bound:
            return draw


def bernoulli_exp_int(rng: np.random.Generator, num: int, den: int) -> bool:
    """One Bernoulli(exp(-num/den)) draw for Python integers num >= 0, den >= 1 of any size (CKS 2020, Algorithm 1)."""
    if num < 0 or den < 1:
        raise ValueError("bernoulli_exp_int needs num >= 0 and den >= 1")
    whole, frac = divmod(int(num), int(den))
    for _ in range(min(whole, _WHOLE_CAP)):
        if not _bernoulli_exp_unit_int(rng, 1, 1):
            return False
    return _bernoulli_exp_unit_int(rng, frac, int(den))


def _bernoulli_exp_unit_int(rng: np.random.Generator, num: int, den: int) -> bool:
    """Bernoulli(exp(-num/den)) for 0 <= num <= den: K = 1; while Bernoulli(gamma / K): K += 1; K odd."""
    k = 1
    while uniform_below(rng, den * k) < num:
        k += 1
    return k % 2 == 1


def discrete_gaussian(rng: np.random.Generator, sigma2: int, size: int | tuple[int, ...]) -> np.ndarray:
    """Draws of the discrete Gaussian on the integers, P(z) proportional to exp(-z^2 / (2 sigma2)), sigma2 an integer.

    Canonne, Kamath & Steinke (2020), Algorithm 3: with t = floor(sigma) + 1,
    a discrete Laplace(t) proposal Y is kept with probability
    exp(-(|Y| - sigma2/t)^2 / (2 sigma2)) = exp(-(|Y| t - sigma2)^2 / (2 sigma2 t^2)),
    an exact rational exponent (Python integers: no overflow at any scale).
    """
    sigma2 = int(sigma2)
    if sigma2 < 1:
        raise ValueError("discrete_gaussian needs an integer sigma2 >= 1")
    t = math.isqrt(sigma2) + 1
    if t > MAX_DENOMINATOR:
        raise ValueError("discrete_gaussian's sigma is beyond MAX_DENOMINATOR")
    count = int(np.prod(size))
    out = np.empty(count, dtype=np.int64)
    den = 2 * sigma2 * t * t
    filled = 0
    while filled < count:
        proposals = discrete_laplace(rng, t, count - filled)
        for y in proposals.tolist():
            if bernoulli_exp_int(rng, (abs(y) * t - sigma2) ** 2, den):
                out[filled] = y
                filled += 1
    return out.reshape(size)


# --------------------------------------------------------------------------
# A choice among pieces weighted c_i exp(-gamma_i), and a uniform real rounded down to a double
# --------------------------------------------------------------------------

_E_TERMS_GUARD = 8


def _e_bounds(bits: int) -> tuple[int, int]:
    """Integers lo <= 2^bits e^-1 <= hi, from the series e = sum 1/n! (integer arithmetic, rigorous)."""
    scale = 1 << (bits + _E_TERMS_GUARD)
    total, term, n = 0, scale, 0
    while term:
        total += term
        n += 1
        term //= n  # floor at every step: the sum is below e * scale by at most n + 1
    e_lo, e_hi = total, total + n + 2
    return (scale << bits) // e_hi, -((-scale << bits) // e_lo)


def _exp_neg_bounds(ks: list[int], bits: int) -> tuple[list[int], list[int]]:
    """Integers lo_k <= 2^bits e^-k <= hi_k for increasing integers k >= 0 (interval arithmetic)."""
    one = 1 << bits
    e_lo, e_hi = _e_bounds(bits)
    lows, highs = [], []
    cur_k, cur_lo, cur_hi = 0, one, one
    for k in ks:
        step = k - cur_k
        if step:
            p_lo, p_hi = _pow_bounds(e_lo, e_hi, step, bits)
            cur_lo, cur_hi = (cur_lo * p_lo) >> bits, -((-cur_hi * p_hi) >> bits)
            cur_k = k
        lows.append(cur_lo)
        highs.append(max(cur_hi, 1))
    return lows, highs


def _pow_bounds(lo: int, hi: int, power: int, bits: int) -> tuple[int, int]:
    """Bounds on (x / 2^bits)^power * 2^bits for lo <= x <= hi, by squaring (floor for lo, ceiling for hi)."""
    r_lo, r_hi, b_lo, b_hi = 1 << bits, 1 << bits, lo, hi
    while power:
        if power & 1:
            r_lo, r_hi = (r_lo * b_lo) >> bits, -((-r_hi * b_hi) >> bits)
        power >>= 1
        if power:
            b_lo, b_hi = (b_lo * b_lo) >> bits, -((-b_hi * b_hi) >> bits)
        if r_hi <= 1 and b_hi <= 1:  # below one unit: the rest cannot raise it
            return 0, 1
    return r_lo, r_hi


def choose_weighted(rng: np.random.Generator, counts: list[int], gamma_num: list[int], gamma_den: int) -> int:
    """Index i with probability proportional to counts[i] * exp(-gamma_num[i] / gamma_den), exactly.

    ``counts`` are integers >= 0 (lengths or volumes in a public unit, any size)
    with at least one positive; ``gamma_num`` integers, ``gamma_den`` >= 1.
    The exponents are shifted so the smallest (among positive counts) is 0 and
    split as k_i + f_i (whole and fractional). A piece is proposed with
    probability proportional to counts[i] e^{-k_i}: first its tier k by
    inversion, where a uniform U read bit by bit is placed between rigorous
    integer bounds on the cumulative weights (more bits until the place is
    certain), then a piece of the tier by its count; it is kept with
    probability e^{-f_i} (:func:`bernoulli_exp_int`), at least 1/e. The
    output's law is exactly the target's (rejection sampling with an exact
    proposal and an exact acceptance).
    """
    live = [i for i, c in enumerate(counts) if c > 0]
    if not live:
        raise ValueError("choose_weighted needs a positive count")
    base = min(gamma_num[i] for i in live)
    tiers: dict[int, list[int]] = {}
    for i in live:
        tiers.setdefault((gamma_num[i] - base) // gamma_den, []).append(i)
    ks = sorted(tiers)
    sizes = [sum(counts[i] for i in tiers[k]) for k in ks]
    while True:
        members = tiers[ks[_invert_tiers(rng, ks, sizes)]]
        pick = uniform_below(rng, sum(counts[i] for i in members))
        for i in members:
            pick -= counts[i]
            if pick < 0:
                break
        if bernoulli_exp_int(rng, (gamma_num[i] - base) % gamma_den, gamma_den):
            return i


def _invert_tiers(rng: np.random.Generator, ks: list[int], sizes: list[int]) -> int:
    """The tier s with S_{s-1} <= U T < S_s for weights sizes[s] e^{-ks[s]}, U uniform: exact, by refinement."""
    if len(ks) == 1:
        return 0
    bits, u = 64, int(rng.integers(0, 1 << 62)) << 2 | int(rng.integers(0, 4))
    while True:
        lows, highs = _exp_neg_bounds(ks, bits + 8)
        s_lo, s_hi, acc_lo, acc_hi = [], [], 0, 0
        for size, lo, hi in zip(sizes, lows, highs, strict=True):
            acc_lo += size * lo
            acc_hi += size * hi
            s_lo.append(acc_lo)
            s_hi.append(acc_hi)
        target_lo, target_hi = u * s_lo[-1], (u + 1) * s_hi[-1]  # U T in units of 2^-bits
        for s in range(len(ks)):
            below = 0 if s == 0 else s_hi[s - 1] << bits
            if below <= target_lo and target_hi < s_lo[s] << bits:
                return s
            if target_hi < s_lo[s] << bits:
                break  # U T may fall on either side of S_{s-1}: refine
        u = (u << 64) | int(rng.integers(0, 1 << 62)) << 2 | int(rng.integers(0, 4))
        bits += 64


def floor_double(ticks: int) -> float:
    """The largest double not above ``ticks * 2^-1074`` (every double is a multiple of 2^-1074)."""
    r = Fraction(ticks, 1 << 1074)
    x = float(r)  # correctly rounded to nearest
    return math.nextafter(x, -math.inf) if Fraction(x) > r else x


def uniform_double(rng: np.random.Generator, low: float, high: float) -> float:
    """A uniform real on [low, high) rounded down to a double, exactly (low < high finite doubles).

    The real is drawn as a multiple of 2^-1074 plus a uniform fraction of it
    (every double is such a multiple, so the fraction never changes the
    double below), and the double released is the largest one not above it:
    a function of an exact uniform draw, whose law is
    P(x) = (gap to the next double) / (high - low).
    """
    unit = 1 << 1074
    a, b = int(Fraction(low) * unit), int(Fraction(high) * unit)
    if not a < b:
        raise ValueError("uniform_double needs low < high")
    return floor_double(a + uniform_below(rng, b - a))

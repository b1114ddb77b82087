"""Exact samplers in integer arithmetic: Bernoulli(exp(-gamma)), discrete Laplace, discrete Gaussian, a uniform double.

Canonne, Kamath & Steinke (2020), "The discrete Gaussian for differential
privacy", Algorithms 1-3. Every draw is made from uniform integers
(dpstats/privacy/random_bits.py: masked rejection on the generator's raw
words), with no floating-point operation on the way, so the law of each
output is exactly the one its proof assumes (notes/FLOAT_SAFETY.md). The
generator itself is cryptographic (:func:`dpstats.privacy.noise.make_rng`).

The samplers here take a :class:`~dpstats.privacy.random_bits.RandomBits`
and Python integers of any size, one draw at a time (a few microseconds
each). :func:`discrete_laplace` fills an array: one draw at a time up to
:data:`SCALAR_MAX` entries, vectorised in numpy beyond
(dpstats/privacy/samplers_vectorised.py), the same law either way.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from . import samplers_vectorised
from .random_bits import RandomBits

SCALAR_MAX = 512
"""Arrays of at most this many draws are filled one draw at a time (no per-call numpy overhead)."""


def _bernoulli_exp_unit(bits: RandomBits, num: int, den: int) -> bool:
    """Bernoulli(exp(-num/den)) for 0 <= num <= den: K = 1; while Bernoulli(gamma / K): K += 1; K odd."""
    k = 1
    while bits.below(den * k) < num:
        k += 1
    return k % 2 == 1


def bernoulli_exp(bits: RandomBits, num: int, den: int) -> bool:
    """One Bernoulli(exp(-num/den)) draw for integers num >= 0, den >= 1 of any size (CKS 2020, Algorithm 1).

    The whole part of num/den is that many Bernoulli(exp(-1)) draws that must
    all succeed (stopping at the first failure); the fraction is
    :func:`_bernoulli_exp_unit`.
    """
    if num < 0 or den < 1:
        raise ValueError("bernoulli_exp needs num >= 0 and den >= 1")
    whole, frac = divmod(int(num), int(den))
    for _ in range(whole):
        if not _bernoulli_exp_unit(bits, 1, 1):
            return False
    return _bernoulli_exp_unit(bits, frac, int(den))


def discrete_laplace_one(bits: RandomBits, scale: int) -> int:
    """One draw of the discrete Laplace law, P(z) proportional to exp(-|z| / scale), for an integer scale >= 1.

    Canonne, Kamath & Steinke (2020), Algorithm 2 with s = 1, t = scale: U
    uniform on {0, ..., t - 1} kept with probability exp(-U/t); V the number
    of Bernoulli(exp(-1)) successes before a failure; the magnitude is
    U + tV, its sign a fair coin, and (sign -, 0) is rejected so that 0 is
    not counted twice.
    """
    while True:
        u = bits.below(scale)
        if not _bernoulli_exp_unit(bits, u, scale):
            continue
        v = 0
        while _bernoulli_exp_unit(bits, 1, 1):
            v += 1
        magnitude = u + scale * v
        negative = bits.bits(1) == 1
        if negative and magnitude == 0:
            continue
        return -magnitude if negative else magnitude


def discrete_laplace(rng: np.random.Generator, scale: int, size: int | tuple[int, ...]) -> np.ndarray:
    """Independent discrete Laplace draws (:func:`discrete_laplace_one`) as an array of shape ``size``.

    int64 for a scale up to 2^40 (vectorised beyond SCALAR_MAX draws), an object
    array of Python integers for a larger one (a tiny eps).
    """
    scale = int(scale)
    if scale < 1:
        raise ValueError("discrete_laplace needs an integer scale >= 1")
    count = int(np.prod(size))
    small = scale <= samplers_vectorised.MAX_DENOMINATOR
    if count > SCALAR_MAX and small:
        return samplers_vectorised.discrete_laplace(rng, scale, count).reshape(size)
    bits = RandomBits(rng)
    draws = [discrete_laplace_one(bits, scale) for _ in range(count)]
    return np.array(draws, dtype=np.int64 if small else object).reshape(size)


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
    den = 2 * sigma2 * t * t
    bits = RandomBits(rng)
    out = []
    for _ in range(int(np.prod(size))):
        while True:
            y = discrete_laplace_one(bits, t)
            if bernoulli_exp(bits, (abs(y) * t - sigma2) ** 2, den):
                out.append(y)
                break
    return np.array(out, dtype=np.int64 if t <= samplers_vectorised.MAX_DENOMINATOR else object).reshape(size)


def floor_double(ticks: int) -> float:
    """The largest double not above ``ticks * 2^-1074`` (every double is a multiple of 2^-1074)."""
    r = Fraction(ticks, 1 << 1074)
    x = float(r)  # correctly rounded to nearest
    return math.nextafter(x, -math.inf) if Fraction(x) > r else x


def double_ticks(x: float) -> int:
    """The double ``x`` as an exact integer in units of 2^-1074 (its ratio's denominator is a power of two)."""
    numerator, denominator = float(x).as_integer_ratio()
    return numerator << (1075 - denominator.bit_length())


def common_ticks(values: list[float]) -> tuple[list[int], int]:
    """Integers t_i and one exponent u with ``values[i] = t_i * 2^-u`` exactly (u as small as they allow).

    Every double is an odd integer times a power of two, so the finest of
    their powers is a unit all of them are exact multiples of; lengths and
    volumes in that unit are much smaller integers than in units of 2^-1074.
    """
    ratios = [float(x).as_integer_ratio() for x in values]
    unit = max(den.bit_length() - 1 for _, den in ratios)
    return [num << (unit - (den.bit_length() - 1)) for num, den in ratios], unit


def uniform_floor_double(bits: RandomBits, low: int, width: int, unit: int) -> float:
    """A uniform real on ``[low, low + width) * 2^-unit`` (integers, width >= 1) rounded down to a double, exactly.

    The real's tick in units of 2^-unit is uniform; its position inside that
    tick, in units of 2^-1074 (the spacing of the smallest doubles), is
    uniform too, so the double below is that of an exactly uniform draw.
    """
    tick = low + bits.below(width)
    fine = 1074 - unit  # >= 0: no double needs a finer unit than 2^-1074
    return floor_double((tick << fine) + bits.below(1 << fine))


def uniform_double(bits: RandomBits, low: float, high: float) -> float:
    """A uniform real on [low, high) rounded down to a double, exactly (low < high finite doubles).

    The real is drawn as a multiple of 2^-1074 plus a uniform fraction of it
    (every double is such a multiple, so the fraction never changes the
    double below), and the double released is the largest one not above it:
    a function of an exact uniform draw, whose law is
    P(x) = (gap to the next double) / (high - low).
    """
    a, b = double_ticks(low), double_ticks(high)
    if not a < b:
        raise ValueError("uniform_double needs low < high")
    return floor_double(a + bits.below(b - a))

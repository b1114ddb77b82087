"""The exponential mechanism sampled exactly: permute-and-flip, a weighted choice, and a point of an interval.

Every double is a dyadic rational, so with the rate rounded down to a dyadic
rational ``a / 2^40`` per unit of utility (never above ``eps / (2 Delta)``,
so the eps spent is at most the one reported) each exponent
``rate (u_max - u_i)`` is an exact rational, and the draws below use the exact
samplers of dpstats/privacy/samplers.py (no log-weights, no Gumbel noise, no
exp in floating point; Ilvento 2020 and notes/FLOAT_SAFETY.md for why).

* :func:`permute_and_flip` (McKenna & Sheldon 2020): candidates in a
  uniformly random order, each kept with probability exp(-gamma_i); the
  first kept is released. eps-DP like the exponential mechanism.
* :func:`exponential_choice`: index i with probability proportional to
  ``counts_i exp(-gamma_i)`` (the exponential mechanism over a finite set,
  or over pieces of a space with exact sizes).
* :func:`interval_point`: the exponential mechanism on the real line with a
  piecewise-constant utility (Alabi et al. 2022, Algorithm 3): an interval
  chosen with weight length x exp(-gamma), its lengths exact integers in
  their common unit (a power of two), then a uniform real in it rounded
  down to a double.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np

from . import samplers
from .random_bits import RandomBits
from .weighted_choice import choose_weighted

RATE_BITS = 40
"""The rate per unit of utility is rounded down to a multiple of 2^-RATE_BITS."""
_FAST_SHIFTS = 8


def exponents(utilities: np.ndarray, eps: float, sensitivity: float) -> tuple[list[int], int]:
    """Numerators g_i and the denominator D of gamma_i = rate (u_max - u_i), rate = a / 2^40 <= eps / (2 sensitivity).

    Every double is a dyadic rational, so the gaps are exact (in Python
    integers, of any size); D is 2^40 for integer utilities (counts and rank
    distances) and 2^40 times the gaps' largest power-of-two denominator
    otherwise (half-counts, quantile levels times n).
    """
    u = np.asarray(utilities, dtype=float).ravel()
    coefficient = int(Fraction(eps) / (2 * Fraction(sensitivity)) * 2**RATE_BITS)  # floor: the rate rounded down
    for shift in range(_FAST_SHIFTS):  # utilities that are integers once scaled by 2^shift (counts, half-counts)
        scaled = u * float(1 << shift)  # exact: a power of two
        if np.all(scaled == np.rint(scaled)) and np.all(np.abs(scaled) < 2.0**52):
            gaps = (scaled.max() - scaled).astype(np.int64).tolist()  # exact: integers below 2^53
            return [coefficient * g for g in gaps], 1 << (RATE_BITS + shift)
    exact = [Fraction(x) for x in u.tolist()]
    top = max(exact)
    shift = max((top - x).denominator for x in exact).bit_length() - 1  # dyadic: powers of two
    return [coefficient * int((top - x) * (1 << shift)) for x in exact], 1 << (RATE_BITS + shift)


def permute_and_flip(rng: np.random.Generator, utilities: np.ndarray, eps: float, sensitivity: float) -> int:
    """Permute-and-flip (McKenna & Sheldon 2020) with exact flips: eps-DP for a utility of sensitivity ``sensitivity``.

    The candidates in a uniformly random order (``Generator.permutation``),
    each kept with probability exp(-gamma_i) (:func:`~dpstats.privacy.samplers.bernoulli_exp`);
    the first kept is released (the best, gamma = 0, always is).
    """
    nums, den = exponents(utilities, eps, sensitivity)
    bits = RandomBits(rng)
    for i in rng.permutation(len(nums)).tolist():
        if samplers.bernoulli_exp(bits, nums[i], den):
            return int(i)
    raise AssertionError("permute_and_flip: the best candidate is always kept")


def keep(rng: np.random.Generator, drop: float, eps: float, sensitivity: float) -> bool:
    """Bernoulli(exp(-rate drop)) for a utility drop (an integer), at the rate of :func:`exponents` (rounded down).

    The acceptance step of a rejection sampler whose proposals were weighted
    by :func:`exponential_choice` with integer utilities: the same rate.
    """
    nums, den = exponents(np.array([0.0, -float(drop)]), eps, sensitivity)
    return samplers.bernoulli_exp(RandomBits(rng), nums[1], den)


def exponential_choice(
    rng: np.random.Generator, utilities: np.ndarray, eps: float, sensitivity: float, counts: list[int] | None = None
) -> int:
    """The exponential mechanism over candidates (each weighted by ``counts``, 1 by default), sampled exactly."""
    nums, den = exponents(utilities, eps, sensitivity)
    return choose_weighted(RandomBits(rng), [1] * len(nums) if counts is None else counts, nums, den)


def exact_lengths(edges: np.ndarray) -> list[int]:
    """The lengths of the intervals between consecutive doubles ``edges``, exactly, in units of 2^-1074.

    One fixed unit, so that lengths computed apart (a rejection sampler's
    blocks, split as knots are added) can be weighed together.
    """
    ticks = [samplers.double_ticks(x) for x in np.asarray(edges, dtype=float).tolist()]
    return [b - a for a, b in itertools.pairwise(ticks)]


def interval_point(
    rng: np.random.Generator, edges: np.ndarray, utilities: np.ndarray, eps: float, sensitivity: float
) -> float:
    """A draw from the density proportional to ``exp(eps u_i / (2 sensitivity))`` on interval i of ``edges``.

    Exact (module docstring): the interval by :func:`exponential_choice`
    weighted by its exact length, then a uniform real in it rounded down to
    a double (:func:`~dpstats.privacy.samplers.uniform_floor_double`).
    """
    ticks, unit = samplers.common_ticks(np.asarray(edges, dtype=float).tolist())
    lengths = [b - a for a, b in itertools.pairwise(ticks)]
    i = exponential_choice(rng, utilities, eps, sensitivity, lengths)
    return samplers.uniform_floor_double(RandomBits(rng), ticks[i], lengths[i], unit)

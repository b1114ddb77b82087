"""Additive noise on a power-of-two grid, sampled exactly: the float-safe Laplace and Gaussian mechanisms.

Mironov (2012) showed that ``value + Laplace`` computed on doubles leaks
``value`` through the set of doubles the sampler can output. Here (as OpenDP
does for float inputs; Canonne, Kamath & Steinke 2020, section 6) a release of
a statistic x in R^d with sensitivity Delta is

    step * (round(x / step) + Z),      Z on Z^d, exact (dpstats/privacy/samplers.py),

computed in doubles: x / step is exact (step is a power of two), rint is
exact, and the sum is the correctly rounded value of the exact integer
``round(x / step) + Z``, so the double released is a function of that integer
alone, whatever x was. Its support is the whole grid for every x.

The rounding is paid for in the sensitivity. If one neighbour changes at most
``changed`` coordinates, the rounded vectors differ, in grid units, by at most

    L1: floor(Delta / step) + changed        L2: Delta / step + ceil(sqrt(changed)),

since each changed coordinate's rounding moves it by less than one unit. The
noise is calibrated to that: the discrete Laplace scale (an integer, rounded
up) is the L1 bound over eps, and the discrete Gaussian's sigma^2 (an integer,
rounded up) is the L2 bound squared over 2 rho (CKS 2020, Theorem 14). So the
eps or rho spent is at most the one asked for, and it is the one reported.

The grid is 2^-ROUNDING_BITS of the smaller of the per-coordinate sensitivity
and the noise scale (so the rounding adds at most that fraction to either),
coarsened while the scale in grid units exceeds the vectorised samplers'
range (and no further than the sensitivity itself: beyond, a tiny eps keeps
a huge integer scale, drawn in Python integers). Inputs beyond 2^1000 grid steps are clamped there first (a public,
contracting map).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

from . import samplers, samplers_vectorised

ROUNDING_BITS = 20
"""The grid step is at most 2^-20 of the per-coordinate sensitivity and of the noise scale."""
_CLAMP_STEPS = math.ldexp(1.0, 1000)


def _power_of_two_below(x: float) -> float:
    """The largest power of two <= x (x > 0 finite)."""
    _mantissa, exponent = math.frexp(x)  # x = mantissa 2^exponent, mantissa in [0.5, 1)
    return math.ldexp(1.0, exponent - 1)


@functools.lru_cache(maxsize=1024)
def laplace_grid(sensitivity: float, eps: float, changed: int) -> tuple[float, int]:
    """The grid step and the integer discrete Laplace scale (in steps) of an eps-DP release (module docstring)."""
    step = _power_of_two_below(min(sensitivity / changed, sensitivity / eps) * 2.0**-ROUNDING_BITS)
    while True:
        units = math.floor(sensitivity / step) + changed
        scale = math.ceil(Fraction(units) / Fraction(eps))
        if scale <= samplers_vectorised.MAX_DENOMINATOR or units == changed:  # coarser steps cannot lower it
            return step, max(scale, 1)
        step *= 2.0


@functools.lru_cache(maxsize=1024)
def gaussian_grid(sensitivity: float, rho: float, changed: int) -> tuple[float, int]:
    """The grid step and the integer sigma^2 (in steps^2) of a rho-zCDP release (module docstring)."""
    sigma = sensitivity / math.sqrt(2.0 * rho)
    step = _power_of_two_below(min(sensitivity / math.sqrt(changed), sigma) * 2.0**-ROUNDING_BITS)
    spread = math.isqrt(changed - 1) + 1  # ceil(sqrt(changed))
    while True:
        units = Fraction(sensitivity / step) + spread
        sigma2 = math.ceil(units**2 / (2 * Fraction(rho)))
        if math.isqrt(sigma2) + 1 <= samplers_vectorised.MAX_DENOMINATOR or step > sensitivity:
            return step, sigma2
        step *= 2.0


def on_grid(value: np.ndarray, step: float) -> np.ndarray:
    """round(value / step), exactly, after the public clamp at 2^1000 steps."""
    limit = min(step * _CLAMP_STEPS, np.finfo(float).max)
    return np.rint(np.clip(value, -limit, limit) / step)


def released(value: np.ndarray, step: float, z: np.ndarray) -> np.ndarray:
    """``step * (round(value / step) + z)`` as doubles, each the correctly rounded value of an exact integer.

    With int64 noise below 2^53 the float sum of two exactly representable
    integers is that rounding; noise of a larger scale (an object array of
    Python integers) is summed in Python integers first.
    """
    grid = on_grid(value, step)
    if z.dtype != object:
        return (grid + z.astype(float)) * step
    exact = [float(int(g) + int(k)) for g, k in zip(grid.ravel().tolist(), z.ravel().tolist(), strict=True)]
    return np.array(exact, dtype=float).reshape(np.shape(value)) * step


def add_laplace(
    rng: np.random.Generator, value: np.ndarray, sensitivity: float, eps: float, changed: int
) -> np.ndarray:
    """``value`` released with exact discrete Laplace noise on its grid: eps-DP for L1 sensitivity ``sensitivity``."""
    if sensitivity == 0.0:
        return value.copy()
    step, scale = laplace_grid(sensitivity, eps, changed)
    return released(value, step, samplers.discrete_laplace(rng, scale, value.shape))


def add_gaussian(
    rng: np.random.Generator, value: np.ndarray, sensitivity: float, rho: float, changed: int
) -> np.ndarray:
    """``value`` with exact discrete Gaussian noise on its grid: rho-zCDP for L2 sensitivity ``sensitivity``."""
    if sensitivity == 0.0:
        return value.copy()
    step, sigma2 = gaussian_grid(sensitivity, rho, changed)
    return released(value, step, samplers.discrete_gaussian(rng, sigma2, value.shape))

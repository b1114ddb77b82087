"""The discrete Laplace sampler vectorised in numpy, for arrays of many draws (histograms of many cells).

The same algorithm as :func:`dpstats.privacy.samplers.discrete_laplace_one`
(Canonne, Kamath & Steinke 2020, Algorithms 1 and 2), run on int64 arrays:
every entry still pending draws again, until none is. Bounded uniform
integers come from ``Generator.integers`` (exact bounded rejection on the
generator's bits). The integer scale is at most :data:`MAX_DENOMINATOR`, so
that every product with a loop counter stays below 2^62.
"""

from __future__ import annotations

import numpy as np

MAX_DENOMINATOR = 1 << 40
"""The largest integer scale (and denominator) the samplers take."""


def _bernoulli_exp_fraction(rng: np.random.Generator, num: np.ndarray, den: int) -> np.ndarray:
    """Bernoulli(exp(-num/den)) for 0 <= num <= den: K = 1; while Bernoulli(gamma / K): K += 1; K odd.

    Every pending entry shares its K in a round (they all start at 1 and each
    round keeps only those that go on), so a round is one bounded draw below
    ``den * K`` with a scalar bound (numpy's fast path).
    """
    k = np.ones(num.size, dtype=np.int64)
    pending = np.arange(num.size)
    rounds = 1
    while pending.size:
        going = rng.integers(0, den * rounds, pending.size) < num[pending]  # Bernoulli(gamma / K)
        k[pending[going]] += 1
        pending = pending[going]
        rounds += 1
    return (k % 2) == 1


def _geometric_exp1(rng: np.random.Generator, count: int) -> np.ndarray:
    """The number of Bernoulli(exp(-1)) successes before the first failure, ``count`` times."""
    v = np.zeros(count, dtype=np.int64)
    pending = np.arange(count)
    while pending.size:
        ok = _bernoulli_exp_fraction(rng, np.ones(pending.size, dtype=np.int64), 1)
        v[pending[ok]] += 1
        pending = pending[ok]
    return v


def discrete_laplace(rng: np.random.Generator, scale: int, count: int) -> np.ndarray:
    """``count`` discrete Laplace draws of integer scale (P(z) proportional to exp(-|z| / scale)), int64."""
    t = np.int64(scale)
    out = np.empty(count, dtype=np.int64)
    pending = np.arange(count)
    while pending.size:
        u = rng.integers(0, t, pending.size)
        keep = _bernoulli_exp_fraction(rng, u, int(t))
        u, slots = u[keep], pending[keep]
        magnitude = u + t * _geometric_exp1(rng, slots.size)
        negative = rng.integers(0, 2, slots.size) == 1
        valid = ~(negative & (magnitude == 0))
        out[slots[valid]] = np.where(negative, -magnitude, magnitude)[valid]
        done = np.zeros(pending.size, dtype=bool)
        done[np.flatnonzero(keep)[valid]] = True
        pending = pending[~done]
    return out

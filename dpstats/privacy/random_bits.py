"""Uniform random bits and integers from a generator's raw words: the one source of the exact samplers.

A numpy ``Generator``'s bit generator (ChaCha20 by default: dpstats/privacy/noise.py)
yields uniform 64-bit words; :class:`RandomBits` buffers them, hands out k
bits at a time, and draws a uniform integer below any bound m (a Python
integer of any size) by masked rejection: k = bit length of m - 1 bits,
redrawn while the value is >= m. Each draw is exactly uniform given uniform
words, in Python integer arithmetic (no float, no modulo bias), and costs
well under a microsecond, where a numpy call costs a few.
"""

from __future__ import annotations

import numpy as np

WORDS_PER_REFILL = 16


class RandomBits:
    """A pool of uniform bits drawn from ``rng``'s bit generator, 64 at a time (module docstring)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._bit_generator = rng.bit_generator
        self._words: list[int] = []
        self._pool = 0
        self._pool_bits = 0

    def bits(self, k: int) -> int:
        """k uniform bits, as an integer in [0, 2^k)."""
        while self._pool_bits < k:
            if not self._words:
                self._words = self._bit_generator.random_raw(WORDS_PER_REFILL).tolist()
            self._pool |= self._words.pop() << self._pool_bits
            self._pool_bits += 64
        value = self._pool & ((1 << k) - 1)
        self._pool >>= k
        self._pool_bits -= k
        return value

    def below(self, bound: int) -> int:
        """A uniform integer in [0, bound), for an integer bound >= 1 (masked rejection)."""
        if bound < 1:
            raise ValueError("below needs a bound >= 1")
        k = (bound - 1).bit_length()
        while True:
            value = self.bits(k)
            if value < bound:
                return value

"""A choice among pieces weighted ``c_i exp(-gamma_i)``, sampled exactly (the exponential mechanism's pieces).

The exponential mechanism over intervals of the line (Alabi et al. 2022,
Algorithm 3) or boxes of a Tukey-depth shell (Amin et al. 2023, Lemma 3.9)
chooses a piece with probability proportional to its size times
``exp(-gamma)``. Sizes are exact integers (lengths and volumes in units of
2^-1074: dpstats/privacy/samplers.py) and each gamma an exact rational
(dpstats/privacy/exact_choice.py), so the choice can be made exactly, with
rigorous integer bounds on e^-k where a real number is needed
(:func:`choose_weighted`).
"""

from __future__ import annotations

from .random_bits import RandomBits
from .samplers import bernoulli_exp

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


def choose_weighted(bits: RandomBits, counts: list[int], gamma_num: list[int], gamma_den: int) -> int:
    """Index i with probability proportional to counts[i] * exp(-gamma_num[i] / gamma_den), exactly.

    ``counts`` are integers >= 0 (lengths or volumes in a public unit, any size)
    with at least one positive; ``gamma_num`` integers, ``gamma_den`` >= 1.
    The exponents are shifted so the smallest (among positive counts) is 0 and
    split as k_i + f_i (whole and fractional). A piece is proposed with
    probability proportional to counts[i] e^{-k_i}: first its tier k by
    inversion, where a uniform U read bit by bit is placed between rigorous
    integer bounds on the cumulative weights (more bits until the place is
    certain), then a piece of the tier by its count; it is kept with
    probability e^{-f_i} (:func:`~dpstats.privacy.samplers.bernoulli_exp`), at least 1/e. The
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
        members = tiers[ks[_invert_tiers(bits, ks, sizes)]]
        pick = bits.below(sum(counts[i] for i in members))
        for i in members:
            pick -= counts[i]
            if pick < 0:
                break
        if bernoulli_exp(bits, (gamma_num[i] - base) % gamma_den, gamma_den):
            return i


def _invert_tiers(bits: RandomBits, ks: list[int], sizes: list[int]) -> int:
    """The tier s with S_{s-1} <= U T < S_s for weights sizes[s] e^{-ks[s]}, U uniform: exact, by refinement."""
    if len(ks) == 1:
        return 0
    precision, u = 64, bits.bits(64)
    while True:
        lows, highs = _exp_neg_bounds(ks, precision + 8)
        s_lo, s_hi, acc_lo, acc_hi = [], [], 0, 0
        for size, lo, hi in zip(sizes, lows, highs, strict=True):
            acc_lo += size * lo
            acc_hi += size * hi
            s_lo.append(acc_lo)
            s_hi.append(acc_hi)
        target_lo, target_hi = u * s_lo[-1], (u + 1) * s_hi[-1]  # U T in units of 2^-precision
        for s in range(len(ks)):
            below = 0 if s == 0 else s_hi[s - 1] << precision
            if below <= target_lo and target_hi < s_lo[s] << precision:
                return s
            if target_hi < s_lo[s] << precision:
                break  # U T may fall on either side of S_{s-1}: refine
        u = (u << 64) | bits.bits(64)
        precision += 64

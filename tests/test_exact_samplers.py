"""The exact samplers (dpstats/privacy/samplers.py, exact_choice.py) against their exact laws.

Discrete laws are tested by a chi-square test of the counts against the exact
probability masses (cells with expected count >= 5, the rest pooled), at
alpha = 1e-6 per test, and each test must also reject the same number of
draws from a law with its parameter off by 30% (its power). Continuous pieces
(the uniform double) are tested by their exact interval probabilities.

False-failure rates: each acceptance at most 1e-6 (the file has about 20:
2e-5 in all); each power check fails only if a 30% error goes unseen, which
at these sample sizes has probability below 1e-12 (the chi-square statistic's
non-centrality is over 300 in each). Every test is seeded, so the suite is
deterministic in practice.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpstats.privacy import exact_choice, grid_noise, noise, samplers, weighted_choice
from dpstats.privacy.random_bits import RandomBits

ALPHA = 1e-6


def chi_square_pvalue(draws: np.ndarray, support: np.ndarray, masses: np.ndarray) -> float:
    """Chi-square of the draws' counts on ``support`` (plus one pooled cell for the rest) against ``masses``."""
    draws = np.asarray(draws).ravel()
    counts = np.array([(draws == v).sum() for v in support], dtype=float)
    expected = masses * draws.size
    rest_count, rest_expected = draws.size - counts.sum(), draws.size * (1.0 - masses.sum())
    keep = expected >= 5
    obs = np.concatenate([counts[keep], [counts[~keep].sum() + rest_count]])
    exp = np.concatenate([expected[keep], [expected[~keep].sum() + rest_expected]])
    if exp[-1] < 1e-9:
        obs, exp = obs[:-1], exp[:-1]
    return float(stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue)


def discrete_laplace_masses(scale: float, support: np.ndarray) -> np.ndarray:
    q = math.exp(-1.0 / scale)
    return (1 - q) / (1 + q) * q ** np.abs(support)


def discrete_gaussian_masses(sigma2: float, support: np.ndarray) -> np.ndarray:
    wide = np.arange(-60 * int(math.sqrt(sigma2) + 1), 60 * int(math.sqrt(sigma2) + 1) + 1)
    norm = np.exp(-(wide.astype(float) ** 2) / (2 * sigma2)).sum()
    return np.exp(-(support.astype(float) ** 2) / (2 * sigma2)) / norm


@pytest.mark.parametrize(("num", "den"), [(0, 1), (1, 3), (3, 2), (7, 1), (123456789, 100000000)])
def test_bernoulli_exp_matches_exp_minus_gamma(num: int, den: int) -> None:
    """100,000 draws of Bernoulli(exp(-num/den)): a two-sided binomial test at 1e-6."""
    bits = RandomBits(noise.make_rng(1000 + num))
    p = math.exp(-num / den)
    heads = sum(samplers.bernoulli_exp(bits, num, den) for _ in range(100_000))
    if p == 1.0:
        assert heads == 100_000
        return
    assert stats.binomtest(heads, 100_000, p).pvalue > ALPHA


def test_bernoulli_exp_takes_huge_integers() -> None:
    """exp(-(2^80 + 1) / 2^80) with 100-bit integers: binomial test at 1e-6 on 20,000 draws."""
    bits = RandomBits(noise.make_rng(7))
    heads = sum(samplers.bernoulli_exp(bits, (1 << 80) + 1, 1 << 80) for _ in range(20_000))
    assert stats.binomtest(heads, 20_000, math.exp(-1.0)).pvalue > ALPHA


@pytest.mark.parametrize("scale", [1, 3, 40])
@pytest.mark.parametrize("path", ["scalar", "vectorised"])
def test_discrete_laplace_law_and_power(scale: int, path: str) -> None:
    """Chi-square of 100,000 draws against P(z) ~ exp(-|z|/scale), one at a time (arrays of up to SCALAR_MAX) and
    vectorised (larger arrays); the law at 1.3 x scale is rejected."""
    rng = noise.make_rng(2000 + scale)
    if path == "scalar":
        draws = np.concatenate([samplers.discrete_laplace(rng, scale, samplers.SCALAR_MAX) for _ in range(196)])
    else:
        draws = samplers.discrete_laplace(rng, scale, 100_000)
    support = np.arange(-12 * scale, 12 * scale + 1)
    assert chi_square_pvalue(draws, support, discrete_laplace_masses(scale, support)) > ALPHA
    assert chi_square_pvalue(draws, support, discrete_laplace_masses(1.3 * scale, support)) < ALPHA


@pytest.mark.parametrize("sigma2", [1, 10, 400])
def test_discrete_gaussian_law_and_power(sigma2: int) -> None:
    """Chi-square of 40,000 draws against P(z) ~ exp(-z^2 / (2 sigma2)); sigma2 x 1.69 (sigma x 1.3) rejected."""
    rng = noise.make_rng(3000 + sigma2)
    draws = samplers.discrete_gaussian(rng, sigma2, 40_000)
    reach = 8 * (math.isqrt(sigma2) + 1)
    support = np.arange(-reach, reach + 1)
    assert chi_square_pvalue(draws, support, discrete_gaussian_masses(sigma2, support)) > ALPHA
    assert chi_square_pvalue(draws, support, discrete_gaussian_masses(1.69 * sigma2, support)) < ALPHA


def test_choose_weighted_matches_counts_times_exp() -> None:
    """Chi-square of 40,000 choices against counts_i exp(-g_i / D), with counts spanning 2^0 to 2^70; power at x 1.3."""
    rng = noise.make_rng(4)
    counts = [1, 3, 1 << 20, 0, 5, 1 << 70]
    nums, den = [0, 1, 29, 2, 3, 97], 2
    log_w = np.array([math.log(c) if c else -np.inf for c in counts]) - np.array(nums) / den
    masses = np.exp(log_w - log_w.max())
    masses /= masses.sum()
    draws = np.array([weighted_choice.choose_weighted(RandomBits(rng), counts, nums, den) for _ in range(40_000)])
    support = np.arange(len(counts))
    assert (draws != 3).all()  # a zero count is never chosen
    assert chi_square_pvalue(draws, support, masses) > ALPHA
    wrong = np.exp(log_w * 1.0 - 0.3 * np.array(nums) / den)
    wrong /= wrong.sum()
    assert chi_square_pvalue(draws, support, wrong) < ALPHA


def test_choose_weighted_refines_when_tiers_are_tied_closely() -> None:
    """Weights e^0 and e^-1 x 2^200-scale counts that nearly tie: still exact (chi-square at 1e-6 on 20,000)."""
    rng = noise.make_rng(5)
    big = 1 << 200
    counts = [big, int(big * math.e)]  # nearly equal weights: U lands near the boundary only rarely
    nums, den = [0, 1], 1
    draws = np.array([weighted_choice.choose_weighted(RandomBits(rng), counts, nums, den) for _ in range(20_000)])
    p1 = float(Fraction(counts[1]) / (Fraction(counts[0]) * Fraction(math.e) + Fraction(counts[1])))
    assert stats.binomtest(int(draws.sum()), draws.size, p1).pvalue > ALPHA


def test_uniform_double_is_uniform_and_rounds_down() -> None:
    """On [0.5, 2): P([0.5, 1)) = 1/3 exactly (binomial test at 1e-6); every draw lies in [low, high)."""
    bits = RandomBits(noise.make_rng(6))
    draws = np.array([samplers.uniform_double(bits, 0.5, 2.0) for _ in range(30_000)])
    assert ((draws >= 0.5) & (draws < 2.0)).all()
    assert stats.binomtest(int((draws < 1.0).sum()), draws.size, 1 / 3).pvalue > ALPHA
    tight = samplers.uniform_double(bits, 1.0, math.nextafter(1.0, 2.0))
    assert tight == 1.0


def test_permute_and_flip_exact_law() -> None:
    """Permute-and-flip's exact law over 4 candidates (all 24 orders enumerated), chi-square at 1e-6 on 40,000."""
    from itertools import permutations

    utilities = np.array([0.0, -1.0, -3.0, -2.0])
    eps, sensitivity = 1.2, 1.0
    nums, den = exact_choice.exponents(utilities, eps, sensitivity)
    keep = [math.exp(-g / den) for g in nums]
    masses = np.zeros(4)
    for order in permutations(range(4)):
        reach = 1.0
        for i in order:
            masses[i] += reach * keep[i] / 24
            reach *= 1 - keep[i]
    rng = noise.make_rng(8)
    draws = np.array([exact_choice.permute_and_flip(rng, utilities, eps, sensitivity) for _ in range(40_000)])
    assert chi_square_pvalue(draws, np.arange(4), masses) > ALPHA


def test_exponents_round_the_rate_down() -> None:
    """Deterministic: the rate per unit of utility never exceeds eps / (2 sensitivity), and is within 2^-40 of it."""
    for eps, sens in [(0.1, 1.0), (1e-9, 3.0), (1e9, 1.0), (2.5, 7.0)]:
        nums, den = exact_choice.exponents(np.array([0.0, -1.0]), eps, sens)
        rate = Fraction(nums[1], den)
        exact = Fraction(eps) / (2 * Fraction(sens))
        assert rate <= exact and exact - rate <= Fraction(1, den)


@pytest.mark.parametrize(
    ("sensitivity", "eps", "changed"), [(1.0, 0.1, 1), (2.0, 1.0, 2), (0.37, 1e9, 5), (1e4, 1e-3, 50)]
)
def test_laplace_grid_spends_at_most_eps(sensitivity: float, eps: float, changed: int) -> None:
    """Deterministic: (floor(Delta/step) + changed) / scale <= eps, and the scale is within 2^-19 of Delta / eps."""
    step, scale = grid_noise.laplace_grid(sensitivity, eps, changed)
    units = math.floor(sensitivity / step) + changed
    assert Fraction(units, scale) <= Fraction(eps)
    assert abs(scale * step / (sensitivity / eps) - 1) < 2.0**-19 or scale == 1


@pytest.mark.parametrize(("sensitivity", "rho", "changed"), [(1.0, 0.5, 1), (3.0, 1e-4, 10), (0.2, 50.0, 2)])
def test_gaussian_grid_spends_at_most_rho(sensitivity: float, rho: float, changed: int) -> None:
    """Deterministic: (Delta/step + ceil(sqrt(changed)))^2 / (2 sigma2) <= rho, sigma within 2^-18 of its target."""
    step, sigma2 = grid_noise.gaussian_grid(sensitivity, rho, changed)
    units = Fraction(sensitivity / step) + math.ceil(math.sqrt(changed))
    assert units**2 / (2 * sigma2) <= Fraction(rho)
    assert abs(math.sqrt(sigma2) * step / (sensitivity / math.sqrt(2 * rho)) - 1) < 2.0**-18


def test_laplace_mechanism_outputs_lie_on_the_grid_whatever_the_value() -> None:
    """Deterministic: every release of two neighbouring values is a multiple of the same power-of-two step."""
    rng = noise.make_rng(9)
    step, _ = grid_noise.laplace_grid(1.0, 0.1, 1)
    for value in (10.0, 11.0, 0.3, 0.3 + 1 / 7):
        out = np.array([noise.laplace_mechanism(rng, value, 1.0, 0.1, "x") for _ in range(200)])
        assert np.all(out / step == np.rint(out / step))


def test_laplace_mechanism_noise_has_the_laplace_law() -> None:
    """KS of 20,000 releases of 0.3 (sensitivity 1, eps 1) against Laplace(1): a 2^-20 grid is below KS's reach."""
    rng = noise.make_rng(10)
    out = noise.laplace_mechanism(rng, np.full(20_000, 0.3), 1.0, 1.0, "x", changed=1)
    assert stats.kstest(out - 0.3, stats.laplace(scale=1.0).cdf).pvalue > ALPHA


def test_seeded_streams_are_reproducible_and_cryptographic() -> None:
    """The same int gives the same ChaCha20 stream (the release is reproducible across runs); None does not repeat."""
    a = noise.laplace_mechanism(noise.make_rng(2026), np.arange(5.0), 1.0, 1.0, "x")
    b = noise.laplace_mechanism(noise.make_rng(2026), np.arange(5.0), 1.0, 1.0, "x")
    np.testing.assert_array_equal(a, b)
    assert type(noise.make_rng(1).bit_generator).__name__ == "ChaCha"
    assert noise.make_rng(1).bit_generator.state["state"]["rounds"] == 20
    assert noise.make_rng(None).integers(0, 1 << 62) != noise.make_rng(None).integers(0, 1 << 62)


def test_a_seeded_release_is_the_same_on_every_machine() -> None:
    """Deterministic: random_state=2026 gives these raw ChaCha20 words, discrete Laplace draws and releases.

    ChaCha20 is a cipher (the same output on every platform, with or without SIMD), SeedSequence's key
    derivation is specified by numpy, and the samplers use integer arithmetic only, so these values,
    recorded once, must come out on any machine; a change here breaks every published replication seed.
    """
    assert noise.make_rng(2026).bit_generator.random_raw(2).tolist() == [11640812873875873675, 8822120607531189782]
    assert samplers.discrete_laplace(noise.make_rng(2026), 1000, 5).tolist() == [445, -1487, -1251, 3091, -379]
    released = noise.laplace_mechanism(noise.make_rng(2026), np.array([0.3, 10.0]), 1.0, 1.0, "x")
    assert released.tolist() == [2.4462571144104004, 9.5412278175354]


def test_common_ticks_are_exact_and_the_coarse_uniform_is_uniform() -> None:
    """Deterministic: ``values = ticks * 2^-unit`` exactly. Then, in that coarse unit, the uniform double on
    [0.25, 2) puts 1/7 of its mass below 0.5 (binomial test at 1e-6 on 30,000 draws) and covers doubles finer
    than the unit (the draws below 0.5 are not all multiples of it)."""
    values = [0.25, 2.0, -3.5, 1e-3, 0.1]
    ticks, unit = samplers.common_ticks(values)
    assert all(Fraction(t, 1 << unit) == Fraction(v) for t, v in zip(ticks, values, strict=True))
    ticks, unit = samplers.common_ticks([0.25, 2.0])
    assert unit == 2  # 0.25 = 1 * 2^-2 is the finest
    bits = RandomBits(noise.make_rng(12))
    draws = np.array([samplers.uniform_floor_double(bits, ticks[0], ticks[1] - ticks[0], unit) for _ in range(30_000)])
    assert ((draws >= 0.25) & (draws < 2.0)).all()
    assert stats.binomtest(int((draws < 0.5).sum()), draws.size, 1 / 7).pvalue > ALPHA
    assert np.any(draws * 4 != np.rint(draws * 4))

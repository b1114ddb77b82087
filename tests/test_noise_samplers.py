"""Goodness of fit of every sampler in dpstats/privacy/noise.py, with the test's own power.

docs/PRIVACY_TESTING.md, "An audit that fits in CI", step 2: a
Kolmogorov-Smirnov test at alpha = 1e-6 against the exact CDF, and the same
test must reject draws made at eps x 0.7 and eps x 1.3. 20,000 draws per set
for the vectorised samplers, 10,000 for the exponential mechanism over
intervals (one draw per call).

False-failure probabilities. Accepting the draws at eps: at most alpha = 1e-6
per sampler (about 5e-6 for the file). Rejecting the perturbed draws: the KS
statistic's critical value at 1e-6 is 0.0190 for 20,000 draws, while a 30%
scale error moves the exact CDF by 0.048 or more in sup norm (0.048 for
Laplace at x 1.3, up to 0.096 for Gumbel at x 0.7), so a miss needs the
empirical CDF of the perturbed draws to stray by 0.029 from its own law:
probability below 2 exp(-2 x 20,000 x 0.029^2) < 1e-14 (Dvoretzky-Kiefer-
Wolfowitz). Every test is seeded, so in practice the suite is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from dpstats.audit import audit_sampler, intervals_cdf, intervals_probabilities, ks_check, repeat_draws
from dpstats.privacy import noise

EPS = 1.0
DRAWS = 20_000
INTERVAL_DRAWS = 10_000  # one Python call per draw: the slow sampler
ALPHA = 1e-6

# name -> (draw(rng, eps, size), the exact CDF at EPS). Samplers with a scale
# argument get scale 1/eps; the standard ones (Student-t, Gumbel) are scaled
# by 1/eps, as their mechanisms do (smooth-sensitivity noise, Gumbel-max).
SCALE_SAMPLERS: dict[str, tuple[Callable, Callable]] = {
    "laplace": (lambda rng, eps, size: noise.laplace(rng, 1.0 / eps, size), stats.laplace(scale=1.0 / EPS).cdf),
    "gaussian": (lambda rng, eps, size: noise.gaussian(rng, 1.0 / eps, size), stats.norm(scale=1.0 / EPS).cdf),
    "student_t": (lambda rng, eps, size: noise.student_t(rng, 3.0, size) / eps, stats.t(df=3.0, scale=1.0 / EPS).cdf),
    "gumbel": (lambda rng, eps, size: noise.gumbel(rng, size) / eps, stats.gumbel_r(scale=1.0 / EPS).cdf),
}


@pytest.mark.parametrize("name", sorted(SCALE_SAMPLERS))
def test_sampler_fits_its_exact_cdf_and_the_test_has_power(name: str) -> None:
    """KS at alpha = 1e-6 accepts eps, rejects eps x 0.7 and x 1.3 (false failure 1e-6 + < 1e-14)."""
    draw, cdf = SCALE_SAMPLERS[name]
    audit = audit_sampler(name, draw, cdf, eps=EPS, draws=DRAWS, alpha=ALPHA, seed=20240601)
    audit.assert_ok()


def _theilsen_like_intervals(seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Edges and rank utilities of an exponential-mechanism median (Alabi et al. 2022, Algorithm 3).

    Sorted values in [0, 1] with the paper's r_l = -0.5 and r_u = 1.5
    inserted, one value repeated (a zero-length interval); interval i has
    utility -|i - m/2| (rank distance to the median).
    """
    rng = np.random.default_rng(seed)
    values = np.sort(np.concatenate([rng.uniform(0.0, 1.0, 19), [0.5, 0.5]]))
    edges = np.concatenate([[-0.5], values, [1.5]])
    m = edges.size - 1
    utility = -np.abs(np.arange(m) - m / 2.0)
    return edges, utility


def test_interval_probabilities_are_length_times_weight() -> None:
    """Deterministic: the exact law used as the reference is the one of Algorithm 3."""
    edges, utility = _theilsen_like_intervals()
    probs = intervals_probabilities(edges, EPS / 2 * utility)
    direct = np.diff(edges) * np.exp(EPS / 2 * utility)
    np.testing.assert_allclose(probs, direct / direct.sum(), rtol=1e-12)
    cdf = intervals_cdf(edges, EPS / 2 * utility)
    np.testing.assert_allclose(cdf(edges), np.concatenate([[0.0], np.cumsum(probs)]), atol=1e-12)
    assert cdf(-1.0) == 0.0 and cdf(2.0) == 1.0


@pytest.mark.slow
def test_exponential_mechanism_intervals_fits_and_the_test_has_power() -> None:
    """KS of 10,000 draws against the piecewise-linear CDF; eps x 0.7 / x 1.3 in the log weights rejected.

    The perturbed laws differ from the claimed one by 0.067 (x 1.3) and 0.090
    (x 0.7) in CDF sup norm, far above the 0.0269 critical value at 10,000
    draws, so the false failure probability is 1e-6 (acceptance) + 2 exp(-2 x
    10,000 x 0.040^2) < 3e-14 (power, DKW).
    """
    edges, utility = _theilsen_like_intervals()

    def draw(rng: np.random.Generator, eps: float, size: int) -> np.ndarray:
        return repeat_draws(lambda r: noise.exponential_mechanism_intervals(r, edges, utility, eps, 1.0), rng, size)

    audit = audit_sampler(
        "exponential_mechanism_intervals",
        draw,
        intervals_cdf(edges, EPS / 2.0 * utility),
        eps=EPS,
        draws=INTERVAL_DRAWS,
        alpha=ALPHA,
        seed=20240602,
    )
    audit.assert_ok()


def test_exponential_mechanism_intervals_does_not_underflow_at_huge_eps() -> None:
    """Deterministic: log weights of -1e6 per rank select the top interval; no over- or underflow."""
    edges, utility = _theilsen_like_intervals()
    rng = np.random.default_rng(3)
    with np.errstate(divide="ignore"):
        top = int(np.argmax(np.log(np.diff(edges)) + 1e6 * utility))
    for _ in range(20):
        x = noise.exponential_mechanism_intervals(rng, edges, utility, 2e6, 1.0)
        assert edges[top] <= x <= edges[top + 1]


def test_ks_check_rejects_a_wrong_distribution() -> None:
    """Sanity of the helper: uniform draws rejected (miss < 1e-100), normal draws accepted (false failure 1e-6)."""
    rng = np.random.default_rng(11)
    assert ks_check(rng.uniform(-1, 1, 10_000), stats.norm.cdf).rejected
    assert not ks_check(rng.normal(size=10_000), stats.norm.cdf).rejected

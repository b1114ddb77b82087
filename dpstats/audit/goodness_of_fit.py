"""Goodness of fit of the noise samplers, with a check of the test's own power.

docs/PRIVACY_TESTING.md, "An audit that fits in CI", step 2 (after Tumult's noise
tests): each sampler of dpstats/privacy/noise.py is compared with its exact CDF by a
Kolmogorov-Smirnov test on 100,000 draws at alpha = 1e-6, and the same test
must *reject* draws made at ``eps x 0.7`` and ``eps x 1.3`` -- a test that
cannot see a 30% scale error would not see the bugs that matter.

A sampler under audit is a function ``draw(rng, eps, size) -> ndarray`` that
produces the mechanism's noise at privacy parameter ``eps`` (Laplace: scale
``1/eps``; exponential mechanism: log weights ``eps/2 x utility``), and a CDF
``cdf(x)`` of the exact distribution at the claimed eps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from ..privacy.noise import independent_rngs

Draw = Callable[[np.random.Generator, float, int], np.ndarray]
CDF = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class KSResult:
    """One Kolmogorov-Smirnov test of draws against an exact CDF."""

    label: str
    statistic: float
    pvalue: float
    alpha: float
    draws: int

    @property
    def rejected(self) -> bool:
        """True when the draws are inconsistent with the CDF at level ``alpha``."""
        return self.pvalue < self.alpha


def ks_check(samples: np.ndarray, cdf: CDF, *, alpha: float = 1e-6, label: str = "") -> KSResult:
    """Two-sided one-sample KS test (scipy.stats.kstest) of ``samples`` against ``cdf``."""
    samples = np.asarray(samples, dtype=float).ravel()
    result = stats.kstest(samples, cdf)
    return KSResult(label, float(result.statistic), float(result.pvalue), alpha, samples.size)


@dataclass(frozen=True)
class SamplerAudit:
    """KS at the claimed eps, and at each perturbed eps (which must be rejected)."""

    name: str
    eps: float
    at_eps: KSResult
    perturbed: tuple[tuple[float, KSResult], ...]

    def as_text(self) -> str:
        """One line per test."""
        lines = [f"{self.name} at eps={self.eps:g}: D={self.at_eps.statistic:.5f}, p={self.at_eps.pvalue:.3g}"]
        lines += [f"{self.name} drawn at eps x {f:g}: D={r.statistic:.5f}, p={r.pvalue:.3g}" for f, r in self.perturbed]
        return "\n".join(lines)

    def assert_ok(self) -> None:
        """Accept the draws at eps, reject every perturbed set (the test's own power)."""
        problems = []
        if self.at_eps.rejected:
            problems.append(f"{self.name}: draws at eps do not fit the exact CDF")
        problems += [
            f"{self.name}: the test cannot tell eps x {f:g} from eps (no power)"
            for f, r in self.perturbed
            if not r.rejected
        ]
        if problems:
            raise AssertionError("\n".join(problems) + "\n--\n" + self.as_text())


def audit_sampler(
    name: str,
    draw: Draw,
    cdf: CDF,
    *,
    eps: float = 1.0,
    draws: int = 100_000,
    alpha: float = 1e-6,
    factors: Sequence[float] = (0.7, 1.3),
    seed: int = 0,
) -> SamplerAudit:
    """Test ``draw`` at ``eps`` against ``cdf``, and at ``eps x factor`` for the power check.

    False failure of :meth:`SamplerAudit.assert_ok`'s first check: ``alpha``
    (the draws are independent of the CDF's construction).
    """
    streams = independent_rngs(seed, 1 + len(factors))
    at_eps = ks_check(draw(streams[0], eps, draws), cdf, alpha=alpha, label=f"{name} at eps")
    perturbed = tuple(
        (float(f), ks_check(draw(rng, eps * f, draws), cdf, alpha=alpha, label=f"{name} at eps x {f:g}"))
        for f, rng in zip(factors, streams[1:], strict=True)
    )
    return SamplerAudit(name, eps, at_eps, perturbed)


def repeat_draws(sample_one: Callable[[np.random.Generator], float], rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` calls of a scalar sampler (such as the exponential mechanism) as an array."""
    return np.fromiter((sample_one(rng) for _ in range(size)), dtype=float, count=size)


def intervals_probabilities(edges: np.ndarray, log_weights: np.ndarray) -> np.ndarray:
    """Probability of each interval under :func:`dpstats.privacy.noise.exponential_mechanism_intervals`.

    Interval i has mass proportional to ``length_i x exp(log_weights[i])``
    (Alabi et al. 2022, Algorithm 3), computed in log space.
    """
    lengths = np.diff(np.asarray(edges, dtype=float))
    with np.errstate(divide="ignore"):
        scores = np.log(lengths) + np.asarray(log_weights, dtype=float)
    return np.exp(scores - special.logsumexp(scores))


def intervals_cdf(edges: np.ndarray, log_weights: np.ndarray) -> CDF:
    """The exact, piecewise-linear CDF of the exponential mechanism over intervals.

    The density is constant inside each interval, so the CDF interpolates
    linearly between the cumulative masses at the edges (a zero-length
    interval has zero mass and adds a repeated edge, which is harmless).
    """
    edges = np.asarray(edges, dtype=float)
    cumulative = np.concatenate([[0.0], np.cumsum(intervals_probabilities(edges, log_weights))])
    cumulative /= cumulative[-1]

    def cdf(x: np.ndarray) -> np.ndarray:
        return np.interp(x, edges, cumulative, left=0.0, right=1.0)

    return cdf

"""Coverage of DP confidence intervals by simulation, where the truth is known.

A :class:`SimulationDesign` draws data sets from a model whose coefficients
are known; :func:`coverage_cell` fits each one through the public API and
reports, per coefficient, the share of 95% intervals that cover the truth,
the median interval width and the estimator's own Monte Carlo spread
(2 x 1.96 x sd of the estimates over repetitions), and the failure rate.

The errors are symmetric about 0 and bounded, and the declared bounds contain
every draw: nothing is clipped, and the mean and median regressions have the
same true coefficients, so one truth serves least squares and median
regression. Used by the tests (small, seeded cells) and by
benchmarks/bench_coverage.py (the full grid).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..privacy.noise import make_rng

Fit = Callable[[pd.DataFrame, "SimulationDesign", int], object]
"""``fit(data, design, seed)`` -> a result with ``params``, ``conf_int()`` and ``failed``."""


def _bounded_normal(rng: np.random.Generator, n: int) -> np.ndarray:
    """N(0, 1) clipped to [-3, 3]: symmetric, bounded, sd 0.986."""
    return np.clip(rng.normal(0.0, 1.0, n), -3.0, 3.0)


def _symmetric(rng: np.random.Generator, n: int) -> pd.DataFrame:
    x = rng.uniform(0.0, 10.0, n)
    return pd.DataFrame({"x": x, "y": 1.0 + 0.5 * x + _bounded_normal(rng, n)})


def _heteroskedastic(rng: np.random.Generator, n: int) -> pd.DataFrame:
    x = 10.0 * rng.beta(2.0, 5.0, n)  # skewed to the right
    return pd.DataFrame({"x": x, "y": 1.0 + 0.5 * x + (0.2 + 0.3 * x) * _bounded_normal(rng, n)})


GROUPS = ("a", "b", "c")
GROUP_EFFECTS = {"a": 0.0, "b": 1.0, "c": -1.0}


def _categorical(rng: np.random.Generator, n: int) -> pd.DataFrame:
    x = rng.uniform(0.0, 10.0, n)
    g = rng.choice(GROUPS, n, p=[0.5, 0.3, 0.2])
    y = 1.0 + 0.5 * x + pd.Series(g).map(GROUP_EFFECTS).to_numpy() + _bounded_normal(rng, n)
    return pd.DataFrame({"x": x, "g": g, "y": y})


@dataclass(frozen=True)
class SimulationDesign:
    """A model with known coefficients, its formula and the public declarations that contain every draw."""

    name: str
    formula: str
    bounds: Mapping[str, tuple[float, float]]
    levels: Mapping[str, list]
    truth: Mapping[str, float]
    draw: Callable[[np.random.Generator, int], pd.DataFrame]
    slopes: int


DESIGNS: dict[str, SimulationDesign] = {
    "symmetric": SimulationDesign(
        "symmetric",
        "y ~ x",
        {"x": (0.0, 10.0), "y": (-2.0, 9.0)},
        {},
        {"Intercept": 1.0, "x": 0.5},
        _symmetric,
        1,
    ),
    "heteroskedastic": SimulationDesign(
        "heteroskedastic",
        "y ~ x",
        {"x": (0.0, 10.0), "y": (-4.0, 16.0)},
        {},
        {"Intercept": 1.0, "x": 0.5},
        _heteroskedastic,
        1,
    ),
    "categorical": SimulationDesign(
        "categorical",
        "y ~ x + C(g)",
        {"x": (0.0, 10.0), "y": (-3.0, 10.0)},
        {"g": list(GROUPS)},
        {"Intercept": 1.0, "C(g)[T.b]": 1.0, "C(g)[T.c]": -1.0, "x": 0.5},
        _categorical,
        3,
    ),
}
"""Symmetric errors; heteroskedastic errors with a skewed regressor; a categorical term."""


@dataclass(frozen=True)
class CoverageCell:
    """One cell of the simulation: per coefficient, in the design's order."""

    terms: tuple[str, ...]
    reps: int
    failures: int
    coverage: np.ndarray
    median_width: np.ndarray
    spread: np.ndarray
    no_interval: int = 0
    """Fits that released no interval (NaN: the mechanism's rule refused to spend on it); not in ``coverage``."""

    @property
    def width_ratio(self) -> np.ndarray:
        """Median width over the estimator's Monte Carlo spread 2 x 1.96 x sd."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.median_width / self.spread

    def frame(self) -> pd.DataFrame:
        """One row per coefficient."""
        return pd.DataFrame(
            {
                "term": self.terms,
                "coverage": self.coverage,
                "width": self.median_width,
                "spread": self.spread,
                "width/spread": self.width_ratio,
            }
        )


def coverage_cell(
    design: SimulationDesign, n: int, reps: int, fit: Fit, *, seed: int = 0, alpha: float = 0.05
) -> CoverageCell:
    """Fit ``reps`` data sets of size n and summarise the intervals.

    Failed fits count as failures only; a fit whose interval is NaN (none was
    released) counts in ``no_interval`` and not in the coverage or the width;
    an infinite interval (a failed interval release) covers.
    """
    data_rngs = make_rng(seed).spawn(reps)  # the streams of SeedSequence(seed).spawn(reps)
    terms = tuple(design.truth)
    truth = np.array([design.truth[t] for t in terms])
    estimates, lows, highs, failures = [], [], [], 0
    for rep, child in enumerate(data_rngs):
        data = design.draw(child, n)
        res = fit(data, design, seed * 1_000_003 + rep)
        if res.failed:
            failures += 1
            continue
        ci = res.conf_int(alpha)
        estimates.append(res.params[list(terms)].to_numpy())
        lows.append(ci["lower"][list(terms)].to_numpy())
        highs.append(ci["upper"][list(terms)].to_numpy())
    if not estimates:
        nan = np.full(truth.size, np.nan)
        return CoverageCell(terms, reps, failures, nan, nan, nan)
    est, low, high = np.array(estimates), np.array(lows), np.array(highs)
    released = ~(np.isnan(low) | np.isnan(high))
    covered = np.where(released, (low <= truth) & (truth <= high), np.nan)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a term with no released interval: NaN
        coverage, width = np.nanmean(covered, axis=0), np.nanmedian(np.where(released, high - low, np.nan), axis=0)
    return CoverageCell(
        terms=terms,
        reps=reps,
        failures=failures,
        coverage=coverage,
        median_width=width,
        spread=2.0 * 1.959964 * est.std(axis=0, ddof=1) if len(est) > 1 else np.full(truth.size, np.nan),
        no_interval=int((~released).all(axis=1).sum()),
    )


def coverage_band(reps: int, level: float = 0.95, z: float = 4.0) -> tuple[float, float]:
    """The binomial band ``level +- z sd`` for the coverage of ``reps`` valid intervals (normal approximation).

    A correct interval falls outside it with probability about 2 (1 - Phi(z)):
    6e-5 at z = 4.
    """
    sd = float(np.sqrt(level * (1.0 - level) / reps))
    return level - z * sd, level + z * sd

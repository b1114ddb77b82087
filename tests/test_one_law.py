"""One law per fit (dpstats/uncertainty/intervals.py): the estimate lies inside its own interval, p < alpha exactly
when 0 is outside the 1 - alpha interval, and a coefficient without a finite standard error has no test.

Deterministic given the seeds: the replicate sets are drawn once per seed and every assertion is an identity of
the construction (no false-failure rate), checked on laws built to break the old intervals (replicates far off
the estimate, skewed, heavy-tailed).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from statsmodels.datasets import engel

import dpstats
from dpstats.uncertainty.intervals import (
    MIN_REPLICATES,
    confidence_intervals,
    infinite_cov,
    pvalues,
    replicate_covariance,
    z_statistics,
)

ALPHAS = np.linspace(0.01, 0.99, 99)


def _laws(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """An estimate and replicates for 7 coefficients: centred, offset past the interval, skewed, heavy-tailed, tied."""
    rng = np.random.default_rng(seed)
    b = 400
    replicates = np.column_stack(
        [
            rng.normal(1.0, 1.0, b),
            rng.normal(6.0, 1.0, b),  # the estimate (1) far below every replicate: a big bias correction
            rng.normal(-4.0, 0.5, b),  # far above every replicate, on the other side of 0
            1.0 / rng.normal(1.0, 0.4, b),  # a noisy denominator
            rng.standard_t(1.5, b),
            rng.exponential(1.0, b) - 0.2,
            np.round(rng.normal(1.0, 1.0, b) * 2) / 2,  # on a grid, as a grid median's: ties, 0 and 2 theta on it
        ]
    )
    params = np.array([1.0, 1.0, 0.5, 1.0, -0.3, 0.05, 1.0])
    return params, replicates


@pytest.mark.parametrize("kind", ["basic", "percentile"])
@pytest.mark.parametrize("seed", range(5))
def test_the_estimate_is_inside_every_interval_and_p_inverts_the_interval(kind: str, seed: int) -> None:
    params, replicates = _laws(seed)
    cov = replicate_covariance(replicates)
    p = pvalues(params, cov, replicates, kind)
    assert np.all((p >= 0) & (p <= 1))
    for alpha in ALPHAS:
        lower, upper = confidence_intervals(params, cov, replicates, alpha, kind)
        assert np.all(lower <= params) and np.all(params <= upper)
        outside = (lower > 0) | (upper < 0)
        clear = np.abs(p - alpha) > 1e-9
        assert np.array_equal((p < alpha)[clear], outside[clear]), (alpha, p, lower, upper)


def test_without_the_hull_the_offset_laws_would_leave_the_estimate_out() -> None:
    """The construction matters: the plain basic interval of the offset coefficients excludes the estimate."""
    params, replicates = _laws(0)
    low_q, high_q = np.quantile(replicates, [0.025, 0.975], axis=0)
    plain_lower, plain_upper = 2 * params - high_q, 2 * params - low_q
    assert plain_lower[2] > params[2] or plain_upper[1] < params[1]


def test_normal_p_values_invert_normal_intervals() -> None:
    params = np.array([0.3, -2.0, 0.0, 5.0])
    cov = np.diag([0.04, 1.0, 1.0, 9.0])
    p = pvalues(params, cov, None)
    for alpha in ALPHAS:
        lower, upper = confidence_intervals(params, cov, None, alpha)
        clear = np.abs(p - alpha) > 1e-9
        assert np.array_equal((p < alpha)[clear], ((lower > 0) | (upper < 0))[clear])


def test_no_finite_standard_error_means_no_test() -> None:
    params = np.array([1.0, 2.0])
    for cov in (infinite_cov(2), np.full((2, 2), np.nan)):
        assert np.isnan(z_statistics(params, cov)).all()
        assert np.isnan(pvalues(params, cov, None)).all()
    few = np.ones((MIN_REPLICATES - 1, 2))
    cov = replicate_covariance(few)
    assert np.isnan(pvalues(params, cov, few)).all()
    lower, upper = confidence_intervals(params, cov, few, 0.05)
    assert np.all(np.isinf(lower)) and np.all(np.isinf(upper))


def test_a_fit_prints_one_law_and_says_why_a_test_is_missing() -> None:
    data = engel.load_pandas().data
    bounds = {"income": (0, 5000), "foodexp": (0, 2500)}
    boot = dpstats.dp_ols("foodexp ~ income", data, eps=1.0, bounds=bounds, method="histogram", random_state=3)
    assert boot.inference.startswith("bootstrap") and boot.pvalues.name == "P boot"
    text = boot.summary().as_text()
    assert "P boot" in text and "P>|z|" not in text and "bootstrap law" in text
    assert boot.glance()["inference"].iloc[0] == boot.inference
    none = dpstats.dp_ols(
        "foodexp ~ income", data, eps=1.0, bounds=bounds, method="noisystats", se_share=0, random_state=3
    )
    assert none.inference == "normal" and np.isnan(none.tvalues).all() and np.isnan(none.pvalues).all()
    assert "No test for Intercept, income" in none.summary().as_text()
    assert math.isnan(pd.Series(none.tidy()["p.value"]).iloc[1])

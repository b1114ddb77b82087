"""The Tukey mechanism for median regression: batch quantile fits and the private fit against QuantReg."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy.optimize import linprog

import dpstats
from dpstats.mechanisms.tukey.models import batch_ols
from dpstats.mechanisms.tukey.quantile_models import batch_quantreg, check_loss


def _exact(X: np.ndarray, y: np.ndarray, q: float) -> np.ndarray:
    """The q-th regression quantile by the linear program (HiGHS): minimise q u+ + (1 - q) u- s.t. X b + u+ - u- = y."""
    b, d = X.shape
    cost = np.r_[np.zeros(d), np.full(b, q), np.full(b, 1.0 - q)]
    bounds = [(None, None)] * d + [(0, None)] * (2 * b)
    return linprog(cost, A_eq=np.c_[X, np.eye(b), -np.eye(b)], b_eq=y, bounds=bounds, method="highs").x[:d]


def _batches(k: int, b: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Skewed regressors and exponential errors: the batches real wage data give."""
    rng = np.random.default_rng(seed)
    X = np.concatenate([np.ones((k, b, 1)), rng.standard_normal((k, b, d - 1)) ** 2], axis=2)
    return X, X.sum(axis=2) + 3.0 * rng.standard_exponential((k, b))


@pytest.mark.parametrize(("b", "d", "q"), [(4, 2, 0.5), (12, 5, 0.5), (30, 6, 0.9), (100, 10, 0.25)])
def test_batch_quantreg_reaches_the_linear_programs_check_loss(b: int, d: int, q: float) -> None:
    """Deterministic (seeded data, no noise). Measured: the median batch's check loss is at most 3e-6 above
    the LP's and none is more than 1.3% above it; the thresholds leave room for other BLAS roundings."""
    X, y = _batches(60, b, d, seed=b + d)
    coef, unknown = batch_quantreg(X, y, q)
    exact = np.array([_exact(X[i], y[i], q) for i in range(len(y))])
    gap = check_loss(X, y, q, coef) / check_loss(X, y, q, exact) - 1.0
    assert not unknown.any()
    assert gap.min() > -1e-9  # never below the optimum: the LP is exact
    assert np.median(gap) < 1e-4
    assert gap.max() < 0.03


def test_batch_quantreg_drops_what_the_batch_cannot_estimate_as_ols_does() -> None:
    """A dummy absent from the batch and a batch with a non-finite row: the same masks and zero model as OLS."""
    X, y = _batches(20, 12, 3, seed=1)
    X[:, :, 2] = 0.0  # a level absent from every batch
    X[3, 0, 1] = np.inf
    coef, unknown = batch_quantreg(X, y, 0.5)
    assert np.array_equal(unknown, batch_ols(X, y)[1])
    assert unknown[:, 2][np.arange(20) != 3].all()
    assert np.all(coef[3] == 0.0)
    assert np.all(np.isfinite(coef))


@pytest.fixture(scope="module")
def large_design() -> pd.DataFrame:
    rng = np.random.default_rng(2026)
    n = 40_000
    x = rng.uniform(0, 10, n)
    g = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    y = 1.0 + 0.5 * x + np.select([g == "b", g == "c"], [0.8, -0.6], 0.0) + rng.lognormal(0.0, 0.8, n)
    return pd.DataFrame({"y": y, "x": x, "g": g})


def test_dp_quantreg_tukey_at_large_eps_is_quantreg(large_design: pd.DataFrame) -> None:
    """At eps = 1e4 the privacy noise is negligible and the Tukey median of the batch medians must sit within
    two of QuantReg's standard errors of QuantReg (the aggregate's own sampling error is about one; seeded)."""
    formula = "y ~ x + C(g)"
    reference = smf.quantreg(formula, large_design).fit(q=0.5)
    res = dpstats.dp_quantreg(
        formula,
        large_design,
        q=0.5,
        eps=1e4,
        delta=1e-6,
        method="tukey",
        levels={"g": ["a", "b", "c"]},
        random_state=3,
    )
    assert res.status == "ok"
    distance = (res.params.to_numpy() - reference.params.to_numpy()) / reference.bse.to_numpy()
    assert np.all(np.abs(distance) < 2.0), distance
    assert np.all(np.isfinite(res.bse))


def test_dp_quantreg_tukey_fits_other_quantiles(large_design: pd.DataFrame) -> None:
    """The 0.9 quantile's slope is the median's (location shift) but its intercept is higher by the error
    law's 0.9 - 0.5 quantile gap (exp(0.8 z_0.9) - 1 = 1.79): the batches fit the quantile asked for."""
    kwargs = {"eps": 1e4, "delta": 1e-6, "method": "tukey", "levels": {"g": ["a", "b", "c"]}, "random_state": 4}
    median = dpstats.dp_quantreg("y ~ x + C(g)", large_design, q=0.5, **kwargs)
    upper = dpstats.dp_quantreg("y ~ x + C(g)", large_design, q=0.9, **kwargs)
    assert abs(upper.params["x"] - median.params["x"]) < 0.05
    assert upper.params["Intercept"] - median.params["Intercept"] == pytest.approx(1.79, abs=0.25)

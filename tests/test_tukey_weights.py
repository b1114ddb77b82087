"""Survey weights in the Tukey mechanism (dpstats/mechanisms/tukey/): each batch fits the weighted estimator, a
row's weight moves its own batch's model only, and at a huge eps the release follows the weighted batch fits.

Seeded throughout: nothing here fails at random.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy.optimize import linprog

import dpstats
from dpstats.glm.links import get_link
from dpstats.mechanisms import weighted_methods
from dpstats.mechanisms.tukey.jackknife import batch_ols_jackknife
from dpstats.mechanisms.tukey.logit_models import MEDIAN_SHARE, batch_glm, bias_correction, glm_batch_fit
from dpstats.mechanisms.tukey.models import batch_ols, partition_models
from dpstats.mechanisms.tukey.quantile_models import batch_quantreg, check_loss, quantile_batch_fit

N, M = 240, 12


def _rows(seed: int, b: int = 40, k: int = 5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = np.concatenate([np.ones((k, b, 1)), rng.normal(0, 1, (k, b, 2))], axis=2)
    y = X @ np.array([1.0, 2.0, -1.0]) + rng.standard_t(3, (k, b))
    return X, y, rng.uniform(0.5, 5.0, (k, b))


def test_tukey_takes_weights_for_every_estimator() -> None:
    for estimator in ("ols", "quantreg", "logit", "probit"):
        assert "tukey" in weighted_methods(estimator)


def test_weighted_batch_ols_is_wls() -> None:
    X, y, w = _rows(0)
    coef, unknown = batch_ols(X, y, w)
    for j in range(X.shape[0]):
        np.testing.assert_allclose(coef[j], sm.WLS(y[j], X[j], weights=w[j]).fit().params, atol=1e-9)
    assert not unknown.any()


def test_weighted_jackknife_is_the_weighted_leave_one_out_correction() -> None:
    """``b beta - (b - 1) mean_i beta_(-i)`` with each leave-one-out fit a WLS refit."""
    X, y, w = _rows(1, b=15, k=2)
    coef, _ = batch_ols_jackknife(X, y, w)
    b = X.shape[1]
    for j in range(X.shape[0]):
        full = sm.WLS(y[j], X[j], weights=w[j]).fit().params
        loo = [
            sm.WLS(np.delete(y[j], i), np.delete(X[j], i, 0), weights=np.delete(w[j], i)).fit().params for i in range(b)
        ]
        np.testing.assert_allclose(coef[j], b * full - (b - 1) * np.mean(loo, axis=0), atol=1e-8)


def _weighted_lp_loss(X: np.ndarray, y: np.ndarray, w: np.ndarray, q: float) -> float:
    """The smallest weighted check loss, by the linear program ``min sum w (q u + (1 - q) v)``, ``X b + u - v = y``."""
    b, d = X.shape
    cost = np.concatenate([np.zeros(2 * d), q * w, (1 - q) * w])
    A = np.hstack([X, -X, np.eye(b), -np.eye(b)])
    return float(linprog(cost, A_eq=A, b_eq=y, bounds=(0, None), method="highs").fun)


@pytest.mark.parametrize("q", [0.5, 0.8])
def test_weighted_batch_quantreg_reaches_the_weighted_linear_programs_loss(q: float) -> None:
    X, y, w = _rows(2)
    coef, _ = batch_quantreg(X, y, q, w)
    losses = check_loss(X, y, q, coef, w)
    for j in range(X.shape[0]):
        assert losses[j] <= _weighted_lp_loss(X[j], y[j], w[j], q) * (1 + 1e-6)


def test_weighted_batch_logit_is_the_weighted_mle_with_its_correction() -> None:
    X, _, w = _rows(3, b=200, k=2)
    rng = np.random.default_rng(3)
    y = (rng.uniform(0, 1, X.shape[:2]) < 1 / (1 + np.exp(-X @ np.array([-0.5, 1.0, -1.0])))).astype(float)
    coef, unknown = batch_glm(X, y, get_link("logit"), w)
    mle = np.array(
        [sm.GLM(y[j], X[j], family=sm.families.Binomial(), var_weights=w[j]).fit(tol=1e-12).params for j in range(2)]
    )
    expected = mle + MEDIAN_SHARE * bias_correction(get_link("logit"), X, mle, w)
    np.testing.assert_allclose(coef, expected, atol=1e-6)
    assert not unknown.any()


def _frame(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(N), rng.uniform(0, 1, N)])
    y = X @ np.array([1.0, 2.0]) + rng.normal(0, 0.5, N)
    return X, y, rng.uniform(0, 3, N)


@pytest.mark.parametrize(
    "fit",
    [None, batch_ols_jackknife, quantile_batch_fit(0.5), glm_batch_fit("logit")],
    ids=["ols", "ols-jackknife", "median", "logit"],
)
def test_a_rows_weight_moves_only_its_own_batchs_model(fit) -> None:
    """A row's weight moved to 0, 3 or 1e6 (beyond any declared range) changes at most one model, the others bit
    for bit; the weighted least-squares and logit fits always move with a weight of 1e6 (the median's vertex
    may stay)."""
    X, y, w = _frame(4)
    if fit is not None and fit.__qualname__.startswith("glm_batch_fit"):
        y = (y > 2.0).astype(float)
    base = partition_models(X, y, M, np.random.default_rng(9), fit, w)
    for row in (0, 101, 239):
        for new in (0.0, 3.0, 1e6):
            moved = w.copy()
            moved[row] = new
            other = partition_models(X, y, M, np.random.default_rng(9), fit, moved)
            changed = np.flatnonzero(np.any(other != base, axis=1)).size
            assert changed <= 1
            if new == 1e6 and fit is None:
                assert changed == 1


def test_at_a_huge_eps_the_release_follows_the_weighted_batch_fits() -> None:
    """Rows of weight 0 follow y = 10 - 5x, the others y = 1 + 2x: the weighted fits ignore the first, and the
    release at eps = 1e9 lies within 0.1 of (1, 2), while unweighted it lies far from it."""
    rng = np.random.default_rng(5)
    n = 4000
    x = rng.uniform(0, 1, n)
    ignored = rng.uniform(0, 1, n) < 0.45
    y = np.where(ignored, 10.0 - 5.0 * x, 1.0 + 2.0 * x) + rng.normal(0, 0.2, n)
    frame = pd.DataFrame({"y": y, "x": x, "wt": np.where(ignored, 0.0, rng.uniform(1, 4, n))})
    bounds = {"wt": (0, 4)}
    for q in (None, 0.5):
        kwargs = dict(eps=1e9, delta=1e-6, bounds=bounds, method="tukey", random_state=2)
        weighted = (
            dpstats.dp_ols("y ~ x", frame, weights="wt", **kwargs)
            if q is None
            else dpstats.dp_quantreg("y ~ x", frame, q=q, weights="wt", **kwargs)
        )
        np.testing.assert_allclose(weighted.params.to_numpy(), [1.0, 2.0], atol=0.1)
    unweighted = dpstats.dp_ols("y ~ x", frame, eps=1e9, delta=1e-6, method="tukey", random_state=2)
    assert np.max(np.abs(unweighted.params.to_numpy() - [1.0, 2.0])) > 1.0

"""The binary-response core (dpstats/glm/): links, the batched MLE, the averages at a fit and the marginal effects.

References are statsmodels' Logit, Probit and GLM fits and its ``get_margeff``; the
averages' sensitivity is checked by brute force over the declared box's corners.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import special

from dpstats.glm.at_fit import release_at_fit, row_bounds, scaled_rows, sensitivity
from dpstats.glm.links import LOGIT, PROBIT, get_link
from dpstats.glm.mle import fit_mle
from dpstats.privacy import noise
from dpstats.results.margins import DPMargins

LINKS = {"logit": (LOGIT, sm.Logit), "probit": (PROBIT, sm.Probit)}


def _logit_sample(seed: int, n: int = 1500) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=n), rng.uniform(size=n), rng.integers(0, 2, n)])
    y = (rng.uniform(size=n) < special.expit(X @ [-1.5, 0.6, 1.2, -0.5])).astype(float)
    return X, y


@pytest.mark.parametrize("name", ["logit", "probit"])
def test_link_derivatives_match_finite_differences(name):
    link = get_link(name)
    eta, y, h = np.linspace(-30, 30, 601), 0.3, 1e-5
    np.testing.assert_allclose(link.density(eta), (link.mean(eta + h) - link.mean(eta - h)) / (2 * h), atol=1e-8)
    slope = (link.density(eta + h) - link.density(eta - h)) / (2 * h)
    np.testing.assert_allclose(link.density_slope(eta), slope, atol=1e-8)
    score = (link.loglik(y, eta + h) - link.loglik(y, eta - h)) / (2 * h)
    np.testing.assert_allclose(link.score_factor(y, eta), score, rtol=1e-5, atol=1e-7)
    curvature = -(link.score_factor(y, eta + h) - link.score_factor(y, eta - h)) / (2 * h)
    np.testing.assert_allclose(link.curvature(y, eta), curvature, rtol=1e-4, atol=1e-7)
    fine = np.linspace(-10, 10, 200_001)
    assert np.max(link.density(fine)) == pytest.approx(link.density_max, rel=1e-9)
    assert np.max(np.abs(link.density_slope(fine))) == pytest.approx(link.slope_max, rel=1e-8)


@pytest.mark.parametrize("name", ["logit", "probit"])
def test_mle_matches_statsmodels_one_sample_and_a_batch(name):
    link, model = LINKS[name]
    X, y = _logit_sample(0)
    ref = model(y, X).fit(disp=0)
    fit = fit_mle(link, X, y)
    np.testing.assert_allclose(fit.params, ref.params, rtol=1e-8)
    np.testing.assert_allclose(np.linalg.inv(fit.information), ref.cov_params(), rtol=1e-6)
    batch = fit_mle(link, X.reshape(3, 500, 4), y.reshape(3, 500))
    for b in range(3):
        part = model(y[b * 500 : (b + 1) * 500], X[b * 500 : (b + 1) * 500]).fit(disp=0)
        np.testing.assert_allclose(batch.params[b], part.params, rtol=1e-7)


def test_mle_weights_and_fractional_response_match_glm():
    X, y = _logit_sample(1)
    weights = np.random.default_rng(2).integers(1, 4, len(y)).astype(float)
    fraction = np.clip(0.6 * y + 0.3 * np.random.default_rng(3).uniform(size=len(y)), 0, 1)
    ref = sm.GLM(fraction, X, family=sm.families.Binomial(), freq_weights=weights).fit()
    np.testing.assert_allclose(fit_mle(LOGIT, X, fraction, weights).params, ref.params, rtol=1e-7)


def test_separation_is_a_failed_output_not_an_error():
    X, _ = _logit_sample(4, n=30)
    separated = (X[:, 1] > 0).astype(float)
    fit = fit_mle(LOGIT, X, separated, max_abs=1e3)
    assert fit.failed and np.all(np.isnan(fit.params))
    batch = fit_mle(LOGIT, np.stack([X, X]), np.stack([separated, _logit_sample(5, n=30)[1]]), max_abs=1e3)
    assert batch.failed[0] and not batch.failed[1]


@pytest.mark.parametrize("name", ["logit", "probit"])
def test_at_fit_sensitivity_holds_over_the_box_corners(name):
    """Brute force: every pair of rows at the box's corners (and random interior rows), at random coefficients,
    moves the scaled sums by at most the declared L1 sensitivity, and the worst pair comes near it."""
    link = get_link(name)
    bounds = np.array([[1, 1], [-2, 3], [0, 1], [0.5, 4]], dtype=float)
    scale = row_bounds(bounds)
    corners = np.array([[1, *c] for c in itertools.product(*bounds[1:])])
    rng = np.random.default_rng(6)
    interior = np.column_stack([np.ones(200), *(rng.uniform(lo, hi, 200) for lo, hi in bounds[1:])])
    rows = np.vstack([corners, interior])
    worst = 0.0
    for theta in rng.normal(scale=2.0, size=(40, 4)):
        values = scaled_rows(link, rows, theta, scale)
        moved = np.abs(values[:, None, :] - values[None, :, :]).sum(axis=2)
        worst = max(worst, moved.max())
    assert worst <= sensitivity(4) + 1e-12
    assert worst >= 0.6 * sensitivity(4)  # the bound is not loose by more than the dummies' corners allow


@pytest.mark.parametrize("name", ["logit", "probit"])
def test_margins_at_a_huge_eps_are_statsmodels_get_margeff(name):
    link, model = LINKS[name]
    X, y = _logit_sample(7)
    bounds = np.array([[1, 1], [-5, 5], [0, 1], [0, 1]], dtype=float)
    X = np.clip(X, bounds[:, 0], bounds[:, 1])
    ref = model(y, X).fit(disp=0)
    at_fit = release_at_fit(link, X, bounds, ref.params, 1e9, noise.make_rng(8))
    margins = DPMargins.of(name, ["Intercept", "x1", "x2", "x3"], ref.params, ref.cov_params(), at_fit)
    expected = ref.get_margeff().summary_frame()
    got = margins.summary_frame()
    assert list(got.columns) == list(expected.columns)
    np.testing.assert_allclose(got.to_numpy(), expected.to_numpy(), rtol=1e-6)


def test_at_fit_after_a_failed_fit_releases_nan():
    X, _ = _logit_sample(9, n=50)
    at_fit = release_at_fit(LOGIT, X, np.array([[1, 1], [-5, 5], [0, 1], [0, 1]]), np.full(4, np.nan), 1.0,
                            noise.make_rng(0))  # fmt: skip
    assert np.isnan(at_fit.density_mean) and np.all(np.isnan(at_fit.slope_means))

"""NoisyStats' statistical behaviour (Alabi et al. 2022, Algorithm 1 and its
multivariate and through-the-origin generalisations in
dpstats/mechanisms/noisystats/mechanism.py).

What is true, and tested here: every released statistic is the exact
statistic of the clipped data plus Laplace noise of a known scale b (mean 0,
variance 2 b^2); the intercept noise, given the released slope, has scale
(1 + |slope|) / n / (eps / 3) on the unit scale; and the failure output
happens with the exact probability P(nvar + L <= 0) = exp(-nvar / b) / 2.
The scales are derived here by hand from the declared bounds, so a wrong
sensitivity or budget split fails the variance checks.

Tolerances and false-failure probability (the tests are seeded, so they are
deterministic; the probabilities are over seeds, normal approximation):
means within 4 standard errors (6e-5 each), sample variances within 5
standard deviations of 2 b^2 (the sample variance of m Laplace draws has
relative sd sqrt(5 / m); 6e-7 each), the failure count within 4.5 binomial
standard deviations (7e-6). About 25 checks: < 2e-3 in total. With m = 3000
releases (:data:`SIMPLE_DRAWS`) the variance checks reject a noise scale off
by 20% or more, with m = 2000 (:data:`DRAWS`, several regressors and through
the origin) by 25% or more: the band is 5 sqrt(5 / m) = 0.20 (0.25) wide on
either side of 1, and a variance ratio of 1.44 or 0.64 (1.56 or 0.56) lies
at least 4 of its own standard deviations, sqrt(5 / m) s^2, beyond it. A
factor 2 in a sensitivity or a budget split in three parts instead of two is
a scale off by 33% or more.
"""

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats.frontend.formula import build_design
from dpstats.mechanisms import PrivacyRequest
from dpstats.mechanisms.noisystats import mechanism as noisystats
from dpstats.privacy.noise import make_rng


def _design(formula, frame, bounds):
    design, _ = build_design(formula, frame, bounds, None)
    return design


def _draws(design, eps, m, seed):
    rng = np.random.default_rng(seed)
    return [noisystats.fit(design, PrivacyRequest(eps=eps, se_share=0), rng) for _ in range(m)]


def assert_laplace(sample, truth, b, label):
    """``sample`` ~ truth + Laplace(b): mean within 4 SE, variance within 5 sd of 2 b^2."""
    sample = np.asarray(sample, dtype=float)
    m = sample.size
    se = np.sqrt(2.0) * b / np.sqrt(m)
    assert abs(sample.mean() - truth) <= 4 * se, f"{label}: mean {sample.mean()} vs {truth} (se {se})"
    ratio = sample.var(ddof=1) / (2 * b**2)
    assert abs(ratio - 1) <= 5 * np.sqrt(5.0 / m), f"{label}: variance ratio {ratio}"


# --------------------------------------------------------------------------
# One regressor with an intercept: Algorithm 1
# --------------------------------------------------------------------------

N1 = 40
SIMPLE_DRAWS = 3000
DRAWS = 2000
X_BOUNDS, Y_BOUNDS = (0.0, 4.0), (-2.0, 10.0)


@pytest.fixture(scope="module")
def simple():
    rng = np.random.default_rng(31)
    x = rng.uniform(0.0, 4.0, N1)
    frame = pd.DataFrame({"x": x, "y": np.clip(1 + 1.5 * x + rng.normal(0, 1, N1), *Y_BOUNDS)})
    design = _design("y ~ x", frame, {"x": X_BOUNDS, "y": Y_BOUNDS})
    u = (frame.x.to_numpy() - X_BOUNDS[0]) / (X_BOUNDS[1] - X_BOUNDS[0])
    v = (frame.y.to_numpy() - Y_BOUNDS[0]) / (Y_BOUNDS[1] - Y_BOUNDS[0])
    nvar_u = float(((u - u.mean()) ** 2).sum())
    # eps at which the failure probability exp(-nvar / b) / 2 is 0.2 (b = (1 - 1/n) / (eps / 3))
    b = nvar_u / np.log(2.5)
    eps = 3 * (1 - 1 / N1) / b
    return {"frame": frame, "design": design, "u": u, "v": v, "nvar_u": nvar_u, "b": b, "eps": eps}


@pytest.fixture(scope="module")
def simple_draws(simple):
    return _draws(simple["design"], simple["eps"], m=SIMPLE_DRAWS, seed=1)


def test_result_noisy_stats_are_the_mechanism_release(simple):
    """res.noisy_stats is what the mechanism released, draw for draw."""
    for seed in range(5):
        res = dpstats.dp_ols(
            "y ~ x",
            simple["frame"],
            eps=2.0,
            bounds={"x": X_BOUNDS, "y": Y_BOUNDS},
            method="noisystats",
            random_state=seed,
        )
        direct = noisystats.fit(simple["design"], PrivacyRequest(eps=2.0), make_rng(seed))
        assert res.noisy_stats.keys() == direct.noisy_stats.keys()
        for key, value in direct.noisy_stats.items():
            np.testing.assert_array_equal(res.noisy_stats[key], value)
        np.testing.assert_array_equal(res.params.to_numpy(), direct.params)


def test_noisy_nvar_and_ncov_are_centred_with_laplace_variance(simple, simple_draws):
    """3000 seeded releases: each statistic is its true value plus Laplace(b), b from Lemma 19.

    False-failure probability: two means at 4 SE, two variances at 5 sd, one
    correlation at 4.5 sd: about 1.4e-4 (normal approximation).
    """
    wx, wy = X_BOUNDS[1] - X_BOUNDS[0], Y_BOUNDS[1] - Y_BOUNDS[0]
    x, y = simple["frame"].x.to_numpy(), simple["frame"].y.to_numpy()
    true_nvar = float(((x - x.mean()) ** 2).sum())
    true_ncov = float(((x - x.mean()) * (y - y.mean())).sum())
    b = simple["b"]  # Lemma 19: sensitivity 1 - 1/n on [0, 1]^2, eps / 3 each
    nvar = [r.noisy_stats["nvar(x)"].item() for r in simple_draws]
    ncov = [r.noisy_stats["ncov(x, y)"].item() for r in simple_draws]
    assert_laplace(nvar, true_nvar, b * wx * wx, "nvar(x)")
    assert_laplace(ncov, true_ncov, b * wx * wy, "ncov(x, y)")
    assert abs(np.corrcoef(nvar, ncov)[0, 1]) < 4.5 / np.sqrt(len(nvar))  # independent draws


def test_failure_rate_is_the_exact_laplace_probability(simple, simple_draws):
    """The failure rate at eps * nvar small (P = 0.2) is exp(-nvar / b) / 2; failure
    happens exactly when the noisy nvar is <= 0. False-failure probability: the
    count is checked at 4.5 binomial sd, about 7e-6."""
    expected = 0.5 * np.exp(-simple["nvar_u"] / simple["b"])
    assert expected == pytest.approx(0.2)
    failed = np.array([r.failed for r in simple_draws])
    m = failed.size
    assert abs(failed.sum() - m * expected) <= 4.5 * np.sqrt(m * expected * (1 - expected))
    for r in simple_draws:
        assert r.failed == (r.noisy_stats["nvar(x)"].item() <= 0)
        assert np.isnan(r.params).all() == r.failed


def test_intercept_noise_has_the_stated_scale(simple, simple_draws):
    """Standardised by (1 + |slope|) / n / (eps / 3), the intercept noise is Laplace(1).

    False-failure probability: mean at 4 SE, variance at 5 sd, about 6e-5.
    """
    wx, wy = X_BOUNDS[1] - X_BOUNDS[0], Y_BOUNDS[1] - Y_BOUNDS[0]
    u_bar, v_bar = simple["u"].mean(), simple["v"].mean()
    standardised = []
    for r in simple_draws:
        if r.failed:
            continue
        intercept, slope = r.params
        b_unit = slope * wx / wy  # slope on the unit scale
        a_unit = (intercept - Y_BOUNDS[0] + slope * X_BOUNDS[0]) / wy
        scale = (1 + abs(b_unit)) / N1 / (simple["eps"] / 3)
        standardised.append((a_unit - (v_bar - b_unit * u_bar)) / scale)
    assert len(standardised) > 0.7 * len(simple_draws)  # 80% expected (failure probability 0.2): 13 sd above
    assert_laplace(standardised, 0.0, 1.0, "intercept")


def test_estimates_concentrate_at_large_eps(simple):
    x, y = simple["frame"].x.to_numpy(), simple["frame"].y.to_numpy()
    ols = np.polyfit(x, y, 1)[::-1]
    release = noisystats.fit(simple["design"], PrivacyRequest(eps=1e8), np.random.default_rng(0))
    np.testing.assert_allclose(release.params, ols, rtol=1e-5)


# --------------------------------------------------------------------------
# Several regressors: noisy X'X (upper triangle) and X'y, eps / 3 each
# --------------------------------------------------------------------------


def test_multivariate_statistics_are_centred_with_the_stated_scales():
    """p = 2, 2000 seeded releases: the 3 entries of X'X (L1 sensitivity 3(1 - 1/n))
    and the 2 of X'y (2(1 - 1/n)), eps / 3 each. False-failure probability:
    5 means at 4 SE and 5 variances at 5 sd, about 3e-4."""
    n, m, eps = 50, DRAWS, 5.0
    bounds = {"x1": (0.0, 2.0), "x2": (-1.0, 4.0), "y": (-5.0, 5.0)}
    rng = np.random.default_rng(8)
    frame = pd.DataFrame({"x1": rng.uniform(0, 2, n), "x2": rng.uniform(-1, 4, n)})
    frame["y"] = np.clip(frame.x1 - 0.5 * frame.x2 + rng.normal(0, 1, n), -5, 5)
    draws = _draws(_design("y ~ x1 + x2", frame, bounds), eps, m, seed=2)

    X, y = frame[["x1", "x2"]].to_numpy(), frame.y.to_numpy()
    Xc = X - X.mean(axis=0)
    true_xx, true_xy = Xc.T @ Xc, Xc.T @ (y - y.mean())
    w = np.array([2.0, 5.0])
    wy = 10.0
    p = 2
    b_xx = p * (p + 1) / 2 * (1 - 1 / n) / (eps / 3)  # L1 sensitivity of the 3 upper entries
    b_xy = p * (1 - 1 / n) / (eps / 3)
    xx = np.array([r.noisy_stats["nvar(x)"] for r in draws])
    xy = np.array([r.noisy_stats["ncov(x, y)"] for r in draws])
    np.testing.assert_array_equal(xx[:, 0, 1], xx[:, 1, 0])  # one draw per pair, mirrored
    for j, k in [(0, 0), (0, 1), (1, 1)]:
        assert_laplace(xx[:, j, k], true_xx[j, k], b_xx * w[j] * w[k], f"nvar[{j},{k}]")
    for j in range(p):
        assert_laplace(xy[:, j], true_xy[j], b_xy * w[j] * wy, f"ncov[{j}]")


# --------------------------------------------------------------------------
# Through the origin: uncentred X'X and X'y, eps / 2 each
# --------------------------------------------------------------------------


def test_no_intercept_statistics_have_the_product_interval_scales():
    """x in (0, 2), y in (-1, 3): one row moves x*y within [-2, 6] (width 8) and
    x*x within [0, 4] (width 4), so the Laplace scales are 8 / (eps / 2) and
    4 / (eps / 2) in the data's units. False-failure probability: 2 means at
    4 SE and 2 variances at 5 sd, about 1.3e-4."""
    n, m, eps = 30, DRAWS, 4.0
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"x": rng.uniform(0, 2, n)})
    frame["y"] = np.clip(0.8 * frame.x + rng.normal(0, 0.5, n), -1, 3)
    draws = _draws(_design("y ~ x - 1", frame, {"x": (0.0, 2.0), "y": (-1.0, 3.0)}), eps, m, seed=3)
    x, y = frame.x.to_numpy(), frame.y.to_numpy()
    assert_laplace([r.noisy_stats["X'X"].item() for r in draws], float(x @ x), 4 / (eps / 2), "X'X")
    assert_laplace([r.noisy_stats["X'y"].item() for r in draws], float(x @ y), 8 / (eps / 2), "X'y")
    assert all(r.privacy.split == (("X'y", eps / 2), ("X'X", eps / 2)) for r in draws[:5])

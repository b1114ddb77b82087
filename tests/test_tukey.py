"""method="tukey" (Amin et al. 2023 with Brown et al. 2021's PTR): behaviour, limits and schema.

The privacy audit is in tests/test_tukey_privacy.py. Statistical checks are
seeded; their false-failure probabilities are stated where they are not 0.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import dpstats
from dpstats.mechanisms import REGISTRY, PrivacyRequest
from dpstats.mechanisms.tukey import default_m as tukey_m
from dpstats.mechanisms.tukey import depth as td
from dpstats.mechanisms.tukey import exact_draw
from dpstats.mechanisms.tukey import inference as tukey_inference
from dpstats.mechanisms.tukey import mechanism as tukey
from dpstats.mechanisms.tukey import models as tukey_models
from dpstats.mechanisms.tukey.jackknife import batch_ols_jackknife
from dpstats.mechanisms.tukey.models import batch_ols, partition_models
from dpstats.privacy.noise import exponential_mechanism_point_release, make_rng, recording

EPS, DELTA = math.log(3), 1e-5


def _frame(n: int, seed: int = 0, noise: float = 1.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x1, x2 = rng.normal(size=n), rng.uniform(-3, 3, size=n)
    g = rng.choice(["a", "b", "c"], size=n)
    y = 1.0 + 2.0 * x1 - 3.0 * x2 + np.select([g == "b", g == "c"], [0.5, -1.0], 0.0) + noise * rng.normal(size=n)
    return pd.DataFrame({"y": y, "x1": x1, "x2": x2, "g": g})


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return _frame(20_000)


def test_registered_as_approximate_dp_without_bounds() -> None:
    spec = REGISTRY["tukey"]
    assert not spec.needs_bounds and spec.needs_delta and spec.options == {"m": None, "jackknife": None, "skew": None}
    assert "Amin" in spec.citation and "Brown" in spec.citation


def test_fit_without_bounds(frame: pd.DataFrame) -> None:
    res = dpstats.dp_ols("y ~ x1 + x2", frame, eps=EPS, delta=DELTA, method="tukey", random_state=1)
    assert not res.failed
    np.testing.assert_allclose(res.params.to_numpy(), [1.0 - 0.5 / 3, 2.0, -3.0], atol=0.15)  # g omitted
    share = tukey_inference.DEFAULT_SHARES[0]  # the point keeps (1 - share) eps; its default m follows
    m = tukey_m.default_m(20_000, 3, EPS * (1 - share), DELTA)
    assert res.hyperparameters["m"] == m and res.hyperparameters["m rule"] == "default"
    assert res.hyperparameters["t"] == (m // 2) // 2
    assert res.privacy.notion == "approx" and res.privacy.delta == DELTA
    assert sum(e for _, e in res.privacy.split) == pytest.approx(EPS)
    assert res.noisy_stats["PTR distance (noisy)"] > res.noisy_stats["PTR threshold"]
    assert np.all(np.isfinite(res.bse)) and res.replicates is not None
    paper = dpstats.dp_ols("y ~ x1 + x2", frame, eps=EPS, delta=DELTA, method="tukey", random_state=1, se_share=0)
    assert paper.hyperparameters["m"] == tukey_m.default_m(20_000, 3, EPS, DELTA) and np.all(np.isnan(paper.bse))
    assert "Tukey" in res.summary().as_text()


def test_categorical_terms_need_declared_levels(frame: pd.DataFrame) -> None:
    res = dpstats.dp_ols(
        "y ~ x1 + x2 + C(g)", frame, eps=EPS, delta=DELTA, method="tukey", levels={"g": ["a", "b", "c"]}, random_state=2
    )
    assert not res.failed and len(res.params) == 5
    np.testing.assert_allclose(res.params.to_numpy(), [1.0, 0.5, -1.0, 2.0, -3.0], atol=0.3)
    # without declared levels g is numeric, whatever its dtype: its text cells count as 0 (dpstats/frontend/cells.py)
    kwargs = dict(eps=EPS, delta=DELTA, method="tukey", random_state=2)
    as_text = dpstats.dp_ols("y ~ x1 + g", frame, **kwargs)
    as_zero = dpstats.dp_ols("y ~ x1 + g", frame.assign(g=0.0), **kwargs)
    np.testing.assert_array_equal(as_text.params.to_numpy(), as_zero.params.to_numpy())


def test_given_m_and_reproducibility(frame: pd.DataFrame) -> None:
    kwargs = dict(eps=EPS, delta=DELTA, method="tukey", m=1200)
    a = dpstats.dp_ols("y ~ x1 + x2", frame, random_state=7, **kwargs)
    b = dpstats.dp_ols("y ~ x1 + x2", frame, random_state=7, **kwargs)
    np.testing.assert_array_equal(a.params.to_numpy(), b.params.to_numpy())
    assert a.hyperparameters["m"] == 1200 and a.hyperparameters["m rule"] == "given"
    assert a.hyperparameters["rows per model"] == 20_000 // 1200


def test_large_eps_approaches_ols() -> None:
    """eps = 1e6: the output is in the deepest shell of the m fits (the non-private twin), within 4 OLS SEs of OLS.

    The coordinate-wise median of m batch fits differs from OLS by about 0.76
    OLS standard errors (median minus mean of m fits); 4 SEs: false failure
    about 1e-6 per coefficient. Both go to the truth as n grows.
    """
    n = 40_000
    frame = _frame(n, seed=3)
    res = dpstats.dp_ols("y ~ x1 + x2", frame, eps=1e6, delta=DELTA, method="tukey", random_state=5)
    ols = sm.OLS(frame["y"], sm.add_constant(frame[["x1", "x2"]])).fit()
    est = res.params.to_numpy()
    assert np.all(np.abs(est - ols.params.to_numpy()) <= 4 * ols.bse.to_numpy())
    X = sm.add_constant(frame[["x1", "x2"]]).to_numpy()
    models = partition_models(X, frame["y"].to_numpy(), res.hyperparameters["m"], make_rng(5))
    P = td.sorted_projections(models)
    m = P.shape[1]
    deepest = td.max_depth(m) - (m % 2)  # for odd m the depth-I box is a single point (zero volume)
    assert td.depth(P, est) == deepest
    resid = frame["y"] - X @ est
    assert 1 - resid.var() / frame["y"].var() == pytest.approx(ols.rsquared, abs=1e-4)


def test_refused_test_is_a_failed_result_with_the_budget_spent() -> None:
    frame = _frame(300, seed=4)
    res = dpstats.dp_ols("y ~ x1 + x2", frame, eps=0.5, delta=1e-6, method="tukey", random_state=0)
    assert res.failed and "propose-test-release refused" in res.reason
    assert np.all(np.isnan(res.params.to_numpy()))  # not the public code's zero vector
    assert res.privacy.eps == 0.5 and res.privacy.delta == 1e-6
    assert res.noisy_stats["PTR distance (noisy)"] <= res.noisy_stats["PTR threshold"]
    assert "FAILED" in res.summary().as_text().upper()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"delta": 0.0}, ValueError, "needs delta > 0"),
        ({"m": 11}, ValueError, "at least 12"),
        ({"m": 2.5}, TypeError, "integer"),
        ({"m": True}, TypeError, "integer"),
        ({"m": 5000}, ValueError, r"m=5000 .* choose m <= 666"),
        ({"k": 3}, ValueError, "unknown option"),
    ],
)
def test_schema_errors(kwargs: dict, error: type, match: str) -> None:
    frame = _frame(2000, seed=6)
    call = {"eps": EPS, "delta": DELTA, "method": "tukey", **kwargs}
    with pytest.raises(error, match=match):
        dpstats.dp_ols("y ~ x1 + x2", frame, **call)


def test_too_few_rows_for_twelve_models() -> None:
    with pytest.raises(ValueError, match="too few"):
        dpstats.dp_ols("y ~ x1 + x2", _frame(35, seed=1), eps=EPS, delta=DELTA, method="tukey")


def test_default_m_uses_public_information_only() -> None:
    a = dpstats.dp_ols("y ~ x1 + x2", _frame(5000, seed=1), eps=EPS, delta=DELTA, method="tukey", random_state=0)
    b = dpstats.dp_ols("y ~ x1 + x2", _frame(5000, seed=2, noise=50.0), eps=EPS, delta=DELTA, method="tukey")
    share = tukey_inference.default_share(5000, 3, EPS, DELTA, None)
    assert a.hyperparameters["m"] == b.hyperparameters["m"] == tukey_m.default_m(5000, 3, EPS * (1 - share), DELTA)


def test_default_m_rule() -> None:
    """The ideal cloud passes at m_ideal and not at m_ideal - 1; the default is 1.25 m_ideal, capped at n // d."""
    ideal = tukey_m.ideal_m(22_000, 11, EPS, DELTA)
    need = tukey_m.required_distance(EPS, DELTA)
    assert tukey_m.ideal_distance(ideal, 11, 22_000, EPS, DELTA) >= need
    assert tukey_m.ideal_distance(ideal - 1, 11, 22_000, EPS, DELTA) < need
    assert tukey_m.default_m(22_000, 11, EPS, DELTA) == math.ceil(tukey_m.SAFETY * ideal)
    assert tukey_m.default_m(2_000, 11, EPS, DELTA) == 2_000 // 11  # the ideal cloud cannot pass: the cap
    assert tukey_m.default_m(10**6, 3, 1e6, DELTA) == math.ceil(tukey_m.SAFETY * tukey_m.MIN_MODELS)
    # P(D + Lap(1/eps1) > threshold) = 0.95 exactly at the required distance
    eps1 = EPS / 2
    assert 1 - 0.5 * math.exp(-eps1 * (need - tukey.ptr_threshold(eps1, DELTA))) == pytest.approx(0.95)


def test_t_quantile_expansion() -> None:
    from scipy import special

    p = np.linspace(0.5, 0.9995, 500)
    for nu in (3.0, 8.0, 20.0, 200.0):
        exact = special.stdtrit(nu, p)
        np.testing.assert_allclose(tukey_m.t_quantile(nu, p), exact, rtol=1e-3, atol=1e-12)


@pytest.mark.parametrize("eps", [1e-8, 1e8])
def test_extreme_eps_and_data_raise_no_warning(eps: float) -> None:
    frame = _frame(3000, seed=8)
    frame.loc[0, "x1"] = np.inf
    frame.loc[1, "y"] = -1e300
    frame.loc[2:40, "x2"] = 0.0
    frame = pd.concat([frame, frame.iloc[:50]], ignore_index=True)  # duplicated rows
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = dpstats.dp_ols("y ~ x1 + x2", frame, eps=eps, delta=DELTA, method="tukey", random_state=3)
    assert res.failed or np.all(np.isfinite(res.params.to_numpy()))
    assert res.failed == (eps < 1)


def test_batch_ols_matches_lstsq_and_drops_aliased_columns() -> None:
    """Also: a batch with an infinite value or an overflowing X'X gets the zero model, the others are untouched."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 12, 4)) * np.array([1.0, 1e4, 1e-4, 3.0])
    X[:, :, 0] = 1.0
    y = rng.normal(size=(50, 12)) * 100
    ref = np.array([np.linalg.lstsq(X[k], y[k], rcond=None)[0] for k in range(50)])
    coef, unknown = batch_ols(X, y)
    np.testing.assert_allclose(coef, ref, rtol=1e-9)
    assert not unknown.any()
    X[:, :, 3] = 2 * X[:, :, 1] - X[:, :, 2]  # aliased: dropped, coefficient 0, same fit
    coef, unknown = batch_ols(X, y)
    assert np.all(coef[:, 3] == 0)
    ref = np.array([np.linalg.lstsq(X[k, :, :3], y[k], rcond=None)[0] for k in range(50)])
    np.testing.assert_allclose(coef[:, :3], ref, rtol=1e-6)
    # column 3 is 2 x column 1 up to 1e-8 relative (column 2 is 1e8 times smaller): 1 and 3 are not estimable
    assert unknown[:, [1, 3]].all() and not unknown[:, 0].any()
    X3 = X.copy()
    X3[:, :, 3] = 3.0 * X[:, :, 0] - 1e-4 * X[:, :, 1]  # columns 0, 1, 3 aliased, on comparable scales
    assert np.array_equal(batch_ols(X3, y)[1], np.tile([True, True, False, True], (50, 1)))
    X3[:, :, 3] = 0.0  # an all-zero column (a level absent from the batch): only its own coefficient is unknown
    assert np.array_equal(batch_ols(X3, y)[1], np.tile([False, False, False, True], (50, 1)))
    X[0, 0, 1], X[1, 3, 2] = np.inf, 1e200
    broken, unknown = batch_ols(X, y)
    assert np.all(broken[:2] == 0) and np.array_equal(broken[2:], coef[2:]) and not unknown[:2].any()


def test_an_aliased_coefficient_goes_to_a_random_extreme_not_to_zero() -> None:
    """A dummy absent from a batch: +-MODEL_LIMIT with a sign drawn before the data, about half each way.

    With zeros the released dummy coefficient was biased by 1-2.5 standard
    errors on the categorical coverage design (dpstats/mechanisms/tukey/models.py).
    The sign count is Binomial(k, 1/2): the band below fails with probability 1e-6.
    """
    rng = np.random.default_rng(1)
    n, m = 2000, 400
    rare = rng.uniform(size=n) < 0.1  # absent from about 0.9^5 = 59% of the batches of 5 rows
    X = np.column_stack([np.ones(n), rng.normal(size=n), rare.astype(float)])
    y = X @ np.array([1.0, 2.0, -1.0]) + rng.normal(size=n)
    models = partition_models(X, y, m, np.random.default_rng(2))
    extreme = np.abs(models[:, 2]) > 1e149
    k = int(extreme.sum())
    assert 0.4 * m < k < 0.8 * m and np.all(np.abs(models[~extreme, 2]) < 1e3)
    up = int((models[extreme, 2] > 0).sum())
    assert abs(up - k / 2) < 2.5 * math.sqrt(k)
    signs = tukey_models.unknown_signs(np.random.default_rng(0), 3, 2)
    assert set(np.unique(signs)) <= {-1.0, 1.0}


def test_depth_geometry() -> None:
    rng = np.random.default_rng(1)
    for m, d in [(12, 1), (13, 2), (40, 3), (41, 3)]:
        P = td.sorted_projections(rng.normal(size=(m, d)))
        lengths = td.log_side_lengths(P)
        log_v = td.log_volumes(lengths)
        t = td.restricted_depth(m)
        depths, pieces = td.shell_log_volumes(P, lengths, t)
        shells = np.exp(log_v[depths]) - np.exp(log_v[depths + 1])
        np.testing.assert_allclose(np.exp(np.logaddexp.reduce(pieces, axis=1)), shells, rtol=1e-9, atol=1e-300)
        points = exact_draw.sample_restricted(rng, P, t, 0.7, size=2000)
        depth = td.depth(P, points)
        assert depth.min() >= t and np.all(np.floor(td.continuous_depth(P, points)) == depth)
        assert td.depth(P, np.full(d, 1e9)) == 0


def test_point_release_records_the_utility_of_the_released_point() -> None:
    def sampler(rng: np.random.Generator) -> np.ndarray:
        return np.array([1.0, 2.0])

    assert exponential_mechanism_point_release(np.random.default_rng(0), sampler, np.sum, 1.0, 0.5, "em")[0] == 1.0
    with recording(forced_outputs=[np.array([5.0, 5.0])]) as log:
        out = exponential_mechanism_point_release(np.random.default_rng(0), sampler, np.sum, 1.0, 0.5, "em")
    np.testing.assert_array_equal(out, [5.0, 5.0])
    assert log[0].value[0] == 10.0 and log[0].norm == "linf" and log[0].eps == 0.5
    np.testing.assert_array_equal(log[0].noisy, [1.0, 2.0])


def test_release_from_models_is_the_core_step() -> None:
    models = np.random.default_rng(0).normal(size=(600, 2))
    point, stats, info = tukey.release_from_models(models, PrivacyRequest(EPS, DELTA), np.random.default_rng(0))
    assert point is not None and point.shape == (2,) and info["t"] == 150
    assert stats["PTR distance (noisy)"] > stats["PTR threshold"]
    assert td.depth(td.sorted_projections(models), point) >= 150


def test_jackknife_removes_the_small_batch_bias_of_a_misspecified_model() -> None:
    """y = exp(x) fitted by a line on 4,000 batches of 12 rows (x skewed on [0, 3]): the mean of the batch OLS
    slopes misses the full-sample slope by many standard errors of that mean (a ratio estimator's 1/b bias);
    jackknifed, by a small part of it. Seeded; measured on three seeds: 23 standard errors plain, 2.7-4.2
    jackknifed, for a spread 1.3 times wider."""
    rng = np.random.default_rng(8)
    k, b = 4000, 12
    x = 3.0 * rng.beta(1.0, 4.0, (k, b))
    X = np.stack([np.ones((k, b)), x], axis=2)
    y = np.exp(x) + rng.normal(0, 0.5, (k, b))
    full = np.linalg.lstsq(X.reshape(-1, 2), y.ravel(), rcond=None)[0]
    plain = batch_ols(X, y)[0][:, 1]
    jackknifed, unknown = batch_ols_jackknife(X, y)
    assert not unknown.any()
    plain_bias = abs(plain.mean() - full[1]) / (plain.std() / np.sqrt(k))
    assert plain_bias > 10
    assert abs(jackknifed[:, 1].mean() - full[1]) / (jackknifed[:, 1].std() / np.sqrt(k)) < plain_bias / 4


def test_jackknife_option_is_a_boolean(engel) -> None:
    with pytest.raises(TypeError, match="jackknife"):
        dpstats.dp_ols("foodexp ~ income", engel, eps=1.0, delta=1e-6, method="tukey", jackknife="yes")

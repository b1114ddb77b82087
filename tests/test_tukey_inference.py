"""Standard errors and intervals of method="tukey" (dpstats/mechanisms/tukey/inference.py).

* The modelled law: on clouds of m t_nu fits the mechanism's restricted
  sampler, rerun on 400 independent clouds, has the standard deviation that
  :func:`unit_variances` computes (sampling + privacy). The Monte Carlo sd of
  an sd from 400 draws is 3.5%; the tolerance 15% is 4.2 of them (false
  failure about 3e-5 per coordinate, the model's own error being under 5%).
* The spread release is the exponential mechanism of the rank utility: at a
  huge eps it returns the log median absolute deviation (to within one gap).
* Budget: the split adds up to eps, the default share is spent only where
  the point can afford it (public facts), se_share=0 is the paper's
  algorithm, a refused test is a failed result.
* The skew allowance: its factor makes the 95% interval cover a bias up to
  the allowance exactly (normal law), it is post-processing (the point and
  the spreads do not change with ``skew``), and ``skew`` is checked before
  the data are read. The tests of the t law below set skew=0 (their designs
  are symmetric: the allowance would only widen them).
* eps -> infinity: the standard errors approach the sampling sd of a
  coordinate-wise median of t_nu fits, ``1 / (2 f_nu(0) sd(t_nu))`` times
  statsmodels' OLS standard errors (1.24 here, 1.25 for large batches: the
  median's efficiency). Measured over 8 data sets at m = 2000: ratio 1.03
  (intercept) and 1.04 (slope), sd 0.017 and 0.034 per data set (the
  released MAD's sampling error). The mean over 4 data sets must lie within
  0.1 of 1: 3.7 of its sd, false failure about 2e-4.
* Coverage, seeded small versions of benchmarks/bench_coverage.py: 100
  repetitions, coverage in the binomial band at z = 4 around 0.95 (0.863-1;
  false failure about 6e-5 per coefficient), median width at most 1.5 x the
  Monte Carlo spread (measured 0.95-1.05 at these seeds; the spread's own
  relative error at 100 reps is 7%).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats

import dpstats
from dpstats.mechanisms import PrivacyRequest
from dpstats.mechanisms.tukey import default_m, exact_draw, inference
from dpstats.mechanisms.tukey import depth as td
from dpstats.mechanisms.tukey import mechanism as tukey
from dpstats.privacy.noise import make_rng, recording
from dpstats.uncertainty.coverage import DESIGNS, coverage_band, coverage_cell

DELTA = 1e-6


@pytest.mark.slow
@pytest.mark.parametrize(("m", "d", "nu", "eps"), [(500, 2, 1.0, 1.0), (800, 2, 11.0, 0.75), (150, 4, 3.0, 3.75)])
def test_modelled_sd_is_the_mechanism_on_t_clouds(m: int, d: int, nu: float, eps: float) -> None:
    t, beta = td.restricted_depth(m), eps / 4
    sampling, privacy, _ = inference.unit_variances(m, d, nu, t, beta, 0.1)
    rng = np.random.default_rng(0)
    draws = np.array(
        [
            exact_draw.sample_restricted(rng, td.sorted_projections(rng.standard_t(nu, (m, d))), t, beta)
            for _ in range(400)
        ]
    )
    np.testing.assert_allclose(draws.std(axis=0), math.sqrt(sampling + privacy), rtol=0.15)


def test_spread_release_is_the_log_mad_at_a_huge_eps() -> None:
    rng = np.random.default_rng(1)
    models = rng.normal(0.0, [1.0, 1e-3], size=(401, 2))
    point = np.array([0.1, 2e-4])
    with recording() as log:
        released = inference.release_spreads(np.random.default_rng(2), models, point, 1e6)
    logs = np.sort(np.log(np.abs(models - point)), axis=0)
    assert np.all((logs[199] <= released) & (released <= logs[201]))
    assert [r.name for r in log] == [inference.spread_name(0), inference.spread_name(1)]
    assert all(r.norm == "linf" and r.sensitivity == 1.0 and r.eps == 1e6 for r in log)


def test_the_window_keeps_the_release_finite_for_zero_deviations() -> None:
    models = np.zeros((100, 1))
    released = inference.release_spreads(np.random.default_rng(0), models, np.zeros(1), 1.0)
    low, high = inference.window(np.zeros(1))
    assert np.all(np.isfinite(released)) and low[0] <= released[0] <= high[0]


# --------------------------------------------------------------------------
# Budget, notes and failures
# --------------------------------------------------------------------------

SYMMETRIC = DESIGNS["symmetric"]


def _fit(n: int, eps: float, seed: int = 0, **kwargs):
    frame = SYMMETRIC.draw(np.random.default_rng(seed), n)
    return dpstats.dp_ols("y ~ x", frame, eps=eps, delta=DELTA, method="tukey", random_state=seed, **kwargs)


def test_split_adds_up_and_lists_the_spreads() -> None:
    res = _fit(10_000, 1.0)
    parts = dict(res.privacy.split)
    assert sum(parts.values()) == pytest.approx(1.0, rel=1e-12) and res.privacy.delta == DELTA
    share = inference.DEFAULT_SHARES[0]
    assert parts[tukey.DISTANCE] == parts[tukey.SAMPLE] == pytest.approx((1 - share) / 2)
    assert parts[inference.spread_name(0)] == parts[inference.spread_name(1)] == pytest.approx(share / 2)
    assert np.all(np.isfinite(res.bse)) and res.replicates.shape == (inference.REPLICATES, 2)
    assert "bootstrap" not in res.se_note and "spread" in res.se_note
    ci = res.conf_int().to_numpy()
    assert np.all(ci[:, 0] < res.params.to_numpy()) and np.all(res.params.to_numpy() < ci[:, 1])


def test_default_share_is_spent_only_where_the_point_can_afford_it() -> None:
    assert inference.default_share(1000, 2, 1.0, DELTA, None) == 0.0  # the point's test has no slack at n = 1000
    assert inference.default_share(10_000, 2, 1.0, DELTA, None) == inference.DEFAULT_SHARES[0]
    # 10 coefficients: a quarter of eps leaves each spread eps_j m of about 34 at every n; a larger share affords 50
    share = inference.default_share(20_000, 10, 1.0, DELTA, None)
    assert inference.DEFAULT_SHARES[0] < share <= inference.DEFAULT_SHARES[-1]
    m = default_m.default_m(20_000, 10, 1.0 - share, DELTA)
    assert inference.share_per_coordinate(1.0, share, 10) * m >= inference.MIN_SPREAD_BUDGET
    res = _fit(1000, 1.0)
    assert np.all(np.isnan(res.bse)) and "needs the whole budget" in res.se_note
    assert [name for name, _ in res.privacy.split] == [tukey.DISTANCE, tukey.SAMPLE]
    forced = _fit(1000, 1.0, se_share=0.25)  # the user's choice: the test now refuses (it is the mechanism's failure)
    assert forced.failed and "propose-test-release refused" in forced.reason


@pytest.mark.parametrize("jackknife", [False, True])
def test_se_share_zero_is_the_paper_algorithm_draw_for_draw(jackknife: bool) -> None:
    """``jackknife=False``: the paper's batch OLS; the default jackknifes each batch and changes nothing else."""
    frame = SYMMETRIC.draw(np.random.default_rng(3), 5000)
    res = dpstats.dp_ols(
        "y ~ x", frame, eps=2.0, delta=DELTA, method="tukey", random_state=4, se_share=0, jackknife=jackknife
    )
    X = sm.add_constant(frame["x"]).to_numpy()
    rng = make_rng(4)
    models = tukey.partition_models(
        X, frame["y"].to_numpy(), res.hyperparameters["m"], rng, tukey.batch_fit(None, jackknife)
    )
    point, _, _ = tukey.release_from_models(models, PrivacyRequest(2.0, DELTA), rng)
    np.testing.assert_array_equal(res.params.to_numpy(), point)
    assert np.all(np.isnan(res.bse)) and "se_share=0" in res.se_note


def test_a_refused_test_is_a_failed_result_without_standard_errors() -> None:
    frame = SYMMETRIC.draw(np.random.default_rng(5), 300)
    res = dpstats.dp_ols("y ~ x", frame, eps=0.5, delta=DELTA, method="tukey", random_state=0, se_share=0.2)
    assert res.failed and np.all(np.isnan(res.params)) and np.all(np.isnan(res.bse))
    assert sum(part for _, part in res.privacy.split) == pytest.approx(0.5)


# --------------------------------------------------------------------------
# eps -> infinity
# --------------------------------------------------------------------------


def test_huge_budget_standard_errors_are_the_medians_sampling_error() -> None:
    ratios = []
    n, m = 200_000, 2000
    nu = inference.degrees_of_freedom(n, m, 2)
    efficiency = 1.0 / (2.0 * inference.t_density(nu, 0.0) * math.sqrt(nu / (nu - 2.0)))
    for seed in range(4):
        rng = np.random.default_rng(seed)
        x = rng.normal(size=n)
        frame = pd.DataFrame({"x": x, "y": 1.0 + 0.5 * x + rng.normal(size=n)})
        res = dpstats.dp_ols("y ~ x", frame, eps=1e6, delta=DELTA, method="tukey", random_state=7, m=m, skew=0.0)
        ols = sm.OLS(frame["y"], sm.add_constant(frame["x"])).fit()
        ratios.append(res.bse.to_numpy() / (efficiency * ols.bse.to_numpy()))
    np.testing.assert_allclose(np.mean(ratios, axis=0), 1.0, atol=0.1)


# --------------------------------------------------------------------------
# Coverage (seeded small versions of the benchmark)
# --------------------------------------------------------------------------

REPS = 100
CELLS = [("symmetric", 10_000, 1.0), ("heteroskedastic", 1000, 5.0), ("categorical", 10_000, 5.0)]


@pytest.mark.slow
@pytest.mark.parametrize(("design", "n", "eps"), CELLS)
def test_coverage_and_width(design: str, n: int, eps: float) -> None:
    spec = DESIGNS[design]

    def fit(data: pd.DataFrame, sim, seed: int):
        return dpstats.dp_ols(
            sim.formula,
            data,
            eps=eps,
            delta=DELTA,
            method="tukey",
            random_state=seed,
            levels=sim.levels or None,
            skew=0.0,
        )

    cell = coverage_cell(spec, n, REPS, fit, seed=23)
    low, high = coverage_band(REPS)
    assert cell.failures == 0
    assert np.all((low <= cell.coverage) & (cell.coverage <= high)), cell.frame()
    assert np.all(cell.width_ratio <= 1.5), cell.frame()


# --------------------------------------------------------------------------
# The skew allowance
# --------------------------------------------------------------------------


@pytest.mark.parametrize("ratio", [0.0, 0.3, 1.0, 2.5, 10.0])
def test_bias_aware_factor_covers_a_bias_up_to_the_allowance(ratio: float) -> None:
    c = inference.bias_aware_factor(np.array(ratio)) * inference.LEVEL_Z
    assert stats.norm.cdf(c - ratio) - stats.norm.cdf(-c - ratio) == pytest.approx(0.95, abs=1e-9)
    assert inference.LEVEL_Z - 1e-12 <= c <= ratio + inference.LEVEL_Z


def test_skew_allowance_is_post_processing(engel) -> None:
    def fit(skew: float):
        return dpstats.dp_ols(
            "foodexp ~ income", engel, eps=50.0, delta=DELTA, method="tukey", m=15, random_state=1, skew=skew
        )

    plain, allowed = fit(0.0), fit(inference.SKEW)
    np.testing.assert_array_equal(plain.params.to_numpy(), allowed.params.to_numpy())
    spreads = "log spread of the models (noisy)"
    np.testing.assert_array_equal(plain.noisy_stats[spreads], allowed.noisy_stats[spreads])
    assert plain.privacy == allowed.privacy
    assert np.all(allowed.bse > plain.bse) and np.all(plain.noisy_stats["skew allowance"] == 0)


def test_skew_allowance_widens_the_law_by_the_bias_aware_factor() -> None:
    log_spreads, m, nu, t = np.log([0.5, 2.0]), 400, 24.0, td.restricted_depth(400)

    def law(skew: float) -> inference.SpreadLaw:
        return inference.spread_law(log_spreads, m, nu, t, 0.5, 0.2, inference.SkewAllowance(skew, 25))

    plain, allowed = law(0.0), law(inference.SKEW)
    scale = np.exp(log_spreads) / inference.t_quantiles(nu, np.array(0.75))
    np.testing.assert_allclose(allowed.allowance, inference.SKEW * scale / 30.0, rtol=1e-12)
    factor = inference.bias_aware_factor(allowed.allowance / plain.se)
    np.testing.assert_allclose(allowed.se, plain.se * factor, rtol=1e-12)
    assert plain.df == allowed.df and np.all(factor > 1)


@pytest.mark.parametrize(("skew", "error"), [("3", TypeError), (True, TypeError), (-1.0, ValueError),
                                              (float("nan"), ValueError), (float("inf"), ValueError)])  # fmt: skip
def test_skew_is_checked_before_the_data_are_read(engel, skew: object, error: type) -> None:
    with pytest.raises(error, match="skew"), recording() as draws:
        dpstats.dp_ols("foodexp ~ income", engel, eps=1.0, delta=DELTA, method="tukey", skew=skew)
    assert not draws

"""The joint F test of a release (``DPRegressionResults.f_test``, dpstats/uncertainty/intervals.py ``wald_test``).

What is tested: at eps = 1e9 the statistic is statsmodels' HC1 Wald statistic
(up to the bootstrap's Monte Carlo error in the covariance); under a true null
the test rejects at about its level, and under an alternative it has power;
bad hypotheses are refused; the summary reports the joint test.

False-failure rates: the limit test's 25% tolerance on W is about 3 sd of its
Monte Carlo error (two SEs at 4% each), about 1e-3; the size test's band is 4
binomial sd around 0.05 over 200 data sets (6e-5); the power test asks for a
rejection rate of 0.8 over 50 data sets where 0.99 was measured (1.0 on these
50): at 0.99 a miss needs 11 non-rejections, probability below 1e-11.
"""

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import dpstats

FAIR_BOUNDS = {"affairs": (0, 60), "age": (17.5, 42), "yrs_married": (0.5, 23), "educ": (9, 20)}
RELIGIOUS = {"religious": [1.0, 2.0, 3.0, 4.0]}
FAIR = "affairs ~ age + yrs_married + educ + C(religious)"


def test_statistic_approaches_statsmodels_hc1_wald_at_large_eps(fair) -> None:
    res = dpstats.dp_ols(FAIR, fair, eps=1e9, bounds=FAIR_BOUNDS, levels=RELIGIOUS, method="noisystats", random_state=3)
    block = [t for t in res.term_names if t.startswith("C(religious)")]
    test = res.f_test(block)
    reference = smf.ols(FAIR, fair).fit(cov_type="HC1")
    R = np.eye(len(res.term_names))[[res.term_names.index(t) for t in block]]
    wald = reference.wald_test(R, use_f=False, scalar=True)
    assert test.df == 3 and test.reference == "bootstrap"
    assert test.statistic * test.df == pytest.approx(float(wald.statistic), rel=0.25)
    assert test.pvalue == pytest.approx(1 / 1001)  # no replicate reaches a statistic of about 70


def _null_data(rng: np.random.Generator, n: int, effect: float) -> pd.DataFrame:
    x1, x2 = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    y = 0.5 * x1 + effect * x2 + np.clip(rng.normal(0, 0.5, n), -1.5, 1.5) - effect / 2
    return pd.DataFrame({"x1": x1, "x2": x2, "y": y})


BOUNDS = {"x1": (0, 1), "x2": (0, 1), "y": (-2, 3)}


@pytest.mark.slow
def test_size_under_the_null_and_power_under_an_alternative() -> None:
    """Seeded data sets of n = 2000 at eps = 2: x2 has no effect (size, 200) or 1 (power, 50)."""
    rng = np.random.default_rng(12)
    sd = np.sqrt(0.05 * 0.95 / 200)
    for effect, check, reps in ((0.0, "size", 200), (1.0, "power", 50)):
        rejections = []
        for seed in range(reps):
            res = dpstats.dp_ols(
                "y ~ x1 + x2", _null_data(rng, 2000, effect), eps=2.0, bounds=BOUNDS, random_state=seed
            )
            rejections.append(not res.failed and res.f_test(["x2"]).pvalue < 0.05)
        rate = np.mean(rejections)
        if check == "size":
            assert abs(rate - 0.05) <= 4 * sd, rate
        else:
            assert rate >= 0.8, rate


def test_bad_hypotheses_are_refused_and_the_summary_reports_the_joint_test(engel) -> None:
    res = dpstats.dp_ols("foodexp ~ income", engel, eps=5, bounds={"income": (0, 5000), "foodexp": (0, 2500)})
    with pytest.raises(ValueError, match="unknown term"):
        res.f_test(["wealth"])
    with pytest.raises(ValueError, match="full row rank"):
        res.f_test(np.ones((2, 2)))
    with pytest.raises(ValueError, match="columns"):
        res.f_test(np.ones((1, 3)))
    explicit = res.f_test((np.array([[0.0, 1.0]]), np.array([0.5])))
    assert explicit.hypothesis == "R theta = q" and 0 <= explicit.pvalue <= 1
    assert "Joint F (slopes = 0)" in res.summary().as_text()
    none = dpstats.dp_ols(
        "foodexp ~ income", engel, eps=5, bounds={"income": (0, 5000), "foodexp": (0, 2500)}, se_share=0,
        method="noisystats",
    )  # fmt: skip
    assert np.isnan(none.f_test(["income"]).pvalue) and "Joint F" not in none.summary().as_text()

"""dp_logit and dp_probit as a user meets them: the response's row-wise treatment, auto's rule, results,
marginal effects, predictions, paper tables, the budget, and the arguments refused before any data are read."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import special

import dpstats
from dpstats.privacy.budget import PrivacyBudget

BOUNDS = {"x": (0, 1), "z": (-2, 2)}


def _frame(seed: int = 0, n: int = 40_000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x, z = rng.uniform(0, 1, n), rng.normal(0, 1, n).clip(-2, 2)
    y = rng.uniform(size=n) < special.expit(-1.0 + 1.5 * x - 0.7 * z)
    return pd.DataFrame({"y": y, "x": x, "z": z, "score": np.where(y, 70.0, 30.0)})


def test_a_bool_a_comparison_and_a_number_are_the_same_response():
    data = _frame()
    fits = [
        dpstats.dp_logit(f, data, eps=1e9, bounds={**BOUNDS, "score": (0, 100)}, method="newton", random_state=1)
        for f in ("y ~ x + z", "I(score > 50) ~ x + z", "I(1.0 * y) ~ x + z")
    ]
    for res in fits[1:]:
        np.testing.assert_allclose(res.params.to_numpy(), fits[0].params.to_numpy(), rtol=1e-9)


def test_values_outside_the_unit_interval_and_missing_ones_are_treated_row_wise():
    data = _frame(1, 5000).astype({"y": float})
    data.loc[:9, "y"] = [2.0, -1.0, np.nan, np.inf, 7.0, -3.0, np.nan, 0.5, 1.0, 0.0]
    res = dpstats.dp_logit("y ~ x + z", data, eps=1.0, bounds=BOUNDS, random_state=0)
    assert np.all(np.isfinite(res.params))


def test_auto_takes_newton_on_many_rows_and_the_histogram_on_few():
    many = dpstats.dp_logit("y ~ x + z", _frame(), eps=1.0, bounds=BOUNDS, random_state=0)
    few = dpstats.dp_logit("y ~ x + z", _frame(2, 3000), eps=1.0, bounds=BOUNDS, random_state=0)
    assert (many.method, few.method) == ("newton", "histogram")
    assert "binary rule" in many.method_reason and many.privacy.proven and few.privacy.proven
    assert many.privacy.eps <= 1.0 and few.privacy.eps <= 1.0
    assert dict(many.privacy.split)["marginal effects"] == pytest.approx(0.05)


def test_results_read_like_statsmodels_logit():
    data = _frame(3)
    res = dpstats.dp_probit("y ~ x + z", data, eps=1e9, bounds=BOUNDS, method="newton", random_state=0)
    ref = sm.Probit.from_formula("y ~ x + z", data.astype({"y": float})).fit(disp=0)
    assert "DP Probit Regression Results" in str(res.summary())
    np.testing.assert_allclose(res.predict(data.head(20)), ref.predict(data.head(20)), rtol=1e-3)
    np.testing.assert_allclose(res.predict(data.head(5), which="linear"), ref.predict(data.head(5), which="linear"),
                               rtol=1e-3)  # fmt: skip
    frame = res.get_margeff().summary_frame()
    expected = ref.get_margeff().summary_frame()
    assert list(frame.columns) == list(expected.columns) and list(frame.index) == list(expected.index)
    np.testing.assert_allclose(frame.to_numpy(), expected.to_numpy(), rtol=0.01, atol=1e-4)
    assert res.to_dict()["margins"]["terms"] == ["x", "z"]
    assert res.tidy()["term"].tolist() == res.term_names and res.glance()["method"].item() == "newton"


def test_auto_refuses_before_spending_where_binary_fits_miss_by_half_and_says_what_would_do():
    budget = PrivacyBudget(eps=1.0)
    with pytest.raises(dpstats.RefusedBeforeSpending, match="below 300") as refused:
        dpstats.dp_logit("y ~ x + z", _frame(6, 1000), eps=1.0, bounds=BOUNDS, budget=budget)
    assert "eps >= 2.7 at n = 1000" in str(refused.value.plan)
    assert budget.spent["eps"] == 0.0
    forced = dpstats.dp_logit("y ~ x + z", _frame(6, 1000), eps=1.0, bounds=BOUNDS, force=True, random_state=0)
    assert forced.method == "histogram"


def test_no_margins_share_spends_nothing_on_them_and_says_so():
    res = dpstats.dp_logit("y ~ x + z", _frame(4, 3000), eps=1.0, bounds=BOUNDS, margins_share=0, random_state=0)
    assert "marginal effects" not in dict(res.privacy.split)
    with pytest.raises(ValueError, match="margins_share=0"):
        res.get_margeff()


def test_a_paper_table_mixes_ols_and_logit_columns_and_the_budget_records_both():
    data = _frame(5, 5000).astype({"y": float})
    budget = PrivacyBudget(eps=3.0)
    ols = dpstats.dp_ols("y ~ x + z", data, eps=1.0, bounds={**BOUNDS, "y": (0, 1)}, budget=budget, random_state=0)
    logit = dpstats.dp_logit("y ~ x + z", data, eps=1.0, bounds=BOUNDS, budget=budget, random_state=0)
    text = dpstats.table([ols, logit]).as_text()
    assert "OLS" in text and "Logit" in text
    assert budget.spent["eps"] == pytest.approx(2.0)
    assert list(budget.ledger["estimator"]) == ["ols", "logit"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"by": "g"}, "by= is not available"),
        ({"rho": 0.5}, "rho= is not available"),
        ({"method": "noisystats"}, "does not fit logit"),
        ({"method": "newton", "delta": 1e-6}, "pure DP"),
        ({"margins_share": 1.5}, "margins_share"),
        ({"unit": "id", "max_rows": 4}, "needs an explicit method"),
    ],
)
def test_public_arguments_are_refused_before_any_data_are_read(kwargs, message):
    with pytest.raises(ValueError, match=message):
        dpstats.dp_logit("y ~ x", {"y": [object()] * 3, "x": [object()] * 3}, eps=1.0, bounds=BOUNDS, **kwargs)


def test_least_squares_still_refuses_a_comparison_response():
    """patsy codes ``I(y > 0)`` as two columns; only a binary model reads its True column."""
    data = pd.DataFrame({"y": np.arange(50.0) - 20, "x": np.linspace(0, 1, 50)})
    with pytest.raises(ValueError, match="single numeric column"):
        dpstats.dp_ols("I(y > 0) ~ x", data, eps=1.0, bounds={"x": (0, 1), "y": (-20, 30)})


def test_a_unit_of_several_rows_runs_newton_at_its_group_privacy_and_reports_the_unit():
    data = _frame(7, 20_000).assign(id=np.repeat(np.arange(5000), 4))
    res = dpstats.dp_logit("y ~ x + z", data, eps=2.0, bounds=BOUNDS, unit="id", max_rows=4, method="newton",
                           random_state=0)  # fmt: skip
    assert res.privacy.unit == "id" and sum(part for _, part in res.privacy.split) == pytest.approx(2.0)
    assert np.all(np.isnan(res.bse)) and np.all(np.isfinite(res.params))

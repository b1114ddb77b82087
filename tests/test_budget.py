"""dpstats.PrivacyBudget through the fits: spending, refusal before the data are read, the ledger, the file.

Every fit here is seeded and deterministic (no statistical assertion, so no
false failures). Least squares below eps = 1 names its method: there auto's plan refuses
engel before spending (tests/test_refusal.py). The data are statsmodels' engel (235 Belgian households, 1857).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from statsmodels.datasets import engel

import dpstats
from dpstats.privacy.budget import BudgetExceeded, PrivacyBudget, requested_spend

FORMULA = "foodexp ~ income"
BOUNDS = {"income": (0, 5000), "foodexp": (0, 2400)}  # not a calibrated real design: auto reads the synthetic family


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return engel.load_pandas().data


def recording(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """A DataFrame subclass that records every attribute, item, length and iteration access to it."""
    touched: list[str] = []

    class Recording(pd.DataFrame):
        @property
        def _constructor(self):  # frames derived from it are plain DataFrames
            return pd.DataFrame

        def __getattribute__(self, name: str):
            touched.append(name)
            return super().__getattribute__(name)

        def __getitem__(self, key):
            touched.append("__getitem__")
            return super().__getitem__(key)

        def __len__(self) -> int:
            touched.append("__len__")
            return super().__len__()

        def __iter__(self):
            touched.append("__iter__")
            return super().__iter__()

        def __contains__(self, key) -> bool:
            touched.append("__contains__")
            return super().__contains__(key)

    spy = Recording(frame.copy())
    touched.clear()
    return spy, touched


# --------------------------------------------------------------------------
# Spending
# --------------------------------------------------------------------------


def test_fits_spend_what_their_results_report(data: pd.DataFrame) -> None:
    budget = PrivacyBudget(eps=2)
    a = dpstats.dp_ols(FORMULA, data, eps=0.5, bounds=BOUNDS, method="noisystats", budget=budget, random_state=1)
    b = dpstats.dp_quantreg(FORMULA, data, q=[0.25, 0.5, 0.75], eps=1, bounds=BOUNDS, budget=budget, random_state=2)
    assert budget.spent == {"eps": 1.5, "delta": 0.0}
    assert budget.remaining == {"eps": 0.5, "delta": 0.0}
    ledger = budget.ledger
    assert list(ledger["eps"]) == [a.privacy.eps, b.privacy.eps] == [0.5, 1.0]  # several quantiles: charged once
    assert list(ledger["method"]) == [a.method, b.fits[0].method]
    assert list(ledger["estimator"]) == ["ols", "quantreg"]
    assert ledger["q"].tolist() == [None, "0.25, 0.5, 0.75"]


def test_the_whole_budget_can_be_spent_and_then_nothing_more(data: pd.DataFrame) -> None:
    budget = PrivacyBudget(eps=0.3)
    for _ in range(3):  # 0.1 + 0.1 + 0.1 exceeds 0.3 in binary by one ulp: the float slack lets it through
        # force: at eps = 0.1 auto's plan predicts 18 standard errors and would refuse before spending
        dpstats.dp_ols(FORMULA, data, eps=0.1, bounds=BOUNDS, budget=budget, random_state=3, force=True)
    with pytest.raises(BudgetExceeded, match=r"eps would reach 0\.4 > 0\.3"):
        dpstats.dp_ols(FORMULA, data, eps=0.1, bounds=BOUNDS, budget=budget, force=True)
    assert len(budget.entries) == 3


def test_the_eps_of_a_fit_does_not_default_to_the_remaining_budget(data: pd.DataFrame) -> None:
    budget = PrivacyBudget(eps=1)
    with pytest.raises(ValueError, match="pass exactly one of eps"):
        dpstats.dp_ols(FORMULA, data, bounds=BOUNDS, budget=budget)
    with pytest.raises(TypeError):
        dpstats.dp_quantreg(FORMULA, data, bounds=BOUNDS, budget=budget)  # eps is a required keyword
    assert budget.entries == ()


def test_budget_must_be_a_privacy_budget(data: pd.DataFrame) -> None:
    with pytest.raises(TypeError, match=r"budget must be None or a dpstats\.PrivacyBudget"):
        dpstats.dp_ols(FORMULA, data, eps=1, bounds=BOUNDS, budget=2.0)


# --------------------------------------------------------------------------
# Refusal before the data are read
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda d, b: dpstats.dp_ols(FORMULA, d, eps=1.5, bounds=BOUNDS, budget=b),
        lambda d, b: dpstats.dp_quantreg(FORMULA, d, q=[0.25, 0.75], eps=1.5, bounds=BOUNDS, budget=b),
        lambda d, b: dpstats.noisy_histogram(d, ["income", "foodexp"], eps=1.5, bounds=BOUNDS, budget=b),
        lambda d, b: dpstats.dp_ols(FORMULA, d, eps=0.5, delta=1e-6, method="tukey", budget=b),
    ],
    ids=["dp_ols", "dp_quantreg", "noisy_histogram", "delta in a pure budget"],
)
def test_an_overspending_fit_is_refused_before_touching_the_data(data: pd.DataFrame, call) -> None:
    budget = PrivacyBudget(eps=1)
    before = budget.to_dict()
    spy, touched = recording(data)
    with pytest.raises(BudgetExceeded, match="refused before any data were read, the budget unchanged"):
        call(spy, budget)
    assert touched == []
    assert budget.to_dict() == before


def test_the_recording_frame_does_record_a_fit_that_goes_ahead(data: pd.DataFrame) -> None:
    """The control of the test above: with budget left, the same call reads the frame."""
    budget = PrivacyBudget(eps=2)
    spy, touched = recording(data)
    dpstats.dp_ols(FORMULA, spy, eps=1.5, bounds=BOUNDS, budget=budget, random_state=4)
    assert "columns" in touched and len(budget.entries) == 1


def test_a_fit_that_raises_for_another_reason_spends_nothing(data: pd.DataFrame) -> None:
    budget = PrivacyBudget(eps=1)
    with pytest.raises(ValueError, match="bounds"):
        dpstats.dp_ols(FORMULA, data, eps=0.5, bounds={"income": (0, 5000)}, budget=budget)  # foodexp undeclared
    with pytest.raises(ValueError):
        dpstats.dp_ols("foodexp ~ I(income - income.mean())", data, eps=0.5, bounds=BOUNDS, budget=budget)
    with pytest.raises(ValueError, match="unknown option"):
        dpstats.dp_ols(FORMULA, data, eps=0.5, bounds=BOUNDS, method="noisystats", T=3, budget=budget)
    assert budget.entries == () and budget.remaining["eps"] == 1


def test_a_failed_release_has_spent_its_budget(data: pd.DataFrame) -> None:
    budget = PrivacyBudget(eps=1, delta=1e-5)
    res = dpstats.dp_ols(FORMULA, data, eps=0.5, delta=1e-6, method="tukey", budget=budget, random_state=0)
    assert res.failed  # PTR refuses on engel at this eps (seeded)
    row = budget.ledger.iloc[0]
    assert bool(row["failed"]) and row["eps"] == 0.5 and row["delta"] == 1e-6
    assert budget.remaining["eps"] == 0.5


# --------------------------------------------------------------------------
# What is charged before equals or bounds what is reported after
# --------------------------------------------------------------------------

PLANS = [
    ("ols", {"method": "noisystats", "eps": 0.5}),
    ("ols", {"method": "theilsen", "eps": 0.5}),
    ("ols", {"method": "gradient", "eps": 0.5}),
    ("ols", {"method": "gradient", "variant": "approx", "eps": 0.5, "delta": 1e-6}),
    ("ols", {"method": "gradient", "variant": "zcdp", "rho": 0.1}),
    ("ols", {"method": "gradient", "variant": "zcdp", "rho": 0.1, "delta": 1e-8}),
    ("ols", {"method": "gradient", "variant": "zcdp", "eps": 0.5, "delta": 1e-6}),
    ("ols", {"method": "histogram", "eps": 0.5}),
    ("ols", {"method": "kng", "eps": 0.5}),
    ("ols", {"method": "tukey", "eps": 0.5, "delta": 1e-6}),
    ("ols", {"eps": 1}),  # auto: below eps 1 its plan refuses engel before spending
    ("quantreg", {"method": "kng", "eps": 0.5}),
    ("quantreg", {"method": "histogram", "eps": 0.5}),
    ("quantreg", {"eps": 0.5}),
]


@pytest.mark.parametrize(("estimator", "kwargs"), PLANS, ids=lambda p: str(p))
def test_the_charge_checked_first_bounds_what_the_result_reports(data, estimator: str, kwargs: dict) -> None:
    """The check uses the request (before the data); the ledger, the result. Every mechanism reports
    at most what was checked, in the same notion."""
    budget = PrivacyBudget(eps=10, delta=1e-3)
    fit = dpstats.dp_ols if estimator == "ols" else dpstats.dp_quantreg
    res = fit(FORMULA, data, bounds=BOUNDS, budget=budget, random_state=5, **kwargs)
    variant = kwargs.get("variant")
    notion = variant or ("approx" if kwargs.get("delta", 0) > 0 else "pure")
    planned = requested_spend(notion, kwargs.get("eps"), kwargs.get("delta", 0.0), kwargs.get("rho"))
    reported = res.privacy
    assert reported.eps <= planned.eps and reported.delta <= planned.delta
    assert reported.notion == notion
    if notion == "zcdp":
        assert reported.rho == planned.rho
    row = budget.ledger.iloc[0]
    assert (row["eps"], row["delta"], row["notion"]) == (reported.eps, reported.delta, reported.notion)


# --------------------------------------------------------------------------
# The ledger and the file
# --------------------------------------------------------------------------


def test_the_ledger_is_a_frame_for_an_appendix(data: pd.DataFrame) -> None:
    budget = PrivacyBudget(eps=3, delta=1e-5)
    dpstats.dp_ols(FORMULA, data, eps=0.5, bounds=BOUNDS, method="noisystats", budget=budget, random_state=6)
    dpstats.dp_ols(FORMULA, data, rho=0.02, delta=1e-6, method="gradient", variant="zcdp", bounds=BOUNDS, budget=budget)
    dpstats.noisy_histogram(data, ["income", "foodexp"], eps=0.25, bounds=BOUNDS, budget=budget, random_state=7)
    ledger = budget.ledger
    assert list(ledger.columns) == [
        "time",
        "formula",
        "estimator",
        "q",
        "method",
        "notion",
        "eps",
        "delta",
        "rho",
        "unit",
        "weights",
        "failed",
    ]
    assert ledger["formula"].tolist() == [FORMULA, FORMULA, "histogram of income, foodexp"]
    assert ledger["notion"].tolist() == ["pure", "zcdp", "pure"]
    assert ledger["rho"].iloc[1] == 0.02 and np.isnan(ledger["rho"].iloc[0])
    assert str(ledger["time"].dtype).endswith("UTC]")
    assert ledger["eps"].sum() == pytest.approx(budget.spent["eps"], rel=1e-15)
    assert "basic composition" in str(budget) and "Spent in 3 releases" in str(budget)


def test_save_and_reload_keep_the_account_and_go_on_refusing(data: pd.DataFrame, tmp_path) -> None:
    path = tmp_path / "paper-budget.json"
    budget = PrivacyBudget(eps=1)
    dpstats.dp_ols(FORMULA, data, eps=0.75, bounds=BOUNDS, method="noisystats", budget=budget, random_state=8)
    budget.save(path)
    assert [p.name for p in tmp_path.iterdir()] == ["paper-budget.json"]  # the atomic write leaves no temporary
    state = json.loads(path.read_text())
    assert state["format"] == "dpstats.PrivacyBudget" and state["ledger"][0]["eps"] == 0.75

    reloaded = PrivacyBudget.load(path)  # a later session
    assert reloaded == budget
    pd.testing.assert_frame_equal(reloaded.ledger, budget.ledger)
    spy, touched = recording(data)
    with pytest.raises(BudgetExceeded):
        dpstats.dp_ols(FORMULA, spy, eps=0.5, bounds=BOUNDS, method="noisystats", budget=reloaded)
    assert touched == []
    dpstats.dp_ols(FORMULA, data, eps=0.25, bounds=BOUNDS, method="noisystats", budget=reloaded, random_state=9)
    reloaded.save(path)
    assert PrivacyBudget.load(path).remaining["eps"] == 0.0


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda s: s.update(format="other"), "not a dpstats budget"),
        (lambda s: s.update(version=2), "unsupported budget file version"),
        (lambda s: s["ledger"][0].update(notion="renyi"), "unknown notion"),
        (lambda s: s["ledger"][0].update(eps=-1), "eps must be a positive"),
        (lambda s: s["ledger"][0].pop("method"), "malformed ledger row"),
        (lambda s: s.update(accounting="zcdp"), "needs delta > 0"),
    ],
)
def test_a_malformed_file_is_refused(data: pd.DataFrame, tmp_path, edit, match: str) -> None:
    budget = PrivacyBudget(eps=1)
    dpstats.dp_ols(FORMULA, data, eps=0.5, bounds=BOUNDS, method="noisystats", budget=budget, random_state=10)
    state = budget.to_dict()
    edit(state)
    path = tmp_path / "b.json"
    path.write_text(json.dumps(state))
    with pytest.raises(ValueError, match=match):
        PrivacyBudget.load(path)


def test_not_json_is_refused(tmp_path) -> None:
    path = tmp_path / "b.json"
    path.write_text("eps = 1")
    with pytest.raises(ValueError, match="invalid JSON"):
        PrivacyBudget.load(path)

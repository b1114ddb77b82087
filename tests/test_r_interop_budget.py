"""What the R package asks of Python for several quantiles and for budgets (dpstats/r_interop/calls.py), without R.

The R side sends column records and a budget's JSON state; these tests send the
same builtins. Seeded fits only (no false failures).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

import dpstats
from dpstats import r_interop
from dpstats.privacy.budget import PrivacyBudget

BOUNDS = {"income": [0, 5000], "foodexp": [0, 2400]}  # not a calibrated real design


def records(frame: pd.DataFrame) -> dict:
    return {
        name: {"type": "double", "values": frame[name].tolist(), "na": [False] * len(frame)} for name in frame.columns
    }


def fit(engel: pd.DataFrame, **kwargs) -> dict:
    call = {"estimator": "ols", "formula": "foodexp ~ income", "columns": records(engel), "eps": 0.5}
    return r_interop.fit_from_r(bounds=BOUNDS, random_state=1, nrow=len(engel), **{**call, **kwargs})


def _builtins_only(obj) -> bool:
    if isinstance(obj, dict):
        return all(isinstance(k, str) and _builtins_only(v) for k, v in obj.items())
    if isinstance(obj, list):
        return all(_builtins_only(v) for v in obj)
    return obj is None or type(obj) in (bool, int, float, str)


def test_several_quantiles_reach_r_as_one_payload_per_quantile(engel: pd.DataFrame) -> None:
    out = fit(engel, estimator="quantreg", tau=[0.25, 0.5, 0.75], eps=1)
    assert out["ok"], out
    result = out["result"]
    assert _builtins_only(result)
    assert result["quantiles"] == [0.25, 0.5, 0.75]
    assert result["privacy"]["eps"] == 1 and len(result["fits"]) == 3
    direct = dpstats.dp_quantreg("foodexp ~ income", engel, q=[0.25, 0.5, 0.75], eps=1, bounds=BOUNDS, random_state=1)
    for sent, fitted in zip(result["fits"], direct.fits, strict=True):
        assert sent["params"] == fitted.params.tolist()
        assert sent["privacy"]["eps"] == pytest.approx(1 / 3, rel=1e-15)
    assert "3 quantiles" in result["summary_text"]


def test_a_budget_goes_to_python_and_comes_back_spent(engel: pd.DataFrame) -> None:
    budget = r_interop.new_budget(eps=1)["budget"]
    # auto's plan refuses engel at eps 0.5 before spending: the budget is what is tested
    out = fit(engel, budget=budget["state"], method="noisystats", ledger_formula="foodexp ~ income  # R")
    assert out["ok"] and _builtins_only(out["budget"]["view"])
    spent = PrivacyBudget.from_json(out["budget"]["state"])
    assert spent.spent == {"eps": 0.5, "delta": 0.0}
    assert spent.ledger["formula"].tolist() == ["foodexp ~ income  # R"]  # the R formula, as written
    view = out["budget"]["view"]
    assert view["ledger"]["eps"] == [0.5] and view["ledger"]["rho"] == [None]
    assert view["remaining"] == {"eps": 0.5, "delta": 0.0}


def test_a_refused_fit_returns_no_budget(engel: pd.DataFrame) -> None:
    state = r_interop.new_budget(eps=0.25)["budget"]["state"]
    out = fit(engel, budget=state)
    assert not out["ok"] and out["refused"] and "budget" not in out
    assert "refused before any data were read" in out["message"]
    first = r_interop.check_budget_first(state, "ols", 0.5, 0.0, "auto", None)
    assert not first["ok"] and first["refused"]
    assert r_interop.check_budget_first(state, "ols", 0.25, 0.0, "noisystats", {"se_share": 0.1})["ok"]
    other = fit(engel, budget=state, eps=0.1, method="nope")
    assert not other["ok"] and not other["refused"] and "budget" not in other


def test_budget_files_and_errors_for_r() -> None:
    budget = PrivacyBudget(eps=2, delta=1e-6, accounting="zcdp")
    out = r_interop.budget_from_json(budget.to_json())
    assert out["ok"] and json.loads(out["budget"]["state"]) == budget.to_dict()
    assert out["budget"]["view"]["accounting"] == "zcdp"
    assert not r_interop.budget_from_json("{}")["ok"]
    bad = r_interop.new_budget(eps=1, accounting="zcdp")
    assert not bad["ok"] and "needs delta > 0" in bad["message"]

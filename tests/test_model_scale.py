"""The histogram's axes on the model's scale (dpstats/frontend/axes.py): a variable the formula uses only through
one increasing invertible function is binned on that function's scale. Deterministic."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import dpstats
from dpstats.frontend.axes import ModelScale, model_scale_functions, response_axis
from dpstats.frontend.formula import build_design

NUMERIC = ["wage", "educ", "exper", "hours"]


@pytest.mark.parametrize(
    ("codes", "expected"),
    [
        (["np.log(wage)", "educ"], {"wage": "log"}),
        (["np.log(wage)", "I(np.log(wage) ** 2)"], {"wage": "log"}),  # every use through the same log
        (["np.log(wage)", "wage"], {}),  # also bare: its own scale
        (["np.log(wage)", "np.sqrt(wage)"], {}),  # two scales: neither
        (["numpy.log1p(hours)", "log(exper)"], {"hours": "log1p", "exper": "log"}),
        (["np.sqrt(exper)", "I(exper ** 2)"], {}),
        (["np.abs(wage)"], {}),  # not invertible
        (["np.log(wage + 1)"], {}),  # not the function of the variable alone
        (["C(educ)"], {}),  # not a function of the formula language
    ],
)
def test_which_variables_move_to_a_functions_scale(codes: list[str], expected: dict[str, str]) -> None:
    assert model_scale_functions(codes, NUMERIC) == expected


def test_bounds_and_values_map_both_ways() -> None:
    scale = ModelScale({"wage": "log", "hours": "sqrt"})
    assert scale.bounds({"wage": (1.0, 50.0), "hours": (0.0, 100.0), "educ": (0.0, 18.0)}) == {
        "wage": (0.0, np.log(50.0)),
        "hours": (0.0, 10.0),
        "educ": (0.0, 18.0),
    }
    frame = pd.DataFrame({"wage": [1.0, 7.5, 50.0], "hours": [0.0, 40.0, 100.0], "educ": [0.0, 12.0, 18.0]})
    pd.testing.assert_frame_equal(scale.inverse(scale.forward(frame)), frame, rtol=1e-12)


def test_the_response_axis_is_the_response_on_its_scale() -> None:
    scale = ModelScale({"wage": "log"})
    assert response_axis("np.log(wage)", ["wage"], scale) == "wage"
    assert response_axis("y", ["y"], scale) == "y"
    assert response_axis("I(np.log(wage) * 2)", ["wage"], scale) is None
    assert response_axis("np.log(wage)", ["wage"], ModelScale({})) is None


def test_a_design_holds_its_variables_on_the_models_scale() -> None:
    frame = pd.DataFrame({"wage": [0.5, 4.0, 60.0], "educ": [10.0, 12.0, 16.0]})
    design, _ = build_design("np.log(wage) ~ educ", frame, {"wage": (1.0, 50.0), "educ": (0.0, 18.0)}, None)
    variables = design.variables
    np.testing.assert_allclose(variables.frame["wage"], np.log([1.0, 4.0, 50.0]))  # clipped, then logged
    assert variables.bounds["wage"] == (0.0, pytest.approx(np.log(50.0))) and variables.response_axis == "wage"
    y, X = variables.encode(variables.frame)
    np.testing.assert_allclose(y, design.y) and np.testing.assert_allclose(X, design.X)


def test_a_log_wage_regression_approaches_ols_on_its_own_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wages skewed over wide bounds: binned on the wage scale nearly every row sits in the first bin and the
    log-wage slope fitted at the cells' centres (``moment_share=0``, Lei's Algorithm 1) collapses; on the log
    scale the noise-free histogram's slope is OLS's up to the binning. (The default, fits at the cells' released
    means, recovers much of it on either scale.)"""
    rng = np.random.default_rng(7)
    educ = rng.integers(8, 19, 4000).astype(float)
    wage = np.exp(1.0 + 0.08 * educ + rng.normal(0, 0.4, educ.size))
    data = pd.DataFrame({"wage": wage, "educ": educ})
    formula, bounds = "np.log(wage) ~ educ", {"wage": (1.0, 2000.0), "educ": (0.0, 20.0)}
    ols = smf.ols(formula, data).fit().params["educ"]
    centres = {"method": "histogram", "bins": 20, "moment_share": 0.0, "random_state": 0}
    res = dpstats.dp_ols(formula, data, eps=1e9, bounds=bounds, **centres)
    assert res.params["educ"] == pytest.approx(ols, rel=0.05)
    monkeypatch.setattr("dpstats.frontend.formula.model_scale_functions", lambda codes, numeric: {})
    own = dpstats.dp_ols(formula, data, eps=1e9, bounds=bounds, **centres)
    assert own.hyperparameters["bins"] == res.hyperparameters["bins"]  # the same layout, on the wage's own scale
    assert abs(own.params["educ"] - ols) > 0.5 * ols  # the control: there the slope collapses

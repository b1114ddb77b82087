"""Declared whole-valued variables (``integers=``): one histogram cell per value where the budget allows
(dpstats/mechanisms/histogram/layout.py). Deterministic."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import dpstats
from dpstats.frontend.metadata import check_integers
from dpstats.mechanisms.histogram.layout import Axis, build_layout


def test_an_integer_axis_centres_its_cells_on_the_values() -> None:
    axis = Axis("kids", bounds=(0.0, 3.0), bins=4, integer=True)
    np.testing.assert_array_equal(axis.centres(), [0.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(axis.widths(), [1.0] * 4)
    codes = axis.codes(pd.Series([0.0, 1.0, 2.0, 3.0, 1.4, 1.5, -7.0, 9.0]))  # off-grid values: the nearest
    np.testing.assert_array_equal(codes, [0, 1, 2, 3, 1, 2, 0, 3])
    assert "one cell per whole number" in axis.describe()


def test_integer_cells_only_where_the_default_rule_affords_as_many_bins() -> None:
    bounds = {"y": (0.0, 1.0), "kids": (0.0, 3.0), "age": (18.0, 90.0)}
    layout = build_layout(["y", "kids", "age"], bounds, {}, None, 5000, 1.0, integers=["kids", "age"])
    assert layout.axis("kids").integer and layout.axis("kids").bins == 4
    assert not layout.axis("age").integer and layout.axis("age").bins < 73  # 73 values: more than the rule gives
    plain = build_layout(["y", "kids", "age"], bounds, {}, None, 5000, 1.0)
    assert not plain.axis("kids").integer


@pytest.mark.parametrize(
    ("integers", "message"),
    [(3, "list"), (["wage"], "no declared bounds"), (["share"], "not whole numbers")],
)
def test_integers_are_declared_with_whole_bounds(integers: object, message: str) -> None:
    bounds = {"kids": (0.0, 3.0), "share": (0.0, 0.5)}
    with pytest.raises((TypeError, ValueError), match=message):
        check_integers(integers, bounds)
    assert check_integers("kids", bounds) == check_integers(["kids"], bounds) == ("kids",)  # R sends one name alone


def test_a_whole_valued_regressor_is_fitted_at_its_values() -> None:
    """At eps = 1e9 the integer layout puts every row at its own value of kids: only the response is binned."""
    rng = np.random.default_rng(3)
    kids = rng.integers(0, 4, 3000).astype(float)
    data = pd.DataFrame({"kids": kids, "y": 0.2 + 0.15 * kids + rng.normal(0, 0.1, kids.size)})
    bounds = {"kids": (0, 3), "y": (-0.5, 1.5)}
    ols = smf.ols("y ~ kids", data).fit().params["kids"]
    res = dpstats.dp_ols("y ~ kids", data, eps=1e9, bounds=bounds, method="histogram", integers=["kids"])
    assert res.hyperparameters["bins"]["kids"] == 4
    assert res.params["kids"] == pytest.approx(ols, rel=0.01)


def test_integers_are_for_one_fit_on_pandas() -> None:
    data = pd.DataFrame({"kids": [0.0, 1.0, 2.0, 3.0], "y": [0.1, 0.2, 0.4, 0.5], "g": ["a", "b", "a", "b"]})
    with pytest.raises(ValueError, match="grouped"):
        dpstats.dp_ols("y ~ kids", data, eps=1.0, bounds={"kids": (0, 3), "y": (0, 1)}, by="g", groups=["a", "b"],
                       integers=["kids"])  # fmt: skip

"""dpstats.inspect: the curator's NOT PRIVATE report of what a DP call would treat row-wise
(dpstats/frontend/curator.py).
"""

import numpy as np
import pandas as pd
import pytest

import dpstats


@pytest.fixture
def dirty() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "x": [1.0, 2.0, np.nan, np.inf, "abc", 50.0, 3.0],
            "y": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, -1.0],
            "g": ["a", "b", "zz", None, "a", "a", "zz"],
        },
        index=list("ABCDEFG"),
    )


def test_the_first_line_says_not_private(dirty: pd.DataFrame) -> None:
    report = dpstats.inspect("y ~ x + C(g)", dirty, bounds={"x": (0, 10), "y": (0, 10)}, levels={"g": ["a", "b"]})
    assert report.as_text().splitlines()[0].startswith("NOT PRIVATE")
    assert str(report) == report.as_text()


def test_counts_each_kind_of_bad_cell(dirty: pd.DataFrame) -> None:
    report = dpstats.inspect("y ~ x + C(g)", dirty, bounds={"x": (0, 10), "y": (0, 10)}, levels={"g": ["a", "b"]})
    table = report.table.set_index("variable")
    assert table.loc["x", ["missing", "infinite", "text", "below", "above"]].tolist() == [1, 1, 1, 0, 1]
    assert table.loc["y", ["missing", "below", "above"]].tolist() == [0, 1, 0]
    assert table.loc["g", "missing"] == 1 and table.loc["g", "undeclared levels"] == "zz (2)"
    # rows whose cells the call would impute (clipping is not imputation): C, E (x), C, D, G (g)
    assert list(report.bad_rows) == ["C", "D", "E", "G"]
    assert "zz (2)" in report.as_text() and "C, D, E, G" in report.as_text()


def test_a_clean_frame_reports_nothing_to_impute() -> None:
    clean = pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": [0.5, 1.0, 2.0]})
    report = dpstats.inspect("y ~ x", clean, bounds={"x": (0, 10), "y": (0, 10)})
    assert len(report.bad_rows) == 0 and "no cell would be imputed" in report.as_text()
    assert report.table[["missing", "infinite", "text", "below", "above"]].to_numpy().sum() == 0


def test_the_formula_is_admitted_by_the_same_grammar(dirty: pd.DataFrame) -> None:
    with pytest.raises(ValueError, match="reads other rows"):
        dpstats.inspect("y ~ I(x - x.mean())", dirty, bounds={"y": (0, 10)})

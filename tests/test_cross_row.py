"""The cross-row formulas of issue 12 are refused for every method, in Python and on the command line.

Deterministic: the refusal happens on the formula alone, before any data are read,
so it is the same error whatever the data (tests/test_fuzz_formulas.py draws random ones).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats.cli import main
from dpstats.frontend.grammar import FormulaRefused

CROSS_ROW = [
    "I(x - x.mean())",
    "I(x / x.max())",
    "np.roll(x, 1)",
    "I(x.rank())",
    "I(x.cumsum())",
    "I(x / np.sum(x))",
    "I(x.shift(1))",
]
METHODS = {
    "noisystats": {},
    "theilsen": {},
    "gradient": {},
    "tukey": {"delta": 1e-6},
    "histogram": {},
    "kng": {},
    "auto": {"force": True},  # fits where its plan would refuse n = 100 rows (the formula is what is tested)
}
QUANTREG = ("histogram", "kng", "auto")


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, 100)
    return pd.DataFrame({"x": x, "y": x + rng.normal(0, 0.1, 100)})


@pytest.mark.parametrize("term", CROSS_ROW)
@pytest.mark.parametrize("method", sorted(METHODS))
def test_refused_for_every_method_and_estimator(data: pd.DataFrame, term: str, method: str) -> None:
    # a bound declared for the expression itself, as a user would to make it fit
    bounds = {"x": (0, 1), "y": (-1, 2), term: (-5, 5)}
    kwargs = {"eps": 1.0, "bounds": bounds, "method": method, **METHODS[method]}
    with pytest.raises(FormulaRefused, match=r"reads other rows|not a row-wise function|not allowed"):
        dpstats.dp_ols(f"y ~ {term}", data, **kwargs)
    if method in QUANTREG:
        with pytest.raises(FormulaRefused):
            dpstats.dp_quantreg(f"y ~ {term}", data, q=0.5, **{k: v for k, v in kwargs.items() if k != "delta"})


@pytest.mark.parametrize("term", CROSS_ROW)
def test_refused_on_the_command_line(tmp_path, capsys: pytest.CaptureFixture[str], data: pd.DataFrame, term: str):
    path = tmp_path / "d.csv"
    data.to_csv(path, index=False)
    code = main(["ols", f"y ~ {term}", "--data", str(path), "--eps", "1", "--bounds", "x=0:1", "--bounds", "y=-1:2"])
    err = capsys.readouterr().err
    assert code == 2 and "not allowed" in err


@pytest.mark.parametrize("formula", ["y ~ np.log(x + 1)", "y ~ I(x**2)", "y ~ I(2*x + 1)"])
def test_rowwise_transforms_still_fit_for_every_method(data: pd.DataFrame, formula: str) -> None:
    for method, options in METHODS.items():
        if method == "tukey":
            continue  # needs n of the order of 1000 d rows: tests/test_tukey.py
        res = dpstats.dp_ols(formula, data, eps=1.0, bounds={"x": (0, 1), "y": (-1, 2)}, method=method, **options)
        assert res.params.shape == (2,) and (res.failed or np.isfinite(res.params).all())

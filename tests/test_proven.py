"""What is reported as proven is proven (docs/DESIGN.md section 2), and auto prefers a proven mechanism.

KNG draws exactly in one dimension (an intercept alone, or one column
through the origin) and by MCMC otherwise, whose mixing is not proven; the
flag depends on the design's shape only, never on the data (the least-squares
sampler's fallback to MCMC is data-dependent, so its flag is off whenever the
fallback is possible).
"""

import numpy as np
import pandas as pd
import pytest

import dpstats

BOUNDS = {"x": (0.0, 1.0), "y": (-1.0, 2.0)}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    x = rng.uniform(0, 1, 300)
    return pd.DataFrame({"x": x, "y": 0.5 * x + rng.normal(0, 0.2, 300)})


@pytest.mark.parametrize(
    ("formula", "estimator", "proven"),
    [
        ("y ~ 1", "quantreg", True),  # the exponential mechanism over intervals, sampled exactly
        ("y ~ x - 1", "quantreg", False),  # a piecewise-constant density with real breakpoints, in floating point
        ("y ~ x", "quantreg", False),  # MCMC
        ("y ~ 1", "ols", False),  # a piecewise log-linear density, in floating point
        ("y ~ x", "ols", False),
    ],
)
def test_kng_reports_proven_by_the_design_shape(frame: pd.DataFrame, formula: str, estimator: str, proven: bool):
    fit = dpstats.dp_quantreg if estimator == "quantreg" else dpstats.dp_ols
    res = fit(formula, frame, eps=1.0, bounds=BOUNDS, method="kng", random_state=0)
    assert res.privacy.proven is proven
    assert any("not float-safe" in c for c in res.privacy.caveats) is (not proven)
    assert bool(res.glance()["proven"].iloc[0]) is proven
    text = res.summary().as_text()
    assert ("NOT proven" in text) is (not proven) and "Guarantee" in text
    assert res.to_dict()["privacy"]["proven"] is proven


def test_other_mechanisms_are_proven(frame: pd.DataFrame) -> None:
    for method in ("noisystats", "theilsen", "histogram", "gradient", "tukey"):
        delta = 1e-6 if method == "tukey" else 0.0
        kw = {"eps": 1.0, "delta": delta, "bounds": BOUNDS, "method": method, "random_state": 0}
        assert dpstats.dp_ols("y ~ x", frame, **kw).privacy.proven


@pytest.mark.parametrize("median", ["wide", "smooth"])
def test_theilsen_continuous_medians_say_they_are_not_float_safe(frame: pd.DataFrame, median: str) -> None:
    res = dpstats.dp_ols("y ~ x", frame, eps=1.0, bounds=BOUNDS, method="theilsen", median=median, random_state=0)
    assert not res.privacy.proven and any("not float-safe" in c for c in res.privacy.caveats)


def test_several_quantiles_are_proven_only_if_every_fit_is(frame: pd.DataFrame) -> None:
    kw = {"eps": 1.0, "bounds": BOUNDS, "method": "kng", "random_state": 0}
    assert dpstats.dp_quantreg("y ~ 1", frame, q=[0.25, 0.75], **kw).privacy.proven
    assert not dpstats.dp_quantreg("y ~ x", frame, q=[0.25, 0.75], **kw).privacy.proven


@pytest.mark.parametrize(("formula", "method"), [("y ~ x", "histogram"), ("y ~ 1", "kng"), ("y ~ x - 1", "histogram")])
def test_auto_takes_a_proven_quantile_regression(frame: pd.DataFrame, formula: str, method: str) -> None:
    res = dpstats.dp_quantreg(formula, frame, q=0.5, eps=1.0, bounds=BOUNDS, random_state=0)
    assert res.method == method and res.privacy.proven
    assert res.method_reason


def test_auto_refuses_options_without_a_method(frame: pd.DataFrame) -> None:
    with pytest.raises(ValueError, match="explicit method"):
        dpstats.dp_ols("y ~ x", frame, eps=1.0, bounds=BOUNDS, T=10)

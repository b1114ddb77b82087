"""The perturbed histogram (Lei 2011): the release, its fits, and the method="histogram" shortcuts.

dpstats/api/histogram_release.py (the release), dpstats/mechanisms/histogram/weighted_fits.py (the weighted
fits on cell centres) and dpstats/mechanisms/histogram/mechanism.py (dp_ols /
dp_quantreg with method="histogram"). The privacy audit is in
tests/test_histogram_privacy.py.

Why the tolerances. At eps = 1e9 the Laplace noise on a count has scale
2e-9, so the noisy counts equal the true counts to about 1e-8 and the
enhanced cut-off ``log(n) / (2 eps)`` is below 1e-8: the weighted fits are
then the non-private fits on the binned data up to a relative 1e-7 or so
(conditioning of X'WX on these designs is below 1e3). Statistical
comparisons with the raw-data fits use seeded data; the bounds given are
several times the largest error over 20 seeds.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf

import dpstats
from dpstats.api import histogram_release as hg
from dpstats.api.histogram_release import noisy_histogram
from dpstats.mechanisms.histogram.layout import (
    MAX_CELLS_PER_ROW,
    MAX_DEFAULT_CELLS,
    NOISE_MASS,
    Axis,
    build_layout,
    cell_count,
    cutoff,
    default_bins,
    empty_cell_weight,
    lei_bins,
)
from dpstats.mechanisms.histogram.weighted_fits import (
    check_loss,
    integrated_check_loss,
    weighted_least_squares,
    weighted_quantile_regression,
    weighted_quantile_regression_binned,
)
from dpstats.privacy.noise import recording

BOUNDS = {"y": (-10.0, 35.0), "x": (0.0, 10.0), "z": (-5.0, 5.0)}
LEVELS = {"g": ["a", "b", "c"]}
FORMULA = "y ~ x + z + C(g)"
EXACT = 1e9


def make_frame(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 10, n)
    z = rng.uniform(-5, 5, n)
    g = rng.choice(LEVELS["g"], n)
    effect = pd.Series(g).map({"a": 0.0, "b": 3.0, "c": -2.0}).to_numpy()
    y = np.clip(1 + 2 * x - z + effect + rng.normal(0, 2, n), *BOUNDS["y"])
    return pd.DataFrame({"y": y, "x": x, "z": z, "g": g})


def binned(frame: pd.DataFrame, hist: hg.NoisyHistogram) -> pd.DataFrame:
    """The data with every numeric column replaced by its bin centre (the non-private twin)."""
    out = frame.copy()
    for axis in hist.layout.axes:
        if not axis.categorical:
            out[axis.name] = axis.centres()[axis.codes(out[axis.name])]
    return out


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return make_frame()


# --------------------------------------------------------------------------
# Layout, bins and the paper's rule
# --------------------------------------------------------------------------


def test_numeric_columns_are_rescaled_by_their_bounds_into_equal_bins() -> None:
    axis = Axis("x", bounds=(0.0, 10.0), bins=5)
    codes = axis.codes(pd.Series([0.0, 1.99, 2.0, 5.0, 9.99, 10.0]))
    np.testing.assert_array_equal(codes, [0, 0, 1, 2, 4, 4])  # the last bin is closed (footnote 1)
    np.testing.assert_allclose(axis.centres(), [1, 3, 5, 7, 9])
    np.testing.assert_allclose(axis.widths(), [2, 2, 2, 2, 2])


def test_bound_cells_hold_the_rows_at_the_bounds_and_nothing_else() -> None:
    """A cell of its own at each bound (a point: width 0), before and after the K bins."""
    axis = Axis("x", bounds=(0.0, 10.0), bins=5, ends=True)
    codes = axis.codes(pd.Series([0.0, 1e-12, 1.99, 2.0, 5.0, 9.99, 10.0 - 1e-12, 10.0]))
    np.testing.assert_array_equal(codes, [0, 1, 1, 2, 3, 5, 5, 6])
    assert axis.size == 7
    np.testing.assert_allclose(axis.centres(), [0, 1, 3, 5, 7, 9, 10])
    np.testing.assert_allclose(axis.widths(), [0, 2, 2, 2, 2, 2, 0])
    assert "a cell at each bound" in axis.describe()


def test_bound_cells_are_declared_per_column(frame: pd.DataFrame) -> None:
    """None by default; True for every numeric column; a list, or one name (as R sends a string)."""
    columns = ["y", "x", "g"]

    def ended(bound_cells: object) -> set[str]:
        kwargs = {"bounds": BOUNDS, "levels": LEVELS, "random_state": 0}
        if bound_cells is not None:
            kwargs["bound_cells"] = bound_cells
        hist = noisy_histogram(frame, columns, 1.0, **kwargs)
        return {a.name for a in hist.layout.axes if a.ends}

    assert ended(None) == ended(False) == set() and ended(True) == {"y", "x"}
    assert ended(["y"]) == ended("y") == {"y"}


def test_lei_bins_follow_the_papers_rule_of_thumb() -> None:
    """Average count per cell >= 3 x the maximal noise (2 / eps) log(#cells) (Lei 2011, section 4.3)."""
    n, fixed = 250_070, 24
    cells = lambda k: fixed * k**2  # noqa: E731
    for eps, expected in ((1.0, 14), (0.1, 5)):
        k = lei_bins(n, 2, fixed, eps)
        assert k == expected
        rule = lambda k: n / cells(k) >= 3 * (2 / eps) * math.log(cells(k))  # noqa: B023, E731
        assert rule(k) and not rule(k + 1)
    # the paper's own figures for K = 10: n / c(K) ~ 100 and log c(K) ~ 7.78
    assert n / cells(10) == pytest.approx(104.2, abs=0.1) and math.log(cells(10)) == pytest.approx(7.78, abs=0.01)
    assert lei_bins(50, 2, 24, 1.0) == 3  # even K = 3 misses the rule: the minimum
    assert lei_bins(10**6, 0, 5, 1.0) == 0  # no numeric column
    huge = lei_bins(n, 2, fixed, 1e9)  # no noise: the average count must still exceed log(#cells)
    assert n / cells(huge) >= math.log(cells(huge)) and n / cells(huge + 1) < math.log(cells(huge + 1))
    by_n = [lei_bins(n, 1, 1, 1.0) for n in (10**3, 10**4, 10**5)]
    by_eps = [lei_bins(10**5, 1, 1, eps) for eps in (0.1, 1.0, 10.0)]
    assert by_n == sorted(by_n) and by_eps == sorted(by_eps) and by_n[0] < by_n[-1] and by_eps[0] < by_eps[-1]


def test_default_bins_undersmooth_leis_rule_per_estimator() -> None:
    """Finer than Lei's rule so that binning bias is small next to the intervals: x 1.5 (OLS), x 3 (quantiles)."""
    for n, free, fixed, eps in ((250_070, 2, 24, 1.0), (1000, 2, 1, 1.0), (1000, 2, 3, 1.0), (10**4, 2, 1, 5.0)):
        k = lei_bins(n, free, fixed, eps)
        assert default_bins(n, free, fixed, eps) == math.ceil(1.5 * k) == default_bins(n, free, fixed, eps, "ols")
        assert default_bins(n, free, fixed, eps, "quantreg") == 3 * k
    assert default_bins(1000, 2, 3, 1.0) == 5  # Lei's rule gives its minimum, 3, which biases badly
    assert default_bins(10**6, 0, 5, 1.0) == 0


def test_empty_cell_weight_is_the_mean_of_the_thresholded_noise() -> None:
    """Against 10^6 simulated Laplace(2 / eps) draws per policy: the mean's Monte Carlo sd is below 0.45%, the
    tolerance 2% (over 4 sd: a false failure has probability below 1e-4 per comparison, 8 comparisons)."""
    rng = np.random.default_rng(5)
    for n, eps in ((6366, 1.0), (1000, 0.3)):
        noise = rng.laplace(0.0, 2.0 / eps, 10**6)
        for policy in ("enhanced", 0.25, "nonnegative"):
            kept = np.where(noise >= cutoff(policy, n, eps), noise, 0.0)
            assert empty_cell_weight(n, eps, policy) == pytest.approx(kept.mean(), rel=0.02)
        assert empty_cell_weight(n, eps, "none") == pytest.approx(np.abs(noise).mean(), rel=0.02)


def test_default_bins_cap_the_noise_mass_of_the_empty_cells() -> None:
    """Undersmoothing in several dimensions multiplies the cells: with four numeric axes and four levels at
    n = 6,366 and eps = 1 (statsmodels' fair data), three times Lei's minimum gives 26,244 cells whose noise
    alone would weigh 9,400 expected rows. The cap keeps the empty cells' expected weight within
    NOISE_MASS n (K >= 2), and leaves the two-axis designs of the coverage benchmark as they were; where the
    noise is negligible, the cells number at most MAX_DEFAULT_CELLS and MAX_CELLS_PER_ROW n."""
    n, free, fixed, eps = 6366, 4, 4, 1.0
    weight = empty_cell_weight(n, eps, "enhanced")
    assert 3 * lei_bins(n, free, fixed, eps) == 9 and cell_count(9, free, fixed) * weight > n
    k = default_bins(n, free, fixed, eps, "quantreg")
    assert cell_count(k, free, fixed) * weight <= NOISE_MASS * n < cell_count(k + 1, free, fixed) * weight
    ended = default_bins(n, free, fixed, eps, "quantreg", ended_axes=1)
    assert ended <= k and cell_count(ended, free, fixed, ended_axes=1) * weight <= NOISE_MASS * n
    assert default_bins(1000, 11, 1, 1.0) == 2  # the floor, even above the cap
    # little noise, ten regressors: the noise allows K = 4 (4.2 million cells); at most MAX_DEFAULT_CELLS
    assert default_bins(30_000, 11, 1, 1e4) == 3 and cell_count(3, 11, 1) <= MAX_DEFAULT_CELLS < cell_count(4, 11, 1)
    # and at most MAX_CELLS_PER_ROW per row: 3^11 cells are 59 a row at n = 3,000
    assert default_bins(3000, 11, 1, 1e4) == 2 and cell_count(2, 11, 1) <= MAX_CELLS_PER_ROW * 3000
    for n, eps in ((1000, 1.0), (10_000, 5.0)):
        assert default_bins(n, 2, 1, eps, "quantreg") == 3 * lei_bins(n, 2, 1, eps)


def test_a_default_layout_identifies_the_formula_on_its_cells() -> None:
    """Capped to two bins (24 levels, n = 500, eps = 1), x and x**2 are collinear with the intercept over the
    cells' centres and every fit at the centres (moment_share=0) fails, whatever the data; the default layout
    takes a third bin (from the formula and the layout: public). Declared bins are left as they are."""
    levels = {"g": [f"g{i}" for i in range(24)]}
    bounds = {"y": (0.0, 1.0), "x": (0.0, 1.0)}
    assert build_layout(["y", "x", "g"], bounds, levels, None, 500, 1.0).axis("x").bins == 2
    rng = np.random.default_rng(8)
    x = rng.uniform(0, 1, 500)
    data = pd.DataFrame({"x": x, "y": np.clip(0.2 + 0.5 * x**2 + rng.normal(0, 0.1, 500), 0, 1)})
    data["g"] = rng.choice(levels["g"], 500)
    kwargs = dict(eps=1.0, bounds=bounds, levels=levels, method="histogram", random_state=0, moment_share=0)
    res = dpstats.dp_ols("y ~ x + I(x**2) + C(g)", data, **kwargs)
    assert res.hyperparameters["bins"]["x"] == 3 and not res.failed
    declared = dpstats.dp_ols("y ~ x + I(x**2) + C(g)", data, bins=2, **kwargs)
    assert declared.hyperparameters["bins"]["x"] == 2 and declared.failed
    linear = dpstats.dp_ols("y ~ x + C(g)", data, **kwargs)
    assert linear.hyperparameters["bins"]["x"] == 2  # identified on two bins: the cap stands


def test_bins_come_from_public_information_only(frame: pd.DataFrame) -> None:
    a = noisy_histogram(frame, ["y", "x", "g"], 1.0, bounds=BOUNDS, levels=LEVELS, random_state=0)
    other = frame.assign(y=0.0, x=0.0, g="a")  # same n, same declarations, different data
    b = noisy_histogram(other, ["y", "x", "g"], 1.0, bounds=BOUNDS, levels=LEVELS, random_state=0)
    assert a.layout == b.layout
    assert a.bins == {"y": default_bins(len(frame), 2, 3, 1.0), "x": default_bins(len(frame), 2, 3, 1.0)}
    c = noisy_histogram(frame, ["y", "x", "g"], 1.0, bounds=BOUNDS, levels=LEVELS, bins={"x": 4}, random_state=0)
    assert c.bins == {"y": default_bins(len(frame), 1, 3 * 4, 1.0), "x": 4}


# --------------------------------------------------------------------------
# The release
# --------------------------------------------------------------------------


def test_every_cell_is_noised_with_laplace_scale_two_over_eps(frame: pd.DataFrame) -> None:
    with recording() as log:
        hist = noisy_histogram(frame, ["x", "g"], 0.5, bounds=BOUNDS, levels=LEVELS, bins=20, random_state=1)
    assert [r.name for r in log] == ["histogram counts"]
    release = log[0]
    assert release.sensitivity == 2.0 and release.eps == 0.5 and release.norm == "l1"
    assert release.value.shape == (60,) and release.value.sum() == len(frame)
    np.testing.assert_array_equal(release.noisy, hist.counts)
    assert np.all(hist.counts != release.value)  # every cell noised, including the empty ones below
    empty = noisy_histogram(frame, ["x"], 1.0, bounds={"x": (-100.0, 100.0)}, bins=200, random_state=2)
    assert np.count_nonzero(empty.layout.counts(frame[["x"]])) == 10 and np.count_nonzero(empty.counts) == 200


def test_enhanced_thresholding_is_the_default(frame: pd.DataFrame) -> None:
    hist = noisy_histogram(frame, ["y", "x"], 0.7, bounds=BOUNDS, random_state=3)
    assert hist.threshold == "enhanced"
    cut = 0.5 * math.log(len(frame)) / 0.7
    assert hist.cutoff() == pytest.approx(cut)
    counts, weights = hist.counts, hist.weights()
    np.testing.assert_array_equal(weights, np.where(counts >= cut, counts, 0.0))
    assert np.any(counts < 0) and np.all(weights >= 0)
    np.testing.assert_array_equal(hist.weights("nonnegative"), np.maximum(counts, 0))
    np.testing.assert_array_equal(hist.weights("none"), counts)
    assert hist.cutoff(1.0) == pytest.approx(2 * cut)  # a number is the constant A
    frame_view = hist.to_frame()
    assert (
        list(frame_view.columns) == ["y", "x", "noisy_count", "fit_weight"] and len(frame_view) == hist.layout.n_cells
    )
    np.testing.assert_array_equal(frame_view["fit_weight"], weights)


def test_categorical_cells_are_the_declared_levels_only(frame: pd.DataFrame) -> None:
    declared = {"g": ["a", "b", "c", "never_seen"]}
    hist = noisy_histogram(frame, ["g"], 1.0, levels=declared, random_state=0)
    assert hist.layout.shape == (4,)
    assert list(hist.to_frame()["g"]) == declared["g"]
    sentinel = frame.assign(g=np.where(np.arange(len(frame)) == 7, "SECRET_LEVEL", frame["g"]))
    first_level = frame.assign(g=np.where(np.arange(len(frame)) == 7, LEVELS["g"][0], frame["g"]))
    np.testing.assert_array_equal(
        noisy_histogram(sentinel, ["g"], 1.0, levels=LEVELS, random_state=0).counts,
        noisy_histogram(first_level, ["g"], 1.0, levels=LEVELS, random_state=0).counts,
    )
    with pytest.raises(ValueError, match="not among levels") as info:
        noisy_histogram(sentinel, ["g"], 1.0, levels=LEVELS, random_state=0, missing="raise")
    assert "SECRET_LEVEL" not in str(info.value)
    with pytest.raises(ValueError, match="declared bounds for the numeric columns"):
        noisy_histogram(frame, ["g"], 1.0, random_state=0)  # undeclared levels: numeric, whatever the dtype
    numeric = frame.assign(year=np.arange(len(frame)) % 4 + 2003)
    year = noisy_histogram(numeric, ["year"], 1.0, levels={"year": [2003, 2004, 2005, 2006, 2007]}, random_state=0)
    assert year.layout.axis("year").categorical and year.layout.shape == (5,)
    flags = noisy_histogram(frame.assign(b=frame.x > 5), ["b"], 1.0, levels={"b": [False, True]}, random_state=0)
    assert flags.layout.axis("b").levels == (False, True)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"eps": 0.0}, ValueError, "eps"),
        ({"eps": float("nan")}, ValueError, "eps"),
        ({"columns": "x"}, TypeError, "list of column names"),
        ({"columns": []}, TypeError, "list of column names"),
        ({"columns": ["x", "x"]}, ValueError, "duplicated"),
        ({"columns": ["nope"]}, ValueError, "not in data"),
        ({"bounds": {"y": (0.0, 1.0)}}, ValueError, r"declared bounds for the numeric columns \['x'\]"),
        ({"bins": 0}, ValueError, "bins must be a positive integer"),
        ({"bins": {"g": 3}}, ValueError, "not numeric histogram columns"),
        ({"threshold": "sometimes"}, ValueError, "threshold"),
        ({"threshold": -1.0}, ValueError, "positive"),
        ({"missing": "drop"}, ValueError, "missing"),
        ({"bins": 10**6}, ValueError, "cells"),
        ({"bound_cells": ["g"]}, ValueError, r"bound_cells names columns that are not numeric.*\['g'\]"),
        ({"bound_cells": 1}, TypeError, "bound_cells must be"),
    ],
)
def test_schema_errors_name_the_argument(frame: pd.DataFrame, kwargs: dict, error: type, match: str) -> None:
    call = {"columns": ["y", "x", "g"], "eps": 1.0, "bounds": BOUNDS, "levels": LEVELS, **kwargs}
    with pytest.raises(error, match=match):
        noisy_histogram(frame, call.pop("columns"), call.pop("eps"), **call)


def test_the_release_is_immutable(frame: pd.DataFrame) -> None:
    hist = noisy_histogram(frame, ["y", "x"], 1.0, bounds=BOUNDS, random_state=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        hist.eps = 2.0  # type: ignore[misc]
    counts = hist.counts
    counts[:] = 0
    assert np.any(hist.counts != 0)
    assert "n = 3000 (public)" in repr(hist) and "noisy_count" not in repr(hist)


# --------------------------------------------------------------------------
# Limits: at eps = 1e9 the fits are the non-private fits on the binned data
# --------------------------------------------------------------------------


def test_ols_at_huge_eps_is_ols_on_the_binned_data(frame: pd.DataFrame) -> None:
    """20 bins a side: 24,000 cells for 3,000 rows, so most cells are empty and weigh only thresholded noise."""
    hist = noisy_histogram(frame, ["y", "x", "z", "g"], EXACT, bounds=BOUNDS, levels=LEVELS, bins=20, random_state=5)
    twin = smf.ols(FORMULA, binned(frame, hist)).fit().params
    ours = hist.ols(FORMULA)
    assert not ours.failed and list(ours.params.index) == list(twin.index)
    np.testing.assert_allclose(ours.params, twin, rtol=1e-6)
    # a formula on a subset of the columns: the cells are summed over the others
    np.testing.assert_allclose(hist.ols("y ~ x").params, smf.ols("y ~ x", binned(frame, hist)).fit().params, rtol=1e-6)
    for policy in ("none", "nonnegative"):
        np.testing.assert_allclose(hist.ols(FORMULA, threshold=policy).params, twin, rtol=1e-6)


def test_sheppard_correction_removes_the_grouping_attenuation() -> None:
    """x ~ N(5, 1.5) in 6 bins of width 2: the centres' variance exceeds Var(x) by about h^2 / 12 = 1/3,
    so plain Algorithm 1 attenuates the slope by about 13%; the corrected slope is within 2% (noise-free)."""
    rng = np.random.default_rng(4)
    n = 200_000
    x = np.clip(rng.normal(5, 1.5, n), 0, 12)
    data = pd.DataFrame(
        {"x": x, "y": np.clip(1 + 2 * x + rng.normal(0, 1, n), -10, 35), "g": rng.choice(["a", "b"], n)}
    )
    data["y"] += np.where(data.g == "b", 1.0, 0.0)
    bounds = {"x": (0.0, 12.0), "y": (-10.0, 35.0)}
    hist = noisy_histogram(
        data, ["y", "x", "g"], EXACT, bounds=bounds, levels={"g": ["a", "b"]}, bins={"x": 6, "y": 90}
    )
    categorical = data.assign(g=pd.Categorical(data["g"]))  # the same fits; patsy need not scan 200,000 strings
    raw = smf.ols("y ~ x + g", categorical).fit().params
    plain, corrected = hist.ols("y ~ x + g"), hist.ols("y ~ x + g", sheppard=True)
    assert corrected.hyperparameters["sheppard"] == ["x"] and plain.hyperparameters["sheppard"] == []
    assert plain.params["x"] / raw["x"] - 1 < -0.08
    np.testing.assert_allclose(corrected.params, raw, rtol=0.02, atol=0.02)
    # columns linear in x (here an interaction with g) are corrected exactly as well
    both = hist.ols("y ~ x * g", sheppard=["x"])
    np.testing.assert_allclose(both.params, smf.ols("y ~ x * g", categorical).fit().params, rtol=0.03, atol=0.03)
    with pytest.raises(ValueError, match="not numeric regressors"):
        hist.ols("y ~ x", sheppard=["y"])
    with pytest.raises(ValueError, match="least squares only"):
        dpstats.dp_quantreg("y ~ x", data, 0.5, eps=1.0, bounds=bounds, method="histogram", sheppard=True)


def test_quantreg_centre_at_huge_eps_solves_quantreg_on_the_binned_data(frame: pd.DataFrame) -> None:
    """Binned data have ties, so the minimiser need not be unique: compare the objective exactly."""
    hist = noisy_histogram(frame, ["y", "x", "g"], EXACT, bounds=BOUNDS, levels=LEVELS, bins=25, random_state=6)
    data = binned(frame, hist)
    for q in (0.25, 0.5, 0.8):
        ours = hist.quantreg("y ~ x + C(g)", q, response="centre")
        assert ours.hyperparameters["response"] == "centre"
        theirs = smf.quantreg("y ~ x + C(g)", data).fit(q=q, max_iter=5000).params
        X = np.asarray(sm.add_constant(pd.get_dummies(data["g"], drop_first=True).astype(float).assign(x=data.x)))

        def loss(b, X=X, q=q):
            return check_loss(data["y"].to_numpy() - X @ np.asarray(b), q)

        assert loss(ours.params) <= loss(theirs) * (1 + 1e-9)
        assert loss(ours.params) == pytest.approx(loss(theirs), rel=1e-4)


def test_fine_bins_at_huge_eps_approach_the_raw_data_fits(frame: pd.DataFrame) -> None:
    """200 bins a side; coefficients of size 1-3. Largest absolute error over 20 data seeds:
    0.008 (OLS) and 0.065 (median regression, whose own standard errors here are about 0.1)."""
    hist = noisy_histogram(frame, ["y", "x", "g"], EXACT, bounds=BOUNDS, levels=LEVELS, bins=200, random_state=7)
    raw = smf.ols("y ~ x + C(g)", frame).fit().params
    np.testing.assert_allclose(hist.ols("y ~ x + C(g)").params, raw, rtol=0, atol=0.03)
    median = smf.quantreg("y ~ x + C(g)", frame).fit(q=0.5).params
    ours = hist.quantreg("y ~ x + C(g)", 0.5)
    assert ours.hyperparameters["response"] == "integrated"
    np.testing.assert_allclose(ours.params, median, rtol=0, atol=0.15)


def test_integrated_quantreg_beats_the_centre_lp_at_coarse_bins(frame: pd.DataFrame) -> None:
    """With 8 bins the centre LP jumps in bin-width steps; the integrated loss does not (module docstring)."""
    hist = noisy_histogram(frame, ["y", "x", "g"], EXACT, bounds=BOUNDS, levels=LEVELS, bins=8, random_state=8)
    raw = smf.quantreg("y ~ x + C(g)", frame).fit(q=0.25).params.to_numpy()
    integrated = hist.quantreg("y ~ x + C(g)", 0.25).params.to_numpy()
    centre = hist.quantreg("y ~ x + C(g)", 0.25, response="centre").params.to_numpy()
    assert np.abs(integrated - raw).max() < 0.5 * np.abs(centre - raw).max()


# --------------------------------------------------------------------------
# The weighted fits
# --------------------------------------------------------------------------


def test_bound_cells_put_a_mass_at_the_bound_where_it_is() -> None:
    """60% of the responses at the lower bound 0 (hours, spending, earnings with zeros): QuantReg's median
    line is 0. Binned at the centres (moment_share=0), the zeros spread over the first bin and the integrated
    median lies inside it (about 0.35 at eps = 1e9, 0.8 at eps = 1, some ten standard errors); with a cell at
    the bound (a point) the median is the bound itself, at eps = 1 too (seeded). The bins' noisy means
    (the default) shrink the first bin's response interval onto the zeros: the intercept is QuantReg's at
    eps = 1e9 and 0.05 (under one standard error) at eps = 1. Above the mass (q = 0.8) both layouts at the
    centres approach QuantReg at eps = 1e9 within a fifth of a bin."""
    rng = np.random.default_rng(3)
    n = 4000
    x = rng.uniform(0, 10, n)
    y = np.where(rng.uniform(size=n) < 0.6, 0.0, np.clip(1 + x + np.abs(rng.normal(0, 2, n)), 0, 30))
    data, bounds = pd.DataFrame({"x": x, "y": y}), {"x": (0, 10), "y": (0, 30)}

    def fit(q: float, eps: float, bound_cells: object, moment_share: float | None = 0.0):
        kwargs = dict(q=q, eps=eps, bounds=bounds, method="histogram", random_state=1, bound_cells=bound_cells)
        return dpstats.dp_quantreg("y ~ x", data, moment_share=moment_share, **kwargs)

    assert smf.quantreg("y ~ x", data).fit(q=0.5).params.abs().max() < 1e-4
    for eps in (EXACT, 1.0):
        res = fit(0.5, eps, ["y"])
        assert res.params.abs().max() < 1e-3
        binned_only = fit(0.5, eps, False)
        assert binned_only.params["Intercept"] > 0.25 and binned_only.params["Intercept"] > 3 * res.bse["Intercept"]
        at_means = fit(0.5, eps, False, None)
        assert abs(at_means.params["Intercept"]) < min(0.1, at_means.bse["Intercept"])
    reference = smf.quantreg("y ~ x", data).fit(q=0.8).params
    for bound_cells in (False, True):
        res = fit(0.8, EXACT, bound_cells)
        width = 30 / res.hyperparameters["bins"]["y"]
        np.testing.assert_allclose(res.params, reference, atol=0.2 * width)


def test_weighted_least_squares_matches_statsmodels_wls() -> None:
    rng = np.random.default_rng(0)
    X = sm.add_constant(rng.normal(size=(200, 3)))
    y = X @ [1.0, 2.0, -1.0, 0.5] + rng.normal(size=200)
    w = rng.uniform(0.1, 5.0, 200)
    fit = weighted_least_squares(X, y, w)
    np.testing.assert_allclose(fit.params, sm.WLS(y, X, weights=w).fit().params, rtol=1e-10)
    np.testing.assert_allclose(fit.stats["X'WX"], X.T @ (w[:, None] * X))
    w[:5] = -0.5  # Algorithm 1: a few negative weights, X'WX still positive definite
    normal = np.linalg.solve(X.T @ (w[:, None] * X), X.T @ (w * y))
    np.testing.assert_allclose(weighted_least_squares(X, y, w).params, normal, rtol=1e-10)


def test_weighted_least_squares_fails_as_an_output() -> None:
    X = sm.add_constant(np.arange(6.0))
    y = np.arange(6.0)
    indefinite = weighted_least_squares(X, y, np.array([5.0, -9.0, -9.0, -9.0, -9.0, 5.0]))
    assert indefinite.failed and "positive definite" in indefinite.reason and np.all(np.isnan(indefinite.params))
    assert weighted_least_squares(X, y, np.zeros(6)).failed
    singular = weighted_least_squares(np.column_stack([X, np.zeros(6)]), y, np.ones(6))
    assert singular.failed


def test_weighted_quantile_lp_equals_quantreg_on_the_expanded_data() -> None:
    """Integer weights are frequency weights: the LP's objective is QuantReg's on the repeated rows."""
    rng = np.random.default_rng(1)
    X = sm.add_constant(rng.uniform(0, 1, (80, 2)))
    y = X @ [1.0, 2.0, -1.0] + rng.standard_t(3, 80)
    w = rng.integers(0, 6, 80).astype(float)
    rows = np.repeat(np.arange(80), w.astype(int))
    for q in (0.1, 0.5, 0.9):
        ours = weighted_quantile_regression(X, y, w, q)
        theirs = sm.QuantReg(y[rows], X[rows]).fit(q=q, max_iter=5000).params
        assert ours.objective == pytest.approx(check_loss(y - X @ ours.params, q, w))
        assert ours.objective <= check_loss(y[rows] - X[rows] @ theirs, q) * (1 + 1e-9)
        assert ours.objective == pytest.approx(check_loss(y[rows] - X[rows] @ theirs, q), rel=1e-5)
    with pytest.raises(ValueError, match="non-negative"):
        weighted_quantile_regression(X, y, w - 1.0, 0.5)
    assert weighted_quantile_regression(X, y, np.zeros(80), 0.5).failed
    assert weighted_quantile_regression(np.column_stack([X, np.zeros(80)]), y, w, 0.5).failed


def test_integrated_check_loss_is_the_limit_of_many_points_per_interval() -> None:
    """The closed form equals the average check loss over a fine grid, and the fits agree."""
    a, b, q = np.array([0.0, 0.0, 0.0]), np.array([2.0, 2.0, 2.0]), 0.3
    f = np.array([-1.0, 0.7, 3.0])
    grid = a[:, None] + (np.arange(20_000) + 0.5) / 20_000 * (b - a)[:, None]
    brute = np.mean((grid - f[:, None]) * (q - (grid < f[:, None])), axis=1)
    np.testing.assert_allclose(integrated_check_loss(f, a, b, q), brute, rtol=1e-6)
    rng = np.random.default_rng(2)
    X = sm.add_constant(rng.uniform(0, 1, 30))
    centre = X @ [1.0, 3.0] + rng.normal(0, 0.5, 30)
    w = rng.uniform(1, 4, 30)
    fit = weighted_quantile_regression_binned(X, centre - 0.25, centre + 0.25, w, q)
    points = 100
    offsets = ((np.arange(points) + 0.5) / points - 0.5) * 0.5
    lp = weighted_quantile_regression(
        np.repeat(X, points, axis=0), (centre[:, None] + offsets).ravel(), np.repeat(w / points, points), q
    )
    np.testing.assert_allclose(fit.params, lp.params, atol=5e-3)


# --------------------------------------------------------------------------
# The results and the shortcuts
# --------------------------------------------------------------------------


def test_fits_are_post_processing_of_the_release(frame: pd.DataFrame) -> None:
    hist = noisy_histogram(frame, ["y", "x", "z", "g"], 1.0, bounds=BOUNDS, levels=LEVELS, random_state=9)
    with recording() as log:
        ols = hist.ols(FORMULA)
        med = hist.quantreg(FORMULA, 0.5)
    assert log == []  # no further noise drawn: nothing further spent
    assert ols.privacy == med.privacy == hist.privacy and ols.privacy.eps == 1.0
    assert ols.method == "histogram" and ols.nobs == len(frame) and med.estimator == "quantreg"
    assert ols.hyperparameters["threshold"] == "enhanced" and ols.hyperparameters["cells"] == hist.layout.n_cells
    assert dict(ols.declared_bounds) == BOUNDS
    json.dumps(ols.to_dict())
    json.dumps(med.to_dict())
    assert "Lei (2011)" in ols.summary().as_text() and "parametric bootstrap" in ols.summary().as_text()
    for res in (ols, med):  # the standard errors are post-processing too: no draw recorded above
        assert np.all(np.isfinite(res.bse)) and np.all(np.isfinite(res.conf_int().to_numpy()))
    assert ols.predict(frame.head(3)).shape == (3,)


def test_a_cut_off_that_leaves_the_fit_failed_falls_back_to_algorithm_1_prime() -> None:
    """n = 30, x ~ Beta(1, 4): enhanced thresholding zeroes both cells of x's upper bin (2 x 2 cells),
    so X'WX is singular; the fits are then those of the non-negative counts, on the same release."""
    rng = np.random.default_rng(0)
    x = rng.beta(1.0, 4.0, 30)
    data = pd.DataFrame({"y": np.clip(0.2 + 0.5 * x + rng.normal(0.0, 0.1, 30), 0.0, 1.0), "x": x})
    hist = noisy_histogram(data, ["y", "x"], 1.0, bounds={"y": (0, 1), "x": (0, 1)}, random_state=0)
    upper_x = hist.layout.cell_frame()["x"].to_numpy() > 0.5
    assert hist.bins == {"y": 2, "x": 2} and np.all(hist.weights("enhanced")[upper_x] == 0)
    for fit in (lambda **kw: hist.ols("y ~ x", **kw), lambda **kw: hist.quantreg("y ~ x", 0.5, **kw)):
        fallen, direct = fit(), fit(threshold="nonnegative")
        assert not fallen.failed and fallen.hyperparameters["threshold"] == "nonnegative"
        assert fallen.hyperparameters["threshold_fallback"].startswith("from 'enhanced'")
        np.testing.assert_array_equal(fallen.params, direct.params)
        np.testing.assert_array_equal(fallen.bse, direct.bse)
        assert "threshold_fallback" not in direct.hyperparameters


def test_a_failed_fit_is_an_output(frame: pd.DataFrame) -> None:
    """A = 8 at eps = 0.003: the cut-off 8 log(n) / eps = 21,350 is far above n, so no cell passes, and
    with this seed three of the 4 noisy counts are negative: the fallback to Algorithm 1' keeps one
    cell and fails too."""
    hist = noisy_histogram(frame, ["y", "x"], 0.003, bounds=BOUNDS, bins=2, threshold=8.0, random_state=9)
    assert hist.layout.n_cells == 4 and np.all(hist.weights() == 0) and np.sum(hist.counts > 0) == 1
    for res in (hist.ols("y ~ x"), hist.quantreg("y ~ x", 0.5)):
        assert res.failed and "no cell" in res.reason and "Algorithm 1'" in res.reason
        assert res.params.isna().all() and res.bse.isna().all()
        assert "FAILED" in res.summary().as_text()


def test_formulas_may_transform_the_histogram_columns(frame: pd.DataFrame) -> None:
    hist = noisy_histogram(frame, ["y", "x", "g"], EXACT, bounds=BOUNDS, levels=LEVELS, bins=30, random_state=11)
    data = binned(frame, hist)
    formula = "y ~ np.log1p(x) + I(x**2) + C(g):x"
    np.testing.assert_allclose(hist.ols(formula).params, smf.ols(formula, data).fit().params, rtol=1e-6)
    assert hist.quantreg("np.exp(y / 10) ~ x", 0.5).hyperparameters["response"] == "centre"
    with pytest.raises(ValueError, match="response='integrated'"):
        hist.quantreg("np.exp(y / 10) ~ x", 0.5, response="integrated")
    with pytest.raises(ValueError, match="'not_a_column' is not allowed"):
        hist.ols("y ~ x + not_a_column")
    with pytest.raises(ValueError, match="q must be"):
        hist.quantreg("y ~ x", 1.5)


def test_dp_ols_histogram_is_the_histogram_of_the_formulas_variables(frame: pd.DataFrame) -> None:
    """At the cells' centres (moment_share=0: noisy_histogram releases no means)."""
    kwargs = {"bounds": BOUNDS, "levels": LEVELS, "random_state": 12}
    direct = noisy_histogram(frame, ["y", "x", "z", "g"], 1.0, **kwargs)
    shortcut = dpstats.dp_ols(FORMULA, frame, eps=1.0, method="histogram", moment_share=0, **kwargs)
    np.testing.assert_allclose(shortcut.params, direct.ols(FORMULA).params, rtol=1e-12)
    np.testing.assert_allclose(shortcut.conf_int(), direct.ols(FORMULA).conf_int(), rtol=1e-12)  # same intervals
    np.testing.assert_allclose(shortcut.bse, direct.ols(FORMULA).bse, rtol=1e-12)
    assert shortcut.method == "histogram" and shortcut.privacy == direct.privacy
    assert shortcut.hyperparameters["bins"] == direct.bins
    with pytest.raises(ValueError, match="unknown option"):
        dpstats.dp_ols(FORMULA, frame, eps=1.0, method="histogram", K=5, **kwargs)
    with pytest.raises(ValueError, match="declared bounds for the numeric columns"):
        dpstats.dp_ols(
            "y ~ np.log(x)", frame, eps=1.0, method="histogram", bounds={"y": (-10, 35), "np.log(x)": (0, 3)}
        )


def test_dp_quantreg_histogram_shortcut(frame: pd.DataFrame) -> None:
    """dp_quantreg's default bins at the centres (moment_share=0) are the quantile rule's; with those,
    noisy_histogram gives the same fit."""
    kwargs = {"bounds": BOUNDS, "levels": LEVELS, "random_state": 13}
    shortcut = dpstats.dp_quantreg("y ~ x + C(g)", frame, 0.25, eps=1.0, method="histogram", moment_share=0, **kwargs)
    k = default_bins(len(frame), 2, 3, 1.0, "quantreg")
    assert shortcut.hyperparameters["bins"] == {"y": k, "x": k}
    direct = noisy_histogram(frame, ["y", "x", "g"], 1.0, bins=k, **kwargs).quantreg("y ~ x + C(g)", 0.25)
    np.testing.assert_allclose(shortcut.params, direct.params, rtol=1e-9)
    np.testing.assert_allclose(shortcut.conf_int(), direct.conf_int(), rtol=1e-9)  # the same intervals too
    assert shortcut.estimator == "quantreg" and shortcut.hyperparameters["q"] == 0.25


def test_noisy_histogram_is_exported_lazily() -> None:
    assert dpstats.noisy_histogram is noisy_histogram and "noisy_histogram" in dir(dpstats)

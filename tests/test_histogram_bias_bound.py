"""The perturbed histogram's binning bias bound (issue 45; dpstats/mechanisms/histogram/binning_bias.py).

1. The bound is post-processing: recomputed from the release, the public ``encode`` map and the declared
   ranges, with the rows dropped, it is the same; the same release gives the same bound.
2. It is at least the realized binning bias in the limit without noise (eps = 1e9, where the fit is least
   squares on the binned rows at their cells' means: tests/test_histogram.py's tolerances), against OLS on
   the rows: statsmodels' engel data at the bins the default layout takes at eps 0.5 to 5 and finer, and a
   simulated design whose response is binned coarsely next to its error.
3. It shrinks as the bins refine (second order at the cells' means), is first order at the cells' centres
   (Lei 2011, Theorem 3), and is 0 where no cell spreads a regressor.
4. Quantile fits name their binning bias without a bound (infinite): the module docstring of cell_fits.py,
   BINNING_BIAS; a 0/1 logit carries its bound (binary_binning_bias.py).

Deterministic (seeded) and fast: engel's 235 rows and 2,000 simulated rows.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from conftest import ENGEL_BOUNDS

import dpstats
from dpstats.frontend.formula import build_design
from dpstats.mechanisms.histogram import mechanism
from dpstats.mechanisms.histogram.binning_bias import EffectClass
from dpstats.mechanisms.histogram.cell_fits import BINNING_BIAS, BOUNDED_BINNING_BIAS, fit_on_cells
from dpstats.privacy.noise import make_rng
from dpstats.uncertainty.coverage import DESIGNS

ENGEL = "foodexp ~ income"
EXACT = 1e9


def _exact_fit(formula: str, data: pd.DataFrame, bounds: dict, bins, **options):
    """The histogram fit without noise and OLS on the rows."""
    res = dpstats.dp_ols(formula, data, eps=EXACT, bounds=bounds, method="histogram", bins=bins, random_state=0,
                         **options)  # fmt: skip
    return res, smf.ols(formula, data).fit().params[res.params.index]


def test_the_bound_is_recomputed_from_the_release_alone(engel: pd.DataFrame) -> None:
    """The mechanism's fit, then the same release refitted from its cells with the rows dropped: same bound."""
    design, _ = build_design(ENGEL, engel, ENGEL_BOUNDS, None)
    hist, cell_fit = mechanism._fit_variables(design, 1.0, make_rng(3), None, "enhanced", "ols", None, "auto",
                                              False, False, 0.25)  # fmt: skip
    variables = dataclasses.replace(design.variables, frame=None)  # no row is left to read
    names = list(hist.columns)
    refits = [
        fit_on_cells(
            hist,
            "ols",
            names,
            variables.response,
            variables.encode,
            design.term_names,
            design.y_name,
            None,
            None,
            effects=EffectClass.of_design(design),
        )
        for _ in range(2)
    ]
    assert cell_fit.bias_bound is not None and np.all(np.isfinite(cell_fit.bias_bound))
    for refit in refits:
        np.testing.assert_array_equal(refit.bias_bound, cell_fit.bias_bound)


def test_a_fit_carries_its_bound_and_the_same_release_the_same_one(engel: pd.DataFrame) -> None:
    first, second = (
        dpstats.dp_ols(ENGEL, engel, eps=5.0, bounds=ENGEL_BOUNDS, method="histogram", random_state=7) for _ in range(2)
    )
    assert first.bias_source == BOUNDED_BINNING_BIAS
    pd.testing.assert_series_equal(first.bias, second.bias)
    assert np.all((first.bias > 0) & np.isfinite(first.bias))


@pytest.mark.parametrize("bins", [3, 4, 8, 16])
def test_the_bound_covers_engel_binning_bias_without_noise(engel: pd.DataFrame, bins: int) -> None:
    """engel's default layouts at eps 0.5 to 5 have 2 to 8 bins an axis; the realized bias is 0.9% to 8% of the
    coefficients and the bound 3 to 260 times it."""
    res, ols = _exact_fit(ENGEL, engel, ENGEL_BOUNDS, bins)
    assert np.all(np.abs(res.params - ols) <= res.bias)


@pytest.mark.parametrize(("y_bins", "x_bins"), [(2, 20), (3, 5), (3, 20), (6, 10)])
def test_the_bound_covers_a_coarsely_binned_response(y_bins: int, x_bins: int) -> None:
    """y = 1 + x / 2 + N(0, 2^2) on 2,000 rows with the response in 2 to 6 bins over [-6, 12]: within a cell the
    response's bin cuts the error, which is what makes the bias; the bound holds with room (1.2 to 5 times)."""
    rng = np.random.default_rng(1)
    x = rng.uniform(0.0, 10.0, 2000)
    data = pd.DataFrame({"x": x, "y": 1.0 + 0.5 * x + rng.normal(0.0, 2.0, x.size)})
    res, ols = _exact_fit("y ~ x", data, {"x": (0.0, 10.0), "y": (-6.0, 12.0)}, {"y": y_bins, "x": x_bins})
    assert np.all(np.abs(res.params - ols) <= res.bias)


def test_the_bound_shrinks_as_the_bins_refine(engel: pd.DataFrame) -> None:
    """Second order at the cells' means: halving the bins' width divides it by about five (engel: 542, 98, 21 on
    the intercept)."""
    bounds = [_exact_fit(ENGEL, engel, ENGEL_BOUNDS, bins)[0].bias.to_numpy() for bins in (4, 8, 16)]
    assert np.all(bounds[1] < bounds[0] / 3.0) and np.all(bounds[2] < bounds[1] / 3.0)


def test_at_the_centres_the_bound_is_first_order_and_still_holds(engel: pd.DataFrame) -> None:
    """With moment_share=0 the fit is at the bins' centres (Algorithm 1): the rows' mean can be anywhere in a cell,
    so the bound is of the bins' width (Lei 2011, Theorem 3), above the bound at the means and the realized bias."""
    centres, ols = _exact_fit(ENGEL, engel, ENGEL_BOUNDS, 8, moment_share=0.0)
    means, _ = _exact_fit(ENGEL, engel, ENGEL_BOUNDS, 8)
    assert np.all(np.abs(centres.params - ols) <= centres.bias)
    assert np.all(centres.bias > 2.0 * means.bias)


def test_regressors_no_cell_spreads_leave_no_bias() -> None:
    """A factor and a whole-valued regressor sit at their cells' values, so only the response is binned: the
    fit at the cells' means is least squares on the rows, and the bound is 0."""
    rng = np.random.default_rng(2)
    data = pd.DataFrame({"x": rng.integers(0, 4, 3000).astype(float), "g": rng.choice(["a", "b"], 3000)})
    data["y"] = data["x"] + (data["g"] == "b") + rng.normal(0.0, 1.0, len(data))
    res = dpstats.dp_ols("y ~ x + g", data, eps=EXACT, bounds={"x": (0, 3), "y": (-4.0, 8.0)},
                         levels={"g": ["a", "b"]}, integers=["x"], method="histogram", random_state=0)  # fmt: skip
    assert np.all(res.bias == 0.0) and res.status == "ok"


def test_a_smooth_design_is_ok_with_a_bound_well_under_its_standard_errors() -> None:
    """dpstats/uncertainty/coverage.py's symmetric design at n = 1,000 and eps = 1: the bound is a fifth of a
    standard error (the realized bias about a sixth), so the fit is "ok"."""
    design = DESIGNS["symmetric"]
    data = design.draw(make_rng(1000), 1000)
    res = dpstats.dp_ols(design.formula, data, eps=1.0, bounds=design.bounds, method="histogram", random_state=0)
    assert res.status == "ok" and np.all(res.bias / res.bse < 0.5)


def test_quantile_fits_name_an_unbounded_bias_and_binary_fits_a_bounded_one(engel: pd.DataFrame) -> None:
    """A 0/1 logit's bound is tests/test_histogram_binary_bias_bound.py's."""
    median = dpstats.dp_quantreg(ENGEL, engel, q=0.5, eps=5.0, bounds=ENGEL_BOUNDS, method="histogram",
                                 random_state=0)  # fmt: skip
    logit = dpstats.dp_logit("I(foodexp > 500) ~ income", engel, eps=5.0, bounds=ENGEL_BOUNDS, method="histogram",
                             random_state=0)  # fmt: skip
    assert median.bias_source == BINNING_BIAS and np.all(np.isinf(median.bias)) and median.status == "biased"
    assert logit.bias_source == BOUNDED_BINNING_BIAS and np.all(np.isfinite(logit.bias))

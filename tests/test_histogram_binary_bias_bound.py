"""The histogram logit's and probit's binning bias bound (dpstats/mechanisms/histogram/binary_binning_bias.py).

1. The link's curves and the inequalities the bound uses, by brute force: the score factor, its curvature and the
   curvature's slope against dpstats/glm/links.py and finite differences; their suprema and the extremes over an
   interval against dense grids; the Jensen gap and the covariance of a cell against sampled within-cell
   distributions (deterministic inequalities: no false failures).
2. In the limit without noise (eps = 1e9) the bound is never below the realized binning bias against statsmodels'
   Logit and Probit on the rows: a simulated design at 3 to 16 bins an axis, AER's CPSSW8 with a binary outcome
   (earnings above the median) at 4 to 10 bins, and AER's SwissLabor participation at 3 bins and its default
   layout.
3. A binary fit at survey scale whose bound is small next to its standard errors is "ok"; a fractional response
   keeps an unbounded bias; the bound is recomputed from the release alone.
4. Privacy: a fuzz battery of neighbouring data frames (tests/fuzz_support.py) through the binary histogram
   fits: no warning, the same outcome on both neighbours, finite numbers or a failure.

Seeded and deterministic throughout.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from fuzz_support import BOUNDS, LEVELS, assert_finite_or_failed, assert_no_sentinel, neighbour_pair, outcome
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpstats
from dpstats.glm.links import get_link
from dpstats.mechanisms.histogram.binary_binning_bias import CURVES, FAR, curve_extremes, slope_extremes
from dpstats.mechanisms.histogram.cell_fits import BINNING_BIAS, BOUNDED_BINNING_BIAS
from dpstats.uncertainty.bias import critical_value

EXACT = 1e9
FITS = {"logit": dpstats.dp_logit, "probit": dpstats.dp_probit}
SIM = "y ~ x1 + x2 + C(g)"
SIM_BOUNDS = {"x1": (-3.0, 3.0), "x2": (0.0, 10.0), "y": (0.0, 1.0)}
SIM_LEVELS = {"g": ["a", "b", "c"]}
CPS = "high ~ education + age + C(gender) + C(region)"
CPS_BOUNDS = {"education": (0.0, 20.0), "age": (21.0, 64.0), "high": (0.0, 1.0)}
CPS_LEVELS = {"gender": ["male", "female"], "region": ["Northeast", "Midwest", "South", "West"]}
SWISS = "works ~ income + age + I(age**2) + education + youngkids + oldkids + C(foreign)"
SWISS_BOUNDS = {"works": (0, 1), "income": (6, 14), "age": (2, 6.5), "education": (0, 21), "youngkids": (0, 3),
                "oldkids": (0, 6)}  # fmt: skip
"""benchmarks/real_regressions.py's SwissLabor."""


def _aer(name: str) -> pd.DataFrame:
    from dpstats import r_interop

    ro = r_interop.start_r()
    ro.r(f'data("{name}", package = "AER")')
    return r_interop.r_to_pandas(ro.r[name])


@pytest.fixture(scope="module")
def cps() -> pd.DataFrame:
    data = _aer("CPSSW8")
    return data.assign(high=(data["earnings"] > data["earnings"].median()).astype(float))


@pytest.fixture(scope="module")
def swiss() -> pd.DataFrame:
    data = _aer("SwissLabor")
    return data.assign(works=(data["participation"] == "yes").astype(float))


def _simulated(seed: int, n: int, link: str) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x1 = np.clip(rng.normal(size=n), -3.0, 3.0)
    x2 = rng.uniform(0.0, 10.0, n)
    g = rng.choice(SIM_LEVELS["g"], n)
    eta = -0.5 + 0.8 * x1 - 0.15 * x2 + 0.5 * (g == "b") - 0.3 * (g == "c")
    y = (rng.random(n) < get_link(link).mean(eta)).astype(float)
    return pd.DataFrame({"y": y, "x1": x1, "x2": x2, "g": g})


def _exact(link: str, formula: str, data: pd.DataFrame, bounds: dict, levels: dict, response: str, bins=None):
    """The histogram fit without noise, and statsmodels' fit on the rows."""
    res = FITS[link](formula, data, eps=EXACT, bounds=bounds, levels=levels, integers=[response],
                     method="histogram", bins=bins, random_state=0)  # fmt: skip
    reference = getattr(smf, link)(formula, data).fit(disp=0).params[res.params.index]
    return res, reference


# --------------------------------------------------------------------------
# 1. The curves and the inequalities
# --------------------------------------------------------------------------

GRID = np.linspace(-FAR, FAR, 600_001)


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_the_curves_are_the_links_score_and_curvature(link: str) -> None:
    curve, of = CURVES[link], get_link(link)
    eta = np.linspace(-12.0, 12.0, 2001)
    ones, zeros = np.ones_like(eta), np.zeros_like(eta)
    np.testing.assert_allclose(curve.score(eta), of.score_factor(ones, eta), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(-curve.score(-eta), of.score_factor(zeros, eta), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(curve.kappa(eta), of.curvature(ones, eta), rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(curve.kappa(-eta), of.curvature(zeros, eta), rtol=1e-9, atol=1e-14)
    step, eta = 1e-4, eta[eta > -8.0]  # below, the probit's lambda + eta cancels: differences lose digits
    slope = (curve.kappa(eta + step) - curve.kappa(eta - step)) / (2 * step)
    np.testing.assert_allclose(curve.kappa_slope(eta), slope, atol=1e-7)
    score_slope = (curve.score(eta + step) - curve.score(eta - step)) / (2 * step)
    np.testing.assert_allclose(-curve.kappa(eta), score_slope, atol=1e-7)
    assert curve.score(np.array([np.inf]))[0] == 0.0 and curve.score(np.array([-np.inf]))[0] > 0


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_the_suprema_and_the_peaks_hold_on_a_grid(link: str) -> None:
    """``kappa_sup`` and ``slope_sup`` bound the curves on a grid of step 1e-4 over [-FAR, FAR], and are reached
    within 1e-6 (the logit's are exact: 1/4 and 1 / (6 sqrt 3)); beyond the peaks the curves fall."""
    curve = CURVES[link]
    kappa, slope = curve.kappa(GRID), np.abs(curve.kappa_slope(GRID))
    assert kappa.max() <= curve.kappa_sup and slope.max() <= curve.slope_sup
    assert slope.max() >= curve.slope_sup - 1e-6
    assert link == "probit" or kappa.max() >= curve.kappa_sup - 1e-9
    assert np.all(kappa > 0.0) and kappa[-1] < 1e-6


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_the_extremes_over_an_interval_are_the_grids(link: str) -> None:
    """500 random intervals (some beyond FAR): the smallest and largest kappa, the largest |kappa'| and the
    smallest and largest kappa' bound the grid's over the interval, and are within 1e-6 of them where the
    interval is inside [-FAR, FAR]."""
    curve, rng = CURVES[link], np.random.default_rng(5)
    ends = np.sort(rng.normal(0.0, 6.0, (500, 2)) * rng.choice([1.0, 1.0, 8.0], (500, 1)), axis=1)
    k_min, k_max, slope = curve_extremes(curve, ends[:, 0], ends[:, 1])
    s_min, s_max = slope_extremes(curve, ends[:, 0], ends[:, 1])
    for i, (lo, hi) in enumerate(ends):
        inside = (lo <= GRID) & (hi >= GRID)
        points = np.concatenate([GRID[inside], np.clip([lo, hi], -FAR, FAR)])
        kappa, slopes = curve.kappa(points), curve.kappa_slope(points)
        assert k_min[i] <= kappa.min() + 1e-12 and k_max[i] >= kappa.max() - 1e-12
        assert slope[i] >= np.abs(slopes).max() - 1e-12
        # far left the probit's kappa' cancels (lambda + eta): its rounding is about 1e-9
        assert s_min[i] <= slopes.min() + 1e-8 and s_max[i] >= slopes.max() - 1e-8
        if lo >= -FAR and hi <= FAR:
            assert k_max[i] <= kappa.max() + 1e-6 and slope[i] <= np.abs(slopes).max() + 1e-6
            assert s_min[i] >= slopes.min() - 1e-6 and s_max[i] <= slopes.max() + 1e-6


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_the_jensen_and_covariance_bounds_hold_on_sampled_cells(link: str) -> None:
    """4,000 sampled cells: a point ``eta_p`` and a within-cell distribution of ``eta`` over a range around it
    (uniform, two-point, skewed), a ``zeta`` that follows ``eta`` up to noise. With ``m = mean (eta - eta_p)^2``,
    ``L, k`` the largest and smallest kappa and ``M`` the largest |kappa'| over the cell's range:

    * ``J = mean g(eta) - g(eta_p)`` less ``-kappa(eta_p) (eta-bar - eta_p)`` lies in ``[min(0, -s) m / 2,
      max(0, -s') m / 2]`` for ``s, s'`` the largest and smallest kappa' (so within ``M m / 2``), and ``|J| <= L
      sqrt(m)``;
    * ``Cov(zeta, g)`` lies within ``sd(zeta) (L - k) / 2 sqrt(m)`` of ``-(L + k) / 2 Cov(zeta, eta)`` and
      ``|Cov(zeta, g)| <= sd(zeta) min(L sd(eta), range(g) / 2)``."""
    curve, rng = CURVES[link], np.random.default_rng(11)
    for _ in range(4000):
        centre, width = rng.normal(0.0, 3.0), rng.exponential(1.5)
        lo, hi = centre - width, centre + width
        kind = rng.integers(3)
        if kind == 0:
            eta = rng.uniform(lo, hi, 200)
        elif kind == 1:
            eta = rng.choice([lo, hi], 200, p=[0.3, 0.7])
        else:
            eta = lo + (hi - lo) * rng.beta(0.5, 3.0, 200)
        eta_p = rng.uniform(lo, hi)
        zeta = rng.normal() * eta + rng.normal(0.0, 0.3, eta.size) * width
        (k_min,), (k_max,), (slope,) = curve_extremes(curve, np.array([lo]), np.array([hi]))
        g, g_p = curve.score(eta), curve.score(np.array([eta_p]))[0]
        m = np.mean((eta - eta_p) ** 2)
        jensen = g.mean() - g_p
        kappa_p = curve.kappa(np.array([eta_p]))[0]
        (s_min,), (s_max,) = slope_extremes(curve, np.array([lo]), np.array([hi]))
        rest = jensen + kappa_p * (eta.mean() - eta_p)
        assert abs(rest) <= 0.5 * slope * m + 1e-12
        assert min(-s_max, 0.0) * 0.5 * m - 1e-12 <= rest <= max(-s_min, 0.0) * 0.5 * m + 1e-12
        assert abs(jensen) <= k_max * np.sqrt(m) + 1e-12
        covariance = np.cov(zeta, g, bias=True)[0, 1]
        linear = np.cov(zeta, eta, bias=True)[0, 1]
        sd_zeta, sd_eta = zeta.std(), eta.std()
        assert abs(covariance + 0.5 * (k_max + k_min) * linear) <= sd_zeta * 0.5 * (k_max - k_min) * np.sqrt(m) + 1e-12
        score_range = curve.score(np.array([lo]))[0] - curve.score(np.array([hi]))[0]
        assert abs(covariance) <= sd_zeta * min(k_max * sd_eta, 0.5 * score_range) + 1e-12


# --------------------------------------------------------------------------
# 2. The limit without noise: the bound covers the realized bias
# --------------------------------------------------------------------------


@pytest.mark.parametrize("link", ["logit", "probit"])
@pytest.mark.parametrize("bins", [3, 5, 8, 16])
def test_the_bound_covers_a_simulated_designs_binning_bias(link: str, bins: int) -> None:
    """20,000 rows of ``y ~ x1 + x2 + C(g)`` (x1 normal clipped to [-3, 3], x2 uniform on [0, 10]): the bound is
    at least the realized gap to statsmodels' fit on every coefficient (measured: 2.2 to 830 times it, the
    realized gap 0.5 to 13 standard errors from 16 bins to 3). The logit's is finite at every layout; the
    probit's score is unbounded, and at 3 and 5 bins its fixed point has none (infinite)."""
    data = _simulated(3, 20_000, link)
    res, reference = _exact(link, SIM, data, SIM_BOUNDS, SIM_LEVELS, "y", bins)
    assert res.bias_source == BOUNDED_BINNING_BIAS
    assert np.all(np.isfinite(res.bias)) or (link == "probit" and bins < 8)
    assert np.all(np.abs(res.params - reference) <= res.bias)


@pytest.mark.parametrize("link", ["logit", "probit"])
@pytest.mark.parametrize("bins", [4, 6, 10])
def test_the_bound_covers_cpssw8s_binning_bias(cps: pd.DataFrame, link: str, bins: int) -> None:
    """CPSSW8's earnings above the median on education, age, gender and region (61,395 rows): at the bins the
    default layout takes at eps 0.5 to 5 (4 to 10 an axis) the realized bias is 2.3 to 11 of the fit's standard
    errors, and the bound covers it (5 to 1,800 times it); finite but for the probit's at 4 bins."""
    res, reference = _exact(link, CPS, cps, CPS_BOUNDS, CPS_LEVELS, "high", bins)
    assert np.all(np.isfinite(res.bias)) or (link == "probit" and bins == 4)
    assert np.all(np.abs(res.params - reference) <= res.bias)


@pytest.mark.parametrize("link", ["logit", "probit"])
@pytest.mark.parametrize("bins", [3, None])
def test_the_bound_covers_swisslabors_binning_bias(swiss: pd.DataFrame, link: str, bins: int | None) -> None:
    """SwissLabor's participation (872 women, seven regressors, age and its square) at 3 bins an axis and at the
    default layout without noise (4 bins): the logit's bound is 44 to 600 times the realized gap (at most 1.3
    standard errors), 75 standard errors; the probit's is infinite (no fixed point)."""
    res, reference = _exact(link, SWISS, swiss, SWISS_BOUNDS, {"foreign": ["no", "yes"]}, "works", bins)
    assert res.bias_source == BOUNDED_BINNING_BIAS
    assert np.all(np.abs(res.params - reference) <= res.bias)


# --------------------------------------------------------------------------
# 3. Status, the fractional response, post-processing
# --------------------------------------------------------------------------


def test_a_survey_scale_fit_with_a_small_bound_is_ok(cps: pd.DataFrame) -> None:
    """CPSSW8's binary logit without noise at its default layout (111 bins an axis): the bound is under a tenth of
    a standard error (measured 0.07), so the fit is "ok"."""
    res, _ = _exact("logit", CPS, cps, CPS_BOUNDS, CPS_LEVELS, "high")
    assert res.status == "ok" and np.all(res.bias / res.bse < 0.2) and np.all(res.bias > 0)


def test_a_fractional_response_keeps_an_unbounded_bias() -> None:
    """A 0/1 column not declared whole-valued is binned as a fraction (binary_response.py): it varies within a
    cell, and the bound's identity does not hold there."""
    data = _simulated(4, 2000, "logit")
    res = dpstats.dp_logit(SIM, data, eps=5.0, bounds=SIM_BOUNDS, levels=SIM_LEVELS, method="histogram",
                           random_state=0)  # fmt: skip
    assert res.bias_source == BINNING_BIAS and np.all(np.isinf(res.bias)) and res.status == "biased"


def test_the_same_release_gives_the_same_bound() -> None:
    data = _simulated(6, 3000, "logit")
    call = {"eps": 5.0, "bounds": SIM_BOUNDS, "levels": SIM_LEVELS, "integers": ["y"], "method": "histogram",
            "random_state": 9}  # fmt: skip
    first, second = (dpstats.dp_logit(SIM, data, **call) for _ in range(2))
    assert first.bias_source == BOUNDED_BINNING_BIAS
    pd.testing.assert_series_equal(first.bias, second.bias)


def test_the_bound_is_recomputed_from_the_release_alone() -> None:
    """The mechanism's fit, then the same release refitted from its cells with the rows dropped: same bound."""
    from dpstats.frontend.formula import build_design
    from dpstats.mechanisms.histogram import mechanism
    from dpstats.mechanisms.histogram.cell_fits import fit_on_cells
    from dpstats.privacy.noise import make_rng

    data = _simulated(7, 3000, "logit")
    design, _ = build_design(SIM, data, SIM_BOUNDS, SIM_LEVELS, integers=["y"], binary=True)
    hist, cell_fit = mechanism._fit_variables(design, 2.0, make_rng(3), None, "enhanced", "logit", None, "auto",
                                              False, False, 0.25)  # fmt: skip
    variables = dataclasses.replace(design.variables, frame=None)
    refit = fit_on_cells(hist, "logit", list(hist.columns), variables.response, variables.encode, design.term_names,
                         design.y_name, None, None)  # fmt: skip
    assert cell_fit.bias_bound is not None and np.all(np.isfinite(cell_fit.bias_bound))
    np.testing.assert_array_equal(refit.bias_bound, cell_fit.bias_bound)


def test_a_bound_of_any_finite_size_widens_an_interval_without_raising() -> None:
    """The fuzz battery below found a probit's bound of 7e28 standard errors, beyond which the critical value's
    search could not resolve its bracket (dpstats/uncertainty/bias.py, FAR_BIAS): now ``t + z_{1 - alpha}``."""
    values = critical_value(np.array([7e28, 2e6, 1e6, 30.0]), 0.05)
    np.testing.assert_allclose(values[:2], np.array([7e28, 2e6]) + 1.6448536269514722, rtol=1e-15)
    np.testing.assert_allclose(values[2:], np.array([1e6, 30.0]) + 1.6448536269514722, atol=1e-8)


# --------------------------------------------------------------------------
# 4. Privacy: one bad row never decides the outcome
# --------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("link", ["logit", "probit"])
@pytest.mark.usefixtures("few_replicates")
def test_one_bad_row_never_decides_a_binary_fits_outcome(link: str) -> None:
    """tests/test_fuzz_mechanisms.py's battery for the histogram's binary fits (40 derandomized examples a link:
    false-failure rate 0): both neighbours return with no warning or raise alike, a result is finite or failed
    (its bias bound may be infinite: that is a released value, not an error), no sentinel leaks."""

    @settings(max_examples=40, derandomize=True, database=None, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
    @given(pair=neighbour_pair(min_n=2, max_n=24), eps=st.sampled_from((1.0, 1e3, 1e9)))
    def check(pair, eps: float) -> None:
        frame, other = pair
        kwargs = {"eps": eps, "bounds": BOUNDS, "levels": LEVELS, "method": "histogram", "bins": 3,
                  "random_state": len(frame)}  # fmt: skip
        first, res = outcome(lambda: FITS[link]("I(y > 0) ~ x + C(g)", frame, **kwargs))
        second, res_other = outcome(lambda: FITS[link]("I(y > 0) ~ x + C(g)", other, **kwargs))
        assert first.observable() == second.observable(), (first.observable(), second.observable())
        assert first.warnings == ()
        for result, fitted in ((first, res), (second, res_other)):
            assert_no_sentinel(result)
            assert_finite_or_failed(fitted)

    check()

"""The perturbed histogram's logit and probit (Lei 2011, section 3.1): ``dp_logit(..., method="histogram")``.

1. The response's cells (dpstats/mechanisms/histogram/binary_response.py): a
   comparison or a declared whole-valued response has two cells, 0 and 1; a
   fraction gets bins and a cell at each bound; a design from arrays too.
2. Limits at eps = 1e9 on statsmodels' fair data: with bins that hold one of
   fair's values each, the fit is statsmodels' Logit and Probit (1e-5) and its
   standard errors their robust HC0 ones; with the default bins the estimand
   is the MLE on the cells at their rows' means, whose gap to Logit (the
   rows' spread inside a cell) is within 2% or a quarter of Logit's SE.
3. Coverage of the true coefficients on seeded simulated logits.
4. Privacy: the counts' release is the family's (tests/test_histogram_privacy.py
   audits it); the replay audit runs here on a logit fit too, on corner pairs
   and formula pairs with a comparison response.
5. Failure is an output (separated cells), and the release names its binning bias.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import special

import dpstats
from dpstats.audit import NeighbourPair, corner_pairs, replay
from dpstats.frontend.formula import build_design
from dpstats.mechanisms import PrivacyRequest
from dpstats.mechanisms.histogram import mechanism as mech
from dpstats.mechanisms.histogram.binary_response import is_binary
from dpstats.mechanisms.histogram.cell_fits import BOUNDED_BINNING_BIAS
from dpstats.privacy.noise import make_rng
from dpstats.uncertainty.intervals import confidence_intervals

FAIR = "I(affairs > 0) ~ rate_marriage + age + yrs_married + children + religious + educ"
FAIR_BOUNDS = {
    "rate_marriage": (1, 5), "age": (17.5, 42), "yrs_married": (0.5, 23), "children": (0, 5.5),
    "religious": (1, 4), "educ": (9, 20),
}  # fmt: skip
FAIR_INTEGERS = ["rate_marriage", "religious", "educ"]
FAIR_VALUE_BINS = {"rate_marriage": 5, "age": 6, "yrs_married": 12, "children": 6, "religious": 4, "educ": 6}
"""Bins holding one of fair's values each: age 17.5, 22, ..., 42; yrs_married 0.5, 2.5, 6, 9, 13, 16.5, 23;
children 0-4 and 5.5; educ 9, 12, 14, 16, 17, 20; rate_marriage 1-5; religious 1-4."""
TRUTH = np.array([-2.0, 0.5, -0.5, 0.5])
"""Simulated logits: a base rate of about 17%."""
SIM = "I(y > 0) ~ x1 + x2 + x3"
SIM_BOUNDS = {"x1": (-3.0, 3.0), "x2": (-3.0, 3.0), "x3": (0.0, 1.0), "y": (0.0, 1.0)}
PRIVACY = PrivacyRequest(eps=1.0)


@pytest.fixture(scope="module")
def fair() -> pd.DataFrame:
    return sm.datasets.fair.load_pandas().data.assign(any=lambda d: (d.affairs > 0).astype(float))


def _simulated(seed: int, n: int) -> pd.DataFrame:
    rng = make_rng(seed)
    x1, x2 = (np.clip(rng.normal(size=n), -3.0, 3.0) for _ in range(2))
    x3 = (rng.uniform(size=n) < 0.5).astype(float)
    eta = TRUTH[0] + TRUTH[1] * x1 + TRUTH[2] * x2 + TRUTH[3] * x3
    return pd.DataFrame({"y": (rng.uniform(size=n) < special.expit(eta)).astype(float), "x1": x1, "x2": x2, "x3": x3})


def _sim_fit(data: pd.DataFrame, eps: float, seed: int, **options):
    return dpstats.dp_logit(SIM, data, eps=eps, bounds=SIM_BOUNDS, method="histogram", integers=["x3"],
                            random_state=seed, margins_share=0, **options)  # fmt: skip


# --------------------------------------------------------------------------
# 1. The response's cells
# --------------------------------------------------------------------------


def test_a_comparison_response_has_two_cells_and_a_fraction_bins_with_bound_cells() -> None:
    data = _simulated(0, 500).assign(share=lambda d: d.x1.abs() / 3.0)
    comparison = _sim_fit(data, 5.0, 0)
    assert comparison.hyperparameters["bins"]["I(y > 0)"] == 2  # the two whole numbers 0 and 1
    fraction = dpstats.dp_logit("share ~ x1 + x2 + x3", data, eps=5.0, bounds=SIM_BOUNDS, method="histogram",
                                integers=["x3"], random_state=0, margins_share=0)  # fmt: skip
    assert fraction.hyperparameters["bins"]["share"] >= 2 and "share" in fraction.hyperparameters["cell_means"]
    design = build_design("share ~ x1 + x2 + x3", data, SIM_BOUNDS, None, binary=True)[0]
    assert not is_binary(design.variables, "share") and is_binary(design.variables, "I(y > 0)")
    assert is_binary(None, "I(I(x == 1))") and not is_binary(None, "I(x + 1)") and not is_binary(None, "y[")
    with_bins = _sim_fit(data, 5.0, 0, bins=3)  # a number of bins is for the regressors: 0/1 keeps two cells
    assert with_bins.hyperparameters["bins"] == {"x1": 3, "x2": 3, "x3": 3, "I(y > 0)": 2}


def test_a_design_from_arrays_bins_its_response_with_a_cell_at_each_bound() -> None:
    pair = corner_pairs(6, [(0.0, 1.0)], (0.0, 1.0), bases="lowest")[3]
    release = mech.fit(pair.d, PRIVACY, make_rng(0), link="logit", bins=2)
    assert release.hyperparameters["bins"] == {"y": 2, "x1": 2}
    assert release.hyperparameters["cells"] == (2 + 2) * 2  # y: two bins and the two bounds' cells; x: two bins


def test_a_link_takes_no_quantile_and_must_be_known() -> None:
    design = build_design(SIM, _simulated(0, 50), SIM_BOUNDS, None, binary=True)[0]
    with pytest.raises(ValueError, match="quantile"):
        mech.fit(design, PRIVACY, make_rng(0), link="logit", q=0.5)
    with pytest.raises(ValueError, match="link"):
        mech.fit(design, PRIVACY, make_rng(0), link="cloglog")


# --------------------------------------------------------------------------
# 2. Limits at eps = 1e9
# --------------------------------------------------------------------------


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_limit_with_one_value_a_cell_is_statsmodels_fit_and_robust_se(fair: pd.DataFrame, link: str) -> None:
    """Every cell holds one value of every variable, so the weighted MLE on the cells is the MLE on the rows; the
    delta-method covariance is then the sandwich on the rows (HC0), up to the bootstrap's 1,000 draws (the SEs'
    relative error about 2.2%: the 12% tolerance is over 5 sd)."""
    call, model = (dpstats.dp_logit, smf.logit) if link == "logit" else (dpstats.dp_probit, smf.probit)
    res = call(FAIR, fair, eps=1e9, bounds=FAIR_BOUNDS, method="histogram", integers=FAIR_INTEGERS, random_state=0,
               margins_share=0, bins=FAIR_VALUE_BINS)  # fmt: skip
    ref = model("any ~" + FAIR.split("~")[1], fair).fit(disp=0, cov_type="HC0")
    np.testing.assert_allclose(np.asarray(res.params), ref.params.to_numpy(), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(res.bse), ref.bse.to_numpy(), rtol=0.12)


def test_limit_at_the_default_bins_is_the_mle_at_the_cells_means(fair: pd.DataFrame) -> None:
    """The estimand gap: with the default bins, yrs_married's 0.5 and 2.5 share a cell, placed at its rows' mean;
    every coefficient is within 2% of Logit's or a quarter of its SE (measured: children 24% = 0.08 SE, educ 4%
    = 0.03 SE, age 2.3% = 0.13 SE; the others within 1.6%)."""
    res = dpstats.dp_logit(FAIR, fair, eps=1e9, bounds=FAIR_BOUNDS, method="histogram", integers=FAIR_INTEGERS,
                           random_state=0, margins_share=0)  # fmt: skip
    ref = smf.logit("any ~" + FAIR.split("~")[1], fair).fit(disp=0)
    gap = np.abs(np.asarray(res.params) - ref.params.to_numpy())
    assert np.all((gap <= 0.02 * np.abs(ref.params.to_numpy())) | (gap <= 0.25 * ref.bse.to_numpy()))
    assert res.bias_source == BOUNDED_BINNING_BIAS and res.hyperparameters["bins"]["I(affairs > 0)"] == 2
    assert np.all(gap <= np.asarray(res.bias))  # the binning bias bound covers it (binary_binning_bias.py)


# --------------------------------------------------------------------------
# 3. Coverage
# --------------------------------------------------------------------------


def test_coverage_of_the_true_coefficients_on_simulated_logits() -> None:
    """120 seeded logits (n = 2,000, eps = 2, base rate about 17%): the 480 intervals cover in [0.91, 0.985]
    (at a true 0.95 the pooled rate's sd is about 1%: 4 sd below and 3.5 above, a false failure under 1e-3) and
    every coefficient's 120 in at least 0.85 (5 sd below 0.95)."""
    covered = []
    for seed in range(120):
        res = _sim_fit(_simulated(seed, 2000), 2.0, 10_000 + seed)
        assert not res.failed
        lower, upper = confidence_intervals(np.asarray(res.params), res.cov_params(), res.replicates, 0.05)
        covered.append((lower <= TRUTH) & (upper >= TRUTH))
    rate = np.mean(covered, axis=0)
    assert 0.91 <= rate.mean() <= 0.985 and rate.min() >= 0.85, rate


# --------------------------------------------------------------------------
# 4. Privacy: the replay audit of a logit fit
# --------------------------------------------------------------------------


def _comparison_pairs() -> tuple[NeighbourPair, ...]:
    """Neighbours through the formula front end: the last row moves across the response's 0 and 1, bins, levels."""
    base = pd.DataFrame({"y": [1.0, 9.0, 5.0, 2.0, 7.0, 3.0], "x": [0.5, 9.5, 5.0, 2.0, 8.0, 4.0]})
    base["g"] = ["a", "b", "c", "a", "b", "c"]
    moves = [(1.0, 1.0, "a"), (9.9, 9.9, "c"), (1.0, 9.0, "b"), (20.0, -3.0, "c")]
    pairs = []
    for i, old in enumerate(moves):
        for new in moves[i + 1 :]:
            d, d_prime = base.copy(), base.copy()
            d.loc[5, ["y", "x", "g"]] = list(old)
            d_prime.loc[5, ["y", "x", "g"]] = list(new)
            designs = [
                build_design("I(y > 5) ~ x + C(g)", f, {"y": (0.0, 10.0), "x": (0.0, 10.0)}, {"g": ["a", "b", "c"]},
                             binary=True)[0]
                for f in (d, d_prime)
            ]  # fmt: skip
            pairs.append(NeighbourPair(f"last row {old} -> {new}", *designs))
    return (*pairs, *(p.swapped() for p in pairs))


@pytest.mark.usefixtures("few_replicates")
@pytest.mark.parametrize("link", ["logit", "probit"])
def test_replay_of_a_binary_fit_is_sound_and_tight(link: str) -> None:
    """The counts (L1 sensitivity 2) and the within-cell sums (L1 sensitivity m, the axes with means) are the only
    private steps, the worst pair reaches the counts' bound, and with them forced D and D' give the same fit and
    intervals: the binary MLE and its delta method are post-processing."""
    corners = corner_pairs(10, [(0.0, 1.0)], (0.0, 1.0), bases="lowest")
    for pairs, options in ((corners, {"bins": 2}), (_comparison_pairs(), {"bins": 3})):
        report = replay(mech.fit, pairs, PRIVACY, seeds=range(1), options={"link": link, **options})
        report.assert_sound(min_ratio=0.9, names=["histogram counts"])
        assert set(report.releases) == {"histogram counts", "histogram within-cell means"}
        assert report.releases["histogram counts"].max_ratio == pytest.approx(1.0)


# --------------------------------------------------------------------------
# 5. Failure is an output
# --------------------------------------------------------------------------


def test_separated_cells_fail_as_an_output() -> None:
    """y = 1 exactly where x > 0: the cells separate the responses, the MLE runs off, and the release says so."""
    x = np.linspace(-3.0, 3.0, 400)
    data = pd.DataFrame({"y": (x > 0).astype(float), "x1": x})
    res = dpstats.dp_logit("I(y > 0) ~ x1", data, eps=1e9, bounds=SIM_BOUNDS, method="histogram", random_state=0,
                           margins_share=0, bins=2)  # fmt: skip
    assert res.failed and "maximiser" in res.reason and np.all(np.isnan(np.asarray(res.params)))
    assert "threshold_fallback" not in res.hyperparameters  # the fallback to Algorithm 1' failed too

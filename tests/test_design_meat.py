"""Design-based meats (dpstats/uncertainty/design_meat.py): sensitivities by brute force, the noise correction,
and dp_ols / dp_logit with ``cluster=`` and ``strata=`` against R survey's svyglm at eps = 1e9."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as t_dist

import dpstats
from dpstats.design.survey import PSUs
from dpstats.frontend.formula import build_design
from dpstats.frontend.survey import SurveyDeclaration
from dpstats.uncertainty import design_meat
from dpstats.uncertainty.design_meat import ScoreBound

RSCRIPT = shutil.which("Rscript")
REQUIRE_R = os.environ.get("CI", "").lower() == "true" or os.environ.get("DPSTATS_REQUIRE_R") == "1"


def _corners(k: int, largest: float) -> np.ndarray:
    """Every score vector with entries in {-largest, 0, largest}: the extremes of a box."""
    grid = np.array(np.meshgrid(*[[-largest, 0.0, largest]] * k)).reshape(k, -1).T
    return grid


def test_the_rows_meat_sensitivity_holds_for_every_pair_of_extreme_scores():
    k, largest = 3, 2.0
    scores = _corners(k, largest)
    bound = ScoreBound(l1=k * largest, l2sq=k * largest**2)
    upper = np.triu_indices(k)
    entries = np.array([np.outer(s, s)[upper] for s in scores])
    moved = max(np.abs(entries - row).sum(axis=1).max() for row in entries)
    assert moved <= design_meat.row_meat_sensitivity(bound) + 1e-12
    assert moved >= 0.5 * design_meat.row_meat_sensitivity(bound)  # not loose by more than 2x


def test_the_psu_totals_move_by_at_most_twice_a_rows_l1_bound_when_a_row_changes_psu_and_values():
    rng = np.random.default_rng(0)
    k, largest, count = 2, 1.5, 5
    bound = ScoreBound(l1=k * largest, l2sq=k * largest**2)
    scores = rng.uniform(-largest, largest, (40, k))
    codes = rng.integers(0, count, 40)
    base = np.zeros((count, k))
    np.add.at(base, codes, scores)
    for new_score in _corners(k, largest):
        for new_psu in range(count):
            moved = base.copy()
            moved[codes[0]] -= scores[0]
            moved[new_psu] += new_score
            assert np.abs(moved - base).sum() <= design_meat.psu_sensitivity(bound) + 1e-12


def test_the_stratified_meat_is_svyrecvars_formula_and_the_noise_correction_removes_the_noise_on_average():
    """Seeded: 4,000 releases of 12 PSU totals in 3 strata; the corrected meat's mean is within 5 of its
    Monte Carlo standard errors of the exact meat (a false failure below 1e-5 per entry)."""
    rng = np.random.default_rng(1)
    totals = rng.normal(0, 3, (12, 2))
    stratum = np.repeat(np.arange(3), 4)
    exact = design_meat.stratified_meat(totals, stratum)
    by_hand = sum(4 / 3 * np.cov(totals[stratum == h].T, ddof=0) * 4 for h in range(3))
    np.testing.assert_allclose(exact, by_hand, rtol=1e-12)
    scale = 2.0
    draws = np.array([
        design_meat.stratified_meat(totals + rng.laplace(0, scale, totals.shape), stratum, 2 * scale**2)
        for _ in range(4000)
    ])  # fmt: skip
    error = np.abs(draws.mean(axis=0) - exact) / (draws.std(axis=0) / np.sqrt(len(draws)))
    assert error.max() < 5


def test_a_stratum_with_one_psu_contributes_nothing():
    totals = np.array([[1.0, 2.0], [3.0, -1.0], [5.0, 5.0]])
    alone = design_meat.stratified_meat(totals, np.array([0, 0, 1]))
    pair = design_meat.stratified_meat(totals[:2], np.array([0, 0]))
    np.testing.assert_allclose(alone, pair)


def test_psus_nest_clusters_in_strata_and_put_undeclared_levels_in_the_first():
    data = pd.DataFrame({"x": [0.1, 0.2, 0.3, 0.4, 0.5], "y": [1.0, 0, 1, 0, 1], "wt": [1.0, 2, 3, 4, 5],
                         "psu": [1, 2, 1, 2, 99], "st": ["a", "a", "b", "b", None]})  # fmt: skip
    design, _ = build_design(
        "y ~ x", data, {"x": (0, 1), "y": (0, 1), "wt": (0, 5)}, {"psu": [1, 2], "st": ["a", "b"]},
        survey=SurveyDeclaration("wt", "psu", "st"),
    )  # fmt: skip
    assert isinstance(design.psus, PSUs)
    np.testing.assert_array_equal(design.psus.codes, [0, 1, 2, 3, 0])
    np.testing.assert_array_equal(design.psus.stratum, [0, 0, 1, 1])


def test_declared_psu_pairs_code_each_rows_psu_and_an_undeclared_pair_is_the_first():
    data = pd.DataFrame({"x": [0.1, 0.2, 0.3, 0.4, 0.5], "y": [1.0, 0, 1, 0, 1], "wt": [1.0, 2, 3, 4, 5],
                         "psu": [1, 2, 1, 3, [9]], "st": ["a", "a", "b", "b", "b"]})  # fmt: skip
    levels = {"psu": [["a", 1], ["a", 2], ["b", 1], ["b", 2], ["b", 3]], "st": ["a", "b"]}  # lists, as from R
    design, _ = build_design("y ~ x", data, {"x": (0, 1), "y": (0, 1), "wt": (0, 5)}, levels,
                             survey=SurveyDeclaration("wt", "psu", "st"))  # fmt: skip
    np.testing.assert_array_equal(design.psus.codes, [0, 1, 2, 4, 0])
    np.testing.assert_array_equal(design.psus.stratum, [0, 0, 1, 1, 1])
    with pytest.raises(ValueError, match="stratum"):
        build_design("y ~ x", data, {"x": (0, 1), "y": (0, 1), "wt": (0, 5)}, {"psu": [("c", 1)], "st": ["a"]},
                     survey=SurveyDeclaration("wt", "psu", "st"))  # fmt: skip


def test_cluster_and_strata_are_checked_before_any_data_are_read():
    with pytest.raises(ValueError, match="weights="):
        dpstats.dp_ols("y ~ x", None, eps=1.0, cluster="psu")
    with pytest.raises(ValueError, match="different columns"):
        dpstats.dp_ols("y ~ x", None, eps=1.0, weights="wt", strata="wt")
    with pytest.raises(TypeError, match="cluster"):
        dpstats.dp_logit("y ~ x", None, eps=1.0, weights="wt", cluster=3)


def _survey_sample(seed: int = 0) -> pd.DataFrame:
    """A stratified two-stage sample: 10 strata of 4 PSUs, 60 rows each, PSU effects, unequal weights."""
    rng = np.random.default_rng(seed)
    rows = []
    for h in range(10):
        for c in range(4):
            effect = rng.normal(0, 0.5)
            x = rng.uniform(0, 1, 60)
            p = 1 / (1 + np.exp(-(-0.5 + 1.5 * x + effect)))
            v = 2 * x + effect + 0.1 * h + rng.normal(0, 1, 60)
            rows.append(pd.DataFrame({"st": h, "psu": c, "x": x, "wt": rng.uniform(1, 5, 60),
                                      "y": (rng.uniform(size=60) < p).astype(int), "v": v}))  # fmt: skip
    return pd.concat(rows, ignore_index=True)


R_SVYGLM = """
suppressMessages(library(survey))
d <- read.csv(Sys.getenv("SURVEY_CSV"))
des <- svydesign(ids = ~psu, strata = ~st, weights = ~wt, data = d, nest = TRUE)
lin <- svyglm(v ~ x, design = des)
logit <- svyglm(y ~ x, design = des, family = quasibinomial())
strat <- svydesign(ids = ~1, strata = ~st, weights = ~wt, data = d)
lin_st <- svyglm(v ~ x, design = strat)
logit_st <- svyglm(y ~ x, design = strat, family = quasibinomial())
se <- function(m) unname(sqrt(diag(vcov(m))))
out <- list(ols = list(coef = unname(coef(lin)), se = se(lin)),
            logit = list(coef = unname(coef(logit)), se = se(logit)),
            ols_strata = list(coef = unname(coef(lin_st)), se = se(lin_st)),
            logit_strata = list(coef = unname(coef(logit_st)), se = se(logit_st)))
cat("RESULT", jsonlite::toJSON(out, digits = NA), "\\n")
"""


def test_design_based_standard_errors_equal_svyglms_at_a_huge_eps(tmp_path: Path):
    if RSCRIPT is None or subprocess.run([RSCRIPT, "-e", "library(survey)"], capture_output=True).returncode:
        message = "R's survey package is not available: bash scripts/setup.sh installs it"
        pytest.fail(message) if REQUIRE_R else pytest.skip(message)
    data = _survey_sample()
    data = data[~((data.st < 5) & (data.psu == 3))].reset_index(drop=True)  # strata of 3 PSUs and of 4
    csv = tmp_path / "survey.csv"
    data.to_csv(csv, index=False)
    done = subprocess.run([RSCRIPT, "-e", R_SVYGLM], env={**os.environ, "SURVEY_CSV": str(csv)},
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    ref = json.loads(done.stdout.split("RESULT", 1)[1])
    psus = sorted(set(zip(data.st, data.psu, strict=True)))  # the design's PSUs, as a survey publishes them
    design = dict(weights="wt", cluster="psu", strata="st", levels={"psu": psus, "st": list(range(10))})
    bounds = {"x": (0, 1), "v": (-8, 10), "wt": (0, 5)}
    ols = dpstats.dp_ols("v ~ x", data, eps=1e9, bounds=bounds, method="noisystats", random_state=0, **design)
    logit = dpstats.dp_logit("y ~ x", data, eps=1e9, bounds=bounds, method="newton", random_state=0, **design)
    strata = dict(weights="wt", strata="st", levels={"st": list(range(10))})  # the rows are the PSUs
    ols_st = dpstats.dp_ols("v ~ x", data, eps=1e9, bounds=bounds, method="noisystats", random_state=0, **strata)
    logit_st = dpstats.dp_logit("y ~ x", data, eps=1e9, bounds=bounds, method="newton", random_state=0, **strata)
    fits = ((ols, "ols"), (logit, "logit"), (ols_st, "ols_strata"), (logit_st, "logit_strata"))
    for res, name in fits:
        np.testing.assert_allclose(res.params.to_numpy(), ref[name]["coef"], rtol=1e-6)
        np.testing.assert_allclose(res.bse.to_numpy(), ref[name]["se"], rtol=1e-4)
        assert "PSU" in res.se_note


@pytest.mark.parametrize("fit", ["ols", "logit"])
def test_design_intervals_are_students_t_on_the_psus_less_the_strata_at_a_huge_eps(fit):
    """At eps 1e9 the meat carries no noise, so each interval is the estimate plus or minus t(0.975, PSUs -
    strata) standard errors: 40 PSUs in 10 strata, 30 degrees of freedom (t = 2.04 against the normal's 1.96).
    The percentiles of 1,000 to 2,000 draws put the ratio within 6% with probability above 0.999."""
    data = _survey_sample()
    design = dict(weights="wt", cluster="psu", strata="st", levels={"psu": list(range(4)), "st": list(range(10))})
    bounds = {"x": (0, 1), "v": (-8, 10), "wt": (0, 5)}
    if fit == "ols":
        res = dpstats.dp_ols("v ~ x", data, eps=1e9, bounds=bounds, method="noisystats", random_state=1, **design)
    else:
        res = dpstats.dp_logit("y ~ x", data, eps=1e9, bounds=bounds, method="newton", random_state=1, **design)
    low, high = res.conf_int().to_numpy().T
    ratio = (high - low) / 2 / res.bse.to_numpy()
    np.testing.assert_allclose(ratio, t_dist.ppf(0.975, 30), rtol=0.06)


def test_rows_within_strata_move_each_release_by_at_most_its_sensitivity():
    """Rows as PSUs within strata: a row whose score moves between extreme corners and whose stratum changes
    moves the stacked outer products, score totals and counts by at most their declared L1 sensitivities."""
    k, largest = 2, 1.5
    bound = ScoreBound(l1=k * largest, l2sq=k * largest**2)
    rng = np.random.default_rng(7)
    scores = rng.uniform(-largest, largest, (30, k))
    strata = rng.integers(0, 3, 30)

    def exact_releases(scores: np.ndarray, strata: np.ndarray) -> dict[str, tuple[np.ndarray, float]]:
        seen = {}

        def capture(rng, value, sensitivity, eps, name):
            seen[name] = (np.asarray(value, dtype=float), sensitivity)
            return value

        with mock.patch.object(design_meat, "laplace_mechanism", capture):
            design_meat.release_meat(rng, scores, bound, 1.0, PSUs(strata, np.arange(3), None, "st"))
        return seen

    base = exact_releases(scores, strata)
    assert set(base) == set(design_meat.STRATUM_PARTS)
    for corner in _corners(k, largest):
        for stratum in range(3):
            moved_scores, moved_strata = scores.copy(), strata.copy()
            moved_scores[0], moved_strata[0] = corner, stratum
            for name, (value, sensitivity) in exact_releases(moved_scores, moved_strata).items():
                assert np.abs(value - base[name][0]).sum() <= sensitivity + 1e-12

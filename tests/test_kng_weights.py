"""Survey weights in KNG (dpstats/mechanisms/kng/mechanism.py, weighted_inference.py): the weighted gradients'
sensitivity by brute force over the box's corners with weights 0 and W, the weighted quantile target, the limits
at eps = 1e9 (statsmodels' WLS and its HC0 sandwich; R's ``quantreg::rq(weights=)`` on R survey's apistrat),
and a call whose weights are all 0.

Every fit is seeded, so nothing here fails at random; the tolerances state what they allow. Without R the
apistrat test skips, except under CI (``CI=true``) or ``DPSTATS_REQUIRE_R=1``, where it fails.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import dpstats
from dpstats.frontend.formula import build_design
from dpstats.frontend.survey import declare_survey
from dpstats.mechanisms import PrivacyRequest, weighted_methods
from dpstats.mechanisms.kng import mechanism as kng
from dpstats.mechanisms.kng import quantile_lines
from dpstats.mechanisms.kng.sampler import k_norm

RSCRIPT = shutil.which("Rscript")
REQUIRE_R = os.environ.get("CI", "").lower() == "true" or os.environ.get("DPSTATS_REQUIRE_R") == "1"
W = 7.5


def _corner_rows(d: int) -> list[tuple[np.ndarray, float]]:
    """Every (x, v) at the corners of the scaled box: an intercept and d - 1 slopes in [-1, 1], v in [-1, 1]."""
    return [(np.array([1.0, *u]), v) for u in itertools.product((-1.0, 1.0), repeat=d - 1) for v in (-1.0, 1.0)]


def _largest_move(terms: list[np.ndarray]) -> float:
    """The largest linf distance between two weighted row terms (each row at weight 0 or W)."""
    weighted = [w * g for g in terms for w in (0.0, W)]
    return max(float(k_norm(a - b, "linf")) for a, b in itertools.product(weighted, repeat=2))


@pytest.mark.parametrize("d", [2, 3])
def test_least_squares_sensitivity_times_w_holds_and_is_attained_at_the_corners(d: int) -> None:
    """Row terms ``2 w (x'phi - v) x`` at phi on the vertices of ``||phi||_1 <= B`` and the centre."""
    B = 1.5
    bounds = np.array([[1.0, 1.0]] + [[-1.0, 1.0]] * (d - 1))
    claimed = W * kng.least_squares_sensitivity(B, "linf", bounds)
    phis = [np.zeros(d), *(s * B * np.eye(d)[j] for j in range(d) for s in (-1, 1))]
    worst = max(_largest_move([2.0 * (x @ phi - v) * x for x, v in _corner_rows(d)]) for phi in phis)
    assert worst <= claimed * (1 + 1e-12)
    assert worst == pytest.approx(claimed)


@pytest.mark.parametrize(("d", "tau"), [(2, 0.5), (3, 0.5), (2, 0.8), (3, 0.25)])
def test_quantile_sensitivity_times_w_holds_and_is_attained_at_the_corners(d: int, tau: float) -> None:
    """Row terms ``w x (1{v <= x'phi} - tau)``: both signs at every corner."""
    bounds = np.array([[1.0, 1.0]] + [[-1.0, 1.0]] * (d - 1))
    claimed = W * kng.quantile_sensitivity(tau, "linf", bounds)
    terms = [x * (below - tau) for x, _ in _corner_rows(d) for below in (0.0, 1.0)]
    worst = _largest_move(terms)
    assert worst <= claimed * (1 + 1e-12)
    assert worst == pytest.approx(claimed)


def test_the_weighted_quantile_target_is_the_weighted_gradient_with_ties_merged() -> None:
    rng = np.random.default_rng(3)
    X = np.column_stack([np.ones(40), rng.choice([-1.0, 0.0, 1.0], 40)])
    v = rng.choice([-0.5, 0.5], 40)  # many identical rows, merged with their weights summed
    w = rng.uniform(0, W, 40)
    target = quantile_lines.QuantileTarget(X, v, 0.3, 1.0, "linf", w)
    theta = rng.uniform(-1, 1, (5, 2))
    direct = np.array([((v <= X @ t) - 0.3) @ (w[:, None] * X) for t in theta])
    np.testing.assert_allclose(target.gradient(theta), direct, atol=1e-12)


def _weighted_frame(seed: int, n: int = 3000) -> pd.DataFrame:
    """Two regimes: rows of weight 1-2 follow y = 1 + 2x, rows of weight 8-10 y = 4 - x (WLS differs from OLS)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, n)
    heavy = rng.uniform(0, 1, n) < 0.3
    y = np.where(heavy, 4.0 - x, 1.0 + 2.0 * x) + rng.normal(0, 0.3 + 0.5 * x, n)
    wt = np.where(heavy, rng.uniform(8, 10, n), rng.uniform(1, 2, n))
    return pd.DataFrame({"y": y.clip(-2, 7), "x": x, "wt": wt})


BOUNDS = {"y": (-2, 7), "x": (0, 1), "wt": (0, 10)}


def test_kng_takes_weights_for_least_squares_and_quantile_regression() -> None:
    assert "kng" in weighted_methods("ols") and "kng" in weighted_methods("quantreg")


def test_least_squares_at_a_huge_eps_is_wls_with_its_weighted_sandwich() -> None:
    """Point: statsmodels' WLS to 1e-6. SEs: the released weighted sandwich is HC0 times n/(n - 1) at eps = 1e9;
    the SEs are the spread of 1,000 replicates (interquartile range, relative sd about 4%), within 15%."""
    frame = _weighted_frame(0)
    res = dpstats.dp_ols("y ~ x", frame, eps=1e9, bounds=BOUNDS, weights="wt", method="kng", random_state=1)
    wls = sm.WLS(frame["y"], sm.add_constant(frame["x"]), weights=frame["wt"]).fit(cov_type="HC0")
    np.testing.assert_allclose(res.params.to_numpy(), wls.params.to_numpy(), atol=1e-6)
    n = len(frame)
    np.testing.assert_allclose(res.bse.to_numpy(), wls.bse.to_numpy() * np.sqrt(n / (n - 1)), rtol=0.15)
    ols = sm.OLS(frame["y"], sm.add_constant(frame["x"])).fit()
    assert np.max(np.abs(ols.params.to_numpy() - wls.params.to_numpy())) > 0.3  # the weights matter here


def _quantile_gradient(X: np.ndarray, v: np.ndarray, w: np.ndarray, tau: float, phi: np.ndarray) -> float:
    return float(k_norm(((v <= X @ phi) - tau) @ (w[:, None] * X), "linf"))


def test_median_regression_at_a_huge_eps_minimises_the_weighted_gradient() -> None:
    """At eps = 1e9 KNG is uniform on the cells where ``||sum w_i x_i (1{.} - tau)||`` is smallest (the module
    docstring): the draw's weighted gradient is no larger than at 20,000 points around the weighted fit, and
    its unweighted one is more than 10 times the unweighted minimum (around statsmodels' QuantReg)."""
    frame = _weighted_frame(2, n=600)
    survey = declare_survey("wt")
    design, _ = build_design("y ~ x", frame, BOUNDS, None, survey=survey)
    release = kng.fit(design, PrivacyRequest(1e9, se_share=0.0), np.random.default_rng(4), q=0.5, steps=600)
    scale = kng.UnitBoxScale.from_design(design)
    X, v = scale.transform(design)
    w = design.weights
    phi = scale.to_scaled(release.params)
    around = phi + np.random.default_rng(5).normal(0, 0.02, (20_000, 2))
    at_draw = _quantile_gradient(X, v, w, 0.5, phi)
    assert at_draw <= min(_quantile_gradient(X, v, w, 0.5, p) for p in around) + 1e-9
    ones = np.ones_like(w)
    unweighted = sm.QuantReg(v, X).fit(q=0.5).params + np.random.default_rng(6).normal(0, 0.02, (20_000, 2))
    floor = min(_quantile_gradient(X, v, ones, 0.5, p) for p in unweighted)
    assert _quantile_gradient(X, v, ones, 0.5, phi) > 10 * floor


R_APISTRAT = """
suppressMessages({library(survey); library(quantreg)})
data(api)
write.csv(apistrat[, c("api00", "ell", "meals", "pw", "stype", "dnum")], commandArgs(TRUE)[1], row.names = FALSE)
fit <- rq(api00 ~ ell + meals, tau = 0.5, data = apistrat, weights = pw)
se <- summary(fit, se = "ker")$coefficients[, 2]
cat(coef(fit), se, coef(rq(api00 ~ ell + meals, tau = 0.5, data = apistrat)), sep = "\\n")
"""
API_BOUNDS = {"api00": (200, 1000), "ell": (0, 100), "meals": (0, 100), "pw": (0, 50)}


def _apistrat(tmp_path: Path) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    """R survey's apistrat, R's weighted ``rq`` fit and its kernel SEs, and the unweighted ``rq`` fit."""
    if RSCRIPT is None:
        if REQUIRE_R:
            pytest.fail("Rscript is not available: bash scripts/setup.sh installs it")
        pytest.skip("Rscript is not available")
    path = tmp_path / "apistrat.csv"
    run = subprocess.run([RSCRIPT, "-e", R_APISTRAT, str(path)], capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        if REQUIRE_R:
            pytest.fail(run.stderr)
        pytest.skip(f"R's survey or quantreg package is missing: {run.stderr[-200:]}")
    values = np.array(run.stdout.split(), dtype=float)
    return pd.read_csv(path), values[:3], values[3:6], values[6:9]


def test_weighted_median_regression_at_a_huge_eps_is_rq_with_weights_on_apistrat(tmp_path: Path) -> None:
    """R survey's apistrat (``api00 ~ ell + meals``, weight ``pw``), eps = 1e9, 4 seeds at 600 sweeps.

    Measured (seeds 0-3): the intercept within 0.13-0.77% of ``rq(weights = pw)`` and meals within 1.3-4.0%,
    while the unweighted ``rq`` is 3.1% and 7.6% away; ell's coefficient (-0.13, with a kernel SE of 0.58) is
    40-76% off: KNG's limit at eps = 1e9 is the whole set of cells of smallest weighted gradient (mechanism.py's
    docstring), not rq's vertex, and that set is wide along ell (a draw at -0.023 had the same smallest weighted
    gradient, 17.9 on the scaled problem, as the best of 20,000 points around rq's fit). Every coefficient is
    within 0.39 of R's kernel standard errors of ``rq(weights=)``. So the issue's 2% holds for the intercept,
    not for meals and ell. Asserted: intercept within 1%, meals within 5%, each closer to the weighted fit than
    to the unweighted one, and every coefficient within half of R's kernel standard error.
    """
    frame, weighted, se, unweighted = _apistrat(tmp_path)
    for seed in range(4):
        res = dpstats.dp_quantreg(
            "api00 ~ ell + meals", frame, q=0.5, eps=1e9, bounds=API_BOUNDS, weights="pw", method="kng",
            steps=600, se_share=0.0, random_state=seed,
        )  # fmt: skip
        got = res.params.to_numpy()
        relative = np.abs(got - weighted) / np.abs(weighted)
        assert relative[0] < 0.01 and relative[2] < 0.05, (seed, got)
        assert np.all(np.abs(got - weighted)[[0, 2]] < np.abs(got - unweighted)[[0, 2]]), (seed, got)
        assert np.all(np.abs(got - weighted) < 0.5 * se), (seed, got, se)


def test_weights_all_zero_neither_raise_nor_warn() -> None:
    """A data set whose every weight is 0 (a row-wise fact: private) gives a release, with infinite SEs."""
    frame = _weighted_frame(6, n=200).assign(wt=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for q in (None, 0.5):
            kwargs = dict(eps=1.0, bounds=BOUNDS, weights="wt", method="kng", random_state=0)
            res = (
                dpstats.dp_ols("y ~ x", frame, **kwargs)
                if q is None
                else dpstats.dp_quantreg("y ~ x", frame, q=q, **kwargs)
            )
            assert np.all(np.isfinite(res.params.to_numpy()))


def test_declared_psus_give_the_design_based_meat() -> None:
    """With cluster= and strata= the meat is the PSUs' noisy totals' (named in the budget and the note)."""
    frame = _weighted_frame(7, n=1200)
    frame["psu"] = np.arange(len(frame)) % 40
    frame["st"] = frame["psu"] % 4
    res = dpstats.dp_quantreg(
        "y ~ x", frame, q=0.5, eps=50.0, bounds=BOUNDS, weights="wt", cluster="psu", strata="st",
        levels={"psu": list(range(40)), "st": list(range(4))}, method="kng", random_state=3,
    )  # fmt: skip
    assert "PSU score totals" in dict(res.privacy.split)
    assert "PSUs' noisy weighted totals" in res.summary().as_text()
    assert np.all(np.isfinite(res.bse.to_numpy()))

"""Survey weights in the perturbed histogram (issue 41; dpstats/mechanisms/histogram/survey_weights.py, cell_meat.py).

Seeded throughout. The limits at eps = 1e9 are deterministic up to noise of scale ~1e-9 (no false failures); the
standard errors' comparisons with statsmodels' HC0 allow 15%, against the bootstrap's Monte Carlo error of about
2% per SE (1,000 replicates): a false failure needs a 7-sd draw. The replays are exact (no randomness in the
verdict).
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from unittest import mock

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import dpstats
from dpstats.api.binary_release import binary_release
from dpstats.audit.neighbours import NeighbourPair, pair_from_points
from dpstats.audit.replay import replay
from dpstats.mechanisms import PrivacyRequest, get_mechanism, weighted_methods
from dpstats.mechanisms.histogram import mechanism
from dpstats.mechanisms.histogram.cell_means import mean_axes
from dpstats.mechanisms.histogram.layout import build_layout
from dpstats.mechanisms.histogram.release import cell_statistics
from dpstats.mechanisms.histogram.survey_weights import weighted_count_sensitivity, weighted_means_sensitivity
from dpstats.mechanisms.histogram.weighted_fits import check_loss

BOUNDS = {"y": (-5.0, 10.0), "x": (0.0, 4.0), "wt": (0.0, 60.0), "yb": (0.0, 1.0), "yi": (0.0, 12.0)}
LEVELS = {"g": ["a", "b", "c"]}


def _survey(seed: int, n: int) -> pd.DataFrame:
    """Integer x and a three-level factor (cells exact), weights correlated with x, four responses."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, n).astype(float)
    g = rng.choice(LEVELS["g"], n)
    eta = -1 + 0.4 * x - 0.5 * (g == "c")
    return pd.DataFrame(
        {
            "y": np.clip(1 + 0.5 * x + (g == "b") + rng.normal(size=n) * (1 + x / 3), -5, 10),
            "yb": (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float),
            "yi": np.clip(np.round(2 + x + 2 * rng.normal(size=n)), 0, 12),
            "x": x,
            "g": g,
            "wt": rng.uniform(1, 10, n) * (1 + x),
        }
    )


def _design_matrix(data: pd.DataFrame) -> pd.DataFrame:
    return sm.add_constant(pd.get_dummies(data[["x", "g"]], drop_first=True, dtype=float))


def _ordered(res, names=("Intercept", "x", "g[T.b]", "g[T.c]")) -> np.ndarray:
    return np.array([res.params[k] for k in names]), np.array([res.bse[k] for k in names])


def test_weighted_counts_and_sums_move_by_at_most_2w_and_mw_over_the_cells_corners():
    """Brute force: a row at a corner of a cell (the bins' edges, just below them, the bounds) with weight 0, W/2
    or W replaced by any other such row; the rest of the data cancel, so the change is the difference of the two
    rows' contributions. The weighted counts move by at most 2W and the weighted offset sums by at most mW in L1,
    and both bounds are attained."""
    w_max = 60.0
    bounds = {"u": (0.0, 3.0), "v": (-1.0, 1.0)}
    layout = build_layout(["u", "v"], bounds, {}, 3, 100, 1.0, ends=["v"])
    axes = mean_axes(layout)
    corners = {name: sorted({*np.linspace(lo, hi, 4), *(np.linspace(lo, hi, 4)[1:] - 1e-9)}) for name, (lo, hi) in
               bounds.items()}  # fmt: skip
    rows = [(u, v, w) for u, v in itertools.product(corners["u"], corners["v"]) for w in (0.0, w_max / 2, w_max)]
    one = [
        cell_statistics(layout, axes, pd.DataFrame({"u": [u], "v": [v]}), np.array([w / w_max])) * w_max
        for u, v, w in rows
    ]
    stats = np.stack(one)  # rows x cells x (count, sums)
    moved = np.abs(stats[:, None] - stats[None])
    worst = np.array([moved[..., 0].sum(axis=2).max(), moved[..., 1:].sum(axis=(2, 3)).max()])
    bound = np.array([weighted_count_sensitivity(w_max), weighted_means_sensitivity(len(axes), w_max)])
    assert np.all(worst <= bound * (1 + 1e-12))
    assert np.all(worst >= bound * (1 - 1e-6))


def _weighted_pairs(binary: bool) -> list[NeighbourPair]:
    """Neighbours in which row 0 moves between the box's corners and its weight from 0 (or the maximum) to the
    maximum."""
    rng = np.random.default_rng(5)
    n = 40
    y = rng.integers(0, 2, n).astype(float) if binary else rng.uniform(-1, 1, n)
    base = np.column_stack([rng.uniform(0, 2, n), rng.uniform(-1, 1, n), y])
    weights = rng.uniform(1, 10, n)
    y_lo = 0.0 if binary else -1.0
    pairs = []
    moves = [((0.0, -1.0, y_lo), (2.0, 1.0, 1.0), 0.0), ((2.0, 1.0, 1.0), (0.0, -1.0, y_lo), 0.0)]
    for old, new, first in [*moves, ((0.0, -1.0, y_lo), (2.0, 1.0, 1.0), 10.0)]:
        a, b = base.copy(), base.copy()
        a[0], b[0] = old, new
        pair = pair_from_points(a, b, [(0, 2), (-1, 1)], (y_lo, 1), label=f"{old}->{new}")
        light, heavy = weights.copy(), weights.copy()
        light[0], heavy[0] = first, 10.0
        bounded = {"weight_bounds": (0.0, 10.0)}
        pairs.append(NeighbourPair(pair.label, replace(pair.d, weights=light, **bounded),
                                   replace(pair.d_prime, weights=heavy, **bounded)))  # fmt: skip
    return pairs


def _release(estimator: str):
    spec = get_mechanism("histogram", estimator)
    if estimator == "logit":
        return lambda design, privacy, rng, **options: binary_release(spec, design, privacy, rng, options, "logit", 0)[
            0
        ]
    return spec.fit


@pytest.mark.parametrize("estimator", ["ols", "logit"])
def test_replay_audit_of_a_weight_moving_from_zero_to_its_maximum(estimator):
    """The weighted counts, the weighted within-cell sums and the meat stay within their declared sensitivities
    when one row moves across the box and its weight from 0 to the range's top (exact replay)."""
    pairs = _weighted_pairs(estimator == "logit")
    report = replay(_release(estimator), pairs, PrivacyRequest(eps=1.0), seeds=range(2), options={"bins": 3})
    assert not report.violations, report.as_text()
    assert {"histogram counts", "histogram within-cell means", "meat"} <= set(report.releases)
    assert report.ratio("histogram counts") > 0.99


def test_a_canary_that_ignores_the_weights_is_flagged_by_the_replay():
    """Counts of the raw weights under the unweighted sensitivity 2 (the weight's range ignored): flagged."""

    def raw_weights(design):
        return None if design.weights is None else np.asarray(design.weights, dtype=float)

    with mock.patch.object(mechanism, "row_masses", raw_weights):
        report = replay(_release("ols"), _weighted_pairs(False), PrivacyRequest(eps=1.0), seeds=range(1),
                        options={"bins": 3})  # fmt: skip
    assert any("histogram counts" in str(v) for v in report.violations)


def test_at_a_huge_eps_weighted_least_squares_on_exact_cells_is_wls_with_its_sandwich():
    """Integer x and a factor: one cell per value, the response at its cells' weighted means. The fit is
    statsmodels' WLS to 1e-6 and its SEs its HC0 sandwich within 15%. The binning bias is named and bounded by 0
    (the regressors sit at their cells' values, so no cell spreads them: dpstats/mechanisms/histogram/binning_bias.py),
    and the fit is "ok" (issue 45)."""
    data = _survey(0, 3000)
    res = dpstats.dp_ols("y ~ x + g", data, eps=1e9, bounds=BOUNDS, levels=LEVELS, weights="wt",
                         method="histogram", integers=["x"], random_state=0)  # fmt: skip
    wls = sm.WLS(data["y"], _design_matrix(data), weights=data["wt"]).fit(cov_type="HC0")
    params, bse = _ordered(res)
    reference = wls.params[["const", "x", "g_b", "g_c"]].to_numpy()
    np.testing.assert_allclose(params, reference, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(bse, wls.bse[["const", "x", "g_b", "g_c"]].to_numpy(), rtol=0.15)
    assert res.bias_source is not None and np.all(res.bias == 0.0) and res.status == "ok"
    assert "Survey weights" in res.summary().as_text()


@pytest.mark.parametrize(
    ("name", "link"), [("logit", sm.families.links.Logit()), ("probit", sm.families.links.Probit())]
)
def test_at_a_huge_eps_the_weighted_binary_fit_on_exact_cells_is_the_weighted_mle(name, link):
    """The 0/1 response has its two cells, x one per value: statsmodels' GLM with var_weights to 1e-6, its HC0
    SEs within 15%."""
    data = _survey(1, 3000)
    fit = getattr(dpstats, f"dp_{name}")
    res = fit("yb ~ x + g", data, eps=1e9, bounds=BOUNDS, levels=LEVELS, weights="wt", method="histogram",
              integers=["x", "yb"], random_state=0)  # fmt: skip
    glm = sm.GLM(data["yb"], _design_matrix(data), family=sm.families.Binomial(link), var_weights=data["wt"])
    ref = glm.fit(cov_type="HC0")
    params, bse = _ordered(res)
    np.testing.assert_allclose(params, ref.params[["const", "x", "g_b", "g_c"]].to_numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(bse, ref.bse[["const", "x", "g_b", "g_c"]].to_numpy(), rtol=0.15)


def test_at_a_huge_eps_the_weighted_median_on_exact_cells_minimises_the_rows_weighted_check_loss():
    """Whole-valued response and x, one cell per value: the weighted median regression on the cells (the check
    loss integrated over each response cell) attains the rows' weighted check loss to 1% (the minimiser of a
    linear program need not be unique, so the objective is compared with a grid and QuantReg's fit)."""
    data = _survey(2, 2000)
    res = dpstats.dp_quantreg("yi ~ x", data, eps=1e9, bounds=BOUNDS, weights="wt", method="histogram",
                              integers=["x", "yi"], random_state=0)  # fmt: skip
    X = sm.add_constant(data[["x"]]).to_numpy()
    w, y = data["wt"].to_numpy(), data["yi"].to_numpy()
    ours = check_loss(y - X @ res.params.to_numpy(), 0.5, w)
    unweighted = sm.QuantReg(y, X).fit(q=0.5).params
    grid = [np.array([a, b]) for a in np.linspace(0, 4, 41) for b in np.linspace(0, 2, 41)]
    assert ours <= min(check_loss(y - X @ beta, 0.5, w) for beta in [*grid, unweighted]) * 1.01


def test_the_weighted_release_reports_its_split_and_a_declared_cluster_in_its_note():
    data = _survey(3, 2000).assign(psu=lambda d: np.arange(len(d)) % 20, st=lambda d: np.arange(len(d)) % 2)
    res = dpstats.dp_ols("y ~ x + g", data, eps=2.0, bounds=BOUNDS, levels={**LEVELS, "psu": list(range(20)),
                         "st": [0, 1]}, weights="wt", cluster="psu", strata="st", method="histogram",
                         random_state=1)  # fmt: skip
    split = dict(res.privacy.split)
    assert split["PSU score totals"] == pytest.approx(0.2) and res.privacy.eps <= 2.0
    assert sum(split.values()) == pytest.approx(2.0)
    assert "40 PSUs (psu within strata st)" in res.summary().as_text()
    assert np.all(np.isfinite(res.bse))


def test_auto_chooses_among_the_weighted_methods():
    """With the histogram weighted, auto fits weighted quantile regression (its only candidate) and chooses
    among the weighted methods for least squares and logit."""
    data = _survey(4, 3000)
    assert "histogram" in weighted_methods("quantreg") and "histogram" in weighted_methods("ols")
    res = dpstats.dp_quantreg("y ~ x", data, eps=1.0, bounds=BOUNDS, weights="wt", random_state=0)
    assert res.method == "histogram" and np.all(np.isfinite(res.params))
    for fit, formula in [(dpstats.dp_ols, "y ~ x"), (dpstats.dp_logit, "yb ~ x")]:
        res = fit(formula, data, eps=1.0, bounds=BOUNDS, weights="wt", random_state=0)
        assert res.method in weighted_methods(res.estimator)


def test_bad_weights_are_treated_row_wise():
    data = _survey(5, 1000).astype({"wt": object})
    data.loc[:5, "wt"] = [np.nan, -3.0, "heavy", np.inf, 1e9, None]
    res = dpstats.dp_ols("y ~ x", data, eps=1.0, bounds=BOUNDS, weights="wt", method="histogram", random_state=0)
    assert np.all(np.isfinite(res.params))

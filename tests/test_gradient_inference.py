"""Standard errors and intervals of method="gradient" (dpstats/mechanisms/gradient/inference.py).

* The simulated descent is the mechanism's descent when the clip does not
  bind (same noise, same output to 1e-9), its forward-mode Jacobian equals
  finite differences, and with the clip the simulated law matches the
  mechanism's (two-sample KS at alpha = 1e-6, 300 mechanism runs against
  3000 simulated ones: it detects a shift of about 0.4 sd; the power check
  with the noise doubled must reject).
* Budget: the split adds up to eps (pure) or rho (approx, zcdp), se_share is
  honoured, se_share=0 is the paper's algorithm draw for draw with NaN SEs.
* Failures: a non-positive-definite noisy bread gives infinite intervals, a
  descent that ignores its target (singular Jacobian) too.
* eps -> infinity: the standard errors approach statsmodels' HC1. The
  bootstrap's own Monte Carlo error is 1/sqrt(2B) = 2.2% per standard error
  (B = 1000): the mean ratio over 4 seeds must lie within 0.05 of 1 (4.5 of
  its sd: false failure about 7e-6 per check).
* Coverage, seeded small versions of benchmarks/bench_coverage.py: 100
  repetitions per cell, coverage within the binomial band at z = 4 around
  0.95 (dpstats.uncertainty.coverage.coverage_band: 0.863-1; false failure about 6e-5
  per coefficient) and median width at most 1.5 x the Monte Carlo spread
  (measured 0.89-1.08 at these seeds; the spread's own relative error at
  100 reps is 7%, so 1.5 is over 5 of its sd above the largest).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats

import dpstats
from dpstats.mechanisms import PrivacyRequest
from dpstats.mechanisms.gradient import inference
from dpstats.mechanisms.gradient import mechanism as gd
from dpstats.privacy.noise import recording
from dpstats.uncertainty.coverage import DESIGNS, coverage_band, coverage_cell

START = (0.5, 0.5)


def _unit_data(n: int, seed: int, design: str = "heteroskedastic") -> tuple[np.ndarray, np.ndarray]:
    spec = DESIGNS[design]
    frame = spec.draw(np.random.default_rng(seed), n)
    (xl, xh), (yl, yh) = spec.bounds["x"], spec.bounds["y"]
    return (frame.x.to_numpy() - xl) / (xh - xl), (frame.y.to_numpy() - yl) / (yh - yl)


def _gram_and_target(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    W = np.column_stack([0.75 - u, u - 0.25])
    A = W.T @ W
    return A, np.linalg.solve(A, W.T @ v) / 2.0


# --------------------------------------------------------------------------
# The simulated descent
# --------------------------------------------------------------------------


@pytest.mark.parametrize("gaussian", [False, True])
def test_simulated_descent_is_the_mechanism_when_nothing_is_clipped(gaussian: bool) -> None:
    u, v = _unit_data(300, 1)
    A, target = _gram_and_target(u, v)
    law = inference.NoiseLaw(gaussian, 40.0)
    rng = np.random.default_rng(5)
    mechanism = gd.descend(u, v, lambda g, t: g + law.draw(rng, (2,)), 80, 1e9, START)
    simulated, _ = inference.descend_batch(np.random.default_rng(5), A, target[None, :], law, 80, START)
    np.testing.assert_allclose(simulated[0], mechanism, rtol=0, atol=1e-9)


@pytest.mark.parametrize("scale", [1e-9, 30.0, 300.0])
def test_forward_mode_jacobian_equals_finite_differences(scale: float) -> None:
    u, v = _unit_data(1000, 2)
    A, target = _gram_and_target(u, v)
    law = inference.NoiseLaw(False, scale)
    targets = target + np.random.default_rng(0).normal(0, 0.05, (50, 2))
    out, jac = inference.descend_batch(np.random.default_rng(1), A, targets, law, 80, START)
    h = 1e-6
    columns = []
    for k in range(2):
        shifted, _ = inference.descend_batch(np.random.default_rng(1), A, targets + h * np.eye(2)[k], law, 80, START)
        columns.append(((shifted - out) / h).mean(axis=0))
    np.testing.assert_allclose(jac, np.column_stack(columns), atol=1e-5)


@pytest.mark.slow
def test_simulated_law_matches_the_clipped_mechanism() -> None:
    """n = 1000, eps = 1 (pure): the clip binds in the early rounds; the laws of the slope agree."""
    u, v = _unit_data(1000, 3)
    A, target = _gram_and_target(u, v)
    law = inference.NoiseLaw(False, 4.0 * 80 / 1.0)
    rng = np.random.default_rng(7)
    runs = np.array([gd.descend(u, v, lambda g, t: g + law.draw(rng, (2,)), 80, 1.0, START) for _ in range(300)])
    slope = lambda p: 2.0 * (p[:, 1] - p[:, 0])  # noqa: E731
    simulated, _ = inference.descend_batch(np.random.default_rng(8), A, np.tile(target, (3000, 1)), law, 80, START)
    assert stats.ks_2samp(slope(runs), slope(simulated)).pvalue > 1e-6
    louder = inference.NoiseLaw(False, 2.0 * law.scale)
    wrong, _ = inference.descend_batch(np.random.default_rng(9), A, np.tile(target, (3000, 1)), louder, 80, START)
    assert stats.ks_2samp(slope(runs), slope(wrong)).pvalue < 1e-6


# --------------------------------------------------------------------------
# Budget and notes
# --------------------------------------------------------------------------

SYMMETRIC = DESIGNS["symmetric"]
FRAME = SYMMETRIC.draw(np.random.default_rng(0), 500)


def _fit(**kwargs):
    return dpstats.dp_ols("y ~ x", FRAME, bounds=SYMMETRIC.bounds, method="gradient", random_state=4, **kwargs)


@pytest.mark.parametrize(
    ("budget", "total"),
    [
        ({"eps": 2.0}, 2.0),
        ({"eps": 1.0, "delta": 1e-6, "variant": "approx"}, None),
        ({"rho": 0.3, "variant": "zcdp"}, 0.3),
    ],
)
@pytest.mark.parametrize("share", [None, 0.35])
def test_split_adds_up_and_names_the_standard_errors(budget: dict, total: float | None, share: float | None) -> None:
    res = _fit(se_share=share, **budget)
    spent = res.privacy
    total = total if total is not None else spent.rho
    parts = dict(spent.split)
    assert sum(parts.values()) == pytest.approx(total, rel=1e-12)
    used = inference.DEFAULT_SHARE if share is None else share
    for name, fraction in inference.FRACTIONS:
        assert parts[name] == pytest.approx(total * used * fraction, rel=1e-12)
    assert np.all(np.isfinite(res.bse)) and res.replicates is not None
    assert "bootstrap" in res.se_note and "se_share" in res.se_note
    if budget.get("variant") == "approx":
        assert (spent.eps, spent.delta) == (1.0, 1e-6)  # the reported (eps, delta) covers the standard errors


@pytest.mark.parametrize("variant", ["pure", "approx", "zcdp"])
def test_se_share_zero_is_the_paper_algorithm_draw_for_draw(variant: str) -> None:
    budget = {"pure": PrivacyRequest(1.0, se_share=0.0), "approx": PrivacyRequest(1.0, 1e-6, se_share=0.0)}
    privacy = budget.get(variant, PrivacyRequest(None, rho=0.5, se_share=0.0))
    u, v = _unit_data(400, 4, "symmetric")
    design = gd_design(u, v)
    release = gd.fit(design, privacy, np.random.default_rng(3), variant=variant)
    p, _ = gd.fit_unit(u, v, privacy, np.random.default_rng(3), variant=variant)
    np.testing.assert_array_equal(release.params, inference.COEF_FROM_P @ p)
    assert np.all(np.isnan(release.cov)) and release.replicates is None and "se_share=0" in release.se_note
    assert [name for name, _ in release.privacy.split] == [release.privacy.split[0][0]]


def gd_design(u: np.ndarray, v: np.ndarray):
    from dpstats.audit import design_from_arrays

    return design_from_arrays(v, np.column_stack([np.ones_like(u), u]), y_bounds=(0.0, 1.0), x_bounds=[(0.0, 1.0)])


def test_small_tau_says_the_clip_is_not_modelled() -> None:
    assert "tau < 1" in _fit(eps=5.0, tau=0.5).se_note
    assert "tau < 1" not in _fit(eps=5.0).se_note


def test_a_budget_too_small_for_the_standard_errors_is_refused() -> None:
    with pytest.raises(ValueError, match="se_share=0"):
        _fit(eps=1.0, se_share=1e-320)


# --------------------------------------------------------------------------
# Failures are outputs
# --------------------------------------------------------------------------


def test_a_bread_that_is_not_positive_definite_gives_infinite_intervals() -> None:
    """The bread's release forced to -1 (the replay's forcing): the fit stands, its intervals are infinite."""
    u, v = _unit_data(400, 5, "symmetric")
    design, privacy = gd_design(u, v), PrivacyRequest(1.0)
    with recording() as log:
        gd.fit(design, privacy, np.random.default_rng(2), T=10)
    forced = [np.asarray(r.noisy) for r in log]
    forced[[r.name for r in log].index("SE: bread")] = np.array([-1.0])
    with recording(forced_outputs=forced):
        release = gd.fit(design, privacy, np.random.default_rng(2), T=10)
    assert not release.failed and np.all(np.isfinite(release.params))
    assert np.all(np.isinf(np.diag(release.cov))) and release.replicates is None
    res = _fit(eps=1e-6)  # at this budget the standard errors' release is hopeless: infinite, not dropped
    assert not res.failed and np.all(np.isinf(res.bse)) and np.all(np.isinf(res.conf_int().to_numpy()))


def test_a_descent_deaf_to_its_target_gives_no_replicates() -> None:
    """Noise so loud that the simulated output does not respond to the target: singular Jacobian, None."""
    u, v = _unit_data(400, 6, "symmetric")
    coef = np.array([0.2, 0.4])
    released = inference.release_sandwich(np.random.default_rng(0), u, v, coef, 1e6, False)
    law = inference.NoiseLaw(False, 1e30)
    assert inference.bootstrap(np.random.default_rng(1), coef, released, u.size, law, 80, START) is None
    fine = inference.NoiseLaw(False, 10.0)
    draws = inference.bootstrap(np.random.default_rng(1), coef, released, u.size, fine, 80, START)
    assert draws.shape == (inference.REPLICATES, 2) and np.all(np.isfinite(draws))


# --------------------------------------------------------------------------
# eps -> infinity: statsmodels' HC1
# --------------------------------------------------------------------------


@pytest.mark.parametrize("design", ["symmetric", "heteroskedastic"])
def test_huge_budget_standard_errors_are_statsmodels_hc1(design: str) -> None:
    spec = DESIGNS[design]
    frame = spec.draw(np.random.default_rng(11), 2000)
    hc1 = smf.ols(spec.formula, frame).fit(cov_type="HC1").bse.to_numpy()
    ratios = [
        dpstats.dp_ols(
            spec.formula, frame, eps=1e9, bounds=spec.bounds, method="gradient", random_state=s
        ).bse.to_numpy()
        / hc1
        for s in range(4)
    ]
    assert np.all(np.abs(np.mean(ratios, axis=0) - 1.0) < 0.05), ratios


# --------------------------------------------------------------------------
# Coverage (seeded small versions of the benchmark)
# --------------------------------------------------------------------------

REPS = 100
CELLS = [
    ("pure", "symmetric", 1000, {"eps": 1.0}),
    ("pure", "heteroskedastic", 1000, {"eps": 5.0}),
    ("approx", "heteroskedastic", 1000, {"eps": 1.0, "delta": 1e-6}),
    ("zcdp", "symmetric", 1000, {"eps": 5.0, "delta": 1e-6}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("variant", "design", "n", "budget"), CELLS)
def test_coverage_and_width(variant: str, design: str, n: int, budget: dict) -> None:
    spec = DESIGNS[design]

    def fit(data: pd.DataFrame, sim, seed: int):
        return dpstats.dp_ols(
            sim.formula, data, bounds=sim.bounds, method="gradient", variant=variant, random_state=seed, **budget
        )

    cell = coverage_cell(spec, n, REPS, fit, seed=17)
    low, high = coverage_band(REPS)
    assert cell.failures == 0
    assert np.all((low <= cell.coverage) & (cell.coverage <= high)), cell.frame()
    assert np.all(cell.width_ratio <= 1.5), cell.frame()

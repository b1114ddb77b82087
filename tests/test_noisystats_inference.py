"""NoisyStats' standard errors and intervals (dpstats/mechanisms/noisystats/inference.py,
dpstats/uncertainty/sandwich.py).

What is tested: the sensitivities of the standard errors' releases by brute
force and by replay on corner neighbours with a larger share (the replays at
the default share, sound everywhere and attained with one regressor, are
tests/test_audit_noisystats.py's, which assert the standard errors' releases
too), a gray-box audit of the residual-sum-of-squares release with its
canary, the budget split, the eps -> infinity limit against statsmodels' HC1
standard errors, and coverage of the true coefficients in a seeded simulation.

False-failure rates: the replays, brute force and split checks are
deterministic. The gray-box audit fails a correct mechanism with probability
<= 1e-6 (Clopper-Pearson at alpha = 1e-6). The limit test compares standard
errors from 1000 bootstrap refits (interquartile-range scale: relative sd about
4%, measured over 40 seeds on engel) at a 15% tolerance: about 3.7 sd, 2e-4 per
coefficient. The coverage test's band is 4 binomial sd
(dpstats/uncertainty/coverage.py, ``coverage_band``): about 6e-5 per coefficient.
"""

import itertools

import numpy as np
import pytest
import statsmodels.formula.api as smf

import dpstats
from dpstats.audit import corner_pairs, graybox_audit, replay, weaker_noise
from dpstats.mechanisms.base import PrivacyRequest
from dpstats.mechanisms.noisystats import mechanism as noisystats
from dpstats.uncertainty import sandwich
from dpstats.uncertainty.coverage import DESIGNS, coverage_band, coverage_cell

SE_RELEASES = ["SE: sum(x)", "SE: RSS", "SE: HC meat"]
PRIVACY = PrivacyRequest(eps=3.75)


# --------------------------------------------------------------------------
# Sensitivities by brute force
# --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_meat_entry_widths_are_the_largest_move_of_one_row(seed: int) -> None:
    """Deterministic: over a grid of rows in a random box and residuals in [-R, R], each
    entry of ``r^2 w w'`` spans exactly the declared width (the grid holds the corners)."""
    rng = np.random.default_rng(seed)
    p = int(rng.integers(1, 4))
    lo = rng.uniform(-2, 1, p)
    bounds = np.column_stack([lo, lo + rng.uniform(0.1, 3, p)])
    R = float(rng.uniform(0.2, 3))
    grid = [np.linspace(a, b, 5) for a, b in bounds]
    values = np.array(
        [sandwich.meat(np.array([w]), np.array([r])) for w in itertools.product(*grid) for r in np.linspace(-R, R, 7)]
    )
    np.testing.assert_allclose(values.max(axis=0) - values.min(axis=0), sandwich.entry_widths(bounds, R), rtol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_residual_bound_is_the_largest_residual_on_the_box(seed: int) -> None:
    """Deterministic: the corner formula equals brute force over the box's corners and y's range."""
    rng = np.random.default_rng(10 + seed)
    p = int(rng.integers(1, 4))
    lo = rng.uniform(-1, 1, p)
    bounds = np.column_stack([lo, lo + rng.uniform(0.1, 2, p)])
    theta = rng.normal(0, 0.5, p)
    y_bounds = (-1.0, 2.0)
    corners = np.array(list(itertools.product(*bounds)))
    brute = max(abs(y - fit) for fit in corners @ theta for y in y_bounds)
    cap = sandwich.RESIDUAL_CAP * 3.0
    assert sandwich.residual_bound(theta, bounds, y_bounds) == pytest.approx(min(brute, cap), rel=1e-12)


# --------------------------------------------------------------------------
# Replay and gray-box audit of the standard errors' releases
# --------------------------------------------------------------------------


@pytest.mark.usefixtures("few_replicates")
def test_replay_with_a_larger_share_is_sound_and_the_split_adds_up() -> None:
    """Deterministic; the replayed fits draw 100 bootstrap replicates (post-processing: the releases and the
    replay's checks do not depend on their number)."""
    privacy = PrivacyRequest(eps=2.0, se_share=0.6)
    report = replay(noisystats.fit, corner_pairs(10, [(0.0, 1.0)], (0.0, 1.0)), privacy, seeds=range(2))
    report.assert_sound(min_ratio=0.9, names=SE_RELEASES)
    design = corner_pairs(10, [(0.0, 1.0)], (0.0, 1.0))[0].d
    split = dict(noisystats.fit(design, privacy, np.random.default_rng(0)).privacy.split)
    assert sum(split.values()) == pytest.approx(2.0, rel=1e-12)
    assert sum(v for k, v in split.items() if k.startswith("SE:")) == pytest.approx(1.2, rel=1e-12)


RSS_PAIR = next(
    p for p in corner_pairs(10, [(0.0, 1.0)], (0.0, 1.0)) if p.label == "n=10, 9 x (0, 0), last (1, 1) -> (1, 0)"
)
# Forced earlier outputs (ncov, nvar, intercept, sum(x)): the fitted line is 0 everywhere, so the
# residual bound is R = 1 and the moved row's squared residual goes from 1 to 0: the RSS moves by R^2.
FLAT_FIT = [np.array(0.0), np.array(1.0), np.array(0.0), np.array([5.0])]
PRIVACY_RSS_ONE = PrivacyRequest(eps=1.0 / 0.081)  # the RSS release gets eps * 0.2 * 0.9 * 0.45 = 1


@pytest.mark.slow
def test_graybox_residual_sum_of_squares_within_claim_and_canary_flagged() -> None:
    """The RSS release on a worst pair, 20,000 runs a side: within its claim of 1 (false failure
    <= 1e-6), above 0.5 (observed 0.8-0.9 for such audits), and the 2 x eps canary flagged."""
    split = dict(noisystats.fit(RSS_PAIR.d, PRIVACY_RSS_ONE, np.random.default_rng(0)).privacy.split)
    assert split["SE: RSS"] == pytest.approx(1.0)

    def audit(seed: int):
        return graybox_audit(
            noisystats.fit, RSS_PAIR, PRIVACY_RSS_ONE, "SE: RSS", runs=20_000, seed=seed, alpha=1e-6, forced=FLAT_FIT
        )

    result = audit(3)
    result.assert_within_claim()
    assert result.eps_claimed == pytest.approx(1.0)
    assert result.eps_lb >= 0.5, result.as_text()
    with weaker_noise(0.5, "laplace"):
        canary = audit(4)
    assert canary.flagged, canary.as_text()


# --------------------------------------------------------------------------
# The eps -> infinity limit and coverage
# --------------------------------------------------------------------------

FAIR_BOUNDS = {"affairs": (0, 60), "age": (17.5, 42), "yrs_married": (0.5, 23), "educ": (9, 20)}


@pytest.mark.parametrize(
    "formula, dataset, bounds, levels",
    [
        ("foodexp ~ income", "engel", {"income": (0, 5000), "foodexp": (0, 2500)}, None),
        ("foodexp ~ income - 1", "engel", {"income": (0, 5000), "foodexp": (0, 2500)}, None),
        (
            "affairs ~ age + yrs_married + educ + C(religious)",
            "fair",
            FAIR_BOUNDS,
            {"religious": [1.0, 2.0, 3.0, 4.0]},
        ),
    ],
    ids=["engel", "engel-origin", "fair-with-factor"],
)
def test_standard_errors_approach_statsmodels_hc1_at_large_eps(formula, dataset, bounds, levels, request) -> None:
    data = request.getfixturevalue(dataset)
    res = dpstats.dp_ols(formula, data, eps=1e9, bounds=bounds, levels=levels, method="noisystats", random_state=8)
    reference = smf.ols(formula, data).fit(cov_type="HC1")
    np.testing.assert_allclose(res.params, reference.params, rtol=1e-5)
    np.testing.assert_allclose(res.bse, reference.bse, rtol=0.15)


@pytest.mark.slow
@pytest.mark.parametrize("design, reps", [("heteroskedastic", 200), ("categorical", 100)])
def test_intervals_cover_the_truth(design: str, reps: int) -> None:
    """Seeded simulations at n = 2000, eps = 2: coverage of every coefficient within 4 binomial sd of 0.95.

    Width at most 1.5 x the estimates' spread, whose relative error is 7% at 100 simulations, 5% at 200:
    the heteroskedastic design's intervals are about 1.25 x the spread (3e-4 at 200), the categorical
    design's 0.87-1.09 (the bound over 5 sd away at 100).
    """
    sim = DESIGNS[design]

    def fit(data, d, seed):
        return dpstats.dp_ols(
            d.formula, data, eps=2.0, bounds=d.bounds, levels=d.levels or None, method="noisystats", random_state=seed
        )

    cell = coverage_cell(sim, 2000, reps, fit, seed=5)
    low, high = coverage_band(reps - cell.failures)
    assert np.all((low <= cell.coverage) & (cell.coverage <= high)), cell.frame()
    assert np.all(cell.width_ratio <= 1.5), cell.frame()

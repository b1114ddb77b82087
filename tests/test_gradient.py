"""method="gradient": Alabi et al. (2022) Algorithms 6 and 7, its options and its budget reports.

Limit tests and the optimisation tolerance. At eps = 1e9 the noise is negligible
(Laplace scale 4 tau T / eps = 3.2e-7 per coordinate), so the mechanism must
return the *noiseless* run of the same descent (checked to 1e-6 on the unit
scale). How close that run is to OLS is a property of the paper's algorithm,
not of the privacy: with T = 80 and the AdaGrad-norm step 1/sqrt(sum ||g||^2),
measured on the unit scale (max over p25, p75 of |GD - OLS|):

* the paper's synthetic design (x centred at 0.5), all 16 cells of the
  benchmark grid: at most 2.6e-5 at T = 80 (3e-15 at T = 400);
* Engel (income/5000 has mean 0.20, sd 0.10: the (p25, p75) parameterisation
  is ill-conditioned): 3.3e-2 at T = 80 (1.3 OLS standard errors of p25,
  i.e. NOT converged), 3.6e-5 at T = 400, 4e-15 at T = 2000.

"eps = 1e9" means, per variant, a budget at which the noise per round is
below 1e-6 (``HUGE``; approx needs eps = 1e15 because its sigma scales as 1/sqrt(eps)).

The asserted tolerances are these figures with a margin of about 1.5-4x:
1e-4 (synthetic, T = 80), 0.05 (Engel, T = 80), 1e-4 (Engel, T = 400),
1e-8 (Engel, T = 2000). Tests are deterministic (seeded).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.datasets
from scipy import integrate, stats

import dpstats
from dpstats.design.matrix import Design
from dpstats.mechanisms import REGISTRY, PrivacyRequest
from dpstats.mechanisms.gradient import mechanism as gd
from dpstats.privacy.accounting import DEFAULT_REPORT_DELTA, approx_to_zcdp_rho, gaussian_delta, zcdp_to_approx_eps

ENGEL_BOUNDS = {"income": (0, 5000), "foodexp": (0, 2500)}
# Budgets at which every variant's noise is below 1e-6 per round: Laplace scale 4 T / eps = 3.2e-7;
# approx: rho ~ eps, sigma = 2 sqrt(T / rho) = 5.7e-7 at eps = 1e15; zcdp: rho = 5e17 (= (1e9)^2 / 2).
HUGE = {"pure": {"eps": 1e9}, "approx": {"eps": 1e15, "delta": 1e-6}, "zcdp": {"rho": 5e17}}


def engel() -> pd.DataFrame:
    return statsmodels.datasets.engel.load_pandas().data


def synthetic(n: int, var_x: float, sd_e: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Alabi et al. section 3.1.5: x uniform, mean 0.5, variance var_x; y = 0.5 x + 0.2 + e; clipped."""
    rng = np.random.default_rng(seed)
    half = math.sqrt(3 * var_x)
    x = rng.uniform(0.5 - half, 0.5 + half, n)
    y = 0.5 * x + 0.2 + rng.normal(0, sd_e, n)
    return np.clip(x, 0, 1), np.clip(y, 0, 1)


def ols_predictions(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Non-private OLS predictions at x = 1/4 and 3/4 (statsmodels)."""
    a, b = sm.OLS(v, sm.add_constant(u)).fit().params
    return np.array([a + 0.25 * b, a + 0.75 * b])


def noiseless(u: np.ndarray, v: np.ndarray, T: int = 80, tau: float = 1.0) -> np.ndarray:
    return gd.descend(u, v, lambda g, t: g, T, tau, (0.5, 0.5))


def unit_predictions(params: np.ndarray, x_bounds: tuple[float, float], y_bounds: tuple[float, float]) -> np.ndarray:
    """Map user-unit (intercept, slope) to the predictions at 1/4, 3/4 of the x range, on the unit scale."""
    (xl, xh), (yl, yh) = x_bounds, y_bounds
    x = xl + np.array([0.25, 0.75]) * (xh - xl)
    return (params[0] + params[1] * x - yl) / (yh - yl)


def unit_design(x: np.ndarray, y: np.ndarray) -> Design:
    return Design(
        y=y,
        X=np.column_stack([np.ones_like(x), x]),
        y_name="y",
        term_names=("Intercept", "x"),
        y_bounds=(0.0, 1.0),
        x_bounds=np.array([[1.0, 1.0], [0.0, 1.0]]),
        intercept_index=0,
    )


# --------------------------------------------------------------------------
# Registry and defaults
# --------------------------------------------------------------------------


def test_registered_with_table1_defaults() -> None:
    spec = REGISTRY["gradient"]
    assert spec.options == {"variant": "pure", "T": 80, "tau": 1.0, "start": (0.5, 0.5)}
    assert spec.max_slopes == 1 and spec.needs_bounds and spec.estimators == frozenset({"ols"})
    assert gd.l1_sensitivity(1.0) == 4.0 and gd.l2_sensitivity(1.0) == pytest.approx(2 * math.sqrt(2))


# --------------------------------------------------------------------------
# Limit tests
# --------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["pure", "approx", "zcdp"])
def test_huge_budget_is_the_noiseless_descent_on_engel(variant: str) -> None:
    df = engel()
    res = dpstats.dp_ols(
        "foodexp ~ income",
        df,
        bounds=ENGEL_BOUNDS,
        method="gradient",
        variant=variant,
        random_state=3,
        se_share=0,
        **HUGE[variant],
    )
    u, v = df.income.to_numpy() / 5000, df.foodexp.to_numpy() / 2500
    got = unit_predictions(res.params.to_numpy(), ENGEL_BOUNDS["income"], ENGEL_BOUNDS["foodexp"])
    np.testing.assert_allclose(got, noiseless(u, v), atol=1e-6)
    # Optimisation tolerance of the paper's T = 80 on this ill-conditioned design (module docstring).
    assert np.abs(got - ols_predictions(u, v)).max() < 0.05
    assert np.all(np.isnan(res.bse.to_numpy())) and "se_share=0" in res.se_note


def test_engel_converges_to_statsmodels_ols_with_more_rounds() -> None:
    df = engel()
    ols = sm.OLS(df.foodexp, sm.add_constant(df.income)).fit()
    u, v = df.income.to_numpy() / 5000, df.foodexp.to_numpy() / 2500
    target = ols_predictions(u, v)
    gaps = {}
    for T in (80, 400, 2000):
        res = dpstats.dp_ols(
            "foodexp ~ income",
            df,
            rho=5e17,
            bounds=ENGEL_BOUNDS,
            method="gradient",
            variant="zcdp",
            T=T,
            random_state=0,
        )
        got = unit_predictions(res.params.to_numpy(), ENGEL_BOUNDS["income"], ENGEL_BOUNDS["foodexp"])
        gaps[T] = np.abs(got - target).max()
        if T == 2000:
            np.testing.assert_allclose(res.params.to_numpy(), ols.params.to_numpy(), rtol=1e-6)
    assert gaps[80] > gaps[400] > gaps[2000]
    assert gaps[400] < 1e-4 and gaps[2000] < 1e-8


@pytest.mark.parametrize(("n", "var_x", "sd_e"), [(30, 0.01, 0.1), (1000, 0.05, 0.01), (10000, 0.01, 0.01)])
def test_synthetic_design_converges_at_T80(n: int, var_x: float, sd_e: float) -> None:
    u, v = synthetic(n, var_x, sd_e, seed=n)
    target = ols_predictions(u, v)
    for variant, budget in HUGE.items():
        privacy = PrivacyRequest(budget.get("eps"), budget.get("delta", 0.0), budget.get("rho"))
        release = gd.fit(unit_design(u, v), privacy, np.random.default_rng(1), variant=variant)
        got = unit_predictions(release.params, (0.0, 1.0), (0.0, 1.0))
        assert np.abs(got - target).max() < 1e-4


def test_user_units_round_trip() -> None:
    """Rescaled bounds give the same fit in the user's units (CenteredUnitScale is exact)."""
    u, v = synthetic(500, 0.05, 0.1, seed=5)
    data = pd.DataFrame({"x": 10 + 40 * u, "y": -3 + 6 * v})
    res = dpstats.dp_ols(
        "y ~ x", data, eps=1e9, bounds={"x": (10, 50), "y": (-3, 3)}, method="gradient", random_state=1
    )
    p25, p75 = noiseless(u, v)
    slope_unit, intercept_unit = 2 * (p75 - p25), 1.5 * p25 - 0.5 * p75
    slope = slope_unit * 6 / 40
    intercept = -3 + 6 * intercept_unit - slope * 10
    np.testing.assert_allclose(res.params.to_numpy(), [intercept, slope], rtol=1e-6, atol=1e-6)


def test_seeded_and_always_finite() -> None:
    """Reproducible with random_state; finite output at a tiny eps and on degenerate data (no ⊥)."""
    df = engel()
    kw = {"bounds": ENGEL_BOUNDS, "method": "gradient"}
    a = dpstats.dp_ols("foodexp ~ income", df, eps=0.5, random_state=7, **kw)
    b = dpstats.dp_ols("foodexp ~ income", df, eps=0.5, random_state=7, **kw)
    np.testing.assert_array_equal(a.params.to_numpy(), b.params.to_numpy())
    const = pd.DataFrame({"income": np.full(50, 1000.0), "foodexp": np.full(50, 500.0)})
    for data, eps in ((df, 1e-6), (const, 1.0), (const, 1e9)):
        for variant, budget in (
            ("pure", {"eps": eps}),
            ("approx", {"eps": eps, "delta": 1e-9}),
            ("zcdp", {"rho": eps}),
        ):
            res = dpstats.dp_ols("foodexp ~ income", data, variant=variant, random_state=2, **budget, **kw)
            assert np.all(np.isfinite(res.params.to_numpy())) and not res.failed


# --------------------------------------------------------------------------
# What each variant reports
# --------------------------------------------------------------------------


def _fit(variant: str, eps: float | None, delta: float = 0.0, rho: float | None = None):
    return dpstats.dp_ols(
        "foodexp ~ income",
        engel(),
        eps=eps,
        delta=delta,
        rho=rho,
        bounds=ENGEL_BOUNDS,
        method="gradient",
        variant=variant,
        random_state=0,
    )


def test_pure_reports_eps() -> None:
    spent = _fit("pure", 2.0).privacy
    assert (spent.notion, spent.eps, spent.delta, spent.rho) == ("pure", 2.0, 0.0, None)
    assert sum(part for _, part in spent.split) == pytest.approx(2.0)


def test_approx_reports_eps_delta_and_the_rho_used() -> None:
    spent = _fit("approx", 1.0, 1e-6).privacy
    assert (spent.notion, spent.eps, spent.delta) == ("approx", 1.0, 1e-6)
    assert spent.rho == approx_to_zcdp_rho(1.0, 1e-6)
    assert zcdp_to_approx_eps(spent.rho, 1e-6) <= 1.0 < zcdp_to_approx_eps(spent.rho * (1 + 1e-9), 1e-6)
    assert "rho" in spent.describe() or "rho" in " ".join(spent.caveats)


def test_zcdp_given_rho_reports_rho_and_implied_eps_delta() -> None:
    spent = _fit("zcdp", None, rho=0.5).privacy
    assert (spent.notion, spent.rho, spent.delta) == ("zcdp", 0.5, DEFAULT_REPORT_DELTA)
    assert spent.eps == pytest.approx(zcdp_to_approx_eps(0.5, DEFAULT_REPORT_DELTA))
    assert any("default delta" in c for c in spent.caveats)
    spent = _fit("zcdp", None, 1e-9, rho=0.5).privacy
    assert (spent.rho, spent.delta) == (0.5, 1e-9) and spent.eps == zcdp_to_approx_eps(0.5, 1e-9)
    assert not any("default delta" in c for c in spent.caveats)


@pytest.mark.parametrize("eps", [0.1, 1.0, 5.76, 20.0])
@pytest.mark.parametrize("delta", [1e-9, 1e-6, 1e-3])
def test_zcdp_given_eps_and_delta_never_reports_more_than_passed(eps: float, delta: float) -> None:
    """eps is the call's total: the rho used is the largest whose (eps, delta) guarantee meets the eps passed.

    Before, eps = 1, delta = 1e-6 was read as rho = eps^2 / 2 and reported eps = 5.76.
    """
    spent = _fit("zcdp", eps, delta).privacy
    assert (spent.notion, spent.eps, spent.delta) == ("zcdp", eps, delta)
    assert spent.rho == approx_to_zcdp_rho(eps, delta)
    assert zcdp_to_approx_eps(spent.rho, delta) <= eps < zcdp_to_approx_eps(spent.rho * (1 + 1e-9), delta)


def test_zcdp_noise_follows_the_rho_used() -> None:
    """The replayed Gaussian rounds spend rho/T each, with the rho the conversion gives (not eps^2 / 2)."""
    from dpstats.privacy.noise import recording

    u, v = synthetic(100, 0.05, 0.1, seed=1)
    with recording() as log:
        _, spent = gd.fit_unit(u, v, PrivacyRequest(1.0, 1e-6), np.random.default_rng(0), variant="zcdp", T=10)
    assert [r.rho for r in log] == pytest.approx([approx_to_zcdp_rho(1.0, 1e-6) / 10] * 10)
    assert spent.eps == 1.0


@pytest.mark.parametrize(
    ("budget", "match"),
    [
        ({"eps": 1.0}, "variant='zcdp' needs rho"),
        ({"eps": 1.0, "rho": 0.5}, "exactly one of eps"),
        ({}, "exactly one of eps"),
        ({"rho": -1.0}, "rho must be"),
    ],
)
def test_zcdp_budget_errors(budget: dict, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        dpstats.dp_ols("foodexp ~ income", engel(), bounds=ENGEL_BOUNDS, method="gradient", variant="zcdp", **budget)


def test_rho_is_refused_by_mechanisms_that_are_not_zcdp() -> None:
    for method, options in (("noisystats", {}), ("theilsen", {}), ("gradient", {"variant": "pure"}), ("kng", {})):
        with pytest.raises(ValueError, match="rho"):
            dpstats.dp_ols("foodexp ~ income", engel(), rho=0.5, bounds=ENGEL_BOUNDS, method=method, **options)


def test_per_round_budget_in_the_noise_records() -> None:
    from dpstats.privacy.noise import recording

    u, v = synthetic(100, 0.05, 0.1, seed=1)
    requests = (("pure", PrivacyRequest(2.0), "l1"), ("zcdp", PrivacyRequest(None, rho=2.0), "l2"))
    for variant, privacy, norm in (*requests, ("approx", PrivacyRequest(2.0, 1e-6), "l2")):
        with recording() as log:
            _, spent = gd.fit_unit(u, v, privacy, np.random.default_rng(0), variant=variant, T=10)
        assert len(log) == 10 and {r.norm for r in log} == {norm}
        if variant == "pure":
            assert sum(r.eps for r in log) == pytest.approx(2.0)
            assert {r.sensitivity for r in log} == {4.0}
        else:
            assert sum(r.rho for r in log) == pytest.approx(spent.rho)
            assert [r.sensitivity for r in log] == pytest.approx([2 * math.sqrt(2)] * 10)


# --------------------------------------------------------------------------
# Bad inputs
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "delta", "match"),
    [
        ({"T": 81}, 0.0, "T must be an even integer"),
        ({"T": 0}, 0.0, "T must be an even integer"),
        ({"T": 1}, 0.0, "T must be an even integer"),
        ({"T": 8.0}, 0.0, "T must be an even integer"),
        ({"T": True}, 0.0, "T must be an even integer"),
        ({"tau": 0}, 0.0, "tau"),
        ({"tau": -1.0}, 0.0, "tau"),
        ({"tau": float("nan")}, 0.0, "tau"),
        ({"variant": "renyi"}, 0.0, "variant must be one of"),
        ({"variant": "approx"}, 0.0, "variant='approx' needs delta > 0"),
        ({"variant": "pure"}, 1e-6, "variant='pure' is pure DP: delta must be 0"),
        ({}, 1e-6, "variant='pure' is pure DP"),
        ({"start": (0.5,)}, 0.0, "start must be two finite numbers"),
        ({"start": (0.5, float("inf"))}, 0.0, "start must be two finite numbers"),
        ({"start": "ab"}, 0.0, "start must be two finite numbers"),
        ({"eta": 1.0}, 0.0, "unknown option"),
    ],
)
def test_bad_options_raise_naming_the_option(options: dict, delta: float, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        dpstats.dp_ols(
            "foodexp ~ income", engel(), eps=1.0, delta=delta, bounds=ENGEL_BOUNDS, method="gradient", **options
        )


def test_budget_too_small_for_floats_is_refused() -> None:
    u, v = synthetic(50, 0.05, 0.1, seed=0)
    for variant, privacy in (("pure", PrivacyRequest(1e-320)), ("zcdp", PrivacyRequest(None, rho=5e-324))):
        with pytest.raises(ValueError, match="too small"):
            gd.fit_unit(u, v, privacy, np.random.default_rng(0), variant=variant)
    p, _ = gd.fit_unit(u, v, PrivacyRequest(1e-300), np.random.default_rng(0), variant="pure")
    assert np.all(np.isfinite(p))


def test_shape_errors() -> None:
    df = engel().assign(z=1.0)
    bounds = {**ENGEL_BOUNDS, "z": (0, 2)}
    with pytest.raises(ValueError, match="at most 1 regressor"):
        dpstats.dp_ols("foodexp ~ income + z", df, eps=1.0, bounds=bounds, method="gradient")
    with pytest.raises(ValueError, match="one regressor plus an intercept"):
        dpstats.dp_ols("foodexp ~ income - 1", df, eps=1.0, bounds=bounds, method="gradient")


def test_noisystats_delta_rule_unchanged() -> None:
    with pytest.raises(ValueError, match="method='noisystats' is pure DP: delta must be 0"):
        dpstats.dp_ols("foodexp ~ income", engel(), eps=1.0, delta=1e-6, bounds=ENGEL_BOUNDS, method="noisystats")
    assert np.isfinite(
        dpstats.dp_ols("foodexp ~ income", engel(), eps=1e6, bounds=ENGEL_BOUNDS, method="noisystats").params
    ).all()


# --------------------------------------------------------------------------
# zCDP <-> (eps, delta) conversions against the exact Gaussian privacy profile
# --------------------------------------------------------------------------


def _delta_by_integration(mu: float, eps: float) -> float:
    """delta(eps) = E[(1 - e^(eps - Z))_+], Z ~ N(mu^2/2, mu^2) the Gaussian mechanism's privacy loss."""
    m, s = mu * mu / 2, mu

    def integrand(z: float) -> float:
        return -math.expm1(eps - z) * stats.norm.pdf(z, m, s)

    value, _ = integrate.quad(integrand, eps, max(eps, m) + 40 * s, limit=200, epsabs=1e-300, epsrel=1e-10)
    return value


@pytest.mark.parametrize("mu", [0.05, 0.3, 1.0, 3.0, 10.0])
def test_balle_wang_curve_matches_integration(mu: float) -> None:
    for eps in (0.01, 0.5, 2.0, mu * mu / 2 + 3 * mu):
        exact = _delta_by_integration(mu, eps)
        assert gaussian_delta(mu, eps) == pytest.approx(exact, rel=1e-6, abs=1e-15)


@pytest.mark.parametrize("rho", [1e-4, 1e-2, 0.125, 0.5, 2.0, 20.0])
@pytest.mark.parametrize("delta", [2.0**-30, 1e-6, 1e-3, 0.1])
def test_conversion_never_understates_delta(rho: float, delta: float) -> None:
    """T rounds of rho/T-zCDP Gaussian noise compose into one Gaussian with mu = sqrt(2 rho).

    The converted eps must give an exact delta at most the stated delta (a valid
    conversion), and be at least the exact eps (no conversion beats the truth).
    """
    eps = zcdp_to_approx_eps(rho, delta)
    mu = math.sqrt(2 * rho)
    assert gaussian_delta(mu, eps) <= delta
    assert _delta_by_integration(mu, eps) <= delta * (1 + 1e-6)
    assert eps >= rho
    assert eps <= rho + 2 * math.sqrt(rho * math.log(1 / delta)) + 1e-12  # never worse than Prop 1.3


def test_approx_to_zcdp_rho_is_the_largest_valid_rho() -> None:
    for eps in (0.01, 0.1, 1.0, 10.0, 1e9):
        for delta in (2.0**-30, 1e-6, 1e-2):
            rho = approx_to_zcdp_rho(eps, delta)
            assert zcdp_to_approx_eps(rho, delta) <= eps
            assert zcdp_to_approx_eps(rho * (1 + 1e-9), delta) > eps
            assert gaussian_delta(math.sqrt(2 * rho), eps) <= delta
    with pytest.raises(ValueError, match="delta must be > 0"):
        approx_to_zcdp_rho(1.0, 0.0)

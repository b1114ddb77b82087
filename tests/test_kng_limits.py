"""KNG at eps = 1e9 against statsmodels' QuantReg and OLS.

Reimherr & Awan (2019), Theorem 3.1: the KNG density ``~ exp(-c ||grad l||_K)``
concentrates, as eps grows, on the set where the gradient norm is smallest.

* Least squares: that set is the OLS fit (when it lies in the domain), and
  the draw is exact (rejection, dpstats/mechanisms/kng/sampler.py), so at
  eps = 1e9 it equals OLS up to the K-norm noise of scale 1/c ~ 1e-8 amplified
  by the design's conditioning: tested at 1e-6 relative, as NoisyStats.
* Quantile regression: the gradient ``sum_i x_i (1{y_i <= x_i'theta} - tau)``
  is piecewise constant, so the set is a union of cells of the arrangement of
  the lines ``y_i = x_i'theta``, not a point. It is computed here by brute
  force (every vertex of the arrangement, one point in each adjacent cell), and
  the justified tolerance is its extent: the draw must lie in it, and the test
  shows where it sits relative to QuantReg (within one of QuantReg's standard
  errors on both data sets). On engel it spans intercepts 72.3 to 92.1 and
  slopes 0.548 to 0.570 around QuantReg's (81.5, 0.560).

In two dimensions (engel) the chain reaches the cells of the exact minimum.
In three (Grunfeld, two firms) it reaches cells within 0.003 of the smallest
gradient norm but not always the smallest itself, which at eps = 1e9 is
e^-600000 times denser: the test there uses the set within 1% of one
row's contribution to the gradient (see :func:`check_quantile_limit`). The chains
are seeded; measured on engel, 50 of 50 chains reach the minimum.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import dpstats
from dpstats.frontend.formula import build_design
from dpstats.mechanisms.kng import mechanism as kng
from dpstats.mechanisms.kng import quantile_lines as kng_quantile

EPS = 1e9
ENGEL_BOUNDS = {"income": (0.0, 5000.0), "foodexp": (0.0, 2500.0)}
GRUNFELD_FIRMS = ["General Electric", "General Motors"]  # sorted: statsmodels' baseline
GRUNFELD_BOUNDS = {"invest": (0.0, 2000.0), "value": (0.0, 7000.0)}


@pytest.fixture(scope="module")
def grunfeld_firms(grunfeld: pd.DataFrame) -> pd.DataFrame:
    data = grunfeld[grunfeld["firm"].isin(GRUNFELD_FIRMS)].copy()
    data["firm"] = data["firm"].astype(str)
    return data


def scaled_problem(formula: str, data: pd.DataFrame, bounds: dict, levels: dict | None):
    """The design, its map onto the scaled problem, and the scaled (X, v), as kng.fit builds them."""
    design, _ = build_design(formula, data, bounds, levels, need_bounds=True)
    scale = kng.UnitBoxScale.from_design(design)
    X, v = scale.transform(design)
    return design, scale, X, v


def gradient_norm(X: np.ndarray, v: np.ndarray, tau: float, phi: np.ndarray) -> np.ndarray:
    """``||g(phi)||_inf`` at the rows of ``phi`` (section 4.5's gradient)."""
    target = kng_quantile.QuantileTarget(X, v, tau, 1.0, "linf")
    return np.concatenate([target.utility(chunk) for chunk in np.array_split(phi, max(1, phi.shape[0] // 4000))])


def smallest_gradient_set(X: np.ndarray, v: np.ndarray, tau: float, B: float, slack: float):
    """Brute force: the smallest ``||g||_inf`` over Theta, and the vertices of the cells within ``slack`` of it.

    Every vertex of the arrangement solves ``X_S phi = v_S`` for d rows S; the
    point ``phi + r X_S^{-1} s`` (s in {-1, 1}^d, r small) lies in each of the
    2^d cells around it. Every cell is the convex hull of its vertices, so the
    returned vertices' bounding box contains every cell at the minimum.
    """
    n, d = X.shape
    subsets = np.array(list(itertools.combinations(range(n), d)))
    A, b = X[subsets], v[subsets]
    keep = np.abs(np.linalg.det(A)) > 1e-12
    A, b = A[keep], b[keep]
    vertices = np.linalg.solve(A, b[..., None])[..., 0]
    inside = np.abs(vertices).sum(axis=1) <= B
    A, vertices = A[inside], vertices[inside]
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=d)))
    offsets = np.linalg.solve(A[:, None], np.broadcast_to(signs[None, :, :, None], (A.shape[0], *signs.shape, 1)))
    points = (vertices[:, None, :] + 1e-7 * offsets[..., 0]).reshape(-1, d)
    norms = gradient_norm(X, v, tau, points).reshape(vertices.shape[0], -1)
    smallest = norms.min()
    return smallest, vertices[(norms <= smallest + slack).any(axis=1)]


def check_quantile_limit(formula, data, bounds, levels, seeds, coarse: bool = False) -> None:
    """The draws lie in the brute-forced limit set; its extent is the tolerance against QuantReg.

    The set is the cells whose gradient norm is within ``20 / c`` of the
    smallest (beyond that a cell carries < e^-20 of the mass per unit volume),
    or, where the chain is known not to resolve the exact minimum
    (``coarse``), within 1% of one row's contribution to the gradient (C_X = 1
    on the scaled problem; QuantReg's own optimality conditions do not tell
    apart points whose gradients differ by less than d C_X).
    """
    tau = 0.5
    design, scale, X, v = scaled_problem(formula, data, bounds, levels)
    B = kng.DEFAULT_B["quantreg"]
    c = EPS / (2.0 * kng.quantile_sensitivity(tau, "linf", scale.column_bounds(design)))
    slack = 0.01 if coarse else 20.0 / c
    smallest, vertices = smallest_gradient_set(X, v, tau, B, slack)
    corners = np.array([scale.to_user(phi) for phi in vertices])
    lo, hi = corners.min(axis=0), corners.max(axis=0)
    width = hi - lo
    reference = smf.quantreg(formula, data).fit(q=tau)
    for seed in seeds:
        res = dpstats.dp_quantreg(
            formula, data, q=tau, eps=EPS, bounds=bounds, levels=levels, method="kng", random_state=seed
        )
        theta = res.params.to_numpy()
        assert gradient_norm(X, v, tau, scale.to_scaled(theta)[None, :])[0] <= smallest + slack
        assert np.all(theta >= lo - 1e-9 * np.abs(lo)) and np.all(theta <= hi + 1e-9 * np.abs(hi))
        assert np.all(np.abs(theta - reference.params.to_numpy()) <= width)
    # Where KNG's limit sits relative to QuantReg: within one standard error of it.
    assert np.all(np.maximum(np.abs(lo - reference.params), np.abs(hi - reference.params)) <= reference.bse)


@pytest.mark.slow
def test_median_regression_engel_lies_in_kng_limit_set(engel: pd.DataFrame) -> None:
    check_quantile_limit("foodexp ~ income", engel, ENGEL_BOUNDS, None, seeds=range(3))


@pytest.mark.slow
def test_median_regression_with_a_categorical_term_lies_in_kng_limit_set(grunfeld_firms: pd.DataFrame) -> None:
    levels = {"firm": GRUNFELD_FIRMS}
    check_quantile_limit(
        "invest ~ value + C(firm)", grunfeld_firms, GRUNFELD_BOUNDS, levels, seeds=range(3), coarse=True
    )


@pytest.mark.parametrize(
    ("formula", "bounds", "levels"),
    [
        ("foodexp ~ income", ENGEL_BOUNDS, None),
        ("invest ~ value + C(firm)", GRUNFELD_BOUNDS, {"firm": GRUNFELD_FIRMS}),
    ],
)
def test_least_squares_equals_ols(formula, bounds, levels, engel, grunfeld_firms) -> None:
    """The default B grows with n eps (kng.default_radius): at eps = 1e9 it holds engel's OLS line, which leaves
    the declared foodexp range at income 5000 (``||phi||_1 = 1.06 > 1``)."""
    data = engel if "foodexp" in formula else grunfeld_firms
    reference = smf.ols(formula, data).fit().params.to_numpy()
    for seed in range(3):
        res = dpstats.dp_ols(formula, data, eps=EPS, bounds=bounds, levels=levels, method="kng", random_state=seed)
        assert res.hyperparameters["B"] > 7.0 and res.bias_source is None  # 8.41 (engel), 7.58 (40 rows of grunfeld)
        # the draw at eps = 1e9 deviates by about 1e-7 of the response's declared range (2,000 or 2,500)
        np.testing.assert_allclose(res.params.to_numpy(), reference, rtol=1e-6, atol=1e-3)


def test_least_squares_outside_the_domain_lands_on_its_boundary(engel: pd.DataFrame) -> None:
    """With B = 1 (the paper's) engel's OLS fit is outside Theta: KNG returns the best fit on its boundary."""
    _, scale, _, _ = scaled_problem("foodexp ~ income", engel, ENGEL_BOUNDS, None)
    ols = smf.ols("foodexp ~ income", engel).fit().params.to_numpy()
    assert np.abs(scale.to_scaled(ols)).sum() > 1.0
    res = dpstats.dp_ols("foodexp ~ income", engel, eps=EPS, bounds=ENGEL_BOUNDS, method="kng", B=1.0, random_state=0)
    # the draw's distance from the boundary is of the order of the noise, Delta / eps = 8e-9 here
    assert np.abs(scale.to_scaled(res.params.to_numpy())).sum() == pytest.approx(1.0, abs=1e-7)


def test_an_estimate_on_the_boundary_says_so(engel: pd.DataFrame) -> None:
    """B = 1 cuts engel's OLS fit (above): its status is biased, with the boundary named in the summary, glance()
    and tidy(); B = 2 does not."""
    kw = {"eps": EPS, "bounds": ENGEL_BOUNDS, "method": "kng", "random_state": 0}
    cut = dpstats.dp_ols("foodexp ~ income", engel, B=1.0, **kw)
    assert cut.status == "biased" and "boundary of KNG's domain" in cut.bias_source
    assert "biased: the interval does not cover the pull towards the boundary" in cut.summary().as_text()
    assert cut.glance()["status"].iloc[0] == "biased" and set(cut.tidy()["status"]) == {"biased"}
    free = dpstats.dp_ols("foodexp ~ income", engel, B=2.0, **kw)
    assert free.status == "ok" and free.bias_source is None


def test_a_law_pinned_against_the_boundary_gives_the_domain_rather_than_a_point(engel: pd.DataFrame) -> None:
    """With B = 1 cutting engel's OLS fit, at eps = 100 the truncated draws of a coefficient all equal the estimate
    (its interval was a point, SE 0; then infinite): now each interval is the coefficient's whole range over Theta
    at every level, ``offset +- B max|a|`` (intercept 1250 +- 1250, slope 0 +- 1250 / 2500), and the fit is biased."""
    res = dpstats.dp_ols("foodexp ~ income", engel, eps=100.0, bounds=ENGEL_BOUNDS, method="kng", B=1.0, random_state=2)
    assert res.status == "biased" and "untruncated noise law lies outside" in res.bias_source
    assert "no spread" in res.se_note and np.all(np.isfinite(res.bse)) and np.all(res.bse > 0)
    for alpha in (0.01, 0.05, 0.5):
        ci = res.conf_int(alpha).to_numpy()
        np.testing.assert_allclose(ci, [[0.0, 2500.0], [-0.5, 0.5]], atol=1e-9)

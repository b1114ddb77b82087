"""method="kng" (Reimherr & Awan 2019): validation, sensitivities, the scaled problem and the front end.

What is tested here, without relying on the sampler's internals
(dpstats/mechanisms/kng/sampler.py; the quality of its draws is tested elsewhere):

* bad options and inputs raise ValueError before any data are read, naming the
  problem and quoting no data value;
* the sensitivities of dpstats/mechanisms/kng/mechanism.py against a brute-force search
  over replace-one neighbours on the scaled problem: the search never exceeds
  them, and attains them where the module docstring says they are tight;
* :class:`~dpstats.mechanisms.kng.mechanism.UnitBoxScale` is an exact reparametrisation;
* the public API: the budget split over several quantiles, the reported
  privacy, hyperparameters and standard errors (finite with the default
  ``se_share``, NaN with ``se_share=0``: tests/test_kng_inference.py tests them),
  and categorical terms.

Everything random is seeded. The front-end fits use a short chain (``steps``)
to stay fast: their draws are not checked for quality here.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy.spatial.distance import pdist

import dpstats
from dpstats.audit.neighbours import design_from_arrays
from dpstats.mechanisms import PrivacyRequest
from dpstats.mechanisms.kng import mechanism as kng
from dpstats.mechanisms.kng.inference import DEFAULT_SHARE
from dpstats.mechanisms.kng.mechanism import UnitBoxScale, box_norm, least_squares_sensitivity, quantile_sensitivity
from dpstats.results.quantile_fits import DPQuantileFits

NORMS = ("linf", "l2", "l1")
TAUS = (0.1, 0.5, 0.9)
BOUNDS = {"y": (-5.0, 20.0), "x": (0.0, 10.0), "z": (-1.0, 3.0)}
LEVELS = {"g": ["a", "b", "c"]}
#: Distinctive data values (the extremes of x and y) that no error message may quote.
SENTINELS = {"x": (0.0123457, 9.87654), "y": (-4.56789, 19.8765)}


def make_frame(n: int = 50, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 9.5, n)
    z = rng.uniform(-1.0, 3.0, n)
    g = rng.choice(LEVELS["g"], n)
    y = np.clip(1.0 + 1.5 * x - z + rng.normal(0.0, 1.0, n), -4.0, 19.0)
    x[:2], y[:2] = SENTINELS["x"], SENTINELS["y"]
    return pd.DataFrame({"y": y, "x": x, "z": z, "g": g})


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return make_frame()


# --------------------------------------------------------------------------
# 1. Validation
# --------------------------------------------------------------------------


def assert_no_data_in(message: str) -> None:
    """The message quotes none of the sentinel data values (in any usual rounding)."""
    for values in SENTINELS.values():
        for v in values:
            for text in (repr(v), f"{v:g}", f"{v:.4g}", f"{v:.3g}", f"{v:.2f}"):
                assert text not in message, (text, message)


def raises_clean(match: str, call, *args, **kwargs) -> str:
    with pytest.raises(ValueError, match=match) as info:
        call(*args, **kwargs)
    message = str(info.value)
    assert_no_data_in(message)
    return message


BAD_QUANTILES = [0, 1, -0.1, 1.5, math.nan, True, 0.0, 1.0, np.float64(1.0), np.bool_(True)]


@pytest.mark.parametrize("q", BAD_QUANTILES, ids=repr)
def test_bad_quantile(frame: pd.DataFrame, q: object) -> None:
    message = raises_clean(
        r"q must be a number in \(0, 1\)", dpstats.dp_quantreg, "y ~ x", frame, q=q, eps=1, bounds=BOUNDS, method="kng"
    )
    assert message.startswith("q ")
    # inside a list too, and at the mechanism's own check
    raises_clean(r"q must be", dpstats.dp_quantreg, "y ~ x", frame, q=[0.5, q], eps=1, bounds=BOUNDS, method="kng")
    raises_clean(r"q must be a number in \(0, 1\)", kng.check_quantile, q)


def test_bad_quantile_lists(frame: pd.DataFrame) -> None:
    kwargs = dict(eps=1, bounds=BOUNDS, method="kng")
    raises_clean("duplicated quantiles", dpstats.dp_quantreg, "y ~ x", frame, q=[0.25, 0.5, 0.25], **kwargs)
    raises_clean("duplicated quantiles", dpstats.dp_quantreg, "y ~ x", frame, q=np.array([0.3, 0.3]), **kwargs)
    raises_clean("q must not be an empty list", dpstats.dp_quantreg, "y ~ x", frame, q=[], **kwargs)
    raises_clean("q must not be an empty list", dpstats.dp_quantreg, "y ~ x", frame, q=(), **kwargs)


@pytest.mark.parametrize("B", [0, 0.0, -1.0, math.inf, -math.inf, math.nan, True, "1"], ids=repr)
def test_bad_radius(frame: pd.DataFrame, B: object) -> None:
    match = r"^B \(the radius of the domain .*\) must be a positive number"
    raises_clean(match, dpstats.dp_ols, "y ~ x", frame, eps=1, bounds=BOUNDS, method="kng", B=B)
    raises_clean(match, dpstats.dp_quantreg, "y ~ x", frame, q=0.5, eps=1, bounds=BOUNDS, method="kng", B=B)
    raises_clean(match, kng.check_B, B)


@pytest.mark.parametrize("norm", ["l3", "L2", "inf", "", None, 2, "linf "], ids=repr)
def test_bad_norm(frame: pd.DataFrame, norm: object) -> None:
    match = r"^norm must be one of \('linf', 'l2', 'l1'\)"
    raises_clean(match, dpstats.dp_ols, "y ~ x", frame, eps=1, bounds=BOUNDS, method="kng", norm=norm)
    raises_clean(match, dpstats.dp_quantreg, "y ~ x", frame, eps=1, bounds=BOUNDS, method="kng", norm=norm)
    raises_clean(match, kng.check_norm, norm)


@pytest.mark.parametrize("steps", [0, -3, 2.5, 10.0, True, "10", np.int64(0)], ids=repr)
def test_bad_steps(frame: pd.DataFrame, steps: object) -> None:
    match = r"^steps must be a positive integer"
    raises_clean(match, dpstats.dp_ols, "y ~ x", frame, eps=1, bounds=BOUNDS, method="kng", steps=steps)
    raises_clean(match, dpstats.dp_quantreg, "y ~ x", frame, eps=1, bounds=BOUNDS, method="kng", steps=steps)
    raises_clean(match, kng.check_steps, steps)


def test_good_options_are_normalised() -> None:
    assert kng.check_steps(np.int64(7)) == 7 and isinstance(kng.check_steps(np.int64(7)), int)
    assert kng.check_B(np.float32(0.5)) == 0.5 and kng.check_B(3) == 3.0
    assert kng.check_quantile(np.float64(0.25)) == 0.25
    assert [kng.check_norm(n) for n in NORMS] == list(NORMS)


def test_delta_is_refused(frame: pd.DataFrame) -> None:
    match = r"method='kng' is pure DP: delta must be 0"
    raises_clean(match, dpstats.dp_ols, "y ~ x", frame, eps=1, bounds=BOUNDS, method="kng", delta=1e-6)
    raises_clean(match, dpstats.dp_quantreg, "y ~ x", frame, eps=1, bounds=BOUNDS, method="kng", delta=1e-6)
    raises_clean(
        match, dpstats.dp_quantreg, "y ~ x", frame, q=[0.2, 0.8], eps=1, bounds=BOUNDS, method="kng", delta=1e-6
    )
    raises_clean(match, kng.check_request, PrivacyRequest(1.0, 1e-6), kng.DEFAULTS)
    kng.check_request(PrivacyRequest(1.0), kng.DEFAULTS)  # and delta = 0 passes


@pytest.mark.parametrize(
    ("formula", "bounds", "match"),
    [
        ("y ~ x + z", {"y": BOUNDS["y"], "x": BOUNDS["x"]}, r"cannot derive bounds for the formula terms 'z'"),
        ("y ~ x", {"x": BOUNDS["x"]}, r"cannot derive bounds for the formula terms 'y'"),
        ("y ~ x + z", {**BOUNDS, "z": (0.0, math.inf)}, r"bounds\['z'\] must be finite"),
        ("y ~ x", {**BOUNDS, "x": (-math.inf, math.inf)}, r"bounds\['x'\] must be finite"),
        ("y ~ x", {**BOUNDS, "y": (-math.inf, 20.0)}, r"bounds\['y'\] must be finite"),
        # finite declared bounds whose transform is unbounded on them
        ("y ~ np.log(x)", BOUNDS, r"'np.log\(x\)' is undefined on part of the declared bounds"),
        ("y ~ I(1 / x)", BOUNDS, r"'I\(1 / x\)' is undefined on part of the declared bounds"),
        ("y ~ np.exp(x)", {**BOUNDS, "x": (0.0, 1000.0)}, r"cannot derive bounds for the formula terms 'np.exp\(x\)'"),
    ],
    ids=["missing z", "missing y", "z (0, inf)", "x (-inf, inf)", "y (-inf, 20)", "log x", "1/x", "exp x"],
)
def test_unbounded_regressors(frame: pd.DataFrame, formula: str, bounds: dict, match: str) -> None:
    raises_clean(match, dpstats.dp_ols, formula, frame, eps=1, bounds=bounds, method="kng", steps=2)
    raises_clean(match, dpstats.dp_quantreg, formula, frame, q=0.5, eps=1, bounds=bounds, method="kng", steps=2)


def test_scale_refuses_unbounded_or_flat_designs() -> None:
    X = np.column_stack([np.ones(4), [0.5, 1.0, 2.0, 3.0]])
    y = np.array([0.0, 0.5, -0.5, 1.0])
    match = r"needs finite bounds for the response and every regressor.*C_X"
    for x_bounds, y_bounds in [
        ([(0.0, math.inf)], (-1.0, 1.0)),
        ([(-math.inf, 3.0)], (-1.0, 1.0)),
        ([(0.0, math.nan)], (-1.0, 1.0)),
        ([(0.0, 3.0)], (-1.0, math.inf)),
    ]:
        design = design_from_arrays(y, X, y_bounds=y_bounds, x_bounds=x_bounds)
        raises_clean(match, UnitBoxScale.from_design, design)
    unbounded = design_from_arrays(y, X, y_bounds=(-1.0, 1.0), x_bounds=[(0.0, 3.0)])
    missing = type(unbounded)(**{**unbounded.__dict__, "x_bounds": None})
    raises_clean(match, UnitBoxScale.from_design, missing)
    flat = design_from_arrays(y, np.column_stack([np.ones(4), np.full(4, 2.0)]), y_bounds=(-1, 1), x_bounds=[(2, 2)])
    raises_clean(r"bounds of positive width", UnitBoxScale.from_design, flat)
    no_icpt = design_from_arrays(y, np.zeros((4, 1)), y_bounds=(-1, 1), x_bounds=[(0, 0)], intercept_index=None)
    raises_clean(r"bounds of positive width", UnitBoxScale.from_design, no_icpt)


# --------------------------------------------------------------------------
# 2. Sensitivities by brute force
# --------------------------------------------------------------------------

#: User-unit designs: slope bounds, whether there is an intercept, and the scaled
#: column bounds UnitBoxScale must give them.
DESIGNS = {
    "intercept + 1 slope": ([(0.0, 10.0)], True, [[1, 1], [-1, 1]]),
    "intercept + 3 slopes": ([(0.0, 10.0), (-5.0, 5.0), (100.0, 101.0)], True, [[1, 1], [-1, 1], [-1, 1], [-1, 1]]),
    "no intercept, [0.2, 1]": ([(2.0, 10.0)], False, [[0.2, 1.0]]),
    "no intercept, [0.2, 1] x [-0.5, 1]": ([(2.0, 10.0), (-5.0, 10.0)], False, [[0.2, 1.0], [-0.5, 1.0]]),
}
INTERCEPT_ONLY = np.array([[1.0, 1.0]])


def scaled_bounds(name: str) -> np.ndarray:
    """The scaled column bounds of a DESIGNS entry, from UnitBoxScale on a design built from arrays."""
    slope_bounds, intercept, _ = DESIGNS[name]
    lo = np.array([b[0] for b in slope_bounds])
    X = np.vstack([lo, lo])  # two rows on the lowest corner: only the bounds matter
    if intercept:
        X = np.column_stack([np.ones(2), X])
    design = design_from_arrays(
        [0.0, 1.0], X, y_bounds=(-3.0, 7.0), x_bounds=slope_bounds, intercept_index=0 if intercept else None
    )
    scale = UnitBoxScale.from_design(design)
    return scale.column_bounds(design)


@pytest.mark.parametrize("name", DESIGNS)
def test_scaled_column_bounds(name: str) -> None:
    np.testing.assert_allclose(scaled_bounds(name), DESIGNS[name][2], rtol=0, atol=1e-15)


def candidate_rows(bounds: np.ndarray, rng: np.random.Generator, n_random: int = 150) -> np.ndarray:
    """Rows x of the box: a grid per column (its ends included, so every corner) and uniform points."""
    free = int(np.sum(bounds[:, 0] < bounds[:, 1]))
    points = {0: 1, 1: 41, 2: 9}.get(free, 5)  # 41 points on [0.2, 1] include 0.5
    axes = [np.linspace(lo, hi, points) if lo < hi else np.array([lo]) for lo, hi in bounds]
    grid = np.array(list(itertools.product(*axes)))
    return np.vstack([grid, rng.uniform(bounds[:, 0], bounds[:, 1], size=(n_random, len(bounds)))])


def candidate_thetas(d: int, B: float, rng: np.random.Generator, n_random: int = 25) -> np.ndarray:
    """Points of Theta = {||theta||_1 <= B}: 0, the vertices +-B e_j, uniform points on its surface and inside."""
    directions = rng.laplace(size=(n_random, d))
    surface = B * directions / np.abs(directions).sum(axis=1, keepdims=True)
    inside = surface * rng.uniform(size=(n_random, 1)) ** (1.0 / d)
    return np.vstack([np.zeros(d), B * np.eye(d), -B * np.eye(d), surface, inside])


def max_gap(G: np.ndarray, norm: str) -> float:
    """``max_{g, g' rows of G} ||g - g'||_K``.

    linf: the largest range of a coordinate; l1: ``||z||_1 = max_s s'z`` over
    sign vectors s, so the largest range of a signed sum; l2: all pairs.
    """
    if norm == "linf":
        return float(np.ptp(G, axis=0).max())
    if norm == "l1":
        signs = np.array(list(itertools.product((-1.0, 1.0), repeat=G.shape[1])))
        return float(np.ptp(G @ signs.T, axis=0).max())
    return float(pdist(G, "euclidean").max())


def brute_force(loss: str, bounds: np.ndarray, norm: str, *, B: float, tau: float = 0.5, seed: int = 0) -> float:
    """Largest ``||grad_i(theta; x, v) - grad_i(theta; x', v')||_K`` found over theta in Theta and rows of the box.

    Least squares: ``2 (x'theta - v) x``; it is affine in v, so the K-norm of
    the difference is convex in (v, v') and v = +-1 suffice (random v are
    added anyway). Quantile: ``x (1{v <= x'theta} - tau)``; v = -1, 1, the
    tie v = x'theta (clipped to [-1, 1]) and random v.
    """
    rng = np.random.default_rng(seed)
    X = candidate_rows(bounds, rng)
    ones = np.ones(len(X))
    best = 0.0
    for theta in candidate_thetas(bounds.shape[0], B, rng):
        fitted = X @ theta
        if loss == "ls":
            vs = [-ones, ones, rng.uniform(-1.0, 1.0, len(X))]
            G = np.vstack([2.0 * (fitted - v)[:, None] * X for v in vs])
        else:
            vs = [-ones, ones, np.clip(fitted, -1.0, 1.0), rng.uniform(-1.0, 1.0, len(X))]
            G = np.vstack([X * ((v <= fitted) - tau)[:, None] for v in vs])
        best = max(best, max_gap(G, norm))
    return best


@pytest.mark.parametrize("norm", NORMS)
def test_max_gap_matches_all_pairs(norm: str) -> None:
    G = np.random.default_rng(3).normal(size=(60, 3))
    ords = {"linf": np.inf, "l2": 2, "l1": 1}
    naive = max(np.linalg.norm(a - b, ord=ords[norm]) for a in G for b in G)
    assert max_gap(G, norm) == pytest.approx(naive, rel=1e-12)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", DESIGNS)
@pytest.mark.parametrize("B", [1.0, 2.5, 10.0])  # 10: the default radius of CPS1988 at eps = 1e9
def test_least_squares_sensitivity_by_brute_force(name: str, norm: str, B: float) -> None:
    bounds = scaled_bounds(name)
    delta = least_squares_sensitivity(B, norm, bounds)
    found = brute_force("ls", bounds, norm, B=B)
    assert found <= delta * (1 + 1e-12)
    if norm == "linf" and DESIGNS[name][1]:  # the docstring: tight for linf with an intercept (at phi = B e_j)
        assert found >= 0.999 * delta


@pytest.mark.parametrize("B", [0.5, 1.0, 2.5])
def test_least_squares_closed_forms_with_an_intercept(B: float) -> None:
    for name, d in [("intercept + 1 slope", 2), ("intercept + 3 slopes", 4)]:
        bounds = scaled_bounds(name)
        assert least_squares_sensitivity(B, "linf", bounds) == pytest.approx(4 * (1 + B))
        assert least_squares_sensitivity(B, "l2", bounds) == pytest.approx(4 * (1 + B) * math.sqrt(d))
        assert least_squares_sensitivity(B, "l1", bounds) == pytest.approx(4 * (1 + B) * d)
        assert [box_norm(bounds, n) for n in NORMS] == pytest.approx([1, math.sqrt(d), d])


@pytest.mark.parametrize("B", [1.0, 2.5])
def test_least_squares_bound_is_loose_without_a_slope_pair(B: float) -> None:
    """Where no slope can flip a row's residual and sign together, the sup is below 4 (1 + B).

    One column u in [0.2, 1] without intercept: ``g = 2 (u phi - v) u`` ranges
    from ``-1/(2B)`` (u = 1/(2B), v = 1, phi = B) to ``2 (1 + B)`` (u = 1, v = -1).
    The intercept alone (a private mean): ``g = 2 (phi - v)`` moves by 4 at most.
    Either way the bound holds; it is not attained.
    """
    bounds = scaled_bounds("no intercept, [0.2, 1]")
    for norm in NORMS:
        assert brute_force("ls", bounds, norm, B=B) == pytest.approx(2 * (1 + B) + 1 / (2 * B), rel=1e-12)
        assert brute_force("ls", INTERCEPT_ONLY, norm, B=B) == pytest.approx(4.0, rel=1e-12)
        assert least_squares_sensitivity(B, norm, bounds) == least_squares_sensitivity(B, norm, INTERCEPT_ONLY)
        assert least_squares_sensitivity(B, norm, INTERCEPT_ONLY) == pytest.approx(4 * (1 + B))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", [*DESIGNS, "intercept only"])
@pytest.mark.parametrize("tau", TAUS)
def test_quantile_sensitivity_by_brute_force(name: str, norm: str, tau: float) -> None:
    """Exact on the box (the docstring): the search reaches it for every norm, and never exceeds it."""
    bounds = INTERCEPT_ONLY if name == "intercept only" else scaled_bounds(name)
    delta = quantile_sensitivity(tau, norm, bounds)
    found = brute_force("q", bounds, norm, B=2.0, tau=tau, seed=1)
    assert found <= delta * (1 + 1e-12)
    assert found >= 0.999 * delta


@pytest.mark.parametrize("tau", [*TAUS, 0.25, 0.75])
def test_quantile_closed_forms(tau: float) -> None:
    for name in ("intercept + 1 slope", "intercept + 3 slopes"):
        assert quantile_sensitivity(tau, "linf", scaled_bounds(name)) == pytest.approx(2 * max(tau, 1 - tau))
    for norm in NORMS:  # the intercept alone: Smith's (2011) private quantile, sensitivity 1
        assert quantile_sensitivity(tau, norm, INTERCEPT_ONLY) == pytest.approx(1.0)
    # no intercept, one column in [0.2, 1]: a row moving from w = -tau to w = 1 - tau at x = 1
    assert quantile_sensitivity(tau, "linf", scaled_bounds("no intercept, [0.2, 1]")) == pytest.approx(1.0)


@pytest.mark.parametrize("tau", [0.6, 0.75, 0.9])
@pytest.mark.parametrize("norm", ["linf", "l2"])
def test_papers_quantile_sensitivity_understates_above_the_median(tau: float, norm: str) -> None:
    """Section 4.5's ``Delta = 2 (1 - tau) C_X`` (C_X = sup ||x||_K) is exceeded for tau > 1/2."""
    for bounds in (scaled_bounds("intercept + 1 slope"), INTERCEPT_ONLY):
        paper = 2 * (1 - tau) * box_norm(bounds, norm)
        found = brute_force("q", bounds, norm, B=2.0, tau=tau, seed=2)
        assert found > 1.2 * paper
        assert quantile_sensitivity(tau, norm, bounds) >= found * (1 - 1e-12)
    # with a slope, two rows with w = -tau and opposite slopes move the slope coordinate by 2 tau
    assert brute_force("q", scaled_bounds("intercept + 1 slope"), "linf", B=2.0, tau=tau) == pytest.approx(2 * tau)


@pytest.mark.parametrize("tau", [0.1, 0.25, 0.5])
def test_papers_quantile_sensitivity_holds_up_to_the_median(tau: float) -> None:
    for bounds in (scaled_bounds("intercept + 1 slope"), INTERCEPT_ONLY):
        paper = 2 * (1 - tau) * box_norm(bounds, "linf")
        assert brute_force("q", bounds, "linf", B=2.0, tau=tau, seed=2) <= paper * (1 + 1e-12)


# --------------------------------------------------------------------------
# 3. The scaled problem
# --------------------------------------------------------------------------


def random_design(intercept_index: int | None, seed: int = 0, n: int = 30):
    rng = np.random.default_rng(seed)
    slope_bounds = [(0.0, 10.0), (-5.0, 1.0), (100.0, 104.0)] if intercept_index is not None else [(2, 10), (-5, 10)]
    lo, hi = np.array(slope_bounds, dtype=float).T
    X = rng.uniform(lo, hi, size=(n, lo.size))
    y_bounds = (-3.0, 12.0)
    if intercept_index is not None:
        X = np.insert(X, intercept_index, 1.0, axis=1)
        x_bounds = np.insert(np.array(slope_bounds, dtype=float), intercept_index, [1.0, 1.0], axis=0)
    else:
        x_bounds = np.array(slope_bounds, dtype=float)
    y = rng.uniform(*y_bounds, size=n)
    design = design_from_arrays(y, X, y_bounds=y_bounds, x_bounds=x_bounds, intercept_index=intercept_index)
    return design, x_bounds, y_bounds


@pytest.mark.parametrize("intercept_index", [0, 2, None])
def test_unit_box_scale_is_an_exact_reparametrisation(intercept_index: int | None) -> None:
    design, _, _ = random_design(intercept_index)
    scale = UnitBoxScale.from_design(design)
    Xs, v = scale.transform(design)
    d = design.X.shape[1]
    rng = np.random.default_rng(11)
    for _ in range(20):
        phi = rng.normal(size=d)
        phi_before = phi.copy()
        theta = scale.to_user(phi)
        np.testing.assert_array_equal(phi, phi_before)  # no mutation of the input
        np.testing.assert_allclose(design.X @ theta, scale.y_mid + scale.y_half * (Xs @ phi), rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(scale.to_scaled(theta), phi, rtol=1e-10, atol=1e-12)
        user = rng.normal(size=d) * 3
        np.testing.assert_allclose(scale.to_user(scale.to_scaled(user)), user, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(scale.y_mid + scale.y_half * v, design.y, rtol=1e-12)
    # every scaled row lies in the scaled box, inside [-1, 1]; |v| <= 1
    cb = scale.column_bounds(design)
    assert np.all(Xs >= cb[:, 0] - 1e-12) and np.all(Xs <= cb[:, 1] + 1e-12)
    assert np.all(np.abs(cb) <= 1 + 1e-12) and np.all(np.abs(v) <= 1 + 1e-12)
    np.testing.assert_allclose(np.abs(cb).max(axis=1), 1.0)
    if intercept_index is None:
        assert (scale.y_mid, scale.y_half) == (0.0, 12.0)
        np.testing.assert_allclose(cb, [[0.2, 1.0], [-0.5, 1.0]])
    else:
        assert (scale.y_mid, scale.y_half) == (4.5, 7.5)
        expected = np.tile([-1.0, 1.0], (d, 1))
        expected[intercept_index] = 1.0
        np.testing.assert_allclose(cb, expected)
        np.testing.assert_array_equal(Xs[:, intercept_index], 1.0)


def test_l1_radius_is_the_reach_of_the_fit_over_the_box() -> None:
    """With an intercept, ``||phi||_1`` is the largest distance of the fitted function from the midpoint of y
    over the declared box of the regressors, in half-widths of y (the module docstring's reading of B)."""
    design, x_bounds, _ = random_design(0)
    scale = UnitBoxScale.from_design(design)
    corners = np.array(list(itertools.product(*[np.unique(b) for b in x_bounds])))
    rng = np.random.default_rng(5)
    for _ in range(20):
        phi = rng.normal(size=design.X.shape[1])
        reach = np.abs(corners @ scale.to_user(phi) - scale.y_mid).max() / scale.y_half
        assert reach == pytest.approx(np.abs(phi).sum(), rel=1e-10)


# --------------------------------------------------------------------------
# 4. The front end
# --------------------------------------------------------------------------


def formula_scale() -> tuple[UnitBoxScale, np.ndarray]:
    """The scale of ``y ~ x`` under BOUNDS (the intercept first, as patsy puts it) and its scaled column bounds."""
    X = np.column_stack([np.ones(2), [BOUNDS["x"][0]] * 2])
    design = design_from_arrays([BOUNDS["y"][0]] * 2, X, y_bounds=BOUNDS["y"], x_bounds=[BOUNDS["x"]])
    scale = UnitBoxScale.from_design(design)
    return scale, scale.column_bounds(design)


def test_several_quantiles_split_the_budget(frame: pd.DataFrame) -> None:
    res = dpstats.dp_quantreg("y ~ x", frame, q=[0.25, 0.75], eps=1.0, bounds=BOUNDS, method="kng", steps=10)
    assert isinstance(res, DPQuantileFits) and res.quantiles == (0.25, 0.75) and len(res) == 2
    assert res.privacy.notion == "pure" and res.privacy.eps == 1.0 and res.privacy.delta == 0.0
    assert [name for name, _ in res.privacy.split] == ["q=0.25", "q=0.75"]
    assert sum(part for _, part in res.privacy.split) == pytest.approx(1.0)
    _, bounds = formula_scale()
    for tau, fit in zip(res.quantiles, res.fits, strict=True):
        assert fit is res[tau]
        assert fit.privacy.notion == "pure" and fit.privacy.eps == pytest.approx(0.5)
        assert fit.privacy.split[0] == (f"kng(q={tau:g})", pytest.approx(0.5 * (1 - DEFAULT_SHARE["quantreg"])))
        assert sum(part for _, part in fit.privacy.split) == pytest.approx(0.5)
        caveats = " ".join(fit.privacy.caveats)
        assert fit.privacy.caveats and "sampler" in caveats and "10 sweeps" in caveats
        assert not np.any(np.isnan(fit.bse.to_numpy())) and len(fit.bse) == 2  # reported (inf if failed at n = 50)
        assert np.all(np.isfinite(fit.params.to_numpy()))
        hyper = fit.hyperparameters
        assert (hyper["norm"], hyper["B"], hyper["steps"], hyper["q"]) == ("linf", 2.0, 10, tau)
        assert hyper["sensitivity"] == pytest.approx(quantile_sensitivity(tau, "linf", bounds), rel=1e-5)
        assert hyper["sensitivity"] == pytest.approx(1.5)
    assert list(res.params.columns) == [0.25, 0.75] and list(res.params.index) == ["Intercept", "x"]


def test_several_quantiles_carry_the_sampler_caveat(frame: pd.DataFrame) -> None:
    res = dpstats.dp_quantreg("y ~ x", frame, q=[0.25, 0.75], eps=1.0, bounds=BOUNDS, method="kng", steps=3)
    assert res.privacy.caveats and "sampler" in " ".join(res.privacy.caveats)


def test_single_quantile_reports_privacy_and_options(frame: pd.DataFrame) -> None:
    res = dpstats.dp_quantreg(
        "y ~ x",
        frame,
        q=0.5,
        eps=1.0,
        bounds=BOUNDS,
        method="kng",
        norm="l2",
        B=1.5,
        steps=4,
        random_state=0,
        se_share=0,
    )
    assert res.method == "kng" and res.privacy.eps == 1.0 and res.privacy.split == (("kng(q=0.5)", 1.0),)
    assert res.privacy.caveats and "MCMC sampler" in res.privacy.caveats[0] and "4 sweeps" in res.privacy.caveats[0]
    assert np.all(np.isnan(res.bse.to_numpy()))
    hyper = res.hyperparameters
    assert (hyper["norm"], hyper["B"], hyper["steps"], hyper["q"]) == ("l2", 1.5, 4, 0.5)
    assert hyper["sensitivity"] == pytest.approx(math.sqrt(2), rel=1e-5)  # a row's w flips: (1, 1) in l2


def test_one_dimension_is_sampled_exactly(frame: pd.DataFrame) -> None:
    res = dpstats.dp_quantreg(
        "y ~ 1", frame, q=0.9, eps=1.0, bounds=BOUNDS, method="kng", steps=40, random_state=1, se_share=0
    )
    hyper = res.hyperparameters
    assert (hyper["steps"], hyper["B"], hyper["sensitivity"]) == (1, 2.0, 1.0)  # Smith's private quantile
    assert "exact sampler" in res.privacy.caveats[0]
    assert list(res.params.index) == ["Intercept"] and np.isnan(res.bse.iloc[0])
    assert BOUNDS["y"][0] - 7.5 <= res.params.iloc[0] <= BOUNDS["y"][1] + 7.5 + 1e-9  # inside Theta (B = 2)


def test_default_radius_is_the_floor_at_small_n_eps_and_grows_without_bound() -> None:
    """kng.default_radius: public facts only (its arguments); least squares: the paper's B = 1 while
    ``n eps / (d + 1) <= RADIUS_SCALE``, then ``+ RADIUS_GROWTH ln``, increasing in n and eps, unbounded;
    quantile regression: 2 (its chain does not mix in a larger domain)."""
    assert kng.default_radius("ols", 500, 1.0, 4) == 1.0
    assert kng.default_radius("ols", kng.RADIUS_SCALE * 5, 1.0, 4) == 1.0
    radii = [kng.default_radius("ols", 534, eps, 5) for eps in (1.0, 5.0, 20.0, 1e3, 1e9)]
    assert radii == sorted(radii) and radii[2] > 1.0 and radii[-1] > 8.0
    assert kng.default_radius("ols", 10**6, 1.0, 3) == pytest.approx(1 + 0.4 * math.log(500), abs=0.005)  # 3 digits
    assert kng.default_radius("ols", 10**60, 1.0, 3) > 50.0
    assert {kng.default_radius("quantreg", n, eps, 5) for n, eps in [(50, 1.0), (10**6, 1e9)]} == {2.0}


def test_default_radius_sets_the_sensitivity_from_public_facts(frame: pd.DataFrame) -> None:
    """The fit reports the B of default_radius(n, the draw's eps, d) and Delta = 4 (1 + B); a neighbour (one row
    replaced by a corner of the box) gets the same B and sensitivity, and so does any other data set of size n."""
    eps = 5000.0
    kw = dict(eps=eps, bounds=BOUNDS, method="kng", random_state=2)
    res = dpstats.dp_ols("y ~ x", frame, **kw)
    B = kng.default_radius("ols", len(frame), eps * (1 - DEFAULT_SHARE["ols"]), 2)
    assert B > 1.0 and res.hyperparameters["B"] == B
    assert res.hyperparameters["sensitivity"] == pytest.approx(4 * (1 + B), rel=1e-6)
    neighbour = frame.copy()
    neighbour.loc[0, ["x", "y"]] = [BOUNDS["x"][1], BOUNDS["y"][0]]
    other = make_frame(len(frame), seed=9)
    for data in (neighbour, other):
        hyper = dpstats.dp_ols("y ~ x", data, **kw).hyperparameters
        assert (hyper["B"], hyper["sensitivity"]) == (res.hyperparameters["B"], res.hyperparameters["sensitivity"])


def test_least_squares_defaults(frame: pd.DataFrame) -> None:
    res = dpstats.dp_ols("y ~ x", frame, eps=1.0, bounds=BOUNDS, method="kng", random_state=2, se_share=0)
    hyper = res.hyperparameters
    assert (hyper["norm"], hyper["B"], hyper["steps"]) == ("linf", 1.0, 2 * kng.STEPS_PER_DIMENSION["ols"])
    assert hyper["sensitivity"] == pytest.approx(8.0)  # 4 (1 + B)
    assert "q" not in hyper
    assert res.privacy.notion == "pure" and res.privacy.split == (("kng", 1.0),)
    assert (
        res.privacy.caveats
        and "exact sampler by rejection" in res.privacy.caveats[0]
        and "50 sweeps" in res.privacy.caveats[0]
    )
    assert np.all(np.isnan(res.bse.to_numpy()))


@pytest.mark.parametrize(("estimator", "B"), [("ols", 0.5), ("quantreg", 0.4)])
def test_estimate_lies_in_the_domain(frame: pd.DataFrame, estimator: str, B: float) -> None:
    """The release is always in Theta = {||phi||_1 <= B} on the scaled problem (a small B makes the boundary bind)."""
    scale, _ = formula_scale()
    for seed in range(3):
        kwargs = dict(eps=1.0, bounds=BOUNDS, method="kng", B=B, steps=8, random_state=seed)
        if estimator == "ols":
            res = dpstats.dp_ols("y ~ x", frame, **kwargs)
        else:
            res = dpstats.dp_quantreg("y ~ x", frame, q=0.3, **kwargs)
        phi = scale.to_scaled(res.params.to_numpy())
        assert np.abs(phi).sum() <= B * (1 + 1e-9)


def test_reproducible_with_a_seed(frame: pd.DataFrame) -> None:
    kwargs = dict(q=0.5, eps=1.0, bounds=BOUNDS, method="kng", steps=5)
    a = dpstats.dp_quantreg("y ~ x + z", frame, random_state=7, **kwargs)
    b = dpstats.dp_quantreg("y ~ x + z", frame, random_state=7, **kwargs)
    c = dpstats.dp_quantreg("y ~ x + z", frame, random_state=8, **kwargs)
    np.testing.assert_array_equal(a.params.to_numpy(), b.params.to_numpy())
    assert not np.array_equal(a.params.to_numpy(), c.params.to_numpy())


def test_categorical_terms_with_declared_levels(frame: pd.DataFrame) -> None:
    formula = "y ~ x + C(g)"
    res = dpstats.dp_quantreg(
        formula, frame, q=0.5, eps=1.0, bounds=BOUNDS, levels=LEVELS, method="kng", steps=6, random_state=3
    )
    names = list(smf.quantreg(formula, frame).fit(q=0.5).params.index)
    assert names == ["Intercept", "C(g)[T.b]", "C(g)[T.c]", "x"]
    assert list(res.params.index) == names and list(res.bse.index) == names
    assert np.all(np.isfinite(res.params.to_numpy())) and not np.any(np.isnan(res.bse.to_numpy()))
    # dummies are bounded by [0, 1], scaled to [-1, 1] with the intercept: 2 max(tau, 1 - tau) = 1 at the median
    assert res.hyperparameters["sensitivity"] == pytest.approx(1.0)
    ols = dpstats.dp_ols(formula, frame, eps=1.0, bounds=BOUNDS, levels=LEVELS, method="kng", steps=3, random_state=3)
    assert list(ols.params.index) == list(smf.ols(formula, frame).fit().params.index)
    assert ols.hyperparameters["sensitivity"] == pytest.approx(8.0)
    # the levels are required: without them the categorical term is refused
    with pytest.raises((TypeError, ValueError), match="g"):
        dpstats.dp_quantreg(formula, frame, q=0.5, eps=1.0, bounds=BOUNDS, method="kng", steps=2)

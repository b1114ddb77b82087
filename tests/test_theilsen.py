"""DP Theil-Sen (method="theilsen"): limits, conventions, bad inputs, matchings, exact counting.

Privacy-specific checks (smooth sensitivity by brute force, replay, gray-box,
sampler goodness of fit) are in tests/test_theilsen_privacy.py.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from dpstats import dp_ols
from dpstats.audit import design_from_arrays
from dpstats.mechanisms import PrivacyRequest
from dpstats.mechanisms.theilsen import mechanism as theilsen
from dpstats.mechanisms.theilsen.dp_median import gap_distance
from dpstats.mechanisms.theilsen.matchings import (
    circle_rounds,
    lipschitz_constant,
    matching_pairs,
    resolve_k,
    rounds_max,
    sample_matchings,
)
from dpstats.mechanisms.theilsen.pair_counting import AllPairsCounter, count_inversions, discordant_pairs_numpy
from dpstats.mechanisms.theilsen.pair_estimates import all_pairs, pair_estimates

UNIT = {"x": (0.0, 1.0), "y": (0.0, 1.0)}
HUGE = 1e9


def synthetic(n: int, seed: int) -> pd.DataFrame:
    """The paper's section 3.1.5 design: y = 0.5 x + 0.2 + noise, clipped to [0, 1]^2."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.2, 0.8, n)
    y = np.clip(0.5 * x + 0.2 + rng.normal(0.0, 0.1, n), 0.0, 1.0)
    return pd.DataFrame({"x": x, "y": y})


def engel() -> tuple[pd.DataFrame, dict[str, tuple[float, float]]]:
    """Engel's food expenditure data (public; 235 households, odd n) with declared bounds."""
    sm_datasets = pytest.importorskip("statsmodels.datasets")
    data = sm_datasets.engel.load_pandas().data
    return data, {"income": (0.0, 5000.0), "foodexp": (0.0, 2100.0)}


def sorted_estimates(u: np.ndarray, v: np.ndarray, x0: float, lo: float, hi: float) -> np.ndarray:
    """All-pairs estimates on the unit scale, pairs with equal x dropped, clipped, sorted."""
    i, j = all_pairs(u.size)
    z = pair_estimates(u, v, i, j, x0)
    return np.sort(np.clip(z[~np.isnan(z)], lo, hi))


def mode_bracket(z: np.ndarray, lo: float, hi: float) -> tuple[float, float]:
    """The smallest interval holding every interval of minimal rank distance (where eps -> inf concentrates)."""
    n = z.size
    j = np.arange(n + 1)
    d = gap_distance(j, j, n)
    best = j[d == d.min()]
    edges = np.concatenate([[lo], z, [hi]])
    return float(edges[best.min()]), float(edges[best.max() + 1])


def unit_predictions(res, y_bounds: tuple[float, float]) -> tuple[float, float]:
    y_lo, y_hi = y_bounds
    stats = res.noisy_stats
    return tuple(float((stats[name] - y_lo) / (y_hi - y_lo)) for name in ("p25", "p75"))


def params_from_predictions(p25: float, p75: float, x_bounds, y_bounds) -> np.ndarray:
    """Intercept and slope in the user's units from unit-scale predictions (the mechanism's post-processing)."""
    a, b = 1.5 * p25 - 0.5 * p75, 2.0 * (p75 - p25)
    (x_lo, x_hi), (y_lo, y_hi) = x_bounds, y_bounds
    slope = (y_hi - y_lo) * b / (x_hi - x_lo)
    return np.array([y_lo + (y_hi - y_lo) * a - slope * x_lo, slope])


CASES = [
    pytest.param("synthetic-even", id="synthetic n=200"),
    pytest.param("synthetic-odd", id="synthetic n=201"),
    pytest.param("engel", id="engel n=235"),
]


def _case(name: str):
    if name == "engel":
        data, bounds = engel()
        return data, bounds, "foodexp ~ income", "income", "foodexp"
    return synthetic(200 if name.endswith("even") else 201, 7), UNIT, "y ~ x", "x", "y"


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("median", ["exp", "wide", "smooth"])
def test_huge_eps_returns_nonprivate_theil_sen(case: str, median: str) -> None:
    """At eps = 1e9 each variant returns the all-pairs Theil-Sen p25/p75 (the median interval, theta, noise 1e-8)."""
    data, bounds, formula, xname, yname = _case(case)
    theta = 1e-9
    res = dp_ols(
        formula, data, eps=HUGE, bounds=bounds, method="theilsen", median=median, k="all", theta=theta, random_state=3
    )
    xb, yb = bounds[xname], bounds[yname]
    u = (data[xname].to_numpy() - xb[0]) / (xb[1] - xb[0])
    v = (data[yname].to_numpy() - yb[0]) / (yb[1] - yb[0])
    lo, hi = theilsen.TABLE1_UNIT_RANGE
    released = unit_predictions(res, yb)
    for x0, p in zip((0.25, 0.75), released, strict=True):
        z = sorted_estimates(u, v, x0, lo, hi)
        left, right = mode_bracket(z, lo, hi)
        slack = 1e-9 + (theta if median == "wide" else 0.0) + (1e-5 if median == "smooth" else 0.0)
        if median == "smooth":  # the lower median of the estimates, plus noise of scale ~1e-9
            left = right = z[(z.size + 1) // 2 - 1]
        assert left - slack <= p <= right + slack
        assert p == pytest.approx(np.median(z), abs=1e-4)
    expected = params_from_predictions(*released, xb, yb)
    np.testing.assert_allclose(res.params.to_numpy(), expected, rtol=1e-9, atol=1e-9 * (yb[1] - yb[0]))
    ts = params_from_predictions(
        np.median(sorted_estimates(u, v, 0.25, lo, hi)), np.median(sorted_estimates(u, v, 0.75, lo, hi)), xb, yb
    )
    np.testing.assert_allclose(res.params.to_numpy(), ts, rtol=2e-3, atol=2e-3 * (yb[1] - yb[0]))


def test_every_fit_names_its_gap_from_least_squares() -> None:
    """The estimand is the Theil-Sen line; on engel's curved Engel curve it is not OLS's, so the fit says so."""
    data, bounds = engel()
    res = dp_ols("foodexp ~ income", data, eps=HUGE, bounds=bounds, method="theilsen", random_state=3)
    assert res.status == "biased" and res.bias_source == theilsen.ESTIMAND_BIAS
    x, y = data["income"].to_numpy(), data["foodexp"].to_numpy()
    ols_slope = np.cov(x, y)[0, 1] / np.var(x, ddof=1)
    assert abs(res.params["income"] / ols_slope - 1) > 0.1  # the gap, at eps = 1e9: why no fit may claim "ok"


def test_release_contents_and_defaults() -> None:
    data = synthetic(60, 1)
    res = dp_ols("y ~ x", data, eps=2.0, bounds=UNIT, method="theilsen", random_state=0, se_share=0)
    assert res.privacy.notion == "pure" and res.privacy.eps == 2.0
    assert dict(res.privacy.split) == {"p25": 1.0, "p75": 1.0}
    assert not res.failed and np.all(np.isfinite(res.params))
    assert np.all(np.isnan(res.bse)) and "se_share=0" in res.se_note
    with_se = dp_ols("y ~ x", data, eps=2.0, bounds=UNIT, method="theilsen", random_state=0)
    assert np.all(np.isfinite(with_se.bse)) and "bootstrap" in with_se.se_note
    hyper = res.hyperparameters
    assert hyper["median"] == "exp" and hyper["k"] == 59 and hyper["pairs"] == "all" and hyper["lipschitz"] == 59
    assert hyper["output_range"] == pytest.approx((-0.5, 1.5))
    smooth = dp_ols("y ~ x", data, eps=2.0, bounds=UNIT, method="theilsen", median="smooth", random_state=0)
    assert smooth.hyperparameters["k"] == 3 and smooth.hyperparameters["df"] == 3.0
    assert smooth.hyperparameters["beta"] == 0.5


def test_output_range_is_in_units_of_y() -> None:
    """output_range is given in y's units; the default is Table 1's (-0.5, 1.5) on the unit scale."""
    data = synthetic(40, 2).assign(y=lambda d: 10.0 + 100.0 * d["y"])
    bounds = {"x": (0.0, 1.0), "y": (10.0, 110.0)}
    res = dp_ols("y ~ x", data, eps=1.0, bounds=bounds, method="theilsen", random_state=0)
    assert res.hyperparameters["output_range"] == pytest.approx((-40.0, 160.0))
    given = dp_ols("y ~ x", data, eps=1.0, bounds=bounds, method="theilsen", output_range=(0.0, 120.0), random_state=0)
    assert given.hyperparameters["output_range"] == pytest.approx((0.0, 120.0))
    for name in ("p25", "p75"):
        assert 0.0 <= float(given.noisy_stats[name]) <= 120.0


@pytest.mark.parametrize("median", ["exp", "wide", "smooth"])
@pytest.mark.parametrize("n", [2, 3])
def test_tiny_n_works(median: str, n: int) -> None:
    data = pd.DataFrame({"x": [0.1, 0.9, 0.5][:n], "y": [0.2, 0.7, 0.4][:n]})
    res = dp_ols("y ~ x", data, eps=1.0, bounds=UNIT, method="theilsen", median=median, random_state=1)
    assert np.all(np.isfinite(res.params))
    assert res.hyperparameters["k"] == rounds_max(n)


def test_all_rows_tied_in_x_gives_uniform_output_not_an_error() -> None:
    """No pair defines a line (N = 0): the exponential median is uniform on the range; nothing raises."""
    data = pd.DataFrame({"x": [0.5] * 6, "y": [0.1, 0.9, 0.3, 0.3, 0.7, 0.2]})
    for median in ("exp", "wide", "smooth"):
        res = dp_ols("y ~ x", data, eps=1.0, bounds=UNIT, method="theilsen", median=median, random_state=0)
        assert np.all(np.isfinite(res.params))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"k": 0}, "k must"),
        ({"k": 20}, "k must be between 1 and 19"),
        ({"k": 2.5}, "k must"),
        ({"k": "half"}, "k must"),
        ({"k": True}, "k must"),
        ({"theta": 0.0}, "theta must be > 0"),
        ({"theta": -0.1}, "theta must be > 0"),
        ({"df": 0}, "df must be > 0"),
        ({"df": -3}, "df must be > 0"),
        ({"beta": 0.0}, "beta must be in"),
        ({"beta": 1.0}, "beta must be in"),
        ({"median": "mean"}, "median must be one of"),
        ({"output_range": (1.5, -0.5)}, "r_l < r_u"),
        ({"output_range": (0.2, 1.5)}, "must contain the declared bounds of y"),
        ({"output_range": (-0.5, 0.9)}, "must contain the declared bounds of y"),
        ({"output_range": 3.0}, "output_range must be a pair"),
        ({"output_range": (0.0, float("inf"))}, "finite"),
        ({"colour": "red"}, "unknown option"),
    ],
)
def test_bad_options_raise_naming_the_option(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dp_ols("y ~ x", synthetic(20, 0), eps=1.0, bounds=UNIT, method="theilsen", **options)


def test_k_bounds_for_odd_n_and_resolution() -> None:
    assert resolve_k(None, 21, "all") == 21 and resolve_k(21, 21, "all") == 21
    assert resolve_k(None, 20, "all") == 19 and resolve_k(None, 2, 3) == 1 and resolve_k(4.0, 20, "all") == 4
    with pytest.raises(ValueError, match="between 1 and 21"):
        resolve_k(22, 21, "all")
    with pytest.raises(ValueError, match="at least 2 rows"):
        resolve_k(None, 1, "all")


def test_structural_errors() -> None:
    data = synthetic(30, 0).assign(z=lambda d: d["x"] ** 2)
    with pytest.raises(ValueError, match="at most 1 regressor"):
        dp_ols("y ~ x + z", data, eps=1.0, bounds={**UNIT, "z": (0, 1)}, method="theilsen")
    with pytest.raises(ValueError, match="delta must be 0"):
        dp_ols("y ~ x", data, eps=1.0, delta=1e-6, bounds=UNIT, method="theilsen")
    design = design_from_arrays(
        data["y"], data[["x"]].to_numpy(), y_bounds=(0, 1), x_bounds=[(0, 1)], intercept_index=None
    )
    with pytest.raises(ValueError, match="needs an intercept"):
        theilsen.fit(design, PrivacyRequest(1.0), np.random.default_rng(0))
    two = design_from_arrays(
        data["y"], np.column_stack([np.ones(30), data["x"], data["z"]]), y_bounds=(0, 1), x_bounds=[(0, 1), (0, 1)]
    )
    with pytest.raises(ValueError, match="one regressor"):
        theilsen.fit(two, PrivacyRequest(1.0), np.random.default_rng(0))


@pytest.mark.parametrize("n", [2, 3, 4, 7, 10, 11])
def test_circle_method_is_a_one_factorisation_with_phantom_for_odd_n(n: int) -> None:
    """All rounds together list every pair exactly once; each row is in at most one pair per round."""
    perm = np.arange(n)
    rounds = np.arange(rounds_max(n))
    i, j = matching_pairs(perm, rounds)
    pairs = sorted(tuple(sorted(p)) for p in zip(i.tolist(), j.tolist(), strict=True))
    assert pairs == sorted(itertools.combinations(range(n), 2))
    for r in rounds:
        a, b = circle_rounds(n + n % 2, np.array([r]))
        vertices = np.concatenate([a.ravel(), b.ravel()])
        assert np.unique(vertices).size == vertices.size == n + n % 2
    for k in range(1, rounds_max(n) + 1):
        i, j = matching_pairs(perm, rounds[:k])
        per_row = np.bincount(np.concatenate([i, j]), minlength=n)
        assert per_row.max() <= lipschitz_constant(n, k) == min(k, n - 1)


def test_sampled_matchings_are_distinct_pairs() -> None:
    rng = np.random.default_rng(5)
    for n, k in [(10, 3), (11, 4), (11, 11), (2, 1)]:
        i, j = sample_matchings(rng, n, k)
        assert i.size == k * (n // 2)
        keys = {tuple(sorted(p)) for p in zip(i.tolist(), j.tolist(), strict=True)}
        assert len(keys) == i.size and all(a != b for a, b in keys)


def _brute_counts(x, y, x0, t):
    lt = le = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        if x[i] == x[j]:
            continue
        xi, xj, yi, yj = (Fraction(float(v)) for v in (x[i], x[j], y[i], y[j]))
        z = yi + (yj - yi) * (Fraction(x0) - xi) / (xj - xi)
        lt += z < Fraction(float(t))
        le += z <= Fraction(float(t))
    return lt, le


def test_all_pairs_counter_is_exact_including_ties() -> None:
    """The O(n log n) counts equal exact rational brute force, at random thresholds and at estimates themselves."""
    rng = np.random.default_rng(11)
    for trial in range(60):
        n = int(rng.integers(2, 12))
        if trial % 3 == 0:
            x, y = rng.random(n), rng.random(n)
        elif trial % 3 == 1:
            x, y = rng.integers(0, 5, n) / 4, rng.integers(0, 5, n) / 4
        else:
            x, y = rng.choice([0.0, 0.25, 0.75, 1.0], n), rng.choice([0.0, 0.5, 1.0], n)
        for x0 in (0.25, 0.75):
            counter = AllPairsCounter(x, y, x0)
            i, j = all_pairs(n)
            z = pair_estimates(x, y, i, j, x0)
            ts = np.concatenate([rng.uniform(-1, 2, 4), z[~np.isnan(z)][:6]])
            lt, le = counter.counts_many(ts)
            for t, a, b in zip(ts, lt, le, strict=True):
                assert (a, b) == counter.counts(t) == _brute_counts(x, y, x0, t)
            assert counter.n_valid == int(np.sum(~np.isnan(z)))


def test_discordance_fallback_matches_brute_force() -> None:
    rng = np.random.default_rng(2)
    for _ in range(50):
        n = int(rng.integers(1, 40))
        xr, yr = np.sort(rng.integers(1, 6, n)), rng.integers(1, 8, n)
        brute = sum(1 for p in range(n) for q in range(p + 1, n) if xr[p] < xr[q] and yr[p] > yr[q])
        assert discordant_pairs_numpy(xr, yr) == brute
        a = rng.integers(0, 9, n)
        assert count_inversions(a) == sum(1 for p in range(n) for q in range(p + 1, n) if a[p] > a[q])


@pytest.mark.slow
def test_all_pairs_engines_agree_in_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    """The counting engine (n = 190, 17,955 pairs) and the sorted engine give the same law.

    Two-sample KS on 500 fits per engine at eps = 0.5 (both are exact draws of
    the same mechanism, up to the float rounding of the estimates), so the
    false-failure probability is the test's level, 1e-6. The exactness of each
    sampler is tested with far more power in tests/test_theilsen_privacy.py.
    """
    from scipy import stats

    data = synthetic(190, 4)
    design = design_from_arrays(
        data["y"], np.column_stack([np.ones(190), data["x"]]), y_bounds=(0, 1), x_bounds=[(0, 1)]
    )
    rng = np.random.default_rng(8)
    fast = [float(theilsen.fit(design, PrivacyRequest(0.5, se_share=0.0), rng).noisy_stats["p25"]) for _ in range(500)]
    monkeypatch.setattr(theilsen, "EXPLICIT_PAIRS_MAX", 1 << 30)
    slow = [float(theilsen.fit(design, PrivacyRequest(0.5, se_share=0.0), rng).noisy_stats["p25"]) for _ in range(500)]
    assert stats.ks_2samp(fast, slow).pvalue > 1e-6
    assert math.isfinite(float(np.mean(fast)))


def test_odd_n_all_pairs_uses_n_matchings_and_lipschitz_n_minus_1() -> None:
    data = synthetic(21, 3)
    res = dp_ols("y ~ x", data, eps=1.0, bounds=UNIT, method="theilsen", k=21, random_state=0)
    assert res.hyperparameters["k"] == 21 and res.hyperparameters["lipschitz"] == 20
    assert res.hyperparameters["pairs"] == "all"
    part = dp_ols("y ~ x", data, eps=1.0, bounds=UNIT, method="theilsen", k=5, median="smooth", random_state=0)
    assert part.hyperparameters["lipschitz"] == 5 and part.hyperparameters["pairs"] == "5 matchings"


def test_streamed_row_blocks_list_every_pair_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deterministic: with blocks of about 7 pairs, the stream lists exactly the pairs i < j."""
    from dpstats.mechanisms.theilsen import banded_pairs

    monkeypatch.setattr(banded_pairs, "ROW_BLOCK", 7)
    blocks = list(banded_pairs._blocks(57))
    assert len(blocks) > 10
    i = np.concatenate([b[0] for b in blocks])
    j = np.concatenate([b[1] for b in blocks])
    expected_i, expected_j = all_pairs(57)
    np.testing.assert_array_equal(np.lexsort((j, i)), np.arange(i.size))
    np.testing.assert_array_equal(i, expected_i)
    np.testing.assert_array_equal(j, expected_j)

"""NoisyStats with the privacy unit a unit of up to k rows (dpstats/mechanisms/noisystats/mechanism.py, "The
privacy unit"; dpstats/uncertainty/cluster_meat.py).

1. One row per unit is the row-level release, draw for draw.
2. Replay on unit-level corner pairs (every row of one unit moved between corners of the box): every release
   within its declared sensitivity, the point's reaching it; the same pairs flag the row-level sensitivities
   (the canary: the unit's k rows forgotten).
3. The clustered meat's widths hold by brute force over units of corner rows, and are reached; the exact range of
   a product over the hull of a box and its reflection (the off-diagonal widths); the one-hot bound for unit
   sums; a replay of the categorical (structured) release on unit pairs.
4. At huge eps the standard errors are statsmodels' cluster-robust ones (CR1) on the Grunfeld firm panel.

The replays and brute force are deterministic; the comparison with statsmodels is seeded (its bootstrap's
Monte Carlo error is about 2% at 1,000 replicates, against a 10% tolerance).
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf

import dpstats
from dpstats.audit import NeighbourPair, design_from_points, replay
from dpstats.audit.unit_pairs import unit_corner_pairs
from dpstats.design.units import Units
from dpstats.frontend.formula import build_design
from dpstats.mechanisms.base import PrivacyRequest
from dpstats.mechanisms.noisystats import mechanism as noisystats
from dpstats.uncertainty import cluster_meat, sandwich

PRIVACY = PrivacyRequest(eps=3.75)
POINT = ["ncov(x, y)", "nvar(x)", "intercept"]
SE_RELEASES = ["SE: sum(x)", "SE: RSS", "SE: HC meat"]
UNIT = [(0.0, 1.0)]


def _design(seed: int = 0, n: int = 40):
    rng = np.random.default_rng(seed)
    data = {"x": rng.uniform(0, 10, n), "y": rng.uniform(0, 5, n)}
    design, _ = build_design("y ~ x", data, {"x": (0, 10), "y": (0, 5)}, None)
    return design


def test_one_row_per_unit_is_the_row_level_release() -> None:
    design = _design()
    singletons = replace(design, units=Units("id", np.arange(design.n), design.n, 1))
    rows = noisystats.fit(design, PRIVACY, np.random.default_rng(4))
    units = noisystats.fit(singletons, PRIVACY, np.random.default_rng(4))
    np.testing.assert_array_equal(rows.params, units.params)
    np.testing.assert_array_equal(rows.cov, units.cov)


@pytest.mark.usefixtures("few_replicates")
def test_replay_on_unit_pairs_within_and_reaching_the_unit_sensitivities() -> None:
    """ncov and nvar's bound is k (1 - 1/n) by the triangle inequality over k replaced rows; moving one unit's k
    rows from the origin to a corner reaches k - k^2/n, the ratio (n - k)/(n - 1) = 15/17 here. The intercept and
    the standard errors' sums and RSS reach theirs; the meat is sound (0.86 reached: its off-diagonal widths
    assume residuals of both signs at once)."""
    pairs = unit_corner_pairs(6, 3, UNIT, (0.0, 1.0), bases=None)
    report = replay(noisystats.fit, pairs, PRIVACY, seeds=range(3))
    report.assert_sound(min_ratio=15 / 17 - 1e-9, names=POINT)
    report.assert_sound(min_ratio=0.99, names=SE_RELEASES[:2])
    report.assert_sound(min_ratio=0.8, names=SE_RELEASES[2:])


@pytest.mark.usefixtures("few_replicates")
def test_the_row_level_sensitivities_are_flagged_on_unit_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(noisystats, "reach", lambda design: 1)  # the canary: a unit moves one row's worth
    pairs = unit_corner_pairs(6, 3, UNIT, (0.0, 1.0), bases=None)
    report = replay(noisystats.fit, pairs, PRIVACY, seeds=range(1))
    with pytest.raises(AssertionError, match="exceeds the declared sensitivity"):
        report.assert_sound(min_ratio=None, names=POINT)


def test_the_clustered_meat_moves_within_its_widths_and_reaches_them() -> None:
    """Brute force: 4 units of 3 rows in the box of rows (1, u - c), residuals at the bound's corners; the last
    unit's rows replaced by every combination of corners. Every entry moves by at most its width, and the
    diagonal reaches it."""
    centre, bound, k = np.array([0.3]), 0.8, 3
    box = np.vstack([[1.0, 1.0], np.column_stack([-centre, 1.0 - centre])])
    corners = [(w, r) for w in box[1] for r in (-bound, 0.0, bound)]
    codes = np.repeat(np.arange(4), k)
    base_rows = [(0.2, 0.5)] * 9
    widths = cluster_meat.unit_widths(box, bound, k)
    moves = []
    for unit_rows in itertools.product(corners, repeat=k):
        rows = np.array(base_rows + list(unit_rows))
        W = np.column_stack([np.ones(len(rows)), rows[:, 0]])
        moves.append(cluster_meat.cluster_meat(W, rows[:, 1], codes, 4))
    spread = np.ptp(np.array(moves), axis=0)
    assert np.all(spread <= widths + 1e-12)
    np.testing.assert_allclose(spread[[0, 2]], widths[[0, 2]])


def test_at_huge_eps_the_standard_errors_are_statsmodels_cluster_robust() -> None:
    grunfeld = sm.datasets.grunfeld.load_pandas().data
    formula = "invest ~ value + capital"
    bounds = {"invest": (0, 1500), "value": (0, 6500), "capital": (0, 2500)}
    res = dpstats.dp_ols(
        formula, grunfeld, eps=1e9, bounds=bounds, method="noisystats", unit="firm", max_rows=20, random_state=5
    )
    reference = smf.ols(formula, grunfeld).fit(cov_type="cluster", cov_kwds={"groups": grunfeld["firm"]})
    np.testing.assert_allclose(res.params.values, reference.params.values, rtol=1e-6)
    np.testing.assert_allclose(res.bse.values, reference.bse.values, rtol=0.1)
    assert "one firm (at most 20 rows; 11 units)" in res.privacy.neighbours


@pytest.mark.parametrize("seed", range(4))
def test_hull_product_range_is_the_range_over_the_hull(seed: int) -> None:
    """Deterministic: random points of the hull of a rectangle and its reflection stay inside the range; points on
    its edges reach both ends (to 1e-4 on a grid of 2,001 points per segment)."""
    rng = np.random.default_rng(20 + seed)
    a, b = np.sort(rng.uniform(-1, 2, 2)), np.sort(rng.uniform(-1, 2, 2))
    lo, hi = cluster_meat.hull_product_range(tuple(a), tuple(b))
    corners = np.array(list(itertools.product(a, b)))
    points = np.vstack([corners, -corners])
    mixed = rng.dirichlet(np.ones(8) * 0.3, 20_000) @ points
    values = mixed[:, 0] * mixed[:, 1]
    assert values.min() >= lo - 1e-12 and values.max() <= hi + 1e-12
    t = np.linspace(0, 1, 2001)[:, None]
    edge = np.concatenate([(p + t * (q - p))[:, 0] * (p + t * (q - p))[:, 1] for p in points for q in points])
    assert edge.min() == pytest.approx(lo, abs=1e-4) and edge.max() == pytest.approx(hi, abs=1e-4)


def test_the_one_hot_bound_holds_for_unit_sums_with_residual_bound_k_r() -> None:
    """Deterministic: a block of three levels and a continuous column centred at a public c, units of k = 2 rows
    on a grid: one unit's weighted non-RSS entries sum to at most (k R)^2 (w0 l1 + (l1^2 + l2sq) / 2), half the
    declared bound (the term leaving and the term arriving), and reach half of it."""
    c = np.array([0.2, 0.3, 0.1, 0.6])
    rows = [np.r_[1.0, np.r_[d, x] - c] for d in [np.zeros(3), *np.eye(3)] for x in (0.0, 0.5, 1.0)]
    radius, k = 0.8, 2
    weights = sandwich.meat_weights(5, 0)[1:]
    norms = sandwich.row_norms(4, ((0, 1, 2),), c)
    largest = 0.0
    for r1, r2 in itertools.product(np.linspace(-radius, radius, 5), repeat=2):
        for i, j in itertools.combinations_with_replacement(range(len(rows)), k):
            s = r1 * rows[i] + r2 * rows[j]
            largest = max(largest, float(np.abs(weights * sandwich.upper_triangle(np.outer(s, s))[1:]).sum()))
    bound = (k * radius) ** 2 * (sandwich.INTERCEPT_WEIGHT * norms.l1 + norms.quadratic())
    assert 0.5 * bound <= largest <= bound * (1 + 1e-12)


LEVEL_ROWS = np.vstack([np.zeros(3), np.eye(3)])
POSSIBLE = np.array([np.r_[level, x, y] for level in LEVEL_ROWS for x in (0.0, 1.0) for y in (0.0, 1.0)])


@pytest.mark.usefixtures("few_replicates")
def test_replay_categorical_on_unit_pairs_is_sound() -> None:
    """Deterministic: a factor of 4 levels (3 dummies) and x; every level three times with x and y at 0 or 1 (four
    units of 3 rows), and a fifth unit whose 3 rows move together between possible rows (45 pairs, 2 seeds). The
    structured release and the clustered RSS reach 0.9 of their sensitivities; the meat's other entries, whose
    one-hot bound is as loose as at the row level, are sound."""
    base = np.array([np.r_[level, j % 2, (j // 2) % 2] for level in LEVEL_ROWS for j in range(3)])
    units = Units("unit", np.repeat(np.arange(5), 3), 5, 3)
    pairs = []
    for a in POSSIBLE[::7]:
        for b in POSSIBLE:
            if np.array_equal(a, b):
                continue
            sides = [
                replace(
                    design_from_points(
                        np.vstack([base, np.repeat(row[None], 3, axis=0)]), [(0.0, 1.0)] * 4, (0.0, 1.0)
                    ),
                    one_hot_blocks=((1, 2, 3),),
                    units=units,
                )
                for row in (a, b)
            ]
            pairs.append(NeighbourPair(f"unit {a.tolist()} -> {b.tolist()}", *sides))
    report = replay(noisystats.fit, pairs, PrivacyRequest(eps=200.0, se_share=0.5), seeds=range(2))
    names = ["W'W, W'y", "SE: RSS", "SE: HC meat"]
    report.assert_sound(min_ratio=None, names=names)
    assert report.ratio("W'W, W'y") >= 0.9 and report.ratio("SE: RSS") >= 0.9

"""A grouped auto: a mechanism per group from its public size, ranked by the tail, with the data's spread
released once for all groups (dpstats/groups/auto.py, dpstats/groups/spread.py)."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import dpstats
from dpstats.audit import assert_replay_sound, pair_from_points, replay
from dpstats.design.matrix import Design
from dpstats.frontend.formula import build_design
from dpstats.groups import spread
from dpstats.mechanisms.base import PrivacyRequest
from dpstats.planning.error_model import Prediction
from dpstats.planning.facts import DataSpread, PublicFacts
from dpstats.planning.selection import choose, matching_scenarios, nearest_levels
from dpstats.uncertainty.sandwich import upper_triangle

BOUNDS = {"x": (0.0, 1.0), "y": (-1.0, 3.0)}


def tracts(groups: int, rows: int, noise: float, seed: int = 0) -> pd.DataFrame:
    """y = a_g + b_g x + N(0, noise^2), x uniform on [0, 1], clipped to the bounds."""
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(groups), rows)
    x = rng.uniform(0.0, 1.0, g.size)
    a, b = rng.normal(0.5, 0.2, groups), rng.normal(1.0, 0.3, groups)
    y = np.clip(a[g] + b[g] * x + rng.normal(0.0, noise, g.size), -1.0, 3.0)
    return pd.DataFrame({"g": g, "x": x, "y": y})


def _design(frame: pd.DataFrame) -> Design:
    return build_design("y ~ x", frame, BOUNDS, None)[0]


def test_the_released_spread_at_huge_eps_is_the_fixed_effects_regression_and_the_within_variance() -> None:
    """On the unit scale, the pooled within-group fit is statsmodels' OLS with a dummy per group, and the fill
    is x's variance around its group means."""
    frame = tracts(40, 25, 0.3)
    sizes = np.full(40, 25)
    released = spread.release(_design(frame), sizes, 1e9, 1, np.random.default_rng(0))
    fixed_effects = smf.ols("y ~ x + C(g)", frame).fit()
    assert released.noise[0] == pytest.approx(np.sqrt(fixed_effects.scale) / 4.0, rel=1e-6)  # y's bounds: 4 wide
    assert released.noise[1] == pytest.approx(released.noise[0], rel=1e-6)
    within = frame["x"] - frame.groupby("g")["x"].transform("mean")
    assert released.fill[0] == pytest.approx((within**2).sum() / (1000 - 40), rel=1e-6)


def test_the_released_ranges_hold_the_true_spread_and_tell_noisy_from_quiet_data() -> None:
    """At the share a grouped auto spends on 2,000 x 50 rows at eps 5: over 200 seeded releases the range holds
    the non-private levels at least 190 times each (a miss has probability at most about e^-4 each, so a false
    failure has probability below 1e-3); it never keeps the wrong level's scenarios alone: on noisy data
    (residual SD 0.1 on the unit scale) it keeps the noisy ones, on quiet data (0.006) the quiet ones or,
    where its noise reaches across the boundary between the levels, both."""
    for noise, expected in ((0.4, 0.1), (0.01, 0.01)):
        frame = tracts(2000, 50, noise)
        design, sizes = _design(frame), np.full(2000, 50)
        exact = spread.spread_of(spread.pooled_comoment(design, sizes), design.n, 2000, 0.0)
        eps = 5.0 * spread.SHARE
        released = [spread.release(design, sizes, eps, 1, np.random.default_rng(s)) for s in range(200)]
        assert sum(r.noise[0] <= exact.noise[0] <= r.noise[1] for r in released) >= 190
        assert sum(r.fill[0] <= exact.fill[0] <= r.fill[1] for r in released) >= 190
        scenarios = (0.1, 0.1, 0.01, 0.01, 0.1)
        kept = {tuple(bool(k) for k in nearest_levels(scenarios, r.noise)) for r in released}
        right = tuple(s == expected for s in scenarios)
        assert right in kept and kept <= {right, (True,) * 5}  # the right level, or both where the noise hides it


def test_the_spread_sensitivity_holds_by_brute_force_over_the_box_corners() -> None:
    """Replacing one row of one group by any corner of the unit box moves the released triangle by at most
    its sensitivity (one changed group), and some replacement comes within 10% of it."""
    rng = np.random.default_rng(1)
    sizes = np.array([6, 9])
    frame = pd.DataFrame({"x": rng.uniform(0, 1, 15), "y": rng.uniform(-1, 3, 15)})
    frame.loc[:5, ["x", "y"]] = [0.0, -1.0]  # group 0 at a corner: the worst replacement moves to the other
    base = upper_triangle(spread.pooled_comoment(_design(frame), sizes))
    bound = spread.sensitivity(2, sizes, 1)  # (u, v): three entries
    worst = 0.0
    for row, corner in itertools.product(range(15), itertools.product((0.0, 1.0), (-1.0, 3.0))):
        moved = frame.copy()
        moved.loc[row, ["x", "y"]] = corner
        change = np.abs(upper_triangle(spread.pooled_comoment(_design(moved), sizes)) - base).sum()
        assert change <= bound * (1 + 1e-12)
        worst = max(worst, change)
    assert worst >= 0.9 * bound  # a corner row of group 0 to the far corner: 3 (1 - 1/6) against 3 (1 - 1/9)


def _level_core(design: Design, privacy: PrivacyRequest, rng: np.random.Generator) -> None:
    """The spread's release on two public groups of 10 rows (the audit records its Laplace release)."""
    spread.release(design, np.array([10, 10]), float(privacy.eps), 1, rng)


def test_replay_of_a_replaced_row_meets_the_spreads_recorded_sensitivity() -> None:
    """Deterministic: the release moves by at most its claim, and on a corner row replaced by the origin (its
    group otherwise at the origin) by all of it up to the factor (1 - 1/10) the claim does not drop."""
    points = np.array([[1.0, 1.0]] + [[0.0, 0.0]] * 19)
    moved = points.copy()
    moved[0] = [0.0, 0.0]
    pair = pair_from_points(points, moved, [(0.0, 1.0)], (0.0, 1.0), label="row 0 to the origin")
    report = replay(_level_core, [pair, pair.swapped()], PrivacyRequest(eps=1.0), seeds=range(3), check_outputs=False)
    assert_replay_sound(report, min_ratio=None)
    assert_replay_sound(report, min_ratio=0.99, names=[spread.NAME])


def _facts(n: int, **changes) -> PublicFacts:
    design = _design(tracts(1, n, 0.2))
    return replace(PublicFacts.of(design, 5.0, 0.0, "ols"), **changes)


def test_groups_read_side_by_side_on_noisy_data_rank_the_histogram_above_theil_sen() -> None:
    """At n = 50, eps = 5 the typical error ranks Theil-Sen first; its tail on noisy data (a wild median in
    one group of ten) puts the histogram first once the fits are read side by side on noisy data."""
    assert choose(_facts(50)).method == "theilsen"
    noisy = DataSpread(noise=(0.09, 0.11), fill=(0.04, 0.06))
    assert choose(_facts(50, side_by_side=True, spread=noisy)).method == "histogram"


def test_a_released_spread_keeps_the_scenarios_nearest_it() -> None:
    noise = (0.1, 0.1, 0.01, 0.01, 0.1)
    assert nearest_levels(noise, (0.05, 0.08)).tolist() == [True, True, False, False, True]
    assert nearest_levels(noise, (0.002, 0.02)).tolist() == [False, False, True, True, False]
    assert nearest_levels(noise, (0.02, 0.05)).all()  # ambiguous: both levels weighed
    prediction = Prediction("x", (1.0,) * 5, (1.0,) * 5, 0.0, noise=noise, fill=(0.05, 0.01, 0.05, 0.01, 4 / 150))
    fills_bounds = DataSpread(noise=(0.09, 0.11), fill=(0.07, 0.09))  # uniform x on its bounds: 1/12
    assert matching_scenarios(prediction, fills_bounds).tolist() == [True, False, False, False, False]
    no_quiet_skew = DataSpread(noise=(0.005, 0.006), fill=(0.025, 0.03))  # no quiet skewed scenario
    assert matching_scenarios(prediction, no_quiet_skew).tolist() == [False, False, True, True, False]
    assert matching_scenarios(prediction, None).all()


def test_a_grouped_auto_spends_the_call_eps_with_the_spread_in_its_split() -> None:
    frame = tracts(400, 50, 0.2)  # 20,000 rows x eps 5 x the share: just enough for the release
    keys = list(range(400))
    res = dpstats.dp_ols(
        "y ~ x", frame, eps=5.0, bounds=BOUNDS, by="g", groups=keys, group_sizes=dict.fromkeys(keys, 50),
        random_state=3,
    )  # fmt: skip
    split = dict(res.privacy.split)
    assert res.privacy.eps == pytest.approx(5.0)
    assert sum(split.values()) == pytest.approx(5.0)
    assert split[spread.NAME] == pytest.approx(5.0 * spread.SHARE)
    assert res[0].privacy.eps == pytest.approx(5.0 * (1 - spread.SHARE))
    assert len(set(res.methods)) == 1  # one public size: one choice


def test_without_rows_enough_no_spread_is_released() -> None:
    frame = tracts(4, 50, 0.2)
    res = dpstats.dp_ols("y ~ x", frame, eps=1.0, bounds=BOUNDS, by="g", groups=[0, 1, 2, 3], random_state=3)
    assert spread.NAME not in dict(res.privacy.split)
    assert res.privacy.eps == pytest.approx(1.0)


def test_groups_of_different_public_sizes_get_each_their_own_mechanism() -> None:
    """Declared sizes of 40 and 20,000 rows: the small groups and the large one are fitted by different
    mechanisms, each group's result names its own, and the summary counts them."""
    small, large = tracts(3, 40, 0.2), tracts(1, 20_000, 0.2, seed=1).assign(g=3)
    frame = pd.concat([small, large], ignore_index=True)
    sizes = {0: 40, 1: 40, 2: 40, 3: 20_000}
    res = dpstats.dp_ols("y ~ x", frame, eps=2.0, bounds=BOUNDS, by="g", groups=[0, 1, 2, 3], group_sizes=sizes,
                         random_state=4)  # fmt: skip
    methods = res.methods
    assert methods[0] == methods[1] == methods[2] != methods[3]
    assert res[3].method == methods[3] and res[0].method == methods[0]
    assert "auto, per group" in res.summary().as_text()
    again = dpstats.dp_ols("y ~ x", frame, eps=2.0, bounds=BOUNDS, by="g", groups=[0, 1, 2, 3], group_sizes=sizes,
                           random_state=4)  # fmt: skip
    pd.testing.assert_frame_equal(res.params, again.params)


def test_a_target_refuses_before_spending_the_groups_predicted_to_miss_it() -> None:
    """target=0.05 on x's slope: the groups of 40 rows are predicted to miss it and spend nothing; the group of
    20,000 rows is fitted. An explicit method with a target in a grouped call is refused before reading."""
    small, large = tracts(2, 40, 0.2), tracts(1, 20_000, 0.2, seed=1).assign(g=2)
    frame = pd.concat([small, large], ignore_index=True)
    call = dict(eps=2.0, bounds=BOUNDS, by="g", groups=[0, 1, 2], group_sizes={0: 40, 1: 40, 2: 20_000})
    res = dpstats.dp_ols("y ~ x", frame, target=0.05, random_state=5, **call)
    assert res.failed.tolist() == [True, True, False]
    assert "refused before spending" in res[0].reason and "within target=0.05" in res[0].reason
    assert res[0].privacy.eps == 0.0
    ols_slope = np.polyfit(large["x"], large["y"], 1)[0]
    assert abs(res[2].params["x"] - ols_slope) < 0.05
    with pytest.raises(ValueError, match="judges each group's choice"):
        dpstats.dp_ols("y ~ x", frame, target=0.05, method="histogram", **call)

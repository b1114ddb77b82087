"""NoisyStats with the privacy unit a unit of up to k rows (dpstats/mechanisms/noisystats/mechanism.py, "The
privacy unit"; dpstats/uncertainty/cluster_meat.py).

1. One row per unit is the row-level release, draw for draw.
2. Replay on unit-level corner pairs (every row of one unit moved between corners of the box): every release
   within its declared sensitivity, the point's reaching it; the same pairs flag the row-level sensitivities
   (the canary: the unit's k rows forgotten).
3. The clustered meat's widths hold by brute force over units of corner rows, and are reached.
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
from dpstats.audit import replay
from dpstats.audit.unit_pairs import unit_corner_pairs
from dpstats.design.units import Units
from dpstats.frontend.formula import build_design
from dpstats.mechanisms.base import PrivacyRequest
from dpstats.mechanisms.noisystats import mechanism as noisystats
from dpstats.uncertainty import cluster_meat

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

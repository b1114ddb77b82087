"""Grouped NoisyStats with standard errors, vectorised over the groups (dpstats/mechanisms/noisystats/grouped.py).

The law check: the vectorised path and the group-by-group path (``mechanism.fit`` on each group's rows, forced
by patching the public dispatch) are run on a fixed small design, with public sizes and with noisy sizes. Each
released quantity (intercept, slope, their standard errors) is compared by a two-sample Kolmogorov-Smirnov
test at level 1e-3: 8 tests, so a false failure has probability at most 0.8% (seeded: deterministic in
practice). Every group holds the same 40 rows, so the groups of one call are independent draws of one law;
the vectorised bootstrap shares its random numbers across the groups of a call (common random numbers:
dpstats/mechanisms/noisystats/grouped_bootstrap.py), so its standard errors are drawn one call per draw.
"""

from __future__ import annotations

import contextlib
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpstats
from dpstats.audit import assert_replay_sound, pair_from_points, replay
from dpstats.mechanisms.base import PrivacyRequest
from dpstats.mechanisms.noisystats import grouped

ALPHA = 1e-3
ROWS = 40
UNIT = {"x": (0.0, 1.0), "y": (0.0, 1.0)}


def _tracts(groups: int) -> pd.DataFrame:
    """``groups`` copies of the same 40 rows (y = 0.2 + 0.5 x + heteroskedastic noise, in [0, 1])."""
    rng = np.random.default_rng(7)
    x = rng.uniform(0, 1, ROWS)
    y = np.clip(0.2 + 0.5 * x + rng.normal(0, 0.05 + 0.1 * x), 0, 1)
    return pd.DataFrame({"g": np.repeat(np.arange(groups), ROWS), "x": np.tile(x, groups), "y": np.tile(y, groups)})


def _fit(groups: int, public: bool, seed: int):
    keys = list(range(groups))
    sizes = dict.fromkeys(keys, ROWS) if public else None
    return dpstats.dp_ols("y ~ x", _tracts(groups), eps=20.0, bounds=UNIT, method="noisystats", by="g",
                          groups=keys, group_sizes=sizes, random_state=seed)  # fmt: skip


def _draws(vectorised: bool, public: bool) -> tuple[np.ndarray, np.ndarray]:
    """400 draws of (intercept, slope) and 200 of their standard errors, by one path."""
    patch = mock.patch.object(grouped, "vectorised", return_value=False)
    with contextlib.nullcontext() if vectorised else patch:
        res = _fit(400, public, 1)
        params = res.params.to_numpy()
        if vectorised:  # one call per draw: the groups of a call share the bootstrap's random numbers
            se = np.array([_fit(2, public, 100 + k).bse.to_numpy()[0] for k in range(200)])
        else:
            se = res.bse.to_numpy()[:200]
    return params[np.all(np.isfinite(params), axis=1)], se[np.all(np.isfinite(se), axis=1)]


@pytest.mark.parametrize("public", [True, False])
def test_vectorised_and_group_by_group_releases_have_one_law(public: bool) -> None:
    """Two-sample KS of each released quantity at level 1e-3 (module docstring: 0.8% false failures in all)."""
    fast_params, fast_se = _draws(True, public)
    slow_params, slow_se = _draws(False, public)
    assert fast_params.shape[0] > 300 and slow_params.shape[0] > 300  # at eps 20 few groups fail
    for j in range(2):
        assert stats.ks_2samp(fast_params[:, j], slow_params[:, j]).pvalue > ALPHA
        assert stats.ks_2samp(fast_se[:, j], slow_se[:, j]).pvalue > ALPHA


def test_the_vectorised_path_runs_when_public_facts_allow_it() -> None:
    """Dispatch: the batch (one recorded release per statistic over all groups), from public facts only."""
    from dpstats.privacy import noise

    with noise.recording() as log:
        _fit(5, True, 0)
    names = [r.name for r in log]
    assert names == ["ncov(x, y)", "nvar(x)", "intercept", "SE: sum(x)", "SE: RSS", "SE: HC meat"]
    assert all(r.value.shape[0] == 5 for r in log)


def _core(design, privacy, rng):
    """Two groups of 10 rows (public sizes) with standard errors, the vectorised release of group 0."""
    return grouped.fit_groups(design, np.array([10, 10]), privacy, rng, 1)[0]


def test_replay_with_standard_errors_meets_every_recorded_sensitivity() -> None:
    """Deterministic: the sums' and meat's releases (their sensitivities depend on the released estimate,
    forced equal on both neighbours) move by at most their recorded sensitivity when a row of group 0 moves
    from the origin to the corner and back."""
    points = np.array([[1.0, 1.0]] + [[0.0, 0.0]] * 9 + [[0.5, 0.2]] * 10)
    moved = points.copy()
    moved[0] = [0.0, 0.0]
    pair = pair_from_points(points, moved, [(0.0, 1.0)], (0.0, 1.0), label="row 0 replaced in group 0")
    report = replay(_core, [pair, pair.swapped()], PrivacyRequest(eps=3.0), seeds=range(4))
    assert_replay_sound(report, min_ratio=None)
    assert {"SE: sum(x)", "SE: RSS", "SE: HC meat"} <= set(report.releases)


def test_the_vectorised_post_processing_equals_the_ungrouped_on_the_same_inputs() -> None:
    """Deterministic: residual bounds, meat widths, HC1 covariances and the replicates' robust covariance of
    each group equal the ungrouped functions' (dpstats/uncertainty/sandwich.py, .inference, intervals.py)."""
    from dpstats.mechanisms.noisystats import grouped_bootstrap, grouped_covariance, grouped_sandwich, inference
    from dpstats.uncertainty import intervals, sandwich

    rng = np.random.default_rng(5)
    G, p = 6, 2
    centre = rng.uniform(0, 1, (G, p))
    coef = rng.normal(0, 2, (G, p + 1))
    bound = grouped_sandwich.residual_bounds(coef, centre)
    widths = grouped_sandwich.entry_widths(centre, bound)
    m = rng.integers(5, 50, G).astype(float)
    a = rng.normal(size=(G, p, p))
    s_xx = a @ np.swapaxes(a, 1, 2) + np.eye(p)
    u_sum = centre * m[:, None] + rng.normal(0, 0.5, (G, p))
    b = rng.normal(size=(G, p + 1, p + 1))
    meat = b @ np.swapaxes(b, 1, 2)
    meat[0, 1, 1] = -1.0  # a negative diagonal entry: nearest_psd's zero row
    variance = rng.uniform(0, 2, (G, (p + 1) * (p + 2) // 2))
    scales = rng.uniform(0.01, 0.5, (G, 3))
    released = grouped_sandwich.GroupSandwiches(u_sum, centre, meat, variance)
    covs = grouped_covariance.covariances(released, coef, s_xx, m, scales)
    reps = rng.standard_t(3, (G, 300, p + 1))
    reps[1, :50, 1] = np.nan
    reps[2, 10:, 0] = np.nan  # too few finite replicates: infinite variances
    robust = grouped_bootstrap.replicate_covariances(np.moveaxis(reps, -1, 0))
    for g in range(G):
        box = np.vstack([[1.0, 1.0], np.column_stack([-centre[g], 1.0 - centre[g]])])
        assert bound[g] == pytest.approx(sandwich.residual_bound(coef[g], box, (0.0, 1.0)), rel=1e-12)
        np.testing.assert_allclose(widths[g], sandwich.entry_widths(box, bound[g]), rtol=1e-12)
        one = inference.CenteredSandwich(u_sum[g], centre[g], sandwich.NoisyMeat(meat[g], variance[g]))
        privacy_cov = inference.privacy_covariance(coef[g], s_xx[g], tuple(scales[g]), u_sum[g] / m[g])
        expected = inference.centered_covariance(one, s_xx[g], int(m[g]), privacy_cov)
        np.testing.assert_allclose(covs[g], expected, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(robust[g], intervals.replicate_covariance(reps[g]), rtol=1e-9, atol=1e-12)


class _Replay:
    """A stand-in generator that returns given standard draws, scaled, in the order they are asked for."""

    def __init__(self, draws: list[np.ndarray]) -> None:
        self.draws = list(draws)

    def normal(self, loc: float, scale: float, size: tuple[int, ...]) -> np.ndarray:
        return self._next(loc, scale, size)

    def laplace(self, loc: float, scale: float, size: int | tuple[int, ...]) -> np.ndarray:
        return self._next(loc, scale, size)

    def _next(self, loc: float, scale: float, size: int | tuple[int, ...]) -> np.ndarray:
        draw = self.draws.pop(0)
        assert draw.shape == np.empty(size).shape
        return loc + scale * draw


@pytest.mark.parametrize(("p", "repair"), [(1, False), (1, True), (2, False), (2, True)])
def test_the_blocked_bootstrap_equals_the_ungrouped_one_on_the_same_draws(p: int, repair: bool) -> None:
    """Deterministic: each group's replicates (user's units, design order) and robust covariance from the blocked
    bootstrap (blocks of 3 groups, the last one partial) equal :func:`.inference.centered_replicates` (at the
    grouped number of replicates) then :func:`.inference.finish` of that group fed the same standardised draws;
    noise scales large enough that some refits fail (NaN) or meet the floor."""
    from dpstats.mechanisms.noisystats import grouped_bootstrap, inference

    rng = np.random.default_rng(11)
    G, q = 7, p + 1
    coef = rng.normal(0, 1, (G, q))
    a = rng.normal(size=(G, q, q))
    cov = a @ np.swapaxes(a, 1, 2) * 0.05
    b = rng.normal(size=(G, p, p))
    s_xx = b @ np.swapaxes(b, 1, 2) + np.eye(p)
    u_bar = rng.uniform(0, 1, (G, p))
    scales = rng.uniform(0.05, 0.8, (G, 3))
    floor = rng.uniform(0.05, 0.5, G) if repair else None
    jacobian = np.triu(rng.uniform(0.5, 2.0, (q, q)))  # the intercept's row mixes in the slopes
    offset = rng.normal(size=q)
    order = np.roll(np.arange(q), 1)
    with mock.patch.object(grouped_bootstrap, "BLOCK", 3):
        reps, robust = grouped_bootstrap.bootstrap(
            np.random.default_rng(3), coef, cov, s_xx, u_bar, scales, floor, (jacobian, offset, order)
        )
    standard = grouped_bootstrap.standard_draws(np.random.default_rng(3), q)
    shared = [standard.z.T, standard.e_xx.T, standard.e_xy.T, standard.e_a]
    failed = 0
    for g in range(G):
        with mock.patch.object(inference, "REPLICATES", grouped_bootstrap.REPLICATES):
            unit = inference.centered_replicates(_Replay(shared), coef[g], cov[g], s_xx[g], u_bar[g], tuple(scales[g]),
                                                 None if floor is None else float(floor[g]))  # fmt: skip
        expected = (unit @ jacobian.T + offset)[:, order]
        np.testing.assert_array_equal(np.isnan(reps[g]), np.isnan(expected))
        np.testing.assert_allclose(reps[g], expected, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(robust[g], inference.finish(expected)[0], rtol=1e-9, atol=1e-12)
        failed += np.isnan(expected).any(axis=1).sum()
    assert (failed > 0) != repair  # the failure rule left NaN refits; the floor none

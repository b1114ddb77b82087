"""Weighted NoisyStats (dpstats/mechanisms/noisystats/weighted.py): WLS in the limit, its sensitivity by brute
force, design-based standard errors, and the row-wise treatment of the weights."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import dpstats
from dpstats.mechanisms.noisystats import structured, weighted

BOUNDS = {"x": (0.0, 10.0), "z": (-1.0, 1.0), "y": (-20.0, 30.0), "wt": (0.0, 10.0)}
LEVELS = {"g": ["a", "b", "c"]}


def _data(n: int = 1500, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    d = pd.DataFrame({
        "x": rng.uniform(0, 10, n), "z": rng.uniform(-1, 1, n), "g": rng.choice(list("abc"), n),
        "wt": rng.uniform(0.5, 8, n),
    })  # fmt: skip
    d["y"] = 1 + 0.5 * d.x - 2 * d.z + (d.g == "b") + rng.normal(0, 1 + 0.3 * d.x, n)
    return d


@pytest.mark.parametrize("formula", ["y ~ x + z", "y ~ x + z + C(g)", "y ~ C(g) + x"])
def test_at_a_huge_eps_the_weighted_fit_is_statsmodels_wls_with_its_sandwich(formula):
    data = _data()
    res = dpstats.dp_ols(formula, data, eps=1e9, bounds=BOUNDS, levels=LEVELS, weights="wt", method="noisystats",
                         random_state=0)  # fmt: skip
    ref = smf.wls(formula, data, weights=data.wt).fit(cov_type="HC0")
    np.testing.assert_allclose(res.params.to_numpy(), ref.params.to_numpy(), rtol=1e-6)
    n = len(data)  # survey's weighted sandwich with one PSU per row is HC0 times n / (n - 1)
    np.testing.assert_allclose(res.bse.to_numpy(), ref.bse.to_numpy() * np.sqrt(n / (n - 1)), rtol=1e-4)
    assert res.hyperparameters["weights"] == "wt" and res.privacy.eps <= 1e9


def test_auto_with_weights_chooses_a_weighted_mechanism_and_its_refusal_plan_lists_only_those():
    data = _data(4000)
    res = dpstats.dp_ols("y ~ x", data, eps=20.0, bounds=BOUNDS, weights="wt", random_state=1)
    assert res.method in dpstats.mechanisms.weighted_methods("ols")
    with pytest.raises(dpstats.RefusedBeforeSpending) as refused:
        dpstats.dp_ols("y ~ x", data.iloc[:200], eps=0.05, bounds=BOUNDS, weights="wt", random_state=1)
    listed = set(refused.value.plan.table["method"])
    assert not any(name.startswith(("theilsen", "gradient")) for name in listed)


def test_a_method_without_weights_is_refused_before_the_data_are_read():
    class Unreadable(pd.DataFrame):
        def __getitem__(self, key):  # any read of the rows fails the test
            raise AssertionError("the data were read")

    for method in ("theilsen", "gradient"):
        with pytest.raises(ValueError, match="does not take survey weights"):
            dpstats.dp_ols("y ~ x", Unreadable(_data(10)), eps=1.0, bounds=BOUNDS, weights="wt", method=method)


def test_bad_weights_get_the_row_wise_treatment_and_never_raise():
    data = _data(400)
    bad = data.copy()
    bad["wt"] = bad["wt"].astype(object)
    bad.loc[0, "wt"], bad.loc[1, "wt"], bad.loc[2, "wt"], bad.loc[3, "wt"] = -3.0, np.nan, "heavy", 1e6
    treated = data.copy()
    treated.loc[0, "wt"], treated.loc[1, "wt"], treated.loc[2, "wt"], treated.loc[3, "wt"] = 0.0, 5.0, 5.0, 10.0
    kwargs = dict(eps=1e9, bounds=BOUNDS, weights="wt", method="noisystats", random_state=3)
    res = dpstats.dp_ols("y ~ x + z", bad, **kwargs)
    same = dpstats.dp_ols("y ~ x + z", treated, **kwargs)
    np.testing.assert_allclose(res.params.to_numpy(), same.params.to_numpy(), rtol=1e-9)


def _grid_rows(continuous: int, block_sizes: tuple[int, ...]):
    """Unit-scale rows (u, v) on a grid: continuous columns and the response at 0, 1/2, 1, each block at one of
    its levels or its reference."""
    levels = [[-1, *range(size)] for size in block_sizes]
    for cont in itertools.product((0.0, 0.5, 1.0), repeat=continuous):
        for chosen in itertools.product(*levels):
            dummies = []
            for size, level in zip(block_sizes, chosen, strict=True):
                dummies.extend(1.0 if j == level else 0.0 for j in range(size))
            for v in (0.0, 0.5, 1.0):
                yield np.array([*dummies, *cont]), v


def _layout(continuous: int, block_sizes: tuple[int, ...]) -> tuple[structured.Layout, tuple[tuple[int, ...], ...]]:
    """The weighted release's layout for the blocks (first) and continuous columns, and its blocks."""
    blocks, start = [], 0
    for size in block_sizes:
        blocks.append(tuple(range(start, start + size)))
        start += size
    blocks = tuple(blocks) or ((),)
    return structured.Layout.of(continuous + sum(block_sizes), blocks), blocks


@pytest.mark.parametrize("continuous, block_sizes", [(1, ()), (2, ()), (1, (2,)), (1, (1, 2)), (0, (2,))])
def test_the_weighted_sensitivity_holds_for_every_pair_of_grid_rows_with_weights_zero_and_the_maximum(
    continuous, block_sizes
):
    layout, blocks = _layout(continuous, block_sizes)
    w_max = 7.0
    values = [layout.values(u[None, :], np.array([v]), np.array([w]))
              for u, v in _grid_rows(continuous, block_sizes) for w in (0.0, w_max)]  # fmt: skip
    values = np.array(values)
    largest = max(np.abs(values - row).sum(axis=1).max() for row in values)
    bound = weighted.sensitivity(layout, blocks, w_max)
    assert largest <= bound + 1e-12
    assert largest >= 0.5 * bound  # the bound is not loose by more than 2x on these designs


@pytest.mark.parametrize("continuous, block_sizes", [(2, ()), (1, (2,)), (1, (1, 2))])
def test_every_rows_weighted_score_is_within_its_declared_bounds(continuous, block_sizes):
    layout, blocks = _layout(continuous, block_sizes)
    bound = weighted.score_bound(layout, blocks, 7.0, 0.3)
    for u, v in _grid_rows(continuous, block_sizes):
        Z = layout.rows_of(u[None, :], np.array([v]))[0, :-1]
        score = 7.0 * 0.3 * Z  # the residual at its clip, the weight at its maximum
        assert np.abs(score).sum() <= bound.l1 + 1e-12 and (score**2).sum() <= bound.l2sq + 1e-12


def test_at_a_moderate_eps_the_intervals_cover_the_wls_fit():
    """Seeded: 40 fits at eps 5 on 4,000 rows; each 95% interval covers WLS's slope with probability about 0.95
    or more (it carries the sampling error too), so 30 or more of 40 fail with probability below 1e-3."""
    data = _data(4000, seed=5)
    ref = smf.wls("y ~ x + z", data, weights=data.wt).fit()
    covered = 0
    for seed in range(40):
        res = dpstats.dp_ols("y ~ x + z", data, eps=5.0, bounds=BOUNDS, weights="wt", method="noisystats",
                             singular="repair", random_state=seed)  # fmt: skip
        low, high = res.conf_int().loc["x"]
        covered += low <= ref.params["x"] <= high
    assert covered >= 30

"""Grouped fits on a Dask DataFrame (dpstats/distributed/by_group.py) give the pandas release, and refuse the rest.

What is tested, on statsmodels' fair data (6,366 rows) grouped by occupation:
the same ``random_state`` gives the same group sizes, the same params and
standard errors (up to floating-point summation order: sums are merged over
the partitions, ``rtol=1e-7`` as in tests/test_distributed.py) and the same
noisy values with the same calibration, in the same order
(dpstats/privacy/noise.py's record: the runs that only learn which sums a fit reads
record nothing) as the pandas grouped call, for the NoisyStats batch
(``se_share=0``) and for the mechanisms run group by group (NoisyStats with
standard errors or a factor, the histogram for least squares and quantile
regression, KNG least squares); with declared public sizes (some groups
truncated to their first rows, which span several partitions, some padded)
and with noisy sizes; with integer keys in a float column and string keys,
rows of undeclared and missing keys, an empty declared group, bad cells
imputed row-wise, an empty partition; on Dask's threaded scheduler and on a
``distributed.LocalCluster`` of two worker processes (the task stream shows
that the groups' sums were computed there). The grouped calls whose
mechanism needs every row in one place are refused with the alternatives
named before any partition is computed (the data's partitions raise if they
are). Every test is deterministic: no false failures.
"""

from __future__ import annotations

import contextlib
from unittest import mock

import dask
import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats.groups.partition import chunk_codes, layout
from dpstats.mechanisms.noisystats import grouped
from dpstats.privacy import noise

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

BOUNDS = {"affairs": (0.0, 10.0), "yrs_married": (0.0, 25.0), "age": (15.0, 45.0)}
LEVELS = {"rating": ["low", "high"], "religious": [1.0, 2.0, 3.0, 4.0]}
FORMULAS = ["affairs ~ yrs_married + age", "affairs ~ yrs_married + C(rating)"]
# (estimator, method, se_share, formula): the mechanism on each group's rows, read through Design.total
BY_GROUP = [
    ("ols", "noisystats", None, "affairs ~ yrs_married + age"),  # with standard errors: the residual meat
    ("ols", "noisystats", 0.0, "affairs ~ yrs_married + C(religious)"),  # a factor: the structured release
    ("ols", "histogram", None, "affairs ~ yrs_married + C(religious)"),
    ("ols", "kng", None, "affairs ~ yrs_married + age"),
    ("quantreg", "histogram", None, "affairs ~ yrs_married + age"),
]
INT_KEYS = [1, 2, 3, 4, 5, 6, 8]  # 8: declared, no rows
# truncated (2, 3, 5: their first rows span the partitions), padded (1, 6, 8), about the count (4)
INT_SIZES = {1: 60, 2: 300, 3: 1000, 4: 1800, 5: 500, 6: 150, 8: 20}
STR_KEYS = [f"occ{k}" for k in INT_KEYS]
STR_SIZES = {f"occ{k}": m for k, m in INT_SIZES.items()}


@pytest.fixture(scope="module")
def dirty(fair: pd.DataFrame) -> pd.DataFrame:
    """fair with undeclared (7) and missing keys, string keys beside them, a two-level factor and bad cells."""
    data = fair.copy()
    data.loc[data.index[::101], "occupation"] = 7.0
    data.loc[data.index[::59], "occupation"] = np.nan
    data["job"] = [None if np.isnan(v) else f"occ{int(v)}" for v in data["occupation"]]
    data["rating"] = np.where(data["rate_marriage"] >= 4, "high", "low")
    data.loc[data.index[::97], "yrs_married"] = np.nan
    data.loc[data.index[::83], "rating"] = "unknown"
    return data


@pytest.fixture(scope="module")
def dirty_dask(dirty: pd.DataFrame):
    """The same rows in five partitions and an empty one."""
    empty = dd.from_pandas(dirty.iloc[:0], npartitions=1)
    return dd.concat([dd.from_pandas(dirty, npartitions=5), empty])


def _like_dask(data, se_share: float | None):
    """On pandas with standard errors, NoisyStats group by group, as a Dask DataFrame runs it (the meat needs a
    second pass over the rows); pandas' vectorised batch has the same law (tests/test_grouped_se_vectorised.py),
    not the same draws."""
    if isinstance(data, pd.DataFrame) and se_share is None:
        return mock.patch.object(grouped, "vectorised", return_value=False)
    return contextlib.nullcontext()


def _fit(data, formula: str, by: str, public: bool, estimator: str = "ols", method: str = "noisystats", **extra):
    keys, sizes = (INT_KEYS, INT_SIZES) if by == "occupation" else (STR_KEYS, STR_SIZES)
    fit = dpstats.dp_ols if estimator == "ols" else dpstats.dp_quantreg
    extra = {"se_share": 0.0, **extra}
    share = extra["se_share"]
    if share is None:
        del extra["se_share"]
    with _like_dask(data, share):
        return fit(
            formula, data, eps=4.0, bounds=BOUNDS, levels=LEVELS, method=method, by=by, groups=keys,
            group_sizes=sizes if public else None, random_state=12, **extra,
        )  # fmt: skip


def _same(on_pandas, on_dask) -> None:
    np.testing.assert_allclose(on_dask.params.to_numpy(), on_pandas.params.to_numpy(), rtol=1e-7)
    tidy_dask, tidy_pandas = on_dask.tidy(), on_pandas.tidy()
    np.testing.assert_allclose(tidy_dask["std.error"], tidy_pandas["std.error"], rtol=1e-7)
    pd.testing.assert_index_equal(on_dask.params.index, on_pandas.params.index)
    assert on_dask.nobs.tolist() == on_pandas.nobs.tolist()
    assert [f.failed for f in on_dask.fits] == [f.failed for f in on_pandas.fits]
    assert on_dask.privacy == on_pandas.privacy
    assert tidy_dask.columns.tolist() == tidy_pandas.columns.tolist()


def _same_records(on_pandas: list, on_dask: list) -> None:
    assert [r.name for r in on_dask] == [r.name for r in on_pandas]
    for a, b in zip(on_dask, on_pandas, strict=True):
        assert (a.eps, a.norm) == (b.eps, b.norm)
        np.testing.assert_allclose(a.sensitivity, b.sensitivity, rtol=1e-9)
        np.testing.assert_allclose(a.value, b.value, rtol=1e-9, atol=1e-9)


CASES = [(formula, by, public) for formula in FORMULAS for by in ("occupation", "job") for public in (True, False)]


@pytest.mark.parametrize(("formula", "by", "public"), CASES)
def test_same_releases_with_the_same_sensitivities(dirty, dirty_dask, formula, by, public):
    """Same sizes and params as pandas, and every noisy value the same statistic with the same calibration."""
    with noise.recording() as on_pandas:
        res_pandas = _fit(dirty, formula, by, public)
    with dask.config.set(scheduler="threads"), noise.recording() as on_dask:
        res_dask = _fit(dirty_dask, formula, by, public)
    _same(res_pandas, res_dask)
    sizes = res_dask.nobs.to_numpy()
    if public:
        assert sizes.tolist() == list(INT_SIZES.values())
    empty = res_dask[INT_KEYS[-1] if by == "occupation" else STR_KEYS[-1]]  # a release like any other
    assert empty.nobs == sizes[-1] >= 2 and (empty.failed or np.isfinite(empty.params).all())
    _same_records(on_pandas, on_dask)


@pytest.mark.parametrize("public", [True, False])
@pytest.mark.parametrize(("estimator", "method", "se_share", "formula"), BY_GROUP)
def test_group_by_group_equals_pandas(dirty, dirty_dask, estimator, method, se_share, formula, public):
    """The mechanisms run group by group: the same releases, standard errors and records as pandas."""
    with noise.recording() as on_pandas:
        res_pandas = _fit(dirty, formula, "occupation", public, estimator, method, se_share=se_share)
    with dask.config.set(scheduler="threads"), noise.recording() as on_dask:
        res_dask = _fit(dirty_dask, formula, "occupation", public, estimator, method, se_share=se_share)
    _same(res_pandas, res_dask)
    _same_records(on_pandas, on_dask)
    if se_share is None:  # standard errors were released (where a group's fit did not fail)
        assert np.isfinite(res_dask.tidy()["std.error"]).any()


@pytest.mark.parametrize(("method", "se_share"), [("noisystats", 0.0), ("noisystats", None)])
def test_local_cluster_equals_pandas(dirty, dirty_dask, dask_client, method, se_share):
    """The batch and the group-by-group fits (noisy sizes) on two worker processes."""
    with dask.config.set(scheduler=dask_client), distributed.get_task_stream(dask_client) as stream:
        res = _fit(dirty_dask, FORMULAS[0], "occupation", False, method=method, se_share=se_share)
    ran = {task["key"][0] if isinstance(task["key"], tuple) else task["key"] for task in stream.data}
    assert any(str(key).startswith("_counts") for key in ran)  # the first pass ran on the workers
    assert any(str(key).startswith("_partition_statistic") for key in ran)  # and the groups' sums
    _same(_fit(dirty, FORMULAS[0], "occupation", False, method=method, se_share=se_share), res)


@pytest.mark.parametrize("se_share", [0.0, None])
def test_no_group_padded(dirty, dirty_dask, se_share):
    """Declared sizes that every group exceeds: no pad rows anywhere, the same release as pandas."""
    keys = INT_KEYS[:-1]
    fits = []
    for data in (dirty, dirty_dask):
        with _like_dask(data, se_share):
            fits.append(dpstats.dp_ols(
                FORMULAS[0], data, eps=4.0, bounds=BOUNDS, method="noisystats", se_share=se_share, by="occupation",
                groups=keys, group_sizes=dict.fromkeys(keys, 30), random_state=5,
            ))  # fmt: skip
    _same(*fits)


def _unreadable(_: int) -> pd.DataFrame:
    raise RuntimeError("a partition was read")


@pytest.fixture(scope="module")
def unreadable(dirty: pd.DataFrame):
    """A dask DataFrame with dirty's columns whose partitions raise when computed."""
    return dd.from_map(_unreadable, [0, 1], meta=dirty.iloc[:0])


@pytest.mark.parametrize(
    ("estimator", "method"),
    [("ols", "theilsen"), ("ols", "tukey"), ("ols", "gradient"), ("quantreg", "kng")],
)
def test_refused_before_reading(unreadable, estimator, method):
    fit = dpstats.dp_ols if estimator == "ols" else dpstats.dp_quantreg
    delta = 1e-6 if method == "tukey" else 0.0
    with pytest.raises(ValueError, match="'histogram'") as error:
        fit("affairs ~ yrs_married", unreadable, eps=1.0, bounds=BOUNDS, levels=LEVELS, method=method, delta=delta,
            by="occupation", groups=INT_KEYS, random_state=0)  # fmt: skip
    assert "dask DataFrame" in str(error.value)


def test_chunks_keep_the_rows_the_layout_keeps():
    """Over any cut of the rows into consecutive chunks, chunk_codes keeps exactly layout's rows (300 seeded cases)."""
    rng = np.random.default_rng(13)
    for _ in range(300):
        groups, n = int(rng.integers(1, 6)), int(rng.integers(0, 60))
        codes, sizes = rng.integers(-1, groups, n), rng.integers(2, 15, groups)
        kept = np.zeros(n, dtype=bool)
        kept[layout(codes, sizes)[0]] = True
        earlier, out = np.zeros(groups, dtype=np.int64), []
        for chunk in np.split(codes, np.sort(rng.integers(0, n + 1, rng.integers(0, 4)))):
            out.append(chunk_codes(chunk, earlier, sizes))
            earlier += np.bincount(chunk[chunk >= 0], minlength=groups)
        out = np.concatenate(out)
        assert np.array_equal(out >= 0, kept) and np.array_equal(out[kept], codes[kept])


def _alternating(kinds: tuple[str, ...]):
    """A stand-in for choose_per_group that gives the groups the mechanisms ``kinds`` in turn (public: the
    groups' order), as auto does where group sizes differ."""
    from dpstats.groups.auto import GroupChoice
    from dpstats.mechanisms import get_mechanism

    def choose(design, sizes, request, estimator, spread, target=None, allowed=None):
        specs = [get_mechanism(kind, estimator) for kind in kinds]
        return tuple(GroupChoice(specs[g % len(specs)], {}, f"group {g}") for g in range(len(sizes)))

    return choose


@pytest.mark.parametrize("public", [True, False])
def test_a_grouped_auto_on_dask_is_pandas_grouped_auto(dirty, dirty_dask, public):
    """Grouped auto on Dask: the same choices as pandas' for the same public sizes, each group's release that of
    its choice: with the choices alternating between two mechanisms (each fitted group by group on both) and no
    spread released on pandas (Dask does not release it), the releases are pandas' to float summation."""
    from dpstats.distributed import by_group
    from dpstats.groups import fit as group_fit

    choose = _alternating(("histogram", "kng"))
    with (
        mock.patch.object(group_fit, "choose_per_group", choose),
        mock.patch.object(by_group, "choose_per_group", choose),
        mock.patch.object(group_fit.spread, "worth_releasing", return_value=False),
        dask.config.set(scheduler="threads"),
    ):
        on_dask = _fit(dirty_dask, FORMULAS[0], "occupation", public, method="auto")
        on_pandas = _fit(dirty, FORMULAS[0], "occupation", public, method="auto")
    assert on_dask.methods.tolist() == ["histogram", "kng"] * (len(INT_KEYS) // 2) + ["histogram"]
    _same(on_pandas, on_dask)


def test_a_grouped_auto_on_dask_chooses_among_the_mechanisms_there(dirty_dask):
    """Unpatched: every group's mechanism is one whose statistics are sums over rows, and eps reported is eps
    passed."""
    from dpstats.distributed.dask_design import supported

    with dask.config.set(scheduler="threads"):
        res = _fit(dirty_dask, FORMULAS[0], "occupation", False, method="auto", se_share=None)
    assert set(res.methods) <= set(supported("ols")) and res.privacy.eps == 4.0


def test_a_grouped_auto_with_a_target_on_dask_is_refused_before_reading(unreadable):
    with pytest.raises(ValueError, match="target= with a grouped method='auto'"):
        dpstats.dp_ols("affairs ~ yrs_married", unreadable, eps=1.0, bounds=BOUNDS, by="occupation",
                       groups=INT_KEYS, target=0.1)  # fmt: skip

"""Fits on a Dask DataFrame (dpstats/distributed/dask_design.py) give the pandas release, and refuse
what needs all rows.

What is tested: for every mechanism that runs on Dask, the same
``random_state`` gives the same estimates and standard errors on statsmodels'
fair data (6,366 rows) as a pandas DataFrame, up to floating-point summation
order (``rtol=1e-7``: the partitions' sums are added in another order), on
Dask's threaded scheduler and, for one case per kind of partition statistic,
on a ``distributed.LocalCluster`` with two worker processes (the task stream
shows that the partitions' statistics ran there), with an empty partition
among the others and bad cells that the
row-wise imputation (dpstats/frontend/cells.py) treats in each partition as in the whole;
and every noisy value is the same statistic with the same sensitivity and
budget (dpstats/privacy/noise.py's record). The mechanisms that need
every row in one place, and ``method="auto"``, are refused with the
alternatives named before any partition is computed (the data's partitions
raise if they are). Every test is deterministic: no false failures.
"""

from __future__ import annotations

import dask
import numpy as np
import pandas as pd
import pytest
from recorded_fits import recorded_fits

import dpstats
from dpstats.privacy import noise

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

BOUNDS = {"affairs": (0.0, 10.0), "yrs_married": (0.0, 25.0), "age": (15.0, 45.0), "educ": (9.0, 20.0)}
LEVELS = {"religious": [1.0, 2.0, 3.0, 4.0], "faith": ["none", "some", "much", "devout"]}

CASES = [
    ("noisystats", "affairs ~ yrs_married + age"),  # centred statistics (Moments merged over partitions)
    ("noisystats", "affairs ~ yrs_married + C(faith)"),  # the structured release, string levels
    ("noisystats", "affairs ~ yrs_married + educ - 1"),  # through the origin
    ("histogram", "affairs ~ yrs_married + C(religious)"),  # cell counts
    ("kng", "affairs ~ yrs_married + age"),  # X'X, X'v; the SEs' residual counts and meat
]
CASES = [("ols", *case) for case in CASES] + [("quantreg", "histogram", "affairs ~ yrs_married + age")]
CLUSTER_CASES = [CASES[0], CASES[3], CASES[4]]
"""One case per kind of partition statistic (moments, cell counts, KNG's cross-products): what a worker process
runs and ships back; the other cases compute the same kinds, checked on the threaded scheduler."""


@pytest.fixture(scope="module")
def dirty(fair: pd.DataFrame) -> pd.DataFrame:
    """fair with bad cells for the row-wise imputation (missing numbers, undeclared levels) and string levels."""
    data = fair.copy()
    data["faith"] = data["religious"].map({1.0: "none", 2.0: "some", 3.0: "much", 4.0: "devout"})
    data.loc[data.index[::97], "yrs_married"] = np.nan
    data.loc[data.index[::89], "religious"] = 9.0
    data.loc[data.index[::83], "faith"] = "unknown"
    return data


@pytest.fixture(scope="module")
def dirty_dask(dirty: pd.DataFrame):
    """The same rows in four partitions and an empty one."""
    empty = dd.from_pandas(dirty.iloc[:0], npartitions=1)
    return dd.concat([dd.from_pandas(dirty, npartitions=4), empty])


def _fit(kind: str, method: str, formula: str, data, **extra):
    fit = dpstats.dp_ols if kind == "ols" else dpstats.dp_quantreg
    return fit(formula, data, eps=2.0, bounds=BOUNDS, levels=LEVELS, method=method, random_state=11, **extra)


def _same(res_pandas, res_dask) -> None:
    # sums over partitions differ from one sum in the last bits (~1e-16 relative); the noisy solves and the
    # bootstrap refits amplify that by the noisy matrices' condition numbers (measured up to 2e-9 relative)
    np.testing.assert_allclose(res_dask.params.to_numpy(), res_pandas.params.to_numpy(), rtol=1e-7)
    np.testing.assert_allclose(res_dask.bse.to_numpy(), res_pandas.bse.to_numpy(), rtol=1e-7)
    assert res_dask.nobs == res_pandas.nobs
    assert res_dask.privacy == res_pandas.privacy
    assert res_dask.se_note == res_pandas.se_note


@pytest.fixture(scope="module")
def on_pandas(dirty):
    """A case's pandas fit and its noisy values (dpstats/privacy/noise.py's record), each computed once per process."""
    return recorded_fits(_fit, dirty)


@pytest.mark.parametrize(("kind", "method", "formula"), CASES)
def test_default_scheduler_gives_the_same_releases_with_the_same_sensitivities(
    on_pandas, dirty_dask, kind, method, formula
):
    """The same estimates and SEs, and every noisy value the same statistic with the same calibration."""
    res_pandas, records_pandas = on_pandas(kind, method, formula)
    with dask.config.set(scheduler="threads"), noise.recording() as records_dask:
        res = _fit(kind, method, formula, dirty_dask)
    assert np.all(np.isfinite(res.bse))
    _same(res_pandas, res)
    assert [r.name for r in records_dask] == [r.name for r in records_pandas]
    for a, b in zip(records_dask, records_pandas, strict=True):
        assert (a.eps, a.norm) == (b.eps, b.norm)
        np.testing.assert_allclose(a.sensitivity, b.sensitivity, rtol=1e-9)
        np.testing.assert_allclose(a.value, b.value, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(("kind", "method", "formula"), CLUSTER_CASES)
def test_local_cluster_equals_pandas(on_pandas, dirty_dask, dask_client, kind, method, formula):
    with dask.config.set(scheduler=dask_client), distributed.get_task_stream(dask_client) as stream:
        res = _fit(kind, method, formula, dirty_dask)
    ran = {task["key"][0] if isinstance(task["key"], tuple) else task["key"] for task in stream.data}
    assert any(str(key).startswith("_partition_total") for key in ran)  # the statistics ran on the workers
    _same(on_pandas(kind, method, formula)[0], res)


def _unreadable(_: int) -> pd.DataFrame:
    raise RuntimeError("a partition was read")


@pytest.fixture(scope="module")
def unreadable(fair: pd.DataFrame):
    """A dask DataFrame with fair's columns whose partitions raise when computed."""
    return dd.from_map(_unreadable, [0, 1], meta=fair.iloc[:0])


@pytest.mark.parametrize(
    ("kind", "method"),
    [
        ("ols", "theilsen"),
        ("quantreg", "tukey"),  # Tukey least squares runs on Dask: tests/test_tukey_dask.py
        ("ols", "gradient"),
        ("quantreg", "kng"),
    ],
)
def test_refused_before_reading(unreadable, kind, method):
    delta = 1e-6 if method == "tukey" else 0.0
    with pytest.raises(ValueError, match="'histogram'") as error:
        _fit(kind, method, "affairs ~ yrs_married", unreadable, delta=delta)
    assert "dask DataFrame" in str(error.value)


@pytest.mark.parametrize(
    ("kind", "formula", "on_pandas_too"),
    [
        ("ols", "affairs ~ yrs_married + age", True),  # pandas' auto takes NoisyStats too: the same release
        ("ols", "affairs ~ yrs_married", False),  # pandas' auto takes Theil-Sen, which does not run on Dask
        ("quantreg", "affairs ~ yrs_married + age", True),  # the histogram on both
    ],
)
def test_auto_chooses_among_the_mechanisms_that_run_on_dask(dirty, dirty_dask, kind, formula, on_pandas_too):
    """auto on a dask DataFrame: a mechanism whose statistics are sums over rows, the pandas release of that
    mechanism (the rows counted first, then the same error model among those mechanisms)."""
    with dask.config.set(scheduler="threads"):
        res = _fit(kind, "auto", formula, dirty_dask)
    estimator = "ols" if kind == "ols" else "quantreg"
    assert estimator in dpstats.mechanisms.REGISTRY[res.method].distributed
    options = {"singular": res.hyperparameters["singular"]} if res.method == "noisystats" else {}  # or repaired
    _same(_fit(kind, res.method, formula, dirty, **options), res)
    assert (_fit(kind, "auto", formula, dirty).method == res.method) is on_pandas_too


def test_a_dask_series_is_refused(dirty_dask):
    with pytest.raises(TypeError, match="dask DataFrame"):
        _fit("ols", "noisystats", "affairs ~ yrs_married", dirty_dask["affairs"])

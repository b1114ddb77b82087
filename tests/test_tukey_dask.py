"""Tukey depth on a Dask DataFrame (dpstats/mechanisms/tukey/dealt.py): batches dealt row by row by position.

What is tested, each deterministic (seeded: a fixed outcome, no false failures):

* privacy's part (a) by brute force: replacing any one row of a small Dask frame (by extreme values, a bad cell,
  a copy of another row) changes the summed normal equations of exactly one batch, the one the deal gives that
  position, and exactly one of the m models; relabelling the index (its values are data) changes nothing;
* the batch models are the pandas path's batch OLS (dpstats/mechanisms/tukey/models.py) on the rows of the same
  deal, to 1e-8 relative (the sums are added in another order); and at eps = 1e4 the release lies among the
  middle order statistics of those models (the deepest region: a shallower shell has weight ``e^{-2500}``
  relative to it);
* a distributed LocalCluster gives the threaded scheduler's release (up to summation order);
* the jackknife's default is False on Dask (a public fact: the data's type), reported; ``jackknife=True``, a
  grouped Tukey fit and Tukey quantile regression are refused on Dask before any partition is read,
  ``jackknife=True`` once the rows are counted (n is public), before any sum.
"""

from __future__ import annotations

import dask
import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats.distributed.dask_design import dask_design
from dpstats.mechanisms import REGISTRY
from dpstats.mechanisms.tukey.dealt import DealtEquations, deal, dealt_models
from dpstats.mechanisms.tukey.models import batch_ols, models_of_equations
from dpstats.privacy import noise

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

FORMULA = "y ~ x + z"
SIZES = (23, 0, 17, 20)  # rows per partition, an empty one among them
M = 6


def _frame(seed: int = 0) -> pd.DataFrame:
    gen = np.random.default_rng(seed)
    n = sum(SIZES)
    x, z = gen.uniform(0, 10, n), gen.uniform(-1, 1, n)
    return pd.DataFrame({"x": x, "z": z, "y": 1 + 0.5 * x - z + gen.normal(0, 1, n)})


def _partitioned(frame: pd.DataFrame):
    """``frame`` in partitions of :data:`SIZES` rows, in order."""
    ends = np.cumsum(SIZES)
    pieces = [frame.iloc[end - size : end] for size, end in zip(SIZES, ends, strict=True)]
    return dd.concat([dd.from_pandas(piece, npartitions=1, sort=False) for piece in pieces])


def _design(data):
    design, _ = dask_design(FORMULA, data, None, None, REGISTRY["tukey"], "ols", False, "impute")
    return design


def _sums(frame: pd.DataFrame, key: int):
    with dask.config.set(scheduler="sync"):
        return _design(_partitioned(frame)).total(DealtEquations(key, M))


def _changed(a, b) -> np.ndarray:
    """The batches whose sums differ."""
    gram = ~np.isclose(a.gram, b.gram, rtol=0, atol=0, equal_nan=True).all(axis=(0, 1))
    return np.flatnonzero(gram | ~np.isclose(a.rhs, b.rhs, rtol=0, atol=0, equal_nan=True).all(axis=0))


def _batch_of(key: int, row: int) -> int:
    """The batch the deal gives the frame's ``row`` (its partition's index and its position there)."""
    ends = np.cumsum(SIZES)
    chunk = int(np.searchsorted(ends, row, side="right"))
    return int(deal(key, chunk, SIZES[chunk], M)[row - (ends[chunk] - SIZES[chunk])])


@pytest.mark.parametrize("row", [0, 7, 22, 23, 39, 59])
@pytest.mark.parametrize("replacement", ["extreme", "bad cell", "copy"])
def test_replacing_one_row_changes_exactly_one_batch(row, replacement):
    frame = _frame()
    key = noise.stream_key(noise.make_rng(5))
    neighbour = frame.copy()
    new = {"extreme": [1e3, -1e3, 1e6], "bad cell": [np.nan, 0.5, np.inf], "copy": frame.iloc[row - 1].tolist()}
    neighbour.iloc[row] = new[replacement]
    changed = _changed(_sums(frame, key), _sums(neighbour, key))
    assert changed.tolist() == [_batch_of(key, row)]


def test_replacing_one_row_changes_exactly_one_model():
    frame = _frame()
    neighbour = frame.copy()
    neighbour.iloc[30] = [9.0, -1.0, 40.0]
    with dask.config.set(scheduler="sync"):
        models = [dealt_models(_design(_partitioned(f)), M, noise.make_rng(5)) for f in (frame, neighbour)]
    assert np.flatnonzero((models[0] != models[1]).any(axis=1)).tolist() == [
        _batch_of(noise.stream_key(noise.make_rng(5)), 30)
    ]


def test_the_index_values_are_never_read():
    frame = _frame()
    key = noise.stream_key(noise.make_rng(5))
    relabelled = frame.set_axis(np.random.default_rng(1).permutation(10**6)[: len(frame)])
    a, b = _sums(frame, key), _sums(relabelled, key)
    np.testing.assert_array_equal(a.gram, b.gram)
    np.testing.assert_array_equal(a.rhs, b.rhs)


def _pandas_batch_models(frame: pd.DataFrame, key: int, m: int, sizes) -> np.ndarray:
    """Batch OLS on pandas (models.batch_ols, one batch at a time) on the rows the deal gives each batch."""
    batch = np.concatenate([deal(key, chunk, size, m) for chunk, size in enumerate(sizes)])
    X = np.column_stack([np.ones(len(frame)), frame["x"], frame["z"]])
    fits = [batch_ols(X[None, batch == j], frame["y"].to_numpy()[None, batch == j]) for j in range(m)]
    return np.vstack([coef for coef, _ in fits])


@pytest.fixture(scope="module")
def large() -> tuple[pd.DataFrame, tuple[int, ...]]:
    frame = _frame(3).sample(n=3000, replace=True, random_state=3).reset_index(drop=True)
    frame["x"] += np.random.default_rng(4).normal(0, 1, len(frame))  # not exact copies
    return frame, (1000, 0, 1200, 800)


def _large_dask(large):
    frame, sizes = large
    ends = np.cumsum(sizes)
    pieces = [frame.iloc[end - size : end] for size, end in zip(sizes, ends, strict=True)]
    return dd.concat([dd.from_pandas(piece, npartitions=1, sort=False) for piece in pieces])


def test_the_dask_batch_models_are_the_pandas_batch_ols_of_the_same_deal(large):
    frame, sizes = large
    key, m = noise.stream_key(noise.make_rng(8)), 40
    with dask.config.set(scheduler="threads"):
        sums = _design(_large_dask(large)).total(DealtEquations(key, m))
    models, unknown = models_of_equations(sums.gram.copy(), sums.rhs.copy(), np.zeros(m, dtype=bool))
    assert not unknown.any()
    np.testing.assert_allclose(models, _pandas_batch_models(frame, key, m, sizes), rtol=1e-8)


def test_at_a_huge_eps_the_release_is_among_the_middle_batch_models(large):
    frame, sizes = large
    m, seed = 41, 12
    with dask.config.set(scheduler="threads"):
        res = dpstats.dp_ols(FORMULA, _large_dask(large), eps=1e4, delta=1e-6, method="tukey", m=m, se_share=0,
                             random_state=seed)  # fmt: skip
    ordered = np.sort(_pandas_batch_models(frame, noise.stream_key(noise.make_rng(seed)), m, sizes), axis=0)
    low, high = ordered[m // 2 - 1], ordered[m // 2 + 1]
    assert np.all((low <= res.params.to_numpy()) & (res.params.to_numpy() <= high))


def test_a_local_cluster_gives_the_threaded_release(large, dask_client):
    call = dict(eps=2.0, delta=1e-6, method="tukey", random_state=2)  # the default m (452): the test passes
    with dask.config.set(scheduler="threads"):
        threads = dpstats.dp_ols(FORMULA, _large_dask(large), **call)
    with dask.config.set(scheduler=dask_client), distributed.get_task_stream(dask_client) as stream:
        cluster = dpstats.dp_ols(FORMULA, _large_dask(large), **call)
    assert any(str(task["key"]).find("_partition_total") >= 0 for task in stream.data)
    assert not threads.failed
    np.testing.assert_allclose(cluster.params.to_numpy(), threads.params.to_numpy(), rtol=1e-7)
    np.testing.assert_allclose(cluster.bse.to_numpy(), threads.bse.to_numpy(), rtol=1e-7)


def test_the_jackknife_default_follows_the_data_type(large):
    frame, _ = large
    call = dict(eps=1.0, delta=1e-6, method="tukey", m=40, random_state=2, se_share=0)
    with dask.config.set(scheduler="threads"):
        on_dask = dpstats.dp_ols(FORMULA, _large_dask(large), **call)
    on_pandas = dpstats.dp_ols(FORMULA, frame, **call)
    assert on_dask.hyperparameters["jackknife"] is False and "Dask" in on_dask.hyperparameters["batches"]
    assert on_pandas.hyperparameters["jackknife"] is True and "batches" not in on_pandas.hyperparameters
    assert on_dask.privacy == on_pandas.privacy
    with pytest.raises(ValueError, match="jackknife=True"):  # refused after the rows are counted, before any sum
        dpstats.dp_ols(FORMULA, _large_dask(large), **call, jackknife=True)


def _unreadable(_: int) -> pd.DataFrame:
    raise RuntimeError("a partition was read")


@pytest.fixture(scope="module")
def unreadable():
    return dd.from_map(_unreadable, [0, 1], meta=_frame().iloc[:0].assign(g=np.zeros(0, dtype=np.int64)))


@pytest.mark.parametrize(
    ("fit", "extra", "match"),
    [
        (dpstats.dp_quantreg, {}, "does not run on a dask DataFrame"),
        (dpstats.dp_ols, {"by": "g", "groups": [0, 1]}, "does not run on a dask DataFrame"),
    ],
)
def test_refused_on_dask_before_a_sum_is_read(unreadable, fit, extra, match):
    with pytest.raises(ValueError, match=match):
        fit(FORMULA, unreadable, eps=1.0, delta=1e-6, method="tukey", **extra)

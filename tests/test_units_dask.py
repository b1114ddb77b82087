"""The privacy unit on a Dask DataFrame (dpstats/distributed/dask_units.py): each unit's rows shuffled to one
partition on the workers, at most k kept by priorities drawn from the call's generator.

What is tested, each deterministic (seeded: a fixed outcome) except where a false-failure probability is given:

1. Where every unit keeps all its rows (max_rows at least the largest unit), the Dask release is the pandas
   release: every noisy value the same statistic (to float summation) with the same sensitivity and budget, and,
   with the pandas run's noisy values forced (dpstats/privacy/noise.py's replay), the same estimates and clustered
   standard errors; for NoisyStats' three paths (centred, structured, through the origin), for the histogram by
   group privacy (least squares and quantile regression), with string unit keys, missing keys (one unit), units
   spread over several partitions and an empty partition; on the threaded scheduler and on a LocalCluster.
2. Bounding: each unit keeps min(its rows, k) rows, the same places whatever the values or the index labels; every
   row of a unit is kept with probability k / r (false failure below 1e-4); the unit keys never split equal values
   (3, 3.0, -0.0 and 0.0, every missing value; a numeric column whose partitions differ in dtype).
3. Brute force on neighbours that change every row of one unit: the kept places are the same, the meat summed by
   unit changes by that unit's own term (computed on pandas from its kept rows) and equals the sum of every unit's
   term (no unit is split); Tukey's dealt batches change in exactly one batch (each unit dealt whole).
4. Refusals before any partition is read: a missing or reserved column, auto without a unit-level mechanism
   (quantile regression), integers= and weights=; and auto least squares chooses NoisyStats.
"""

from __future__ import annotations

import functools

import dask
import numpy as np
import pandas as pd
import pytest
from recorded_fits import recorded_fits

import dpstats
from dpstats.design.matrix import CenteredUnitScale
from dpstats.design.units import Units
from dpstats.distributed import dask_units
from dpstats.distributed.dask_design import dask_design
from dpstats.frontend.formula import build_design
from dpstats.mechanisms import REGISTRY
from dpstats.mechanisms.noisystats.inference import clustered_centred_meat
from dpstats.mechanisms.noisystats.mechanism import on_unit_scale
from dpstats.mechanisms.tukey.dealt import DealtEquations
from dpstats.privacy import noise

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

BOUNDS = {"x": (0.0, 10.0), "z": (-1.0, 1.0), "y": (-4.0, 12.0)}
LEVELS = {"level": ["a", "b", "c"]}
SIZES = (1, 2, 3, 4, 5, 6)


def _panel(units: int = 30, seed: int = 0) -> pd.DataFrame:
    """``units`` workers with 1 to 6 rows each (string keys, a unit effect in x and in the error) and 4 rows whose
    key is missing, in random order, with a column of row ids (never in a formula)."""
    rng = np.random.default_rng(seed)
    sizes = np.resize(SIZES, units)
    ids = np.repeat([f"w{j:02d}" for j in range(units)], sizes).astype(object)
    ids = np.concatenate([ids, [None, np.nan, None, np.nan]])
    n = ids.size
    effect = np.repeat(rng.normal(size=units + 1), np.r_[sizes, 4])
    x = np.clip(5 + 2 * effect + rng.normal(size=n), 0, 10)
    z = rng.uniform(-1, 1, n)
    level = rng.choice(LEVELS["level"], n)
    y = 1 + 0.5 * x - z + (level == "b") + effect + rng.normal(size=n)
    frame = pd.DataFrame({"id": ids, "x": x, "z": z, "level": level, "y": y, "row": np.arange(n)})
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def _dask(frame: pd.DataFrame, partitions: int = 3):
    """``frame`` in ``partitions`` partitions of consecutive rows (by position: the index is not read) and an empty
    one."""
    pieces = [*np.array_split(np.arange(len(frame)), partitions), np.arange(0)]
    return dd.concat([dd.from_pandas(frame.iloc[rows], npartitions=1, sort=False) for rows in pieces])


# --------------------------------------------------------------------------
# 1. The pandas release where every row is kept
# --------------------------------------------------------------------------

CASES = [
    ("ols", "noisystats", "y ~ x + z"),  # centred: moments, the column sums, the meat summed by unit
    ("ols", "noisystats", "y ~ x + C(level)"),  # structured
    ("ols", "noisystats", "y ~ x + z - 1"),  # through the origin
    ("ols", "histogram", "y ~ x + z"),  # group privacy at eps / k, no standard errors
    ("quantreg", "histogram", "y ~ x + z"),
]


def _fit(kind: str, method: str, formula: str, data, max_rows: int = 6):
    fit = dpstats.dp_ols if kind == "ols" else dpstats.dp_quantreg
    call = {"eps": 50.0, "bounds": BOUNDS, "levels": LEVELS, "method": method, "random_state": 11}
    return fit(formula, data, unit="id", max_rows=max_rows, **call)


@pytest.fixture(scope="module")
def panel() -> pd.DataFrame:
    return _panel()


@pytest.fixture(scope="module")
def on_pandas(panel):
    """A case's pandas fit and its noisy values, computed once per process."""
    return recorded_fits(_fit, panel)


def _replayed(kind: str, method: str, formula: str, data, records):
    """The Dask fit with the pandas run's noisy values forced, and its own record."""
    with noise.recording([record.noisy for record in records]) as replayed:
        res = _fit(kind, method, formula, data)
    return res, replayed


def _same(res_pandas, res_dask, records_pandas, records_dask) -> None:
    assert [r.name for r in records_dask] == [r.name for r in records_pandas]
    for a, b in zip(records_dask, records_pandas, strict=True):
        assert (a.eps, a.norm) == (b.eps, b.norm)
        np.testing.assert_allclose(a.sensitivity, b.sensitivity, rtol=1e-12)
        np.testing.assert_allclose(a.value, b.value, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(res_dask.params.to_numpy(), res_pandas.params.to_numpy(), rtol=1e-7)
    np.testing.assert_allclose(res_dask.bse.to_numpy(), res_pandas.bse.to_numpy(), rtol=1e-7)
    assert res_dask.nobs == res_pandas.nobs
    assert res_dask.privacy == res_pandas.privacy
    assert res_dask.se_note == res_pandas.se_note


@pytest.mark.parametrize(("kind", "method", "formula"), CASES)
def test_every_row_kept_gives_the_pandas_release(on_pandas, panel, kind, method, formula):
    res_pandas, records_pandas = on_pandas(kind, method, formula)
    with dask.config.set(scheduler="threads"):
        res, records = _replayed(kind, method, formula, _dask(panel), records_pandas)
    _same(res_pandas, res, records_pandas, records)
    assert res.nobs == len(panel)
    assert "31 units" in res.privacy.neighbours  # 30 workers and the missing keys' one unit
    if method == "noisystats":
        assert np.all(np.isfinite(res.bse)) and "clustered by id" in res.se_note


def test_a_local_cluster_gives_the_pandas_release(on_pandas, panel, dask_client):
    case = CASES[0]
    res_pandas, records_pandas = on_pandas(*case)
    with dask.config.set(scheduler=dask_client):
        res, records = _replayed(*case, _dask(panel), records_pandas)
    _same(res_pandas, res, records_pandas, records)


def test_auto_chooses_noisystats_at_the_unit_level(panel):
    with dask.config.set(scheduler="threads"):
        res = dpstats.dp_ols("y ~ x + z", _dask(panel), eps=3.0, bounds=BOUNDS, unit="id", max_rows=6, force=True)
    assert res.method == "noisystats"
    assert res.privacy.unit == "id"


# --------------------------------------------------------------------------
# 2. Bounding
# --------------------------------------------------------------------------

KEY = noise.stream_key(noise.make_rng(5))


def _kept(data, max_rows: int, key: int = KEY) -> pd.DataFrame:
    with dask.config.set(scheduler="sync"):
        return dask_units.bounded(data, "id", max_rows, key).compute()


def test_each_unit_keeps_at_most_k_rows_chosen_without_the_values(panel):
    kept = _kept(_dask(panel), 3)
    per_unit = kept["id"].fillna("missing").value_counts()
    expected = panel["id"].fillna("missing").value_counts().clip(upper=3)
    assert per_unit.to_dict() == expected.to_dict()
    other_values = panel.assign(x=-panel["x"], y=np.nan, level="c")
    relabelled = panel.set_axis(np.random.default_rng(1).permutation(10**6)[: len(panel)])
    for same_places in (other_values, relabelled):
        assert set(_kept(_dask(same_places), 3)["row"]) == set(kept["row"])
    assert set(_kept(_dask(panel), 3, key=KEY + 1)["row"]) != set(kept["row"])  # the key decides


def test_every_row_of_a_unit_is_equally_likely_kept():
    """A unit of 5 rows over two partitions keeps 2: each row with probability 0.4. Over 400 keys a row's share has
    sd 0.0245; the tolerance is 4.1 sd (two-sided 4e-5 per row, 2e-4 for the five)."""
    part = pd.DataFrame({"id": [7, 7, 1, 7], "row": [0, 1, 2, 3]})
    other = pd.DataFrame({"id": [7, 7, 2], "row": [4, 5, 6]})
    shares = np.zeros(7)
    for key in range(400):
        tagged = [dask_units.tag_rows(p, "id", True, key, {"number": j}) for j, p in enumerate((part, other))]
        kept = dask_units.keep_rows(pd.concat(tagged), 2)
        shares[kept["row"].to_numpy()] += 1 / 400
    np.testing.assert_allclose(shares[[0, 1, 3, 4, 5]], 0.4, atol=0.1)
    np.testing.assert_allclose(shares[[2, 6]], 1.0)


def test_the_unit_keys_never_split_equal_values():
    numeric = [
        pd.Series([3.0, -0.0, np.nan, 2.5]),
        pd.Series([3, 0, None, 2.5], dtype=object),
        pd.Series([3, 0, pd.NA, 2.5], dtype="Float64"),
    ]
    keys = [dask_units.unit_keys(values, True) for values in numeric]
    for other in keys[1:]:
        np.testing.assert_array_equal(other, keys[0])
    assert len(set(keys[0])) == 4
    text = pd.Series(["w1", 7, 7.0, np.int64(7), None, np.nan, pd.NA, [1, 2], "w2"], dtype=object)
    k = dask_units.unit_keys(text, False)
    assert k[1] == k[2] == k[3] and k[4] == k[5] == k[6] and len(set(k)) == 5
    strings = pd.Series(["a", "b", None], dtype="string")
    np.testing.assert_array_equal(
        dask_units.unit_keys(strings, False), dask_units.unit_keys(strings.astype(object), False)
    )


def test_a_unit_over_partitions_of_different_dtypes_is_one_unit():
    """The dtype in the frame's metadata decides the map: a partition of floats (a missing key) and one of ints
    give the unit 5 the same key."""
    parts = [pd.DataFrame({"id": [5, 5, 6], "x": [1.0, 2.0, 3.0]}), pd.DataFrame({"id": [5.0, np.nan], "x": [4.0, 5]})]
    tagged = [dask_units.tag_rows(p, "id", True, 1, {"number": j}) for j, p in enumerate(parts)]
    kept = dask_units.keep_rows(pd.concat(tagged), 2)
    assert (kept["id"] == 5).sum() == 2 and kept[dask_units.KEY].nunique() == 3


# --------------------------------------------------------------------------
# 3. Brute force on unit-level neighbours
# --------------------------------------------------------------------------

K = 3
CORNER = {"x": 10.0, "z": -1.0, "y": 40.0}  # y beyond its bound: clipped


def _neighbours(frame: pd.DataFrame):
    """Each unit's neighbour: every row of the unit moved to a corner of the box (one cell missing)."""
    for unit in frame["id"].dropna().unique():
        rows = frame["id"] == unit
        neighbour = frame.copy()
        neighbour.loc[rows, list(CORNER)] = list(CORNER.values())
        neighbour.loc[rows[rows].index[0], "z"] = np.nan
        yield unit, neighbour


def _design(data, spec: str = "noisystats"):
    with dask.config.set(scheduler="sync"):
        design, _ = dask_design("y ~ x + z", data, BOUNDS, None, REGISTRY[spec], "ols", True, "impute",
                                ("id", K), noise.make_rng(5))  # fmt: skip
    return design


MEAT = {"centre": np.array([0.4, 0.6]), "coef_centred": np.array([0.3, 0.2, -0.1]), "bound": 0.5}


def _meat_on_dask(frame: pd.DataFrame) -> np.ndarray:
    """The meat summed by unit as NoisyStats reads it, over the partitions (at public values)."""
    design = _design(_dask(frame))
    statistic = functools.partial(clustered_centred_meat, *MEAT.values())
    with dask.config.set(scheduler="sync"):
        return design.total(functools.partial(on_unit_scale, CenteredUnitScale.from_design(design), statistic, True))


def _term(kept: pd.DataFrame) -> np.ndarray:
    """One unit's term of the meat from its kept rows, on pandas."""
    design, _ = build_design("y ~ x + z", kept, BOUNDS, None, min_rows=0)
    U, v = CenteredUnitScale.from_design(design).transform(design)
    units = Units("id", np.zeros(len(kept), dtype=np.int64), 1, K)
    return clustered_centred_meat(*MEAT.values(), U, v, units)


def _kept_by_unit(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict, np.ndarray]:
    """The kept rows, each unit's, and the meat on Dask, checked to be the sum of the units' terms."""
    kept = _kept(_dask(frame), K, noise.stream_key(noise.make_rng(5)))
    meat = _meat_on_dask(frame)
    by_unit = {unit: rows for unit, rows in kept.groupby(kept["id"].fillna("missing"))}
    np.testing.assert_allclose(meat, sum(_term(rows) for rows in by_unit.values()), rtol=1e-12, atol=1e-12)
    return kept, by_unit, meat


def test_one_unit_changes_its_own_term_of_the_meat_only():
    frame = _panel(units=8, seed=2)
    kept, by_unit, meat = _kept_by_unit(frame)
    for unit, neighbour in _neighbours(frame):
        kept_there = _kept(_dask(neighbour), K, noise.stream_key(noise.make_rng(5)))
        assert set(kept_there["row"]) == set(kept["row"])
        change = _meat_on_dask(neighbour) - meat
        own = _term(kept_there[kept_there["id"] == unit]) - _term(by_unit[unit])
        np.testing.assert_allclose(change, own, rtol=1e-9, atol=1e-12)


def test_a_unit_split_over_partitions_is_flagged(monkeypatch: pytest.MonkeyPatch):
    """The canary: keys that send a unit's rows to two partitions make its meat two units' terms."""
    keys = dask_units.unit_keys
    monkeypatch.setattr(
        dask_units, "unit_keys", lambda values, numeric: keys(values, numeric) + np.arange(len(values)) % 2
    )
    with pytest.raises(AssertionError, match="Not equal"):
        _kept_by_unit(_panel(units=8, seed=2))


def test_one_unit_changes_one_dealt_batch():
    frame = _panel(units=12, seed=3)
    key, m = noise.stream_key(noise.make_rng(8)), 12

    def sums(data):
        with dask.config.set(scheduler="sync"):
            return _design(_dask(data), "tukey").total(DealtEquations(key, m))

    base = sums(frame)
    batches = set()
    for _, neighbour in _neighbours(frame):
        other = sums(neighbour)
        changed = ~(np.isclose(base.gram, other.gram, rtol=0, atol=0).all(axis=(0, 1)))
        changed |= ~np.isclose(base.rhs, other.rhs, rtol=0, atol=0).all(axis=0)
        assert changed.sum() == 1
        batches.add(int(np.flatnonzero(changed)[0]))
    assert len(batches) > 1  # the units are dealt to several batches


# --------------------------------------------------------------------------
# 4. Refusals before any partition is read
# --------------------------------------------------------------------------


def _unreadable(_: int) -> pd.DataFrame:
    raise RuntimeError("a partition was read")


@pytest.fixture(scope="module")
def unreadable(panel):
    return dd.from_map(_unreadable, [0, 1], meta=panel.iloc[:0])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ({"unit": "person"}, "not a column"),
        ({"q": 0.5, "delta": 1e-6, "method": "auto"}, "none of them fits quantreg on a Dask DataFrame"),
        ({"q": 0.5, "delta": 1e-6, "method": "tukey"}, "does not run on a dask DataFrame"),
        ({"integers": ["x"]}, "pandas DataFrame"),
        ({"weights": "x", "unit": None, "max_rows": None}, "pandas DataFrame"),
        ({"by": "level", "groups": ["a"]}, "one fit"),
    ],
)
def test_refused_before_reading(unreadable, call, message):
    call = {"unit": "id", "max_rows": 3, "method": "noisystats", **call}
    fit = dpstats.dp_quantreg if "q" in call else dpstats.dp_ols
    bounds = {**BOUNDS, "x": (0.0, 10.0)}
    with pytest.raises(ValueError, match=message):
        fit("y ~ x + z", unreadable, eps=1.0, bounds=bounds, **call)


def test_reserved_columns_are_refused(panel):
    data = _dask(panel.assign(**{dask_units.KEY: 0}))
    with pytest.raises(ValueError, match="reserved"):
        dpstats.dp_ols("y ~ x", data, eps=1.0, bounds=BOUNDS, method="noisystats", unit="id", max_rows=3)

"""The privacy unit on a Dask DataFrame: every row of one unit on one partition, at most k of them kept.

``dp_ols(ddf, ..., unit="worker_id", max_rows=k)`` protects a unit, as on
pandas (dpstats/design/units.py, docs/DESIGN.md section 2): neighbouring
datasets have the same units with the same numbers of rows at the same
places, and differ in the values of every row of one unit. The rows never
reach the client. :func:`bounded` builds, lazily, the frame of the kept rows:

1. **Priorities**, on the workers, before any value is read: each row gets a
   uniform integer on ``[0, 2^63)`` from the stream ``noise.keyed_rng(key,
   partition)`` at the row's position in its partition (``key``, 256 bits,
   drawn from the call's generator on the client). Never a value of the row
   or of its index (index values are data); the scheme of Tukey depth's deal,
   dpstats/mechanisms/tukey/dealt.py.
2. **The unit's key**, a row-wise map of the unit column to 64 bits, the same
   map in every partition, chosen from the column's dtype in the frame's
   metadata: a numeric column by value (as float64, -0.0 as 0.0, every missing
   value one key), any other by text (:func:`key_text`: numbers by value,
   everything else by ``str``, every missing value one key), then pandas'
   fixed-key hash (``hash_pandas_object``, the same on every machine).
3. **Shuffle** on the workers (``DataFrame.shuffle`` on that key): rows with
   the same key land on the same partition, whatever partition they started on.
4. **Bounding**, each partition: its rows in the order of their priorities;
   each unit keeps its ``max_rows`` rows of smallest priority (the pandas
   path's rule). A unit's code in its partition follows its first kept row
   (:func:`with_units`), an order of the priorities alone.
5. **Count**, each partition: its kept rows and units, added: n (what
   ``res.nobs`` reports) and the number of units, functions of the panel's
   shape (public).

Privacy. (a) What is kept reads the key, the rows' places (partition and
position) and the unit column, which neighbours share, and nothing else. Fix
the key (drawn independently of the data): two neighbours keep the same
places, and their kept rows differ in at most k rows, all of the changed
unit's; n and the number of units are the same. (b) The key never splits a
unit: two rows with equal values of the unit column get the same key (the map
is by value and the same everywhere), hence the same partition and the same
unit there. It may merge values the pandas path keeps apart (integers beyond
2^53 in a numeric column, a string ``"7"`` and the number 7, a hash
collision): a merged unit holds every row of each of the column's units in it
and still keeps at most k rows, so neighbours that change one of the column's
units change one merged unit: the guarantee holds for the column's units (at a
cost in rows kept, never in privacy). Equal values that print differently
(the tuples ``(1, 2)`` and ``(1.0, 2.0)``) are different units: name units by
strings or numbers. (c) Every statistic a unit-native mechanism reads is a sum
over the partitions of sums over each partition's units, each term a function
of one unit's kept rows, all of which are on that partition: the row sums of
NoisyStats, its meat summed by unit (:func:`with_units` gives each partition's
design its units, dpstats/mechanisms/noisystats/inference.py reads them where
the rows are), Tukey depth's batch equations (each unit dealt whole to one
batch, dpstats/mechanisms/tukey/dealt.py). So a neighbour changes the total by
the changed unit's term alone, the bound that the sensitivities of the pandas
path prove (k times a row's; the clustered meat's unit widths,
dpstats/uncertainty/cluster_meat.py; one model of Tukey's m), and the noise is
drawn on the client by the same code. (d) The law: the priorities are
independent and uniform (independent ChaCha20 streams per partition), so each
unit keeps a uniformly random k-subset of its rows, independently of the
other units, whatever the rows' order or partitioning: the pandas path's law.
The release thus has the pandas release's law (equal to it, up to the order of
floating-point summation, where every unit keeps all its rows); Tukey's batches
differ (a uniform deal of units, not a permutation). Ties between priorities
(probability below r^2 / 2^64 for a unit of r rows) are broken by the rows'
order after the shuffle, which reads no value.

Cost: the shuffle is recomputed at every pass over the data (the count, then
each sum the mechanism reads), so no copy of the data is kept; persist the
frame first where it fits in the cluster's memory.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from ..design.matrix import Design
from ..design.units import Units
from ..privacy import noise

PRIORITY = "__dpstats_unit_priority__"
"""The column of the rows' priorities (step 1)."""
KEY = "__dpstats_unit_key__"
"""The column of the rows' unit keys (step 2)."""
PRIORITY_RANGE = 2**63
MISSING = ""
"""The text of a missing key (:func:`key_text`): every missing value is one unit, as on pandas (with the empty
string, if any: a merge)."""


def check_columns(data: Any, name: str) -> None:
    """The unit column exists and the bounding's own columns do not (the frame's column names: public)."""
    columns = list(data.columns)
    if name not in columns:
        raise ValueError(f"unit={name!r} is not a column of the data")
    taken = [column for column in (PRIORITY, KEY) if column in columns]
    if taken:
        raise ValueError(f"columns {taken} are reserved for unit= on a Dask DataFrame: rename them")


def bounded(data: Any, name: str, max_rows: int, key: int) -> Any:
    """The lazy frame of the rows kept, at most ``max_rows`` per unit of the column ``name``, each unit's rows on
    one partition, in the order of their priorities (module docstring, steps 1-4)."""
    numeric = pd.api.types.is_numeric_dtype(data._meta[name].dtype)
    tag = _tag_meta(data._meta, name, numeric)
    tagged = data.map_partitions(tag_rows, name, numeric, key, meta=tag)
    shuffled = tagged.shuffle(on=KEY, npartitions=data.npartitions)
    return shuffled.map_partitions(keep_rows, max_rows, meta=tag)


def _tag_meta(meta: pd.DataFrame, name: str, numeric: bool) -> pd.DataFrame:
    """The metadata of the tagged frame: the data's columns, the priority and the key."""
    return meta.assign(**{PRIORITY: np.zeros(0, dtype=np.int64), KEY: unit_keys(meta[name], numeric)})


def tag_rows(
    partition: pd.DataFrame, name: str, numeric: bool, key: int, partition_info: dict | None = None
) -> pd.DataFrame:
    """One partition with its rows' priorities (by position, from the key's stream of the partition's index,
    ``partition_info["number"]``, which dask passes) and unit keys (runs on a worker)."""
    stream = noise.keyed_rng(key, int(partition_info["number"]))
    priority = noise.integers(stream, PRIORITY_RANGE, len(partition))
    return partition.assign(**{PRIORITY: priority, KEY: unit_keys(partition[name], numeric)})


def unit_keys(values: pd.Series, numeric: bool) -> np.ndarray:
    """Each value's 64-bit unit key (module docstring, step 2): ``numeric`` (from the frame's metadata, the same
    for every partition) maps by value as float64, else by :func:`key_text`."""
    if numeric:
        with warnings.catch_warnings():  # a cell's type (a complex number) cannot make the call warn
            warnings.simplefilter("ignore")
            numbers_ = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        canonical = pd.Series(np.where(np.isnan(numbers_), np.nan, numbers_ + 0.0))  # -0.0 + 0.0 is 0.0
    else:
        canonical = pd.Series(np.array([key_text(value) for value in values], dtype=object), dtype=object)
    return pd.util.hash_pandas_object(canonical, index=False).to_numpy().view(np.int64)


def key_text(value: object) -> str:
    """A value's text as a unit key: a number by its value (7, 7.0 and True's 1 alike), missing values as
    :data:`MISSING`, anything else by ``str``; it never raises (a value whose ``str`` fails is one key)."""
    if _missing(value):
        return MISSING
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        try:
            number = float(value)
        except (OverflowError, ValueError):
            number = math.nan
        if number.is_integer():
            return str(int(number))
        if not math.isnan(number):
            return repr(number)
    try:
        return str(value)
    except Exception:  # a value's own __str__ may raise anything: the rows cannot make the call raise
        return "?"


def _missing(value: object) -> bool:
    """Whether a scalar is missing (None, NaN, NA, NaT); never for a container."""
    try:
        missing = pd.isna(value)
    except Exception:  # pd.isna calls into the value's type: the rows cannot make the call raise
        return False
    return isinstance(missing, bool | np.bool_) and bool(missing)


def keep_rows(partition: pd.DataFrame, max_rows: int) -> pd.DataFrame:
    """The rows of one shuffled partition that their units keep: each unit's ``max_rows`` of smallest priority,
    in the order of the priorities (runs on a worker)."""
    ordered = partition.iloc[np.argsort(partition[PRIORITY].to_numpy(), kind="stable")]
    rank = ordered.groupby(KEY, sort=False).cumcount().to_numpy()
    return ordered[rank < max_rows]


def counts(partition: pd.DataFrame) -> np.ndarray:
    """One bounded partition's kept rows and units (runs on a worker; added over the partitions)."""
    return np.array([len(partition), partition[KEY].nunique()], dtype=np.int64)


def with_units(
    build: Callable[[pd.DataFrame], tuple[Design, Any]], name: str, max_rows: int, partition: pd.DataFrame
) -> tuple[Design, Any]:
    """A bounded partition's design (``build``) with its rows' units: codes by first appearance in the priority
    order, the count and k (what the statistics summed by unit read, on the worker)."""
    design, spec = build(partition)
    codes, uniques = pd.factorize(partition[KEY].to_numpy())
    units = Units(name, np.asarray(codes, dtype=np.int64), len(uniques), max_rows)
    return replace(design, units=units), spec


def client_units(name: str, count: int, max_rows: int) -> Units:
    """The units of the whole frame as the client knows them: their number and k, no rows' codes."""
    return Units(name, np.zeros(0, dtype=np.int64), count, max_rows)

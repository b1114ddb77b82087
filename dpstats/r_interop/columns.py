"""R columns sent through reticulate, rebuilt as pandas (the R package's data path).

reticulate 1.28 cannot use numpy 2 and loses missing values in integer, logical
and character vectors, so nothing crosses as an array or a data frame. The R
side (r_bridge/R/fit.R) sends each column as a small record ::

    {"type": "double" | "integer" | "logical" | "character" | "factor" | "date" | "datetime",
     "values": [...],            # NA positions hold a placeholder (0, FALSE, "")
     "na": [...],                # the NA mask (TRUE where R had NA or NaN)
     "levels": [...],            # factors only
     "ordered": bool,            # factors only
     "tz": str}                  # datetimes only

:func:`frame_from_columns` rebuilds a pandas DataFrame with nullable dtypes.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..output.render import plain

COLUMN_TYPES = ("double", "integer", "logical", "character", "factor", "date", "datetime")
R_INT_MIN = -(2**31)  # NA_integer_ and NA (logical) in R's memory
R_INT_MAX = 2**31 - 1


# --------------------------------------------------------------------------
# Builtins only
# --------------------------------------------------------------------------


def as_list(x: Any) -> list:
    """A reticulate argument as a list: a length-1 R vector arrives as a scalar."""
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return list(x)
    if hasattr(x, "tolist"):
        out = x.tolist()
        return out if isinstance(out, list) else [out]
    return [x]


# --------------------------------------------------------------------------
# R columns -> pandas (the reticulate path)
# --------------------------------------------------------------------------


def as_float(value: Any) -> float:
    """A cell as a float; NaN where it is not a number (a row-wise map: no error can show the value)."""
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def timestamps(numbers: np.ndarray, unit: str, utc: bool = False) -> pd.DatetimeIndex:
    """Days or seconds since 1970 as timestamps; NaT where a value is outside pandas' range (row-wise).

    pandas would raise an error that shows the value: an R date in the year 1500 must not
    decide whether the conversion fails, nor appear in a message.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pd.to_datetime(numbers, unit=unit, utc=utc, errors="coerce")


def column_from_r(name: str, spec: Mapping[str, Any]) -> pd.Series | pd.Categorical | pd.api.extensions.ExtensionArray:
    """One column from its R record (see the module docstring)."""
    kind = spec.get("type")
    if kind not in COLUMN_TYPES:
        raise TypeError(f"column {name!r}: unknown column type {kind!r}")
    values = as_list(spec.get("values"))
    na = [bool(v) for v in as_list(spec.get("na"))]
    if len(na) != len(values):
        raise ValueError(f"column {name!r}: the NA mask and the values differ in length")
    if kind == "double":
        out = np.array([math.nan if m else as_float(v) for v, m in zip(values, na, strict=True)], dtype=float)
        return pd.Series(out, dtype="float64")
    if kind == "integer":
        ints = [None if m else as_float(v) for v, m in zip(values, na, strict=True)]
        return pd.array([None if v is None or not v.is_integer() else int(v) for v in ints], dtype="Int64")
    if kind == "logical":
        return pd.array([None if m else bool(v) for v, m in zip(values, na, strict=True)], dtype="boolean")
    if kind == "character":
        return pd.array([None if m else str(v) for v, m in zip(values, na, strict=True)], dtype="string")
    if kind == "factor":
        levels = [str(v) for v in as_list(spec.get("levels"))]
        codes = [-1 if m else int(v) - 1 for v, m in zip(values, na, strict=True)]
        if any(c >= len(levels) or c < -1 for c in codes):
            raise ValueError(f"column {name!r}: a factor code is out of range")
        return pd.Categorical.from_codes(codes, categories=levels, ordered=bool(spec.get("ordered", False)))
    numbers = np.array([math.nan if m else as_float(v) for v, m in zip(values, na, strict=True)], dtype=float)
    if kind == "date":
        return pd.Series(timestamps(numbers, "D"))
    stamps = timestamps(numbers, "s", utc=True)
    tz = spec.get("tz") or ""
    return pd.Series(stamps.tz_convert(tz) if tz else stamps)


def frame_from_columns(columns: Mapping[str, Mapping[str, Any]] | None, nrow: int | None = None) -> pd.DataFrame:
    """The DataFrame the R side sent, column by column, with nullable dtypes.

    double -> float64 (NaN), integer -> Int64, logical -> boolean,
    character -> string, factor -> category (declared order, unused levels kept),
    date -> datetime64, datetime -> tz-aware datetime64.
    """
    columns = columns or {}
    if not isinstance(columns, Mapping):
        raise TypeError("columns must be a dict of column records")
    data = {}
    for name, spec in columns.items():
        col = column_from_r(str(name), spec)
        data[str(name)] = pd.Series(col).reset_index(drop=True) if not isinstance(col, pd.Series) else col
    lengths = {len(v) for v in data.values()}
    if len(lengths) > 1:
        raise ValueError("the columns differ in length")
    n = lengths.pop() if lengths else int(nrow or 0)
    return pd.DataFrame(data, index=pd.RangeIndex(n))


def describe_frame(frame: pd.DataFrame) -> dict:
    """Builtins describing a frame, for the crossing tests: dtype, NA mask, values, categories."""
    out = {}
    for name in frame.columns:
        col = frame[name]
        mask = col.isna().tolist()
        entry = {"dtype": str(col.dtype), "na": mask}
        if isinstance(col.dtype, pd.CategoricalDtype):
            entry["categories"] = [str(c) for c in col.cat.categories]
            entry["ordered"] = bool(col.cat.ordered)
            entry["values"] = [None if m else str(v) for v, m in zip(col.tolist(), mask, strict=True)]
        elif pd.api.types.is_datetime64_any_dtype(col.dtype):
            entry["values"] = [None if m else v.isoformat() for v, m in zip(col.tolist(), mask, strict=True)]
        else:
            entry["values"] = [None if m else plain(v) for v, m in zip(col.tolist(), mask, strict=True)]
        out[str(name)] = entry
    return {"nrow": len(frame), "columns": out}


def echo_columns(columns: Mapping[str, Mapping[str, Any]], nrow: int | None = None) -> dict:
    """Rebuild the frame and describe it (what R's crossing tests check)."""
    return describe_frame(frame_from_columns(columns, nrow))

"""Python users holding R objects: the embedded R through rpy2.

:func:`r_to_pandas` and :func:`pandas_to_r` convert data frames column by column
with correct missing values (``pandas2ri`` turns NA in integer, logical and
character columns into sentinels), and :func:`result_to_r` turns a fit into an R
list. rpy2 is imported only when one of these is called; :func:`start_r` starts
the embedded R without letting R's ``LD_LIBRARY_PATH`` leak into child processes
(it would make a ``python`` started later load the system's libpython). The rpy2
versions that work with Debian 12's R 4.2 are pinned in
``r_bridge/requirements-rpy2.txt``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from .calls import result_payload
from .columns import R_INT_MAX, R_INT_MIN, timestamps

_RPY2_PIN = "rpy2==3.6.6 rpy2-rinterface==3.6.5 rpy2-robjects==3.6.6 (or rpy2==3.5.17) for R 4.2"


def start_r():
    """Import ``rpy2.robjects`` (starting the embedded R) and return it.

    Starting R sets ``LD_LIBRARY_PATH`` to R's library directories; a Python
    started later as a child process would then load the system's libpython
    with this interpreter's standard library. The previous value is restored
    (R has loaded its libraries by then, so R is unaffected).
    """
    saved = os.environ.get("LD_LIBRARY_PATH")
    try:
        import rpy2.robjects as ro
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise ImportError(f"dpstats.r_interop needs rpy2 ({_RPY2_PIN}): {exc}") from exc
    if os.environ.get("LD_LIBRARY_PATH") != saved:
        if saved is None:
            os.environ.pop("LD_LIBRARY_PATH", None)
        else:
            os.environ["LD_LIBRARY_PATH"] = saved
    return ro


def _rclass(obj) -> list[str]:
    try:
        return list(obj.do_slot("class"))
    except LookupError:
        return []


def _r_column_to_pandas(name: str, col) -> pd.Series:
    import rpy2.rinterface as ri

    classes = _rclass(col)
    kind = col.typeof
    if kind == ri.RTYPES.INTSXP and "factor" in classes:
        codes = np.asarray(col.memoryview(), dtype=np.int64)
        codes = np.where(codes == R_INT_MIN, -1, codes - 1)
        levels = [str(v) for v in col.do_slot("levels")]
        return pd.Series(pd.Categorical.from_codes(codes, categories=levels, ordered="ordered" in classes))
    if kind == ri.RTYPES.REALSXP:
        values = np.array(col.memoryview(), dtype=float)  # NA_real_ and NaN are both NaN here
        if "Date" in classes:
            return pd.Series(timestamps(values, "D"))
        if "POSIXct" in classes:
            stamps = timestamps(values, "s", utc=True)
            try:
                tz = str(col.do_slot("tzone")[0])
            except LookupError:
                tz = ""
            return pd.Series(stamps.tz_convert(tz) if tz else stamps)
        return pd.Series(values, dtype="float64")
    if kind == ri.RTYPES.INTSXP:
        raw = np.asarray(col.memoryview(), dtype=np.int64)
        return pd.Series(pd.arrays.IntegerArray(raw.astype("int64"), raw == R_INT_MIN))
    if kind == ri.RTYPES.LGLSXP:
        raw = np.asarray(col.memoryview(), dtype=np.int64)
        return pd.Series(pd.arrays.BooleanArray(raw == 1, raw == R_INT_MIN))
    if kind == ri.RTYPES.STRSXP:
        return pd.Series(pd.array([None if v is ri.NA_Character else str(v) for v in col], dtype="string"))
    raise TypeError(f"column {name!r} has an R type dpstats does not convert ({classes or kind})")


def r_to_pandas(df, keep_row_names: bool = True) -> pd.DataFrame:
    """An R data.frame (rpy2 object) as a pandas DataFrame, missing values intact.

    double -> float64 (NA and NaN -> NaN), integer -> Int64, logical -> boolean,
    character -> string, factor -> category (levels in R's order, unused kept,
    ordered kept), Date -> datetime64, POSIXct -> tz-aware datetime64.
    Character row names become the index when ``keep_row_names``.
    """
    ro = start_r()
    if "data.frame" not in _rclass(df):
        raise TypeError("expected an R data.frame")
    names = [str(n) for n in ro.baseenv["names"](df)]
    data = {name: _r_column_to_pandas(name, df[i]).reset_index(drop=True) for i, name in enumerate(names)}
    n = int(ro.baseenv["nrow"](df)[0])
    index: pd.Index = pd.RangeIndex(n)
    if keep_row_names and int(ro.baseenv[".row_names_info"](df)[0]) > 0:
        index = pd.Index([str(v) for v in ro.baseenv["row.names"](df)])
    frame = pd.DataFrame(data, index=pd.RangeIndex(n))
    frame.index = index
    return frame


def _r_level(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _with_class(vec, classes: list[str]):
    """``class(vec) <- classes`` through R, which also marks ``vec`` as an object
    (a class set as a bare attribute is ignored by R's internal dispatch)."""
    import rpy2.rinterface as ri

    return ri.baseenv["class<-"](vec, ri.StrSexpVector(classes))


def _pandas_column_to_r(name: str, col: pd.Series):
    import rpy2.rinterface as ri

    mask = col.isna().to_numpy(dtype=bool)
    dtype = col.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        codes = col.cat.codes.to_numpy()
        vec = ri.IntSexpVector([ri.NA_Integer if c < 0 else int(c) + 1 for c in codes])
        vec.do_slot_assign("levels", ri.StrSexpVector([_r_level(c) for c in dtype.categories]))
        return _with_class(vec, ["ordered", "factor"] if dtype.ordered else ["factor"])
    if pd.api.types.is_bool_dtype(dtype):
        values = col.to_numpy(dtype=object)
        return ri.BoolSexpVector([ri.NA_Logical if m else bool(v) for v, m in zip(values, mask, strict=True)])
    if pd.api.types.is_integer_dtype(dtype):
        values = col.to_numpy(dtype=object)
        ints = [int(v) for v, m in zip(values, mask, strict=True) if not m]
        if all(R_INT_MIN < v <= R_INT_MAX for v in ints):
            return ri.IntSexpVector([ri.NA_Integer if m else int(v) for v, m in zip(values, mask, strict=True)])
        return ri.FloatSexpVector([ri.NA_Real if m else float(v) for v, m in zip(values, mask, strict=True)])
    if pd.api.types.is_float_dtype(dtype):
        values = col.to_numpy(dtype=float, na_value=np.nan)
        return ri.FloatSexpVector([ri.NA_Real if m else float(v) for v, m in zip(values, mask, strict=True)])
    if pd.api.types.is_datetime64_any_dtype(dtype):
        tz = str(dtype.tz) if getattr(dtype, "tz", None) is not None else "UTC"
        stamps = col.dt.tz_localize("UTC") if getattr(dtype, "tz", None) is None else col
        seconds = [ri.NA_Real if m else v.timestamp() for v, m in zip(stamps.tolist(), mask, strict=True)]
        vec = ri.FloatSexpVector(seconds)
        vec.do_slot_assign("tzone", ri.StrSexpVector([tz]))
        return _with_class(vec, ["POSIXct", "POSIXt"])
    if pd.api.types.is_string_dtype(dtype) or pd.api.types.is_object_dtype(dtype):
        values = col.to_numpy(dtype=object)
        if not all(m or isinstance(v, str) for v, m in zip(values, mask, strict=True)):
            raise TypeError(f"column {name!r} mixes strings with other objects; convert it first")
        return ri.StrSexpVector([ri.NA_Character if m else v for v, m in zip(values, mask, strict=True)])
    raise TypeError(f"column {name!r} has a dtype dpstats does not convert to R ({dtype})")


def pandas_to_r(frame: pd.DataFrame):
    """A pandas DataFrame as an R data.frame (rpy2 object), missing values intact.

    The inverse of :func:`r_to_pandas`: NaN/None/pd.NA become R's NA of the
    column's type; categoricals become factors with their categories as levels;
    a non-default index becomes character row names.
    """
    ro = start_r()
    import rpy2.rinterface as ri

    if not isinstance(frame, pd.DataFrame):
        raise TypeError("expected a pandas DataFrame")
    names = [str(c) for c in frame.columns]
    if len(set(names)) != len(names):
        raise ValueError("column names must be unique")
    vectors = [_pandas_column_to_r(name, frame.iloc[:, j]) for j, name in enumerate(names)]
    out = ri.ListSexpVector(vectors)
    out.do_slot_assign("names", ri.StrSexpVector(names))
    n = len(frame)
    default_index = isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0 and frame.index.step == 1
    if default_index or not frame.index.is_unique:
        out.do_slot_assign("row.names", ri.IntSexpVector([ri.NA_Integer, -n]) if n else ri.IntSexpVector([]))
    else:
        out.do_slot_assign("row.names", ri.StrSexpVector([str(v) for v in frame.index]))
    return ro.vectors.DataFrame(_with_class(out, ["data.frame"]))


def _to_r(obj: Any):
    """Builtins (from :func:`plain`) as rpy2 objects: dict -> named list, lists -> vectors."""
    import rpy2.rinterface as ri

    if obj is None:
        return ri.NULL
    if isinstance(obj, Mapping):
        out = ri.ListSexpVector([_to_r(v) for v in obj.values()])
        out.do_slot_assign("names", ri.StrSexpVector([str(k) for k in obj]))
        return out
    if isinstance(obj, bool):
        return ri.BoolSexpVector([obj])
    if isinstance(obj, (int, float)):
        return ri.FloatSexpVector([float(obj)])
    if isinstance(obj, str):
        return ri.StrSexpVector([obj])
    items = list(obj)
    if items and all(isinstance(v, bool) or v is None for v in items):
        return ri.BoolSexpVector([ri.NA_Logical if v is None else v for v in items])
    if items and all((isinstance(v, (int, float)) and not isinstance(v, bool)) or v is None for v in items):
        return ri.FloatSexpVector([ri.NA_Real if v is None else float(v) for v in items])
    if items and all(isinstance(v, str) or v is None for v in items):
        return ri.StrSexpVector([ri.NA_Character if v is None else v for v in items])
    return ri.ListSexpVector([_to_r(v) for v in items]) if items else ri.ListSexpVector([])


def _matrix(rows: list[list[float]], names: list[str]):
    import rpy2.rinterface as ri

    k = len(names)
    flat = [float("nan") if rows[i][j] is None else float(rows[i][j]) for j in range(k) for i in range(k)]
    mat = ri.FloatSexpVector(flat)
    mat.do_slot_assign("dim", ri.IntSexpVector([k, k]))
    dimnames = ri.ListSexpVector([ri.StrSexpVector(names), ri.StrSexpVector(names)])
    mat.do_slot_assign("dimnames", dimnames)
    return mat


def result_to_r(res: Any):
    """A fit as an R named list of plain values (rpy2 ``ListVector``).

    ``coefficients`` is a named numeric vector, ``vcov`` a matrix with
    dimnames (Python's term names); the other fields are those of
    ``res.to_dict()`` plus the method's title, citation and summary text.
    """
    ro = start_r()
    import rpy2.rinterface as ri

    payload = result_payload(res)
    terms = [str(t) for t in payload["terms"]]
    coefficients = ri.FloatSexpVector([math.nan if v is None else float(v) for v in payload["params"]])
    coefficients.do_slot_assign("names", ri.StrSexpVector(terms))
    fields = {"coefficients": coefficients, "vcov": _matrix(payload["cov"], terms)}
    fields.update({k: _to_r(v) for k, v in payload.items() if k not in ("params", "cov")})
    out = ri.ListSexpVector(list(fields.values()))
    out.do_slot_assign("names", ri.StrSexpVector(list(fields)))
    return ro.vectors.ListVector(out)

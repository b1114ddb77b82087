"""Interoperability with R, in both directions.

**R users calling Python (the R package in ``r_bridge/``, through reticulate).**
reticulate 1.28 cannot use numpy 2 and loses missing values in integer, logical
and character vectors, so nothing crosses as an array or a data frame. The R
side sends each column as a small record ::

    {"type": "double" | "integer" | "logical" | "character" | "factor" | "date" | "datetime",
     "values": [...],            # NA positions hold a placeholder (0, FALSE, "")
     "na": [...],                # the NA mask (TRUE where R had NA or NaN)
     "levels": [...],            # factors only
     "ordered": bool,            # factors only
     "tz": str}                  # datetimes only

:func:`frame_from_columns` rebuilds a pandas DataFrame with nullable dtypes, and
:func:`fit_from_r` runs ``dp_ols`` or ``dp_quantreg`` (one quantile or several)
and returns builtins only (dict, list, str, float, int, bool, None), which reach R
as named lists and vectors. Errors come back as ``{"ok": False, ...}`` so the R
side can raise them as ordinary R errors. A privacy budget crosses as the JSON
text of its file (:func:`budget_payload`): R keeps it, sends it with a fit
(after :func:`check_budget_first`, before any column) and gets it back spent.

**Python users holding R objects (rpy2).** :func:`r_to_pandas` and
:func:`pandas_to_r` convert data frames column by column with correct missing
values (``pandas2ri`` turns NA in integer, logical and character columns into
sentinels), and :func:`result_to_r` turns a fit into an R list. rpy2 is imported
only when one of these is called; :func:`start_r` starts the embedded R without
letting R's ``LD_LIBRARY_PATH`` leak into child processes (it would make a
``python`` started later load the system's libpython). The rpy2 versions that
work with Debian 12's R 4.2 are pinned in ``r_bridge/requirements-rpy2.txt``.

Nothing here reads or releases data beyond what ``dp_ols`` does: the data go in,
only the release comes out.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from .render import plain

COLUMN_TYPES = ("double", "integer", "logical", "character", "factor", "date", "datetime")
R_INT_MIN = -(2**31)  # NA_integer_ and NA (logical) in R's memory
R_INT_MAX = 2**31 - 1


# --------------------------------------------------------------------------
# Builtins only
# --------------------------------------------------------------------------


def _as_list(x: Any) -> list:
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


def _float(value: Any) -> float:
    """A cell as a float; NaN where it is not a number (a row-wise map: no error can show the value)."""
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def _timestamps(numbers: np.ndarray, unit: str, utc: bool = False) -> pd.DatetimeIndex:
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
    values = _as_list(spec.get("values"))
    na = [bool(v) for v in _as_list(spec.get("na"))]
    if len(na) != len(values):
        raise ValueError(f"column {name!r}: the NA mask and the values differ in length")
    if kind == "double":
        out = np.array([math.nan if m else _float(v) for v, m in zip(values, na, strict=True)], dtype=float)
        return pd.Series(out, dtype="float64")
    if kind == "integer":
        ints = [None if m else _float(v) for v, m in zip(values, na, strict=True)]
        return pd.array([None if v is None or not v.is_integer() else int(v) for v in ints], dtype="Int64")
    if kind == "logical":
        return pd.array([None if m else bool(v) for v, m in zip(values, na, strict=True)], dtype="boolean")
    if kind == "character":
        return pd.array([None if m else str(v) for v, m in zip(values, na, strict=True)], dtype="string")
    if kind == "factor":
        levels = [str(v) for v in _as_list(spec.get("levels"))]
        codes = [-1 if m else int(v) - 1 for v, m in zip(values, na, strict=True)]
        if any(c >= len(levels) or c < -1 for c in codes):
            raise ValueError(f"column {name!r}: a factor code is out of range")
        return pd.Categorical.from_codes(codes, categories=levels, ordered=bool(spec.get("ordered", False)))
    numbers = np.array([math.nan if m else _float(v) for v, m in zip(values, na, strict=True)], dtype=float)
    if kind == "date":
        return pd.Series(_timestamps(numbers, "D"))
    stamps = _timestamps(numbers, "s", utc=True)
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


# --------------------------------------------------------------------------
# Fitting for R
# --------------------------------------------------------------------------


def result_payload(res: Any) -> dict:
    """Everything R needs from a fit, as builtins (post-processing only).

    Several quantiles (a :class:`~dpstats.quantile_fits.DPQuantileFits`) give
    ``quantiles``, the whole call's ``privacy`` and ``fits``: one payload per quantile.
    """
    import dpstats
    from dpstats.grouped_results import DPGroupedResults
    from dpstats.quantile_fits import DPQuantileFits

    if isinstance(res, DPGroupedResults):
        tidy = res.tidy()
        return plain(
            {
                "grouped": True,
                "by": res.by,
                "keys": list(res.keys),
                "nobs": list(res.sizes),
                "failed": [bool(v) for v in res.failed],
                "tidy": {name: tidy[name].tolist() for name in tidy.columns if name != res.by},
                "method": res.context["method"],
                "privacy": res.privacy.as_dict(),
                "summary_text": res.summary().as_text(),
                "dpstats_version": dpstats.__version__,
            }
        )
    if isinstance(res, DPQuantileFits):
        return plain(
            {
                "quantiles": list(res.quantiles),
                "privacy": res.privacy.as_dict(),
                "fits": [result_payload(fit) for fit in res.fits],
                "summary_text": res.as_text(),
                "dpstats_version": dpstats.__version__,
            }
        )
    payload = dict(res.to_dict())
    for attr in ("method_title", "citation", "y_name"):
        payload[attr] = getattr(res, attr, None)
    payload["summary_text"] = res.summary().as_text()
    payload["dpstats_version"] = dpstats.__version__
    return plain(payload)


def _random_state(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _named(x: Any) -> dict | None:
    """An R named list (a dict) or NULL/empty list (None)."""
    if x is None or (isinstance(x, (list, tuple)) and len(x) == 0):
        return None
    if not isinstance(x, Mapping):
        raise TypeError("expected a named list")
    return dict(x)


class _LedgerFormula:
    """A budget whose ledger shows the formula as the R user wrote it (R's ``factor(cyl)``, not ``C(cyl)``)."""

    def __init__(self, budget: Any, formula: str) -> None:
        self.budget, self.formula = budget, formula

    def check(self, planned: Any) -> None:
        self.budget.check(planned)

    def record(self, spent: Any, **labels: Any) -> None:
        self.budget.record(spent, **{**labels, "formula": self.formula})


def budget_payload(budget: Any) -> dict:
    """A budget for R: its ``state`` (the JSON text of its file, which R keeps and sends back) and a
    ``view`` of builtins for printing without Python (caps, rule, spent, remaining, ledger columns)."""
    ledger = budget.ledger
    columns = {name: ledger[name].tolist() for name in ledger.columns if name != "time"}
    columns["time"] = [t.isoformat() for t in ledger["time"]]
    view = {
        "accounting": budget.accounting,
        "eps": budget.eps,
        "delta": budget.delta,
        "rho": budget.rho,
        "spent": budget.spent,
        "remaining": budget.remaining,
        "description": budget.describe(),
        "ledger": columns,
    }
    return {"state": budget.to_json(), "view": plain(_finite_or_none(view))}


def _finite_or_none(obj: Any) -> Any:
    """NaN (pandas' missing rho) as None, which reaches R as NULL / NA."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite_or_none(v) for v in obj]
    return obj


def _error(exc: Exception) -> dict:
    from .budget import BudgetExceeded

    return {"ok": False, "error": type(exc).__name__, "message": str(exc), "refused": isinstance(exc, BudgetExceeded)}


def new_budget(eps: Any = None, delta: Any = 0.0, rho: Any = None, accounting: Any = None) -> dict:
    """``dp_budget()`` from R: ``{"ok": True, "budget": budget_payload}`` or an error record."""
    from .budget import PrivacyBudget

    try:
        return {"ok": True, "budget": budget_payload(PrivacyBudget(eps, delta, rho, accounting=accounting))}
    except Exception as exc:  # reported to R as an R error
        return _error(exc)


def check_budget_first(
    budget: str, estimator: str, eps: Any, delta: Any = 0.0, method: str = "auto", options: Any = None
) -> dict:
    """Whether the budget (its JSON state) can take a fit with these public inputs: ``{"ok": True}`` or
    an error record. The R side asks before it sends any column to Python."""
    from .api import planned_spend
    from .budget import PrivacyBudget

    try:
        opts = dict(_named(options) or {})
        account = PrivacyBudget.from_json(budget)
        account.check(planned_spend(estimator, eps=eps, delta=delta, rho=opts.pop("rho", None), method=method, **opts))
        return {"ok": True}
    except Exception as exc:  # reported to R as an R error
        return _error(exc)


def budget_from_json(text: str) -> dict:
    """``dp_budget_load()`` from R: the budget of a saved file's text, validated, or an error record."""
    from .budget import PrivacyBudget

    try:
        return {"ok": True, "budget": budget_payload(PrivacyBudget.from_json(text))}
    except Exception as exc:  # reported to R as an R error
        return _error(exc)


def _fit(
    estimator: str,
    formula: str,
    columns: Mapping[str, Mapping[str, Any]],
    eps: Any,
    bounds: Any,
    levels: Any,
    method: str,
    delta: Any,
    random_state: Any,
    missing: str,
    options: Any,
    tau: Any,
    nrow: int | None,
    budget: Any = None,
) -> Any:
    import dpstats

    frame = frame_from_columns(columns, nrow)
    bounds = {k: _as_list(v) for k, v in (_named(bounds) or {}).items()}
    levels = {k: _as_list(v) for k, v in (_named(levels) or {}).items()}
    kwargs: dict[str, Any] = {
        "eps": eps,
        "bounds": bounds or None,
        "levels": levels or None,
        "method": method,
        "delta": delta,
        "random_state": _random_state(random_state),
        "budget": budget,
    }
    kwargs.update(_named(options) or {})
    _grouped_options(kwargs)
    if estimator == "ols":
        return dpstats.dp_ols(formula, frame, missing=missing, **kwargs)
    if estimator != "quantreg":
        raise ValueError(f"unknown estimator {estimator!r}")
    quantiles = _as_list(tau)
    q = quantiles[0] if len(quantiles) == 1 else quantiles
    return dpstats.dp_quantreg(formula, frame, q=q, missing=missing, **kwargs)


def _grouped_options(kwargs: dict[str, Any]) -> None:
    """R's ``groups`` (a vector) and ``group_sizes`` (sizes in the order of ``groups``) as dp_ols takes them."""
    if kwargs.get("groups") is None:
        return
    keys = [_random_state(k) for k in _as_list(kwargs["groups"])]  # integral doubles from R are integers
    kwargs["groups"] = keys
    kwargs["n_jobs"] = int(kwargs.get("n_jobs") or 1)  # no process pool from inside R unless asked
    sizes = kwargs.get("group_sizes")
    if sizes is not None:
        sizes = [_random_state(v) for v in _as_list(sizes)]
        if len(sizes) != len(keys):
            raise ValueError("group_sizes must give one size per key of groups, in the same order")
        kwargs["group_sizes"] = dict(zip(keys, sizes, strict=True))


def fit_from_r(
    estimator: str,
    formula: str,
    columns: Mapping[str, Mapping[str, Any]],
    eps: Any,
    bounds: Any = None,
    levels: Any = None,
    method: str = "auto",
    delta: Any = 0.0,
    random_state: Any = None,
    missing: str = "impute",
    options: Any = None,
    tau: Any = None,
    nrow: int | None = None,
    budget: str | None = None,
    ledger_formula: str | None = None,
) -> dict:
    """Fit ``estimator`` ('ols' or 'quantreg') on columns sent from R.

    ``formula`` is already a patsy formula and the column names are valid
    Python identifiers (the R side translates both). Returns
    ``{"ok": True, "result": {...}}`` or ``{"ok": False, "error": type, "message": str}``;
    every value is a builtin. ``budget`` is the JSON state of the R side's
    budget (:func:`budget_payload`): the fit is charged to it (its ledger shows
    ``ledger_formula``, the R formula), and once the fit has released the
    answer carries the new ``budget``, even if the result could not be
    converted, so that R never loses a spend.
    """
    from .budget import PrivacyBudget

    try:
        account = None if budget is None else PrivacyBudget.from_json(budget)
        charged = None if account is None else _LedgerFormula(account, ledger_formula or formula)
        res = _fit(
            estimator,
            formula,
            columns,
            eps,
            bounds,
            levels,
            method,
            delta,
            random_state,
            missing,
            options,
            tau,
            nrow,
            charged,
        )
    except Exception as exc:  # reported to R as an R error, never swallowed
        return _error(exc)
    spent = {} if account is None else {"budget": budget_payload(account)}
    try:
        return {"ok": True, "result": result_payload(res), **spent}
    except Exception as exc:  # the release happened: the budget still goes back to R
        return {**_error(exc), **spent}


# --------------------------------------------------------------------------
# Tables of fits held in R (the layout is dpstats.table's: one source of truth)
# --------------------------------------------------------------------------

TABLE_FORMATS = ("latex", "markdown", "html", "text")


def _fit_record(fit: Mapping[str, Any]) -> dict:
    """An R fit's public values as ``ReleasedFit.from_dict`` reads them (R vectors may arrive as scalars)."""
    terms = [str(t) for t in _as_list(fit.get("terms"))]
    replicates = fit.get("replicates")
    return {
        **dict(fit),
        "terms": terms,
        "params": [_float(v) for v in _as_list(fit.get("params"))],
        "cov": [[_float(v) for v in _as_list(row)] for row in _as_list(fit.get("cov"))],
        "replicates": None if not replicates else [[_float(v) for v in _as_list(r)] for r in _as_list(replicates)],
        "privacy": dict(_named(fit.get("privacy")) or {}),
    }


def _table_options(options: Mapping[str, Any]) -> dict:
    """dpstats.table's keyword arguments from R's (vectors of length 1 arrive as scalars)."""
    out: dict[str, Any] = {}
    for key in ("labels", "order", "drop", "notes"):
        if options.get(key) is not None:
            out[key] = [str(v) for v in _as_list(options[key])]
    for key in ("rename", "collapse"):
        if options.get(key) is not None:
            out[key] = {
                str(k): v if isinstance(v, str) else [str(t) for t in _as_list(v)]
                for k, v in _named(options[key]).items()
            }
    if options.get("below") is not None:
        out["below"] = None if options["below"] == "none" else str(options["below"])
    if options.get("alpha") is not None:
        out["alpha"] = float(options["alpha"])
    stars = options.get("stars")
    if stars is not None:
        out["stars"] = stars if isinstance(stars, bool) else [float(v) for v in _as_list(stars)]
    if options.get("digits") is not None:
        out["digits"] = int(options["digits"])
    if options.get("title") is not None:
        out["title"] = str(options["title"])
    return out


def table_from_r(fits: Any, fmt: str = "latex", options: Any = None) -> dict:
    """``dpstats.table`` of fits sent from R as plain values, in one of :data:`TABLE_FORMATS`.

    Each fit is a named list (terms, params, cov, replicates, interval, nobs,
    privacy, method, estimator, q, y_name, failed, reason) built from the R
    fit, which holds released values only. Returns ``{"ok": True, "text": str}``
    or ``{"ok": False, "error": type, "message": str}``.
    """
    try:
        from .tables import ReleasedFit, table

        if fmt not in TABLE_FORMATS:
            raise ValueError(f"format must be one of {list(TABLE_FORMATS)}")
        released = [ReleasedFit.from_dict(_fit_record(fit)) for fit in _as_list(fits)]
        out = table(released, **_table_options(_named(options) or {}))
        text = {"latex": out.as_latex, "markdown": out.as_markdown, "html": out.as_html, "text": out.as_text}[fmt]()
        return {"ok": True, "text": text}
    except Exception as exc:  # reported to R as an R error, never swallowed
        return {"ok": False, "error": type(exc).__name__, "message": str(exc)}


# --------------------------------------------------------------------------
# rpy2: R data.frame <-> pandas, results -> R list
# --------------------------------------------------------------------------

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
            return pd.Series(_timestamps(values, "D"))
        if "POSIXct" in classes:
            stamps = _timestamps(values, "s", utc=True)
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


__all__ = [
    "budget_from_json",
    "budget_payload",
    "check_budget_first",
    "describe_frame",
    "echo_columns",
    "fit_from_r",
    "frame_from_columns",
    "new_budget",
    "pandas_to_r",
    "plain",
    "r_to_pandas",
    "result_payload",
    "result_to_r",
    "start_r",
]

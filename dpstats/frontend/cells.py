"""Bad cells: a documented row-wise treatment, so that no private row can make a call raise.

Whether a pandas column is numeric, whether it holds a NaN, whether a value is
among the declared levels: each of these is a fact about the private rows, so
none of them may decide whether a call returns (docs/DESIGN.md section 2). A
variable is categorical because its levels were declared, numeric otherwise,
whatever its dtype; each cell is then mapped on its own:

============================  ===========================================================
numeric cell                  treatment (``missing="impute"``, the default)
============================  ===========================================================
a number (bool counts 0/1)    kept, then clipped to the declared bounds
text that reads as a number   that number (a CSV column with one text cell arrives as text)
+inf / -inf                   the upper / lower declared bound (clipping); 0 if none
NaN, None, pd.NA, other text  the midpoint of the declared bounds; 0 if none are declared
============================  ===========================================================

A categorical cell that is missing or not among the declared levels becomes
the first declared level (the reference level of patsy's default coding).

Each rule is a map of one cell to one value, the same for every row, so the
neighbour relation is unchanged: two datasets that differ in one row still
differ in one row after the map, and every guarantee holds as stated. n stays
public. The imputed value biases the estimate towards it, which is why the
curator inspects the data first (:func:`dpstats.inspect`). ``missing="raise"``
is the curator's opt-in: it raises on the first bad cell, and that error
describes confidential data.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

MISSING_POLICIES = ("impute", "raise")

CURATOR_ONLY = (
    "missing='raise' was passed: this error describes confidential data; it is for the data curator's eyes, "
    "never for publication. The default missing='impute' treats such cells row-wise (see dpstats.frontend.cells)"
)


def check_missing(missing: str) -> str:
    """Validate the ``missing=`` policy (public)."""
    if missing not in MISSING_POLICIES:
        raise ValueError(f"missing must be one of {MISSING_POLICIES}")
    return missing


def _number(value: object) -> float:
    if isinstance(value, bool | np.bool_):
        return float(value)
    if isinstance(value, int | float | np.integer | np.floating):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return np.nan
    return np.nan


def as_numbers(column: pd.Series) -> np.ndarray:
    """Each cell as a float, NaN where it is not a number; the same map whatever the dtype."""
    if getattr(column.dtype, "kind", "O") in "biuf":
        return column.to_numpy(dtype=float, na_value=np.nan)
    return np.fromiter((_number(v) for v in column.to_numpy(dtype=object)), dtype=float, count=len(column))


def numeric_cells(name: str, column: pd.Series, bounds: tuple[float, float] | None, missing: str) -> np.ndarray:
    """The numeric variable ``name`` after the cell-wise treatment of the module docstring, clipped."""
    values = as_numbers(column)
    if missing == "raise" and not np.isfinite(values).all():
        raise ValueError(f"column {name!r} has a missing, non-finite or non-numeric value. {CURATOR_ONLY}")
    if bounds is None:
        return np.where(np.isfinite(values), values, 0.0)
    lo, hi = bounds
    values = np.where(np.isnan(values), 0.5 * (lo + hi), values)
    return np.clip(values, lo, hi)


def _among(value: object, declared: pd.Index) -> bool:
    try:
        return value in declared
    except TypeError:
        return False


def categorical_cells(name: str, column: pd.Series, levels: tuple, missing: str) -> pd.Categorical:
    """The categorical variable ``name`` with the declared ``levels``; bad cells become the first level."""
    declared = pd.Index(levels)
    try:
        known = column.isin(declared).to_numpy()
    except TypeError:  # an unhashable cell: the same test, one cell at a time
        known = np.fromiter((_among(v, declared) for v in column.to_numpy(dtype=object)), dtype=bool, count=len(column))
    if missing == "raise" and not known.all():
        raise ValueError(
            f"column {name!r} has a missing value or one that is not among levels[{name!r}]. {CURATOR_ONLY}"
        )
    codes = np.where(known, declared.get_indexer(column.where(known, levels[0])), 0)
    return pd.Categorical.from_codes(codes, categories=declared)

"""``dpstats.inspect``: a report for the data's curator, NOT PRIVATE.

A DP call never raises on a bad cell: it imputes it row-wise
(dpstats/frontend/cells.py), which biases the estimate towards the imputed value.
Curators should therefore clean their data before the DP call rather than
learn about it from exceptions (which would themselves leak). This report
shows what the DP call would treat, variable by variable, on the raw rows.
It reads the confidential data and prints counts, values and row labels:
it is for the curator's eyes, never for publication, and says so in its
first line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .cells import as_numbers
from .formula import admitted_variables
from .metadata import check_bounds

NOT_PRIVATE = "NOT PRIVATE: this report reads the confidential rows; it is for the data curator, never for publication."
_SHOWN_ROWS = 20


@dataclass(frozen=True)
class DataInspection:
    """What a DP call on ``formula`` would treat row-wise, on the raw data.

    ``table`` has one row per variable of the formula: its kind (numeric or
    categorical, from the declarations), the declaration, and the number of
    cells that are missing, infinite, non-numeric text, below / above the
    declared bounds (clipped), or not among the declared levels.
    ``bad_rows`` are the labels of rows with a cell that would be imputed.
    """

    formula: str
    n: int
    table: pd.DataFrame
    bad_rows: pd.Index

    def as_text(self) -> str:
        """The report as text; its first line says that it is not private."""
        lines = [NOT_PRIVATE, "", f"formula: {self.formula}", f"rows: {self.n}", "", self.table.to_string(index=False)]
        if len(self.bad_rows):
            shown = ", ".join(map(str, self.bad_rows[:_SHOWN_ROWS]))
            more = f" (and {len(self.bad_rows) - _SHOWN_ROWS} more)" if len(self.bad_rows) > _SHOWN_ROWS else ""
            lines += ["", f"rows with a cell the DP call would impute: {shown}{more}"]
        else:
            lines += ["", "no cell would be imputed"]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.as_text()


def _numeric_row(name: str, column: pd.Series, bounds: tuple[float, float] | None) -> tuple[dict, np.ndarray]:
    values = as_numbers(column)
    raw = column.to_numpy(dtype=object)
    text = np.array([isinstance(v, str) for v in raw]) & np.isnan(values)
    missing = np.isnan(values) & ~text
    infinite = np.isinf(values)
    below = above = np.zeros(len(values), dtype=bool)
    if bounds is not None:
        below, above = values < bounds[0], values > bounds[1]
    row = {
        "variable": name,
        "kind": "numeric",
        "declared": "no bounds" if bounds is None else f"bounds [{bounds[0]:g}, {bounds[1]:g}]",
        "missing": int(missing.sum()),
        "infinite": int(infinite.sum()),
        "text": int(text.sum()),
        "below": int((below & ~infinite).sum()),
        "above": int((above & ~infinite).sum()),
        "undeclared levels": "",
    }
    return row, missing | text | (infinite if bounds is None else np.zeros_like(infinite))


def _categorical_row(name: str, column: pd.Series, levels: tuple) -> tuple[dict, np.ndarray]:
    known = np.array([_among(v, levels) for v in column.to_numpy(dtype=object)], dtype=bool)
    missing = column.isna().to_numpy() & ~known
    others = pd.Series(column[~known & ~missing].astype(str)).value_counts()
    row = {
        "variable": name,
        "kind": "categorical",
        "declared": f"{len(levels)} levels",
        "missing": int(missing.sum()),
        "infinite": 0,
        "text": 0,
        "below": 0,
        "above": 0,
        "undeclared levels": ", ".join(f"{value} ({count})" for value, count in others.items()),
    }
    return row, ~known


def _among(value: object, levels: tuple) -> bool:
    try:
        return value in levels
    except TypeError:
        return False


def inspect(
    formula: str,
    data: pd.DataFrame,
    bounds: Mapping[str, Sequence[float]] | None = None,
    levels: Mapping[str, Sequence] | None = None,
) -> DataInspection:
    """Report, NOT PRIVATELY, what a DP fit of ``formula`` would treat row-wise in ``data``.

    For each variable the formula uses: missing cells, infinities, text in a
    numeric column, values outside the declared bounds (clipped) and values
    not among the declared levels (mapped to the first level), with the
    labels of the rows concerned. Takes the same ``bounds`` and ``levels`` as
    :func:`dpstats.dp_ols`; the formula is admitted by the same grammar.
    """
    if isinstance(data, Mapping):
        data = pd.DataFrame(data)
    if not isinstance(data, pd.DataFrame):
        raise TypeError("data must be a pandas DataFrame or a dict of columns")
    declared_bounds = check_bounds(bounds)
    lhs, rhs, declared_levels = admitted_variables(formula, data.columns, levels)
    variables = lhs + [v for v in rhs if v not in lhs]
    rows, bad = [], np.zeros(len(data), dtype=bool)
    for name in variables:
        if name in declared_levels:
            row, flagged = _categorical_row(name, data[name], declared_levels[name])
        else:
            row, flagged = _numeric_row(name, data[name], declared_bounds.get(name))
        rows.append(row)
        bad |= flagged
    return DataInspection(formula=formula, n=len(data), table=pd.DataFrame(rows), bad_rows=data.index[bad])

"""Survey weights (``weights="<column>"``): their declared range and their row-wise treatment.

A weight bounds what one row moves a weighted statistic: by up to the range's
upper end times an unweighted row's. The range is therefore public, declared in
``bounds`` like any variable's and never read from the data, with a lower end of
0 or more. Each row's weight gets the numeric cells' treatment
(dpstats/frontend/cells.py): a missing, non-finite or non-numeric weight becomes
the midpoint of the range, one outside it the nearest end (a negative weight the
lower end). Nothing here raises on a value.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping

import numpy as np
import pandas as pd

from .cells import numeric_cells


def check_weights(
    name: object, columns: Collection[str], bounds: Mapping[str, tuple[float, float]]
) -> tuple[float, float]:
    """The declared range of the weight column ``name`` (public facts only: the column's name and the bounds)."""
    if not isinstance(name, str):
        raise TypeError("weights must name a column of the data")
    if name not in columns:
        raise ValueError(f"weights={name!r} is not a column of the data")
    if name not in bounds:
        raise ValueError(f"weights={name!r} needs its range declared in bounds, as in bounds={{{name!r}: (0, 5000)}}")
    lo, hi = (float(v) for v in bounds[name])
    if not (0.0 <= lo < hi < math.inf):
        raise ValueError(f"the weights' declared range must satisfy 0 <= lower < upper < inf, not ({lo:g}, {hi:g})")
    return lo, hi


def weight_values(column: pd.Series, name: str, bounds: tuple[float, float], missing: str) -> np.ndarray:
    """The rows' weights after the row-wise treatment (module docstring)."""
    return numeric_cells(name, column.reset_index(drop=True), bounds, missing)


def planning_rows(n: int, bounds: tuple[float, float]) -> int:
    """The rows a weighted release of n rows is worth to the planning's predictions (dpstats/planning/): a
    weighted sum's noise grows with the declared maximum W and its signal with the weights' total, which the
    prediction takes at the range's midpoint, ``n (lo + W) / 2``, as ``n (lo + W) / (2 W)`` unweighted rows
    (public: n and the declared range)."""
    lo, hi = bounds
    return max(1, int(n * (lo + hi) / (2.0 * hi)))

"""Public metadata of a call: declared bounds and levels, validated before any data are read."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..design.bounds import Interval


def check_bounds(bounds: Mapping[str, Sequence[float]] | None) -> dict[str, Interval]:
    """Validate ``bounds``: a mapping name -> (lo, hi), finite with lo < hi."""
    if bounds is None:
        return {}
    if not isinstance(bounds, Mapping):
        raise TypeError("bounds must be a dict mapping variable names to (lower, upper)")
    checked: dict[str, Interval] = {}
    for name, pair in bounds.items():
        try:
            lo, hi = (float(v) for v in pair)
        except (TypeError, ValueError):
            raise TypeError(f"bounds[{name!r}] must be a pair of numbers (lower, upper)") from None
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise ValueError(f"bounds[{name!r}] must be finite")
        if not lo < hi:
            raise ValueError(f"bounds[{name!r}] must have lower < upper")
        checked[str(name)] = (lo, hi)
    return checked


def check_integers(integers: Sequence[str] | None, bounds: Mapping[str, Interval]) -> tuple[str, ...]:
    """Validate ``integers``: the numeric variables declared to take whole values only, each with whole-number
    bounds (public metadata, like the bounds: never read from the data). One name may come alone (R's
    ``integers = "kids"`` arrives as a string)."""
    if integers is None:
        return ()
    if not isinstance(integers, Sequence):
        raise TypeError("integers must be a list of variable names")
    names = (integers,) if isinstance(integers, str) else tuple(str(name) for name in integers)
    for name in names:
        if name not in bounds:
            raise ValueError(f"integers names {name!r}, which has no declared bounds")
        if not all(float(v).is_integer() for v in bounds[name]):
            raise ValueError(f"integers names {name!r}, whose bounds {bounds[name]} are not whole numbers")
    return names


def check_levels(levels: Mapping[str, Sequence] | None) -> dict[str, tuple]:
    """Validate ``levels``: a mapping name -> non-empty sequence of distinct levels."""
    if levels is None:
        return {}
    if not isinstance(levels, Mapping):
        raise TypeError("levels must be a dict mapping variable names to lists of levels")
    checked: dict[str, tuple] = {}
    for name, values in levels.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence | np.ndarray | pd.Index):
            raise TypeError(f"levels[{name!r}] must be a list of levels")
        # numpy scalars (levels from df[col].unique()) become Python ones, for JSON and the summary; a list
        # (a survey's PSU declared as a (stratum, cluster) pair from R: dpstats/frontend/survey.py) a tuple
        values = tuple(_level(v) for v in values)
        if len(values) == 0:
            raise ValueError(f"levels[{name!r}] must not be empty")
        if len(set(values)) != len(values):
            raise ValueError(f"levels[{name!r}] has duplicated levels")
        checked[str(name)] = values
    return checked


def _level(value: object) -> object:
    """A declared level as a hashable Python value: numpy scalars unwrapped, lists and arrays as tuples."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list | np.ndarray):
        return tuple(_level(v) for v in value)
    return value

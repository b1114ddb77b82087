"""The privacy unit: every row of one unit (a person, a firm), at most k rows each.

``dp_ols(..., unit="person_id", max_rows=k)`` protects a unit, not a row
(docs/DESIGN.md section 2). Neighbouring datasets have the same units with the
same numbers of rows (the panel's shape is public, as n is at the row level)
and differ in the values of every row of one unit.

Contribution bounding (:func:`bound_contributions`). Of each unit's rows at
most ``max_rows`` are kept: the ones with the smallest priorities, drawn
uniformly for every row before the data's values are read (through
dpstats/privacy/noise.py). The kept rows depend on the unit keys and the draws
only, so on two neighbours the same positions are kept, and the kept datasets
differ in at most k rows, all of one unit. Rows whose key is missing form one
unit of their own (the most cautious reading of an unknown key: it may be
anybody's). The number of kept rows and of units is a function of the public
shape, so reporting them leaks nothing.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..privacy import noise


@dataclass(frozen=True)
class Units:
    """The unit of every kept row (``codes`` in 0..count-1), the number of units and the public bound k."""

    name: str
    codes: np.ndarray
    count: int
    max_rows: int

    @property
    def neighbours(self) -> str:
        """The neighbour relation a fit with these units reports."""
        rows = "row" if self.max_rows == 1 else "rows"
        return (
            f"one {self.name} (at most {self.max_rows} {rows}; {self.count} units): neighbouring datasets differ "
            f"in every row of one {self.name}; the units and their numbers of rows are public"
        )

    def subset(self, rows: slice | np.ndarray) -> Units:
        """The units of some of the kept rows (the count and k unchanged)."""
        return Units(self.name, self.codes[rows], self.count, self.max_rows)


def _hashable(key: object) -> object:
    """A key as it is, or, if it cannot be hashed (a list in a cell), its text: a row-wise map, so that no
    cell can make the call raise."""
    try:
        hash(key)
    except TypeError:
        return ("unhashable key", repr(key))
    return key


def check_unit(unit: object, max_rows: object) -> tuple[str, int] | None:
    """The public declaration: ``unit`` names a column and ``max_rows`` (required with it) is a positive int."""
    if unit is None:
        if max_rows is not None:
            raise ValueError("max_rows bounds the rows of one unit: pass unit='<column>' with it")
        return None
    if not isinstance(unit, str) or not unit:
        raise ValueError("unit must name a column (the privacy unit's key, e.g. 'person_id')")
    if max_rows is None:
        raise ValueError(f"unit={unit!r} needs max_rows=k: the public bound on one unit's rows")
    return unit, check_max_rows(max_rows)


def check_max_rows(max_rows: object) -> int:
    """``max_rows``: a positive integer (1: a unit has one row)."""
    if isinstance(max_rows, bool) or not isinstance(max_rows, numbers.Integral) or max_rows < 1:
        raise ValueError("max_rows must be a positive integer")
    return int(max_rows)


def bound_contributions(
    keys: pd.Series, name: str, max_rows: int, rng: np.random.Generator
) -> tuple[np.ndarray, Units]:
    """The positions of the kept rows (in the data's order) and their :class:`Units` (module docstring).

    Codes follow the units' first appearance; missing keys share one code.
    Every unit keeps at least one row, so the codes of the kept rows are 0..count-1.
    """
    codes, uniques = pd.factorize(keys.map(_hashable), use_na_sentinel=False)
    codes = np.asarray(codes, dtype=np.int64)
    priority = noise.uniform(rng, 0.0, 1.0, codes.size)
    order = np.lexsort((priority, codes))
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]]) if codes.size else np.array([], int)
    lengths = np.diff(np.r_[starts, codes.size])
    rank = np.arange(codes.size) - np.repeat(starts, lengths)
    kept = np.sort(order[rank < max_rows])
    return kept, Units(name, codes[kept], len(uniques), max_rows)

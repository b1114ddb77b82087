"""Neighbouring data frames for audits through the public API, and the survey-weight move.

docs/DESIGN.md section 2: neighbours have the same public n and differ in one row;
weights are data, their range ``[0, W]`` public, and "one row moves every weighted
statistic by at most W times an unweighted row". The move that reaches it
(:func:`weight_move`): a row that counts for nothing in D (weight 0) counts for
the most it can in D' (weight W) with its values at a corner of the declared box;
every weighted sum then moves by W times that row's terms. A mechanism that forgot
the W in its sensitivity is about W times less private than it claims on this pair.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class FramePair:
    """Two data frames with the same rows but one, as a public call reads them (replace-one neighbours)."""

    label: str
    d: pd.DataFrame
    d_prime: pd.DataFrame


def weight_move(
    base: pd.DataFrame,
    weights: str,
    w_max: float,
    before: Mapping[str, object],
    after: Mapping[str, object],
    row: int = 0,
) -> FramePair:
    """``base`` with row ``row`` at weight 0 and values ``before`` in D, at weight ``w_max`` and values ``after``
    in D' (every other cell of the row and every other row unchanged)."""
    if weights in before or weights in after:
        raise ValueError("the weight is set by the move: leave it out of before and after")
    d, d_prime = base.copy(), base.copy()
    for frame, values, weight in ((d, before, 0.0), (d_prime, after, float(w_max))):
        for column, value in {**values, weights: weight}.items():
            if column not in frame.columns:
                raise ValueError(f"{column!r} is not a column of the base frame")
            frame.loc[frame.index[row], column] = value
    label = f"row {row}: weight 0 at {dict(before)} -> weight {w_max:g} at {dict(after)} (n = {len(base)})"
    return FramePair(label, d, d_prime)

"""Worst-case unit-level neighbours, and the mechanisms as they run with ``unit=`` (docs/DESIGN.md section 2).

With ``unit=`` and ``max_rows=k`` neighbouring datasets have the same units
and numbers of rows and differ in every row of one unit
(dpstats/design/units.py). The adversarial pairs of :func:`unit_corner_pairs`
put every row of the other units on one corner of the declared box (the
*base*) and move all k rows of the last unit from one corner to another:
every sum over rows moves by k times one row's reach at once, the move that
group privacy and a unit-native mechanism's sensitivities must both absorb.

:func:`unit_level` is a mechanism as a ``unit=`` call runs it (through
dpstats/api/unit_calls.py), for the replay and the gray-box audit, and
:func:`unit_claim` is what each of its releases claims at the unit level:
its recorded eps for a unit-native mechanism, k times it for one run at the
row level by group privacy (dpstats/mechanisms/units.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ..api.unit_calls import unit_release
from ..design.units import Units
from ..mechanisms.base import MechanismSpec, PrivacyRequest, Release
from .neighbours import Bounds, NeighbourPair, box_corners, design_from_points
from .runner import CoreMechanism


def unit_corner_pairs(
    units: int,
    max_rows: int,
    slope_bounds: Sequence[Bounds],
    y_bounds: Bounds,
    *,
    bases: int | None = 1,
) -> list[NeighbourPair]:
    """``units`` units of ``max_rows`` rows each; every row on a base corner but the last unit's, whose rows
    all move from one corner to another (every ordered pair of distinct corners, over the first ``bases``
    corners as bases; None: all)."""
    if units < 2 or max_rows < 1:
        raise ValueError("a unit-level pair needs at least 2 units of at least 1 row")
    corners = box_corners([*slope_bounds, y_bounds])
    codes = np.repeat(np.arange(units), max_rows)
    unit = Units("unit", codes, units, max_rows)
    pairs = []
    for base in corners[: bases if bases is not None else corners.shape[0]]:
        rest = np.repeat(base[None, :], (units - 1) * max_rows, axis=0)
        for i, j in itertools.permutations(range(corners.shape[0]), 2):
            before = np.vstack([rest, np.repeat(corners[i][None, :], max_rows, axis=0)])
            after = np.vstack([rest, np.repeat(corners[j][None, :], max_rows, axis=0)])
            d = replace(design_from_points(before, slope_bounds, y_bounds), units=unit)
            d_prime = replace(design_from_points(after, slope_bounds, y_bounds), units=unit)
            label = f"{units} units x {max_rows} rows on {base}, the last unit {corners[i]} -> {corners[j]}"
            pairs.append(NeighbourPair(label, d, d_prime))
    return pairs


def unit_level(spec: MechanismSpec) -> CoreMechanism:
    """``spec`` as a ``unit=`` call runs it on a design whose ``units`` are set (dpstats/api/unit_calls.py)."""

    def fit(design, privacy: PrivacyRequest, rng: np.random.Generator, **options: object) -> Release:
        return unit_release(spec, design, privacy, rng, options)

    return fit


def unit_claim(spec: MechanismSpec, max_rows: int) -> int:
    """The factor from a release's recorded eps to its unit-level claim (module docstring)."""
    return 1 if spec.unit_native or max_rows == 1 else max_rows

"""Worst-case replace-one neighbouring datasets on the declared box.

docs/PRIVACY_TESTING.md, "An audit that fits in CI", step 1: the adversarial pairs
for a bounded-data mechanism sit on the corners of the declared box. With
``n - 1`` rows piled on one corner (the *base*) and the last row moved from
one corner to another, ncov and nvar move by exactly their sensitivity
``1 - 1/n`` (Alabi et al. 2022, Lemma 19, attained by the origin -> all-ones
move) and NoisyStats' intercept by ``(1 + |slope|)/n`` (a move that shifts the
mean of y and the mean of x in opposite directions relative to the slope).

Neighbours follow docs/DESIGN.md section 2: the same public n on both sides, one
row replaced. A *point* here is one row ``(x_1, ..., x_p, y)`` with the
response last; :func:`design_from_arrays` turns rows into the
:class:`~dpstats.design.matrix.Design` the core mechanisms take, without the formula
front end (too slow for the audits' thousands of runs).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..design.matrix import Design

Bounds = tuple[float, float]


@dataclass(frozen=True)
class NeighbourPair:
    """Two designs with the same n that differ in exactly one row."""

    label: str
    d: Design
    d_prime: Design

    def swapped(self) -> NeighbourPair:
        """The same pair with the roles of D and D' exchanged."""
        return NeighbourPair(f"{self.label} (swapped)", self.d_prime, self.d)


def design_from_arrays(
    y: Sequence[float] | np.ndarray,
    X: Sequence[Sequence[float]] | np.ndarray,
    *,
    y_bounds: Bounds,
    x_bounds: Sequence[Bounds] | np.ndarray,
    intercept_index: int | None = 0,
    term_names: Sequence[str] | None = None,
    y_name: str = "y",
) -> Design:
    """Build a :class:`Design` from arrays, as the formula front end would.

    ``X`` includes the intercept column (all ones) when ``intercept_index`` is
    not None. ``x_bounds`` has one ``(lo, hi)`` per column of ``X``; for
    convenience it may omit the intercept column, whose bounds are then
    ``(1, 1)``. The data must already lie inside the bounds: an audit design
    that needs clipping is a mistake in the test, so it raises rather than
    clips.
    """
    y_arr = np.asarray(y, dtype=float).reshape(-1)
    X_arr = np.asarray(X, dtype=float)
    if X_arr.ndim != 2 or X_arr.shape[0] != y_arr.size:
        raise ValueError("X must be a 2-d array with one row per element of y")
    columns = X_arr.shape[1]
    xb = np.asarray(x_bounds, dtype=float).reshape(-1, 2)
    if intercept_index is not None:
        if not np.all(X_arr[:, intercept_index] == 1.0):
            raise ValueError("the intercept column of X must be all ones")
        if xb.shape[0] == columns - 1:
            xb = np.insert(xb, intercept_index, [1.0, 1.0], axis=0)
    if xb.shape[0] != columns:
        raise ValueError("x_bounds needs one (lo, hi) per column of X")
    yb = (float(y_bounds[0]), float(y_bounds[1]))
    if np.any(X_arr < xb[:, 0]) or np.any(X_arr > xb[:, 1]) or np.any(y_arr < yb[0]) or np.any(y_arr > yb[1]):
        raise ValueError("the audit data must lie inside the declared bounds")
    if term_names is None:
        slope_names = iter(f"x{j}" for j in range(1, columns + 1))
        term_names = tuple("Intercept" if j == intercept_index else next(slope_names) for j in range(columns))
    return Design(
        y=y_arr,
        X=X_arr,
        y_name=y_name,
        term_names=tuple(term_names),
        y_bounds=yb,
        x_bounds=xb,
        intercept_index=intercept_index,
    )


def design_from_points(
    points: np.ndarray,
    slope_bounds: Sequence[Bounds],
    y_bounds: Bounds,
    *,
    intercept: bool = True,
) -> Design:
    """A design from rows ``(x_1, ..., x_p, y)``, with an intercept column first if asked."""
    points = np.asarray(points, dtype=float)
    X = points[:, :-1]
    if intercept:
        X = np.column_stack([np.ones(points.shape[0]), X])
    return design_from_arrays(
        points[:, -1],
        X,
        y_bounds=y_bounds,
        x_bounds=slope_bounds,
        intercept_index=0 if intercept else None,
    )


def pair_from_points(
    points_d: np.ndarray,
    points_d_prime: np.ndarray,
    slope_bounds: Sequence[Bounds],
    y_bounds: Bounds,
    *,
    intercept: bool = True,
    label: str = "pair",
) -> NeighbourPair:
    """A :class:`NeighbourPair` from two row arrays that differ in at most one row."""
    a, b = np.asarray(points_d, dtype=float), np.asarray(points_d_prime, dtype=float)
    if a.shape != b.shape:
        raise ValueError("neighbouring datasets must have the same shape (same public n)")
    if int(np.any(a != b, axis=1).sum()) > 1:
        raise ValueError("replace-one neighbours differ in at most one row")
    return NeighbourPair(
        label,
        design_from_points(a, slope_bounds, y_bounds, intercept=intercept),
        design_from_points(b, slope_bounds, y_bounds, intercept=intercept),
    )


def box_corners(bounds: Sequence[Bounds]) -> np.ndarray:
    """The ``2**k`` corners of a k-dimensional box, lowest corner first, highest last."""
    lows = np.array([b[0] for b in bounds], dtype=float)
    highs = np.array([b[1] for b in bounds], dtype=float)
    bits = np.array(list(itertools.product((0, 1), repeat=len(lows))), dtype=bool)
    return np.where(bits, highs, lows)


def _fmt(point: np.ndarray) -> str:
    return "(" + ", ".join(f"{v:g}" for v in point) + ")"


def corner_pairs(
    n: int,
    slope_bounds: Sequence[Bounds],
    y_bounds: Bounds,
    *,
    intercept: bool = True,
    bases: Literal["all", "lowest"] = "all",
) -> list[NeighbourPair]:
    """All corner moves: ``n - 1`` rows on a base corner, the last row moved between two corners.

    With ``k = p + 1`` coordinates there are ``2**k`` corners; ``bases="all"``
    gives ``2**k * 2**k * (2**k - 1)`` pairs (48 for one regressor: 4 bases x
    12 moves, as in docs/PRIVACY_TESTING.md step 1), ``bases="lowest"`` only the
    ``2**k (2**k - 1)`` moves over the lowest corner (enough for several
    regressors, where the full set grows fast).
    """
    if n < 2:
        raise ValueError("n must be at least 2")
    corners = box_corners([*slope_bounds, y_bounds])
    base_list = corners if bases == "all" else corners[:1]
    pairs = []
    for base in base_list:
        rest = np.repeat(base[None, :], n - 1, axis=0)
        for i, j in itertools.permutations(range(corners.shape[0]), 2):
            pairs.append(
                pair_from_points(
                    np.vstack([rest, corners[i]]),
                    np.vstack([rest, corners[j]]),
                    slope_bounds,
                    y_bounds,
                    intercept=intercept,
                    label=f"n={n}, {n - 1} x {_fmt(base)}, last {_fmt(corners[i])} -> {_fmt(corners[j])}",
                )
            )
    return pairs


def diagonal_pair(
    n: int,
    slope_bounds: Sequence[Bounds],
    y_bounds: Bounds,
    *,
    intercept: bool = True,
) -> NeighbourPair:
    """``n`` rows on the lowest corner vs. the last one moved to the highest corner.

    On [0, 1]^(p+1) this is the all-ones-corner move: every centred product
    ncov(u_j, v), ncov(u_j, u_k) moves by exactly ``1 - 1/n`` at once, so it
    attains the L1 sensitivity of NoisyStats' S_xy and S_xx together.
    """
    corners = box_corners([*slope_bounds, y_bounds])
    low, high = corners[0], corners[-1]
    rows = np.repeat(low[None, :], n, axis=0)
    moved = rows.copy()
    moved[-1] = high
    return pair_from_points(
        rows,
        moved,
        slope_bounds,
        y_bounds,
        intercept=intercept,
        label=f"n={n}, {n} x {_fmt(low)} vs last -> {_fmt(high)}",
    )

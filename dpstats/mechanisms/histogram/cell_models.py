"""The formula's response and design over each cell of a histogram: a quadratic per cell (post-processing).

The binning bias bound (dpstats/mechanisms/histogram/binning_bias.py) needs
to know how much the response and every design column can vary over a cell,
and how far their means over the cell's rows can sit from their values at
the cell's point. Both are read off the public ``encode`` map of the
formula (dpstats/design/matrix.py, ``Variables``) at points of the cell's
box, never from the rows.

Along an axis with a spread (a numeric bin of width ``h > 0``; not a level,
not a whole-number cell, whose rows sit at its centre, and not a bound's
cell, a point: dpstats/mechanisms/histogram/layout.py) a row's normalised
position is ``tau = 2 (x - c) / h`` in [-1, 1], ``c`` the bin's centre.
Every function ``phi`` of the cell's variables (the response, each design
column) is modelled over the box by its secant quadratic in ``tau``::

    phi(c + tau h / 2) ~ phi(c) + sum_a G_a tau_a + 1/2 sum_a K_aa tau_a^2 + sum_{a<b} K_ab tau_a tau_b

with ``G_a = (phi(c + h_a e_a / 2) - phi(c - h_a e_a / 2)) / 2``,
``K_aa = phi(c + h_a e_a / 2) + phi(c - h_a e_a / 2) - 2 phi(c)`` and
``K_ab = (phi(++) - phi(+-) - phi(-+) + phi(--)) / 4`` over the corners of
the ``(a, b)`` face through the centre. It is exact for every term of degree
at most two in each cell's variables (``x``, ``I(x**2)``, ``x:z``, a dummy,
a log held on its own scale, dpstats/frontend/axes.py) and interpolates any
other smooth term across the cell (a cubic's third-order remainder is a
sixth of its third derivative times ``(h / 2)^3`` per cell, beside the
quadratic's terms of order ``h`` and ``h^2``).

Which pairs of axes interact is a fact of the formula: the mixed differences
are computed for the pairs whose difference is non-zero on a probe of at
most ``PROBE_CELLS`` of the cells (with a spread along both axes), so that a
formula without interactions costs ``1 + 2 d`` evaluations of ``encode``
for d axes, not ``O(d^2)``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .cell_means import Encode

PROBE_CELLS = 512
"""The most cells on which a pair of axes is checked for an interaction (module docstring)."""
INTERACTION_TOLERANCE = 1e-9
"""A mixed difference below this, relative to the function's size, is no interaction."""


@dataclass(frozen=True)
class CellModels:
    """The secant quadratics of the response and design columns over every cell (module docstring).

    Arrays are cells x axes (or pairs) x (1 + p): the response first, then the design's columns.
    ``pairs`` lists the interacting pairs of axes (indices into ``axes``), the planes of ``mixed``.
    """

    axes: tuple[str, ...]
    gradient: np.ndarray
    curvature: np.ndarray
    pairs: tuple[tuple[int, int], ...]
    mixed: np.ndarray

    @property
    def finite(self) -> bool:
        """Whether every coefficient is finite (a transform undefined at a cell's edge makes one infinite)."""
        return all(bool(np.isfinite(a).all()) for a in (self.gradient, self.curvature, self.mixed))


def cell_models(
    encode: Encode, centres: pd.DataFrame, axes: Sequence[str], half: Mapping[str, np.ndarray]
) -> CellModels:
    """The quadratics over the cells whose ``centres`` are given, along ``axes`` with half-widths ``half``
    (one per cell and axis; 0 where a cell has no spread along that axis)."""
    steps = [{}] + [{a: sign} for a in axes for sign in (1.0, -1.0)]
    centre, *moved = _at(encode, [_shifted(centres, half, step) for step in steps])
    empty = np.zeros((len(centres), 0, centre.shape[1]))
    ups, downs = moved[::2], moved[1::2]
    gradient = np.stack([(u - d) / 2.0 for u, d in zip(ups, downs, strict=True)], axis=1) if axes else empty
    curvature = np.stack([u + d - 2.0 * centre for u, d in zip(ups, downs, strict=True)], axis=1) if axes else empty
    candidates = [
        (i, j) for i, j in itertools.combinations(range(len(axes)), 2) if _spread(half, axes[i], axes[j]).size
    ]
    probes = [_probe(half, axes[i], axes[j]) for i, j in candidates]
    faces = [
        (centres.iloc[rows].reset_index(drop=True), {a: h[rows] for a, h in half.items()}, axes[i], axes[j])
        for (i, j), rows in zip(candidates, probes, strict=True)
    ]
    pairs = tuple(
        pair
        for pair, rows, difference in zip(candidates, probes, _mixed(encode, faces), strict=True)
        if np.any(np.abs(difference) > INTERACTION_TOLERANCE * (1.0 + np.abs(centre[rows])))
    )
    mixed = _mixed(encode, [(centres, half, axes[i], axes[j]) for i, j in pairs])
    return CellModels(tuple(axes), gradient, curvature, pairs, np.stack(mixed, axis=1) if mixed else empty)


def _at(encode: Encode, frames: Sequence[pd.DataFrame]) -> list[np.ndarray]:
    """The response and design columns (rows x (1 + p)) at the rows of every frame, in one call of ``encode``."""
    if not frames:
        return []
    y, X = encode(pd.concat(frames, ignore_index=True))
    return np.split(np.column_stack([y, X]), np.cumsum([len(frame) for frame in frames])[:-1])


def _spread(half: Mapping[str, np.ndarray], a: str, b: str) -> np.ndarray:
    """The cells with a spread along both ``a`` and ``b``."""
    return np.flatnonzero((half[a] > 0) & (half[b] > 0))


def _probe(half: Mapping[str, np.ndarray], a: str, b: str) -> np.ndarray:
    """At most ``PROBE_CELLS`` of the cells spread along ``a`` and ``b``, evenly spaced."""
    spread = _spread(half, a, b)
    return spread[np.linspace(0, spread.size - 1, min(spread.size, PROBE_CELLS)).astype(int)]


def _shifted(frame: pd.DataFrame, half: Mapping[str, np.ndarray], steps: Mapping[str, float]) -> pd.DataFrame:
    """``frame`` moved by ``sign`` half-widths along each named axis."""
    out = frame.copy()
    for name, sign in steps.items():
        out[name] = out[name].to_numpy(dtype=float) + sign * half[name]
    return out


def _mixed(
    encode: Encode, faces: Sequence[tuple[pd.DataFrame, Mapping[str, np.ndarray], str, str]]
) -> list[np.ndarray]:
    """``K_ab`` at every row of each ``(frame, half, a, b)``: the mixed difference over the corners of the
    ``(a, b)`` face, every face in one call of ``encode``."""
    corners = list(itertools.product((1.0, -1.0), repeat=2))
    values = _at(encode, [_shifted(frame, half, {a: s, b: t}) for frame, half, a, b in faces for s, t in corners])
    return [(pp - pm - mp + mm) / 4.0 for pp, pm, mp, mm in zip(*[iter(values)] * 4, strict=True)]

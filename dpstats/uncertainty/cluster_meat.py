"""The sandwich's meat summed by unit, for standard errors clustered by unit (CR1), and its sensitivity.

With the privacy unit a unit of at most k rows (dpstats/design/units.py), the
cluster-robust covariance of least squares (Liang & Zeger 1986; CR1 in
Cameron & Miller's terms) replaces the meat ``sum_i r_i^2 w_i w_i'`` of
dpstats/uncertainty/sandwich.py by

    M = sum_g s_g s_g',    s_g = sum_{i in unit g} r_i w_i,

and multiplies ``B^{-1} M B^{-1}`` by ``G/(G - 1) (n - 1)/(n - p)`` (G units,
n rows, p columns; :func:`~dpstats.uncertainty.sandwich.hc_covariance` with
``clusters=G``).

Sensitivity at the unit level. Every row lies in the box ``bounds`` and its
residual is clipped to ``[-R, R]``. Neighbours differ in the rows of one unit,
which changes that unit's term only, so each entry of M moves by at most the
width of the set of values a unit's ``s_gj s_gl`` can take, and a weighted
L1 sensitivity is the weighted sum of the widths (``sandwich.release_meat_sums``,
given these widths). The set:

* every ``r w`` with ``|r| <= R`` and w in the box lies in ``R C``, where
  ``C = conv(box u -box)`` is convex, symmetric and holds 0;
* a sum of at most k such points lies in ``k R C``: ``s_g`` does;
* so ``s_gj s_gl`` lies in ``k^2 R^2`` times the range of ``z_j z_l`` over the
  projection of C on the coordinates (j, l), the convex hull of the rectangle
  of the two columns' bounds and its reflection through 0. ``z_j z_l`` is
  convex along (1, 1) and concave along (1, -1), so its extremes over that
  polygon lie on its boundary, made of segments between two of the eight
  points ``+-corner``; on a segment it is a quadratic, extreme at an end or at
  its stationary point (:func:`hull_product_range`). On the diagonal the range
  is ``[0, (k R m_j)^2]`` with ``m_j = max(|lo_j|, |hi_j|)`` (:func:`unit_widths`).

The second bound of ``release_meat_sums`` (one-hot blocks, ``sandwich.RowNorms``)
holds for a unit's score as for one row's with R replaced by k R: with t the
non-intercept part of ``s_g``, ``|s_g0| <= k R``, ``||t||_1 <= k R l1`` and
``||t||_2^2 <= k^2 R^2 l2sq`` by the triangle inequality.

A meat clustered by units of k rows thus costs about k^2 times the noise of one
row's, against k times for the row-level meat under group privacy.
"""

from __future__ import annotations

import itertools

import numpy as np

from .sandwich import upper_triangle


def cluster_meat(W: np.ndarray, residuals: np.ndarray, codes: np.ndarray, count: int) -> np.ndarray:
    """The upper triangle of ``sum_g s_g s_g'``, ``s_g`` the sum of ``r_i w_i`` over unit g's rows."""
    sums = np.zeros((count, W.shape[1]))
    np.add.at(sums, codes, W * residuals[:, None])
    return upper_triangle(sums.T @ sums)


def _segment_range(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """The range of ``z_0 z_1`` on the segment from the point ``a`` to ``b`` (2-vectors)."""
    d = b - a
    values = [a[0] * a[1], b[0] * b[1]]
    curvature = d[0] * d[1]
    if curvature != 0.0:
        t = -(a[0] * d[1] + a[1] * d[0]) / (2.0 * curvature)
        if 0.0 < t < 1.0:
            values.append((a[0] + t * d[0]) * (a[1] + t * d[1]))
    return min(values), max(values)


def hull_product_range(first: tuple[float, float], second: tuple[float, float]) -> tuple[float, float]:
    """The range of ``z_0 z_1`` over the convex hull of the rectangle ``first x second`` and its reflection
    through 0 (module docstring)."""
    corners = np.array(list(itertools.product(first, second)), dtype=float)
    points = np.unique(np.vstack([corners, -corners]), axis=0)
    ranges = [_segment_range(a, b) for a, b in itertools.combinations_with_replacement(points, 2)]
    return min(r[0] for r in ranges), max(r[1] for r in ranges)


def unit_widths(bounds: np.ndarray, residual_bound: float, max_rows: int) -> np.ndarray:
    """How far one unit of at most ``max_rows`` rows can move each upper-triangle entry of M (module docstring)."""
    bounds = np.asarray(bounds, dtype=float)
    reach = (max_rows * float(residual_bound)) ** 2
    widths = []
    for j, k in zip(*np.triu_indices(bounds.shape[0]), strict=True):
        if j == k:
            widths.append(float(np.abs(bounds[j]).max()) ** 2)
        else:
            lo, hi = hull_product_range(tuple(bounds[j]), tuple(bounds[k]))
            widths.append(hi - lo)
    return reach * np.array(widths)

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
residual is clipped to ``[-R, R]``; let ``m_j = max(|lo_j|, |hi_j|)``. A unit
of at most k rows has ``|s_gj| <= k R m_j``, so its term's diagonal entry
``s_gj^2`` lies in ``[0, (k R m_j)^2]`` and an off-diagonal entry ``s_gj s_gl``
in ``[-k^2 R^2 m_j m_l, k^2 R^2 m_j m_l]``. Neighbours differ in the rows of one
unit, which changes that unit's term only: each entry of M moves by at most
its interval's width (:func:`unit_widths`), and a weighted L1 sensitivity is
the weighted sum of the widths, as for the row-level meat
(``sandwich.release_meat_sums``, given these widths). The widths are k^2
times those of one row's term wherever a row's product range is symmetric: a
meat clustered by units of k rows costs k^2 times the noise of one row's,
against k times for the row-level meat under group privacy.
"""

from __future__ import annotations

import numpy as np

from .sandwich import upper_triangle


def cluster_meat(W: np.ndarray, residuals: np.ndarray, codes: np.ndarray, count: int) -> np.ndarray:
    """The upper triangle of ``sum_g s_g s_g'``, ``s_g`` the sum of ``r_i w_i`` over unit g's rows."""
    sums = np.zeros((count, W.shape[1]))
    np.add.at(sums, codes, W * residuals[:, None])
    return upper_triangle(sums.T @ sums)


def unit_widths(bounds: np.ndarray, residual_bound: float, max_rows: int) -> np.ndarray:
    """How far one unit of at most ``max_rows`` rows can move each upper-triangle entry of M (module docstring)."""
    reach = max_rows * float(residual_bound) * np.abs(np.asarray(bounds, dtype=float)).max(axis=1)
    rows, cols = np.triu_indices(reach.size)
    return np.where(rows == cols, 1.0, 2.0) * reach[rows] * reach[cols]

"""The scaled problem: every row of the design inside the unit L2 ball, from the declared bounds only.

Objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011, section 3,
assumption ``||x_i|| <= 1``) needs each row's regressors in the unit ball. The
map is linear in the columns after a public shift, decided from the declared
bounds and the formula's shape, never from the rows:

* with an intercept, every column outside a one-hot block is centred on the
  midpoint of its bounds and divided by its half-width, so it lies in [-1, 1]
  (an exact reparametrisation: the intercept absorbs the shift, and the linear
  index ``eta = x'theta`` of every row is unchanged); without one the columns
  are only divided by their largest ``|bound|`` (a shift would change the model);
* the columns of a one-hot block (``design.one_hot_blocks``: at most one of
  them is non-zero in any row) are divided by their largest ``|bound|``, and
  the block counts once;
* the whole row is divided by ``s = sqrt(k)``, k the number of parts (the
  intercept, each other column, each block), each of which has ``|.| <= 1``,
  so that ``||x|| <= 1`` on the whole declared box.

A fit ``f`` on the scaled rows is the fit ``theta = A f`` in the user's units
(:meth:`RowScale.to_user`): the index ``x_scaled' f`` equals ``x' A f``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...design.matrix import Design


@dataclass(frozen=True)
class RowScale:
    """``x_scaled = (x - shift) * factor``, with ``||x_scaled|| <= 1`` on the declared box (module docstring)."""

    shift: np.ndarray
    factor: np.ndarray
    intercept_index: int | None
    blocks: tuple[tuple[int, ...], ...]

    @classmethod
    def from_design(cls, design: Design) -> RowScale:
        """From the declared (derived) bounds; raises if one is missing, infinite or of zero width."""
        bounds = design.x_bounds
        if bounds is None or not np.all(np.isfinite(bounds)):
            raise ValueError(
                "method='objective' needs finite bounds for every regressor: declare bounds=... "
                "(the rows must lie in the unit ball of the scaled problem)"
            )
        bounds = np.asarray(bounds, dtype=float)
        lo, hi = bounds[:, 0], bounds[:, 1]
        icpt = design.intercept_index
        in_block = {j for block in design.one_hot_blocks for j in block}
        p = bounds.shape[0]
        shift, half = np.zeros(p), np.maximum(np.abs(lo), np.abs(hi))
        for j in range(p):
            if j == icpt:
                half[j] = 1.0
            elif icpt is not None and j not in in_block:
                shift[j], half[j] = (lo[j] + hi[j]) / 2.0, (hi[j] - lo[j]) / 2.0
        if np.any(half <= 0):
            raise ValueError("bounds: every design column needs bounds of positive width")
        parts = p - len(in_block) + len(design.one_hot_blocks)
        return cls(shift, 1.0 / (half * np.sqrt(parts)), icpt, tuple(design.one_hot_blocks))

    def transform(self, X: np.ndarray) -> np.ndarray:
        """The scaled rows (a row-wise map: free)."""
        return (np.asarray(X, dtype=float) - self.shift) * self.factor

    def column_bounds(self, x_bounds: np.ndarray) -> np.ndarray:
        """Bounds of the scaled columns (p x 2)."""
        return (np.asarray(x_bounds, dtype=float) - self.shift[:, None]) * self.factor[:, None]

    def same_block(self, j: int, k: int) -> bool:
        """Whether columns j != k belong to one one-hot block (then ``x_j x_k = 0`` in every row)."""
        return j != k and any(j in block and k in block for block in self.blocks)

    @property
    def to_user(self) -> np.ndarray:
        """``A`` with ``theta = A f``: the slopes ``factor_j f_j``; the intercept ``factor_0 f_0 - sum_j shift_j
        theta_j``."""
        A = np.diag(self.factor)
        if self.intercept_index is not None:
            A[self.intercept_index] -= self.shift @ A
        return A

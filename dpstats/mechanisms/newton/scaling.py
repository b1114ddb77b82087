"""The design on the box [-1, 1]: each non-intercept column centred at its bounds' midpoint and divided by
their half-width (public constants), with the exact map of the coefficients back to the user's units."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...design.matrix import Design


@dataclass(frozen=True)
class BoxScale:
    """``x~_k = (x_k - centre_k) / half_k`` for every column but the intercept (centre 0 without an intercept,
    so that the model keeps its span)."""

    centre: np.ndarray
    half: np.ndarray
    intercept: int | None

    @classmethod
    def of(cls, design: Design) -> BoxScale:
        """From the declared bounds only."""
        bounds = np.asarray(design.x_bounds, dtype=float)
        centre = 0.5 * (bounds[:, 0] + bounds[:, 1])
        half = 0.5 * (bounds[:, 1] - bounds[:, 0])
        if design.intercept_index is None:
            half = np.max(np.abs(bounds), axis=1)
            centre = np.zeros_like(centre)
        else:
            centre[design.intercept_index], half[design.intercept_index] = 0.0, 1.0
        return cls(centre, np.where(half > 0, half, 1.0), design.intercept_index)

    def rows(self, X: np.ndarray) -> np.ndarray:
        """The scaled rows, every entry in [-1, 1]."""
        return np.clip((X - self.centre) / self.half, -1.0, 1.0)

    def jacobian(self) -> np.ndarray:
        """``J`` with ``theta_user = J theta_scaled`` (the index ``x'theta`` unchanged)."""
        J = np.diag(1.0 / self.half)
        if self.intercept is not None:
            J[self.intercept, :] -= self.centre / self.half
            J[self.intercept, self.intercept] = 1.0
        return J

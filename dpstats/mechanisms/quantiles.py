"""What every quantile-regression mechanism shares: the validation of the quantile ``q`` (public input, checked
before any data are read) and Koenker & Bassett's check function."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np
import pandas as pd


def check_quantile(q: object) -> float:
    """One quantile: a number strictly between 0 and 1 (every quantile-regression mechanism checks it)."""
    if isinstance(q, bool | np.bool_) or not isinstance(q, numbers.Real) or not 0.0 < float(q) < 1.0:
        raise ValueError("q must be a number in (0, 1) or a list of such numbers")
    return float(q)


def check_quantiles(q: object) -> float | tuple[float, ...]:
    """``q`` as a float, or as a tuple of distinct floats in (0, 1) (order kept)."""
    if isinstance(q, Sequence | np.ndarray | pd.Series) and not isinstance(q, str | bytes):
        values = tuple(check_quantile(v) for v in np.asarray(q, dtype=object).ravel())
        if not values:
            raise ValueError("q must not be an empty list")
        if len(set(values)) != len(values):
            raise ValueError("q has duplicated quantiles; each quantile is fitted once")
        return values[0] if len(values) == 1 else values
    return check_quantile(q)


def check_function(residuals: np.ndarray, q: float) -> np.ndarray:
    """Koenker & Bassett's ``rho_q(u) = u (q - 1(u < 0))``, elementwise."""
    return residuals * (q - (residuals < 0))

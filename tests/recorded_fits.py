"""A memo of pandas fits with their noisy values (dpstats/privacy/noise.py's record), shared by the Dask tests that
compare a Dask release with the pandas release of the same data."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from dpstats.privacy import noise

FitOne = Callable[[str, str, str, pd.DataFrame], object]


def recorded_fits(fit_one: FitOne, data: pd.DataFrame) -> Callable[[str, str, str], tuple]:
    """``fit(kind, method, formula)``: ``fit_one``'s result on ``data`` and its noisy values, each computed once."""
    fits: dict[tuple[str, str, str], tuple] = {}

    def fit(kind: str, method: str, formula: str) -> tuple:
        if (kind, method, formula) not in fits:
            with noise.recording() as records:
                fits[kind, method, formula] = (fit_one(kind, method, formula, data), records)
        return fits[kind, method, formula]

    return fit

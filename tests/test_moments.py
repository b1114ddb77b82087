"""Moments merged over chunks of rows (dpstats/design/moments.py) equal the moments of all the rows.

Deterministic (statsmodels' fair data, fixed splits): no false failures.
"""

from __future__ import annotations

import functools
import operator

import numpy as np
import pandas as pd
import pytest

from dpstats.design.moments import Moments


@pytest.mark.parametrize("cuts", [(), (0,), (1, 2), (100, 100, 3000), (6365,)])
def test_merged_chunks_equal_the_whole(fair: pd.DataFrame, cuts: tuple[int, ...]) -> None:
    Z = fair[["affairs", "yrs_married", "age", "educ"]].to_numpy() + 1e6  # large means: the centring matters
    whole = Moments.of(Z)
    merged = functools.reduce(operator.add, (Moments.of(chunk) for chunk in np.split(Z, list(cuts))))
    assert merged.n == whole.n == Z.shape[0]
    np.testing.assert_allclose(merged.mean, whole.mean, rtol=1e-14)
    np.testing.assert_allclose(merged.comoment, whole.comoment, rtol=1e-9)
    centred = Z - Z.mean(axis=0)
    np.testing.assert_allclose(whole.comoment, centred.T @ centred, rtol=1e-12)

"""Shared fixtures: the public data sets shipped with statsmodels, loaded once per session.

Tests must not modify them in place (take a ``.copy()`` first).
"""

from __future__ import annotations

import pandas as pd
import pytest
import statsmodels.api as sm

ENGEL_BOUNDS = {"income": (0.0, 5000.0), "foodexp": (0.0, 2500.0)}
"""Public bounds for statsmodels' engel data (Belgian households, 1857): the README's."""


@pytest.fixture(scope="session")
def engel() -> pd.DataFrame:
    """statsmodels' engel data: 235 households, income and food expenditure."""
    return sm.datasets.engel.load_pandas().data


@pytest.fixture(scope="session")
def grunfeld() -> pd.DataFrame:
    """statsmodels' Grunfeld investment panel (11 firms, 1935-1954)."""
    return sm.datasets.grunfeld.load_pandas().data


@pytest.fixture(scope="session")
def fair() -> pd.DataFrame:
    """statsmodels' fair data: 6,366 women's affairs survey (Fair 1978), with a religiousness factor."""
    return sm.datasets.fair.load_pandas().data

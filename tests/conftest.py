"""Shared fixtures: the public data sets shipped with statsmodels, loaded once per session, and a Dask cluster.

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


@pytest.fixture(scope="session")
def dask_client():
    """A distributed.LocalCluster of two worker processes (one thread each), started once for the Dask tests."""
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        yield client

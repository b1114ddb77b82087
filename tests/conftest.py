"""Shared fixtures: the public data sets shipped with statsmodels, loaded once per session, a Dask cluster per
module, and fewer bootstrap replicates where their number cannot matter; and the order the modules run in.

Tests must not modify them in place (take a ``.copy()`` first).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator

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


@pytest.fixture(scope="module")
def dask_client():
    """A distributed.LocalCluster of two worker processes (one thread each), for one module's Dask tests.

    Closed when the module's tests are done: its idle workers each took about a fifth of a core for the
    rest of a session-scoped run (their event loops and heartbeats), on both xdist workers.
    """
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        yield client


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules with a ``slow`` test run first, each module's tests still together and in order.

    pytest-xdist hands tests out in this order, so the run ends on short tests that the two workers
    share evenly, rather than on a vignette or an audit that keeps one worker busy while the other idles.
    Modules stay contiguous so that their module-scoped fixtures (an R tarball, a Dask cluster) are set
    up once per worker.
    """
    slow_modules = {item.module.__name__ for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.module.__name__ not in slow_modules)


FEW_REPLICATES = 100
"""Bootstrap replicates per fit under :func:`few_replicates` (the mechanisms draw 1,000).

The replicates are post-processing of the releases, drawn by the same
vectorised code whatever their number (at least ``MIN_REPLICATES``,
dpstats/uncertainty/intervals.py, so the intervals are computed as usual). Properties
that do not depend on it -- the same outcome on neighbours, a replay's
sensitivities and its check that D and D' give the same output once the
noisy releases are forced -- are tested with fewer: at 1,000 they took half
of every small fit's time. Coverage tests keep the mechanisms' own number.
"""

FAMILIES = ("gradient", "histogram", "kng", "noisystats", "theilsen", "tukey")


def _patch_replicates(patch: pytest.MonkeyPatch) -> None:
    """Every family's bootstrap draws :data:`FEW_REPLICATES` (imported here, not at collection: see
    tests/test_architecture.py's lazy registry)."""
    for family in FAMILIES:
        patch.setattr(importlib.import_module(f"dpstats.mechanisms.{family}.inference"), "REPLICATES", FEW_REPLICATES)


@pytest.fixture
def few_replicates(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test's fits draw :data:`FEW_REPLICATES` bootstrap replicates."""
    _patch_replicates(monkeypatch)


@pytest.fixture(scope="module")
def few_replicates_in_module() -> Iterator[None]:
    """The module's fits draw :data:`FEW_REPLICATES` bootstrap replicates."""
    with pytest.MonkeyPatch.context() as patch:
        _patch_replicates(patch)
        yield

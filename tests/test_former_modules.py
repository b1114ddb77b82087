"""Results pickled by dpstats 0.1 (the flat layout) load with today's classes (dpstats/former_modules.py).

The pickles in tests/data/pickled_0_1/ were written at commit 3e6f0f7 by make_pickles.py there: they
name ``dpstats.results``, ``dpstats.quantile_fits``, ``dpstats.grouped_results``, ``dpstats.privacy``
and ``dpstats.formula``, which are now subpackages or modules elsewhere.
"""

from __future__ import annotations

import importlib
import pickle
import pickletools
from pathlib import Path

import numpy as np
import pytest

import dpstats
from dpstats.former_modules import NEW_HOMES
from dpstats.groups.grouped_results import DPGroupedResults

PICKLES = Path(__file__).resolve().parent / "data" / "pickled_0_1"
KINDS = {
    "ols_noisystats": dpstats.DPRegressionResults,
    "ols_auto": dpstats.DPRegressionResults,
    "quantreg_histogram": dpstats.DPRegressionResults,
    "quantreg_several": dpstats.DPQuantileFits,
    "grouped": DPGroupedResults,
}


def _named_modules(blob: bytes) -> set[str]:
    """The dpstats modules a pickle names (the strings just before each STACK_GLOBAL's class name)."""
    strings = [arg for op, arg, _ in pickletools.genops(blob) if isinstance(arg, str)]
    return {s for s in strings if s.startswith("dpstats.")}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_a_result_pickled_by_the_flat_layout_loads_as_todays_class(name: str) -> None:
    blob = (PICKLES / f"{name}.pkl").read_bytes()
    assert _named_modules(blob) & {"dpstats.results", "dpstats.quantile_fits", "dpstats.grouped_results"}
    res = pickle.loads(blob)
    assert type(res) is KINDS[name]
    assert np.isfinite(np.asarray(res.params, dtype=float)).any()  # the grouped fit's group "lo" failed
    assert res.privacy.eps == pytest.approx(1.0)
    assert "estimate" in res.tidy().columns
    if name != "grouped":
        assert "Privacy" in str(res)


@pytest.mark.parametrize("former", sorted(NEW_HOMES))
def test_a_former_module_forwards_to_its_new_home(former: str) -> None:
    module = importlib.import_module(former)
    home = importlib.import_module(NEW_HOMES[former])
    public = [n for n in vars(home) if not n.startswith("_")]
    assert public and all(getattr(module, n) is getattr(home, n) for n in public)


def test_an_unknown_name_of_a_former_module_raises_attribute_error() -> None:
    module = importlib.import_module("dpstats.quantile_fits")
    with pytest.raises(AttributeError):
        module.not_a_name  # noqa: B018

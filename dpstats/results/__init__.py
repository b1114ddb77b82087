"""Results of one call, built once from a release (post-processing only): one fit
(regression.py, ``DPRegressionResults``) and several quantiles of one call (quantile_fits.py).

The classes are named here too, where dpstats 0.1 defined them (``dpstats.results``), so that
results pickled by it still load; they are imported when first asked for.
"""

from __future__ import annotations

import importlib
from typing import Any

_FORMER = {"DPRegressionResults", "FTest"}


def __getattr__(name: str) -> Any:
    if name in _FORMER:
        return getattr(importlib.import_module(".regression", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

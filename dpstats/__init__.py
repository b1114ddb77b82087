"""dpstats: differentially private regression for applied economists.

``dp_ols("y ~ x", data, eps=1, bounds={...})`` and ``dp_quantreg("y ~ x", data,
q=0.5, eps=1, bounds={...})`` return a results object with statsmodels names,
broom-style frames, summaries and the privacy spent; ``PrivacyBudget`` tracks
a project's spending across calls (``budget=``).
Submodules load on first use, so ``import dpstats`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "dp_ols": "dpstats.api",
    "dp_quantreg": "dpstats.api",
    "DPQuantileFits": "dpstats.quantile_fits",
    "noisy_histogram": "dpstats.histogram",
    "inspect": "dpstats.curator",
    "compare_methods": "dpstats.planning.comparison",
    "table": "dpstats.tables",
    "coefplot": "dpstats.plots",
    "tradeoff_plot": "dpstats.plots",
    "DPRegressionResults": "dpstats.results",
    "FTest": "dpstats.results",
    "Summary": "dpstats.render",
    "PrivacySpent": "dpstats.privacy",
    "PrivacyBudget": "dpstats.budget",
    "BudgetExceeded": "dpstats.budget",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'dpstats' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)

"""dpstats: differentially private regression for applied economists.

``dp_ols("y ~ x", data, eps=1, bounds={...})`` and ``dp_quantreg("y ~ x", data,
q=0.5, eps=1, bounds={...})``, ``dp_logit`` and ``dp_probit`` return a results object with statsmodels names,
broom-style frames, summaries and the privacy spent; ``PrivacyBudget`` tracks
a project's spending across calls (``budget=``).
Submodules load on first use, so ``import dpstats`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import Any

from .former_modules import install

install()  # results pickled by dpstats 0.1 name modules of its flat layout

__version__ = "0.1.0"

_LAZY = {
    "dp_ols": "dpstats.api.estimators",
    "dp_quantreg": "dpstats.api.estimators",
    "dp_logit": "dpstats.api.binary",
    "dp_probit": "dpstats.api.binary",
    "DPQuantileFits": "dpstats.results.quantile_fits",
    "noisy_histogram": "dpstats.api.histogram_release",
    "inspect": "dpstats.frontend.curator",
    "compare_methods": "dpstats.planning.comparison",
    "table": "dpstats.report.tables",
    "coefplot": "dpstats.report.plots",
    "tradeoff_plot": "dpstats.report.plots",
    "DPRegressionResults": "dpstats.results.regression",
    "FTest": "dpstats.results.regression",
    "Summary": "dpstats.output.render",
    "PrivacySpent": "dpstats.privacy.accounting",
    "PrivacyBudget": "dpstats.privacy.budget",
    "BudgetExceeded": "dpstats.privacy.budget",
    "RefusedBeforeSpending": "dpstats.planning.refusal",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'dpstats' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)

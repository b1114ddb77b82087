"""The privacy-utility trade-off of a planned call: each mechanism's predicted error over a range of eps.

The predictions of dpstats/planning/error_model.py (the error model behind
``method="auto"`` and :func:`~dpstats.planning.comparison.compare_methods`)
at every eps of a grid, with the mechanism auto would choose there. Public
facts only (the formula, n, the declarations): no data, no budget.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..privacy.accounting import check_eps
from .candidates import label_of
from .comparison import plan_facts
from .error_model import error_unit
from .selection import choose

EPS_CURVE = tuple(float(e) for e in np.logspace(-1, 1, 21))
"""The default grid: eps from 0.1 to 10 (the calibrated range of error_table.json), ten points a decade."""


def error_curve(
    formula: str,
    n: int,
    bounds: Mapping[str, Sequence[float]] | None = None,
    levels: Mapping[str, Sequence] | None = None,
    *,
    eps: Sequence[float] = EPS_CURVE,
    estimator: str = "ols",
    delta: float = 0.0,
) -> pd.DataFrame:
    """One row per eps of the grid and mechanism auto may choose there.

    Columns: ``eps``, ``method``, ``failure`` (predicted failure rate),
    ``error`` (the predicted error of the first regressor's coefficient in a
    typical scenario, in the user's units), ``error / SE`` (the same in
    standard errors of the non-private fit) and ``auto`` (whether auto
    would choose it at that eps). Above eps = 10, the end of the calibrated
    grid, the predictions stay at their values there (error_model.py).
    """
    grid = [check_eps(float(e)) for e in eps]
    if not grid:
        raise ValueError("eps must hold at least one value")
    facts = plan_facts(formula, n, grid[0], bounds, levels, estimator, delta)
    unit = error_unit(facts)
    rows = []
    for value in grid:
        at = dataclasses.replace(facts, eps=value)
        try:
            choice = choose(at)
        except ValueError:  # no mechanism applies to this design: an empty curve
            continue
        chosen = [label_of(choice.method, choice.options, estimator)]
        for prediction in choice.predictions:
            rows.append(
                {
                    "eps": value,
                    "method": prediction.label,
                    "failure": prediction.failure,
                    "error": prediction.typical_dev * unit,
                    "error / SE": prediction.typical_rel,
                    "auto": bool(chosen) and prediction.label == chosen[0],
                }
            )
    return pd.DataFrame(rows, columns=["eps", "method", "failure", "error", "error / SE", "auto"])

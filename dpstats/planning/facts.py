"""The public facts of a call: everything the error model may read, and nothing the data decide."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np

from ..design.matrix import Design


@dataclass(frozen=True)
class DataSpread:
    """Released ranges, on the unit scale, of the residual standard deviation (``noise``) and of the
    regressors' mean variance (``fill``): how noisy the data are and how they fill their bounds
    (dpstats/groups/spread.py)."""

    noise: tuple[float, float]
    fill: tuple[float, float]


@dataclass(frozen=True)
class PublicFacts:
    """n, the budget and the design's shape (from the formula and the declared metadata).

    ``slopes`` counts the design's columns other than the intercept,
    ``block_sizes`` the one-hot blocks' numbers of columns (categorical terms,
    dpstats/frontend/formula.py), ``continuous`` the slopes outside them, ``variables``
    the formula's regressor variables (what a histogram bins). ``unit`` holds,
    per slope, the factor from the unit scale to the user's units (the width
    of the response's bounds over that column's), NaN where a bound is missing.
    ``se_share`` is the user's (None: each mechanism's default); with it the
    error model knows the budget each mechanism's point estimate gets.
    ``dummy`` holds, per slope, whether it is in a one-hot block.
    ``unit_rows`` is the call's ``max_rows`` when its privacy unit is every row
    of one unit (dpstats/design/units.py), 1 for a row: one unit then moves up
    to that many rows, and a candidate's error is read at ``eps / unit_rows``
    unless its batches hold whole units (``Candidate.whole_units``); ``units``
    is then the number of units (public, as n). ``side_by_side``: the fit is one
    of a grouped call's, read beside the others (auto ranks by the tail,
    dpstats/planning/selection.py); ``spread``: how the data fill their bounds and how noisy they are,
    released for it (dpstats/groups/spread.py), None when not released. ``signature``: the
    design's public structure (:func:`design_signature`), by which the error model finds the real
    designs it was calibrated on (dpstats/planning/tables.py).
    """

    n: int
    eps: float
    delta: float
    estimator: str
    intercept: bool
    slopes: int
    block_sizes: tuple[int, ...]
    variables: int
    unit: tuple[float, ...]
    term_names: tuple[str, ...]
    se_share: float | None = None
    dummy: tuple[bool, ...] = ()
    unit_rows: int = 1
    units: int | None = None
    side_by_side: bool = False
    spread: DataSpread | None = None
    signature: str = ""

    @property
    def continuous(self) -> int:
        """Slope columns outside the one-hot blocks."""
        return self.slopes - sum(self.block_sizes)

    @property
    def structured(self) -> bool:
        """Whether NoisyStats releases sums by level (dpstats/mechanisms/noisystats/structured.py)."""
        return self.intercept and bool(self.block_sizes)

    @classmethod
    def of(cls, design: Design, eps: float, delta: float, estimator: str, se_share: float | None = None) -> PublicFacts:
        """The facts of a design built by the formula front end (its shape and bounds are public)."""
        slopes = design.slope_indices
        unit = np.full(slopes.size, np.nan)
        if design.x_bounds is not None and design.y_bounds is not None:
            widths = design.x_bounds[slopes, 1] - design.x_bounds[slopes, 0]
            with np.errstate(divide="ignore", invalid="ignore"):
                unit = (design.y_bounds[1] - design.y_bounds[0]) / widths
        blocked = {j for block in design.one_hot_blocks for j in block}
        variables = design.variables
        count = slopes.size if variables is None else len(set(variables.frame.columns) - set(variables.response))
        return cls(
            n=design.n,
            eps=float(eps),
            delta=float(delta),
            estimator=estimator,
            intercept=design.intercept_index is not None,
            slopes=int(slopes.size),
            block_sizes=tuple(len(b) for b in design.one_hot_blocks),
            variables=int(count),
            unit=tuple(float(u) for u in unit),
            term_names=tuple(design.term_names[j] for j in slopes),
            se_share=se_share,
            dummy=tuple(int(j) in blocked for j in slopes),
            unit_rows=1 if design.units is None else design.units.max_rows,
            units=None if design.units is None else design.units.count,
            signature=design_signature(design, estimator),
        )


def design_signature(design: Design, estimator: str) -> str:
    """A fingerprint of everything public that shapes a fit of ``design`` other than n and the budget: the
    estimator, the response and the terms, their bounds, the one-hot blocks, the weights' range and the
    formula's variables with their declarations. Two calls share it exactly when they run the same regression
    with the same declarations (on any rows), as a planned call (dpstats/planning/comparison.py) and the fit
    it plans do."""
    variables = design.variables
    public = {
        "estimator": estimator,
        "response": design.y_name,
        "terms": list(design.term_names),
        "y_bounds": None if design.y_bounds is None else [float(b) for b in design.y_bounds],
        "x_bounds": None if design.x_bounds is None else np.asarray(design.x_bounds, dtype=float).tolist(),
        "intercept": design.intercept_index,
        "blocks": [list(block) for block in design.one_hot_blocks],
        "weights": None if design.weight_bounds is None else [float(b) for b in design.weight_bounds],
        "variables": None
        if variables is None
        else {
            "bounds": {k: [float(b) for b in v] for k, v in sorted(variables.bounds.items())},
            "levels": {k: [str(level) for level in v] for k, v in sorted(variables.levels.items())},
            "integers": sorted(variables.integers),
            "axis": variables.response_axis,
        },
    }
    return hashlib.sha256(json.dumps(public, sort_keys=True).encode()).hexdigest()[:16]

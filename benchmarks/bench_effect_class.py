"""The class bias bounds hold over, against real data (issue 45): each regression's largest unit-scale slope.

dpstats/uncertainty/bias.py bounds a bias that depends on the true coefficients over the class of fits whose
unit-scale slopes (every non-intercept column and y mapped onto [0, 1] by their declared bounds) are at most
``EFFECT_BOUND``, in the columns NoisyStats solves in (a variable and its square preconditioned,
dpstats/mechanisms/precondition.py). This prints, per regression of benchmarks/real_regressions.py,
the largest absolute unit-scale OLS slope in those columns and in the design's own.

    python benchmarks/bench_effect_class.py
"""

from __future__ import annotations

import numpy as np
from real_regressions import REGRESSIONS

from dpstats.design.matrix import CenteredUnitScale, Design
from dpstats.frontend.formula import build_design
from dpstats.mechanisms import precondition
from dpstats.uncertainty.bias import EFFECT_BOUND


def largest_unit_slope(design: Design) -> float:
    """The largest absolute OLS slope of ``design`` on its unit scale."""
    beta = np.linalg.lstsq(design.X, design.y, rcond=None)[0]
    scale = CenteredUnitScale.from_design(design)
    return float(np.max(np.abs(beta[design.slope_indices] * scale.x_width / scale.y_width)))


def main() -> None:
    print(f"EFFECT_BOUND = {EFFECT_BOUND:g}")
    print(f"{'data':<12} {'solved':>7} {'design':>7}  preconditioned")
    for reg in REGRESSIONS:
        design, _ = build_design(reg.formula, reg.load(), reg.bounds, reg.levels, need_bounds=True, missing="raise")
        found = precondition.pairs(design)
        solved = precondition.preconditioned(design, found) if found else design
        print(f"{reg.name:<12} {largest_unit_slope(solved):>7.2f} {largest_unit_slope(design):>7.2f}  {len(found)}")


if __name__ == "__main__":
    main()

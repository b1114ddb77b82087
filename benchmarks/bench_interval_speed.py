"""What the standard errors and intervals add to a fit's time, per mechanism, at n = 10^4 (target: at most 3x).

Each method fits the symmetric design of dpstats/uncertainty/coverage.py (one regressor) and,
where it fits several, the categorical one, at eps = 1: the median wall time of
``--reps`` calls with ``se_share=0`` (the point alone; mechanisms whose standard
errors are free post-processing still compute them, and are marked) and with the
default share. The added time over the point's time must be at most 3.

    python benchmarks/bench_interval_speed.py [--reps 7] [--n 10000] [--methods noisystats ...]
"""

from __future__ import annotations

import argparse

import numpy as np
from bench_coverage import METHODS, Method
from timing import median_time

import dpstats
from dpstats.uncertainty.coverage import DESIGNS

FREE = {"histogram"}
"""Mechanisms whose standard errors cost no budget: se_share=0 still computes them."""


def _fit(method: Method, data, design, share):
    kwargs = dict(
        eps=1.0,
        bounds=design.bounds,
        levels=design.levels or None,
        method=method.method,
        delta=method.delta,
        random_state=1,
        se_share=share,
        **method.options,
    )
    if method.estimator == "quantreg":
        return dpstats.dp_quantreg(design.formula, data, q=0.5, **kwargs)
    return dpstats.dp_ols(design.formula, data, **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--methods", nargs="+", default=None)
    args = parser.parse_args()
    print(f"{'method':<17} {'design':<12} {'point, s':>9} {'with SEs, s':>12} {'added/point':>12}  target <= 3")
    for method in METHODS:
        if args.methods is not None and method.label.split()[0] not in args.methods:
            continue
        for name in ("symmetric", "categorical"):
            design = DESIGNS[name]
            if method.max_slopes is not None and design.slopes > method.max_slopes:
                continue
            data = design.draw(np.random.default_rng(0), args.n)
            point = median_time(lambda: _fit(method, data, design, 0.0), args.reps)  # noqa: B023
            full = median_time(lambda: _fit(method, data, design, None), args.reps)  # noqa: B023
            ratio = (full - point) / point
            free = method.method in FREE
            verdict = "free: both include the SEs" if free else ("PASS" if ratio <= 3 else "MISS")
            print(f"{method.label:<17} {name:<12} {point:>9.4f} {full:>12.4f} {ratio:>12.2f}  {verdict}", flush=True)


if __name__ == "__main__":
    main()

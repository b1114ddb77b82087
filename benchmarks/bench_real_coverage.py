"""Do the 95% intervals at eps = 1 cover the non-private estimate on real data with factors? (issue 14)

Every mechanism on the data and formulas of benchmarks/bench_limits.py (statsmodels' fair
data: affairs on age, years married, education and the four-level religiousness factor,
6,366 rows; engel for the mechanisms that fit one regressor), at eps = 1 with the default
``se_share``, over ``--seeds`` seeds: the share of seeds whose interval ``res.conf_int(0.05)``
covers the non-private estimate (OLS, or QuantReg at the median) for each coefficient,
among the seeds whose release did not fail (a failed release has no interval; the
failures are printed beside). Printed: the lowest share over the coefficients (target
>= 0.95), the failures, the mean time of a fit and every coefficient's share (in the
order of the fit's terms). The rows ``auto`` are what a user who
names no method gets; the rows ``histogram+ends`` declare the response's mass at its lower
bound (``bound_cells=["affairs"]``: most women in fair report no affairs, and QuantReg's
median line is 0); the row ``noisystats+repair`` is NoisyStats with ``singular="repair"``
(dpstats/mechanisms/noisystats/repair.py), which never fails.

The non-private estimate is not the interval's target (the population coefficient is):
an interval for it that is right covers the estimate at least as often as the truth
whenever the privacy noise is not negligible. Theil-Sen and Tukey target other functionals
(bench_limits.py's docstring), about a standard error from OLS on these data.

    python benchmarks/bench_real_coverage.py [--seeds 100] [--eps 1] [--methods histogram auto ...]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import statsmodels.api as sm
import statsmodels.formula.api as smf
from bench_limits import ENGEL, ENGEL_BOUNDS, FAIR, FAIR_BOUNDS, FAIR_LEVELS, ROWS

import dpstats

AUTO_ROWS = [
    ("auto", "ols", "fair", {}),
    ("auto", "quantreg", "fair", {}),
    ("auto", "ols", "engel", {}),
    ("auto", "quantreg", "engel", {}),
]
DECLARED = {"bound_cells": ["affairs"]}
"""The histogram told what a user of fair knows: most women report no affairs, so the response has a mass at
its lower bound 0 (dpstats/mechanisms/histogram/layout.py, bound cells); its rows print with "+ends"."""
OPTION_ROWS = [
    ("histogram", "ols", "fair", DECLARED),
    ("histogram", "quantreg", "fair", DECLARED),
    ("noisystats", "ols", "fair", {"singular": "repair"}),
]
"""Rows with options beyond bench_limits.py's: the declared bound cells, and NoisyStats' repair."""
SUFFIXES = {"bound_cells": "+ends", "singular": "+repair"}
"""How a row's label names its options."""

TARGET = 0.95


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--methods", nargs="+", default=None, help="only these rows' methods, e.g. histogram auto")
    args = parser.parse_args(argv)
    data = {"fair": sm.datasets.fair.load_pandas().data, "engel": sm.datasets.engel.load_pandas().data}
    setups = {"fair": (FAIR, FAIR_BOUNDS, FAIR_LEVELS), "engel": (ENGEL, ENGEL_BOUNDS, None)}
    print(f"eps = {args.eps:g}, {args.seeds} seeds: share of seeds whose 95% interval covers the non-private estimate")
    head = f"{'method':<17} {'estimator':<9} {'data':<6} {'lowest':>7} {'term':<18} {'failed':>6} {'s/fit':>6}"
    print(head + "  verdict  fitted by       every term's share")
    for method, estimator, name, options in [*ROWS, *AUTO_ROWS, *OPTION_ROWS]:
        if args.methods and method not in args.methods:
            continue
        formula, bounds, levels = setups[name]
        frame = data[name]
        if estimator == "ols":
            reference = smf.ols(formula, frame).fit().params
        else:
            reference = smf.quantreg(formula, frame).fit(q=0.5).params
        covered = np.zeros(reference.size)
        failed, picked = 0, set()
        start = time.perf_counter()
        for seed in range(args.seeds):
            common = dict(eps=args.eps, bounds=bounds, levels=levels, method=method, random_state=seed, **options)
            if estimator == "ols":
                res = dpstats.dp_ols(formula, frame, **common)
            else:
                res = dpstats.dp_quantreg(formula, frame, q=0.5, **common)
            picked.add(res.method)
            if res.failed:
                failed += 1
                continue
            ci = res.conf_int(0.05).loc[reference.index]
            covered += ((ci["lower"] <= reference) & (reference <= ci["upper"])).to_numpy()
        seconds = (time.perf_counter() - start) / args.seeds
        released = args.seeds - failed
        share = covered / released if released else np.full(covered.size, np.nan)
        worst = int(np.argmin(share)) if released else 0
        verdict = "no release" if not released else "PASS" if share[worst] >= TARGET else "MISS"
        label = method + "".join(SUFFIXES[option] for option in options if option in SUFFIXES)
        print(
            f"{label:<17} {estimator:<9} {name:<6} {share[worst]:>7.2f} {reference.index[worst][:18]:<18} "
            f"{failed:>6} {seconds:>6.2f}  {verdict}     {','.join(sorted(picked)):<15} "
            f"{' '.join(f'{v:.2f}' for v in share)}",
            flush=True,
        )


if __name__ == "__main__":
    main()

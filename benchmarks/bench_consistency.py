"""One law per fit on real regressions: is every estimate inside its own interval, and is p < 0.05 exactly when 0 is
outside the 95% interval? (issue 27)

Every mechanism that fits the design (and auto, with ``force=True`` so that it answers), at eps in ``--eps``, over
``--seeds`` seeds, on statsmodels' engel (food expenditure on income, 235 households), fair (affairs on age, years
married, education and religiousness, 6,366 women; benchmarks/bench_limits.py's declarations) and grunfeld (firm
investment on market value and capital, 220 firm-years: Grunfeld 1958), and on AER's CPS1985 (log wage on
education, experience, its square and gender, 534 workers; vignettes/01_paper_workflow.md's declarations), least
squares and, where a mechanism fits it, median regression. Printed per data set and mechanism: the coefficients
checked, the estimates outside their own 95% interval (target 0), the coefficients whose p-value and interval
disagree on 0.05 (target: at most 2% of the coefficients with a test), the coefficients without a test (z and p
NaN: no finite standard error) and the failed fits.

    python benchmarks/bench_consistency.py [--seeds 10] [--eps 0.5 1 5]
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import numpy as np
import pandas as pd
import statsmodels.api as sm
from bench_limits import ENGEL, ENGEL_BOUNDS, FAIR, FAIR_BOUNDS, FAIR_LEVELS

import dpstats

GRUNFELD = "invest ~ value + capital"
GRUNFELD_BOUNDS = {"invest": (0, 1600), "value": (0, 6500), "capital": (0, 2300)}
"""Grunfeld's firms are among the largest US manufacturers of 1935-54: investment, market value and capital
stock in millions of 1947 dollars, bounded above by General Motors' scale, below by 0."""
CPS = "np.log(wage) ~ education + experience + I(experience**2 / 100) + C(gender)"
CPS_BOUNDS = {"wage": (1, 50), "education": (0, 18), "experience": (0, 60)}
CPS_LEVELS = {"gender": ["male", "female"]}

ONE_REGRESSOR = ("theilsen", "gradient", "noisystats", "histogram", "kng", "auto")
SEVERAL = ("noisystats", "histogram", "kng", "tukey", "auto")
MEDIAN = ("histogram", "kng", "auto")
OPTIONS: dict[str, dict] = {"tukey": {"delta": 1e-6}, "kng": {"B": 8.0}, "auto": {"force": True}}


def cps1985() -> pd.DataFrame:
    """AER's CPS1985, read through rpy2 (Debian's r-cran-aer, installed by scripts/setup.sh)."""
    from dpstats import r_interop

    ro = r_interop.start_r()
    ro.r('data("CPS1985", package = "AER")')
    return r_interop.r_to_pandas(ro.r["CPS1985"])


def designs() -> list[tuple[str, str, pd.DataFrame, dict, dict | None, tuple[str, ...]]]:
    """(name, formula, data, bounds, levels, mechanisms) of each regression."""
    engel = sm.datasets.engel.load_pandas().data
    fair = sm.datasets.fair.load_pandas().data
    grunfeld = sm.datasets.grunfeld.load_pandas().data
    return [
        ("engel", ENGEL, engel, ENGEL_BOUNDS, None, ONE_REGRESSOR),
        ("fair", FAIR, fair, FAIR_BOUNDS, FAIR_LEVELS, SEVERAL),
        ("grunfeld", GRUNFELD, grunfeld, GRUNFELD_BOUNDS, None, SEVERAL),
        ("CPS1985", CPS, cps1985(), CPS_BOUNDS, CPS_LEVELS, SEVERAL),
    ]


def check(res: dpstats.DPRegressionResults) -> tuple[int, int, int, int]:
    """(coefficients, estimates outside their 95% interval, p/interval disagreements, coefficients without a test)."""
    ci = res.conf_int(0.05)
    params, p = res.params.to_numpy(), res.pvalues.to_numpy()
    lower, upper = ci["lower"].to_numpy(), ci["upper"].to_numpy()
    tested = np.isfinite(p)
    outside = int(np.sum(np.isfinite(params) & ((params < lower) | (params > upper))))
    zero_out = (lower > 0) | (upper < 0)
    disagree = int(np.sum(tested & ((p < 0.05) != zero_out)))
    return params.size, outside, disagree, int(np.sum(~tested))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--eps", type=float, nargs="+", default=[0.5, 1.0, 5.0])
    args = parser.parse_args(argv)
    print(
        f"{'data':<9} {'estimator':<9} {'method':<11} {'coefs':>6} {'outside':>8} {'p vs CI':>8} {'no test':>8} "
        f"{'failed':>7}"
    )
    totals = np.zeros(4, dtype=int)
    for name, formula, data, bounds, levels, methods in designs():
        for estimator, names in (("ols", methods), ("quantreg", MEDIAN)):
            fit: Callable = dpstats.dp_ols if estimator == "ols" else dpstats.dp_quantreg
            extra = {} if estimator == "ols" else {"q": 0.5}
            for method in names:
                counts, failed = np.zeros(4, dtype=int), 0
                for eps in args.eps:
                    for seed in range(args.seeds):
                        options = OPTIONS.get(method, {}) | {"method": method}
                        res = fit(
                            formula, data, eps=eps, bounds=bounds, levels=levels, random_state=seed, **extra, **options
                        )
                        if res.failed:
                            failed += 1
                            continue
                        counts += check(res)
                totals += counts
                print(
                    f"{name:<9} {estimator:<9} {method:<11} {counts[0]:>6} {counts[1]:>8} {counts[2]:>8} "
                    f"{counts[3]:>8} {failed:>7}",
                    flush=True,
                )
    tested = totals[0] - totals[3]
    share = 1.0 - totals[2] / tested if tested else math.nan
    print(
        f"\nall: {totals[0]} coefficients, {totals[1]} estimates outside their interval (target 0), "
        f"p < 0.05 iff 0 outside the 95% interval in {share:.2%} of the {tested} with a test (target >= 98%)"
    )


if __name__ == "__main__":
    main()

"""DP Theil-Sen standard errors: the eps -> infinity limit and the cost of the intervals.

1. Limit. At eps = 1e9 the privacy noise vanishes and the SEs should be those
   of non-private Theil-Sen. statsmodels has no Theil-Sen, so two references:
   the Monte Carlo sd of the estimates over repetitions (the target), and
   statsmodels' OLS HC1 SE scaled by the Monte Carlo ratio sd(Theil-Sen) /
   sd(OLS) (Theil-Sen's relative efficiency on the design: about
   1 / sqrt(3 / pi) = 1.02 for normal errors and uniform x, Sen 1968).
   Reported: mean SE / MC sd (target 1; the SE's own spread and the
   window's curvature bias, under 5% at mass 0.1, set the tolerance) and
   mean SE / mean HC1 SE next to the efficiency ratio.
2. Cost. Median time of a fit with and without standard errors at n = 10^4
   (se_share = 0 is the point fit alone) and the ratio (target: the
   intervals add at most 3x the point fit's time).

    python benchmarks/bench_theilsen_limits.py [--reps 200] [--sizes 1000 10000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import statsmodels.api as sm

import dpstats
from dpstats.uncertainty.coverage import DESIGNS

TERMS = ("Intercept", "x")


def limit_table(reps: int, sizes: list[int]) -> None:
    print(f"{'design':<16} {'n':>6} {'term':<10} {'SE/MCsd':>8} {'SE/HC1':>7} {'MCsd_TS/MCsd_OLS':>17}")
    for name in ("symmetric", "heteroskedastic"):
        design = DESIGNS[name]
        for n in sizes:
            ts, ols, se, hc1 = [], [], [], []
            for rep in range(reps):
                data = design.draw(np.random.default_rng(rep), n)
                res = dpstats.dp_ols(
                    design.formula, data, eps=1e9, bounds=design.bounds, method="theilsen", random_state=rep
                )
                ts.append(res.params[list(TERMS)].to_numpy())
                se.append(res.bse[list(TERMS)].to_numpy())
                fit = sm.OLS(data["y"].to_numpy(), sm.add_constant(data["x"].to_numpy())).fit(cov_type="HC1")
                ols.append(fit.params)
                hc1.append(fit.bse)
            sd_ts, sd_ols = np.std(ts, axis=0, ddof=1), np.std(ols, axis=0, ddof=1)
            for i, term in enumerate(TERMS):
                print(
                    f"{name:<16} {n:>6} {term:<10} {np.mean(se, axis=0)[i] / sd_ts[i]:>8.3f} "
                    f"{np.mean(se, axis=0)[i] / np.mean(hc1, axis=0)[i]:>7.3f} {sd_ts[i] / sd_ols[i]:>17.3f}",
                    flush=True,
                )


def timing_table(repeats: int = 7) -> None:
    design = DESIGNS["symmetric"]
    data = design.draw(np.random.default_rng(1), 10_000)
    print(f"\n{'median':<8} {'point s':>8} {'with SE s':>10} {'added / point':>14}")
    for median in ("exp", "wide", "smooth"):

        def fit(share, seed, median=median):
            start = time.perf_counter()
            dpstats.dp_ols(
                design.formula,
                data,
                eps=1.0,
                bounds=design.bounds,
                method="theilsen",
                median=median,
                random_state=seed,
                se_share=share,
            )
            return time.perf_counter() - start

        fit(0.0, 0), fit(None, 0)
        point = np.median([fit(0.0, s) for s in range(repeats)])
        full = np.median([fit(None, s) for s in range(repeats)])
        print(f"{median:<8} {point:>8.3f} {full:>10.3f} {(full - point) / point:>14.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    args = parser.parse_args()
    limit_table(args.reps, args.sizes)
    timing_table()


if __name__ == "__main__":
    main()

"""KNG median regression against statsmodels' QuantReg, timed in one process (issue: within 10x).

Data: x ~ U(-1, 1), y = -x + N(0, 1), bounds x in [-1, 1], y in [-6, 6]; eps = 1, q = 0.5,
``method="kng"`` (d = 2: its 30 d sweeps of exact line moves), timed for the point alone
(``se_share=0``) and with its standard errors (the default share; QuantReg's fit computes
its own). Median wall time of ``--reps`` fits each, after one warm-up fit.

    python benchmarks/bench_kng_vs_quantreg.py [--sizes 10000 100000] [--reps 3]
"""

from __future__ import annotations

import argparse
from functools import partial

import numpy as np
import pandas as pd
import statsmodels.api as sm
from timing import median_time

import dpstats

BOUNDS = {"x": (-1.0, 1.0), "y": (-6.0, 6.0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    head = f"{'n':>8} {'QuantReg, s':>12} {'KNG point, s':>13} {'ratio':>6} {'KNG + SEs, s':>13} {'ratio':>6}"
    print(head + "  target <= 10")
    for n in args.sizes:
        rng = np.random.default_rng(n)
        x = rng.uniform(-1, 1, n)
        y = -x + rng.normal(0, 1, n)
        data, X = pd.DataFrame({"x": x, "y": y}), sm.add_constant(x)
        quantreg = median_time(lambda: sm.QuantReg(y, X).fit(q=0.5), args.reps)  # noqa: B023
        times = []
        for share in (0.0, None):  # the point alone; with the default share of eps spent on standard errors
            call = partial(dpstats.dp_quantreg, "y ~ x", data, q=0.5, eps=1.0, bounds=BOUNDS, method="kng")
            times.append(median_time(partial(call, se_share=share), args.reps))
        point, full = (t / quantreg for t in times)
        verdict = "PASS" if full <= 10 else "point PASS" if point <= 10 else "MISS"
        print(f"{n:>8} {quantreg:>12.3f} {times[0]:>13.3f} {point:>6.1f} {times[1]:>13.3f} {full:>6.1f}  {verdict}")


if __name__ == "__main__":
    main()

"""KNG median regression against statsmodels' QuantReg, timed in one process (issue: within 10x).

Data: x ~ U(-1, 1), y = -x + N(0, 1), bounds x in [-1, 1], y in [-6, 6]; eps = 1, q = 0.5,
``method="kng"`` (d = 2: its 30 d sweeps of exact line moves), timed for the point alone
(``se_share=0``) and with its standard errors (the default share; QuantReg's fit computes
its own). Median wall time of ``--reps`` fits each, after one warm-up fit.

``--cps1988``: the real regression instead, CPS1988's median (AER through R, 28,155 rows, d = 5,
as benchmarks/bench_real_data.py declares it) at eps 1 and 5 with the default standard errors,
seeds 0 to reps - 1; each KNG fit follows a QuantReg fit (formula included), so that both see the
same load, and the ratio is of the medians.

    python benchmarks/bench_kng_vs_quantreg.py [--sizes 10000 100000] [--reps 3] [--cps1988]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial

import numpy as np
import pandas as pd
import statsmodels.api as sm
import statsmodels.formula.api as smf
from timing import median_time

import dpstats

BOUNDS = {"x": (-1.0, 1.0), "y": (-6.0, 6.0)}
CPS1988_EPS = (1.0, 5.0)


def seconds(call: Callable[[], object]) -> float:
    """Wall seconds of one ``call()``."""
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def cps1988(reps: int) -> None:
    """CPS1988's median: QuantReg and KNG at :data:`CPS1988_EPS`, interleaved, medians over ``reps`` seeds."""
    from real_regressions import REGRESSIONS

    (problem,) = [regression for regression in REGRESSIONS if regression.name == "CPS1988"]
    data = problem.load()
    numeric = data.apply(lambda column: column.astype(float) if pd.api.types.is_integer_dtype(column) else column)

    def quantreg() -> object:
        return smf.quantreg(problem.formula, numeric).fit(q=0.5)

    def kng(eps: float, seed: int) -> object:
        return dpstats.dp_quantreg(
            problem.formula,
            data,
            q=0.5,
            eps=eps,
            bounds=problem.bounds,
            levels=problem.levels,
            method="kng",
            random_state=seed,
        )

    quantreg(), kng(CPS1988_EPS[0], reps)  # warm-up
    times: dict[str, list[float]] = {"QuantReg": [], **{f"KNG eps {eps:g}": [] for eps in CPS1988_EPS}}
    for seed in range(reps):
        for eps in CPS1988_EPS:
            times["QuantReg"].append(seconds(quantreg))
            times[f"KNG eps {eps:g}"].append(seconds(partial(kng, eps, seed)))
    base = statistics.median(times["QuantReg"])
    print(f"CPS1988 median regression, {reps} seeds: median wall seconds, ratio to QuantReg  (target <= 10)")
    for name, values in times.items():
        print(f"{name:>12} {statistics.median(values):8.3f} s  {statistics.median(values) / base:6.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--cps1988", action="store_true", help="CPS1988's median instead (needs R and AER)")
    args = parser.parse_args()
    if args.cps1988:
        cps1988(args.reps)
        return
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

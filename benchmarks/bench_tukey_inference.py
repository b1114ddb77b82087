"""Tukey's standard errors at large n with factors: coverage and width of the 95% intervals (issue 27).

Simulated least-squares designs with 8 or 10 coefficients: an intercept, 4 or 6 continuous regressors (skewed
and correlated: lognormal and a mixture with the first) and a four-level factor (three dummies, levels with
shares 0.4, 0.3, 0.2, 0.1), heteroskedastic errors; n = 20,000 and 60,000, eps = 1 and 5, delta = 1e-6, the
default m and ``se_share`` (dpstats/mechanisms/tukey/inference.py: the smallest share that the point and the
spreads can afford). Tukey needs no bounds. Per cell, over ``--reps`` data sets drawn afresh: the share of
intervals that cover the true coefficient (target [0.93, 0.975]; a right interval misses that band by chance
with the probability printed), the median interval width over the estimate's own spread (2 x 1.96 x its sd over
the data sets; target <= 1.5), the PTR refusals and the eps spent on the spreads. Printed: the worst
coefficient of each cell, every coefficient's coverage, and over all cells the coefficients outside the band
against the number a right interval would leave outside by chance.

    python benchmarks/bench_tukey_inference.py [--reps 200] [--jobs 2]
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd
from bench_coverage import chance_miss

import dpstats

LEVELS = ("a", "b", "c", "d")
SHARES = (0.4, 0.3, 0.2, 0.1)
EFFECTS = {"a": 0.0, "b": 0.5, "c": -0.3, "d": 1.0}
DELTA = 1e-6


def simulate(rng: np.random.Generator, n: int, continuous: int) -> tuple[pd.DataFrame, str, np.ndarray]:
    """One data set, its formula and its true coefficients (in patsy's column order)."""
    z = rng.standard_normal((n, continuous))
    x = np.exp(0.5 * z)  # skewed regressors, correlated through the mixture below
    x[:, 1:] = 0.6 * x[:, 1:] + 0.4 * x[:, :1]
    g = rng.choice(LEVELS, size=n, p=SHARES)
    slopes = np.linspace(1.0, -0.5, continuous)
    error = rng.standard_normal(n) * (0.5 + 0.5 * x[:, 0])
    y = 2.0 + x @ slopes + np.vectorize(EFFECTS.get)(g) + error
    frame = pd.DataFrame(x, columns=[f"x{k}" for k in range(continuous)]).assign(g=g, y=y)
    formula = "y ~ " + " + ".join(frame.columns[:continuous]) + " + C(g)"
    truth = np.concatenate([[2.0], [EFFECTS[v] for v in LEVELS[1:]], slopes])  # patsy: Intercept, C(g)[T.*], x*
    return frame, formula, truth


def cell(args: tuple[int, int, float, int]) -> dict:
    """One (n, coefficients, eps) cell over ``reps`` data sets."""
    n, continuous, eps, reps = args
    estimates, lower, upper, refused, shares, seconds = [], [], [], 0, set(), 0.0
    truth = None
    for rep in range(reps):
        rng = np.random.default_rng([n, continuous, int(eps * 10), rep])
        frame, formula, truth = simulate(rng, n, continuous)
        start = time.perf_counter()
        res = dpstats.dp_ols(
            formula, frame, eps=eps, delta=DELTA, method="tukey", levels={"g": list(LEVELS)}, random_state=rep
        )
        seconds += time.perf_counter() - start
        if res.failed:
            refused += 1
            continue
        shares.add(round(sum(part for name, part in res.privacy.split if "spread" in name), 4))
        ci = res.conf_int(0.05)
        estimates.append(res.params.to_numpy())
        lower.append(ci["lower"].to_numpy())
        upper.append(ci["upper"].to_numpy())
    est, lo, hi = np.array(estimates), np.array(lower), np.array(upper)
    coverage = np.mean((lo <= truth) & (truth <= hi), axis=0)
    width = np.median(hi - lo, axis=0) / (2 * 1.96 * est.std(axis=0, ddof=1))
    return dict(
        n=n,
        d=continuous + 4,
        eps=eps,
        coverage=coverage,
        width=width,
        refused=refused,
        shares=sorted(shares),
        seconds=seconds / reps,
        kept=len(estimates),
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 60_000])
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0, 5.0])
    args = parser.parse_args(argv)
    cells = [(n, c, e, args.reps) for n in args.sizes for c in (4, 6) for e in args.eps]
    print(
        f"a right interval misses [0.93, 0.975] by chance with probability {chance_miss(args.reps):.3f} per coefficient"
    )
    print(
        f"{'n':>6} {'d':>3} {'eps':>4} {'kept':>5} {'refused':>7} {'eps spreads':>12} {'worst cov':>9} {'max w/s':>7} "
        f"{'s/fit':>6}  coverage by coefficient"
    )
    outside, checked, coverages = 0, 0, []
    with ProcessPoolExecutor(args.jobs) as pool:
        for r in pool.map(cell, cells):
            outside += int(np.sum((r["coverage"] < 0.93) | (r["coverage"] > 0.975)))
            checked += r["coverage"].size
            coverages.extend(r["coverage"])
            verdict = "PASS" if r["coverage"].min() >= 0.93 and r["coverage"].max() <= 0.975 else "miss"
            verdict += "" if r["width"].max() <= 1.5 else " (wide)"
            shares = ",".join(f"{s:g}" for s in r["shares"])
            print(
                f"{r['n']:>6} {r['d']:>3} {r['eps']:>4g} {r['kept']:>5} {r['refused']:>7} {shares:>12} "
                f"{r['coverage'].min():>9.3f} {r['width'].max():>7.2f} {r['seconds']:>6.2f}  "
                + " ".join(f"{c:.3f}" for c in r["coverage"])
                + f"  {verdict}",
                flush=True,
            )

    print(
        f"\nall cells: mean coverage {np.mean(coverages):.3f}; {outside} of {checked} coefficients outside "
        f"[0.93, 0.975], {checked * chance_miss(args.reps):.1f} expected by chance"
    )


if __name__ == "__main__":
    main()

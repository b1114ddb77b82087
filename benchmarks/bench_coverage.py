"""Coverage and width of the 95% intervals of every mechanism, by simulation (the inference issue's table).

For each (method, estimator) and each design of dpstats/uncertainty/coverage.py that it fits
(symmetric errors; heteroskedastic errors with a skewed regressor; a categorical
term), at n in {1,000, 10,000} and eps in {1, 5}: the coverage of the true
coefficient by 95% intervals (target [0.93, 0.975]), the median width over the
estimator's own Monte Carlo spread 2 x 1.96 x sd (target <= 1.5), the failure
rate, the share of fits that released no interval (their mechanism's rule
declined to spend on it; they are left out of the coverage), and the mean
time of a fit with its intervals.

    python benchmarks/bench_coverage.py [--reps 500] [--methods noisystats theilsen ...] [--jobs 2]
        [--sizes 1000 10000] [--eps 1 5] [--designs symmetric heteroskedastic categorical]

With --reps 500 the coverage of a correct interval has a Monte Carlo sd of
0.0097: a cell misses [0.93, 0.975] by chance with probability 2.2% (binomial,
:func:`chance_miss`), so correct intervals would still miss about 6 of 272
cells; the last line prints that expectation for the run.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from scipy import stats
from tqdm import tqdm

import dpstats
from dpstats.uncertainty.coverage import DESIGNS, SimulationDesign, coverage_cell

TARGET_COVERAGE = (0.93, 0.975)
TARGET_WIDTH = 1.5


def chance_miss(reps: int, level: float = 0.95) -> float:
    """The probability that a correct interval's simulated coverage (reps draws) falls outside TARGET_COVERAGE."""
    law = stats.binom(reps, level)
    low, high = TARGET_COVERAGE
    return float(law.cdf(math.ceil(low * reps) - 1) + law.sf(math.floor(high * reps)))


@dataclass(frozen=True)
class Method:
    """A (method, estimator) with its options and the most slopes it fits."""

    label: str
    method: str
    estimator: str
    options: dict = field(default_factory=dict)
    max_slopes: int | None = None
    delta: float = 0.0


METHODS = [
    Method("noisystats", "noisystats", "ols"),
    Method("noisystats repaired", "noisystats", "ols", {"singular": "repair"}),
    Method("theilsen exp", "theilsen", "ols", {"median": "exp"}, 1),
    Method("theilsen wide", "theilsen", "ols", {"median": "wide"}, 1),
    Method("theilsen smooth", "theilsen", "ols", {"median": "smooth"}, 1),
    Method("gradient pure", "gradient", "ols", {"variant": "pure"}, 1),
    Method("gradient approx", "gradient", "ols", {"variant": "approx"}, 1, 1e-6),
    Method("tukey", "tukey", "ols", {}, None, 1e-6),
    Method("histogram ols", "histogram", "ols"),
    Method("histogram median", "histogram", "quantreg"),
    Method("kng ols", "kng", "ols"),
    Method("kng median", "kng", "quantreg"),
]


class _Fit:
    """A picklable fit of one method at one eps (for the process pool)."""

    def __init__(self, method: Method, eps: float) -> None:
        self.method, self.eps = method, eps

    def __call__(self, data, design: SimulationDesign, seed: int):
        m = self.method
        common = dict(
            eps=self.eps,
            bounds=design.bounds,
            levels=design.levels or None,
            method=m.method,
            delta=m.delta,
            random_state=seed,
            **m.options,
        )
        if m.estimator == "quantreg":
            return dpstats.dp_quantreg(design.formula, data, q=0.5, **common)
        return dpstats.dp_ols(design.formula, data, **common)


def _cell(args: tuple[Method, str, int, float, int]) -> tuple:
    method, design_name, n, eps, reps = args
    design = DESIGNS[design_name]
    start = time.perf_counter()
    cell = coverage_cell(design, n, reps, _Fit(method, eps), seed=n + int(10 * eps))
    seconds = (time.perf_counter() - start) / reps
    return method.label, design_name, n, eps, cell, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--methods", nargs="+", default=None, help="labels' first words, e.g. noisystats theilsen")
    parser.add_argument("--designs", nargs="+", default=list(DESIGNS))
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0, 5.0])
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    chosen = [
        m for m in METHODS if args.methods is None or m.label.split()[0] in args.methods or m.label in args.methods
    ]
    tasks = [
        (m, d, n, eps, args.reps)
        for m in chosen
        for d in args.designs
        if m.max_slopes is None or DESIGNS[d].slopes <= m.max_slopes
        for n in args.sizes
        for eps in args.eps
    ]
    header = f"{'method':<19} {'design':<15} {'n':>6} {'eps':>4} {'term':<10} {'cover':>6} {'w/spread':>8} "
    print(header + f"{'fail':>5} {'no CI':>5} {'s/fit':>6}  verdict")
    misses = rows = 0
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        cells = tqdm(pool.map(_cell, tasks), total=len(tasks), desc="cells", file=sys.stderr)
        for label, design_name, n, eps, cell, seconds in cells:
            for i, term in enumerate(cell.terms):
                cover, ratio = cell.coverage[i], cell.width_ratio[i]
                ok = TARGET_COVERAGE[0] <= cover <= TARGET_COVERAGE[1] and ratio <= TARGET_WIDTH
                none = cell.no_interval + cell.failures == cell.reps
                misses += not (ok or none)
                rows += not none
                verdict = "no interval released" if none else "PASS" if ok else "MISS"
                cells.write(
                    f"{label:<19} {design_name:<15} {n:>6} {eps:>4g} {term[:10]:<10} {cover:>6.3f} {ratio:>8.2f} "
                    f"{cell.failures / cell.reps:>5.2f} {cell.no_interval / cell.reps:>5.2f} {seconds:>6.3f}  "
                    + verdict,
                    file=sys.stdout,
                )
    print(f"\n{misses} coefficient cells miss coverage in {TARGET_COVERAGE} or width/spread <= {TARGET_WIDTH}")
    chance = chance_miss(args.reps)
    print(
        f"(a correct interval misses {TARGET_COVERAGE} by chance with probability {chance:.1%} at {args.reps} reps: "
        f"{chance * rows:.1f} of these {rows} cells expected)"
    )


if __name__ == "__main__":
    main()

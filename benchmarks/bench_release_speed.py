"""Seconds per fit on a 28,155-row public wage regression, to compare two checkouts (issue 39's speed target).

AER's CPS1988 Mincer equation (benchmarks/bench_real_data.py's declarations) fitted by each mechanism at
eps 1 and 5, once per seed; the median over the seeds after ``--warmup`` of them. The float-safe samplers
(exact discrete noise, the exponential mechanism in integer arithmetic) are meant to cost at most 1.5 times
the floating-point ones. To compare with another commit, run the script from a checkout of it with that
checkout first on the path:

    python benchmarks/bench_release_speed.py [--seeds 30] [--methods tukey auto histogram noisystats]
    git worktree add /tmp/ref <commit> && (cd /tmp/ref && PYTHONPATH=/tmp/ref python benchmarks/bench_release_speed.py)

Different seeds take different paths (Tukey's test passes or refuses), so both runs use the same seeds;
timings of hundredths of a second vary between runs on a shared machine: compare medians of several runs.
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench_real_data import REGRESSIONS

import dpstats

DELTA = {"tukey": 1e-6}


def seconds_per_fit(method: str, eps: float, seeds: range, warmup: int) -> float:
    """The median wall seconds of ``dp_ols`` on CPS1988 over ``seeds`` (the first ``warmup`` not counted)."""
    regression = next(r for r in REGRESSIONS if r.name == "CPS1988")
    data = regression.load()
    times = []
    for seed in seeds:
        start = time.perf_counter()
        dpstats.dp_ols(
            regression.formula,
            data,
            eps=eps,
            delta=DELTA.get(method, 0.0),
            bounds=regression.bounds,
            levels=regression.levels,
            method=method,
            random_state=seed,
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times[warmup:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--methods", nargs="+", default=["tukey", "auto", "histogram", "noisystats"])
    args = parser.parse_args()
    print(f"{'method':12s} {'eps':>5s} {'s / fit':>9s}")
    for method in args.methods:
        for eps in (1.0, 5.0):
            print(f"{method:12s} {eps:5g} {seconds_per_fit(method, eps, range(args.seeds), args.warmup):9.4f}")


if __name__ == "__main__":
    main()

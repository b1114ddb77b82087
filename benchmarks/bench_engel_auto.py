"""The README demo's call on engel over many seeds: method="auto" against every explicit mechanism (issue 15).

Run with ``python benchmarks/bench_engel_auto.py [--seeds 30] [--eps 1]``.

``dp_ols("foodexp ~ income", engel, eps, bounds={"income": (0, 5000), "foodexp": (0, 2500)})``
(statsmodels' engel data, n = 235) with seeds 0..S-1, for ``method="auto"`` and every
pure-DP mechanism that fits it with its defaults. Printed per method: the failures, and
the median and 68th percentile of |slope - OLS slope| over the seeds that did not fail.
Verdicts: auto never fails, and its median error is within 1.25x of the best explicit
method's.
"""

from __future__ import annotations

import argparse

import numpy as np
import statsmodels.formula.api as smf
from statsmodels.datasets import engel

import dpstats

FORMULA = "foodexp ~ income"
BOUNDS = {"income": (0, 5000), "foodexp": (0, 2500)}
EXPLICIT = ("noisystats", "theilsen", "gradient", "histogram", "kng")
WITHIN = 1.25


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--eps", type=float, default=1.0)
    args = parser.parse_args(argv)
    data = engel.load_pandas().data
    ols = float(smf.ols(FORMULA, data).fit().params["income"])
    print(f"engel, {FORMULA}, eps = {args.eps:g}, seeds 0..{args.seeds - 1}; OLS slope {ols:.4f}")
    print(f"{'method':>11} {'failures':>9} {'median |err|':>13} {'p68 |err|':>10}  picked")
    medians = {}
    for method in ("auto", *EXPLICIT):
        errors, failures, picked = [], 0, set()
        for seed in range(args.seeds):
            res = dpstats.dp_ols(FORMULA, data, eps=args.eps, bounds=BOUNDS, method=method, random_state=seed)
            picked.add(res.method)
            if res.failed:
                failures += 1
            else:
                errors.append(abs(float(res.params["income"]) - ols))
        medians[method] = float(np.median(errors)) if errors else np.inf
        p68 = float(np.quantile(errors, 0.68)) if errors else np.inf
        print(f"{method:>11} {failures:>9} {medians[method]:>13.4f} {p68:>10.4f}  {','.join(sorted(picked))}")
        if method == "auto":
            auto_failures = failures
    best = min(medians[m] for m in EXPLICIT)
    ratio = medians["auto"] / best
    print()
    print(f"[{'MET' if auto_failures == 0 else 'NOT MET'}] auto failed in {auto_failures}/{args.seeds} seeds")
    print(
        f"[{'MET' if ratio <= WITHIN else 'NOT MET'}] auto's median error {medians['auto']:.4f} is {ratio:.2f}x the "
        f"best explicit method's ({best:.4f}; target <= {WITHIN:g}x)"
    )


if __name__ == "__main__":
    main()

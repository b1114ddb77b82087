"""Coverage of the slope's 95% interval on panels, with the person as the privacy unit (``unit=``, ``max_rows=``).

Each data set has G units of T rows; x and the error each carry a unit effect
(intra-unit correlation 0.5): ``x = (a_g + z_gt) / sqrt(2)``, ``e = (b_g + w_gt) / sqrt(2)``,
``y = 1 + 0.5 x + e``, declared bounds x in [-4, 4], y in [-6, 8]. For each
(method, G, eps) it prints the coverage of the true slope 0.5 (target
[0.93, 0.975]), the median interval width over the estimator's own spread
2 x 1.96 x sd, the failure rate and the share of fits without an interval.
Reference rows, on the same data sets: statsmodels' OLS with HC1 and with
cluster-robust (CR1) standard errors, and dpstats at the row level (no
``unit=``: its intervals take the rows as independent, and its guarantee
protects one row, not a person).

    python benchmarks/bench_panel.py [--reps 200] [--units 100 300 1000] [--rows 10] [--eps 1 5]
        [--methods tukey noisystats rows] [--jobs 2]

At 200 reps the coverage of a correct interval has a Monte Carlo sd of 0.015.
"""

from __future__ import annotations

import argparse
import math
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

import dpstats

BOUNDS = {"x": (-4.0, 4.0), "y": (-6.0, 8.0)}
SLOPE = 0.5
DELTA = 1e-6
METHODS = {
    "tukey": {"method": "tukey", "delta": DELTA, "unit": True},
    "noisystats": {"method": "noisystats", "unit": True},
    "auto": {"method": "auto", "delta": DELTA, "unit": True},
    "rows": {"method": "auto", "delta": DELTA, "unit": False},
}


def panel(units: int, rows: int, seed: int) -> pd.DataFrame:
    """One data set (module docstring)."""
    rng = np.random.default_rng(seed)
    x = (np.repeat(rng.normal(size=units), rows) + rng.normal(size=units * rows)) / math.sqrt(2)
    e = (np.repeat(rng.normal(size=units), rows) + rng.normal(size=units * rows)) / math.sqrt(2)
    return pd.DataFrame({"id": np.repeat(np.arange(units), rows), "x": x, "y": 1.0 + SLOPE * x + e})


def _fit(label: str, data: pd.DataFrame, rows: int, eps: float, seed: int) -> tuple[float, float, float]:
    """(estimate, lower, upper) of the slope; NaN where the fit failed or gave no interval."""
    if label in ("HC1", "cluster"):
        kind = {"cov_type": "HC1"} if label == "HC1" else {"cov_type": "cluster", "cov_kwds": {"groups": data["id"]}}
        fit = smf.ols("y ~ x", data).fit(**kind)
        low, high = fit.conf_int().loc["x"]
        return float(fit.params["x"]), float(low), float(high)
    spec = METHODS[label]
    unit = {"unit": "id", "max_rows": rows} if spec["unit"] else {}
    res = dpstats.dp_ols(
        "y ~ x", data, eps=eps, delta=spec.get("delta", 0.0), bounds=BOUNDS, method=spec["method"],
        random_state=seed, force=True, **unit,
    )  # fmt: skip
    if res.failed:
        return math.nan, math.nan, math.nan
    low, high = res.conf_int().loc["x"]
    return float(res.params["x"]), float(low), float(high)


def _cell(args: tuple[str, int, int, float, int]) -> tuple:
    label, units, rows, eps, reps = args
    start = time.perf_counter()
    out = np.array([_fit(label, panel(units, rows, seed), rows, eps, 10_000 + seed) for seed in range(reps)])
    seconds = (time.perf_counter() - start) / reps
    estimate, low, high = out.T
    answered = np.isfinite(estimate)
    with_interval = answered & np.isfinite(low) & np.isfinite(high)
    covered = (low <= SLOPE) & (high >= SLOPE)
    spread = 2 * 1.96 * np.std(estimate[answered]) if answered.sum() > 1 else math.nan
    return (
        label,
        units,
        rows,
        eps,
        float(covered[with_interval].mean()) if with_interval.any() else math.nan,
        float(np.median((high - low)[with_interval]) / spread) if with_interval.any() else math.nan,
        float(1 - answered.mean()),
        float(1 - with_interval[answered].mean()) if answered.any() else math.nan,
        seconds,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--units", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--rows", type=int, default=10)
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0, 5.0])
    parser.add_argument("--methods", nargs="+", default=["tukey", "noisystats", "auto", "rows"])
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    cells = [(m, g, args.rows, e, args.reps) for g in args.units for e in args.eps for m in args.methods]
    cells += [(ref, g, args.rows, args.eps[0], args.reps) for g in args.units for ref in ("HC1", "cluster")]
    with ProcessPoolExecutor(args.jobs) as pool:
        results = list(pool.map(_cell, cells))
    print(f"Slope coverage on panels of G units x {args.rows} rows, intra-unit correlation 0.5, {args.reps} data sets")
    head = ("intervals", "G", "eps", "coverage", "width/spread", "failed", "no CI", "s/fit")
    print(" ".join(f"{h:>{w}}" for h, w in zip(head, (11, 6, 5, 9, 13, 7, 6, 7), strict=True)))
    for label, units, _, eps, cover, width, failed, no_ci, seconds in results:
        eps_text = "-" if label in ("HC1", "cluster") else f"{eps:g}"
        mark = "" if not 0.93 <= cover <= 0.975 else " ok"
        print(
            f"{label:>11} {units:>6} {eps_text:>5} {cover:>9.3f} {width:>13.2f} {failed:>7.1%} {no_ci:>6.1%}"
            f" {seconds:>7.3f}{mark}"
        )


if __name__ == "__main__":
    main()

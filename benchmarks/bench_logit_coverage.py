"""Coverage of every dp_logit mechanism that releases standard errors, on one simulated design (issue 40).

The design is benchmarks/bench_histogram_logit.py's: x1, x2 standard normal clipped to
their declared bounds [-3, 3], x3 a fair coin, y from the logit (or probit) with
intercept -2.65 and slopes 0.5, -0.5, 0.5 (a base rate near 10%); its
formula ``I(y > 0) ~ x1 + x2 + x3`` makes y's two values public. For each mechanism
(DP Newton, the histogram, objective perturbation, KNG, and Tukey depth at
delta = 1e-6), n from 1,000 to 100,000 and eps 1 and 5: the share of fits whose
95% interval covers the true coefficient, pooled over the four coefficients and
per coefficient, the share of failed fits (Tukey's PTR refusals included), and the
ratio of the mean reported standard error to the estimates' spread (1 is honest).
No marginal effects are released (``margins_share=0``): they do not move the
coefficients' intervals.

Resumable: each fit appends one JSON line to
``benchmarks/results/logit_coverage/<link>_<method>_<n>_<eps>.jsonl``, and a rerun
starts each cell where its shard stops, so a run of hours can be spread over
sessions and its shards committed as they finish.

    .venv/bin/python benchmarks/bench_logit_coverage.py [--reps 100] [--methods newton ...] [--link probit]
    .venv/bin/python benchmarks/bench_logit_coverage.py --table   # the table of what the shards hold
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
from bench_histogram_logit import BOUNDS, FORMULA, INTEGERS, TRUTHS, simulated_logit

import dpstats

SHARDS = Path(__file__).resolve().parent / "results" / "logit_coverage"
METHODS = {
    "newton": {},
    "histogram": {},
    "objective": {},
    "kng": {},
    "tukey": {"delta": 1e-6},
}
SIZES = (1_000, 3_000, 10_000, 30_000, 100_000)
EPSILONS = (1.0, 5.0)
FIT = {"logit": dpstats.dp_logit, "probit": dpstats.dp_probit}


def shard(link: str, method: str, n: int, eps: float) -> Path:
    return SHARDS / f"{link}_{method}_{n}_{eps:g}.jsonl"


def one_fit(link: str, method: str, n: int, eps: float, seed: int) -> dict:
    """One seeded fit's estimates, standard errors and interval ends (NaN where it failed)."""
    data = simulated_logit(seed, n, link)
    res = FIT[link](FORMULA, data, eps=eps, bounds=BOUNDS, integers=INTEGERS, method=method, random_state=seed,
                    margins_share=0, **METHODS[method])  # fmt: skip
    ci = res.conf_int()
    return {
        "seed": seed,
        "failed": bool(res.failed),
        "estimate": res.params.tolist(),
        "se": res.bse.tolist(),
        "lower": ci["lower"].tolist(),
        "upper": ci["upper"].tolist(),
        "biased": res.status == "biased",
    }


def run(link: str, methods: list[str], reps: int) -> None:
    """Fill every cell's shard up to ``reps`` fits."""
    SHARDS.mkdir(parents=True, exist_ok=True)
    for n in SIZES:
        for eps in EPSILONS:
            for method in methods:
                path = shard(link, method, n, eps)
                done = len(path.read_text().splitlines()) if path.exists() else 0
                with path.open("a") as out:
                    for seed in range(done, reps):
                        out.write(json.dumps(one_fit(link, method, n, eps, seed)) + "\n")
                        out.flush()
                print(f"{link} {method} n={n} eps={eps:g}: {max(done, reps)} fits", flush=True)


def table(link: str) -> pd.DataFrame:
    """One row per cell the shards hold."""
    truth = TRUTHS[link]
    rows = []
    for path in sorted(SHARDS.glob(f"{link}_*.jsonl")):
        _, method, n, eps = path.stem.split("_")
        fits = [json.loads(line) for line in path.read_text().splitlines()]
        ok = [f for f in fits if not f["failed"] and np.all(np.isfinite(f["se"]))]
        row = {"method": method, "n": int(n), "eps": float(eps), "fits": len(fits),
               "failed or no SE": 1 - len(ok) / len(fits)}  # fmt: skip
        if ok:
            lower, upper = np.array([f["lower"] for f in ok]), np.array([f["upper"] for f in ok])
            estimate, se = np.array([f["estimate"] for f in ok]), np.array([f["se"] for f in ok])
            covered = (lower <= truth) & (truth <= upper)
            row["coverage"] = covered.mean()
            row.update({f"cov {j}": covered[:, j].mean() for j in range(len(truth))})
            row["SE / sd"] = float(np.mean(se.mean(axis=0) / estimate.std(axis=0))) if len(ok) > 1 else np.nan
            row["biased"] = np.mean([f["biased"] for f in ok])
        rows.append(row)
    return pd.DataFrame(rows).sort_values(["method", "eps", "n"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--link", default="logit", choices=list(FIT))
    parser.add_argument("--table", action="store_true", help="print the table of the shards only")
    args = parser.parse_args()
    if not args.table:
        run(args.link, args.methods, args.reps)
    print(table(args.link).to_string(index=False, float_format="{:.3f}".format))


if __name__ == "__main__":
    main()

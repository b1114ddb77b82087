"""The evidence behind auto's binary rule (dpstats/planning/binary_choice.py): DP Newton against the histogram.

Simulated logits with base rates of 5%, 20% and 50%, 2 or 5 continuous regressors
(uniform on their declared [0, 1], slopes alternating +1 and -1), n from 2,000 to
50,000 and eps 1 and 5; per cell and mechanism (20 seeds): the load ``n eps / p^2``
the rule reads, the median error of the slopes in units of the non-private MLE's
standard errors, and the coverage of the true slopes by the 95% intervals. The
rule takes Newton from load 1,000, the histogram from 300, and refuses below; the
table shows whether the mechanism it takes is the better one on each side.
Resumable: each cell appends to ``benchmarks/results/binary_rule.jsonl``.

    .venv/bin/python benchmarks/bench_binary_rule.py [--seeds 20]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy import special

import dpstats
from dpstats.privacy.noise import make_rng

SHARD = Path(__file__).resolve().parent / "results" / "binary_rule.jsonl"
RATES = (0.05, 0.2, 0.5)
SLOPES = (2, 5)
SIZES = (2_000, 10_000, 50_000)
EPSILONS = (1.0, 5.0)
METHODS = ("newton", "histogram")


def simulated(seed: int, n: int, slopes: int, rate: float) -> tuple[pd.DataFrame, np.ndarray]:
    """Regressors uniform on [0, 1]; the intercept puts the base rate at ``rate`` (at the regressors' mean)."""
    rng = make_rng(seed)
    beta = np.array([(-1.0) ** j for j in range(slopes)])
    X = rng.uniform(size=(n, slopes))
    intercept = special.logit(rate) - beta.sum() / 2
    y = (rng.uniform(size=n) < special.expit(intercept + X @ beta)).astype(float)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(slopes)]).assign(y=y)
    return frame, np.r_[intercept, beta]


def cell(rate: float, slopes: int, n: int, eps: float, method: str, seeds: int) -> dict:
    """One cell's median slope error (in MLE standard errors) and coverage of the true slopes."""
    names = [f"x{j}" for j in range(slopes)]
    formula = "y ~ " + " + ".join(names)
    errors, covered = [], []
    for seed in range(seeds):
        data, truth = simulated(seed, n, slopes, rate)
        mle = sm.Logit(data["y"], sm.add_constant(data[names])).fit(disp=0)
        res = dpstats.dp_logit(formula, data, eps=eps, bounds={v: (0, 1) for v in names}, integers=["y"],
                               method=method, random_state=seed, margins_share=0)  # fmt: skip
        slope = res.params[names].to_numpy()
        errors.append(np.abs(slope - mle.params[names].to_numpy()) / mle.bse[names].to_numpy())
        ci = res.conf_int().loc[names].to_numpy()
        covered.append((ci[:, 0] <= truth[1:]) & (truth[1:] <= ci[:, 1]))
    return {
        "rate": rate, "slopes": slopes, "n": n, "eps": eps, "method": method,
        "load": n * eps / (slopes + 1) ** 2,
        "median error (SEs)": float(np.median(errors)), "coverage": float(np.mean(covered)),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    SHARD.parent.mkdir(parents=True, exist_ok=True)
    done = {tuple(json.loads(line)[k] for k in ("rate", "slopes", "n", "eps", "method"))
            for line in (SHARD.read_text().splitlines() if SHARD.exists() else [])}  # fmt: skip
    with SHARD.open("a") as out:
        for rate in RATES:
            for slopes in SLOPES:
                for n in SIZES:
                    for eps in EPSILONS:
                        for method in METHODS:
                            if (rate, slopes, n, eps, method) not in done:
                                out.write(json.dumps(cell(rate, slopes, n, eps, method, args.seeds)) + "\n")
                                out.flush()
    rows = pd.DataFrame([json.loads(line) for line in SHARD.read_text().splitlines()])
    table = rows.pivot_table(index=["rate", "slopes", "n", "eps", "load"], columns="method",
                             values=["median error (SEs)", "coverage"])  # fmt: skip
    print(table.to_string(float_format="{:.3g}".format))


if __name__ == "__main__":
    main()

"""The histogram logit's binning bias bound on real binary regressions (issue 45; binary_binning_bias.py).

CPSSW8 (61,395 workers) with ``high`` = hourly earnings above the median, ``high ~ education + age + C(gender) +
C(region)`` (benchmarks/real_regressions.py's bounds, ``high`` in (0, 1)), and SwissLabor's participation logit
(its formula and bounds there; ``works`` declared whole-valued so that the response has its two cells), both with
``method="histogram"``. Per eps, over ``--seeds`` seeds: the share of fits labelled "biased", the share of those
with some coefficient more than 2 of its own SEs from statsmodels' Logit on the rows (``>2se``), the coverage of
Logit's coefficients by the 95% intervals (all coefficients pooled) with the bound and without it (the fit's own
intervals), the bound in SEs (the largest per fit: median and max over the seeds), and the median seconds per fit
with and without the bound.

    python benchmarks/bench_histogram_binary_bias.py [--seeds 10] [--eps 0.5 1 5] [--link logit]
"""

from __future__ import annotations

import argparse
import time
from unittest import mock

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from real_regressions import REGRESSIONS, SWISS

import dpstats
from dpstats.mechanisms.histogram import cell_fits

CPS_BINARY = "high ~ education + age + C(gender) + C(region)"


def cpssw8() -> tuple[pd.DataFrame, dict, dict, list[str]]:
    reg = next(r for r in REGRESSIONS if r.name == "CPSSW8")
    data = reg.load()
    data = data.assign(high=(data["earnings"] > data["earnings"].median()).astype(float))
    bounds = {k: v for k, v in reg.bounds.items() if k != "earnings"} | {"high": (0.0, 1.0)}
    return data, bounds, reg.levels, ["high"]


def swisslabor() -> tuple[pd.DataFrame, dict, dict, list[str]]:
    reg = next(r for r in REGRESSIONS if r.name == "SwissLabor")
    return reg.load(), reg.bounds, reg.levels, ["works"]


def run(name: str, formula: str, loaded, link: str, eps_values, seeds: int) -> list[dict]:
    data, bounds, levels, integers = loaded
    reference = getattr(smf, link)(formula, data).fit(disp=0).params
    fit = dpstats.dp_logit if link == "logit" else dpstats.dp_probit
    rows = []
    for eps in eps_values:
        biased, far, ratios, covered, covered_plain, seconds, plain_seconds = [], [], [], [], [], [], []
        for seed in range(seeds):
            call = {"eps": eps, "bounds": bounds, "levels": levels, "integers": integers, "method": "histogram",
                    "random_state": seed}  # fmt: skip
            start = time.perf_counter()
            res = fit(formula, data, **call)
            seconds.append(time.perf_counter() - start)
            with mock.patch.object(cell_fits, "binary_fit_bias_bound", lambda *a, **k: None):
                start = time.perf_counter()
                plain = fit(formula, data, **call)
                plain_seconds.append(time.perf_counter() - start)
            truth = reference[res.params.index]
            if res.status == "failed":
                continue
            off = np.abs(res.params - truth) / res.bse
            biased.append(res.status == "biased")
            if res.status == "biased":
                far.append(bool(np.any(off > 2.0)))
            ratios.append(float(np.max(res.bias / res.bse)))
            for out, r in ((covered, res), (covered_plain, plain)):
                ci = r.conf_int()
                out.extend(((ci.iloc[:, 0] <= truth) & (truth <= ci.iloc[:, 1])).tolist())
        rows.append({
            "data": name, "eps": eps, "fits": len(biased), "biased": np.mean(biased),
            ">2se": np.mean(far) if far else float("nan"), "cover": np.mean(covered),
            "cover w/o": np.mean(covered_plain), "B/se med": np.median(ratios), "B/se max": np.max(ratios),
            "s/fit": np.median(seconds), "s/fit w/o": np.median(plain_seconds),
        })  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--eps", type=float, nargs="+", default=[0.5, 1.0, 5.0])
    parser.add_argument("--link", default="logit")
    args = parser.parse_args()
    rows = run("CPSSW8 high", CPS_BINARY, cpssw8(), args.link, args.eps, args.seeds)
    rows += run("SwissLabor", SWISS, swisslabor(), args.link, args.eps, args.seeds)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(pd.DataFrame(rows).round(3).to_string(index=False))


if __name__ == "__main__":
    main()

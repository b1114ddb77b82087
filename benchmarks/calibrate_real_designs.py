"""Calibrate the error model on real designs: every candidate of ``method="auto"`` on resamples of the public
regressions of benchmarks/real_regressions.py (issue 42).

The synthetic families of benchmarks/calibrate_error_model.py fill their bounds in five reference ways; real
regressions fill theirs in others (logs of skewed wages under documented bounds, a square beside its variable,
discrete schooling, rare factor levels). This family keeps each real regression's own shape and skew: a data
set of ``--sizes`` times its n rows is its rows themselves (size 1, in a random order), a random subset of them
(below 1) or a bootstrap resample (above 1), and
every candidate (dpstats/planning/candidates.py) that applies runs on it at every eps of :data:`EPSILONS`
through the public front end (``dp_ols`` / ``dp_quantreg`` with the candidate's method and options, the
default share of eps for the standard errors, as auto runs it), against the non-private fit on the same
resample (statsmodels' OLS, or QuantReg at the median).

Resumable: one shard per (regression, estimator, size, data set), written to
benchmarks/results/real_calibration/ when it finishes and skipped when it exists, so that a calibration of hours
completes over several sessions; commit the shards as they come. Shards go in order of priority: every
regression at its own n first, then the other sizes. A shard records, per candidate and eps, whether the fit
failed and the absolute deviation of every coefficient from the non-private one (the user's units), with the
non-private standard errors. A fit that runs longer than :data:`FIT_SECONDS` is stopped and
counted as failed: Theil-Sen's exact exponential median at eps 1e4 ran for minutes on a bootstrap resample of
engel (duplicated rows), as a user's call would.

``--merge`` summarises the shards into dpstats/planning/real_table.json, which the error model reads
(dpstats/planning/tables.py): per regression (keyed by its public signature,
dpstats/planning/facts.design_signature), candidate, n and eps, the 68th percentile over the data sets of the
deviation of the coefficient a prediction is of (dpstats/planning/error_model.error_term) on the unit scale
(``dev``), of the mean over the slopes of the deviation in non-private standard errors (``rel``), the 90th
percentile of that coefficient's deviation with a failed fit counted as the worst (``tail``), the failure
rate, and ``worst``: over the coefficients (the intercept too) whose non-private |t| on the whole data is at
least :data:`STRONG`, the largest median deviation relative to the coefficient's size (what a reader of a
table with every coefficient meets; benchmarks/bench_real_data.py's ``rel err``), by which auto ranks and
refuses on a real design (dpstats/planning/selection.py, dpstats/planning/refusal.py). A size is merged once
``--datasets`` data sets of it have a shard, over every data set that has one (a small regression whose
errors are skewed, engel's, was run with 48).

    OPENBLAS_NUM_THREADS=1 python benchmarks/calibrate_real_designs.py [--jobs 2] [--sizes 1 0.25 4]
        [--datasets 16] [--data CPS1988 ...]
    python benchmarks/calibrate_real_designs.py --merge
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from real_regressions import REGRESSIONS, Regression

import dpstats
from dpstats.frontend.formula import build_design
from dpstats.planning.candidates import CANDIDATES, Candidate
from dpstats.planning.error_model import error_term
from dpstats.planning.facts import PublicFacts

SEED = 20261129
EPSILONS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 20.0, 100.0, 1e4)
"""The budgets; 1e4 is the limit (Theil-Sen's exact exponential median at 1e9 ran for minutes on a resample
of engel, refining its envelope; at 1e4 it takes a tenth of a second)."""
SIZES = (1.0, 0.25, 4.0)
"""Multiples of a regression's n, in order of priority."""
FIT_SECONDS = 120
"""A fit still running after this long is stopped and counted as failed (module docstring)."""
STRONG = 5.0
"""A coefficient whose non-private |t| on the whole data is at least this is one a table's reader relies on."""
SHARDS = Path(__file__).resolve().parent / "results" / "real_calibration"
TABLE = Path(__file__).resolve().parents[1] / "dpstats" / "planning" / "real_table.json"


def formula_of(reg: Regression, estimator: str) -> str:
    return reg.formula if estimator == "ols" else reg.median_formula


def facts_of(reg: Regression, estimator: str, data: pd.DataFrame, delta: float = 0.0) -> PublicFacts:
    """The public facts of the regression on ``data`` (its signature, its terms and their units)."""
    design, _ = build_design(formula_of(reg, estimator), data, reg.bounds, reg.levels)
    return PublicFacts.of(design, 1.0, delta, estimator)


def applicable(reg: Regression, estimator: str, data: pd.DataFrame) -> list[Candidate]:
    """The candidates auto may choose for the regression (with delta where the candidate needs it)."""
    return [c for c in CANDIDATES if c.refusal(facts_of(reg, estimator, data, c.delta)) is None]


def shard_path(reg: Regression, estimator: str, size: float, dataset: int) -> Path:
    return SHARDS / f"{reg.name}-{estimator}-{size:g}x-{dataset:02d}.json"


def non_private(formula: str, data: pd.DataFrame, estimator: str) -> tuple[pd.Series, pd.Series]:
    """statsmodels' params and standard errors on ``data`` (OLS, or QuantReg at the median)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if estimator == "ols":
            fit = smf.ols(formula, data).fit()
        else:
            fit = smf.quantreg(formula, data).fit(q=0.5, max_iter=5000)
    return fit.params, fit.bse


def _timeout(signum: int, frame: object) -> None:
    raise TimeoutError


def run_shard(task: tuple[int, str, int, int]) -> Path:
    """One resample of one regression at one size: every applicable candidate at every eps."""
    signal.signal(signal.SIGALRM, _timeout)
    index, estimator, size_index, dataset = task
    reg, size = REGRESSIONS[index], SIZES[size_index]
    rng = np.random.default_rng(np.random.SeedSequence([SEED, index, ("ols", "quantreg").index(estimator),
                                                        size_index, dataset]))  # fmt: skip
    full = reg.load()
    n = max(30, round(size * len(full)))
    rows = rng.permutation(len(full))[:n] if n <= len(full) else rng.integers(len(full), size=n)
    sample = full.iloc[rows].reset_index(drop=True)
    formula = formula_of(reg, estimator)
    params, bse = non_private(formula, sample, estimator)
    fit = dpstats.dp_ols if estimator == "ols" else dpstats.dp_quantreg
    extra = {} if estimator == "ols" else {"q": 0.5}
    fits = []
    for candidate in applicable(reg, estimator, sample):
        for eps in EPSILONS:
            seed = int(rng.integers(2**31))
            signal.alarm(FIT_SECONDS)
            try:
                res = fit(formula, sample, eps=eps, bounds=reg.bounds, levels=reg.levels, method=candidate.method,
                          delta=candidate.delta, random_state=seed, **candidate.options, **extra)  # fmt: skip
            except ValueError as refused:  # the mechanism refuses the design's public shape
                fits.append({"candidate": candidate.label, "eps": eps, "refused": str(refused)[:200]})
                continue
            except TimeoutError:
                fits.append({"candidate": candidate.label, "eps": eps, "failed": True, "timeout": True})
                continue
            finally:
                signal.alarm(0)
            entry = {"candidate": candidate.label, "eps": eps, "failed": bool(res.failed)}
            if not res.failed:
                gap = np.abs(res.params[params.index].to_numpy() - params.to_numpy())
                entry["error"] = [float(f"{g:.4g}") for g in gap]
            fits.append(entry)
    out = {"regression": reg.name, "estimator": estimator, "size": size, "dataset": dataset, "n": n,
           "signature": facts_of(reg, estimator, sample).signature, "terms": list(params.index),
           "bse": [float(f"{b:.6g}") for b in bse], "fits": fits}  # fmt: skip
    path = shard_path(reg, estimator, size, dataset)
    partial = path.with_suffix(".part")
    partial.write_text(json.dumps(out) + "\n")
    partial.replace(path)
    return path


def tasks(names: list[str], sizes: list[float], datasets: int) -> list[tuple[int, str, int, int]]:
    """The shards not yet written, in order of priority (module docstring)."""
    out = []
    for size in sizes:
        for dataset in range(datasets):
            for index, reg in enumerate(REGRESSIONS):
                if reg.name not in names:
                    continue
                for estimator in reg.estimators:
                    if not shard_path(reg, estimator, size, dataset).exists():
                        out.append((index, estimator, SIZES.index(size), dataset))
    return out


def q(values: list[float], level: float) -> float:
    return float(np.quantile(values, level)) if values else math.inf


def merge(datasets: int) -> None:
    """Summarise the complete cells of the shards into :data:`TABLE` (module docstring)."""
    designs = {}
    for reg in REGRESSIONS:
        for estimator in reg.estimators:
            shards = [json.loads(p.read_text()) for p in sorted(SHARDS.glob(f"{reg.name}-{estimator}-*.json"))]
            data = reg.load()
            facts = facts_of(reg, estimator, data)
            term = error_term(facts)
            unit = facts.unit[facts.term_names.index(term)]
            params, bse = non_private(formula_of(reg, estimator), data, estimator)
            strong = params[(params / bse).abs() >= STRONG].abs()
            cells = []
            for size in SIZES:
                group = [s for s in shards if s["size"] == size]
                if len(group) < datasets:
                    continue
                cells += summarise(group, term, unit, facts.term_names, strong)
            if not cells:
                continue
            designs[facts.signature] = {"regression": reg.name, "estimator": estimator,
                                        "formula": formula_of(reg, estimator), "bounds": reg.bounds,
                                        "levels": reg.levels, "cells": cells}  # fmt: skip
    TABLE.write_text(json.dumps({"seed": SEED, "datasets": datasets, "designs": designs}, indent=1) + "\n")


def summarise(group: list[dict], term: str, unit: float, slopes: tuple[str, ...], strong: pd.Series) -> list[dict]:
    """The cells (candidate, eps) of one size's data sets (``strong``: the sizes of the coefficients that the whole
    data determine to within a fifth, by which ``worst`` is relative)."""
    n = group[0]["n"]
    cells = []
    for candidate, eps in dict.fromkeys((f["candidate"], f["eps"]) for s in group for f in s["fits"]):
        devs, rels, relative, failed, refused = [], [], [], 0, False
        for shard in group:
            fit = next(f for f in shard["fits"] if (f["candidate"], f["eps"]) == (candidate, eps))
            if "refused" in fit:
                refused = True
                break
            if fit["failed"]:
                failed += 1
                continue
            error = dict(zip(shard["terms"], fit["error"], strict=True))
            se = dict(zip(shard["terms"], shard["bse"], strict=True))
            devs.append(error[term] / unit)
            rels.append(float(np.mean([error[s] / se[s] for s in slopes])))
            relative.append([error[s] / strong[s] for s in strong.index])
        cell = {"candidate": candidate, "n": n, "eps": eps, "refused": refused}
        if not refused:
            tail = devs + [max(devs)] * failed if devs else []
            worst = float(np.max(np.median(relative, axis=0))) if relative and len(strong) else math.inf
            cell |= {"dev": q(devs, 0.68), "rel": q(rels, 0.68), "failure": failed / len(group), "worst": worst,
                     "tail": float(np.quantile(tail, 0.9, method="inverted_cdf")) if tail else math.inf}  # fmt: skip
        cells.append(cell)
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--sizes", type=float, nargs="+", default=list(SIZES))
    parser.add_argument("--datasets", type=int, default=16)
    parser.add_argument("--data", nargs="+", default=[r.name for r in REGRESSIONS])
    parser.add_argument("--merge", action="store_true")
    args = parser.parse_args()
    if args.merge:
        merge(args.datasets)
        return
    SHARDS.mkdir(parents=True, exist_ok=True)
    todo = tasks(args.data, args.sizes, args.datasets)
    print(f"{len(todo)} shards to run", flush=True)
    with ProcessPoolExecutor(args.jobs) as pool:
        for path in pool.map(run_shard, todo):
            print(path.name, flush=True)


if __name__ == "__main__":
    main()

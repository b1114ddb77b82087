"""What DP costs on real public regressions: every mechanism and auto, against OLS and QuantReg (issue 28).

The regressions are benchmarks/real_regressions.py's (nine textbook regressions on public data).

For each regression x estimator x mechanism (auto pure and with delta = 1e-6 included) x eps in ``--eps``, over
``--seeds`` seeds: for the coefficients whose non-private |t| is at least ``--strong`` (5), the median over seeds of
the relative error against OLS (QuantReg at the median), the worst over those coefficients; the share of seeds
whose 95% interval covers the non-private value (the worst coefficient), over the fits that report a finite
interval (a fit without standard errors, e.g. Tukey where the spreads are unaffordable, says so and is counted in
``no CI``); ``ok cover``, the same over the fits whose status is "ok" (a fit flagged "biased" names the bias its
interval does not cover, ``biased`` counts them; ``>2se``, the share of the biased fits whose realized error
exceeds two of their own standard errors on some coefficient, what the label promises; issue 45); the failures and
auto's refusals
(before spending; dpstats/planning/refusal.py); ``pred/real``, compare_methods' predicted "error" of the
coefficient its prediction is of (dpstats/planning/error_model.error_term) over that coefficient's realized
error, both the 68th percentile over the seeds (the error model's C(68)); the seconds per fit and their
ratio to statsmodels' OLS (QuantReg) on the same regression
(``x sm``, the median of five timed fits). The last lines pool every cell below eps = 1e6, per estimator.

    python benchmarks/bench_real_data.py [--seeds 100] [--eps 0.5 1 5 1e9] [--data engel CPS1988 ...]
        [--methods auto noisystats ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from real_regressions import REGRESSIONS, Regression

import dpstats
from dpstats.planning.candidates import label_of
from dpstats.planning.error_model import error_term

SEVERAL = ("auto", "auto (delta)", "noisystats", "histogram", "kng", "tukey")
ONE = ("auto", "auto (delta)", "theilsen", "gradient", "noisystats", "histogram", "kng")
MEDIAN = ("auto", "auto (delta)", "histogram", "kng", "tukey")
DELTA = 1e-6


def options(method: str) -> dict:
    """The call's method and its options ("auto (delta)": auto allowed approximate DP, so it may take Tukey)."""
    if method == "auto (delta)":
        return {"method": "auto", "delta": DELTA}
    if method == "tukey":
        return {"method": "tukey", "delta": DELTA}
    if method == "noisystats":
        return {"method": "noisystats", "singular": "repair"}
    return {"method": method}


@dataclass
class Cell:
    """One (regression, estimator, method, eps) over the seeds."""

    errors: list[np.ndarray] = field(default_factory=list)
    covered: list[np.ndarray] = field(default_factory=list)  # NaN where the fit reports no finite interval
    biased: list[bool] = field(default_factory=list)
    far: list[bool] = field(default_factory=list)  # per fit: some coefficient more than 2 SEs from the reference
    failed: int = 0
    refused: int = 0
    seconds: float = 0.0
    runs: int = 0
    chose: set[str] = field(default_factory=set)


def run_cell(reg: Regression, data: pd.DataFrame, estimator: str, method: str, eps: float, seeds: int,
             reference: pd.Series) -> Cell:  # fmt: skip
    cell = Cell()
    formula = reg.formula if estimator == "ols" else reg.median_formula
    fit = dpstats.dp_ols if estimator == "ols" else dpstats.dp_quantreg
    extra = {} if estimator == "ols" else {"q": 0.5}
    for seed in range(seeds):
        start = time.perf_counter()
        try:
            res = fit(formula, data, eps=eps, bounds=reg.bounds, levels=reg.levels, random_state=seed,
                      **extra, **options(method))  # fmt: skip
        except dpstats.RefusedBeforeSpending:
            cell.refused += 1
            continue
        finally:
            cell.seconds += time.perf_counter() - start
            cell.runs += 1
        cell.chose.add(res.method)
        if res.failed:
            cell.failed += 1
            continue
        params = res.params[reference.index].to_numpy()
        ci = res.conf_int(0.05).loc[reference.index]
        cell.errors.append(np.abs(params - reference.to_numpy()) / np.abs(reference.to_numpy()))
        covers = ((ci["lower"] <= reference) & (reference <= ci["upper"])).to_numpy(dtype=float)
        finite = np.isfinite(ci["lower"].to_numpy()) | np.isfinite(ci["upper"].to_numpy())
        cell.covered.append(np.where(finite, covers, np.nan))
        cell.biased.append(res.status == "biased")
        cell.far.append(np.abs(params - reference.to_numpy()) > 2 * res.bse[reference.index].to_numpy())
    return cell


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--eps", type=float, nargs="+", default=[0.5, 1.0, 5.0, 1e9])
    parser.add_argument("--data", nargs="+", default=[r.name for r in REGRESSIONS])
    parser.add_argument("--methods", nargs="+", default=None)
    parser.add_argument("--strong", type=float, default=5.0)
    args = parser.parse_args(argv)
    totals: dict[str, Totals] = {}  # per estimator
    print(f"{'data':<11} {'n':>6} {'est':<8} {'method':<12} {'eps':>6} {'rel err':>8} {'cover':>6} "
          f"{'ok cover':>8} {'biased':>6} {'>2se':>5} {'no CI':>5} {'fail':>5} {'refuse':>6} {'pred/real':>9} "
          f"{'s/fit':>6} {'x sm':>5}  chose")  # fmt: skip
    for reg in REGRESSIONS:
        if reg.name not in args.data:
            continue
        data = reg.load()
        for estimator in reg.estimators:
            formula = reg.formula if estimator == "ols" else reg.median_formula
            public, reference_seconds = timed_reference(formula, data, estimator)
            strong = (np.abs(public.tvalues) >= args.strong).to_numpy()
            methods = MEDIAN if estimator == "quantreg" else ONE if reg.one_regressor else SEVERAL
            for method in args.methods or methods:
                if method not in methods:
                    continue
                for eps in args.eps:
                    cell = run_cell(reg, data, estimator, method, eps, args.seeds, public.params)
                    if eps < 1e6:  # the limit's fits check the mechanisms, not what DP costs
                        totals.setdefault(estimator, Totals()).add(cell, strong)
                    line = row(reg, data, estimator, method, eps, cell, strong, public)
                    ratio = cell.seconds / max(cell.runs, 1) / reference_seconds
                    head, chose = line.rsplit("  ", 1)
                    print(f"{head} {ratio:>5.1f}  {chose}", flush=True)
    for estimator, total in totals.items():
        print(f"{estimator:<8} {total.line()}")
    if len(totals) > 1:
        print(f"{'both':<8} {sum(totals.values(), Totals()).line()}")


def timed_reference(formula: str, data: pd.DataFrame, estimator: str):
    """statsmodels' fit of ``formula`` (OLS, or QuantReg at the median) and the median seconds of five fits."""

    def fit():
        return smf.ols(formula, data).fit() if estimator == "ols" else smf.quantreg(formula, data).fit(q=0.5)

    seconds = []
    for _ in range(5):
        start = time.perf_counter()
        public = fit()
        seconds.append(time.perf_counter() - start)
    return public, float(np.median(seconds))


def row(reg: Regression, data: pd.DataFrame, estimator: str, method: str, eps: float, cell: Cell,
        strong: np.ndarray, public) -> str:  # fmt: skip
    """One printed line: the worst strong coefficient's median relative error and coverage, and the rest."""
    released = bool(cell.errors) and strong.any()  # every seed failed or was refused: nothing to measure
    worst_error = float(np.max(np.median(np.array(cell.errors)[:, strong], axis=0))) if released else math.nan
    covered = np.array(cell.covered)[:, strong] if released else np.empty((0, 0))
    ok = ~np.array(cell.biased, dtype=bool)
    worst_cover, ok_cover = worst_coverage(covered), worst_coverage(covered[ok] if released else covered)
    no_interval = int(np.isnan(covered).all(axis=1).sum()) if released else 0
    ratio = prediction_ratio(reg, data, estimator, method, eps, cell, public)
    far = far_when_biased(cell)
    return (f"{reg.name:<11} {len(data):>6} {estimator:<8} {method:<12} {eps:>6g} {worst_error:>8.3f} "
            f"{worst_cover:>6.2f} {ok_cover:>8.2f} {sum(cell.biased):>6} {far:>5.2f} {no_interval:>5} {cell.failed:>5} "
            f"{cell.refused:>6} {ratio:>9.2f} {cell.seconds / max(cell.runs, 1):>6.2f}  "
            f"{','.join(sorted(cell.chose))}")  # fmt: skip


def far_when_biased(cell: Cell) -> float:
    """The share of the fits labelled "biased" with some coefficient more than two of its own standard errors from
    the reference (NaN: none labelled)."""
    far = [f.any() for f, biased in zip(cell.far, cell.biased, strict=True) if biased]
    return float(np.mean(far)) if far else math.nan


@dataclass
class Totals:
    """Every cell's fits pooled: how many say "biased", how many of those are more than 2 SEs off, and how
    often an interval with a finite end covers a strong coefficient's reference."""

    fits: int = 0
    biased: int = 0
    far: int = 0
    covered: float = 0.0
    intervals: int = 0

    def __add__(self, other: Totals) -> Totals:
        return Totals(*(getattr(self, f.name) + getattr(other, f.name) for f in dataclasses.fields(self)))

    def add(self, cell: Cell, strong: np.ndarray) -> None:
        self.fits += len(cell.biased)
        self.biased += sum(cell.biased)
        self.far += sum(bool(f.any()) for f, b in zip(cell.far, cell.biased, strict=True) if b)
        covered = np.array(cell.covered)[:, strong] if cell.covered and strong.any() else np.empty(0)
        self.covered += float(np.nansum(covered))
        self.intervals += int(np.isfinite(covered).sum())

    def line(self) -> str:
        share = self.biased / max(self.fits, 1)
        far = self.far / self.biased if self.biased else math.nan
        cover = self.covered / self.intervals if self.intervals else math.nan
        return (
            f"all cells: {self.fits} fits, labelled biased {share:.3f}, of those > 2 SEs off {far:.3f}, "
            f"coverage of strong coefficients {cover:.3f} ({self.intervals} intervals)"
        )


def worst_coverage(covered: np.ndarray) -> float:
    """The smallest, over the coefficients, share of the fits with a finite interval that cover (NaN: none)."""
    counted = np.isfinite(covered).sum(axis=0) if covered.size else np.zeros(0)
    if not counted.any():
        return math.nan
    with np.errstate(invalid="ignore"):
        return float(np.nanmin(np.nansum(covered, axis=0) / np.where(counted > 0, counted, np.nan)))


def prediction_ratio(reg: Regression, data: pd.DataFrame, estimator: str, method: str, eps: float, cell: Cell,
                     public) -> float:  # fmt: skip
    """The plan's predicted error of its coefficient over that coefficient's realized median error (NaN where
    there is no prediction)."""
    if not cell.errors or eps > 1e6:
        return math.nan
    formula = reg.formula if estimator == "ols" else reg.median_formula
    delta = options(method).get("delta", 0.0)
    plan = dpstats.compare_methods(formula, len(data), eps=eps, bounds=reg.bounds, levels=reg.levels,
                                   estimator=estimator, delta=delta)  # fmt: skip
    table = plan.table
    call = options(method)
    mechanism_options = {k: v for k, v in call.items() if k not in ("method", "delta")}
    label = plan.chosen if call["method"] == "auto" else label_of(call["method"], mechanism_options, estimator)
    predicted = table.loc[table["method"] == label, "error"]
    if predicted.empty or not np.isfinite(predicted.iloc[0]):
        return math.nan
    term = error_term(plan.facts)
    j = list(public.params.index).index(term)
    realized = float(np.quantile(np.array(cell.errors)[:, j], 0.68)) * abs(float(public.params[term]))
    return float(predicted.iloc[0]) / realized if realized > 0 else math.nan


if __name__ == "__main__":
    main()

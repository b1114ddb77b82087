"""What DP costs on real public regressions: every mechanism and auto, against OLS and QuantReg (issue 28).

Seven textbook regressions on data shipped with the dependencies, with bounds and levels taken from the data's
documentation, never from the rows:

* engel (statsmodels; Koenker & Bassett 1982): food expenditure on income, 235 households; least squares and
  the median.
* fair (statsmodels; Fair 1978): affairs on age, years married, education and religiousness, 6,366 women
  (benchmarks/bench_limits.py's declarations).
* grunfeld (statsmodels; Grunfeld 1958): investment on market value and capital, 220 firm-years.
* CPS1985 (AER; Berndt 1991): the Mincer equation, log hourly wage on education, experience, its square and
  gender, 534 workers (vignettes/01_paper_workflow.md's declarations).
* CPS1988 (AER; Bierens & Ginther 2001, Kleiber & Zeileis 2008, section 3.3): log weekly wage on experience, its
  square, education and ethnicity, 28,155 men; least squares and the median.
* PSID1976 (AER; Mroz 1987, Wooldridge 2010, example 15.1): log hourly wage of the 428 working women on
  education, experience and its square.
* HousePrices (AER; Anglin & Gencay 1996): log price on log lot size, rooms, stories, garage places and six
  yes/no amenities, 546 houses.

For each regression x estimator x mechanism (auto pure and with delta = 1e-6 included) x eps in ``--eps``, over
``--seeds`` seeds: for the coefficients whose non-private |t| is at least ``--strong`` (5), the median over seeds of
the relative error against OLS (QuantReg at the median), the worst over those coefficients; the share of seeds
whose 95% interval covers the non-private value (the worst coefficient), over the fits that report a finite
interval (a fit without standard errors, e.g. Tukey where the spreads are unaffordable, says so and is counted in
``no CI``); ``ok cover``, the same over the fits whose status is "ok" (a fit flagged "biased" names the bias its
interval does not cover, ``biased`` counts them); the failures and auto's refusals
(before spending; dpstats/planning/refusal.py); ``pred/real``, compare_methods' predicted "error" of the
coefficient its prediction is of (dpstats/planning/error_model.error_term) over that coefficient's realized
median error; the seconds per fit and their ratio to statsmodels' OLS (QuantReg) on the same regression
(``x sm``, the median of five timed fits).

    python benchmarks/bench_real_data.py [--seeds 100] [--eps 0.5 1 5 1e9] [--data engel CPS1988 ...]
        [--methods auto noisystats ...]
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import statsmodels.api as sm
import statsmodels.formula.api as smf
from bench_limits import ENGEL, ENGEL_BOUNDS, FAIR, FAIR_BOUNDS, FAIR_LEVELS

import dpstats
from dpstats.planning.candidates import label_of
from dpstats.planning.error_model import error_term

YES_NO = ["no", "yes"]


@dataclass(frozen=True)
class Regression:
    """One public regression: its data, formula, declarations and the estimators it is run with."""

    name: str
    load: Callable[[], pd.DataFrame]
    formula: str
    bounds: dict
    levels: dict | None = None
    estimators: tuple[str, ...] = ("ols",)
    median_formula: str | None = None
    one_regressor: bool = False
    notes: dict = field(default_factory=dict)


def _aer(name: str) -> pd.DataFrame:
    """An AER data set through rpy2 (Debian's r-cran-aer, installed by scripts/setup.sh)."""
    from dpstats import r_interop

    ro = r_interop.start_r()
    ro.r(f'data("{name}", package = "AER")')
    return r_interop.r_to_pandas(ro.r[name])


def _psid1976() -> pd.DataFrame:
    data = _aer("PSID1976")
    return data[data["participation"] == "yes"].reset_index(drop=True)  # Mroz's wage equation: working women


MINCER_1985 = "np.log(wage) ~ education + experience + I(experience**2 / 100) + C(gender)"
CPS1988 = "np.log(wage) ~ experience + I(experience**2 / 100) + education + C(ethnicity)"
HOUSES = (
    "np.log(price) ~ np.log(lotsize) + bedrooms + bathrooms + stories + garage + C(driveway) + C(recreation)"
    " + C(fullbase) + C(gasheat) + C(aircon) + C(prefer)"
)
REGRESSIONS = (
    Regression("engel", lambda: sm.datasets.engel.load_pandas().data, ENGEL, ENGEL_BOUNDS,
               estimators=("ols", "quantreg"), median_formula=ENGEL, one_regressor=True),
    Regression("fair", lambda: sm.datasets.fair.load_pandas().data, FAIR, FAIR_BOUNDS, FAIR_LEVELS),
    Regression("grunfeld", lambda: sm.datasets.grunfeld.load_pandas().data, "invest ~ value + capital",
               {"invest": (0, 1600), "value": (0, 6500), "capital": (0, 2300)}),
    Regression("CPS1985", lambda: _aer("CPS1985"), MINCER_1985,
               {"wage": (1, 50), "education": (0, 18), "experience": (0, 60)}, {"gender": ["male", "female"]}),
    # weekly wages of men 18-70 above $50 a year-week; experience = age - education - 6 over ages 18-70
    Regression("CPS1988", lambda: _aer("CPS1988"), CPS1988,
               {"wage": (50, 20000), "education": (0, 18), "experience": (-6, 64)}, {"ethnicity": ["cauc", "afam"]},
               estimators=("ols", "quantreg"), median_formula=CPS1988),
    # 1975 hourly wages; education in years (PSID: at most 17); experience of women aged 30-60
    Regression("PSID1976", _psid1976, "np.log(wage) ~ education + experience + I(experience**2)",
               {"wage": (0.1, 30), "education": (0, 17), "experience": (0, 45)}),
    # Windsor (Ontario) sales of 1987: prices in Canadian dollars, lots in square feet
    Regression("HousePrices", lambda: _aer("HousePrices"), HOUSES,
               {"price": (10_000, 250_000), "lotsize": (1000, 20_000), "bedrooms": (1, 6), "bathrooms": (1, 4),
                "stories": (1, 4), "garage": (0, 3)},
               {k: YES_NO for k in ("driveway", "recreation", "fullbase", "gasheat", "aircon", "prefer")}),
)  # fmt: skip

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
    return cell


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--eps", type=float, nargs="+", default=[0.5, 1.0, 5.0, 1e9])
    parser.add_argument("--data", nargs="+", default=[r.name for r in REGRESSIONS])
    parser.add_argument("--methods", nargs="+", default=None)
    parser.add_argument("--strong", type=float, default=5.0)
    args = parser.parse_args(argv)
    print(f"{'data':<11} {'n':>6} {'est':<8} {'method':<12} {'eps':>6} {'rel err':>8} {'cover':>6} "
          f"{'ok cover':>8} {'biased':>6} {'no CI':>5} {'fail':>5} {'refuse':>6} {'pred/real':>9} {'s/fit':>6} "
          f"{'x sm':>5}  chose")  # fmt: skip
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
                    line = row(reg, data, estimator, method, eps, cell, strong, public)
                    ratio = cell.seconds / max(cell.runs, 1) / reference_seconds
                    head, chose = line.rsplit("  ", 1)
                    print(f"{head} {ratio:>5.1f}  {chose}", flush=True)


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
    return (f"{reg.name:<11} {len(data):>6} {estimator:<8} {method:<12} {eps:>6g} {worst_error:>8.3f} "
            f"{worst_cover:>6.2f} {ok_cover:>8.2f} {sum(cell.biased):>6} {no_interval:>5} {cell.failed:>5} "
            f"{cell.refused:>6} {ratio:>9.2f} {cell.seconds / max(cell.runs, 1):>6.2f}  "
            f"{','.join(sorted(cell.chose))}")  # fmt: skip


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
    realized = float(np.median(np.array(cell.errors)[:, j])) * abs(float(public.params[term]))
    return float(predicted.iloc[0]) / realized if realized > 0 else math.nan


if __name__ == "__main__":
    main()

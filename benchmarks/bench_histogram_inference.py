"""The perturbed histogram's standard errors: their cost and their eps -> infinity limits.

1. Time (target: intervals add at most 3x the point fit's time at n = 10^4): the
   median wall time of ``dp_ols`` / ``dp_quantreg(method="histogram")`` on the
   designs of dpstats/uncertainty/coverage.py, with the intervals and with them switched off
   (``cell_intervals`` replaced by a stub: the point fit alone). The machine's
   BLAS threads compete with other processes on a shared machine; run with
   ``OPENBLAS_NUM_THREADS=1`` for stable figures.
2. Limits at eps = 1e9 with fine bins (100 per axis), n = 10^4: least squares'
   standard errors over statsmodels' HC1; the median's over Powell's (1991)
   kernel sandwich on the raw data (QuantReg's bandwidth) and over statsmodels'
   QuantReg (whose default covariance uses one density for all x, so it is not
   heteroskedasticity-robust); each averaged over 10 seeds of the bootstrap.
3. ``--truth``: the Monte Carlo sd of QuantReg's estimates over 200 samples of
   the heteroskedastic design, against the mean of both standard errors.
4. ``--sparse``: least squares' 95% coverage on the symmetric design at n = 1,000,
   eps = 1, over 200 data sets, at the default bins and at finer ones, against
   the layout's expected rows per cell in units of the cut-off: below 1 the fit's
   note warns that the intervals are too narrow (the sparse layouts of
   dpstats/mechanisms/histogram/inference.py).
5. ``--binning``: the binning bias of the median on statsmodels' engel data
   (income declared on 0-5,000): QuantReg's slope on the raw rows, with income
   moved to its bin's centre and to its bin's mean, and the histogram's fit
   without noise (eps = 1e9) on the same bins.

    python benchmarks/bench_histogram_inference.py [--reps 15] [--truth] [--sparse] [--binning]
"""

from __future__ import annotations

import argparse
from unittest import mock

import numpy as np
import statsmodels.api as sm
import statsmodels.formula.api as smf
from timing import median_time

import dpstats
from dpstats.mechanisms.histogram import cell_fits
from dpstats.mechanisms.histogram.inference import SPARSE_NOTE, Intervals
from dpstats.uncertainty.coverage import DESIGNS, coverage_cell


def _no_intervals(hist, estimator, names, policy, X, *args, **kwargs) -> Intervals:
    p = X.shape[1]
    return Intervals(np.full((p, p), np.nan), None, "")


def _fit(estimator: str, name: str, data, **options):
    design = DESIGNS[name]
    kwargs = dict(bounds=design.bounds, levels=design.levels or None, method="histogram", **options)
    if estimator == "quantreg":
        return dpstats.dp_quantreg(design.formula, data, q=0.5, **kwargs)
    return dpstats.dp_ols(design.formula, data, **kwargs)


def timing(reps: int) -> None:
    print(f"{'estimator':<9} {'design':<16} {'eps':>4} {'point, ms':>10} {'with SEs, ms':>13} {'added/point':>12}")
    for eps in (1.0, 5.0):
        for name in DESIGNS:
            data = DESIGNS[name].draw(np.random.default_rng(0), 10_000)
            for estimator in ("ols", "quantreg"):
                call = lambda: _fit(estimator, name, data, eps=eps, random_state=1)  # noqa: B023, E731
                full = median_time(call, reps)
                with mock.patch.object(cell_fits, "cell_intervals", _no_intervals):
                    point = median_time(call, reps)
                verdict = "PASS" if (full - point) / point <= 3 else "MISS"
                print(
                    f"{estimator:<9} {name:<16} {eps:>4g} {1e3 * point:>10.2f} {1e3 * full:>13.2f} "
                    f"{(full - point) / point:>12.2f}  {verdict}",
                    flush=True,
                )


def powell_sandwich(formula: str, data, q: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Powell's kernel sandwich on the raw data with QuantReg's bandwidth, and QuantReg's own SEs."""
    fit = smf.quantreg(formula, data).fit(q=q)
    X, e = fit.model.exog, fit.resid.to_numpy()
    u = e / fit.bandwidth
    density = np.where(np.abs(u) <= 1, 0.75 * (1 - u**2), 0.0) / fit.bandwidth
    inverse = np.linalg.inv(X.T @ (density[:, None] * X))
    meat = X.T @ ((((e < 0) - q) ** 2)[:, None] * X)
    return np.sqrt(np.diag(inverse @ meat @ inverse)), fit.bse.to_numpy()


def limits() -> None:
    print("\neps = 1e9, 100 bins per axis, n = 10^4; standard errors averaged over 10 bootstrap seeds")
    for name, design in DESIGNS.items():
        data = design.draw(np.random.default_rng(1), 10_000)
        terms = list(design.truth)
        hc1 = smf.ols(design.formula, data).fit(cov_type="HC1").bse[terms].to_numpy()
        powell, quantreg = powell_sandwich(design.formula, data)
        order = [smf.ols(design.formula, data).fit().params.index.get_loc(t) for t in terms]
        for estimator, references in (("ols", {"HC1": hc1}), ("quantreg", {"Powell": powell, "QuantReg": quantreg})):
            bse = np.mean(
                [
                    _fit(estimator, name, data, eps=1e9, bins=100, random_state=s).bse[terms].to_numpy()
                    for s in range(10)
                ],
                axis=0,
            )
            for label, reference in references.items():
                reference = reference if label == "HC1" else reference[order]
                ratios = ", ".join(f"{t}: {r:.3f}" for t, r in zip(terms, bse / reference, strict=True))
                print(f"{estimator:<9} {name:<16} SE / {label:<8} {ratios}", flush=True)


def truth() -> None:
    design = DESIGNS["heteroskedastic"]
    estimates, statsmodels_bse, ours = [], [], []
    for r in range(200):
        data = design.draw(np.random.default_rng(1000 + r), 10_000)
        fit = smf.quantreg(design.formula, data).fit(q=0.5)
        estimates.append(fit.params.to_numpy())
        statsmodels_bse.append(fit.bse.to_numpy())
        ours.append(_fit("quantreg", "heteroskedastic", data, eps=1e9, bins=100, random_state=r).bse.to_numpy())
    print("\nheteroskedastic design, n = 10^4, 200 samples (Intercept, x):")
    print(f"  Monte Carlo sd of QuantReg's estimates   {np.std(estimates, axis=0, ddof=1).round(4)}")
    print(f"  mean statsmodels QuantReg SE              {np.mean(statsmodels_bse, axis=0).round(4)}")
    print(f"  mean histogram SE (eps = 1e9, 100 bins)   {np.mean(ours, axis=0).round(4)}")


def sparse(n: int = 1000, eps: float = 1.0, reps: int = 200) -> None:
    design = DESIGNS["symmetric"]
    print(f"\nleast squares, symmetric design, n = {n}, eps = {eps:g}, {reps} data sets")
    print(f"{'bins':>5} {'cells':>6} {'rows/cell/cut-off':>18} {'note':>5}  coverage (Intercept, x)  width/spread")
    for bins in (None, 14, 25):
        options = {} if bins is None else {"bins": bins}

        def fit(data, _design, seed, options=options):
            return _fit("ols", "symmetric", data, eps=eps, random_state=seed, **options)

        first = fit(design.draw(np.random.default_rng(0), n), design, 0)
        cells, cut = first.hyperparameters["cells"], first.hyperparameters["cutoff"]
        warned = "yes" if SPARSE_NOTE.split("{")[0] in first.se_note else "no"
        cell = coverage_cell(design, n, reps, fit, seed=7)
        print(
            f"{first.hyperparameters['bins']['x']:>5} {cells:>6} {n / cells / cut:>18.2f} {warned:>5}  "
            f"{' '.join(f'{c:.3f}' for c in cell.coverage):>24}  {' '.join(f'{r:.2f}' for r in cell.width_ratio)}",
            flush=True,
        )


def binning() -> None:
    engel = sm.datasets.engel.load_pandas().data
    bounds = {"income": (0.0, 5000.0), "foodexp": (0.0, 2500.0)}
    raw = smf.quantreg("foodexp ~ income", engel).fit(q=0.5).params["income"]
    print(f"\nengel's median, slope on income: QuantReg on the raw rows {raw:.3f}")
    print(f"{'bins':>5} {'rows in bins 1-3':>17} {'at centres':>11} {'at bin means':>13} {'histogram, eps = 1e9':>21}")
    for bins in (8, 16, 32):
        width = 5000.0 / bins
        index = np.floor(engel["income"] / width)
        centres = engel.assign(income=(index + 0.5) * width)
        means = engel.assign(income=engel.groupby(index)["income"].transform("mean"))
        slopes = [smf.quantreg("foodexp ~ income", d).fit(q=0.5).params["income"] for d in (centres, means)]
        fit = dpstats.dp_quantreg(
            "foodexp ~ income", engel, 0.5, eps=1e9, bounds=bounds, method="histogram", bins=bins, random_state=0
        )
        counts = np.bincount(index.astype(int), minlength=bins)[:3]
        print(
            f"{bins:>5} {' '.join(map(str, counts)):>17} {slopes[0]:>11.3f} {slopes[1]:>13.3f} "
            f"{fit.params['income']:>21.3f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--truth", action="store_true")
    parser.add_argument("--sparse", action="store_true", help="only the sparse-layout coverage (section 4)")
    parser.add_argument("--binning", action="store_true", help="only engel's binning bias (section 5)")
    args = parser.parse_args()
    if args.sparse or args.binning:
        if args.sparse:
            sparse()
        if args.binning:
            binning()
        return
    timing(args.reps)
    limits()
    if args.truth:
        truth()


if __name__ == "__main__":
    main()

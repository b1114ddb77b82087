"""Every mechanism at eps = 1e9 against its non-private twin, on real data with factors (the limits table).

Least squares against statsmodels' OLS and median regression against QuantReg,
on statsmodels' fair data (Fair 1978: 6,366 women; affairs on age, years married,
education and the four-level religiousness factor) for the mechanisms that fit
several regressors, and on engel (235 households, one regressor) for those that
fit one. Each row prints the largest relative deviation over the coefficients
(target: within 2%), or the bias the mechanism keeps, stated by its docstring:

* Theil-Sen and Tukey estimate other functionals (the median of pairwise
  slopes; the Tukey median of batch fits): at eps -> infinity they reach their
  own non-private estimators, which differ from OLS by about a standard error;
* the histogram fits binned data: its binning bias does not vanish with eps;
* gradient descent runs T = 80 steps: its distance from OLS is the
  optimisation error of T steps.

    python benchmarks/bench_limits.py
"""

from __future__ import annotations

import numpy as np
import statsmodels.api as sm
import statsmodels.formula.api as smf

import dpstats

FAIR = "affairs ~ age + yrs_married + educ + C(religious)"
FAIR_BOUNDS = {"affairs": (0, 60), "age": (17.5, 42), "yrs_married": (0.5, 23), "educ": (9, 20)}
FAIR_LEVELS = {"religious": [1.0, 2.0, 3.0, 4.0]}
ENGEL = "foodexp ~ income"
ENGEL_BOUNDS = {"income": (0, 5000), "foodexp": (0, 2500)}
EPS = 1e9
TARGET = 0.02

ROWS = [
    ("noisystats", "ols", "fair", {}),
    ("kng", "ols", "fair", {"B": 8.0}),
    ("histogram", "ols", "fair", {}),
    ("tukey", "ols", "fair", {"delta": 1e-6}),
    ("theilsen", "ols", "engel", {}),
    ("gradient", "ols", "engel", {}),
    ("histogram", "quantreg", "fair", {}),
    ("kng", "quantreg", "engel", {}),
]


def main() -> None:
    data = {"fair": sm.datasets.fair.load_pandas().data, "engel": sm.datasets.engel.load_pandas().data}
    setups = {"fair": (FAIR, FAIR_BOUNDS, FAIR_LEVELS), "engel": (ENGEL, ENGEL_BOUNDS, None)}
    print(f"{'method':<11} {'estimator':<9} {'data':<6} {'max rel. dev.':>13}  verdict")
    for method, estimator, name, options in ROWS:
        formula, bounds, levels = setups[name]
        frame = data[name]
        common = dict(eps=EPS, bounds=bounds, levels=levels, method=method, random_state=1, **options)
        if estimator == "ols":
            reference = smf.ols(formula, frame).fit().params
            res = dpstats.dp_ols(formula, frame, **common)
        else:
            reference = smf.quantreg(formula, frame).fit(q=0.5).params
            res = dpstats.dp_quantreg(formula, frame, q=0.5, **common)
        gap = float(np.max(np.abs(res.params - reference) / np.abs(reference)))
        verdict = "PASS" if gap <= TARGET else "keeps a stated bias (module docstring)"
        print(f"{method:<11} {estimator:<9} {name:<6} {gap:>13.4f}  {verdict}", flush=True)


if __name__ == "__main__":
    main()

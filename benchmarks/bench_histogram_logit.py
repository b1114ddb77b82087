"""The perturbed histogram's logit and probit (Lei 2011, section 3.1): coverage, width, limits and time.

1. Coverage and width (the default; ``--link probit`` for probits, with
   ``P(y = 1) = Phi(-1.5 + 0.3 x1 - 0.3 x2 + 0.3 x3)``): simulated logits with a base rate of
   about 10% and three regressors -- x1, x2 ~ N(0, 1) clipped to the declared
   [-3, 3], x3 ~ Bernoulli(1/2) declared whole-valued -- and
   ``P(y = 1) = expit(-2.65 + 0.5 x1 - 0.5 x2 + 0.5 x3)``; for n in 1,000 to
   100,000 and eps in 1 and 5, ``--reps`` data sets each, the share of 95%
   intervals (``dp_logit(..., method="histogram")``'s bootstrap, post-processing)
   that cover the true coefficient, their mean width over the non-private
   Logit's (statsmodels), the estimates' bias in units of their Monte Carlo
   sd, and the fits that failed. The design is correctly specified, so the
   truth is the estimand of Logit too.
2. ``--fair``: the limit at eps = 1e9 on statsmodels' fair data
   (``I(affairs > 0)``, six regressors, rate_marriage, religious and educ
   declared whole-valued): the relative gap to statsmodels' Logit and Probit,
   at the default bins and at bins that hold one of fair's values each.
3. ``--time``: a 30,000-row logit with standard errors against statsmodels'
   Logit fit (median wall time of ``--reps`` runs each).

    python benchmarks/bench_histogram_logit.py [--reps 200] [--link probit] [--fair] [--time]
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import special
from timing import median_time

import dpstats
from dpstats.privacy.noise import make_rng
from dpstats.uncertainty.coverage import coverage_band
from dpstats.uncertainty.intervals import confidence_intervals

TRUTHS = {"logit": np.array([-2.65, 0.5, -0.5, 0.5]), "probit": np.array([-1.5, 0.3, -0.3, 0.3])}
FORMULA = "I(y > 0) ~ x1 + x2 + x3"
REFERENCE = "y ~ x1 + x2 + x3"
BOUNDS = {"x1": (-3.0, 3.0), "x2": (-3.0, 3.0), "x3": (0.0, 1.0), "y": (0.0, 1.0)}
INTEGERS = ["x3"]
FAIR_FORMULA = "I(affairs > 0) ~ rate_marriage + age + yrs_married + children + religious + educ"
FAIR_BOUNDS = {
    "rate_marriage": (1, 5), "age": (17.5, 42), "yrs_married": (0.5, 23), "children": (0, 5.5),
    "religious": (1, 4), "educ": (9, 20),
}  # fmt: skip
FAIR_INTEGERS = ["rate_marriage", "religious", "educ"]
FAIR_VALUE_BINS = {"rate_marriage": 5, "age": 6, "yrs_married": 12, "children": 6, "religious": 4, "educ": 6}
"""Bins that hold one of fair's values each (age 17.5, 22, ..., 42; yrs_married 0.5, 2.5, 6, 9, 13, 16.5, 23;
children 0-4 and 5.5; educ 9, 12, 14, 16, 17, 20; rate_marriage 1-5; religious 1-4)."""


def simulated_logit(seed: int, n: int, link: str = "logit") -> pd.DataFrame:
    """One data set of the design above (x3 and y 0/1; the formula's comparison makes y's two cells public)."""
    rng = make_rng(seed)
    x1 = np.clip(rng.normal(size=n), -3.0, 3.0)
    x2 = np.clip(rng.normal(size=n), -3.0, 3.0)
    x3 = (rng.uniform(size=n) < 0.5).astype(float)
    truth = TRUTHS[link]
    eta = truth[0] + truth[1] * x1 + truth[2] * x2 + truth[3] * x3
    mean = special.expit(eta) if link == "logit" else special.ndtr(eta)
    y = (rng.uniform(size=n) < mean).astype(float)
    return pd.DataFrame({"y": y, "x1": x1, "x2": x2, "x3": x3})


def fit_logit(data: pd.DataFrame, eps: float, seed: int, link: str = "logit", **options):
    """``dp_logit`` (or ``dp_probit``) on the histogram, without the marginal effects' share."""
    call = dpstats.dp_logit if link == "logit" else dpstats.dp_probit
    return call(
        FORMULA, data, eps=eps, bounds=BOUNDS, method="histogram", integers=INTEGERS, random_state=seed,
        margins_share=0, **options,
    )  # fmt: skip


def coverage(reps: int, sizes: tuple[int, ...], epsilons: tuple[float, ...], link: str) -> None:
    lo, hi = coverage_band(reps)
    truth = TRUTHS[link]
    reference = smf.logit if link == "logit" else smf.probit
    print(f"{link}: 95% intervals over {reps} data sets (band for a true 0.95 at 4 sd: {lo:.3f}-{hi:.3f})")
    print(f"{'n':>7} {'eps':>4} {'coverage per coefficient':>32} {'width / Logit':>26} {'bias / sd':>26} failed")
    for n in sizes:
        for eps in epsilons:
            covered, widths, estimates, failed = [], [], [], 0
            for seed in range(reps):
                data = simulated_logit(seed, n, link)
                res = fit_logit(data, eps, 10_000 + seed, link)
                if res.failed:
                    failed += 1
                    continue
                lower, upper = confidence_intervals(res.params, res.cov_params(), res.replicates, 0.05)
                ref = reference(REFERENCE, data).fit(disp=0)
                covered.append((lower <= truth) & (truth <= upper))
                widths.append((upper - lower) / (2 * 1.96 * ref.bse.to_numpy()))
                estimates.append(res.params)
            est = np.array(estimates)
            bias = (est.mean(axis=0) - truth) / est.std(axis=0)
            row = " ".join(f"{c:.3f}" for c in np.mean(covered, axis=0))
            width = " ".join(f"{w:5.2f}" for w in np.median(widths, axis=0))
            print(f"{n:>7} {eps:>4g} {row:>32} {width:>26} {' '.join(f'{b:+5.2f}' for b in bias):>26} {failed}")


def fair_limits() -> None:
    fair = sm.datasets.fair.load_pandas().data.assign(any=lambda d: (d.affairs > 0).astype(float))
    rhs = FAIR_FORMULA.split("~")[1]
    for link, model in (("logit", smf.logit), ("probit", smf.probit)):
        ref = model("any ~" + rhs, fair).fit(disp=0)
        for label, bins in (("default bins", None), ("one value a cell", FAIR_VALUE_BINS)):
            options = {} if bins is None else {"bins": bins}
            call = dpstats.dp_logit if link == "logit" else dpstats.dp_probit
            res = call(FAIR_FORMULA, fair, eps=1e9, bounds=FAIR_BOUNDS, method="histogram", integers=FAIR_INTEGERS,
                       random_state=0, margins_share=0, **options)  # fmt: skip
            ours = np.asarray(res.params)
            gap = (ours - ref.params.to_numpy()) / np.abs(ref.params.to_numpy())
            in_se = (ours - ref.params.to_numpy()) / ref.bse.to_numpy()
            print(f"{link:<7} {label:<20} relative gap {np.array2string(gap, precision=4)}")
            print(f"{'':<28} gap / Logit's SE {np.array2string(in_se, precision=3)}")


def timing(reps: int) -> None:
    data = simulated_logit(0, 30_000)
    theirs = median_time(lambda: smf.logit(REFERENCE, data).fit(disp=0), reps)
    ours = median_time(lambda: fit_logit(data, 1.0, 0), reps)
    margins = median_time(
        lambda: dpstats.dp_logit(FORMULA, data, eps=1.0, bounds=BOUNDS, method="histogram", integers=INTEGERS,
                                 random_state=0), reps)  # fmt: skip
    print(f"n = 30,000, statsmodels Logit {theirs * 1e3:.0f} ms; dp_logit(method='histogram') with SEs "
          f"{ours * 1e3:.0f} ms (ratio {ours / theirs:.1f}), with the marginal effects' release too "
          f"{margins * 1e3:.0f} ms (ratio {margins / theirs:.1f})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0, 5.0])
    parser.add_argument("--link", choices=["logit", "probit"], default="logit")
    parser.add_argument("--fair", action="store_true")
    parser.add_argument("--time", action="store_true")
    args = parser.parse_args()
    if args.fair:
        fair_limits()
    elif args.time:
        timing(args.reps)
    else:
        coverage(args.reps, tuple(args.sizes), tuple(args.eps), args.link)


if __name__ == "__main__":
    main()

"""DP Newton's logit on wage regressions with a variable and its square, preconditioned or not (issue 45).

A Mincer-style index ``education + age + I(age**2 / 100)`` has two columns that move
together over the declared range, so the released curvatures' weakest direction is
their difference; dpstats/mechanisms/precondition.py releases the square as its
residual from the variable's line (exact, public) and maps the estimate back. This
prints, per regression and eps over the seeds: the median of the largest error in
statsmodels' standard errors, how many fits say "biased" (Newton's shrinkage flag,
dpstats/mechanisms/newton/mechanism.py) and the coverage of statsmodels' MLE by the
95% intervals. ``--plain`` fits without the preconditioning, for the comparison.

    cd benchmarks && python bench_newton_squares.py [--seeds 10] [--eps 1 5 20] [--plain]

The outcomes are public thresholds of the wage (a comparison, so the response is 0/1
from the formula): CPSSW8's earnings above 20 dollars an hour, CPS1988's weekly wage
above its median.
"""

from __future__ import annotations

import argparse
from unittest import mock

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from real_regressions import REGRESSIONS

import dpstats
from dpstats.mechanisms import precondition

BY_NAME = {r.name: r for r in REGRESSIONS}


def cases() -> list[tuple[str, str, pd.DataFrame, dict, dict]]:
    """(name, formula, data, bounds, levels) of the two wage logits."""
    out = []
    for name, wage, cut in (("CPSSW8", "earnings", 20.0), ("CPS1988", "wage", None)):
        reg = BY_NAME[name]
        data = reg.load()
        threshold = float(data[wage].median()) if cut is None else cut
        data = data.assign(high=(data[wage] > threshold).astype(float))
        formula = "high ~" + reg.formula.split("~", 1)[1]
        bounds = {k: v for k, v in reg.bounds.items() if k != wage} | {"high": (0.0, 1.0)}
        out.append((name, formula, data, bounds, reg.levels))
    return out


def run(seeds: int, eps_values: list[float]) -> pd.DataFrame:
    rows = []
    for name, formula, data, bounds, levels in cases():
        mle = smf.logit(formula, data).fit(disp=0)
        for eps in eps_values:
            errors, biased, covered, total = [], 0, 0, 0
            for seed in range(seeds):
                res = dpstats.dp_logit(formula, data, eps=eps, bounds=bounds, levels=levels, integers=["high"],
                                       method="newton", random_state=seed)  # fmt: skip
                errors.append(float(np.max(np.abs(res.params - mle.params) / mle.bse)))
                biased += res.status == "biased"
                ci = res.conf_int()
                hits = (ci["lower"] <= mle.params) & (mle.params <= ci["upper"])
                covered, total = covered + int(hits.sum()), total + len(hits)
            rows.append({"data": name, "eps": eps, "fits": seeds, "err/se (median)": np.median(errors),
                         "biased": biased, "coverage": covered / total})  # fmt: skip
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0, 5.0, 20.0])
    parser.add_argument("--plain", action="store_true", help="without the preconditioning")
    args = parser.parse_args(argv)
    if args.plain:
        with mock.patch.object(precondition, "pairs", lambda design: ()):
            table = run(args.seeds, args.eps)
    else:
        table = run(args.seeds, args.eps)
    print(("without" if args.plain else "with") + " preconditioning")
    print(table.to_string(index=False, float_format="{:.3g}".format))


if __name__ == "__main__":
    main()

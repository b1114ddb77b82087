"""CPS1988's Mincer equation at eps 5, pure (issue 42's must-show): each coefficient with non-private |t| >= 30,
within 10% of OLS and covered by its interval, over 10 seeds of auto.

    python benchmarks/bench_mincer.py [--eps 5] [--seeds 10]

The regression and its declarations are bench_real_data.py's (AER's CPS1988, 28,155 men).
"""

from __future__ import annotations

import argparse

import numpy as np  # noqa: F401 -- the formulas call np.log, which statsmodels looks up here
import pandas as pd
import statsmodels.formula.api as smf
from real_regressions import REGRESSIONS

import dpstats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eps", type=float, default=5.0)
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    reg = next(r for r in REGRESSIONS if r.name == "CPS1988")
    data = reg.load()
    ref = smf.ols(reg.formula, data).fit()
    strong = [k for k in ref.params.index if abs(ref.params[k] / ref.bse[k]) >= 30]
    rows, methods = {k: {"within 10%": 0, "covered": 0} for k in strong}, set()
    for seed in range(args.seeds):
        res = dpstats.dp_ols(reg.formula, data, eps=args.eps, bounds=reg.bounds, levels=reg.levels, random_state=seed)
        methods.add(res.method)
        intervals = res.conf_int()
        for k in strong:
            rows[k]["within 10%"] += abs(res.params[k] / ref.params[k] - 1) <= 0.10
            rows[k]["covered"] += intervals.loc[k].iloc[0] <= ref.params[k] <= intervals.loc[k].iloc[1]
    table = pd.DataFrame(rows).T.assign(t=[ref.params[k] / ref.bse[k] for k in strong])
    print(f"CPS1988, {reg.formula}, eps {args.eps:g}, {args.seeds} seeds of auto ({', '.join(sorted(methods))})")
    print(table.to_string(float_format="{:.1f}".format))


if __name__ == "__main__":
    main()

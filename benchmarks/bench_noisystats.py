"""Benchmark: dp_ols (NoisyStats) against statsmodels OLS, and the import time of dpstats.

Run with ``python benchmarks/bench_noisystats.py [--repeats N]``. It prints one
table:

* end-to-end time of ``dp_ols("y ~ x1 + x2 + C(g)", ..., method="noisystats")``
  (formula parsing, design, mechanism, results object) against
  ``statsmodels.formula.api.ols(...).fit()`` on the same synthetic data, at
  n = 1,000 and n = 100,000 (median of repeated runs), their ratio and the
  target ratio <= 1.2;
* the wall time of ``python -c "import dpstats"`` in a fresh subprocess
  (median of 5 runs; target < 0.5 s); for reference, ``import dpstats.api.estimators``
  (the fitting stack that the first ``dp_ols`` call loads, since ``import
  dpstats`` is lazy) and ``import statsmodels.formula.api``.

Each target is marked PASS or MISS. The exit code is 0 regardless.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import numpy as np
import pandas as pd
from timing import median_time

FORMULA = "y ~ x1 + x2 + C(g)"
BOUNDS = {"x1": (0.0, 10.0), "x2": (-5.0, 5.0), "y": (-50.0, 80.0)}
LEVELS = {"g": ["a", "b", "c", "d"]}
SIZES = (1_000, 100_000)
RATIO_TARGET = 1.2
IMPORT_TARGET = 0.5
SEED = 20240601


def synthetic(n: int, seed: int = SEED) -> pd.DataFrame:
    """y = 1 + 2 x1 - 1.5 x2 + effect(g) + noise, inside the declared bounds."""
    rng = np.random.default_rng(seed)
    x1 = rng.uniform(0.0, 10.0, n)
    x2 = rng.uniform(-5.0, 5.0, n)
    g = rng.choice(LEVELS["g"], n)
    effect = pd.Series(g).map({"a": 0.0, "b": 1.0, "c": -2.0, "d": 3.0}).to_numpy()
    y = np.clip(1.0 + 2.0 * x1 - 1.5 * x2 + effect + rng.normal(0.0, 2.0, n), *BOUNDS["y"])
    return pd.DataFrame({"y": y, "x1": x1, "x2": x2, "g": g})


def import_time(module: str, runs: int = 5) -> float:
    """Median wall time of ``python -c "import module"`` in a fresh interpreter."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table (exit code 0 regardless)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15, help="timed runs per fit (median; default 15)")
    args = parser.parse_args(argv)

    import statsmodels.formula.api as smf

    from dpstats import dp_ols

    rows = []
    for n in SIZES:
        data = synthetic(n)
        repeats = args.repeats if n <= 10_000 else max(3, args.repeats // 3)

        def dp(data: pd.DataFrame = data) -> object:
            return dp_ols(FORMULA, data, eps=1.0, bounds=BOUNDS, levels=LEVELS, method="noisystats", random_state=0)

        def sm(data: pd.DataFrame = data) -> object:
            return smf.ols(FORMULA, data).fit()

        t_dp, t_sm = median_time(dp, repeats), median_time(sm, repeats)
        rows.append((n, t_dp, t_sm, t_dp / t_sm, repeats))

    t_import = import_time("dpstats")
    t_import_api = import_time("dpstats.api.estimators")
    t_import_sm = import_time("statsmodels.formula.api")

    print(f"dpstats benchmark: {FORMULA}, NoisyStats, eps = 1 (python {sys.version.split()[0]})")
    print()
    header = f"{'n':>8}  {'dp_ols (ms)':>12}  {'statsmodels (ms)':>16}  {'ratio':>6}  {'target':>7}  result  runs"
    print(header)
    print("-" * len(header))
    for n, t_dp, t_sm, ratio, repeats in rows:
        print(
            f"{n:>8,}  {t_dp * 1e3:>12.2f}  {t_sm * 1e3:>16.2f}  {ratio:>6.2f}  {'<= ' + str(RATIO_TARGET):>7}"
            f"  {_verdict(ratio <= RATIO_TARGET):<6}  {repeats}"
        )
    print()
    print(f"{'import (fresh subprocess, median of 5)':<44}  {'seconds':>8}  target  result")
    label, label_sm = 'python -c "import dpstats"', 'python -c "import statsmodels.formula.api"'
    print(f"{label:<44}  {t_import:>8.3f}  < {IMPORT_TARGET:<4}  {_verdict(t_import < IMPORT_TARGET)}")
    label_api = 'python -c "import dpstats.api.estimators"'
    print(f"{label_api:<44}  {t_import_api:>8.3f}  (reference: first dp_ols call loads this)")
    print(f"{label_sm:<44}  {t_import_sm:>8.3f}  (reference)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

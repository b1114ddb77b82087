"""Weighted median regression: dpstats (KNG, Tukey, auto) against R's ``quantreg::rq(weights=)`` on apistrat.

Data: R survey's ``apistrat`` (200 California schools, stratified by school type, weight ``pw`` from 15.1 to
44.2), ``api00 ~ ell + meals`` at tau = 0.5, bounds api00 in [200, 1000], ell and meals in [0, 100], pw in
[0, 50] (declared, not read from the data). Each method runs at eps 1e9, 5 and 1 (delta = 1e-6 for Tukey and
auto, which may pick it), over ``--seeds`` seeds; the table gives, per coefficient, the median over the seeds
of ``|estimate - rq| / |rq|``, the number of failed releases (Tukey's propose-test-release may refuse) and the
method auto chose. Needs ``Rscript`` with R's survey and quantreg packages.

    python benchmarks/bench_weighted_quantreg.py [--seeds 10]
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

import dpstats

FORMULA = "api00 ~ ell + meals"
BOUNDS = {"api00": (200, 1000), "ell": (0, 100), "meals": (0, 100), "pw": (0, 50)}
EPSILONS = (1e9, 5.0, 1.0)
METHODS = ("kng", "tukey", "auto")
DELTA = 1e-6
R_SCRIPT = """
suppressMessages({library(survey); library(quantreg)})
data(api)
write.csv(apistrat[, c("api00", "ell", "meals", "pw")], commandArgs(TRUE)[1], row.names = FALSE)
cat(coef(rq(api00 ~ ell + meals, tau = 0.5, data = apistrat, weights = pw)), sep = "\\n")
"""


def r_reference(directory: Path) -> tuple[pd.DataFrame, np.ndarray]:
    """apistrat and R's weighted median regression coefficients."""
    path = directory / "apistrat.csv"
    run = subprocess.run(["Rscript", "-e", R_SCRIPT, str(path)], capture_output=True, text=True, check=True)
    return pd.read_csv(path), np.array(run.stdout.split(), dtype=float)


def fit(frame: pd.DataFrame, method: str, eps: float, seed: int) -> tuple[np.ndarray, str]:
    """One weighted median regression: its coefficients (NaN if failed) and the method that ran."""
    delta = 0.0 if method == "kng" else DELTA
    res = dpstats.dp_quantreg(
        FORMULA, frame, q=0.5, eps=eps, delta=delta, bounds=BOUNDS, weights="pw", method=method,
        random_state=seed,
    )  # fmt: skip
    params = np.full(3, np.nan) if res.failed else res.params.to_numpy()
    return params, res.method


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        frame, reference = r_reference(Path(directory))
    print(f"rq(weights = pw): intercept {reference[0]:.3f}, ell {reference[1]:.4f}, meals {reference[2]:.4f}")
    print(f"{'method':<7}{'eps':>6}  {'chosen':<8}{'failed':>7}  {'intercept':>10}{'ell':>10}{'meals':>10}")
    for method in METHODS:
        for eps in EPSILONS:
            fits = [fit(frame, method, eps, seed) for seed in range(args.seeds)]
            params = np.array([p for p, _ in fits])
            chosen = ",".join(sorted({m for _, m in fits}))
            failed = int(np.isnan(params[:, 0]).sum())
            errors = np.abs(params - reference) / np.abs(reference)
            medians = [np.median(e[np.isfinite(e)]) if np.isfinite(e).any() else np.nan for e in errors.T]
            cells = "".join(f"{m:>10.3f}" for m in medians)
            print(f"{method:<7}{eps:>6g}  {chosen:<8}{failed:>4}/{args.seeds:<2}  {cells}")


if __name__ == "__main__":
    main()

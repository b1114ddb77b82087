"""Coverage of objective perturbation's 95% Wald intervals on simulated logits (dpstats/mechanisms/objective/).

Simulated logits with a base rate near 10%: three regressors, standard normal clipped
to their declared bounds [-3, 3], true coefficients (-2.6, 0.5, -0.5, 0.25); n from
1,000 to 100,000, eps 1 and 5 (the default se_share 0.2). For each cell, ``reps``
seeded data sets, one release each; the table gives the share of intervals that
cover the true coefficient (all four coefficients pooled, and the worst one), the
median of the reported SE over the spread of the estimates (1 = honest SEs), the
ridge's bias flag rate and the failure rate. A coverage band for ``4 reps``
pooled intervals at 4 binomial standard errors is printed below the table.

Usage: .venv/bin/python benchmarks/bench_objective_coverage.py [reps]
"""

from __future__ import annotations

import sys
import time

import numpy as np
from scipy import special

from dpstats.audit.neighbours import design_from_arrays
from dpstats.mechanisms.base import PrivacyRequest
from dpstats.mechanisms.objective import fit
from dpstats.privacy.noise import independent_rngs, make_rng

TRUTH = np.array([-2.6, 0.5, -0.5, 0.25])
BOUND = 3.0
Z = 1.959963984540054


def simulate(rng: np.random.Generator, n: int):
    """One simulated logit design (intercept first) with the declared bounds [-3, 3] for every regressor."""
    X = np.clip(rng.standard_normal((n, 3)), -BOUND, BOUND)
    X = np.column_stack([np.ones(n), X])
    y = (rng.random(n) < special.expit(X @ TRUTH)).astype(float)
    return design_from_arrays(y, X, y_bounds=(0.0, 1.0), x_bounds=[(-BOUND, BOUND)] * 3)


def cell(n: int, eps: float, reps: int, seed: int) -> dict[str, float]:
    """Coverage, SE calibration, bias flags and failures of one (n, eps) cell."""
    data_rngs = independent_rngs(seed, reps)
    estimates, ses, covered, flagged, failed = [], [], [], 0, 0
    for r, data_rng in enumerate(data_rngs):
        release = fit(simulate(data_rng, n), PrivacyRequest(eps=eps), make_rng(10_000 + r), link="logit")
        if release.failed:
            failed += 1
            continue
        se = np.sqrt(np.diag(release.cov))
        estimates.append(release.params)
        ses.append(se)
        covered.append(np.abs(release.params - TRUTH) <= Z * se)
        flagged += release.bias is not None
    covered_arr, est, se_arr = np.array(covered), np.array(estimates), np.array(ses)
    return {
        "coverage": float(covered_arr.mean()),
        "worst": float(covered_arr.mean(axis=0).min()),
        "se_ratio": float(np.median(np.median(se_arr, axis=0) / est.std(axis=0))),
        "biased": flagged / reps,
        "failed": failed / reps,
    }


def main(reps: int = 200) -> None:
    """Print the table (module docstring)."""
    print(f"objective perturbation, logit, base rate ~10%, 3 regressors, {reps} reps a cell, 95% Wald intervals")
    print(f"{'n':>7} {'eps':>4} {'coverage':>9} {'worst':>6} {'SE/sd':>6} {'biased':>7} {'failed':>7} {'sec':>6}")
    for eps in (1.0, 5.0):
        for n in (1_000, 3_000, 10_000, 30_000, 100_000):
            start = time.perf_counter()
            out = cell(n, eps, reps, seed=n + int(eps))
            print(
                f"{n:>7} {eps:>4g} {out['coverage']:>9.3f} {out['worst']:>6.3f} {out['se_ratio']:>6.2f} "
                f"{out['biased']:>7.2f} {out['failed']:>7.2f} {time.perf_counter() - start:>6.1f}"
            )
    half = 4.0 * np.sqrt(0.95 * 0.05 / (4 * reps))
    print(f"pooled band at 4 binomial SEs: [{0.95 - half:.3f}, {0.95 + half:.3f}]")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)

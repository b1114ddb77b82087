"""Coverage of the Tukey mechanism's intervals for dp_logit / dp_probit on simulated logits (and probits).

The design: 3 Gaussian regressors clipped to their declared bounds [-4, 4], an
intercept, a base rate near 10% (intercept -2.5, slopes 0.5, -0.5, 0.3 for the
logit; -1.45, 0.25, -0.25, 0.15 for the probit), delta = 1e-6. For each cell
(n, eps) ``--reps`` seeded data sets are drawn and fitted by
``dpstats.mechanisms.tukey.mechanism.fit`` (``link=``); a replicate counts for
a coefficient when its 95% basic interval (the release's replicates,
dpstats/uncertainty/intervals.py) holds the true value. A failed release (the
PTR test refused) counts apart: the table shows the failure rate and the
coverage among the releases.

Resumable: each finished cell is appended to ``--out`` (JSON lines) and skipped
on the next run. ``python benchmarks/bench_tukey_logit.py --reps 200 --jobs 8``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from dpstats.audit import design_from_arrays
from dpstats.glm.links import get_link
from dpstats.mechanisms import PrivacyRequest
from dpstats.mechanisms.tukey import mechanism as tukey
from dpstats.privacy.noise import make_rng
from dpstats.uncertainty.intervals import confidence_intervals

TRUTH = {"logit": np.array([-2.5, 0.5, -0.5, 0.3]), "probit": np.array([-1.45, 0.25, -0.25, 0.15])}
BOUND = 4.0
DELTA = 1e-6


def simulate(link: str, n: int, seed: int):
    """One data set: the design (bounds declared) and the true coefficients."""
    rng = np.random.default_rng(seed)
    x = np.clip(rng.standard_normal((n, 3)), -BOUND, BOUND)
    X = np.column_stack([np.ones(n), x])
    beta = TRUTH[link]
    y = (rng.uniform(size=n) < get_link(link).mean(X @ beta)).astype(float)
    return design_from_arrays(y, X, y_bounds=(0.0, 1.0), x_bounds=[(-BOUND, BOUND)] * 3), beta


def replicate(link: str, n: int, eps: float, seed: int) -> tuple[bool, np.ndarray, float]:
    """(failed, covered per coefficient (NaN without standard errors), base rate) of one seeded fit."""
    design, beta = simulate(link, n, seed)
    release = tukey.fit(design, PrivacyRequest(eps, DELTA), make_rng(10_000 + seed), link=link)
    if release.failed:
        return True, np.zeros(beta.size, dtype=bool), float(design.y.mean())
    if release.replicates is None:  # no budget for standard errors at this n and eps: no interval
        return False, np.full(beta.size, np.nan), float(design.y.mean())
    lo, hi = confidence_intervals(release.params, release.cov, release.replicates, 0.05, release.interval)
    return False, ((lo <= beta) & (beta <= hi)).astype(float), float(design.y.mean())


def cell(link: str, n: int, eps: float, reps: int) -> dict:
    """Coverage of one (link, n, eps) cell."""
    results = [replicate(link, n, eps, seed) for seed in range(reps)]
    ok = [covered for failed, covered, _ in results if not failed]
    coverage = np.mean(ok, axis=0).tolist() if ok else [math.nan] * 4  # NaN: failed, or no standard errors
    return {
        "link": link,
        "n": n,
        "eps": eps,
        "reps": reps,
        "failed": float(np.mean([f for f, _, _ in results])),
        "coverage": coverage,
        "base_rate": float(np.mean([r for _, _, r in results])),
    }


def _run(args: tuple[str, int, float, int]) -> dict:
    return cell(*args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--links", nargs="+", default=["logit"])
    parser.add_argument("--n", nargs="+", type=int, default=[1000, 3000, 10000, 30000, 100000])
    parser.add_argument("--eps", nargs="+", type=float, default=[1.0, 5.0])
    parser.add_argument("--out", default="benchmarks/results/tukey_logit_coverage.jsonl")
    args = parser.parse_args()
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    done = []
    if os.path.exists(args.out):
        with open(args.out) as handle:
            done = [json.loads(line) for line in handle if line.strip()]
    seen = {(r["link"], r["n"], r["eps"], r["reps"]) for r in done}
    todo = [
        (link, n, eps, args.reps)
        for link in args.links
        for n in args.n
        for eps in args.eps
        if (link, n, eps, args.reps) not in seen
    ]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for result in pool.map(_run, todo):
            done.append(result)
            with open(args.out, "a") as handle:
                handle.write(json.dumps(result) + "\n")
            print(_row(result), flush=True)
    print(f"\n{'link':7} {'n':>7} {'eps':>4} {'reps':>5} {'failed':>7}  coverage (intercept, x1, x2, x3)  base rate")
    for result in sorted(done, key=lambda r: (r["link"], r["eps"], r["n"])):
        if result["reps"] == args.reps and result["link"] in args.links:
            print(_row(result))


def _row(result: dict) -> str:
    coverage = "  ".join(f"{c:.3f}" for c in result["coverage"])
    return (
        f"{result['link']:7} {result['n']:>7} {result['eps']:>4g} {result['reps']:>5} {result['failed']:>7.3f}  "
        f"{coverage}  {result['base_rate']:.3f}"
    )


if __name__ == "__main__":
    main()

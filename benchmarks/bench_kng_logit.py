"""Coverage of KNG's intervals for dp_logit / dp_probit on simulated logits (and probits), and its speed.

The design is benchmarks/bench_tukey_logit.py's: 3 Gaussian regressors clipped to
their declared bounds [-4, 4], an intercept, a base rate near 10% (intercept
-2.5, slopes 0.5, -0.5, 0.3 for the logit; -1.45, 0.25, -0.25, 0.15 for the
probit). For each cell (n, eps) ``--reps`` seeded data sets are drawn and fitted
by ``dpstats.mechanisms.kng.fit`` (``link=``, the defaults: B, steps, se_share
0.3); a replicate counts for a coefficient when its 95% percentile interval (the
release's replicates) holds the true value. The table also shows the share of
releases whose noisy information matrix was not positive definite (their
intervals are the whole range over the domain: "domain"), the share flagged as
on the boundary ("biased") and the mean seconds per fit.

``--speed`` instead times a 30,000-row logit against statsmodels' Logit (median of 7).

Resumable: each finished cell is appended to ``--out`` (JSON lines) and skipped
on the next run. ``python benchmarks/bench_kng_logit.py --reps 200 --jobs 8``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import statsmodels.api as sm

from dpstats.audit import design_from_arrays
from dpstats.glm.links import get_link
from dpstats.mechanisms import PrivacyRequest, kng
from dpstats.mechanisms.kng import binary_inference
from dpstats.privacy.noise import make_rng
from dpstats.uncertainty.intervals import confidence_intervals

TRUTH = {"logit": np.array([-2.5, 0.5, -0.5, 0.3]), "probit": np.array([-1.45, 0.25, -0.25, 0.15])}
BOUND = 4.0


def simulate(link: str, n: int, seed: int):
    """One data set: the design (bounds declared), the 0/1 response and the true coefficients."""
    rng = np.random.default_rng(seed)
    x = np.clip(rng.standard_normal((n, 3)), -BOUND, BOUND)
    X = np.column_stack([np.ones(n), x])
    beta = TRUTH[link]
    y = (rng.uniform(size=n) < get_link(link).mean(X @ beta)).astype(float)
    return design_from_arrays(y, X, y_bounds=(0.0, 1.0), x_bounds=[(-BOUND, BOUND)] * 3), beta


def replicate(link: str, n: int, eps: float, seed: int) -> tuple[np.ndarray, bool, bool, float, float]:
    """(covered per coefficient, domain fallback, biased, base rate, seconds) of one seeded fit."""
    design, beta = simulate(link, n, seed)
    start = time.perf_counter()
    release = kng.fit(design, PrivacyRequest(eps), make_rng(10_000 + seed), link=link)
    seconds = time.perf_counter() - start
    lo, hi = confidence_intervals(release.params, release.cov, release.replicates, 0.05, release.interval)
    domain = binary_inference.DOMAIN_ONLY in release.se_note
    return (lo <= beta) & (beta <= hi), domain, release.bias is not None, float(design.y.mean()), seconds


def cell(link: str, n: int, eps: float, reps: int) -> dict:
    """Coverage of one (link, n, eps) cell."""
    results = [replicate(link, n, eps, seed) for seed in range(reps)]
    return {
        "link": link,
        "n": n,
        "eps": eps,
        "reps": reps,
        "coverage": np.mean([r[0] for r in results], axis=0).tolist(),
        "domain": float(np.mean([r[1] for r in results])),
        "biased": float(np.mean([r[2] for r in results])),
        "base_rate": float(np.mean([r[3] for r in results])),
        "seconds": float(np.mean([r[4] for r in results])),
    }


def _run(args: tuple[str, int, float, int]) -> dict:
    return cell(*args)


def speed(n: int = 30_000, repeats: int = 7) -> None:
    """Seconds of a KNG logit fit (eps = 1, with standard errors) against statsmodels' Logit on the same rows."""
    design, _ = simulate("logit", n, 0)
    ours, theirs = [], []
    for seed in range(repeats):
        start = time.perf_counter()
        kng.fit(design, PrivacyRequest(1.0), make_rng(seed), link="logit")
        ours.append(time.perf_counter() - start)
        start = time.perf_counter()
        sm.Logit(design.y, design.X).fit(disp=0)
        theirs.append(time.perf_counter() - start)
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f"n = {n}: KNG logit {a:.3f} s, statsmodels Logit {b:.3f} s, ratio {a / b:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--links", nargs="+", default=["logit"])
    parser.add_argument("--n", nargs="+", type=int, default=[1000, 3000, 10000, 30000, 100000])
    parser.add_argument("--eps", nargs="+", type=float, default=[1.0, 5.0])
    parser.add_argument("--out", default="benchmarks/results/kng_logit_coverage.jsonl")
    parser.add_argument("--speed", action="store_true")
    args = parser.parse_args()
    if args.speed:
        speed()
        return
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
    print(
        f"\n{'link':7} {'n':>7} {'eps':>4} {'reps':>5}  coverage (intercept, x1, x2, x3)  domain  biased  "
        "base rate  s/fit"
    )
    for result in sorted(done, key=lambda r: (r["link"], r["eps"], r["n"])):
        if result["reps"] == args.reps and result["link"] in args.links:
            print(_row(result))


def _row(result: dict) -> str:
    coverage = "  ".join(f"{c:.3f}" for c in result["coverage"])
    return (
        f"{result['link']:7} {result['n']:>7} {result['eps']:>4g} {result['reps']:>5}  {coverage}  "
        f"{result['domain']:6.3f}  {result['biased']:6.3f}  {result['base_rate']:9.3f}  {result['seconds']:.3f}"
    )


if __name__ == "__main__":
    main()

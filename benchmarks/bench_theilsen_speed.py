"""Speed and memory of DP Theil-Sen (method="theilsen"), against a plain numpy implementation.

Targets (issue 3): all-pairs exponential-median Theil-Sen under 10 ms per fit at
n = 1,000 and under 1 s with peak memory under 1 GB at n = 10,000; one matching
at n = 100,000 under 50 ms.

The plain implementation below is Algorithm 2 + Algorithm 3 written the
straightforward way: every pair estimate, a full sort, Gumbel-max over all
intervals. The benchmark also checks that the two agree in distribution
(two-sample KS on the released p25).

Each timing is measured in a fresh subprocess, which also reports its peak
resident memory (``resource.getrusage``, ru_maxrss, including the ~100 MB of
the interpreter with numpy and scipy). Wall-clock and CPU (process) time are
both printed: on a shared machine the CPU time is the steadier figure.

Run: ``.venv/bin/python benchmarks/bench_theilsen_speed.py`` (add ``--quick``
to skip the plain implementation at n = 10,000, which needs ~3 GB and ~10 s).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

EPS = 1.0
LO, HI = -0.5, 1.5


def data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The paper's synthetic design on [0, 1]^2 (section 3.1.5, sigma_e = 0.1)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 1.0, n)
    y = np.clip(0.5 * x + 0.2 + rng.normal(0.0, 0.1, n), 0.0, 1.0)
    return x, y


def plain_theilsen(x: np.ndarray, y: np.ndarray, eps: float, rng: np.random.Generator) -> tuple[float, float]:
    """Algorithms 2 and 3, all pairs, the straightforward numpy way (eps/2 per prediction, k = n - 1)."""
    n = x.size
    i, j = np.triu_indices(n, k=1)
    dx = x[j] - x[i]
    keep = dx != 0
    slope = (y[j] - y[i])[keep] / dx[keep]
    mid_x, mid_y = ((x[i] + x[j]) / 2)[keep], ((y[i] + y[j]) / 2)[keep]
    out = []
    for x0 in (0.25, 0.75):
        z = np.sort(np.clip(slope * (x0 - mid_x) + mid_y, LO, HI))
        edges = np.concatenate([[LO], z, [HI]])
        m = edges.size
        eps_prime = (eps / 2) / (n - 1)
        with np.errstate(divide="ignore"):
            scores = np.log(np.diff(edges)) - eps_prime / 2 * np.ceil(np.abs(np.arange(1, m) - m / 2))
        k = int(np.argmax(scores + rng.gumbel(size=scores.size)))
        out.append(float(rng.uniform(edges[k], edges[k + 1])))
    return out[0], out[1]


def fast_fit(x: np.ndarray, y: np.ndarray, eps: float, rng: np.random.Generator, **options) -> tuple[float, float]:
    """dpstats' core mechanism on the same data (unit bounds, so its outputs are p25 and p75 directly)."""
    from dpstats.audit import design_from_arrays
    from dpstats.mechanisms import PrivacyRequest
    from dpstats.mechanisms.theilsen import mechanism as theilsen

    design = design_from_arrays(y, np.column_stack([np.ones(x.size), x]), y_bounds=(0, 1), x_bounds=[(0, 1)])
    release = theilsen.fit(design, PrivacyRequest(eps), rng, **options)
    return float(release.noisy_stats["p25"]), float(release.noisy_stats["p75"])


def child(kind: str, n: int, reps: int, k: str) -> None:
    """Time ``reps`` fits in this process; print wall/CPU medians and the peak RSS as JSON."""
    import dpstats.mechanisms.theilsen.mechanism  # noqa: F401  (import cost outside the timings)

    x, y = data(n)
    options = {} if k == "all" else {"k": int(k)}
    walls, cpus = [], []
    for rep in range(reps):
        rng = np.random.default_rng(rep)
        w0, c0 = time.perf_counter(), time.process_time()
        if kind == "plain":
            plain_theilsen(x, y, EPS, rng)
        else:
            fast_fit(x, y, EPS, rng, **options)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"wall": float(np.median(walls)), "cpu": float(np.median(cpus)), "peak_mb": peak_mb}))


def measure(kind: str, n: int, reps: int, k: str = "all") -> dict:
    run = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(n), str(reps), k], capture_output=True, text=True, check=True
    )
    return json.loads(run.stdout.strip().splitlines()[-1])


def agreement(n: int = 200, draws: int = 2000) -> float:
    """Two-sample KS p-value of the released p25: fast mechanism vs the plain implementation."""
    from scipy import stats

    x, y = data(n, seed=1)
    rng = np.random.default_rng(123)
    fast = [fast_fit(x, y, EPS, rng)[0] for _ in range(draws)]
    plain = [plain_theilsen(x, y, EPS, rng)[0] for _ in range(draws)]
    return float(stats.ks_2samp(fast, plain).pvalue)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the plain implementation at n = 10,000")
    parser.add_argument("--child", nargs=4, metavar=("KIND", "N", "REPS", "K"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, n, reps, k = args.child
        child(kind, int(n), int(reps), k)
        return
    rows = [
        ("fast", 1_000, 30, "all", "all pairs, exp median", 0.010),
        ("plain", 1_000, 10, "all", "all pairs, exp median", None),
        ("fast", 10_000, 5, "all", "all pairs, exp median", 1.0),
    ]
    if not args.quick:
        rows.append(("plain", 10_000, 1, "all", "all pairs, exp median", None))
    rows.append(("fast", 100_000, 10, "1", "one matching, exp median", 0.050))
    print(f"DP Theil-Sen speed, eps = {EPS:g} (p25 and p75 at eps/2 each); medians over repetitions")
    print(f"{'impl':6s} {'n':>8s}  {'pairs':26s} {'wall ms':>9s} {'cpu ms':>9s} {'peak MB':>8s}  target")
    for kind, n, reps, k, label, target in rows:
        r = measure(kind, n, reps, k)
        verdict = ""
        if target is not None:
            verdict = f"< {target * 1e3:g} ms: {'yes' if min(r['wall'], r['cpu']) < target else 'NO'}"
            if n == 10_000:
                verdict += f"; < 1 GB: {'yes' if r['peak_mb'] < 1024 else 'NO'}"
        times = f"{r['wall'] * 1e3:9.1f} {r['cpu'] * 1e3:9.1f}"
        print(f"{kind:6s} {n:8d}  {label:26s} {times} {r['peak_mb']:8.0f}  {verdict}")
    p = agreement()
    print(f"agreement, n = 200, 2,000 draws each: two-sample KS p-value of p25 (fast vs plain) = {p:.3f}")


if __name__ == "__main__":
    main()

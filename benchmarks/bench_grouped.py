"""Speed and memory of grouped (small-area) fits: ``dp_ols(..., by="tract", groups=keys)``.

Targets (issues 17 and 44):

* NoisyStats, 10,000 groups x 100 rows: at most 10 times the time of a
  vectorised, non-private numpy grouped OLS in the same run (both from the
  same DataFrame; the numpy baseline factorises the keys and sums with
  ``np.bincount``). NoisyStats runs as one vectorised batch with
  ``se_share=0``;
* NoisyStats with its default standard errors (``se_share`` 0.2: the
  budgeted sandwich and the parametric bootstrap, vectorised over the
  groups, issue 44), 10,000 groups x 100 rows: at most 10 times the numpy
  grouped OLS with HC1 standard errors (the meat from three more bincounts
  of the squared residuals), timed in the same subprocess
  (``--case noisystats-se`` prints the ratios as JSON);
* Theil-Sen, 70,000 groups x 100 rows: at most 60 s on 2 cores (a process
  pool of 2), with peak memory linear in n (measured at 17,500, 35,000 and
  70,000 groups). ``se_share=0``: its bootstrap standard errors cost about 30
  ms per group (``benchmarks/bench_interval_speed.py``), far beyond the target.

Group sizes are declared public (each group spends the whole eps), and for
NoisyStats also not (noisy sizes: each group padded or truncated). Each case
runs in a fresh subprocess, which reports wall time, CPU time of itself and
its children, and peak resident memory (ru_maxrss of the process and of its
pool workers, interpreter included). Timings are the best of ``--repeat``
runs inside that subprocess (the machine is shared).

Run: ``.venv/bin/python benchmarks/bench_grouped.py`` (``--quick``: Theil-Sen at
7,000 groups only).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np
import pandas as pd

ROWS = 100
BOUNDS = {"x": (0.0, 1.0), "y": (-1.0, 3.0)}


def tracts(groups: int, seed: int = 0) -> pd.DataFrame:
    """``groups`` tracts of ``ROWS`` rows: y = a_g + b_g x + noise, keys are integers."""
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(groups), ROWS)
    x = rng.uniform(0.0, 1.0, g.size)
    a, b = rng.normal(0.5, 0.2, groups), rng.normal(1.0, 0.3, groups)
    y = np.clip(a[g] + b[g] * x + rng.normal(0.0, 0.2, g.size), -1.0, 3.0)
    return pd.DataFrame({"tract": g, "x": x, "y": y})


def numpy_grouped_ols(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Non-private per-group OLS of y on x with HC1 standard errors, vectorised: factorise the keys, bincounts.

    The coefficients from five bincounts; the residuals row by row; the HC1 meat ``sum r^2 (1, x)'(1, x)``
    from three more; ``n / (n - 2) B^{-1} M B^{-1}`` with the 2 x 2 bread inverted in closed form.
    Returns (intercept, slope) and their standard errors, one row per group.
    """
    codes, keys = pd.factorize(frame["tract"])
    x, y, k = frame["x"].to_numpy(), frame["y"].to_numpy(), keys.size
    w = np.bincount(codes, minlength=k).astype(float)
    sx, sy = np.bincount(codes, x, k), np.bincount(codes, y, k)
    sxx, sxy = np.bincount(codes, x * x, k), np.bincount(codes, x * y, k)
    slope = (sxy - sx * sy / w) / (sxx - sx * sx / w)
    intercept = (sy - slope * sx) / w
    r2 = (y - intercept[codes] - slope[codes] * x) ** 2
    m00, m01, m11 = np.bincount(codes, r2, k), np.bincount(codes, r2 * x, k), np.bincount(codes, r2 * x * x, k)
    det = w * sxx - sx * sx
    i00, i01, i11 = sxx / det, -sx / det, w / det  # the bread's inverse
    hc1 = w / (w - 2.0)
    var_a = hc1 * (i00 * i00 * m00 + 2.0 * i00 * i01 * m01 + i01 * i01 * m11)
    var_b = hc1 * (i01 * i01 * m00 + 2.0 * i01 * i11 * m01 + i11 * i11 * m11)
    return np.column_stack([intercept, slope]), np.sqrt(np.column_stack([var_a, var_b]))


def _dp(frame: pd.DataFrame, groups: int, method: str, n_jobs: int | None, se_share: float | None = 0.0, public=True):
    import dpstats

    keys = list(range(groups))
    return dpstats.dp_ols(
        "y ~ x", frame, eps=1.0, bounds=BOUNDS, method=method, se_share=se_share, by="tract", groups=keys,
        group_sizes=dict.fromkeys(keys, ROWS) if public else None, random_state=1, n_jobs=n_jobs,
    )  # fmt: skip


def _best(call, repeat: int) -> tuple[float, float]:
    """Best wall and CPU (process and children) time of ``repeat`` calls."""
    walls, cpus = [], []
    for _ in range(repeat):
        before = _cpu()
        start = time.perf_counter()
        call()
        walls.append(time.perf_counter() - start)
        cpus.append(_cpu() - before)
    return min(walls), min(cpus)


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _peak_mb() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return max(own.ru_maxrss, kids.ru_maxrss) / 1024


def case(name: str, groups: int, repeat: int) -> dict:
    """One measurement (in this process)."""
    frame = tracts(groups)
    if name == "noisystats":
        _dp(tracts(50), 50, "noisystats", 1)  # imports and first-call costs outside the timing
        wall, cpu = _best(lambda: _dp(frame, groups, "noisystats", 1), repeat)
        private_wall, private_cpu = _best(lambda: _dp(frame, groups, "noisystats", 1, public=False), repeat)
        base_wall, base_cpu = _best(lambda: numpy_grouped_ols(frame), repeat)
        return {
            "wall": wall, "cpu": cpu, "private_wall": private_wall, "private_cpu": private_cpu,
            "numpy_wall": base_wall, "numpy_cpu": base_cpu, "peak_mb": _peak_mb(),
        }  # fmt: skip
    if name == "noisystats-se":
        _dp(tracts(50), 50, "noisystats", 2, se_share=None)  # imports and first-call costs outside the timing
        wall, cpu = _best(lambda: _dp(frame, groups, "noisystats", 2, se_share=None), repeat)
        private_wall, private_cpu = _best(
            lambda: _dp(frame, groups, "noisystats", 2, se_share=None, public=False), repeat
        )
        base_wall, base_cpu = _best(lambda: numpy_grouped_ols(frame), repeat)
        return {
            "wall": wall, "cpu": cpu, "private_wall": private_wall, "private_cpu": private_cpu,
            "numpy_wall": base_wall, "numpy_cpu": base_cpu, "peak_mb": _peak_mb(),
            "ratio": wall / base_wall, "private_ratio": private_wall / base_wall,
        }  # fmt: skip
    wall, cpu = _best(lambda: _dp(frame, groups, "theilsen", 2), repeat)
    return {"wall": wall, "cpu": cpu, "peak_mb": _peak_mb()}


def _run(name: str, groups: int, repeat: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--case", name, "--groups", str(groups), "--repeat", str(repeat)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=["noisystats", "noisystats-se", "theilsen"])
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.case:
        print(json.dumps(case(args.case, args.groups, args.repeat)))
        return
    print(f"{'case':<34} {'groups':>7} {'rows':>10} {'wall s':>8} {'cpu s':>8} {'peak MB':>8}  target")
    ns = _run("noisystats", 10_000, 5)
    ratio = ns["wall"] / ns["numpy_wall"]
    print(f"{'numpy grouped OLS (non-private)':<34} {10_000:>7} {10_000 * ROWS:>10} {ns['numpy_wall']:>8.3f} "
          f"{ns['numpy_cpu']:>8.3f} {'':>8}")  # fmt: skip
    print(f"{'NoisyStats batch, sizes public':<34} {10_000:>7} {10_000 * ROWS:>10} {ns['wall']:>8.3f} "
          f"{ns['cpu']:>8.3f} {ns['peak_mb']:>8.0f}  {ratio:.1f}x numpy (<= 10x)")  # fmt: skip
    ratio = ns["private_wall"] / ns["numpy_wall"]
    print(f"{'NoisyStats batch, sizes noisy':<34} {10_000:>7} {10_000 * ROWS:>10} {ns['private_wall']:>8.3f} "
          f"{ns['private_cpu']:>8.3f} {'':>8}  {ratio:.1f}x numpy (<= 10x)")  # fmt: skip
    se = _run("noisystats-se", 10_000, 3)
    print(f"{'numpy grouped OLS + HC1 (non-priv.)':<34} {10_000:>7} {10_000 * ROWS:>10} {se['numpy_wall']:>8.3f} "
          f"{se['numpy_cpu']:>8.3f} {'':>8}")  # fmt: skip
    print(f"{'NoisyStats with SEs, sizes public':<34} {10_000:>7} {10_000 * ROWS:>10} {se['wall']:>8.3f} "
          f"{se['cpu']:>8.3f} {se['peak_mb']:>8.0f}  {se['ratio']:.1f}x numpy + HC1 (<= 10x)")  # fmt: skip
    print(f"{'NoisyStats with SEs, sizes noisy':<34} {10_000:>7} {10_000 * ROWS:>10} {se['private_wall']:>8.3f} "
          f"{se['private_cpu']:>8.3f} {'':>8}  {se['private_ratio']:.1f}x numpy + HC1 (<= 10x)")  # fmt: skip
    sizes = [7_000] if args.quick else [17_500, 35_000, 70_000]
    for groups in sizes:
        ts = _run("theilsen", groups, 1)
        print(f"{'Theil-Sen by group (pool of 2)':<34} {groups:>7} {groups * ROWS:>10} {ts['wall']:>8.2f} "
              f"{ts['cpu']:>8.2f} {ts['peak_mb']:>8.0f}  <= 60 s at 70,000 groups")  # fmt: skip


if __name__ == "__main__":
    main()

"""Memory and time of the all-pairs smooth-sensitivity Theil-Sen (``median="smooth", k=n - 1``).

Each size runs in a fresh interpreter, which reports its own peak resident memory
(``resource.getrusage``, the whole process: the imports alone take about 240 MB).
The all-pairs doubled vector keeps only the band of ranks Lemma 10 reads
(dpstats/mechanisms/theilsen/banded_pairs.py), so memory grows like n, not like the
n(n - 1)/2 pair estimates (8 bytes each: 400 MB at n = 10^4).

    python benchmarks/bench_smooth_memory.py [--sizes 2500 5000 10000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys

CHILD = """
import resource, sys, time
import numpy as np, pandas as pd
import dpstats
n = int(sys.argv[1])
rng = np.random.default_rng(0)
x = rng.random(n)
y = np.clip(0.5 * x + 0.2 + rng.normal(0, 0.1, n), 0, 1)
start = time.perf_counter()
dpstats.dp_ols("y ~ x", pd.DataFrame({"x": x, "y": y}), eps=1, bounds={"x": (0, 1), "y": (0, 1)},
               method="theilsen", median="smooth", k=n - 1, random_state=0)
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2500, 5000, 10000])
    args = parser.parse_args()
    print(f"{'n':>7} {'pairs':>12} {'all pairs, MB':>14} {'fit, s':>8} {'peak RSS, MB':>13}")
    for n in args.sizes:
        out = subprocess.run([sys.executable, "-c", CHILD, str(n)], capture_output=True, text=True, check=True)
        seconds, rss = (float(v) for v in out.stdout.split())
        pairs = n * (n - 1) // 2
        print(f"{n:>7} {pairs:>12,} {pairs * 8 / 2**20:>14.0f} {seconds:>8.2f} {rss:>13.0f}")


if __name__ == "__main__":
    main()

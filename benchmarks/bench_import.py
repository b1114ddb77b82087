"""Time ``import dpstats`` in fresh interpreters (the package loads its submodules on first use).

Prints the minimum, median and maximum wall time over ``--runs`` fresh interpreters, and the
same for ``import dpstats; dpstats.dp_ols`` (the first fit's imports) for comparison:

    python benchmarks/bench_import.py --runs 20
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def wall_times(code: str, runs: int) -> list[float]:
    """Wall seconds of ``python -c code`` in ``runs`` fresh interpreters (after one warm-up run)."""
    subprocess.run([sys.executable, "-c", code], check=True)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    rows = {
        "python -c pass": "pass",
        "import dpstats": "import dpstats",
        "import dpstats; dpstats.dp_ols": "import dpstats; dpstats.dp_ols",
    }
    print(f"{'command':<34} {'min s':>7} {'median s':>9} {'max s':>7}")
    for label, code in rows.items():
        t = wall_times(code, args.runs)
        print(f"{label:<34} {min(t):7.3f} {statistics.median(t):9.3f} {max(t):7.3f}")


if __name__ == "__main__":
    main()

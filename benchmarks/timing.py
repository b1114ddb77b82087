"""Wall time of a call for the benchmarks: the median over repetitions, after one warm-up call."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_time(call: Callable[[], object], reps: int) -> float:
    """Median wall seconds of ``call()`` over ``reps`` runs, after one untimed warm-up run."""
    call()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)

"""NoisyStats on 10^8 rows that are never on the client: a lazily generated dask DataFrame on a LocalCluster.

Each partition is generated on a worker from its own seed (``dd.from_map``):
``x ~ U(0, 10)``, ``z ~ U(-1, 1)``, ``y = 1 + 0.5 x - z + N(0, 1)``, 3 float
columns (2.4 GB at 10^8 rows). ``dp_ols("y ~ x + z", ..., method="noisystats")``
at eps = 1 with the default standard errors reads the data three times (the
row count, the unit-scale moments, the residual meat at the released
estimate: dpstats/distributed/dask_design.py); only the partitions' sums reach the client.

Printed: the wall time of the fit, the client's peak memory in two measures
(``tracemalloc``: the peak of Python and numpy allocations traced during the
fit; ``ru_maxrss``: the peak resident set of the client process over its whole
life, which also hosts the LocalCluster's scheduler), the sum of every
process's peak (the client's and each worker's ru_maxrss: an upper bound on
the run's total peak, as the peaks need not coincide), the estimates
against the truth, and for scale the data's size in memory.

With ``--groups G`` each row also gets a key ``g ~ U{0, ..., G - 1}`` and the
fit is grouped (``by="g"``, noisy group sizes, ``se_share=0``: the
NoisyStats batch of dpstats/distributed/by_group.py, two passes over the
data); printed instead of the estimates: the median over the groups of each
term's absolute error and the share of failed groups.

``--method auto`` lets auto choose among the mechanisms that run on Dask (the row
count first, then the error model), and prints its choice; with ``--groups`` one choice per
group, from its noisy size (dpstats/distributed/by_group.py).

``--method tukey`` fits Tukey depth (Amin et al. 2023; its batches dealt row by row and
summed on the workers, dpstats/mechanisms/tukey/dealt.py) at eps = 1, delta = 1e-6, and
prints it against the non-private OLS of the same rows (each partition's X'X and X'y
on the workers, added and solved on the client; not timed) with the relative gap per coefficient,
``|Tukey - OLS| / |OLS|``; issue 44 asks for a gap under 2% on 10^6 rows in 8 partitions.

With ``--unit`` the frame is a panel: ``--rows / --years`` workers, each with one row a year, the
partitions holding consecutive years (every worker's rows spread over several of them), a worker
effect ``a_i ~ N(0, 0.5^2)`` added to y; the fit protects a worker
(``unit="worker", max_rows=--years``: every row of one worker, the rows shuffled by worker on the
workers, dpstats/distributed/dask_units.py), with NoisyStats' standard errors clustered by worker.
Printed against non-private OLS on the same rows (statsmodels on the frame computed into pandas
after the timed fit and the memory readings, with standard errors clustered by worker): each
coefficient's gap, relative and in the clustered standard errors, and for scale the time of the same
``dp_ols`` call on the pandas frame. Issue 44: on 10^6 rows in 8 partitions a ``unit=`` fit runs and
is not refused.

    python benchmarks/bench_dask.py [--rows 100000000] [--partitions 100] [--workers 2] [--groups 0]
        [--method noisystats|auto|tukey] [--unit [--years 10]]
    python benchmarks/bench_dask.py --rows 1000000 --partitions 8 --unit
"""

from __future__ import annotations

import argparse
import logging
import resource
import time
import tracemalloc
from itertools import pairwise

import dask
import dask.dataframe as dd
import distributed
import numpy as np
import pandas as pd

import dpstats

BOUNDS = {"x": (0.0, 10.0), "z": (-1.0, 1.0), "y": (-5.0, 12.0)}
TRUTH = {"Intercept": 1.0, "x": 0.5, "z": -1.0}
DELTA = 1e-6
META = pd.DataFrame({"x": np.zeros(0), "z": np.zeros(0), "y": np.zeros(0)})


def partition(seed_rows_groups: tuple[int, int, int]) -> pd.DataFrame:
    """One partition, generated where it is computed (a worker); a key column ``g`` when there are groups."""
    seed, rows, groups = seed_rows_groups
    rng = np.random.default_rng([20261125, seed])
    x, z = rng.uniform(0.0, 10.0, rows), rng.uniform(-1.0, 1.0, rows)
    frame = pd.DataFrame({"x": x, "z": z, "y": 1.0 + 0.5 * x - z + rng.normal(0.0, 1.0, rows)})
    return frame.assign(g=rng.integers(0, groups, rows)) if groups else frame


def panel_partition(start_end_workers: tuple[int, int, int]) -> pd.DataFrame:
    """Rows ``start`` to ``end`` of the panel ordered by year, then worker (``--unit``), generated on a worker;
    the worker effects are the same in every partition (one seed)."""
    start, end, workers = start_end_workers
    rows = np.arange(start, end)
    worker = rows % workers
    effect = np.random.default_rng([20261125, 0]).normal(0.0, 0.5, workers)[worker]
    rng = np.random.default_rng([20261125, 1, start])
    x, z = rng.uniform(0.0, 10.0, rows.size), rng.uniform(-1.0, 1.0, rows.size)
    y = 1.0 + 0.5 * x - z + effect + rng.normal(0.0, 1.0, rows.size)
    return pd.DataFrame({"x": x, "z": z, "y": y, "worker": worker, "year": rows // workers})


def lazy_panel(rows: int, partitions: int, years: int) -> dd.DataFrame:
    """``rows // years`` workers observed ``years`` years, in ``partitions`` partitions of consecutive rows."""
    workers = rows // years
    ends = np.linspace(0, workers * years, partitions + 1).astype(int)
    meta = META.assign(worker=np.zeros(0, dtype=np.int64), year=np.zeros(0, dtype=np.int64))
    return dd.from_map(panel_partition, [(int(a), int(b), workers) for a, b in pairwise(ends)], meta=meta)


def lazy_frame(rows: int, partitions: int, groups: int = 0) -> dd.DataFrame:
    """``rows`` rows in ``partitions`` partitions, none generated yet."""
    sizes = np.full(partitions, rows // partitions)
    sizes[: rows % partitions] += 1
    meta = META.assign(g=np.zeros(0, dtype=np.int64)) if groups else META
    return dd.from_map(partition, [(j, int(m), groups) for j, m in enumerate(sizes)], meta=meta)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10**8)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--groups", type=int, default=0, help="0: one fit; G: a grouped fit over G keys")
    parser.add_argument("--method", choices=("noisystats", "auto", "tukey"), default="noisystats")
    parser.add_argument("--unit", action="store_true", help="a panel; the privacy unit is a worker's rows")
    parser.add_argument("--years", type=int, default=10, help="with --unit: rows per worker (max_rows)")
    args = parser.parse_args()
    logging.getLogger("distributed.shuffle").setLevel(logging.ERROR)  # each pass reruns the same shuffle: it says so
    if args.groups and args.method == "tukey":
        parser.error("a grouped fit on Dask takes a method whose statistics are sums (noisystats, or auto among them)")
    if args.groups and args.unit:
        parser.error("unit= is for one fit: a grouped fit protects rows")
    if args.unit:
        data = lazy_panel(args.rows, args.partitions, args.years)
    else:
        data = lazy_frame(args.rows, args.partitions, args.groups)
    grouped = {"by": "g", "groups": range(args.groups), "se_share": 0} if args.groups else {}
    call = {"delta": DELTA} if args.method == "tukey" else {"bounds": BOUNDS}
    call |= {"unit": "worker", "max_rows": args.years} if args.unit else {}
    with (
        distributed.LocalCluster(
            n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
        dask.config.set(scheduler=client),
    ):
        tracemalloc.start()
        start = time.perf_counter()
        res = dpstats.dp_ols("y ~ x + z", data, eps=1.0, method=args.method, random_state=1, **call, **grouped)
        seconds = time.perf_counter() - start
        _, traced_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        ols = ols_on_workers(data) if args.method == "tukey" and not args.unit else None
        worker_peaks = client.run(_peak_rss)
    rss_peak = _peak_rss()
    mb = 2**20
    print(f"rows {args.rows:,} in {args.partitions} partitions on {args.workers} worker processes (1 thread each)")
    columns = 5 if args.unit else 4 if args.groups else 3
    print(
        f"{f'data size ({columns} 8-byte columns, never on the client)':<58}{args.rows * columns * 8 / mb:>12,.0f} MB"
    )
    fit = f"{args.groups:,} groups, se_share=0" if args.groups else "with SEs"
    fit += ", delta = 1e-6" if args.method == "tukey" else ""
    fit += f", unit = worker, max_rows = {args.years}" if args.unit else ""
    per_group = ", ".join(f"{m} x {k}" for m, k in res.methods.value_counts().items()) if args.groups else ""
    chosen = (per_group or res.method) + (" (auto's choice)" if args.method == "auto" else "")
    print(f"{f'fit time (dp_ols, {chosen}, eps = 1, {fit})':<58}{seconds:>12.1f} s")
    print(f"{'client peak, tracemalloc during the fit':<58}{traced_peak / mb:>12.1f} MB")
    print(f"{'client peak, ru_maxrss of the process (with scheduler)':<58}{rss_peak / mb:>12.1f} MB")
    total = rss_peak + sum(worker_peaks.values())
    print(f"{'every process: client and workers, their peaks summed':<58}{total / mb:>12.1f} MB (issue 44: < 4 GB)")
    if args.groups:
        failed = np.mean([fit.failed for fit in res.fits])
        print(f"groups failed (noisy n var(x) not positive): {failed:.1%}; median over groups of |estimate - truth|:")
        for term, truth in TRUTH.items():
            print(f"{term:<12}{truth:>10.4f}{np.nanmedian(np.abs(res.params[term] - truth)):>14.6f}")
        return
    if ols is not None:
        print_against_ols(res, ols)
        return
    if args.unit:
        print_against_pandas(res, data, call)
        return
    print(f"{'term':<12}{'truth':>10}{'estimate':>14}{'std.error':>14}")
    for term, truth in TRUTH.items():
        print(f"{term:<12}{truth:>10.4f}{res.params[term]:>14.6f}{res.bse[term]:>14.2e}")


def print_against_pandas(res: dpstats.DPRegressionResults, data: dd.DataFrame, call: dict) -> None:
    """The release against non-private OLS on the same rows (statsmodels, standard errors clustered by worker), and
    the same ``dp_ols`` call's time on the pandas frame (``--unit``; not counted in the memory above)."""
    import statsmodels.formula.api as smf

    with dask.config.set(scheduler="sync"):
        frame = data.compute()
    ols = smf.ols("y ~ x + z", frame).fit(cov_type="cluster", cov_kwds={"groups": frame["worker"]})
    start = time.perf_counter()
    on_pandas = dpstats.dp_ols("y ~ x + z", frame, eps=1.0, method=res.method, random_state=1, **call)
    seconds = time.perf_counter() - start
    print(f"{f'the same dp_ols on the pandas frame ({on_pandas.method})':<58}{seconds:>12.1f} s")
    print(f"{res.method}: {res.nobs:,} rows kept, {res.privacy.neighbours}; status {res.status}")
    head = (
        f"{'term':<12}{'truth':>8}{'DP':>12}{'DP s.e.':>11}{'OLS':>12}{'OLS CR1':>11}{'|gap|/|OLS|':>13}{'gap/CR1':>9}"
    )
    print(head)
    for term, truth in TRUTH.items():
        gap = res.params[term] - ols.params[term]
        print(
            f"{term:<12}{truth:>8.3f}{res.params[term]:>12.5f}{res.bse[term]:>11.2e}{ols.params[term]:>12.5f}"
            f"{ols.bse[term]:>11.2e}{abs(gap) / abs(ols.params[term]):>13.3%}{gap / ols.bse[term]:>9.2f}"
        )


def _peak_rss() -> int:
    """This process's peak resident set in bytes (ru_maxrss is in kilobytes on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def ols_on_workers(data: dd.DataFrame) -> pd.Series:
    """Non-private OLS of ``y ~ x + z``: each partition's X'X and X'y on the workers, added and solved here."""
    parts = dask.compute(*[dask.delayed(_cross_products)(part) for part in data.to_delayed()])
    gram, rhs = (sum(terms) for terms in zip(*parts, strict=True))
    return pd.Series(np.linalg.solve(gram, rhs), index=list(TRUTH))


def _cross_products(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    X = np.column_stack([np.ones(len(frame)), frame["x"], frame["z"]])
    return X.T @ X, X.T @ frame["y"].to_numpy()


def print_against_ols(res: dpstats.DPRegressionResults, ols: pd.Series) -> None:
    """Tukey's release, OLS on the same rows and the relative gap of each coefficient."""
    status = "failed: " + str(res.reason) if res.failed else f"m = {res.hyperparameters['m']}"
    print(f"Tukey ({status}; jackknife {res.hyperparameters['jackknife']})")
    print(f"{'term':<12}{'truth':>10}{'Tukey':>14}{'OLS':>14}{'|gap| / |OLS|':>16}")
    gaps = (res.params - ols).abs() / ols.abs()
    for term, truth in TRUTH.items():
        print(f"{term:<12}{truth:>10.4f}{res.params[term]:>14.6f}{ols[term]:>14.6f}{gaps[term]:>16.3%}")
    print(f"{'largest relative gap':<50}{gaps.max():>16.3%} (issue 44: under 2%)")


if __name__ == "__main__":
    main()

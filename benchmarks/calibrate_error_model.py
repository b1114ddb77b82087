"""Calibrate the error model of ``method="auto"``: simulate every candidate mechanism on public reference designs.

Writes dpstats/planning/error_table.json, the table dpstats/planning/ interpolates
to predict, from public facts only, each mechanism's error and failure rate.

Reference designs (on the unit scale, which is the user's scale when the declared
bounds are [0, 1]), two families:

* continuous: the synthetic experiment of Alabi et al. (2022, section 3.1.5),
  extended to d regressors. Every regressor is uniform with mean 0.5 and variance
  var_x, the response ``y = 0.2 + (0.5 / d) sum_j x_j + N(0, sd_e^2)``, clipped to
  [0, 1]. The four scenarios var_x in {0.01, 0.05} x sd_e in {0.01, 0.1} are the
  paper's; a fifth has skewed regressors, each Beta(1, 4) (mean 0.2: most rows in a
  fifth of the declared range, as incomes or counts often are), with sd_e = 0.1.
* categorical: ``y ~ x + C(g)`` with L declared levels, x as one regressor of the
  continuous family in the same five scenarios, g uniform over the levels and
  ``y = 0.2 + 0.5 x + a_g + N(0, sd_e^2)``, clipped to [0, 1], with level effects
  a_g uniform(-0.1, 0.1) drawn per data set (benchmarks/bench_auto.py's categorical
  cells). Built by the formula front end (dpstats/frontend/formula.py), so that the one-hot
  block and the histogram's variables are set as in a user's call. The slope of
  interest is x's; the dummies are controls.

How the data fill the declared bounds and how noisy they are is not public, so the
model predicts every scenario and auto weighs them alike.

Grid: n in {30, 100, 300, 1000, 3000, 10000}, eps in {0.1, 0.3, 1, 3, 10, 100,
1e4, 1e9} (the large ones give the floors: a robust estimator's distance from
least squares does not vanish with the noise, so extrapolating in eps would be
wrong); continuous: d in {1, 3, 10} regressors (the mechanisms for one regressor
only at d = 1); categorical: L in {2, 3, 10, 30} levels (the shape's axis is log L,
a decade per two points from 3, as d's), for the candidates that apply to a
categorical term (``Candidate.refusal``: not those for one regressor). The design then has L slopes, so a candidate's
smallest n is ``Candidate.min_rows(L)``. With 30 levels and n = 30 some levels are
empty: the non-private fit is then the pseudo-inverse one, whose slope of x is
still identified.
A mechanism that refuses the design from its public shape (a histogram with too
many cells, say) is recorded as refused. Per cell and scenario, ``--datasets``
data sets with one fit each, through the
mechanism's own fit function with its defaults (the default ``se_share``
included, as auto runs it), against the non-private fit on the same data
(OLS, or statsmodels' QuantReg at q = 0.5). Recorded: the 68th percentile of the
mean absolute deviation of the slopes of interest from the non-private ones
(``dev``), the same in units of the non-private standard errors (``rel``: the
paper's C(68)/sigma; over the data sets where those are defined), the 90th
percentile of that deviation over all the data sets, a failed fit counting as the
largest deviation of the scenario's fits that did not fail, infinite if every one
failed (``tail``: what a grouped auto ranks, dpstats/planning/selection.py), the failure
rate and the time per fit; a categorical cell has the key ``levels`` (L), a
continuous one none; each cell written records
its ``datasets`` (the table's top-level ``datasets`` is that of cells without
the key).

    python benchmarks/calibrate_error_model.py [--datasets 24] [--jobs 2] [--quick] [--only LABEL ...]
        [--family continuous|categorical] [--levels L ...] [--dims d ...] [--failing]

On a shared machine run it with ``OPENBLAS_NUM_THREADS=1``: the histogram's
intervals (part of its fit) eigen-decompose a matrix with a row per cell, which
with 30 levels a multithreaded BLAS made twenty times slower under contention.
The categorical cells (``--family categorical --datasets 24 --jobs 2``) took 18
minutes on 2 shared cores: 227 s for L in {3, 10}, 868 s for L = 30 (the
histogram with 30 levels is most of it).

``--quick`` runs a small grid (for checking the script, not for the table).
``--only``, ``--family``, ``--levels`` and ``--dims`` run the cells of the named candidates,
family, levels and continuous dimensions (after a change to a mechanism, or for a new candidate or
family) and replace them in the table, or add them to it when the table has no
such cell. ``--failing`` runs only the cells whose entry records a failed fit:
after a change to what a failed fit does (the histogram's fallback to
Algorithm 1', which draws no noise), every other cell's fits are the same,
draw for draw. A continuous cell's seed is SeedSequence([SEED, index]) for its
index in the full grid (a new candidate goes last in
dpstats/planning/candidates.py, so that the others keep their indices); a
categorical cell's is SeedSequence([SEED, 1, c, L, n, e]) for the candidate's
position c in that list and the index e of eps in the grid, so that neither a
new candidate nor a new L moves another cell's seed. Either way a partial run
writes the cells a full run would, and it writes the table after every cell,
so a run that is stopped keeps the cells it finished (a full run writes once,
at the end).
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import statsmodels.api as sm

from dpstats.design.matrix import Design
from dpstats.frontend.formula import build_design
from dpstats.mechanisms import REGISTRY, PrivacyRequest
from dpstats.planning.candidates import CANDIDATES, Candidate
from dpstats.planning.facts import PublicFacts

SEED = 20261125
NS = (30, 100, 300, 1000, 3000, 10000)
EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0, 100.0, 1e4, 1e9)
DIMENSIONS = (1, 3, 10)
LEVELS = (2, 3, 10, 30)
"""Declared levels of the categorical family ``y ~ x + C(g)``."""
EFFECT = 0.1
"""The categorical family's level effects are uniform(-EFFECT, EFFECT), drawn per data set."""
FAMILIES = ("continuous", "categorical")
SCENARIOS = ((0.05, 0.1), (0.01, 0.1), (0.05, 0.01), (0.01, 0.01), ("skewed", 0.1))
"""(var_x, sd_e) of the uniform scenarios; ``"skewed"``: Beta(1, 4) regressors."""
SKEWED = (1.0, 4.0)
TABLE = Path(__file__).resolve().parents[1] / "dpstats" / "planning" / "error_table.json"


def reference_design(n: int, d: int, var_x: float | str, sd_e: float, rng: np.random.Generator) -> Design:
    """One reference data set (module docstring) as a Design with bounds [0, 1] for every column."""
    if var_x == "skewed":
        x = rng.beta(*SKEWED, (n, d))
    else:
        half = math.sqrt(3.0 * float(var_x))
        x = np.clip(rng.uniform(0.5 - half, 0.5 + half, (n, d)), 0.0, 1.0)
    y = np.clip(0.2 + x.sum(axis=1) * (0.5 / d) + rng.normal(0.0, sd_e, n), 0.0, 1.0)
    return Design(
        y=y,
        X=np.column_stack([np.ones(n), x]),
        y_name="y",
        term_names=("Intercept", *(f"x{j}" for j in range(1, d + 1))),
        y_bounds=(0.0, 1.0),
        x_bounds=np.array([[1.0, 1.0]] + [[0.0, 1.0]] * d),
        intercept_index=0,
    )


def categorical_design(n: int, levels: int, var_x: float | str, sd_e: float, rng: np.random.Generator) -> Design:
    """One data set of the categorical family (module docstring), through the formula front end."""
    if var_x == "skewed":
        x = rng.beta(*SKEWED, n)
    else:
        half = math.sqrt(3.0 * float(var_x))
        x = np.clip(rng.uniform(0.5 - half, 0.5 + half, n), 0.0, 1.0)
    g = rng.integers(levels, size=n)
    effect = rng.uniform(-EFFECT, EFFECT, levels)
    y = np.clip(0.2 + 0.5 * x + effect[g] + rng.normal(0.0, sd_e, n), 0.0, 1.0)
    frame = pd.DataFrame({"x": x, "g": g, "y": y})
    design, _ = build_design("y ~ x + C(g)", frame, {"x": (0.0, 1.0), "y": (0.0, 1.0)}, {"g": list(range(levels))})
    return design


def make_design(n: int, d: int, levels: int, var_x: float | str, sd_e: float, rng: np.random.Generator) -> Design:
    """A reference data set: the continuous family with d regressors (levels 0), else the categorical one."""
    return categorical_design(n, levels, var_x, sd_e, rng) if levels else reference_design(n, d, var_x, sd_e, rng)


def of_interest(design: Design) -> np.ndarray:
    """The columns whose deviation is recorded: the slopes outside the one-hot blocks (the dummies are controls)."""
    dummies = {j for block in design.one_hot_blocks for j in block}
    return np.array([j for j in design.slope_indices if j not in dummies], dtype=int)


def non_private(design: Design, estimator: str) -> tuple[np.ndarray, np.ndarray]:
    """The non-private params and their standard errors (OLS, or QuantReg at the median).

    With few rows per level some levels are empty: the design is then rank
    deficient, which statsmodels warns about; its pseudo-inverse fit still
    identifies x's slope, the only one recorded for that family.
    """
    model = sm.OLS(design.y, design.X) if estimator == "ols" else sm.QuantReg(design.y, design.X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = model.fit() if estimator == "ols" else model.fit(q=0.5, max_iter=5000)
        return np.asarray(fit.params), np.asarray(fit.bse)


def run_cell(args: tuple[Candidate, int, float, int, int, int, tuple[int, ...]]) -> dict:
    """One (candidate, n, eps, d, levels) cell over the five scenarios (levels 0: the continuous family)."""
    candidate, n, eps, d, levels, datasets, seed = args
    spec = REGISTRY[candidate.method]
    options = spec.check_options(dict(candidate.options))
    rng = np.random.default_rng(np.random.SeedSequence([SEED, *seed]))
    privacy = PrivacyRequest(eps=eps, delta=candidate.delta)
    quantile = {"q": 0.5} if candidate.estimator == "quantreg" else {}
    out = {"candidate": candidate.label, "n": n, "eps": eps, "d": d, **({"levels": levels} if levels else {})}
    out |= {"datasets": datasets, "refused": False, "scenarios": []}
    try:
        spec.check_design(make_design(n, d, levels, 0.05, 0.1, rng))
        spec.fit(make_design(n, d, levels, 0.05, 0.1, rng), privacy, rng, **options, **quantile)
    except ValueError:  # refused from the design's public shape: the same for every data set
        return {**out, "refused": True}
    for var_x, sd_e in SCENARIOS:
        devs, rels, failures, seconds = [], [], 0, 0.0
        for _ in range(datasets):
            design = make_design(n, d, levels, var_x, sd_e, rng)
            columns = of_interest(design)
            params, se = non_private(design, candidate.estimator)
            start = time.perf_counter()
            release = spec.fit(design, privacy, rng, **options, **quantile)
            seconds += time.perf_counter() - start
            if release.failed:
                failures += 1
                continue
            gap = np.abs(np.asarray(release.params)[columns] - params[columns])
            devs.append(float(gap.mean()))
            rel = gap / se[columns]
            if np.all(np.isfinite(rel)):  # QuantReg's SE can be undefined with empty levels (n = 30, L = 30)
                rels.append(float(rel.mean()))
        out["scenarios"].append(
            {
                "var_x": var_x,
                "sd_e": sd_e,
                "dev": float(np.quantile(devs, 0.68)) if devs else math.inf,
                "rel": float(np.quantile(rels, 0.68)) if rels else math.inf,
                "tail": tail(devs, failures),
                "failure": failures / datasets,
                "seconds": seconds / datasets,
            }
        )
    return out


def tail(devs: list[float], failures: int) -> float:
    """The 90th percentile of the deviations, each failed fit counted as the largest one (module docstring)."""
    if not devs:
        return math.inf
    return float(np.quantile(devs + [max(devs)] * failures, 0.9, method="inverted_cdf"))


def _key(cell: dict) -> tuple:
    return cell["candidate"], cell["n"], cell["eps"], cell["d"], cell.get("levels", 0)


def _failed(cell: dict) -> bool:
    """Whether some data set of the cell's table entry failed."""
    return any(scenario["failure"] > 0 for scenario in cell["scenarios"])


def applies_to_categorical(candidate: Candidate, levels: int) -> bool:
    """Whether the candidate applies to ``y ~ x + C(g)`` with ``levels`` levels (its refusal from public facts)."""
    design = categorical_design(10 * levels, levels, 0.05, 0.1, np.random.default_rng(0))
    return candidate.refusal(PublicFacts.of(design, 1.0, candidate.delta, candidate.estimator)) is None


def grid_tasks(quick: bool, datasets: int) -> list[tuple]:
    """Every cell's task, continuous family first, then the categorical one.

    A continuous cell's seed is (its index,), a categorical one's (1, candidate's position, L, n, eps's index):
    a new candidate (last in CANDIDATES) or L then leaves every other cell's seed as it was, in both families.
    """
    ns, epsilons, dims = ((100, 1000), (1.0,), (1, 3)) if quick else (NS, EPSILONS, DIMENSIONS)
    levels_grid = (2, 10) if quick else LEVELS
    tasks: list[tuple] = []
    for candidate in CANDIDATES:
        for d in dims:
            if candidate.max_slopes is not None and d > candidate.max_slopes:
                continue
            for n in ns:
                if n < candidate.min_rows(d):
                    continue
                for eps in epsilons:
                    tasks.append((candidate, n, eps, d, 0, datasets, (len(tasks),)))
    for position, candidate in enumerate(CANDIDATES):
        for levels in levels_grid:
            if not applies_to_categorical(candidate, levels):
                continue
            for n in ns:
                if n < candidate.min_rows(levels):  # the design has L slopes: x and L - 1 dummies
                    continue
                for e, eps in enumerate(epsilons):
                    tasks.append((candidate, n, eps, 1, levels, datasets, (1, position, levels, n, e)))
    return tasks


def merged(kept: list[dict], fresh: list[dict]) -> list[dict]:
    """The table's cells with ``fresh`` ones in place of those with the same key; fresh new keys appended."""
    by_key = {_key(c): c for c in fresh}
    old = {_key(c) for c in kept}
    return [by_key.get(_key(c), c) for c in kept] + [c for c in fresh if _key(c) not in old]


def write_merged(fresh: list[dict]) -> None:
    """Replace (or add) the ``fresh`` cells in the table on disk, keeping its other cells and its datasets."""
    old = json.loads(TABLE.read_text())
    table = {"seed": SEED, "datasets": old["datasets"], "cells": merged(old["cells"], fresh)}
    TABLE.write_text(json.dumps(table, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=24)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", nargs="+", metavar="LABEL", choices=[c.label for c in CANDIDATES])
    parser.add_argument("--family", choices=FAMILIES, help="run only this family's cells (default: both)")
    parser.add_argument("--levels", nargs="+", type=int, choices=LEVELS, help="run only these categorical cells")
    parser.add_argument("--dims", nargs="+", type=int, choices=DIMENSIONS, help="run only these continuous cells")
    parser.add_argument("--failing", action="store_true", help="run only the cells whose table entry has failures")
    parser.add_argument(
        "--below-n-eps", type=float, help="run only the cells with n eps below this (where a default share changed)"
    )
    args = parser.parse_args()
    tasks = grid_tasks(args.quick, args.datasets)
    if args.only:
        tasks = [task for task in tasks if task[0].label in args.only]
    if args.family:
        tasks = [task for task in tasks if (task[4] > 0) == (args.family == "categorical")]
    if args.levels:
        tasks = [task for task in tasks if task[4] in args.levels]
    if args.dims:
        tasks = [task for task in tasks if task[4] == 0 and task[3] in args.dims]
    if args.failing:
        failing = {_key(c) for c in json.loads(TABLE.read_text())["cells"] if not c["refused"] and _failed(c)}
        tasks = [task for task in tasks if (task[0].label, task[1], task[2], task[3], task[4]) in failing]
    if args.below_n_eps:
        tasks = [task for task in tasks if task[1] * task[2] < args.below_n_eps]
    partial = bool(args.only or args.family or args.levels or args.dims or args.failing or args.below_n_eps)
    partial = partial and not args.quick
    start = time.perf_counter()
    cells = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for cell in pool.map(run_cell, tasks):
            cells.append(cell)
            if partial:
                write_merged(cells)
            shape = f"L={cell['levels']:<3}" if "levels" in cell else f"d={cell['d']:<3}"
            label = f"{cell['candidate']:<21} n={cell['n']:<6} eps={cell['eps']:<5g} {shape}"
            if cell["refused"]:
                print(f"{label} refused (public shape)", flush=True)
                continue
            worst = max(s["failure"] for s in cell["scenarios"])
            devs = " ".join(f"{s['dev']:.3g}" for s in cell["scenarios"])
            print(f"{label} dev {devs}  fail<={worst:.2f}", flush=True)
    if args.quick:
        print(f"quick run: {len(cells)} cells in {time.perf_counter() - start:.0f} s (table not written)")
        return
    if partial:
        print(f"{len(cells)} cells in {time.perf_counter() - start:.0f} s, replaced in {TABLE}")
        return
    TABLE.write_text(json.dumps({"seed": SEED, "datasets": args.datasets, "cells": cells}, indent=1) + "\n")
    print(f"{len(cells)} cells in {time.perf_counter() - start:.0f} s -> {TABLE}")


if __name__ == "__main__":
    main()

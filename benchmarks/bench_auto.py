"""method="auto" against the best explicit mechanism and against diffprivlib and OpenDP (issue 15's must-show).

Run with ``python benchmarks/bench_auto.py [--datasets D] [--trials R] [--workers W] [--quick] [--family F]
[--settings "point only" defaults]`` (``--family categorical``, say: only that family's cells, with the seeds they
have in the full run).

Cells (every bound declared [0, 1], so the unit scale is the user's scale; pure eps-DP, delta = 0):

* **Alabi grid** (Alabi et al. 2022, section 3.1.5; 48 cells): x uniform with mean 0.5 and
  variance var_x, y = a + 0.5 x + N(0, sd_e^2), clipped to [0, 1], with the intercept a drawn per
  data set from 0.2 + U(-0.05, 0.05) in every family (as ``--dither`` in
  benchmarks/bench_theilsen_vs_opendp.py: with a = 0.2 the true p25 sits 0.0018 from OpenDP's
  candidate 32/99, and the error of any lattice of candidates is then the luck of its position); n in {30, 100, 1000,
  10000}, eps in {0.1, 1, 10}, var_x in {0.01, 0.05}, sd_e in {0.01, 0.1}.
* **d = 3 and d = 10** (12 cells): the same with d regressors (each var_x = 0.05), y = a +
  (0.5 / d) sum_j x_j + N(0, 0.1^2) (benchmarks/calibrate_error_model.py's reference design);
  n in {100, 1000, 10000}, eps in {1, 10}.
* **skewed** (9 cells): x ~ Beta(1, 4) (mean 0.2: most rows in a fifth of the declared range),
  sd_e = 0.1; n in {100, 1000, 10000}, eps in {0.1, 1, 10}.
* **categorical** (8 cells): ``y ~ x + C(g)`` with 2 or 20 declared levels, a level effect
  U(-0.1, 0.1) per level and data set, x as in the grid (var_x = 0.05), sd_e = 0.1; n in
  {1000, 5000}, eps in {1, 2}.

Metric (the paper's C(68)/sigma): per data set, the 68th percentile over trials of
|p25_DP - p25_OLS| / se_OLS(p25), p25 the prediction at every continuous regressor = 0.25 (the
reference level for the categorical cells), OLS the non-private fit on the same data (so this
is the error due to privacy); averaged over data sets. A failed release counts as an infinite
error (so a method failing in more than 32% of a data set's trials scores infinity).

Two settings, on the same data sets (issue 29: inference that costs little):

* **point only**: dpstats spends the whole eps on the point estimate (``se_share=0``), as the peers,
  which release no standard errors;
* **defaults**: dpstats as a user runs it, part of eps on the standard errors (each mechanism's
  default ``se_share``), and auto choosing for that call; the peers as in the other setting.

Methods, all at the same guarantee: eps-DP for replace-one neighbours (docs/DESIGN.md section 2):

* every explicit candidate of ``method="auto"`` that applies (dpstats/planning/candidates.py:
  NoisyStats as in the paper and repaired (``singular="repair"``, never fails), Theil-Sen,
  gradient descent, the histogram; Tukey needs delta > 0) with its options;
* ``auto``: the candidate that ``dpstats.planning.selection.choose`` picks from the cell's public
  facts with the setting's ``se_share``, as the cells fit (the error model then predicts each
  candidate at the budget its point gets; the same choice for every data set of a cell, so its
  column is that candidate's, same draws);
* the peers (benchmark-only extras, skipped with a message when missing; diffprivlib 0.6.6 imports
  ``sklearn.tree._tree.DOUBLE``, so it needs scikit-learn < 1.6): diffprivlib 0.6.6
  ``LinearRegression`` at eps / 2 (its sensitivities are one row's largest contribution, so its
  epsilon is for add/remove neighbours; replacing a row is a removal and an addition, so eps / 2
  gives replace-one eps-DP); ``diffprivlib (a/r)`` at eps, for information only (a weaker
  guarantee, not in the verdict); OpenDP 0.16 ``LinearRegression`` (d = 1 only; one matching,
  100 candidates, calibrated by its own privacy map at replace-one distance 2, as in
  benchmarks/bench_theilsen_vs_opendp.py).

Verdict lines per setting (issue 15's targets): auto within 1.1x of the best explicit method in >= 90%
of cells; auto at or below the better peer in >= 90% of cells (with, for both, the most that any
rule choosing from public facts could meet with these mechanisms: ``public_facts_bound``);
auto's failure rate <= 1% wherever some method's is; and the categorical check: auto's slope
error with 20 levels at most 2x that with 2 (n = 5000, eps = 2). Then issue 43's counts on the 48
Alabi cells: auto at or below the better peer in >= 42 of them, and within 1.1x of the best explicit
method of the same setting in >= 40 (targets for the defaults setting; the point-only one is printed
alike). Each cell has its own seeds (SeedSequence(SEED, cell index, 0) for
its data sets, (SEED, cell index, 1) for the draws), so the table does not depend on --workers and
both settings see the same data sets.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd
from bench_theilsen_vs_opendp import opendp_methods

from dpstats.design.matrix import Design
from dpstats.frontend.formula import build_design
from dpstats.mechanisms import REGISTRY, PrivacyRequest
from dpstats.planning.candidates import CANDIDATES, label_of
from dpstats.planning.facts import PublicFacts
from dpstats.planning.selection import choose

SEED = 20261125
SETTINGS: dict[str, float | None] = {"point only": 0.0, "defaults": None}
"""The setting's ``se_share`` (None: each mechanism's default, as a user's call)."""
PEER_TARGET, WITHIN_TARGET = 42, 40
"""Issue 43's counts on the 48 Alabi cells, at the defaults (SEs on): auto at or below the better peer, and
within 1.1x of the best explicit method."""
DITHER = 0.05
"""Half-width of the uniform draw of each data set's intercept around 0.2 (benchmarks/bench_theilsen_vs_opendp.py)."""
WITHIN = 1.1
TARGET_SHARE = 0.9
MAX_FAILURE = 0.01
CATEGORICAL_RATIO = 2.0
FAMILIES = ("alabi", "d", "skewed", "categorical")


@dataclass(frozen=True)
class CellSpec:
    """One cell: its family, the data's shape and the budget."""

    family: str
    n: int
    eps: float
    d: int = 1
    var_x: float = 0.05
    sd_e: float = 0.1
    levels: int = 0

    def describe(self) -> str:
        shape = f"d={self.d}" if self.family != "categorical" else f"L={self.levels}"
        return f"{self.family} n={self.n} eps={self.eps:g} {shape} var_x={self.var_x:g} sd_e={self.sd_e:g}"


def grid(quick: bool) -> list[CellSpec]:
    """The cells of the module docstring (``quick``: a handful, to check the script)."""
    if quick:
        return [
            CellSpec("alabi", 100, 1.0),
            CellSpec("d", 1000, 10.0, d=3),
            CellSpec("categorical", 1000, 2.0, levels=20),
        ]
    cells = [
        CellSpec("alabi", n, eps, var_x=vx, sd_e=se)
        for n in (30, 100, 1000, 10000)
        for eps in (0.1, 1.0, 10.0)
        for vx in (0.01, 0.05)
        for se in (0.01, 0.1)
    ]
    cells += [CellSpec("d", n, eps, d=d) for d in (3, 10) for n in (100, 1000, 10000) for eps in (1.0, 10.0)]
    cells += [CellSpec("skewed", n, eps) for n in (100, 1000, 10000) for eps in (0.1, 1.0, 10.0)]
    cells += [CellSpec("categorical", n, eps, levels=k) for k in (2, 20) for n in (1000, 5000) for eps in (1.0, 2.0)]
    return cells


def data_set(cell: CellSpec, rng: np.random.Generator) -> tuple[str, pd.DataFrame, dict, dict]:
    """One data set of the cell: formula, frame, bounds and levels."""
    n, half = cell.n, math.sqrt(3.0 * cell.var_x)
    if cell.family == "skewed":
        x = rng.beta(1.0, 4.0, (n, 1))
    else:
        x = np.clip(rng.uniform(0.5 - half, 0.5 + half, (n, cell.d)), 0.0, 1.0)
    intercept = 0.2 + rng.uniform(-DITHER, DITHER)  # no lattice of candidates sits next to every truth
    y = intercept + x.sum(axis=1) * (0.5 / cell.d) + rng.normal(0.0, cell.sd_e, n)
    names = [f"x{j}" for j in range(1, cell.d + 1)]
    frame = pd.DataFrame(x, columns=names)
    levels: dict = {}
    rhs = " + ".join(names)
    if cell.levels:
        g = rng.integers(cell.levels, size=n)
        y = y + rng.uniform(-0.1, 0.1, cell.levels)[g]
        frame["g"] = g
        levels = {"g": list(range(cell.levels))}
        rhs += " + C(g)"
    frame["y"] = np.clip(y, 0.0, 1.0)
    bounds = {name: (0.0, 1.0) for name in [*names, "y"]}
    return f"y ~ {rhs}", frame, bounds, levels


def first_continuous(design: Design) -> int:
    """The design column of the first regressor outside the one-hot blocks (x1; patsy puts factors first)."""
    dummies = {j for block in design.one_hot_blocks for j in block}
    return next(int(j) for j in design.slope_indices if j not in dummies)


def target(design: Design) -> np.ndarray:
    """The contrast of p25: the intercept plus 0.25 per continuous regressor (dummies at 0)."""
    dummies = {j for block in design.one_hot_blocks for j in block}
    c = np.zeros(design.X.shape[1])
    c[design.intercept_index] = 1.0
    for j in design.slope_indices:
        if j not in dummies:
            c[j] = 0.25
    return c


def ols_target(design: Design, c: np.ndarray) -> tuple[float, float, float]:
    """Non-private OLS: c'beta, its homoskedastic standard error, and the slope of x1."""
    X, y = design.X, design.y
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    s2 = float(resid @ resid) / (design.n - X.shape[1])
    cov = s2 * np.linalg.pinv(X.T @ X)
    return float(c @ beta), math.sqrt(float(c @ cov @ c)), float(beta[first_continuous(design)])


Fitter = Callable[[Design, float, np.random.Generator], np.ndarray | None]
"""``fit(design, eps, rng)``: released params (None if the release failed)."""


def dpstats_fitters(share: float | None) -> dict[str, Fitter]:
    """The pure-DP least-squares candidates of auto, with their defaults and the standard errors' ``share``."""
    fitters = {}
    for candidate in CANDIDATES:
        if candidate.estimator != "ols" or candidate.delta > 0:
            continue
        spec = REGISTRY[candidate.method]
        options = spec.check_options(dict(candidate.options))

        def fit(design: Design, eps: float, rng: np.random.Generator, spec=spec, options=options) -> np.ndarray | None:
            release = spec.fit(design, PrivacyRequest(eps, se_share=share), rng, **options)
            return None if release.failed else np.asarray(release.params, dtype=float)

        fitters[candidate.label] = fit
    return fitters


def diffprivlib_fitter() -> dict[str, Fitter]:
    """diffprivlib's LinearRegression at replace-one eps (its epsilon = eps / 2) and at add/remove eps."""
    try:
        from diffprivlib.models import LinearRegression
    except ImportError:
        return {}

    def at(fraction: float) -> Fitter:
        def fit(design: Design, eps: float, rng: np.random.Generator) -> np.ndarray:
            slopes = design.slope_indices
            lo, hi = design.x_bounds[slopes, 0], design.x_bounds[slopes, 1]
            model = LinearRegression(
                epsilon=eps * fraction,
                bounds_X=(lo, hi),
                bounds_y=design.y_bounds,
                random_state=int(rng.integers(2**31)),
            )
            model.fit(design.X[:, slopes], design.y)
            params = np.zeros(design.X.shape[1])
            params[design.intercept_index] = float(model.intercept_)
            params[slopes] = model.coef_
            return params

        return fit

    return {"diffprivlib": at(0.5), "diffprivlib (a/r)": at(1.0)}


def opendp_fitter() -> dict[str, Fitter]:
    """OpenDP's LinearRegression at replace-one calibration, d = 1 (benchmarks/bench_theilsen_vs_opendp.py)."""
    predict = opendp_methods().get("OpenDP")
    if predict is None:
        return {}

    def fit(design: Design, eps: float, rng: np.random.Generator) -> np.ndarray | None:
        if design.X.shape[1] != 2:
            return None
        # OpenDP's predictor returns p25; the contrast of p25 on params (p25, 0) is p25 itself
        return np.array([predict(design, eps, rng), 0.0])

    return {"OpenDP": fit}


@dataclass(frozen=True)
class Cell:
    """One cell's C(68)/sigma, failure rate and slope error of x1 per method, and auto's choice."""

    spec: CellSpec
    error: dict[str, float]
    failure: dict[str, float]
    slope_error: dict[str, float]
    auto: str
    seconds: float


def cell_rngs(index: int) -> tuple[np.random.Generator, np.random.Generator]:
    """The cell's generators: one for its data sets, one for the draws (both settings see the same data)."""
    data, draws = (np.random.default_rng(np.random.SeedSequence([SEED, index, k])) for k in (0, 1))
    return data, draws


def run_cell(args: tuple[int, CellSpec, int, int, str]) -> Cell:
    """Every method on ``datasets`` data sets x ``trials`` trials of one cell, in one setting."""
    index, cell, datasets, trials, setting = args
    start = time.process_time()
    data_rng, rng = cell_rngs(index)
    share = SETTINGS[setting]
    fitters = {**dpstats_fitters(share), **diffprivlib_fitter()}
    if cell.d == 1 and not cell.levels:
        fitters.update(opendp_fitter())
    errors: dict[str, list[float]] = {}
    slopes: dict[str, list[float]] = {}
    fails: dict[str, int] = {}
    auto = ""
    for _ in range(datasets):
        formula, frame, bounds, levels = data_set(cell, data_rng)
        design, _ = build_design(formula, frame, bounds, levels)
        choice = choose(PublicFacts.of(design, cell.eps, 0.0, "ols", se_share=share))
        auto = label_of(choice.method, choice.options, "ols")
        c = target(design)
        truth, se, slope = ols_target(design, c)
        for name, fit in fitters.items():
            try:
                draws = [fit(design, cell.eps, rng) for _ in range(trials)]
            except ValueError:  # refused from the design's public shape (e.g. a histogram with too many cells)
                continue
            gaps = [math.inf if p is None else abs(float(c @ p) - truth) / se for p in draws]
            j = first_continuous(design)
            slope_gaps = [math.inf if p is None else abs(float(p[j]) - slope) for p in draws]
            errors.setdefault(name, []).append(float(np.quantile(gaps, 0.68, method="higher")))
            slopes.setdefault(name, []).append(float(np.quantile(slope_gaps, 0.68, method="higher")))
            fails[name] = fails.get(name, 0) + sum(p is None for p in draws)
    errors["auto"], slopes["auto"], fails["auto"] = errors[auto], slopes[auto], fails[auto]
    return Cell(
        spec=cell,
        error={k: float(np.mean(v)) for k, v in errors.items()},
        failure={k: v / (datasets * trials) for k, v in fails.items()},
        slope_error={k: float(np.mean(v)) for k, v in slopes.items()},
        auto=auto,
        seconds=time.process_time() - start,
    )


EXPLICIT = tuple(c.label for c in CANDIDATES if c.estimator == "ols" and c.delta == 0)
PEERS = ("diffprivlib", "OpenDP")


def best_explicit(cell: Cell) -> float:
    return min(cell.error[m] for m in EXPLICIT if m in cell.error)


def best_peer(cell: Cell) -> float:
    return min((cell.error[m] for m in PEERS if m in cell.error), default=math.nan)


def format_table(cells: list[Cell]) -> str:
    peers = (*PEERS, "diffprivlib (a/r)")
    names = [*EXPLICIT, "auto", *(p for p in peers if any(p in c.error for c in cells))]
    widths = [max(9, len(m)) for m in names]
    picks = max(len("auto picks"), *(len(c.auto) for c in cells))
    head = f"{'cell':<60} | "
    head += " ".join(f"{m:>{w}}" for m, w in zip(names, widths, strict=True))
    head += f" | {'auto picks':>{picks}} {'auto/best':>9} {'auto/peer':>9}"
    lines = [head, "-" * len(head)]
    for c in cells:
        line = f"{c.spec.describe():<60} | "
        line += " ".join(f"{c.error.get(m, math.nan):>{w}.3g}" for m, w in zip(names, widths, strict=True))
        ratios = f"{c.error['auto'] / best_explicit(c):>9.2f} {c.error['auto'] / best_peer(c):>9.2f}"
        line += f" | {c.auto:>{picks}} {ratios}"
        lines.append(line)
    return "\n".join(lines)


def format_slopes(cells: list[Cell]) -> str:
    """The categorical cells' 68th-percentile slope error of x1 (unit scale) per dpstats method, and auto's pick."""
    names = [m for m in (*EXPLICIT, "auto") if any(m in c.slope_error for c in cells)]
    widths = [max(9, len(m)) for m in names]
    head = f"{'cell (slope of x1)':<60} | " + " ".join(f"{m:>{w}}" for m, w in zip(names, widths, strict=True))
    lines = [head, "-" * len(head)]
    for c in cells:
        line = f"{c.spec.describe():<60} | "
        line += " ".join(f"{c.slope_error.get(m, math.nan):>{w}.3g}" for m, w in zip(names, widths, strict=True))
        lines.append(f"{line} | {c.auto}")
    return "\n".join(lines)


def _ratio(a: float, b: float) -> float:
    """a / b with inf / inf = 1 (both useless) and nan where b is missing."""
    return 1.0 if math.isinf(a) and math.isinf(b) else a / b


def public_facts_bound(cells: list[Cell]) -> tuple[int, int]:
    """The most cells any rule of public facts could meet on the two ratio targets, with these mechanisms.

    Cells with the same n, eps, d and levels differ only in what is not public (how the data fill
    the bounds, the noise, the regressor's skew), so any rule gives them one method; per such
    group the best single explicit method is counted (each target maximised on its own).
    """
    groups: dict[tuple, list[Cell]] = {}
    for c in cells:
        groups.setdefault((c.spec.n, c.spec.eps, c.spec.d, c.spec.levels), []).append(c)
    within = beats = 0
    for group in groups.values():
        methods = {m for c in group for m in EXPLICIT if m in c.error}
        within += max(sum(_ratio(c.error.get(m, math.inf), best_explicit(c)) <= WITHIN for c in group) for m in methods)
        peered = [c for c in group if not math.isnan(best_peer(c))]
        beats += max(sum(_ratio(c.error.get(m, math.inf), best_peer(c)) <= 1.0 for c in peered) for m in methods)
    return within, beats


def verdict(cells: list[Cell]) -> list[str]:
    """The issue's four targets, each with its count."""
    to_best = [_ratio(c.error["auto"], best_explicit(c)) for c in cells]
    to_peer = [(c, _ratio(c.error["auto"], best_peer(c))) for c in cells if not math.isnan(best_peer(c))]
    within = sum(r <= WITHIN for r in to_best)
    beats = sum(r <= 1.0 for _, r in to_peer)
    reliable = [c for c in cells if min(c.failure[m] for m in EXPLICIT if m in c.failure) <= MAX_FAILURE]
    safe = sum(c.failure["auto"] <= MAX_FAILURE for c in reliable)
    lines = [
        f"[{'MET' if within >= TARGET_SHARE * len(cells) else 'NOT MET'}] auto within {WITHIN:g}x of the best "
        f"explicit method in {within}/{len(cells)} cells (target >= {TARGET_SHARE:.0%})",
        f"[{'MET' if beats >= TARGET_SHARE * len(to_peer) else 'NOT MET'}] auto at or below the better of "
        f"diffprivlib and OpenDP in {beats}/{len(to_peer)} cells (target >= {TARGET_SHARE:.0%})",
        f"[{'MET' if safe == len(reliable) else 'NOT MET'}] auto's failure rate <= {MAX_FAILURE:.0%} in "
        f"{safe}/{len(reliable)} cells where some explicit method's is",
    ]
    bound_best, bound_peer = public_facts_bound(cells)
    lines.append(
        f"    the most any rule of public facts could meet with these mechanisms: {bound_best}/{len(cells)} "
        f"and {bound_peer}/{len(to_peer)} (public_facts_bound)"
    )
    missed = [f"{c.spec.describe()} ({r:.2f})" for c, r in zip(cells, to_best, strict=True) if r > WITHIN]
    lines.append("cells beyond 1.1x the best: " + ("; ".join(missed) or "none"))
    lost = [f"{c.spec.describe()} ({r:.2f})" for c, r in to_peer if r > 1.0]
    lines.append("cells above the better peer: " + ("; ".join(lost) or "none"))
    pair = {c.spec.levels: c for c in cells if c.spec.family == "categorical" and c.spec.n == 5000 and c.spec.eps == 2}
    if len(pair) == 2:
        ratio = pair[20].slope_error["auto"] / pair[2].slope_error["auto"]
        lines.append(
            f"[{'MET' if ratio <= CATEGORICAL_RATIO else 'NOT MET'}] categorical (n = 5000, eps = 2): auto's slope "
            f"error with 20 levels {pair[20].slope_error['auto']:.3g} is {ratio:.2f}x that with 2 "
            f"({pair[2].slope_error['auto']:.3g}; target <= {CATEGORICAL_RATIO:g}x)"
        )
        own = pair[20].slope_error["noisystats"] / pair[2].slope_error["noisystats"]
        lines.append(f"    NoisyStats alone (dummy-aware with 20 levels): {own:.2f}x")
    categorical = [c for c in cells if c.spec.family == "categorical"]
    if categorical:
        slope_within = sum(
            c.slope_error["auto"] <= WITHIN * np.nanmin([c.slope_error[m] for m in EXPLICIT if m in c.slope_error])
            for c in categorical
        )
        lines.append(
            f"    on x1's slope (what the error model predicts in the categorical family), auto is within "
            f"{WITHIN:g}x of the best explicit method in {slope_within}/{len(categorical)} categorical cells"
        )
    return lines


def alabi_counts(cells: list[Cell]) -> list[str]:
    """Issue 29's counts on the Alabi grid's cells: auto against the better peer and the best explicit method."""
    alabi = [c for c in cells if c.spec.family == "alabi"]
    if not alabi:
        return []
    beats = sum(_ratio(c.error["auto"], best_peer(c)) <= 1.0 for c in alabi)
    within = sum(_ratio(c.error["auto"], best_explicit(c)) <= WITHIN for c in alabi)
    return [
        f"[{'MET' if beats >= PEER_TARGET else 'NOT MET'}] Alabi grid: auto at or below the better peer in "
        f"{beats}/{len(alabi)} cells (target >= {PEER_TARGET} of 48)",
        f"[{'MET' if within >= WITHIN_TARGET else 'NOT MET'}] Alabi grid: auto within {WITHIN:g}x of the best "
        f"explicit method in {within}/{len(alabi)} cells (target >= {WITHIN_TARGET} of 48)",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=8, help="data sets per cell")
    parser.add_argument("--trials", type=int, default=12, help="trials per data set and method")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--quick", action="store_true", help="three cells, to check the script")
    parser.add_argument("--family", choices=FAMILIES, help="only this family's cells (same seeds as in the full run)")
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=list(SETTINGS))
    args = parser.parse_args(argv)
    if not diffprivlib_fitter() or not opendp_fitter():
        print("diffprivlib or OpenDP is not installed (benchmark-only extras): their columns are left out")
    cells_in = grid(args.quick)
    indexed = [(i, cell) for i, cell in enumerate(cells_in) if not args.family or cell.family == args.family]
    cells_in = [cell for _, cell in indexed]
    tasks = [(i, cell, args.datasets, args.trials, setting) for setting in args.settings for i, cell in indexed]
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        largest_first = sorted(tasks, key=lambda t: -t[1].n * t[1].d)
        done = pool.map(run_cell, largest_first)
        results = {(t[4], t[1]): cell for t, cell in zip(largest_first, done, strict=True)}
    for setting in args.settings:
        cells = [results[setting, cell] for cell in cells_in]
        spent = "all of eps on the point" if SETTINGS[setting] == 0 else "each mechanism's default se_share"
        print(
            f"\n[{setting}] method='auto' vs explicit mechanisms and peers, replace-one eps-DP, dpstats with {spent}: "
            f"C(68)/sigma of p25 (lower is better; inf: failed in more than 32% of a data set's trials); "
            f"{args.datasets} data sets x {args.trials} trials per cell"
        )
        print(format_table(cells))
        categorical = [c for c in cells if c.spec.family == "categorical"]
        if categorical:
            print()
            print(format_slopes(categorical))
        print()
        for line in [*verdict(cells), *alabi_counts(cells)]:
            print(line)
    print(f"\nwall time {time.perf_counter() - start:.0f} s on {args.workers} worker(s)")


if __name__ == "__main__":
    main()

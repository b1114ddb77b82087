"""Accuracy table: the synthetic experiment of Alabi et al. (2022), section 3.1.5 and Figure 10.

Run with ``python benchmarks/bench_alabi_accuracy.py [--datasets D] [--trials R] [--workers W]``.

Data (section 3.1.5): x_i uniform with mean 0.5 and variance var_x, y_i = 0.5 x_i + 0.2 + e_i
with e_i ~ N(0, sd_e^2), both clipped to [0, 1]; bounds [0, 1]^2 are declared, so the
unit scale is the user's scale. Grid: n in {30, 100, 1000, 10000}, eps in {0.1, 1, 10},
var_x in {0.01, 0.05}, sd_e in {0.01, 0.1} (48 rows).

Methods, each at the total eps of the pair (p25, p75), through the core mechanism
functions on Design objects (no formula parsing per trial):

* NoisyStats (Algorithm 1), pure eps-DP;
* DP gradient descent (Algorithms 6, 7; T = 80, tau = 1, Table 1): pure (eps-DP), approx
  ((eps, delta)-DP with delta = 2^-30 as in the paper, section 3) and zCDP (rho = eps^2 / 2,
  a weaker guarantee, as the paper's DPGDzCDP);
* DP Theil-Sen with 10 matchings (Algorithms 2-5; section 3.1.5 uses k = 10 in the synthetic
  experiments), Table 1's synthetic-data hyperparameters r_l = -2, r_u = 2, theta = 0.01,
  d = 3: exponential (exp, Algorithm 3: candidates = "continuous"), widened (wide), smooth
  sensitivity (ss); eps/2 per prediction;
* TS-grid: dpstats' default Theil-Sen (the exponential median on the candidate grid where
  its rule picks it, dpstats/mechanisms/theilsen/grid_median.py, with its own k and output
  range), not one of the paper's methods.

Metric (the paper's C(68)/sigma): for each dataset, the 68th percentile over trials of
|p25_DP - p25_OLS| (p25 = prediction at x = 0.25, OLS = the non-private fit on the same
dataset, so this is the error due to privacy), divided by the OLS standard error of p25 on
that dataset; averaged over datasets. Failed trials (NoisyStats' ⊥) are left out of the
error and counted in the failure rate. Lower is better; 1 means the privacy error equals
the sampling error.

A summary per decade of eps n var_x follows, then verdict lines that test the paper's
findings (section 4.2), each with its criterion printed: robust (Theil-Sen) estimators best
when eps n var_x is small; NoisyStats catching up when it is large (at sd_e = 0.1); the
non-robust methods trending towards the lead as it grows; NoisyStats failing often when it
is small; small sd_e favouring Theil-Sen (section 4.2.3). Rows where no method gets within
10 OLS standard errors ("not informative": at eps n var_x <= 5 every method is useless) are
shown but left out of the first verdict.

Defaults: 12 datasets x 15 trials per method and grid point, about 520 s of CPU on an idle
machine (2 workers: about 4.5 minutes); the all-methods cost is dominated by n = 10,000 and
by the smooth-sensitivity Theil-Sen at eps = 0.1 (about 0.23 s per fit there). Each row is
computed from its own seed (SeedSequence(SEED, row index)), so the table does not depend on
--workers.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from dpstats.design.matrix import Design
from dpstats.mechanisms import REGISTRY, PrivacyRequest, Release
from dpstats.mechanisms.gradient import mechanism as gradient
from dpstats.mechanisms.noisystats import mechanism as noisystats

SEED = 20221101
NS = (30, 100, 1000, 10000)
EPSILONS = (0.1, 1.0, 10.0)
VAR_X = (0.01, 0.05)
SD_E = (0.01, 0.1)
APPROX_DELTA = 2.0**-30
# Table 1, synthetic data: r_l = -2, r_u = 2 (output_range, in y's units = unit scale here), theta = 0.01, d = 3.
THEILSEN_SYNTHETIC: dict[str, object] = {"output_range": (-2.0, 2.0), "theta": 0.01, "df": 3.0, "k": 10}
SMALL, LARGE = 10.0, 100.0  # eps n var_x thresholds of the verdicts
INFORMATIVE = 10.0  # a row is informative when some method's C(68)/sigma is below this
BINS = ((0.0, 1.0, "<1"), (1.0, 10.0, "1-10"), (10.0, 100.0, "10-100"), (100.0, math.inf, ">=100"))

Fitter = Callable[[Design, float, np.random.Generator], Release]


def synthetic(n: int, var_x: float, sd_e: float, rng: np.random.Generator) -> Design:
    """One dataset of section 3.1.5, as a Design with bounds [0, 1]^2."""
    half = math.sqrt(3.0 * var_x)
    x = np.clip(rng.uniform(0.5 - half, 0.5 + half, n), 0.0, 1.0)
    y = np.clip(0.5 * x + 0.2 + rng.normal(0.0, sd_e, n), 0.0, 1.0)
    return Design(
        y=y,
        X=np.column_stack([np.ones(n), x]),
        y_name="y",
        term_names=("Intercept", "x"),
        y_bounds=(0.0, 1.0),
        x_bounds=np.array([[1.0, 1.0], [0.0, 1.0]]),
        intercept_index=0,
    )


def ols_p25(design: Design) -> tuple[float, float]:
    """Non-private OLS prediction at x = 0.25 and its standard error (the paper's eq. 3)."""
    x, y = design.X[:, 1], design.y
    n = x.size
    xbar, ybar = x.mean(), y.mean()
    sxx = float(((x - xbar) ** 2).sum())
    slope = float(((x - xbar) * (y - ybar)).sum()) / sxx
    intercept = ybar - slope * xbar
    resid = y - intercept - slope * x
    s2 = float(resid @ resid) / (n - 2)
    return intercept + 0.25 * slope, math.sqrt(s2 * (1.0 / n + (0.25 - xbar) ** 2 / sxx))


def _theilsen_fitters() -> dict[str, Fitter]:
    """DPExpTheilSen / DPWideTheilSen / DPSSTheilSen with 10 matchings and dpstats' default, if registered."""
    spec = REGISTRY.get("theilsen")
    if spec is None:
        return {}
    fitters: dict[str, Fitter] = {}
    variants = {
        "TS-exp": {**THEILSEN_SYNTHETIC, "median": "exp", "candidates": "continuous"},
        "TS-wide": {**THEILSEN_SYNTHETIC, "median": "wide"},
        "TS-ss": {**THEILSEN_SYNTHETIC, "median": "smooth"},
        "TS-grid": {},
    }
    for label, options in variants.items():

        def fit(design: Design, eps: float, rng: np.random.Generator, options=options) -> Release:
            return spec.fit(design, PrivacyRequest(eps), rng, **spec.check_options(options))

        fitters[label] = fit
    return fitters


def methods() -> dict[str, Fitter]:
    """Every method of the table, by column label."""

    def ns(design: Design, eps: float, rng: np.random.Generator) -> Release:
        return noisystats.fit(design, PrivacyRequest(eps), rng)

    def gd(variant: str, delta: float) -> Fitter:
        def fit(design: Design, eps: float, rng: np.random.Generator) -> Release:
            # zCDP takes rho (its eps without delta is refused): rho = eps^2 / 2, as the paper's DPGDzCDP
            budget = PrivacyRequest(None, rho=eps**2 / 2) if variant == "zcdp" else PrivacyRequest(eps, delta)
            privacy = PrivacyRequest(budget.eps, budget.delta, budget.rho, se_share=0.0)
            return gradient.fit(design, privacy, rng, variant=variant)

        return fit

    return {
        "NoisyStats": ns,
        "GD-pure": gd("pure", 0.0),
        "GD-approx": gd("approx", APPROX_DELTA),
        "GD-zCDP": gd("zcdp", 0.0),
        **_theilsen_fitters(),
    }


@dataclass(frozen=True)
class Row:
    """One grid point: the error ratio and failure rate of every method."""

    n: int
    eps: float
    var_x: float
    sd_e: float
    error: dict[str, float]
    failure: dict[str, float]
    seconds: float

    @property
    def envar(self) -> float:
        """eps n var_x, the paper's predictor of which family wins (section 4.2.2)."""
        return float(f"{self.eps * self.n * self.var_x:.10g}")  # 0.1 * 1000 * 0.01 is exactly 1 here


def run_row(args: tuple[int, int, float, float, float, int, int]) -> Row:
    """All methods on ``datasets`` datasets x ``trials`` trials of one grid point."""
    index, n, eps, var_x, sd_e, datasets, trials = args
    start = time.process_time()
    rng = np.random.default_rng(np.random.SeedSequence([SEED, index]))
    fitters = methods()
    ratios: dict[str, list[float]] = {name: [] for name in fitters}
    failures = dict.fromkeys(fitters, 0)
    for _ in range(datasets):
        design = synthetic(n, var_x, sd_e, rng)
        p25, se = ols_p25(design)
        for name, fit in fitters.items():
            errors = []
            for _ in range(trials):
                release = fit(design, eps, rng)
                if release.failed:
                    failures[name] += 1
                    continue
                intercept, slope = release.params[0], release.params[1]
                errors.append(abs(intercept + 0.25 * slope - p25))
            if errors:
                ratios[name].append(float(np.quantile(errors, 0.68)) / se)
    total = datasets * trials
    return Row(
        n=n,
        eps=eps,
        var_x=var_x,
        sd_e=sd_e,
        error={k: float(np.mean(v)) if v else math.nan for k, v in ratios.items()},
        failure={k: failures[k] / total for k in fitters},
        seconds=time.process_time() - start,
    )


def check_against_dp_ols(seed: int = 7) -> str:
    """The core calls of the table reproduce ``dpstats.dp_ols`` draw for draw (same seed, same data)."""
    import pandas as pd

    import dpstats

    design = synthetic(100, 0.05, 0.1, np.random.default_rng(seed))
    data = pd.DataFrame({"x": design.X[:, 1], "y": design.y})
    calls: dict[str, tuple[str, dict[str, object]]] = {
        "NoisyStats": ("noisystats", {}),
        "GD-pure": ("gradient", {"variant": "pure"}),
        "GD-approx": ("gradient", {"variant": "approx", "delta": APPROX_DELTA}),
        "GD-zCDP": ("gradient", {"variant": "zcdp", "eps": None, "rho": 0.5}),
        "TS-exp": ("theilsen", {**THEILSEN_SYNTHETIC, "median": "exp", "candidates": "continuous"}),
        "TS-wide": ("theilsen", {**THEILSEN_SYNTHETIC, "median": "wide"}),
        "TS-ss": ("theilsen", {**THEILSEN_SYNTHETIC, "median": "smooth"}),
        "TS-grid": ("theilsen", {}),
    }
    bad = []
    for label, fit in methods().items():
        method, options = calls[label]
        kwargs = {"eps": 1.0, **options, **({"se_share": 0.0} if method == "gradient" else {})}
        bounds = {"x": (0, 1), "y": (0, 1)}
        public = dpstats.dp_ols("y ~ x", data, bounds=bounds, method=method, random_state=seed, **kwargs)
        core = fit(design, 1.0, np.random.default_rng(seed))
        if not np.allclose(public.params.to_numpy(), core.params, rtol=1e-12, atol=1e-12):
            bad.append(label)
    return "core calls reproduce dpstats.dp_ols(..., random_state=seed) for every method: " + (
        "yes" if not bad else "NO: " + ", ".join(bad)
    )


def grid() -> list[tuple[int, float, float, float]]:
    return [(n, eps, vx, se) for n in NS for eps in EPSILONS for vx in VAR_X for se in SD_E]


def format_table(rows: list[Row], names: list[str]) -> str:
    """The table, one line per grid point, sorted by eps n var_x."""
    head = f"{'n':>6} {'eps':>5} {'var_x':>5} {'sd_e':>5} {'e*n*vx':>8} | " + " ".join(f"{m:>10}" for m in names)
    head += f" | {'NS fail':>7} | best"
    lines = [head, "-" * len(head)]
    for r in sorted(rows, key=lambda r: (r.envar, r.sd_e, r.n)):
        cells = " ".join(f"{r.error[m]:>10.3g}" for m in names)
        best = min(names, key=lambda m: r.error[m] if math.isfinite(r.error[m]) else math.inf)
        lines.append(
            f"{r.n:>6} {r.eps:>5g} {r.var_x:>5g} {r.sd_e:>5g} {r.envar:>8.3g} | {cells} | "
            f"{100 * r.failure['NoisyStats']:>6.1f}% | {best}"
        )
    return "\n".join(lines)


def _best(r: Row, group: list[str]) -> float:
    return min(r.error[m] for m in group)


def _median(values: list[float]) -> float:
    return float(np.median(values)) if values else math.nan


def bin_summary(rows: list[Row], names: list[str]) -> str:
    """Per decade of eps n var_x: who wins, NoisyStats against the best Theil-Sen, NoisyStats' failures."""
    robust = [m for m in names if m.startswith("TS-")]
    non_robust = [m for m in names if not m.startswith("TS-")]
    head = (
        f"{'e*n*vx':>8} {'rows':>4} {'inform.':>7} {'TS best':>8} {'TS<NS':>6} "
        f"{'NS/TS sd_e=.01':>14} {'NS/TS sd_e=.1':>13} {'NS fail':>7}"
    )
    lines = [head, "-" * len(head)]
    for lo, hi, label in BINS:
        group = [r for r in rows if lo <= r.envar < hi]
        informative = [r for r in group if _best(r, names) < INFORMATIVE]
        ts_best = sum(_best(r, robust) < _best(r, non_robust) for r in informative)
        ts_ns = sum(_best(r, robust) < r.error["NoisyStats"] for r in group)
        ratio = {sd: _median([r.error["NoisyStats"] / _best(r, robust) for r in group if r.sd_e == sd]) for sd in SD_E}
        fail = float(np.mean([r.failure["NoisyStats"] for r in group]))
        lines.append(
            f"{label:>8} {len(group):>4} {len(informative):>7} {f'{ts_best}/{len(informative)}':>8} "
            f"{f'{ts_ns}/{len(group)}':>6} {ratio[0.01]:>14.3g} {ratio[0.1]:>13.3g} {100 * fail:>6.1f}%"
        )
    lines.append(
        f"inform.: rows where the best method's error is below {INFORMATIVE:g} OLS standard errors; TS best: the best "
        "Theil-Sen beats every non-robust method (NoisyStats, GD pure/approx/zCDP) in those rows; TS<NS: in all rows; "
        "NS/TS: median of NoisyStats / best Theil-Sen"
    )
    return "\n".join(lines)


def verdicts(rows: list[Row], names: list[str]) -> list[str]:
    """One line per finding of section 4.2, computed from the table with the criteria stated in each line."""
    robust = [m for m in names if m.startswith("TS-")]
    non_robust = [m for m in names if not m.startswith("TS-")]
    if not robust:
        return ["Theil-Sen is not registered (dpstats/mechanisms/theilsen/mechanism.py): robust findings not tested"]
    small = [r for r in rows if r.envar < LARGE]
    large = [r for r in rows if r.envar >= LARGE]
    useless = [r for r in small if _best(r, names) >= INFORMATIVE]
    informative = [r for r in small if _best(r, names) < INFORMATIVE]
    out = [
        f"{len(useless)} of the {len(small)} rows with eps*n*var_x < {LARGE:g} have no informative method (every "
        f"error >= {INFORMATIVE:g} standard errors; eps*n*var_x <= {max((r.envar for r in useless), default=0):g}): "
        "rankings there compare useless estimates and are left out of the first verdict"
    ]
    wins = sum(_best(r, robust) < _best(r, non_robust) for r in informative)
    share = wins / max(len(informative), 1)
    out.append(
        f"[{'CONFIRMED' if share >= 0.75 else 'NOT SEEN'}] robust best when eps*n*var_x is small (criterion: >= 75%): "
        f"the best Theil-Sen beats every non-robust method in {wins}/{len(informative)} informative rows with "
        f"eps*n*var_x < {LARGE:g}"
    )
    mid = [r.error["NoisyStats"] / _best(r, robust) for r in informative if r.sd_e == 0.1]
    top = [r.error["NoisyStats"] / _best(r, robust) for r in large if r.sd_e == 0.1]
    ns_wins = [r for r in large if r.error["NoisyStats"] <= _best(r, robust)]
    catching = _median(top) < _median(mid) and bool(ns_wins)
    out.append(
        f"[{'CONFIRMED' if catching else 'NOT SEEN'}] NoisyStats catches up when eps*n*var_x is large (criterion, "
        f"sd_e = 0.1: median NoisyStats / best Theil-Sen falls, and NoisyStats wins in some large row): "
        f"{_median(mid):.3g} in informative rows below {LARGE:g}, {_median(top):.3g} at {LARGE:g} and above; "
        f"NoisyStats at least as good as every Theil-Sen in {len(ns_wins)}/{len(large)} large rows "
        f"(eps*n*var_x = {', '.join(f'{r.envar:g}' for r in ns_wins) or 'none'})"
    )
    nr_small = sum(_best(r, non_robust) <= _best(r, robust) for r in informative)
    nr_large = sum(_best(r, non_robust) <= _best(r, robust) for r in large)
    zcdp_large = sum(min(names, key=lambda m, r=r: r.error[m]) == "GD-zCDP" for r in large)
    trend = nr_large / len(large) >= 2 * nr_small / max(len(informative), 1) and nr_large > 0
    out.append(
        f"[{'CONFIRMED' if trend else 'NOT SEEN'}] (section 4.2.1) non-robust methods trend towards taking over as "
        f"eps*n*var_x grows (criterion: best in a share of large rows at least twice their share of informative "
        f"small rows): {nr_small}/{len(informative)} small vs {nr_large}/{len(large)} large "
        f"(GD-zCDP, whose rho = eps^2/2 guarantee is the weakest, is best in {zcdp_large})"
    )
    below = [r for r in rows if r.envar < SMALL]
    fail_small = float(np.mean([r.failure["NoisyStats"] for r in below]))
    fail_large = float(np.mean([r.failure["NoisyStats"] for r in large]))
    out.append(
        f"[{'CONFIRMED' if fail_small >= 0.10 and fail_large <= 0.01 else 'NOT SEEN'}] NoisyStats fails often when "
        f"eps*n*var_x is small (criterion: >= 10% below {SMALL:g}, <= 1% at {LARGE:g} and above): mean failure "
        f"rate {100 * fail_small:.1f}% below {SMALL:g}, {100 * fail_large:.2f}% at {LARGE:g} and above"
    )
    by_sd = {sd: _median([r.error["NoisyStats"] / _best(r, robust) for r in large if r.sd_e == sd]) for sd in SD_E}
    out.append(
        f"[{'CONFIRMED' if by_sd[0.01] > by_sd[0.1] else 'NOT SEEN'}] (section 4.2.3) small sd_e favours Theil-Sen "
        f"even when eps*n*var_x is large: median NoisyStats / best Theil-Sen at {LARGE:g} and above = "
        f"{by_sd[0.01]:.3g} at sd_e = 0.01, {by_sd[0.1]:.3g} at sd_e = 0.1"
    )
    others = {m: max(r.failure[m] for r in rows) for m in names if m != "NoisyStats"}
    out.append(
        "failure rates of the other methods (max over rows): " + ", ".join(f"{m} {v:.0%}" for m, v in others.items())
    )
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=12, help="datasets per grid point")
    parser.add_argument("--trials", type=int, default=15, help="trials per dataset and method")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    args = parser.parse_args(argv)
    names = list(methods())
    tasks = [(i, *point, args.datasets, args.trials) for i, point in enumerate(grid())]
    start = time.perf_counter()
    # Largest rows first, so that the workers finish together.
    tasks.sort(key=lambda t: -t[1])
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        rows = list(pool.map(run_row, tasks))
    wall = time.perf_counter() - start
    print("Alabi et al. (2022) synthetic experiment (section 3.1.5): C(68) / sigma of p25, lower is better")
    print(
        f"{args.datasets} datasets x {args.trials} trials per method and grid point; {len(rows)} grid points; "
        f"GD-approx at delta = 2^-30; GD-zCDP at rho = eps^2/2; Theil-Sen k = 10, r = [-2, 2], theta = 0.01, d = 3"
    )
    print(check_against_dp_ols())
    print(format_table(rows, names))
    print()
    print(bin_summary(rows, names))
    print()
    for line in verdicts(rows, names):
        print(line)
    print(
        f"\nwall time {wall:.0f} s on {args.workers} worker(s); CPU time per row: "
        f"max {max(r.seconds for r in rows):.1f} s, total {sum(r.seconds for r in rows):.0f} s"
    )


if __name__ == "__main__":
    main()

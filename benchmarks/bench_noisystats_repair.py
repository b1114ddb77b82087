"""Which repair lets NoisyStats never fail: floor the noisy S_xx's eigenvalues, or add a ridge?

Run with ``python benchmarks/bench_noisystats_repair.py [--datasets 8] [--trials 12] [--families d alabi]``.

Cells, data and metric are benchmarks/bench_auto.py's (same seeds): its d = 3 and d = 10
cells and its Alabi grid (d = 1); C(68)/sigma of p25 against OLS on the same data, a failure
counting as an infinite error; all of eps on the point (``se_share=0``). Each trial runs the
paper's NoisyStats once and records its releases (dpstats/privacy/noise.py, ``recording``); every
variant post-processes the same released S_xx and S_xy and then releases the intercept with
the same standard Laplace draw at its own sensitivity (1 + |b|_1)/n, so the variants differ
only in the repair (lambda: a quantile of the spectral norm of the release's noise,
dpstats/mechanisms/noisystats/repair.py):

* ``fail``: the paper's (its output ⊥ when S_xx is not positive definite);
* ``floor``: dpstats' ``singular="repair"``, eigenvalues below lambda (the LEVEL quantile) raised to it;
* ``floor (median)``: the same at the median of the noise's norm;
* ``floor if failing``: the paper's estimate when S_xx is positive definite, else ``floor``;
* ``ridge``: S_xx + lambda I (with the floor, so that it never fails).

The last lines are each variant's geometric mean over the cells and the number of cells
where it is the best variant (ties count for each).
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from bench_auto import cell_rngs, data_set, grid, ols_target, target

from dpstats.frontend.formula import build_design
from dpstats.mechanisms import PrivacyRequest
from dpstats.mechanisms.noisystats import mechanism, repair
from dpstats.privacy import noise

VARIANTS = ("fail", "floor", "floor (median)", "floor if failing", "ridge")


def median_floor(p: int, scale: float) -> float:
    """The median of the noise's spectral norm (simulated as repair.norm_quantile does)."""
    rows, cols = repair.upper_pattern(p)
    E = repair.noise_matrices(noise.independent_rngs(repair.SEED, 1)[0], 1.0, p, rows, cols, repair.DRAWS)
    return scale * float(np.median(repair.spectral_norms(E)))


def slopes(variant: str, s_xx: np.ndarray, s_xy: np.ndarray, scale: float) -> np.ndarray | None:
    """The variant's slopes from the released statistics (None: the paper's failure)."""
    p = s_xy.size
    lam = repair.floor(p, scale)
    definite = np.linalg.eigvalsh(s_xx)[0] > 0
    if variant == "fail" or (variant == "floor if failing" and definite):
        return np.linalg.solve(s_xx, s_xy) if definite else None
    if variant == "ridge":
        return np.linalg.solve(repair.repaired(s_xx + lam * np.eye(p), lam), s_xy)
    bound = median_floor(p, scale) if variant == "floor (median)" else lam
    return np.linalg.solve(repair.repaired(s_xx, bound), s_xy)


def trial(design, eps: float, rng: np.random.Generator) -> dict[str, np.ndarray | None]:
    """One run of the paper's mechanism, post-processed by every variant: params (intercept first)."""
    with noise.recording() as log:
        mechanism.fit(design, PrivacyRequest(eps, se_share=0.0), rng)
    released = {r.name: r for r in log}
    p = design.X.shape[1] - 1
    s_xy = np.atleast_1d(released["ncov(x, y)"].noisy)
    s_xx = np.zeros((p, p))
    s_xx[np.triu_indices(p)] = released["nvar(x)"].noisy
    s_xx = s_xx + np.triu(s_xx, 1).T
    nvar = released["nvar(x)"]
    eps3, scale = nvar.eps, nvar.sensitivity / nvar.eps
    u_bar, v_bar, n = design.X[:, 1:].mean(axis=0), design.y.mean(), design.n
    z = noise.laplace(rng, 1.0)
    out: dict[str, np.ndarray | None] = {}
    for variant in VARIANTS:
        b = slopes(variant, s_xx, s_xy, scale)
        if b is None:
            out[variant] = None
            continue
        intercept = v_bar - b @ u_bar + z * (1.0 + np.abs(b).sum()) / (n * eps3)
        out[variant] = np.concatenate([[intercept], b])
    return out


def run(index: int, cell, datasets: int, trials: int) -> dict[str, float]:
    data_rng, rng = cell_rngs(index)  # bench_auto's data sets
    errors: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for _ in range(datasets):
        formula, frame, bounds, levels = data_set(cell, data_rng)
        design, _ = build_design(formula, frame, bounds, levels)
        c = target(design)  # every bound is [0, 1]: the unit scale is the user's, intercept first
        truth, se, _ = ols_target(design, c)
        runs = [trial(design, cell.eps, rng) for _ in range(trials)]
        for v in VARIANTS:
            gaps = [math.inf if r[v] is None else abs(float(c @ r[v]) - truth) / se for r in runs]
            errors[v].append(float(np.quantile(gaps, 0.68, method="higher")))
    return {v: float(np.mean(e)) for v, e in errors.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=8)
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--families", nargs="+", default=["d", "alabi"], choices=["d", "alabi"])
    args = parser.parse_args()
    cells = [(i, c) for i, c in enumerate(grid(False)) if c.family in args.families]
    print(f"{'cell':<55}" + "".join(f"{v:>17}" for v in VARIANTS))
    table = []
    for index, cell in cells:
        errors = run(index, cell, args.datasets, args.trials)
        table.append(errors)
        print(f"{cell.describe():<55}" + "".join(f"{errors[v]:>17.3g}" for v in VARIANTS), flush=True)
    repaired = VARIANTS[1:]
    geo = {v: math.exp(np.mean([math.log(e[v]) for e in table])) for v in repaired}
    best = {v: sum(e[v] <= min(e[w] for w in repaired) for e in table) for v in repaired}
    print("geometric mean: " + ", ".join(f"{v} {geo[v]:.3g}" for v in repaired))
    print(f"best of the repairs in (of {len(table)} cells): " + ", ".join(f"{v} {best[v]}" for v in repaired))


if __name__ == "__main__":
    main()

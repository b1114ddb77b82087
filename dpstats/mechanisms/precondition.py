"""Public preconditioning: a variable and its square, made nearly orthogonal before a mechanism releases them.

A Mincer equation's ``experience + I(experience**2 / 100)`` gives two columns that
move together over the declared range (correlation 0.97 for a uniform spread), so
the released Gram matrix's weakest direction is their difference, and the noise
swamps it: at eps 5 on CPS1988 NoisyStats' two coefficients were 15-44% off in half
the fits, in opposite directions, and DP Newton's logit (whose curvatures are Gram
matrices weighted by the link) shrank the square's coefficient by 85%. NoisyStats
(dpstats/mechanisms/noisystats/mechanism.py) and DP Newton
(dpstats/mechanisms/newton/mechanism.py) release the design preconditioned here. The
reparametrisation is exact and public (a linear index is the same function of the
rows in either parametrisation, so least squares and a GLM's MLE map back exactly):

* **Detection** from the design's public ``encode`` map (dpstats/design/matrix.py,
  ``Variables``): a numeric variable v whose columns, with every other variable held
  at two different public rows, are one column affine in v (``x_j``) and one quadratic
  in v (``x_k``), each depending on v alone.
* **The map.** ``x_k`` is replaced by ``q = x_k - a - b x_j``, with ``a + b x_j`` the
  least-squares line of ``x_k`` on ``x_j`` over v uniform on its declared interval
  (public). q is a quadratic in v, so its exact range over the interval is that of its
  values at the interval's ends and at its vertex: q's declared bounds (the rows, whose
  v is clipped to its interval, stay inside; q is clipped to them row-wise too, for
  rounding). Its range is a fraction of ``x_k``'s (a quarter for a square over [0, B]),
  so on the unit scale the weak direction fills its bounds and its noise is that much
  smaller relative to it.
* **Back.** ``beta_j x_j + beta_q q + alpha = (beta_j - b beta_q) x_j + beta_q x_k +
  (alpha - a beta_q)``: the release's estimates, covariance and bootstrap replicates are
  mapped by that fixed matrix (post-processing), and a bias bound by its absolute values
  (the triangle inequality). Its sensitivities are the unweighted or
  weighted release's own: they only need every column inside its declared bounds.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..design.matrix import Design
from .base import Release

GRID = 9
"""Public values of a variable at which the detection evaluates the columns (a quadratic needs three)."""
EXACT = 1e-9
"""Relative tolerance of the detection's polynomial fits (the columns are evaluated exactly)."""


@dataclass(frozen=True)
class Pair:
    """Columns ``linear`` (affine in v) and ``square`` (quadratic in v), replaced by ``square - a - b linear``."""

    linear: int
    square: int
    a: float
    b: float
    bounds: tuple[float, float]


def pairs(design: Design) -> tuple[Pair, ...]:
    """The design's variable-and-square pairs (module docstring), from public facts only; found once per
    public structure (a grouped fit's groups share it)."""
    variables = design.variables
    if variables is None or design.intercept_index is None or design.X is None:
        return ()
    key = (
        design.term_names,
        design.intercept_index,
        tuple(variables.frame.columns),
        tuple(sorted((name, tuple(b)) for name, b in variables.bounds.items())),
        tuple(sorted((name, tuple(levels)) for name, levels in variables.levels.items())),
    )
    if key not in _FOUND:
        if len(_FOUND) >= CACHE:
            _FOUND.clear()
        _FOUND[key] = _search(design)
    return _FOUND[key]


CACHE = 256
_FOUND: dict[tuple, tuple[Pair, ...]] = {}


def _search(design: Design) -> tuple[Pair, ...]:
    """Every numeric variable's pair, if it has one; none where a variable has no declared bounds of its own
    (bounds declared for an expression of it instead): then no public row of the variables is known."""
    variables = design.variables
    if any(c not in variables.bounds and c not in variables.levels for c in variables.frame.columns):
        return ()
    names = [c for c in variables.frame.columns if c not in variables.response]
    numeric = [v for v in names if v in variables.bounds and v not in variables.levels]
    found = []
    for v in numeric:
        pair = _pair(design, names, v)
        if pair is not None:
            found.append(pair)
    return tuple(found)


def _public_rows(design: Design, names: list[str], v: str, grid: np.ndarray, at_low: bool) -> pd.DataFrame:
    """Rows with v over ``grid`` and every other variable at one public value (its bounds' end or middle, or
    its first or last level), the response at its declared middle."""
    variables = design.variables
    frame = {}
    for name in variables.frame.columns:
        if name == v:
            frame[name] = grid
        elif name in variables.levels:
            levels = variables.levels[name]
            frame[name] = pd.Categorical([levels[0] if at_low else levels[-1]] * grid.size, categories=levels)
        else:
            lo, hi = variables.bounds[name]
            frame[name] = np.full(grid.size, lo + (0.25 if at_low else 0.75) * (hi - lo))
    return pd.DataFrame(frame)


def _pair(design: Design, names: list[str], v: str) -> Pair | None:
    """The pair of variable v, or None (module docstring, "Detection")."""
    lo, hi = design.variables.bounds[v]
    grid = np.linspace(lo, hi, GRID)
    _, low = design.variables.encode(_public_rows(design, names, v, grid, True))
    _, high = design.variables.encode(_public_rows(design, names, v, grid, False))
    alone = np.all(np.isclose(low, high, rtol=EXACT, atol=EXACT), axis=0)  # the column depends on v alone
    moves = np.ptp(low, axis=0) > 0
    degrees = {j: _degree(grid, low[:, j]) for j in np.flatnonzero(alone & moves) if j != design.intercept_index}
    linear = [j for j, d in degrees.items() if d == 1]
    square = [j for j, d in degrees.items() if d == 2]
    if len(linear) != 1 or len(square) != 1:
        return None
    j, k = linear[0], square[0]
    dense = np.linspace(lo, hi, 1001)
    _, X = design.variables.encode(_public_rows(design, names, v, dense, True))
    b, a = np.polyfit(X[:, j], X[:, k], 1)
    q = np.polyfit(dense, X[:, k] - a - b * X[:, j], 2)
    ends = [lo, hi] + ([-q[1] / (2 * q[0])] if q[0] != 0 and lo < -q[1] / (2 * q[0]) < hi else [])
    values = np.polyval(q, ends)
    margin = EXACT * max(1.0, float(np.max(np.abs(values))))
    return Pair(int(j), int(k), float(a), float(b), (float(values.min() - margin), float(values.max() + margin)))


def _degree(grid: np.ndarray, column: np.ndarray) -> int | None:
    """1 or 2 where ``column`` is exactly an affine or a quadratic function of ``grid``, else None."""
    scale = max(1.0, float(np.max(np.abs(column))))
    for degree in (1, 2):
        fit = np.polyval(np.polyfit(grid, column, degree), grid)
        if np.max(np.abs(fit - column)) <= 1e3 * EXACT * scale:
            return degree
    return None


def preconditioned(design: Design, found: tuple[Pair, ...]) -> Design:
    """The design with every pair's square column replaced by its q, clipped to q's exact bounds."""
    X, bounds = design.X.copy(), design.x_bounds.copy()
    for pair in found:
        q = X[:, pair.square] - pair.a - pair.b * X[:, pair.linear]
        X[:, pair.square] = np.clip(q, *pair.bounds)
        bounds[pair.square] = pair.bounds
    return replace(design, X=X, x_bounds=bounds)


def back(release: Release, design: Design, found: tuple[Pair, ...]) -> Release:
    """The release in the design's own columns (module docstring, "Back"; post-processing)."""
    T = np.eye(design.n_columns)
    for pair in found:
        T[pair.linear, pair.square] = -pair.b
        T[design.intercept_index, pair.square] = -pair.a
    with np.errstate(all="ignore"):
        params, cov = T @ release.params, T @ release.cov @ T.T
        replicates = None if release.replicates is None else release.replicates @ T.T
        bias_bound = None if release.bias_bound is None else np.abs(T) @ release.bias_bound
    note = ", ".join(f"{design.term_names[p.square]} against {design.term_names[p.linear]}" for p in found)
    return replace(
        release,
        params=params,
        cov=cov,
        replicates=replicates,
        bias_bound=bias_bound,
        hyperparameters={**release.hyperparameters, "preconditioned": note},
    )

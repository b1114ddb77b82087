"""The public layout of a perturbed histogram (Lei 2011), its default bins and the thresholding.

Everything here depends on declared metadata (bounds, levels, bins), the
public n and eps only -- never on the data -- except :meth:`HistogramLayout.counts`,
the true counts that dpstats/histogram.py releases with noise.

Cells (Lei 2011, section 2.2 and section 4.1): each numeric column is
rescaled by its declared bounds and cut into K equal bins, the last one
closed (the paper's footnote 1); each categorical column contributes one
cell per declared level. The cells are the product, flattened in C order.

Lei's rule of thumb (section 4.3): the paper asks that the average count per cell,
``n / c(K)``, be much larger than the maximum additive noise
``max_r |z_r| = O_P(log c(K))``, where ``c(K)`` is the number of cells. For
Laplace noise of scale ``2 / eps`` that maximum is about
``(2 / eps) log c(K)``, so :func:`lei_bins` is the largest K with

    n / c(K) >= max(3 (2 / eps), 1) log c(K)

(at least 3 bins; the floor 1 keeps the paper's noise-free condition, an
average count above log c(K), when eps is large), from the public n, eps
and the declared layout only. The factor 3 and the eps come from a scan of
K on three designs at eps = 1 and 0.1 (notes in benchmarks/bench_histogram.py):
the error is smallest where ``n / c`` is 2-4 times ``(2 / eps) log c``, and
the rule without eps picks far too many cells at eps = 0.1 and, on small
data, 2 bins, which bias a regression badly. For the housing example (n = 250,070, two continuous
columns, 4 x 6 categorical cells) it gives K = 14 at eps = 1 and K = 5 at
eps = 0.1; the paper used 10 at both (``n / c = 104``, ``log c = 7.8``).

Default bins: finer than that rule (undersmoothing). The rule balances the
histogram's bias against its noise, the right trade for the point estimate's
error; an interval must in addition have a bias small next to its width, and
the intervals (dpstats/mechanisms/histogram/inference.py) cover the sampling
error, the noise and the thresholding, not the binning. Binning bias falls
like ``h^2`` for smooth densities (Sheppard 1898; ``h`` for a Lipschitz
contrast in Lei's Theorem 3), the noise's share of the error grows like
``K^(d / 2)``, so :func:`default_bins` takes ``ceil(f K_Lei)`` bins per
numeric axis, with ``f = 1.5`` for least squares and ``f = 3`` for quantile
regression. Quantile regression's score is bounded (Lei's condition B1), so
cells of pure noise far from the fit barely move it and it affords finer bins;
least squares' squared residuals give those cells leverage. The factors come
from the coverage scan of dpstats/coverage.py's designs (two numeric axes, n =
1,000 and 10,000, eps = 1 and 5; benchmarks/bench_coverage.py). At n = 1,000
and eps = 1 on the heteroskedastic design, ``f = 1`` covers the intercept in
70-80% of samples for least squares and almost never for the median (binning
bias), ``f = 2`` costs least squares 4 points (cells of pure noise), and the
median needs ``f = 3``.
``noisy_histogram``, whose fits are not known at release time, uses the
least-squares factor.

Thresholding (section 4.2 and Algorithm 1'): ``"enhanced"`` zeroes every
noisy count below ``A log(n) / eps`` (A = 1/2 as in the paper's housing
example; a number gives another A), ``"nonnegative"`` is ``max(n^_r, 0)``,
``"none"`` keeps the raw noisy counts.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

THRESHOLDS = ("enhanced", "nonnegative", "none")
ENHANCED_A = 0.5
BIN_RULE_FACTOR = 3.0
MIN_BINS = 3
UNDERSMOOTHING = {"ols": 1.5, "quantreg": 3.0}
"""Default bins per numeric axis over Lei's rule of thumb, per estimator (module docstring)."""
MAX_CELLS = 20_000_000

Threshold = str | float


@dataclass(frozen=True)
class Axis:
    """One column of the histogram: K equal bins over declared bounds, or declared levels."""

    name: str
    bounds: tuple[float, float] | None = None
    bins: int = 0
    levels: tuple | None = None

    @property
    def categorical(self) -> bool:
        """True for a column with declared levels (one cell per level)."""
        return self.levels is not None

    @property
    def size(self) -> int:
        """Number of cells along this axis."""
        return len(self.levels) if self.levels is not None else self.bins

    def edges(self) -> np.ndarray:
        """Bin edges of a numeric axis (``bins + 1`` values from lower to upper bound)."""
        lo, hi = self.bounds
        return np.linspace(lo, hi, self.bins + 1)

    def centres(self) -> np.ndarray:
        """Bin centres ``lo + (k + 1/2) h``, the points ``a_r`` of Algorithm 1, step 2."""
        lo, hi = self.bounds
        return lo + (np.arange(self.bins) + 0.5) * (hi - lo) / self.bins

    def codes(self, column: pd.Series) -> np.ndarray:
        """The cell index of every row along this axis (a row-wise map)."""
        if self.levels is not None:
            return np.asarray(column.cat.codes, dtype=np.int64)
        lo, hi = self.bounds
        unit = (column.to_numpy(dtype=float) - lo) / (hi - lo)
        return np.clip(np.floor(unit * self.bins), 0, self.bins - 1).astype(np.int64)

    def values(self) -> np.ndarray | pd.Categorical:
        """What the formula sees along this axis: bin centres, or the levels as a Categorical."""
        if self.levels is not None:
            return pd.Categorical(list(self.levels), categories=pd.Index(self.levels))
        return self.centres()

    def describe(self) -> str:
        """One public line: the bins over the bounds, or the levels."""
        if self.levels is not None:
            return f"{self.name}: {len(self.levels)} levels {list(self.levels)}"
        return f"{self.name}: {self.bins} bins over [{self.bounds[0]:g}, {self.bounds[1]:g}]"


@dataclass(frozen=True)
class HistogramLayout:
    """The public cells: the product of the axes, flattened in C order."""

    axes: tuple[Axis, ...]

    @property
    def columns(self) -> tuple[str, ...]:
        """The column names, in axis order."""
        return tuple(a.name for a in self.axes)

    @property
    def shape(self) -> tuple[int, ...]:
        """Cells along each axis."""
        return tuple(a.size for a in self.axes)

    @property
    def n_cells(self) -> int:
        """Total number of cells."""
        return math.prod(self.shape)

    def axis(self, name: str) -> Axis:
        """The axis of column ``name``."""
        return self.axes[self.columns.index(name)]

    def counts(self, frame: pd.DataFrame) -> np.ndarray:
        """True cell counts of the prepared ``frame`` (private: only release them noised)."""
        codes = [a.codes(frame[a.name]) for a in self.axes]
        flat = np.ravel_multi_index(codes, self.shape)
        return np.bincount(flat, minlength=self.n_cells).astype(float)

    def cell_frame(self, names: Sequence[str] | None = None) -> pd.DataFrame:
        """One row per cell of the axes ``names`` (all by default), in C order: centres and levels."""
        names = list(self.columns if names is None else names)
        axes = [self.axis(name) for name in names]
        grid = np.indices([a.size for a in axes]).reshape(len(axes), -1)
        columns = {}
        for axis, codes in zip(axes, grid, strict=True):
            values = axis.values()
            columns[axis.name] = values.take(codes) if isinstance(values, pd.Categorical) else values[codes]
        return pd.DataFrame(columns)

    def declared_bounds(self) -> dict[str, tuple[float, float]]:
        """Bounds of the numeric axes."""
        return {a.name: a.bounds for a in self.axes if a.levels is None}

    def declared_levels(self) -> dict[str, tuple]:
        """Levels of the categorical axes."""
        return {a.name: a.levels for a in self.axes if a.levels is not None}


def default_bins(n: int, free_axes: int, fixed_cells: int, eps: float, estimator: str = "ols") -> int:
    """The default K: ``ceil(f K_Lei)`` with the estimator's undersmoothing factor f (module docstring)."""
    return math.ceil(UNDERSMOOTHING[estimator] * lei_bins(n, free_axes, fixed_cells, eps))


def lei_bins(n: int, free_axes: int, fixed_cells: int, eps: float) -> int:
    """The paper's rule of thumb for K (Lei 2011, section 4.3; module docstring).

    The largest K >= 3 with ``n / c(K) >= max(3 (2 / eps), 1) log c(K)``, where
    ``c(K) = fixed_cells * K ** free_axes`` (``fixed_cells``: the categorical
    levels and any bins the caller fixed): the average count per cell three
    times the expected maximal Laplace noise. 3 when even K = 3 misses the
    rule, 0 when no axis needs a K. Uses only public information.
    """
    if free_axes <= 0:
        return 0

    def fits(k: int) -> bool:
        cells = float(fixed_cells) * float(k) ** free_axes
        return n / cells >= max(BIN_RULE_FACTOR * 2.0 / eps, 1.0) * math.log(cells)

    if not fits(MIN_BINS):
        return MIN_BINS
    lo, hi = MIN_BINS, MIN_BINS * 2
    while fits(hi):
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def check_threshold(threshold: object) -> Threshold:
    """Validate ``threshold``: "enhanced", "nonnegative", "none" or a positive number A."""
    if isinstance(threshold, str):
        if threshold not in THRESHOLDS:
            raise ValueError(f"threshold must be one of {THRESHOLDS} or a positive number A")
        return threshold
    if isinstance(threshold, bool | np.bool_) or not isinstance(threshold, numbers.Real):
        raise TypeError(f"threshold must be one of {THRESHOLDS} or a positive number A")
    value = float(threshold)
    if not (math.isfinite(value) and value > 0):
        raise ValueError("a numeric threshold A must be positive and finite")
    return value


def cutoff(threshold: Threshold, n: int, eps: float) -> float:
    """The count below which a cell's weight is 0: ``A log(n) / eps`` (section 4.2), 0, or -inf."""
    if threshold == "nonnegative":
        return 0.0
    if threshold == "none":
        return -math.inf
    a = ENHANCED_A if threshold == "enhanced" else float(threshold)
    return a * math.log(n) / eps


def thresholded(counts: np.ndarray, threshold: Threshold, n: int, eps: float) -> np.ndarray:
    """The fit weights: noisy counts after thresholding (see the module docstring)."""
    if threshold == "none":
        return np.array(counts, dtype=float, copy=True)
    if threshold == "nonnegative":
        return np.maximum(counts, 0.0)
    return np.where(counts >= cutoff(threshold, n, eps), counts, 0.0)


def build_layout(
    names: Sequence[str],
    bounds: Mapping[str, tuple[float, float]],
    levels: Mapping[str, tuple],
    bins: int | Mapping[str, int] | None,
    n: int,
    eps: float,
    estimator: str = "ols",
) -> HistogramLayout:
    """The layout of the columns ``names``, from declared metadata only.

    A column is categorical when it has declared levels (the prepared column
    is then a Categorical with exactly those levels), numeric otherwise, with
    declared bounds required. ``bins``: one K for every numeric column, a
    mapping per column (the others get the default), or None (the default
    rule, :func:`default_bins`, for the fits of ``estimator``).
    """
    names = list(names)
    numeric = [name for name in names if name not in levels]
    missing = [name for name in numeric if name not in bounds]
    if missing:
        raise ValueError(f"the histogram needs declared bounds for the numeric columns {missing}")
    if isinstance(bins, Mapping):
        chosen = {str(k): _check_bins(v, f"bins[{k!r}]") for k, v in bins.items()}
        unknown = sorted(set(chosen) - set(numeric))
        if unknown:
            raise ValueError(f"bins names columns that are not numeric histogram columns: {unknown}")
    elif bins is None:
        chosen = {}
    else:
        chosen = dict.fromkeys(numeric, _check_bins(bins, "bins"))
    fixed = math.prod(len(levels[name]) for name in names if name in levels) * math.prod(chosen.values())
    free = [name for name in numeric if name not in chosen]
    k = default_bins(n, len(free), fixed, eps, estimator)
    axes = tuple(
        Axis(name, levels=tuple(levels[name]))
        if name in levels
        else Axis(name, bounds=tuple(bounds[name]), bins=chosen.get(name, k))
        for name in names
    )
    layout = HistogramLayout(axes)
    if layout.n_cells > MAX_CELLS:
        raise ValueError(f"the histogram would have {layout.n_cells} cells (at most {MAX_CELLS}); use fewer bins")
    return layout


def _check_bins(value: object, name: str) -> int:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise ValueError(f"{name} must be a positive integer")
    return int(value)

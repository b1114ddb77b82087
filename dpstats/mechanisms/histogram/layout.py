"""The public layout of a perturbed histogram (Lei 2011), its default bins and the thresholding.

Everything here depends on declared metadata (bounds, levels, bins), the
public n and eps only -- never on the data -- except :meth:`HistogramLayout.counts`,
the true counts that dpstats/api/histogram_release.py releases with noise.

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
from the coverage scan of dpstats/uncertainty/coverage.py's designs (two numeric axes, n =
1,000 and 10,000, eps = 1 and 5; benchmarks/bench_coverage.py). At n = 1,000
and eps = 1 on the heteroskedastic design, ``f = 1`` covers the intercept in
70-80% of samples for least squares and almost never for the median (binning
bias), ``f = 2`` costs least squares 4 points (cells of pure noise), and the
median needs ``f = 3``.
``noisy_histogram``, whose fits are not known at release time, uses the
least-squares factor. Logit and probit take ``f = 0.75``, coarser than the
rule, where its noise condition binds, and the rule's K where only its cap of
cells per row does (as eps grows the bins still refine until a cell holds
about a row): a rare outcome's 1 spreads its few rows over sparse cells that
enhanced thresholding erodes, and fewer cells erode fewer of them, while at
the cells' noisy means coarse bins cost little binning bias. On simulated
logits with a base rate of 10% (benchmarks/bench_histogram_logit.py, 60-100
data sets per setting) ``f = 1.5`` left the estimates 3-4 sd below the true
intercept at n = 100,000 (the intervals, corrected, still covered), ``0.75``
about 2 sd; ``0.5`` brought binning bias (the intervals' centres 0.8 sd off
on the slopes at n = 10,000, eps = 1, with 4 bins).

The cap on the noise of empty cells. Undersmoothing multiplies the cells by
``f^d`` for d numeric axes, and every cell, empty or not, carries noise:
after enhanced thresholding a cell with no rows keeps a weight of expected
size ``exp(-t / b) (t + b) / 2`` (cut-off t, Laplace scale ``b = 2 / eps``;
:func:`empty_cell_weight`), placed wherever the cell is. On statsmodels' fair
data (n = 6,366: four numeric axes and a four-level factor, eps = 1) three
times Lei's minimum gives 26,244 cells whose noise alone weighs 9,400
expected rows against 6,366 real ones, and the median regression followed
the noise (its 95% intervals covered QuantReg's slopes in 5-85% of 20
seeds, its intercept in none). So the default K is the largest, at most the
undersmoothed one and at least MIN_CAPPED_BINS = 2, whose cells, all counted
as empty (a bound whatever the data), carry at most ``NOISE_MASS = 0.2`` n
expected weight: on fair the median's slopes are then covered in 95-98% of
100 seeds (benchmarks/bench_real_coverage.py; the intercept in none: the
response's zeros spread over its first bin, see bound cells below). The
cap binds only with several numeric axes: the two-axis designs of
benchmarks/bench_coverage.py keep their bins and intervals (checked at n =
1,000, eps = 1 and 5, 200 repetitions). Where the noise is negligible the
default layout keeps at most MAX_DEFAULT_CELLS = 200,000 cells: the
intervals' bootstrap holds a matrix of cells x p^2 entries, and with ten
regressors at eps = 1e4 the noise cap alone let K = 4 give 4.2 million
cells (a fit of minutes and gigabytes; with three bins, 177,147 cells, it
takes seconds).

The layout for fits at the cells' noisy means (``means=True``; the default of
``dp_ols`` and ``dp_quantreg``, dpstats/mechanisms/histogram/cell_means.py).
The means remove the first-order binning bias that undersmoothing fights, so
coarse bins cost far less, while the empty cells' noise pulls the fit as
before: the cap is ``MEANS_NOISE_MASS = 0.05`` n, and the rule drops its
noise-free floor (``n / c(K) >= 3 (2 / eps) log c(K)``, and at most
``MAX_CELLS_PER_ROW = 10`` cells per row), so that as eps grows the bins
refine until a cell holds about one row, placed at that row. Measured with benchmarks/bench_real_data.py at
eps = 1 and 5 (20 seeds of engel's median, 10 of fair; eps_counts is 3/4 of
eps): the cap of 0.2 gave engel 17 bins at eps = 5 and its median's
intervals covered QuantReg in 0.75 of the seeds, 0.05 gave 8 bins and 1.00;
fair's religiousness levels, 1 to 4 times OLS's value off at eps = 1 with 5
bins (cap 0.2), were 0.9 to 1.4 times off with 3 (cap 0.05). A cap of 0.02
helped fair at eps = 5 (level 4 of religiousness -0.27 against OLS's -0.91,
from +0.28 at 0.05; 20 seeds) but left engel two bins at eps = 1, where
3 of 20 fits failed and the median's intervals covered in 0.59. At eps = 1e9
the floor's removal took every coefficient of engel, fair, grunfeld, CPS1985
and PSID1976 within 0.4% of OLS and QuantReg, HousePrices within 2.8% (with
the floor, engel's median intercept was 5% off and grunfeld's capital 10%).

Bound cells (``ends``, the option ``bound_cells``): a numeric axis can have,
besides its K bins, a cell of its own at each declared bound, a point (width
0) at the bound itself. Rows exactly at a bound -- a response's zeros (hours,
spending, earnings), top codes, and every cell the front end clipped -- are
then counted there, not spread over the first or last bin: a median of 0 is
0, not half a bin (tests/test_histogram.py). Where no rows lie at the bounds
the two cells hold noise only, at the most extreme points of the axis,
where a least-squares fit gives them leverage: on the heteroskedastic design
of dpstats/uncertainty/coverage.py (n = 1,000, eps = 1) bound cells on the response
lowered the coverage of the intercept from 0.95 to 0.87 (least squares) and
0.81 (median). So they are declared, like the bounds, for the columns known
to hold a mass at a bound, and none by default; the rule of thumb and the
cap count them among the cells.

Thresholding (section 4.2 and Algorithm 1'): ``"enhanced"`` zeroes every
noisy count below ``A log(n) / eps`` (A = 1/2 as in the paper's housing
example; a number gives another A), ``"nonnegative"`` is ``max(n^_r, 0)``,
``"none"`` keeps the raw noisy counts.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

THRESHOLDS = ("enhanced", "nonnegative", "none")
ENHANCED_A = 0.5
BIN_RULE_FACTOR = 3.0
MIN_BINS = 3
MIN_CAPPED_BINS = 2
NOISE_MASS = 0.2
"""The most expected weight the cells with no rows may carry in a default layout, as a share of n."""
MEANS_NOISE_MASS = 0.05
"""NOISE_MASS of a layout whose fits are at the bins' noisy means (module docstring, the cap with means)."""
UNDERSMOOTHING = {"ols": 1.5, "quantreg": 3.0, "logit": 0.75, "probit": 0.75}
"""Default bins per numeric axis over Lei's rule of thumb, per estimator (module docstring; a factor below 1 scales
the rule's noise condition only)."""
MAX_CELLS_PER_ROW = 10
"""The most cells per row Lei's rule gives without its floor (:func:`lei_bins`): at eps = 1e9, 10 kept the
benchmark regressions' histogram fits within 0.4% of OLS and QuantReg (HousePrices: 2.8%), 1 let them drift
to 0.6-7.7%, and none gave 200,000 cells to 3,000 rows (minutes per fit)."""
MAX_CELLS = 20_000_000
MAX_DEFAULT_CELLS = 200_000
"""The most cells a default layout has (the intervals hold a cells x p^2 matrix; module docstring)."""

Threshold = str | float


@dataclass(frozen=True)
class Axis:
    """One column of the histogram: K equal bins over declared bounds, or declared levels.

    ``ends``: the numeric axis also has a cell of its own at each bound (the
    module docstring's bound cells), before and after its K bins.
    ``integer``: the axis of a variable declared whole-valued, one cell per
    whole number in its bounds, centred on it (``bins = hi - lo + 1``, width
    1): its rows sit at their cells' centres, so it keeps no binning bias.
    """

    name: str
    bounds: tuple[float, float] | None = None
    bins: int = 0
    levels: tuple | None = None
    ends: bool = False
    integer: bool = False

    @property
    def categorical(self) -> bool:
        """True for a column with declared levels (one cell per level)."""
        return self.levels is not None

    @property
    def size(self) -> int:
        """Number of cells along this axis."""
        return len(self.levels) if self.levels is not None else self.bins + 2 * self.ends

    @property
    def width(self) -> float:
        """The width ``h`` of a numeric axis' bins."""
        lo, hi = self.bounds
        return 1.0 if self.integer else (hi - lo) / self.bins

    def centres(self) -> np.ndarray:
        """The cells' points: bin centres ``lo + (k + 1/2) h`` (Algorithm 1, step 2), and the bounds' cells' bounds."""
        lo, hi = self.bounds
        inner = lo + (np.arange(self.bins) + (0.0 if self.integer else 0.5)) * self.width
        return np.concatenate([[lo], inner, [hi]]) if self.ends else inner

    def widths(self) -> np.ndarray:
        """The width of every cell along a numeric axis: ``h`` for a bin, 0 for a bound's cell."""
        inner = np.full(self.bins, self.width)
        return np.concatenate([[0.0], inner, [0.0]]) if self.ends else inner

    def codes(self, column: pd.Series) -> np.ndarray:
        """The cell index of every row along this axis (a row-wise map)."""
        if self.levels is not None:
            return np.asarray(column.cat.codes, dtype=np.int64)
        lo, hi = self.bounds
        if self.integer:  # the nearest whole number (halves up): a row-wise map
            return np.clip(np.floor(column.to_numpy(dtype=float) - lo + 0.5), 0, self.bins - 1).astype(np.int64)
        unit = (column.to_numpy(dtype=float) - lo) / (hi - lo)
        inner = np.clip(np.floor(unit * self.bins), 0, self.bins - 1).astype(np.int64)
        if not self.ends:
            return inner
        return np.where(unit <= 0.0, 0, np.where(unit >= 1.0, self.bins + 1, inner + 1))

    def values(self) -> np.ndarray | pd.Categorical:
        """What the formula sees along this axis: bin centres, or the levels as a Categorical."""
        if self.levels is not None:
            return pd.Categorical(list(self.levels), categories=pd.Index(self.levels))
        return self.centres()

    def describe(self) -> str:
        """One public line: the bins over the bounds, or the levels."""
        if self.levels is not None:
            return f"{self.name}: {len(self.levels)} levels {list(self.levels)}"
        if self.integer:
            return f"{self.name}: one cell per whole number in [{self.bounds[0]:g}, {self.bounds[1]:g}]"
        ends = " and a cell at each bound" if self.ends else ""
        return f"{self.name}: {self.bins} bins over [{self.bounds[0]:g}, {self.bounds[1]:g}]{ends}"


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
        return np.bincount(self.cells_of(frame), minlength=self.n_cells).astype(float)

    def cells_of(self, frame: pd.DataFrame) -> np.ndarray:
        """Every row's cell (its index in C order) in the prepared ``frame`` (private)."""
        return np.ravel_multi_index([a.codes(frame[a.name]) for a in self.axes], self.shape)

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

    def cell_widths(self, names: Sequence[str], name: str) -> np.ndarray:
        """The width along numeric column ``name`` of every cell of :meth:`cell_frame` ``(names)``."""
        sizes = [self.axis(c).size for c in names]
        along = np.indices(sizes).reshape(len(sizes), -1)[list(names).index(name)]
        return self.axis(name).widths()[along]

    def declared_bounds(self) -> dict[str, tuple[float, float]]:
        """Bounds of the numeric axes."""
        return {a.name: a.bounds for a in self.axes if a.levels is None}

    def declared_levels(self) -> dict[str, tuple]:
        """Levels of the categorical axes."""
        return {a.name: a.levels for a in self.axes if a.levels is not None}


def cell_count(k: int, free_axes: int, fixed_cells: int, ended_axes: int = 0) -> float:
    """``c(K)``: the cells with K bins on each of ``free_axes`` axes, ``ended_axes`` of them with bound cells."""
    return float(fixed_cells) * float(k + 2) ** ended_axes * float(k) ** (free_axes - ended_axes)


def default_bins(
    n: int,
    free_axes: int,
    fixed_cells: int,
    eps: float,
    estimator: str = "ols",
    ended_axes: int = 0,
    threshold: Threshold = "enhanced",
    means: bool = False,
) -> int:
    """The default K: ``ceil(f K_Lei)`` with the estimator's undersmoothing factor f, capped by the noise
    mass of the empty cells (module docstring); ``means``: for fits at the bins' noisy means (the rule without
    its noise-free floor, the cap at MEANS_NOISE_MASS; module docstring)."""
    floor = 0.0 if means else 1.0
    factor = UNDERSMOOTHING[estimator]
    k = lei_bins(n, free_axes, fixed_cells, eps, ended_axes, floor)
    if factor < 1.0:  # coarser than the noise rule's K, never than the cap of cells per row alone (module docstring)
        k = min(math.ceil(factor * lei_bins(n, free_axes, fixed_cells, eps, ended_axes, floor, math.inf)), k)
    else:
        k = math.ceil(factor * k)
    noise_mass = MEANS_NOISE_MASS if means else NOISE_MASS
    return capped_bins(k, n, free_axes, fixed_cells, eps, threshold, ended_axes, noise_mass)


def lei_bins(
    n: int,
    free_axes: int,
    fixed_cells: int,
    eps: float,
    ended_axes: int = 0,
    floor: float = 1.0,
    per_row: float = MAX_CELLS_PER_ROW,
) -> int:
    """The paper's rule of thumb for K (Lei 2011, section 4.3; module docstring).

    The largest K >= 3 with ``n / c(K) >= max(3 (2 / eps), floor) log c(K)`` and
    ``c(K) <= per_row n`` (``per_row`` MAX_CELLS_PER_ROW, or infinite for the noise rule alone), where
    ``c(K)`` is :func:`cell_count` (``fixed_cells``: the categorical levels and
    any cells the caller fixed; ``ended_axes``: the free axes with a cell at
    each bound): the average count per cell three times the expected maximal
    Laplace noise; and at most MAX_CELLS_PER_ROW cells per row (the floor 1
    implies one; without the floor, at eps = 1e9 the rule alone gave 200,000
    cells to 3,000 rows and a fit of over ten minutes). 3 when even K = 3
    misses the rule, 0 when no axis needs a K. Uses only public information.
    """
    if free_axes <= 0:
        return 0

    def fits(k: int) -> bool:
        cells = cell_count(k, free_axes, fixed_cells, ended_axes)
        return cells <= per_row * n and n / cells >= max(BIN_RULE_FACTOR * 2.0 / eps, floor) * math.log(cells)

    if not fits(MIN_BINS):
        return MIN_BINS
    lo, hi = MIN_BINS, MIN_BINS * 2
    while fits(hi):
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def empty_cell_weight(n: int, eps: float, threshold: Threshold) -> float:
    """The expected fit weight of a cell with no rows: its Laplace(2 / eps) noise kept by the thresholding.

    A cut-off t >= 0 keeps ``L 1{L >= t}``, whose mean is ``exp(-t / b) (t + b) / 2`` for the scale
    ``b = 2 / eps``; ``threshold="none"`` keeps the noise as it is, weighted here by its mean size ``b``.
    """
    scale = 2.0 / eps
    t = cutoff(threshold, n, eps)
    if not math.isfinite(t):
        return scale
    return 0.5 * math.exp(-t / scale) * (t + scale)


def capped_bins(
    k: int,
    n: int,
    free_axes: int,
    fixed_cells: int,
    eps: float,
    threshold: Threshold,
    ended_axes: int = 0,
    noise_mass: float = NOISE_MASS,
) -> int:
    """The largest K <= k (and >= MIN_CAPPED_BINS) whose empty cells carry at most ``noise_mass`` n expected
    weight and whose cells number at most MAX_DEFAULT_CELLS and MAX_CELLS_PER_ROW n.

    Every cell is counted as empty, so the bound holds whatever the data (module docstring). The cells per
    row bind where Lei's rule falls back to MIN_BINS: 10 regressors at n = 30 and eps = 1e9 had 3^11 cells
    (21 s a fit), 2^11 with the cap (2 s).
    """
    weight = empty_cell_weight(n, eps, threshold)

    def too_many(k: int) -> bool:
        cells = cell_count(k, free_axes, fixed_cells, ended_axes)
        return cells * weight > noise_mass * n or cells > min(MAX_DEFAULT_CELLS, MAX_CELLS_PER_ROW * n)

    while k > MIN_CAPPED_BINS and too_many(k):
        k -= 1
    return k


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


def check_bound_cells(bound_cells: object, numeric: Sequence[str]) -> tuple[str, ...]:
    """The numeric columns with bound cells: all of ``numeric`` for True, none for False, or the named ones
    (a list, or one name: R's ``bound_cells = "hours"`` arrives as a string)."""
    if isinstance(bound_cells, bool | np.bool_):
        return tuple(numeric) if bound_cells else ()
    if isinstance(bound_cells, str):
        return (bound_cells,)
    if not isinstance(bound_cells, Sequence):
        raise TypeError("bound_cells must be True, False or a list of column names")
    return tuple(str(name) for name in bound_cells)


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
    ends: Collection[str] = (),
    threshold: Threshold = "enhanced",
    integers: Collection[str] = (),
    means: bool = False,
) -> HistogramLayout:
    """The layout of the columns ``names``, from declared metadata only.

    A column is categorical when it has declared levels (the prepared column
    is then a Categorical with exactly those levels), numeric otherwise, with
    declared bounds required. ``bins``: one K for every numeric column, a
    mapping per column (the others get the default), or None (the default
    rule, :func:`default_bins`, for the fits of ``estimator`` with the
    ``threshold`` of the release; ``means``: for fits at the bins' noisy
    means). ``ends``: the numeric columns with a
    cell of their own at each bound. ``integers``: declared whole-valued
    columns without a ``bins`` of their own get one cell per value where the
    budget allows, that is where the default rule would give them at least
    as many bins as they have values: then the same budget of cells holds
    their rows at exact centres. Finer integer axes keep the default bins: on
    AER's CPS1988 (28,155 rows, eps = 1) one cell per value of experience (71)
    and education (19) pulled the fit towards the noise of 13,490 cells
    (education's coefficient 0.029 against OLS's 0.086; 0.080 with the
    default 11 bins).
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
    outside = sorted(set(ends) - set(numeric))
    if outside:
        raise ValueError(f"bound_cells names columns that are not numeric histogram columns: {outside}")
    layout = _layout(names, bounds, levels, chosen, [], n, eps, estimator, ends, threshold, means)
    whole = [
        name
        for name in numeric
        if name in integers and name not in chosen and name not in ends
        and bounds[name][1] - bounds[name][0] + 1 <= layout.axis(name).bins
    ]  # fmt: skip
    if whole:
        layout = _layout(names, bounds, levels, chosen, whole, n, eps, estimator, ends, threshold, means)
    if layout.n_cells > MAX_CELLS:
        raise ValueError(f"the histogram would have {layout.n_cells} cells (at most {MAX_CELLS}); use fewer bins")
    return layout


def _layout(
    names: Sequence[str],
    bounds: Mapping[str, tuple[float, float]],
    levels: Mapping[str, tuple],
    chosen: Mapping[str, int],
    whole: Sequence[str],
    n: int,
    eps: float,
    estimator: str,
    ends: Collection[str],
    threshold: Threshold,
    means: bool,
) -> HistogramLayout:
    """The layout with the ``chosen`` bins, one cell per value of the ``whole`` columns, the default K elsewhere."""
    values = {name: int(bounds[name][1] - bounds[name][0]) + 1 for name in whole}
    fixed = math.prod(len(levels[name]) for name in names if name in levels)
    fixed *= math.prod(k + 2 * (name in ends) for name, k in {**chosen, **values}.items())
    free = [name for name in names if name not in levels and name not in chosen and name not in values]
    ended = sum(name in ends for name in free)
    k = default_bins(n, len(free), fixed, eps, estimator, ended, threshold, means)
    return HistogramLayout(
        tuple(
            Axis(name, levels=tuple(levels[name]))
            if name in levels
            else Axis(name, bounds=tuple(bounds[name]), bins=values[name], integer=True)
            if name in values
            else Axis(name, bounds=tuple(bounds[name]), bins=chosen.get(name, k), ends=name in ends)
            for name in names
        )
    )


def _check_bins(value: object, name: str) -> int:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise ValueError(f"{name} must be a positive integer")
    return int(value)

"""Noisy within-cell means of the numeric variables: the fit's points without the binning bias (issue 28).

Lei (2011), Algorithm 1, fits at the cell centres ``a_r``; its Theorem 3
bounds the resulting bias by the bins' width, so a fit on a histogram keeps
it at any eps. Where declared bounds are wide next to the data the rows of a
bin are far from its centre (statsmodels' engel data: QuantReg on the rows
with income at its bin's centre has slope 0.395, at its bin's mean 0.537,
on the raw rows 0.560; inference.py, **Binning**), and a response binned at
its centres moves every zero of fair's affairs to the middle of the first bin.

This module releases, besides the counts and with a share of eps, the sum of
the rows' centred offsets inside their bins, per cell and per numeric axis
of positive width (not levels, not whole-number axes, whose rows sit at
their centres), the response's included; every cell is then placed at its
rows' noisy mean. As the noise vanishes a cell holding one row is placed at
that row, so with bins that refine as eps grows (the layout for fits at
means, dpstats/mechanisms/histogram/layout.py) the fit converges to the
fit on the rows: the bias left is the spread of the rows inside a cell (for
least squares the within-cell covariance of the design's terms; for
quantiles the response's shape inside its bin), which vanishes with the
bins' width.

**The release.** For a numeric axis with bins ``[l_k, l_k + h)``, a row in
bin k has the centred offset ``c = (x - l_k) / h - 1/2`` in [-1/2, 1/2] (0 in
a bound's cell, a point); the statistic is the cells x m matrix of the sums
of ``c`` over each cell's rows, one column per axis. Under replace-one
neighbours (docs/DESIGN.md section 2) one changed row takes its offsets out
of one cell's sums and adds its new offsets to another cell's (or the same
one's): the L1 change is at most ``1/2 + 1/2 = 1`` per axis, ``m`` over the
m axes, attained (a row at the top corner of the last bins, which are
closed, replaced by one at the bottom corner of another cell;
tests/test_histogram_privacy.py checks it by brute force and replay).
Laplace noise of scale ``m / eps_means`` on every cell, empty or not, makes
the matrix eps_means-DP (Dwork et al. 2006), and with the counts' eps the
call spends ``eps_counts + eps_means <= eps`` by basic composition
(release.py's split). Centring the offsets halves the sensitivity of sums
of offsets in [0, 1] (2 per axis).

**The points** (post-processing). A fit's cell (the release's cells pooled
over the columns it does not use, P of them) has the mean offset
``1/2 + D / C``, with D its noisy sum and C its noisy count (the raw counts,
clipped at 0); its noise variance is about ``2 P b^2 / C^2`` (b the means'
Laplace scale). A bin of one axis, pooling the cells along the others, has
the same with far more rows. The bin's mean is shrunk towards the centre
and each cell's towards its bin's, with the weight
``lambda = C^2 / (C^2 + 24 P b^2)`` of a prior of variance 1/12 (a uniform
offset's): ``u = prior + lambda (clip(1/2 + D / C, 0, 1) - prior)``. Sparse
noisy cells take their bin's mean, sparse bins stay near their centres
(Algorithm 1), full cells move to their rows' mean. On engel at eps = 1 the
cells' means unshrunk, or shrunk straight to the centres, left the median's
slope as far from QuantReg as the centres did (0.22-0.37 against 0.56 on
seed 0), and the bins' means alone did not converge (fair at eps = 1e9:
intercept 1.0 against OLS's 1.96). Along the response of a quantile
regression the cell's mass is spread uniformly over the widest interval
inside its bin with that mean (half-width ``min(u, 1 - u) h``,
:func:`response_widths`), which the integrated check loss
(dpstats/mechanisms/histogram/weighted_fits.py) takes as the cell's
response: a bin whose rows all sit at its lower end becomes a point there.

**Intervals.** The points are noisy and their rows a sample: the bootstrap
(dpstats/mechanisms/histogram/inference.py, **Noisy points**) moves each
cell's offset by its own normal move, of variance
``lambda^2 (2 P b^2 / C^2 + 1 / (12 C)) + (1 - lambda)^2 / 12`` (the noise,
the sampling variance of a mean of C offsets of variance at most 1/12, and
the shrinkage's error under its prior: the estimator's mean squared error
around a mean drawn from the prior), plus ``1 - lambda`` times its bin's move
(the same law at the bin, shared by its cells), carried to the fit by the
derivative of each cell's design row (:func:`unit_steps`). Without the
shrinkage's error engel's median was covered in 0.75 of 20 seeds at eps = 1,
with it 0.90. Sizing that error by an empirical-Bayes spread read from the
release (the method of moments) instead of the prior's 1/12 made the
intervals too narrow where the noise dominates (engel's median covered in
0.75-0.80), an upper confidence bound on that spread came out at 1/12 on the
designs tried, and shrinking the points with it too left engel's median
covered in 0.10 of the seeds at eps = 5. The correlation between a cell's noise and its
bin's (the bin's sum holds the cell's) is left out, and the moves are linear
where the means are clipped to their cells, which overstates the points'
noise: the median's intervals at means on the smooth categorical design of
dpstats/uncertainty/coverage.py are 1.3-1.6 times the estimates' spread
(tests/test_histogram_inference.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...privacy.noise import laplace_mechanism
from .layout import Axis, HistogramLayout

Encode = Callable[[pd.DataFrame], tuple[np.ndarray, np.ndarray]]
"""A public map from rows of the formula's variables to the response and design matrix."""

MEANS_RELEASE = "histogram within-cell means"
DEFAULT_SHARE = 0.25
"""The part of eps spent on the within-cell sums when the caller does not choose (``moment_share``)."""
GRID = 2.0**30
"""Offsets are rounded to multiples of ``1 / GRID``: their sums over up to 2^22 rows are then exact in floating
point, so sums over a Dask DataFrame's partitions equal the pandas sums in any order (dpstats/design/moments.py)."""
PRIOR_VARIANCE = 1.0 / 12.0
"""The variance of a uniform offset on [0, 1]: the prior of a cell's mean offset around 1/2."""


def mean_axes(layout: HistogramLayout) -> tuple[str, ...]:
    """The numeric axes of positive width (neither levels nor whole numbers): those with means."""
    return tuple(a.name for a in layout.axes if not a.categorical and not a.integer)


def means_sensitivity(m: int) -> float:
    """L1 sensitivity of the m axes' vectors of offset sums under replace-one neighbours: ``m`` (module docstring)."""
    return float(m)


def centred_offsets(axis: Axis, column: pd.Series) -> np.ndarray:
    """Every row's centred offset inside its bin along ``axis``, in [-1/2, 1/2] (0 in a bound's cell), on the grid of
    ``1 / GRID`` (a row-wise map)."""
    lo, _ = axis.bounds
    inner = axis.codes(column) - (1 if axis.ends else 0)
    offset = (column.to_numpy(dtype=float) - lo) / axis.width - inner - 0.5
    at_bound = (inner < 0) | (inner >= axis.bins)
    return np.where(at_bound, 0.0, np.round(np.clip(offset, -0.5, 0.5) * GRID) / GRID)


def offset_sums(
    layout: HistogramLayout, axes: Sequence[str], frame: pd.DataFrame, masses: np.ndarray | None = None
) -> np.ndarray:
    """The sums of the rows' centred offsets per cell (C order) and axis in ``axes``, cells x axes (private); with
    ``masses`` (survey weights over their maximum, dpstats/mechanisms/histogram/survey_weights.py), of the masses
    times the offsets."""
    flat = layout.cells_of(frame)
    mass = 1.0 if masses is None else masses
    sums = [np.bincount(flat, mass * centred_offsets(layout.axis(name), frame[name]), layout.n_cells) for name in axes]
    return np.column_stack(sums) if sums else np.zeros((layout.n_cells, 0))


def release_offsets(rng: np.random.Generator, sums: np.ndarray, eps: float) -> np.ndarray:
    """The offset sums plus independent Laplace(``m / eps``) noise, every cell included (module docstring)."""
    return np.asarray(laplace_mechanism(rng, sums, means_sensitivity(sums.shape[1]), eps, MEANS_RELEASE), dtype=float)


@dataclass(frozen=True)
class Shrunk:
    """Mean offsets in [0, 1] shrunk towards a prior mean, their shrinkage weights and variances."""

    offsets: np.ndarray
    weight: np.ndarray
    variances: np.ndarray


def shrunk(sums: np.ndarray, counts: np.ndarray, pooled: int, scale: float, prior: np.ndarray | float) -> Shrunk:
    """Offsets ``prior + lambda (1/2 + clip(D / C) - prior)`` from noisy centred sums D of ``pooled`` release
    cells and counts C, ``lambda = C^2 / (C^2 + 24 pooled b^2)``, and their variances: the noise's, the
    sampling's and the shrinkage's error under the prior (module docstring)."""
    count = np.maximum(counts, 0.0)
    safe = np.where(count > 0, count, 1.0)
    noise = 2.0 * pooled * scale**2
    weight = count**2 / (count**2 + noise / PRIOR_VARIANCE)
    raw = 0.5 + np.clip(sums / safe, -0.5, 0.5)
    sampled = np.where(count > 0, noise / safe**2 + PRIOR_VARIANCE / safe, 0.0)
    variances = weight**2 * sampled + (1.0 - weight) ** 2 * PRIOR_VARIANCE
    return Shrunk(prior + weight * (raw - prior), weight, variances)


@dataclass(frozen=True)
class AxisMeans:
    """One axis' points for a fit's cells: each cell's offset, its bin along the axis, and the two parts of its
    noise (module docstring): the cell's own (``cell_variances``, independent across cells) and its bin's
    (``bin_variances`` per bin, shared by its cells with the weight ``1 - lambda`` of the cell, ``bin_share``)."""

    name: str
    offsets: np.ndarray
    bins: np.ndarray
    cell_variances: np.ndarray
    bin_share: np.ndarray
    bin_variances: np.ndarray


@dataclass(frozen=True)
class CellMeans:
    """A fit's cells' points along the axes with means."""

    axes: tuple[AxisMeans, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """The axes with means."""
        return tuple(a.name for a in self.axes)


def axis_means(
    name: str, cell: tuple[np.ndarray, np.ndarray, int], bin_: tuple[np.ndarray, np.ndarray, int], along: np.ndarray,
    scale: float,
) -> AxisMeans:  # fmt: skip
    """Each cell's offset along ``name`` shrunk towards its bin's, itself shrunk towards the centre.

    ``cell`` and ``bin_``: the noisy centred sums, counts and release cells pooled, per fit cell and per bin;
    ``along``: each fit cell's bin.
    """
    bins = shrunk(*bin_, scale, 0.5)
    cells = shrunk(*cell, scale, bins.offsets[along])
    return AxisMeans(name, cells.offsets, along, cells.variances, 1.0 - cells.weight, bins.variances)


def place(cells: pd.DataFrame, layout: HistogramLayout, names: Sequence[str], means: CellMeans) -> pd.DataFrame:
    """The cells' points: each axis with a mean at ``bin start + h u`` (a bound's cell stays at its bound)."""
    out = cells.copy()
    for axis in means.axes:
        widths = layout.cell_widths(names, axis.name)
        out[axis.name] = cells[axis.name].to_numpy(dtype=float) + widths * (axis.offsets - 0.5)
    return out


def response_widths(widths: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The width of the widest interval inside each response bin with the cell's mean offset (module docstring)."""
    return 2.0 * np.minimum(offsets, 1.0 - offsets) * widths


def unit_steps(
    encode: Encode, points: pd.DataFrame, layout: HistogramLayout, names: Sequence[str], name: str
) -> tuple[np.ndarray, np.ndarray]:
    """``(dy, dX)``: the derivative of each cell's response and design row per unit offset along ``name``.

    Central differences over a thousandth of a bin, taken inside the cell's bin (a transform such as a log
    may be undefined beyond the box); 0 for a bound's cell, a point.
    """
    widths = layout.cell_widths(names, name)
    step = 1e-3 * widths
    start = layout.cell_frame(names)[name].to_numpy(dtype=float) - 0.5 * widths
    at = np.clip(points[name].to_numpy(dtype=float), start + step, start + widths - step)
    up, down = points.copy(), points.copy()
    up[name] = at + step
    down[name] = at - step
    (y_up, X_up), (y_down, X_down) = encode(up), encode(down)
    safe = np.where(step > 0, 2.0 * step, 1.0)[:, None]
    dX = np.where(step[:, None] > 0, (X_up - X_down) / safe * widths[:, None], 0.0)
    dy = np.where(step > 0, (y_up - y_down) / safe[:, 0] * widths, 0.0)
    return dy, dX

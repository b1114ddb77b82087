"""The one private step of the perturbed histogram (Lei 2011): noisy cell counts over a public layout.

Every cell count of the layout (dpstats/mechanisms/histogram/layout.py), empty
cells included, gets independent Laplace noise of scale ``2 / eps``: under
replace-one neighbours (docs/DESIGN.md section 2) one changed row moves one
count down by 1 and another up by 1, an L1 sensitivity of 2 (Lei 2011,
Lemma 2; the paper's density ``alpha exp(-alpha |z| / 2) / 4``). A release
for a fit may also hold noisy within-cell sums of the rows' offsets inside
their bins, with a share of eps (dpstats/mechanisms/histogram/cell_means.py);
the split adds up to eps. Everything a :class:`HistogramRelease` does
afterwards is post-processing.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...privacy.accounting import PrivacySpent
from ...privacy.noise import laplace_mechanism, make_rng, postprocessing_rng
from .cell_means import MEANS_RELEASE, CellMeans, axis_means, means_sensitivity, offset_sums, release_offsets
from .cell_moments import CountModel, count_model, noise_model
from .layout import HistogramLayout, Threshold, check_threshold, cutoff, thresholded

RELEASE_NAME = "histogram counts"
COUNT_COLUMN, WEIGHT_COLUMN = "noisy_count", "fit_weight"


def count_sensitivity() -> float:
    """L1 sensitivity of the vector of cell counts under replace-one neighbours.

    One changed row leaves one cell (its count down by 1) and enters another
    (up by 1): 2, the paper's Laplace scale ``2 / alpha`` (Lei 2011, Lemma 2).
    """
    return 2.0


def release_counts(rng: np.random.Generator, counts: np.ndarray, eps: float) -> np.ndarray:
    """Every cell count plus independent Laplace(``2 / eps``) noise, empty cells included."""
    return np.asarray(laplace_mechanism(rng, counts, count_sensitivity(), eps, RELEASE_NAME), dtype=float)


@dataclass(frozen=True)
class HistogramRelease:
    """A released perturbed histogram (Lei 2011): noisy cell counts and the public layout.

    Holds no row of the data. Every method is post-processing and spends no
    further privacy. ``threshold`` is the default policy of the fits (module
    docstring); each method can override it. ``_postprocessing`` is the
    stream of the fits' bootstrap draws (``noise.postprocessing_rng`` of the
    release's generator); every fit starts from a copy of it, so a fit's
    intervals are a function of the release and the seed alone.
    ``means_axes``, ``_offsets`` and ``means_eps``: the axes with noisy
    within-cell offset sums (cells x axes) and the
    eps they spent (none by default: the fits are then at the cell centres,
    Algorithm 1). ``weighted``: the counts and sums are of the rows' survey weights in units of their declared
    maximum (survey_weights.py), so the intervals' world has the noise only and the rows' sampling error
    comes from a design-based meat (cell_meat.py).
    """

    layout: HistogramLayout
    n: int
    eps: float
    threshold: Threshold
    privacy: PrivacySpent
    _counts: np.ndarray = field(repr=False)
    _postprocessing: np.random.Generator | None = field(default=None, repr=False, compare=False)
    means_axes: tuple[str, ...] = ()
    _offsets: np.ndarray | None = field(default=None, repr=False)
    means_eps: float = 0.0
    weighted: bool = False

    @property
    def counts(self) -> np.ndarray:
        """The noisy count of every cell (flattened in C order over ``layout.shape``); with survey weights, the
        noisy weighted count in units of the weights' declared maximum (survey_weights.py)."""
        return np.array(self._counts, copy=True)

    @property
    def columns(self) -> tuple[str, ...]:
        """The histogram's columns."""
        return self.layout.columns

    @property
    def bins(self) -> dict[str, int]:
        """The number of bins of every numeric column."""
        return {a.name: a.bins for a in self.layout.axes if not a.categorical}

    def cutoff(self, threshold: Threshold | None = None) -> float:
        """The thresholding cut-off in counts (``A log(n) / eps`` for enhanced thresholding)."""
        return cutoff(self.policy(threshold), self.n, self.eps)

    def weights(self, threshold: Threshold | None = None) -> np.ndarray:
        """The fit weight of every cell after thresholding (C order, like :attr:`counts`)."""
        return thresholded(self._counts, self.policy(threshold), self.n, self.eps)

    def to_frame(self, threshold: Threshold | None = None) -> pd.DataFrame:
        """One row per cell: the columns' centres or levels, the noisy count and the fit weight."""
        frame = self.layout.cell_frame()
        frame[COUNT_COLUMN] = self.counts
        frame[WEIGHT_COLUMN] = self.weights(threshold)
        return frame

    def __repr__(self) -> str:
        axes = "; ".join(a.describe() for a in self.layout.axes)
        return (
            f"{type(self).__name__}({self.layout.n_cells} cells: {axes}; n = {self.n} (public); "
            f"eps = {self.eps:g}; threshold = {self.threshold!r})"
        )

    # internals -------------------------------------------------------------

    def policy(self, threshold: Threshold | None) -> Threshold:
        """``threshold``, or the release's default policy when None."""
        return self.threshold if threshold is None else check_threshold(threshold)

    def marginal(self, names: Sequence[str], threshold: Threshold | None, clip: bool = False):
        """Cells of the columns ``names`` and their weights, summed over the other columns.

        ``clip`` sets negative weights to 0 per cell first (Algorithm 1').
        """
        weights = self.weights(threshold)
        if clip:
            weights = np.maximum(weights, 0.0)
        return self.layout.cell_frame(names), self.sum_over(names, weights)

    def sum_over(self, names: Sequence[str], values: np.ndarray) -> np.ndarray:
        """A value per cell of the release, summed over the columns not in ``names`` (cells of ``names``, C order)."""
        order = [self.columns.index(name) for name in names]
        others = tuple(i for i in range(len(self.columns)) if i not in order)
        summed = np.asarray(values, dtype=float).reshape(self.layout.shape).sum(axis=others)
        kept = sorted(order)
        return np.moveaxis(summed, [kept.index(i) for i in order], range(len(order))).reshape(-1)

    def count_model(self, threshold: Threshold | None, clip: bool = False) -> CountModel:
        """The law of a cell's fit weight given its expected count (dpstats/mechanisms/histogram/cell_moments.py).

        ``clip``: the weights are clipped at 0 too (quantile regression), so
        without thresholding they are ``max(count + noise, 0)``.
        """
        c = self.cutoff(threshold)
        return (noise_model if self.weighted else count_model)(max(c, 0.0) if clip else c, 2.0 / self.eps)

    def count_variances(self) -> np.ndarray:
        """Per cell, an unbiased estimate of its noisy count's variance ``mu + 2 s^2`` (Poisson rows, Laplace
        noise of scale ``s = 2 / eps``): the count plus ``2 s^2``, clipped at 0 (dpstats/mechanisms/histogram/
        binary_inference.py); with survey weights the noise's ``2 s^2`` alone (the rows' part is the design-based
        meat's, cell_meat.py)."""
        noise = 2.0 * (2.0 / self.eps) ** 2
        return np.full(self._counts.shape, noise) if self.weighted else np.maximum(self._counts + noise, 0.0)

    def postprocessing(self) -> np.random.Generator:
        """A fresh copy of the release's post-processing stream (fresh OS entropy if the release has none)."""
        return make_rng(None) if self._postprocessing is None else copy.deepcopy(self._postprocessing)

    def cell_means(self, names: Sequence[str]) -> CellMeans | None:
        """The noisy points of the cells of ``names`` along their axes with means (cell_means.py).

        None when the release holds no means for any of ``names``.
        """
        used = [j for j, name in enumerate(self.means_axes) if name in names]
        if self._offsets is None or not used:
            return None
        scale = means_sensitivity(len(self.means_axes)) / self.means_eps
        grid = np.indices([self.layout.axis(c).size for c in names]).reshape(len(names), -1)
        axes = []
        for j in used:
            name = self.means_axes[j]
            cell = (self.sum_over(names, self._offsets[:, j]), self.sum_over(names, self._counts), self.pooled(names))
            bin_ = (self.sum_over([name], self._offsets[:, j]), self.sum_over([name], self._counts))
            along = grid[list(names).index(name)]
            axes.append(axis_means(name, cell, (*bin_, self.pooled([name])), along, scale))
        return CellMeans(tuple(axes))

    def pooled(self, names: Sequence[str]) -> int:
        """How many cells of the release each cell of the columns ``names`` pools (public)."""
        return self.layout.n_cells // math.prod(self.layout.axis(c).size for c in names)

    def widths(self, names: Sequence[str], name: str) -> np.ndarray | None:
        """The width along numeric column ``name`` of every cell of the columns ``names`` (None for a categorical
        or unknown ``name``): the bin width, 0 at a bound's cell (a point)."""
        if name not in names or self.layout.axis(name).categorical:
            return None
        return self.layout.cell_widths(names, name)

    def hyperparameters(
        self, policy: Threshold, names: Sequence[str], weights: np.ndarray, q: float | None, mode: str | None = None
    ):
        """The public settings of a fit, for the summary."""
        out: dict[str, object] = {}
        if q is not None:
            out.update(q=q, response=mode)
        bins = {a.name: a.bins for a in self.layout.axes if a.name in names and not a.categorical}
        out.update(bins=bins, threshold=policy, cutoff=round(self.cutoff(policy), 4))
        out.update(cells=int(weights.size), cells_used=int(np.count_nonzero(weights)))
        return out


def histogram_privacy(eps: float, means_eps: float = 0.0) -> PrivacySpent:
    """What a histogram release spends: ``eps`` on the cell counts and ``means_eps`` on the within-cell sums."""
    split = ((RELEASE_NAME, eps),) + (((MEANS_RELEASE, means_eps),) if means_eps > 0 else ())
    return PrivacySpent(
        notion="pure",
        eps=eps + means_eps,
        split=split,
        caveats=(
            "every fit from the same noisy histogram, standard errors included, is post-processing and costs "
            "nothing further",
        ),
    )


def release_histogram(
    frame: pd.DataFrame,
    layout: HistogramLayout,
    eps: float,
    threshold: Threshold,
    rng: np.random.Generator,
    kind: type[HistogramRelease] = HistogramRelease,
) -> HistogramRelease:
    """Count the prepared ``frame`` in ``layout``'s cells and release the counts (the one private step).

    ``kind`` is the class of the release (the front end's NoisyHistogram adds formula fits).
    """
    return release_cell_counts(layout.counts(frame), len(frame), layout, eps, threshold, rng, kind)


def release_cell_counts(
    counts: np.ndarray,
    n: int,
    layout: HistogramLayout,
    eps: float,
    threshold: Threshold,
    rng: np.random.Generator,
    kind: type[HistogramRelease] = HistogramRelease,
) -> HistogramRelease:
    """Release the exact cell ``counts`` of n rows in ``layout`` (summed over chunks of the rows where
    they are partitioned: dpstats/design/moments.py)."""
    noisy = release_counts(rng, counts, eps)
    return kind(layout, n, eps, threshold, histogram_privacy(eps), noisy, postprocessing_rng(rng))


def split_eps(eps: float, share: float) -> tuple[float, float]:
    """``(eps_counts, eps_means)``: ``share`` of eps on the within-bin sums, the rest on the counts.

    The two add up to at most eps in floating point (the counts get the remainder, rounded down).
    """
    means = eps * share
    counts = eps - means
    while counts + means > eps:
        counts = math.nextafter(counts, 0.0)
    return counts, means


def release_with_means(
    statistics: np.ndarray,
    n: int,
    layout: HistogramLayout,
    eps: float,
    means_eps: float,
    axes: tuple[str, ...],
    threshold: Threshold,
    rng: np.random.Generator,
    weighted: bool = False,
) -> HistogramRelease:
    """Release the cell counts with ``eps`` and the within-bin offset sums of ``axes`` with ``means_eps``.

    ``statistics`` is :func:`cell_statistics`: the counts, then the sums of every axis in ``axes``; no axes (or
    ``means_eps`` 0) release the counts only. ``weighted``: they are sums of the rows' masses ``w_i / W`` in
    ``[0, 1]`` (survey_weights.py), whose sensitivities are the counts' and the sums' own.
    """
    counts, sums = statistics[:, 0], statistics[:, 1:]
    noisy = release_counts(rng, counts, eps)
    if not axes or means_eps <= 0:
        privacy = histogram_privacy(eps)
        return HistogramRelease(layout, n, eps, threshold, privacy, noisy, postprocessing_rng(rng), weighted=weighted)
    offsets = release_offsets(rng, sums, means_eps)
    privacy = histogram_privacy(eps, means_eps)
    return HistogramRelease(
        layout, n, eps, threshold, privacy, noisy, postprocessing_rng(rng), axes, offsets, means_eps, weighted
    )


def cell_statistics(
    layout: HistogramLayout, axes: Sequence[str], frame: pd.DataFrame, masses: np.ndarray | None = None
) -> np.ndarray:
    """Per cell (rows, C order): its count, then the sums of its rows' centred offsets along every axis in ``axes``;
    with ``masses`` (the rows' ``w_i / W``, survey_weights.py) the sums of the masses and of the masses times the
    offsets."""
    if masses is None:
        return np.column_stack([layout.counts(frame), offset_sums(layout, axes, frame)])
    flat = layout.cells_of(frame)
    counts = np.bincount(flat, masses, layout.n_cells)
    return np.column_stack([counts, offset_sums(layout, axes, frame, masses)])

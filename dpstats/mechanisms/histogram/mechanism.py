"""``method="histogram"``: OLS, quantile regression, logit and probit from a perturbed histogram (Lei 2011).

``dp_ols(..., method="histogram")`` and ``dp_quantreg(..., method="histogram")``
with ``moment_share=0`` are shortcuts for ``noisy_histogram(...)`` over the
formula's own variables followed by ``.ols(formula)`` or ``.quantreg(formula, q)``
(the family's docstring, dpstats/mechanisms/histogram/__init__.py, states the
algorithm, the noise calibration, the thresholding and the default bins); by
default they also release the cells' means:

1. the histogram's columns are the variables the formula uses (the response
   included), as the formula front end prepared them: numeric ones clipped to
   their declared bounds and cut into K equal bins, categorical ones with one
   cell per declared level (Lei 2011, section 4.1);
2. every cell count gets Laplace noise of scale ``2 / eps_counts`` (section
   2.2, replace-one sensitivity 2), and every cell's sums of its rows' centred
   offsets along the m numeric axes Laplace noise of scale ``m / eps_means``
   (L1 sensitivity m; dpstats/mechanisms/histogram/cell_means.py) -- the only
   private steps, ``eps_means = moment_share eps`` and the rest on the counts;
3. the formula is evaluated at the cells' noisy means (at the centres with
   ``moment_share=0``) and levels (by the design's
   public ``variables.encode`` map, so this module never sees the formula) and fitted by
   weighted least squares or weighted quantile regression with the
   thresholded noisy counts as weights (Algorithm 1, section 4.2).

The counts are read through ``design.total`` (a sum over rows,
dpstats/design/moments.py), so a Dask DataFrame's partitions count their rows on the
workers (dpstats/distributed/dask_design.py); the noise is added once to the total.

A :class:`~dpstats.design.matrix.Design` built without the formula front end (the
audit harness's designs from arrays) has no variables; its response and
every non-intercept column are then binned as numeric variables over their
bounds, and the intercept column is 1 at every cell.

Options: ``moment_share`` (None: 0.25, or 0 with ``sheppard``; a number in
[0, 1)): the part of eps spent on the sums of the rows' offsets inside their
cells, at whose noisy means the fits are made
(dpstats/mechanisms/histogram/cell_means.py; 0 fits at the centres,
Algorithm 1, with all of eps on the counts; the share is validated from its
value alone and the split, reported in ``res.privacy``, adds up to at most
eps); ``bins`` (int, dict per variable, or None for the paper's rule),
``threshold`` ("enhanced" with A = 1/2, "nonnegative", "none", or a number A),
``bound_cells`` (False, True or a list of numeric variables: a cell of its own
at each declared bound, for a variable with a mass of rows there, such as a
response's zeros; dpstats/mechanisms/histogram/layout.py) and, for least
squares, ``sheppard`` (False, True or a list of variables: Sheppard's
correction for grouped continuous regressors; not for a design without
formula variables).
Quantile regression uses ``response="auto"`` (the check loss integrated over
the response's bins); ``fit(..., response="centre")`` and
``NoisyHistogram.quantreg(..., response="centre")`` give Algorithm 1's linear
program on the centres. ``dp_quantreg`` with several quantiles splits eps and
releases one histogram per quantile; one ``noisy_histogram`` followed by
``.quantreg`` for each q spends eps once.
Standard errors and intervals: a bias-corrected parametric bootstrap of the
released histogram, post-processing that spends nothing
(dpstats/mechanisms/histogram/inference.py); ``se_share`` is not used.

``dp_logit`` and ``dp_probit`` (``fit(..., link="logit")`` or ``"probit"``)
release the same histogram, with the response's 0 and 1 as two cells of
their own where that is public (binary_response.py), and fit a weighted
binary MLE on its cells, with delta-method intervals corrected for the
thresholding from the raw noisy counts (binary_inference.py); an integer
``bins`` is for the regressors then, a 0/1 response keeping its two cells.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pandas as pd

from ...design.matrix import Design
from ...glm.links import LINKS, get_link
from ...privacy.accounting import check_share
from ..base import PrivacyRequest, Release
from ..quantiles import check_quantile
from .binary_response import response_cells
from .binning_bias import EffectClass
from .cell_fits import CellFit, Encode, as_release, check_response, fit_on_cells
from .cell_means import DEFAULT_SHARE, mean_axes
from .cell_meat import MEAT_SHARE, CellMeat, with_meat
from .layout import (
    HistogramLayout,
    Threshold,
    build_layout,
    check_bound_cells,
    check_threshold,
)
from .release import HistogramRelease, cell_statistics, release_with_means, split_eps
from .survey_weights import layout_eps, row_masses
from .weighted_fits import identifies

MAX_IDENTIFYING_BINS = 8
"""The most bins per numeric axis :func:`identifying_layout` raises a default layout to."""

DEFAULTS: dict[str, object] = {
    "bins": None,
    "threshold": "enhanced",
    "sheppard": False,
    "bound_cells": False,
    "moment_share": None,
}


def fit(
    design: Design,
    privacy: PrivacyRequest,
    rng: np.random.Generator,
    *,
    bins: int | dict[str, int] | None = None,
    threshold: Threshold = "enhanced",
    sheppard: bool | list[str] = False,
    bound_cells: bool | list[str] = False,
    response: str = "auto",
    q: float | None = None,
    link: str | None = None,
    moment_share: float | None = None,
) -> Release:
    """Release a perturbed histogram of ``design`` and fit on it (module docstring).

    ``q=None`` and ``link=None`` fit least squares; a number ``q`` in (0, 1) fits that quantile, with
    the ``response`` mode of :meth:`dpstats.api.histogram_release.NoisyHistogram.quantreg`; ``link="logit"``
    or ``"probit"`` a weighted binary MLE (binary_response.py, binary_inference.py).
    """
    threshold = check_threshold(threshold)
    response = check_response(response)
    estimator, q = check_estimator(q, link)
    share = check_moment_share(moment_share, bool(sheppard))
    eps, eps_meat = (float(privacy.eps), 0.0) if design.weights is None else split_eps(privacy.eps, MEAT_SHARE)
    if design.variables is not None:
        hist, cell_fit = _fit_variables(
            design, eps, rng, bins, threshold, estimator, q, response, sheppard, bound_cells, share, eps_meat
        )
    else:
        if sheppard:
            raise ValueError("sheppard needs the formula's variables (use dp_ols or noisy_histogram)")
        hist, cell_fit = _fit_columns(
            design, eps, rng, bins, threshold, estimator, q, response, bound_cells, share, eps_meat
        )
    return as_release(cell_fit, with_meat(hist.privacy, eps_meat, design.psus))


def check_estimator(q: object, link: object) -> tuple[str, float | None]:
    """The estimator of ``q`` and ``link`` ("ols", "quantreg", "logit" or "probit") and the checked quantile;
    public arguments only."""
    if link is not None:
        if q is not None:
            raise ValueError("a binary fit (link=) takes no quantile q")
        return get_link(link).name, None
    return ("ols", None) if q is None else ("quantreg", check_quantile(q))


def check_moment_share(moment_share: object, sheppard: bool) -> float:
    """The part of eps for the within-cell means (dpstats/mechanisms/histogram/cell_means.py), in [0, 1).

    None gives ``DEFAULT_SHARE``, or 0 with Sheppard's correction, which corrects fits at the bins' centres
    (the two do not combine: a positive share with ``sheppard`` is refused). Public arguments only.
    """
    share = check_share(moment_share, "moment_share")
    if share is None:
        return 0.0 if sheppard else DEFAULT_SHARE
    if share > 0 and sheppard:
        raise ValueError("sheppard corrects fits at the bins' centres; use it with moment_share=0")
    return share


def _release(
    design: Design,
    frame_of: Callable[[Design], pd.DataFrame],
    layout_with: Callable[[float, bool], HistogramLayout],
    eps: float,
    share: float,
    threshold: Threshold,
    rng: np.random.Generator,
) -> HistogramRelease:
    """The layout for the counts' part of eps, and the release of its counts and within-bin sums.

    The axes with means are :func:`~dpstats.mechanisms.histogram.cell_means.mean_axes`, in the default layout
    for fits at means (dpstats/mechanisms/histogram/layout.py); a layout without any (levels and whole
    numbers only), or a share of 0, spends all of eps on the counts in the layout for fits at centres.
    Public facts only.
    """
    eps_counts, eps_means = split_eps(eps, share)
    layout = layout_with(eps_counts, True)
    axes = mean_axes(layout) if eps_means > 0 else ()
    if not axes:
        eps_counts, eps_means = eps, 0.0
        layout = layout_with(eps, False)
    statistic = functools.partial(_statistics, layout, axes, frame_of)
    weighted = design.weights is not None
    return release_with_means(
        design.total(statistic), design.n, layout, eps_counts, eps_means, axes, threshold, rng, weighted
    )


def _statistics(
    layout: HistogramLayout, axes: tuple[str, ...], frame_of: Callable[[Design], pd.DataFrame], design: Design
) -> np.ndarray:
    """The counts and within-bin sums of the design's rows (a statistic for ``design.total``), of their survey
    weights' masses where they have weights (survey_weights.py)."""
    return cell_statistics(layout, axes, frame_of(design), row_masses(design))


def _cell_meat(
    design: Design, hist: HistogramRelease, frame: pd.DataFrame, eps: float, rng: np.random.Generator
) -> CellMeat | None:
    """With survey weights, what releases the design-based meat at the fit (cell_meat.py); None without."""
    masses = row_masses(design)
    if masses is None:
        return None
    return CellMeat(hist.layout.cells_of(frame), masses, design.psus, eps, rng)


def _fit_variables(
    design: Design,
    eps: float,
    rng: np.random.Generator,
    bins: int | dict[str, int] | None,
    threshold: Threshold,
    estimator: str,
    q: float | None,
    response: str,
    sheppard: bool | list[str],
    bound_cells: bool | list[str],
    share: float,
    eps_meat: float = 0.0,
) -> tuple[HistogramRelease, CellFit]:
    """The histogram over the formula's variables, and the design fitted on its cells; a binary fit's response
    has two cells when it is 0/1, else bins and a cell at each bound (binary_response.py). With survey weights
    ``eps_meat`` is the design-based meat's eps (cell_meat.py)."""
    variables = design.variables
    names = list(variables.frame.columns)
    y_name = variables.response_axis or design.y_name
    ends = check_bound_cells(bound_cells, [c for c in names if c not in variables.levels])
    integers, whole = variables.integers, False
    if estimator in LINKS:
        ends, integers, whole = response_cells(variables, y_name, ends, integers)

    def layout_with(eps_counts: float, means: bool) -> HistogramLayout:
        def with_bins(k: int | dict[str, int] | None) -> HistogramLayout:
            if whole and isinstance(k, int):  # a 0/1 response keeps its two cells
                k = {c: k for c in names if c not in variables.levels and c != y_name}
            return build_layout(
                names, variables.bounds, variables.levels, k, design.n, layout_eps(eps_counts, design), estimator,
                ends, threshold, integers, means,
            )  # fmt: skip

        layout = with_bins(bins)
        return identifying_layout(layout, variables.encode, with_bins) if bins is None else layout

    hist = _release(design, lambda d: d.variables.frame, layout_with, eps, share, threshold, rng)
    meat = _cell_meat(design, hist, variables.frame, eps_meat, rng)
    cell_fit = fit_on_cells(
        hist, estimator, names, variables.response, variables.encode, design.term_names, y_name, q, None, response,
        sheppard, meat, EffectClass.of_design(design),
    )  # fmt: skip
    return hist, cell_fit


def identifying_layout(
    layout: HistogramLayout, encode: Encode, layout_with: Callable[[int], HistogramLayout]
) -> HistogramLayout:
    """The default ``layout``, with one more bin per numeric axis while its cells cannot identify the design.

    The capped default (dpstats/mechanisms/histogram/layout.py) can leave two
    bins on an axis, on which ``x`` and ``x**2`` are collinear with the
    intercept: every fit would fail, whatever the data. Whether the formula's
    design has full column rank over all the layout's cells is public (the
    layout and the formula), so it is checked here, up to ``MAX_IDENTIFYING_BINS``.
    """
    numeric = [axis.bins for axis in layout.axes if not axis.categorical]
    while numeric and max(numeric) < MAX_IDENTIFYING_BINS and not _identifies(layout, encode):
        layout = layout_with(max(numeric) + 1)
        numeric = [axis.bins for axis in layout.axes if not axis.categorical]
    return layout


def _identifies(layout: HistogramLayout, encode: Encode) -> bool:
    """Whether the design has full column rank over the cells of ``layout``."""
    X = encode(layout.cell_frame())[1]
    return identifies(X[np.all(np.isfinite(X), axis=1)])  # a transform undefined at a bound's cell (log 0): left out


def _fit_columns(
    design: Design,
    eps: float,
    rng: np.random.Generator,
    bins: int | dict[str, int] | None,
    threshold: Threshold,
    estimator: str,
    q: float | None,
    response: str,
    bound_cells: bool | list[str],
    share: float,
    eps_meat: float = 0.0,
) -> tuple[HistogramRelease, CellFit]:
    """The histogram over the response and the non-intercept design columns (designs without variables); with
    survey weights ``eps_meat`` is the design-based meat's eps (cell_meat.py)."""
    if design.x_bounds is None or design.y_bounds is None:
        raise ValueError("method='histogram' needs declared bounds for a design without formula variables")
    slopes = design.slope_indices
    names = [design.y_name, *(design.term_names[j] for j in slopes)]
    bounds = {design.y_name: design.y_bounds}
    bounds.update({design.term_names[j]: tuple(design.x_bounds[j]) for j in slopes})
    ends = check_bound_cells(bound_cells, names)
    if estimator in LINKS:
        ends = response_cells(None, design.y_name, ends, ())[0]

    def frame_of(d: Design) -> pd.DataFrame:
        return pd.DataFrame({d.y_name: d.y, **{d.term_names[j]: d.X[:, j] for j in slopes}})

    def layout_with(eps_counts: float, means: bool) -> HistogramLayout:
        eps_layout = layout_eps(eps_counts, design)
        return build_layout(names, bounds, {}, bins, design.n, eps_layout, estimator, ends, threshold, (), means)

    hist = _release(design, frame_of, layout_with, eps, share, threshold, rng)
    meat = _cell_meat(design, hist, frame_of(design), eps_meat, rng)

    def encode(cells: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        X = np.ones((len(cells), design.n_columns))
        for j in slopes:
            X[:, j] = cells[design.term_names[j]].to_numpy(dtype=float)
        return cells[design.y_name].to_numpy(dtype=float), X

    cell_fit = fit_on_cells(
        hist,
        estimator,
        names,
        [design.y_name],
        encode,
        design.term_names,
        design.y_name,
        q,
        None,
        response,
        meat=meat,
        effects=EffectClass.of_design(design),
    )
    return hist, cell_fit

"""The perturbed histogram of Lei (2011): one noisy release, any number of fits.

``noisy_histogram(data, columns, eps, bounds=..., levels=...)`` releases the
cell counts of a histogram over the named columns with Laplace noise and
returns a :class:`NoisyHistogram` that holds only the noisy counts and the
public layout. Its ``.ols(formula)``, ``.quantreg(formula, q)`` and
``.to_frame()`` are post-processing: they spend nothing further, however
many are run (Lei 2011, section 1 and section 4.1).

The release (Lei 2011, section 2.2 and section 4.1):

* each numeric column is rescaled by its declared bounds and cut into K equal
  bins (the last one closed, the paper's footnote 1); the data are clipped to
  the bounds first (a row-wise map). Each categorical column contributes one
  cell per *declared* level and nothing else (an undeclared value is a schema
  error); the cells are the product of the columns' bins and levels, all of
  them public;
* every cell count, empty cells included, gets independent Laplace noise of
  scale ``2 / eps``: the paper's density ``alpha exp(-alpha |z| / 2) / 4``.
  Under replace-one neighbours (DESIGN.md section 2) one changed row moves
  one count down by 1 and another up by 1, an L1 sensitivity of 2 (Lemma 2).

The fits (Algorithm 1): the formula is evaluated at the cell centres (numeric
columns) and levels (categorical ones), and a weighted fit is run with the
noisy counts as weights, after

* **enhanced thresholding** (section 4.2, the default): counts below
  ``A log(n) / eps`` with ``A = 1/2`` (the paper's housing example) become
  0. The cut-off is positive, so every negative count becomes 0 too;
* or ``threshold="nonnegative"``: ``max(n^_r, 0)`` (Algorithm 1');
* or ``threshold="none"``: the raw noisy counts (Algorithm 1). Least squares
  then uses the negative weights as they are and fails (an output, not an
  exception) when ``X'WX`` is not positive definite, the case the paper
  notes where the objective has no minimiser; quantile regression, whose
  check-loss objective is unbounded below with a negative weight, clips
  them at 0 as Algorithm 1' does.

Thresholding is applied per cell of the release, before cells are summed
over the columns a formula does not use.

Least squares, ``sheppard=`` (off by default: Algorithm 1 as published).
Putting each row of a smooth continuous regressor at its bin centre acts
like classical measurement error: the centres vary more than the data by
about ``h^2 / 12`` (Sheppard 1898), which attenuates the slope by about
``h^2 / (12 Var(x))`` and moves the intercept with it -- the dominant error
of Algorithm 1 at eps = 1 on the housing benchmark (with K = 10 the size
slope is 4.0% low and the intercept 9.8% high from binning alone; Sheppard's
correction brings every coefficient within 1.3% of OLS at eps = 1).
``sheppard=True`` (or a list of columns) subtracts the within-bin
covariance of the design row from ``X'WX``:
``sum_r w_r (h^2 / 12) g_r g_r'`` per corrected column, with ``g_r`` the
derivative of the design row in that column at the cell centre (exact for
columns linear in the variable, first-order for transforms). It is for
continuous variables whose density is smooth on the scale of a bin, never
for a variable whose values are the bin centres themselves (an integer
variable with one bin per value), which binning does not move.

Quantile regression, ``response=`` (post-processing either way):

* ``"integrated"`` (the default when the formula's response is a binned
  column): each cell's mass is spread uniformly over its response bin and
  the check loss is integrated exactly over it -- the paper's objective (6),
  ``int f^_PH(x) m(x, theta) dx``, taken exactly along the response, with
  the regressors at their centres as in Algorithm 1 (dpstats/weighted_fits.py).
  Least squares needs no such option: its integrated loss differs from the
  loss at the centre by a constant, so Algorithm 1 is already exact there;
* ``"centre"``: Algorithm 1 exactly, every cell's mass at its centre, solved
  as a linear program. Its optimum is a vertex through p cell centres, so
  the coefficients move in steps of the response's bin width; on the
  housing benchmark at eps = 1 it misses QuantReg on county effects by
  8-17% where the integrated fit stays within 3% (benchmarks/bench_histogram.py). It is the
  fallback when the response is a transform of a column.

The public layout, the default number of bins (the paper's rule of thumb,
section 4.3) and the thresholding rules are in dpstats/histogram_layout.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .cells import check_missing
from .formula import build_design, formula_variables, prepare_frame
from .histogram_layout import (
    HistogramLayout,
    Threshold,
    build_layout,
    check_threshold,
    cutoff,
    thresholded,
)
from .metadata import check_bounds, check_levels
from .noise import RandomState, laplace_mechanism, make_rng
from .privacy import PrivacySpent, check_eps
from .quantile_fits import check_quantile
from .weighted_fits import (
    WeightedFit,
    weighted_least_squares,
    weighted_quantile_regression,
    weighted_quantile_regression_binned,
)

TITLE = "Perturbed histogram (weighted fit on cell centres)"
CITATION = "Lei (2011), Algorithm 1 with enhanced thresholding (section 4.2)"
RELEASE_NAME = "histogram counts"
RESPONSE_MODES = ("auto", "integrated", "centre")
COUNT_COLUMN, WEIGHT_COLUMN = "noisy_count", "fit_weight"
SE_NOTE = (
    "The perturbed histogram releases no valid standard error: one must cover the sampling error, "
    "the Laplace noise, the binning and the thresholding. SEs, tests and intervals are NaN."
)


def count_sensitivity() -> float:
    """L1 sensitivity of the vector of cell counts under replace-one neighbours.

    One changed row leaves one cell (its count down by 1) and enters another
    (up by 1): 2, the paper's Laplace scale ``2 / alpha`` (Lei 2011, Lemma 2).
    """
    return 2.0


def release_counts(rng: np.random.Generator, counts: np.ndarray, eps: float) -> np.ndarray:
    """Every cell count plus independent Laplace(``2 / eps``) noise, empty cells included."""
    return np.asarray(laplace_mechanism(rng, counts, count_sensitivity(), eps, RELEASE_NAME), dtype=float)


# --------------------------------------------------------------------------
# The release
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class CellFit:
    """A weighted fit on the cells of a histogram, before it is wrapped as a result."""

    fit: WeightedFit
    term_names: tuple[str, ...]
    columns: tuple[str, ...]
    hyperparameters: dict[str, object]


@dataclass(frozen=True)
class NoisyHistogram:
    """A released perturbed histogram (Lei 2011): noisy cell counts and the public layout.

    Holds no row of the data. Every method is post-processing and spends no
    further privacy. ``threshold`` is the default policy of the fits (module
    docstring); each method can override it.
    """

    layout: HistogramLayout
    n: int
    eps: float
    threshold: Threshold
    privacy: PrivacySpent
    _counts: np.ndarray = field(repr=False)

    @property
    def counts(self) -> np.ndarray:
        """The noisy count of every cell (flattened in C order over ``layout.shape``)."""
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
        return cutoff(self._threshold(threshold), self.n, self.eps)

    def weights(self, threshold: Threshold | None = None) -> np.ndarray:
        """The fit weight of every cell after thresholding (C order, like :attr:`counts`)."""
        return thresholded(self._counts, self._threshold(threshold), self.n, self.eps)

    def to_frame(self, threshold: Threshold | None = None) -> pd.DataFrame:
        """One row per cell: the columns' centres or levels, the noisy count and the fit weight."""
        frame = self.layout.cell_frame()
        frame[COUNT_COLUMN] = self.counts
        frame[WEIGHT_COLUMN] = self.weights(threshold)
        return frame

    def ols(self, formula: str, *, threshold: Threshold | None = None, sheppard: bool | Sequence[str] = False):
        """Weighted least squares of ``formula`` on the cells (Algorithm 1); no further privacy cost.

        The formula may use any of the histogram's columns (numeric ones at their
        bin centres, categorical ones with their declared levels); the cells are
        summed over the columns it does not use. ``sheppard``: True, or the
        continuous regressors to correct for grouping (module docstring).
        Returns a :class:`~dpstats.results.DPRegressionResults`.
        """
        return self._result("ols", formula, None, threshold, sheppard=sheppard)

    def quantreg(self, formula: str, q: float = 0.5, *, threshold: Threshold | None = None, response: str = "auto"):
        """Weighted quantile regression at quantile ``q`` on the cells (Lei 2011, section 3.2).

        ``response``: ``"integrated"`` (check loss integrated over each cell's
        response bin; the default, ``"auto"``, when the response is a binned
        column), or ``"centre"`` (Algorithm 1's linear program on the centres);
        see the module docstring. Negative weights are clipped at 0
        (Algorithm 1'). Returns a :class:`~dpstats.results.DPRegressionResults`;
        no further privacy cost.
        """
        q = check_quantile(q)
        return self._result("quantreg", formula, q, threshold, check_response(response))

    def __repr__(self) -> str:
        axes = "; ".join(a.describe() for a in self.layout.axes)
        return (
            f"NoisyHistogram({self.layout.n_cells} cells: {axes}; n = {self.n} (public); "
            f"eps = {self.eps:g}; threshold = {self.threshold!r})"
        )

    # internals -------------------------------------------------------------

    def _threshold(self, threshold: Threshold | None) -> Threshold:
        return self.threshold if threshold is None else check_threshold(threshold)

    def marginal(self, names: Sequence[str], threshold: Threshold | None, clip: bool = False):
        """Cells of the columns ``names`` and their weights, summed over the other columns.

        ``clip`` sets negative weights to 0 per cell first (Algorithm 1').
        """
        weights = self.weights(threshold)
        if clip:
            weights = np.maximum(weights, 0.0)
        order = [self.columns.index(name) for name in names]
        others = tuple(i for i in range(len(self.columns)) if i not in order)
        summed = weights.reshape(self.layout.shape).sum(axis=others)
        kept = sorted(order)
        summed = np.moveaxis(summed, [kept.index(i) for i in order], range(len(order)))
        return self.layout.cell_frame(names), summed.reshape(-1)

    def fit_formula(
        self,
        estimator: str,
        formula: str,
        q: float | None,
        threshold: Threshold | None,
        response: str = "auto",
        sheppard: bool | Sequence[str] = False,
    ):
        """Evaluate ``formula`` on the cells and fit it; returns (CellFit, FormulaSpec, response name)."""
        policy = self._threshold(threshold)
        lhs, rhs = formula_variables(formula, self.columns) if isinstance(formula, str) else ([], [])
        names = [c for c in self.columns if c in lhs or c in rhs]
        if not names:
            raise ValueError(f"the formula uses none of the histogram's columns {list(self.columns)}")
        continuous = [c for c in names if c in rhs and c not in lhs and not self.layout.axis(c).categorical]
        corrected = check_sheppard(sheppard, continuous, estimator)
        cells, weights = self.marginal(names, policy, clip=estimator == "quantreg")
        levels = {k: v for k, v in self.layout.declared_levels().items() if k in names}

        def design_at(frame: pd.DataFrame):
            return build_design(formula, frame, {}, levels, need_bounds=False)

        design, spec = design_at(cells)
        correction = None
        if corrected:
            correction = sum(self._sheppard_term(design_at, cells, name, weights) for name in corrected)
        y_width = self.bin_width(design.y_name)
        fit, mode = fit_cells(estimator, design.X, design.y, weights, q, response, y_width, correction)
        hyper = self.hyperparameters(policy, names, weights, q, mode)
        if estimator == "ols":
            hyper["sheppard"] = list(corrected)
        return CellFit(fit, design.term_names, tuple(names), hyper), spec, design.y_name

    def _sheppard_term(self, design_at, cells: pd.DataFrame, name: str, weights: np.ndarray) -> np.ndarray:
        """``sum_r w_r (h^2 / 12) g_r g_r'`` for column ``name`` (module docstring)."""
        width = self.bin_width(name)
        step = width * 1e-3
        up, down = cells.copy(), cells.copy()
        up[name] = up[name] + step
        down[name] = down[name] - step
        gradient = (design_at(up)[0].X - design_at(down)[0].X) / (2.0 * step)
        return width**2 / 12.0 * (gradient.T @ (weights[:, None] * gradient))

    def bin_width(self, name: str) -> float | None:
        """The bin width of numeric column ``name`` (None for a categorical or unknown name)."""
        if name not in self.columns or self.layout.axis(name).categorical:
            return None
        axis = self.layout.axis(name)
        return (axis.bounds[1] - axis.bounds[0]) / axis.bins

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

    def _result(
        self,
        estimator: str,
        formula: str,
        q: float | None,
        threshold: Threshold | None,
        response: str = "auto",
        sheppard: bool | Sequence[str] = False,
    ):
        from .results import DPRegressionResults

        cell_fit, spec, y_name = self.fit_formula(estimator, formula, q, threshold, response, sheppard)
        p = len(cell_fit.term_names)
        return DPRegressionResults(
            estimator=estimator,
            spec=spec,
            y_name=y_name,
            method="histogram",
            method_title=TITLE,
            citation=CITATION,
            method_reason=None,
            nobs=self.n,
            privacy=self.privacy,
            failed=cell_fit.fit.failed,
            reason=cell_fit.fit.reason,
            se_note=SE_NOTE,
            declared_bounds={k: v for k, v in self.layout.declared_bounds().items() if k in cell_fit.columns},
            hyperparameters=cell_fit.hyperparameters,
            _params=cell_fit.fit.params,
            _cov=np.full((p, p), np.nan),
            _noisy_stats=dict(cell_fit.fit.stats),
        )


def check_response(response: object) -> str:
    """Validate the quantile-regression ``response`` mode."""
    if response not in RESPONSE_MODES:
        raise ValueError(f"response must be one of {RESPONSE_MODES}")
    return str(response)


def check_sheppard(sheppard: object, continuous: Sequence[str], estimator: str) -> list[str]:
    """The columns to correct: all continuous regressors for True, the named ones for a list."""
    if sheppard is False or sheppard is None:
        return []
    if estimator != "ols":
        raise ValueError("sheppard applies to least squares only")
    if sheppard is True:
        return list(continuous)
    if isinstance(sheppard, str) or not isinstance(sheppard, Sequence):
        raise TypeError("sheppard must be True, False or a list of column names")
    unknown = [name for name in sheppard if name not in continuous]
    if unknown:
        raise ValueError(f"sheppard names columns that are not numeric regressors of the formula: {unknown}")
    return [str(name) for name in sheppard]


def fit_cells(
    estimator: str,
    X: np.ndarray,
    y: np.ndarray,
    weights: np.ndarray,
    q: float | None,
    response: str = "auto",
    bin_width: float | None = None,
    correction: np.ndarray | None = None,
) -> tuple[WeightedFit, str | None]:
    """The weighted fit on the cells, and the quantile-regression mode used (module docstring).

    ``bin_width`` is the width of the response's bins, None when the response
    is not a binned column (a transform), which rules out ``"integrated"``.
    ``correction`` is subtracted from ``X'WX`` (least squares only).
    """
    if estimator == "ols":
        return weighted_least_squares(X, y, weights, correction), None
    if response == "integrated" and bin_width is None:
        raise ValueError(
            "response='integrated' needs the formula's response to be a numeric column of the histogram; "
            "use response='centre'"
        )
    if response == "centre" or bin_width is None:
        return weighted_quantile_regression(X, y, weights, q), "centre"
    half = 0.5 * bin_width
    return weighted_quantile_regression_binned(X, y - half, y + half, weights, q), "integrated"


def histogram_privacy(eps: float) -> PrivacySpent:
    """What a histogram release spends: all of eps on the cell counts."""
    return PrivacySpent(
        notion="pure",
        eps=eps,
        split=((RELEASE_NAME, eps),),
        caveats=("every fit from the same noisy histogram is post-processing and costs nothing further",),
    )


def release_histogram(
    frame: pd.DataFrame, layout: HistogramLayout, eps: float, threshold: Threshold, rng: np.random.Generator
) -> NoisyHistogram:
    """Count the prepared ``frame`` in ``layout``'s cells and release the counts (the one private step)."""
    noisy = release_counts(rng, layout.counts(frame), eps)
    return NoisyHistogram(layout, len(frame), eps, threshold, histogram_privacy(eps), noisy)


def noisy_histogram(
    data: pd.DataFrame,
    columns: Sequence[str],
    eps: float,
    *,
    bounds: Mapping[str, Sequence[float]] | None = None,
    levels: Mapping[str, Sequence] | None = None,
    bins: int | Mapping[str, int] | None = None,
    threshold: Threshold = "enhanced",
    random_state: RandomState = None,
    missing: str = "impute",
) -> NoisyHistogram:
    """Release an eps-DP perturbed histogram of ``columns`` (Lei 2011, section 2.2 and Algorithm 1).

    Parameters
    ----------
    data : DataFrame (or dict of columns) holding the private rows.
    columns : the columns to count; fits may use any subset of them.
    eps : the privacy budget of the release (> 0, finite); fits cost nothing more.
    bounds : public ``{name: (lower, upper)}`` for every numeric column; the
        data are clipped to them and each is cut into equal bins.
    levels : public ``{name: [...]}`` for every categorical column: one cell
        per declared level. A column without declared levels is numeric,
        whatever its dtype (a bool column: declare ``[False, True]``).
    bins : bins per numeric column: an int for all, a dict per column, or None
        for the paper's rule (:func:`default_bins`).
    threshold : the fits' default: ``"enhanced"`` (``A log(n) / eps`` with
        A = 1/2, section 4.2), ``"nonnegative"`` (Algorithm 1'), ``"none"``
        (Algorithm 1) or a number A for ``A log(n) / eps``.
    random_state : None (fresh OS entropy), an int, or a numpy Generator.
    missing : ``"impute"`` (the default: each bad cell gets the row-wise
        treatment of dpstats/cells.py) or ``"raise"`` (the curator's opt-in; its
        errors describe confidential data).

    Neighbouring datasets differ in one row and have the same n (public).
    """
    eps = check_eps(eps)
    threshold = check_threshold(threshold)
    if isinstance(data, Mapping):
        data = pd.DataFrame(data)
    if not isinstance(data, pd.DataFrame):
        raise TypeError("data must be a pandas DataFrame or a dict of columns")
    if isinstance(columns, str) or not isinstance(columns, Sequence | pd.Index) or len(columns) == 0:
        raise TypeError("columns must be a non-empty list of column names")
    columns = [str(c) for c in columns]
    if len(set(columns)) != len(columns):
        raise ValueError("columns has duplicated names")
    absent = [c for c in columns if c not in data.columns]
    if absent:
        raise ValueError(f"columns {absent} are not in data")
    reserved = sorted({COUNT_COLUMN, WEIGHT_COLUMN} & set(columns))
    if reserved:
        raise ValueError(f"column names {reserved} are reserved for to_frame()")
    declared_bounds = check_bounds(bounds)
    declared_levels = check_levels(levels)
    if len(data) < 2:
        raise ValueError("data must have at least 2 rows")
    missing = check_missing(missing)
    layout = build_layout(columns, declared_bounds, declared_levels, bins, len(data), eps)
    rng = make_rng(random_state)
    frame = prepare_frame(data, columns, declared_bounds, declared_levels, missing)
    return release_histogram(frame, layout, eps, threshold, rng)

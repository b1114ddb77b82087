"""``dpstats.noisy_histogram``: release a perturbed histogram once, fit any number of formulas on it.

``noisy_histogram(data, columns, eps, bounds=..., levels=...)`` releases the
cell counts of a histogram over the named columns with Laplace noise (Lei
2011; the algorithm, its calibration and the fits are documented in
dpstats/mechanisms/histogram/__init__.py) and returns a
:class:`NoisyHistogram` that holds only the noisy counts and the public
layout. Its ``.ols(formula)``, ``.quantreg(formula, q)`` and ``.to_frame()``
are post-processing: they spend nothing further, however many are run, and
each fit carries standard errors and intervals (a parametric bootstrap of the
release, dpstats/mechanisms/histogram/inference.py) -- the same as
``dp_ols``/``dp_quantreg`` with ``method="histogram"`` give on the same bins.
This module is the front end of the family: it reads the data frame and the
formulas; the mechanism's modules never import it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from ..frontend.cells import check_missing
from ..frontend.formula import admitted_variables, build_design, prepare_frame
from ..frontend.metadata import check_bounds, check_levels
from ..mechanisms.histogram import SPEC
from ..mechanisms.histogram.binning_bias import EffectClass
from ..mechanisms.histogram.cell_fits import CellFit, as_release, check_response, fit_on_cells
from ..mechanisms.histogram.layout import Threshold, build_layout, check_bound_cells, check_threshold
from ..mechanisms.histogram.release import COUNT_COLUMN, WEIGHT_COLUMN, HistogramRelease, release_histogram
from ..mechanisms.quantiles import check_quantile
from ..privacy.accounting import PrivacySpent, check_eps
from ..privacy.budget import Accountant, check_accountant
from ..privacy.noise import RandomState, make_rng
from ..results.regression import DPRegressionResults


class NoisyHistogram(HistogramRelease):
    """A released perturbed histogram, with formula fits (every one post-processing)."""

    def ols(self, formula: str, *, threshold: Threshold | None = None, sheppard: bool | Sequence[str] = False):
        """Weighted least squares of ``formula`` on the cells (Algorithm 1); no further privacy cost.

        The formula may use any of the histogram's columns (numeric ones at their
        bin centres, categorical ones with their declared levels); the cells are
        summed over the columns it does not use. ``sheppard``: True, or the
        continuous regressors to correct for grouping (module docstring).
        Returns a :class:`~dpstats.results.regression.DPRegressionResults`.
        """
        return self._result("ols", formula, None, threshold, sheppard=sheppard)

    def quantreg(self, formula: str, q: float = 0.5, *, threshold: Threshold | None = None, response: str = "auto"):
        """Weighted quantile regression at quantile ``q`` on the cells (Lei 2011, section 3.2).

        ``response``: ``"integrated"`` (check loss integrated over each cell's
        response bin; the default, ``"auto"``, when the response is a binned
        column), or ``"centre"`` (Algorithm 1's linear program on the centres);
        see the module docstring. Negative weights are clipped at 0
        (Algorithm 1'). Returns a :class:`~dpstats.results.regression.DPRegressionResults`;
        no further privacy cost.
        """
        q = check_quantile(q)
        return self._result("quantreg", formula, q, threshold, check_response(response))

    def fit_formula(
        self,
        estimator: str,
        formula: str,
        q: float | None,
        threshold: Threshold | None,
        response: str = "auto",
        sheppard: bool | Sequence[str] = False,
    ) -> tuple[CellFit, DPRegressionResults]:
        """Evaluate ``formula`` on the cells and fit it; returns the cell fit and its result."""
        lhs, rhs, _ = admitted_variables(formula, self.columns, None)
        names = [c for c in self.columns if c in lhs or c in rhs]
        cells, _ = self.marginal(names, threshold)
        levels = {k: v for k, v in self.layout.declared_levels().items() if k in names}
        design, spec = build_design(formula, cells, {}, levels, need_bounds=False)
        encode = design.variables.encode
        bounds = {k: v for k, v in self.layout.declared_bounds().items() if k in names}
        cell_fit = fit_on_cells(
            self, estimator, names, lhs, encode, design.term_names, design.y_name, q, threshold, response, sheppard,
            effects=_effect_class(formula, cells, bounds, levels),
        )  # fmt: skip
        result = DPRegressionResults.from_release(
            as_release(cell_fit, self.privacy),
            estimator=estimator,
            spec=spec,
            y_name=design.y_name,
            method=SPEC.name,
            method_title=SPEC.title,
            citation=SPEC.citation,
            nobs=self.n,
            declared_bounds=bounds,
        )
        return cell_fit, result

    def _result(
        self,
        estimator: str,
        formula: str,
        q: float | None,
        threshold: Threshold | None,
        response: str = "auto",
        sheppard: bool | Sequence[str] = False,
    ) -> DPRegressionResults:
        return self.fit_formula(estimator, formula, q, threshold, response, sheppard)[1]


def _effect_class(formula: str, cells: pd.DataFrame, bounds: dict, levels: dict) -> EffectClass | None:
    """The binning bias bound's class of coefficients from the columns' declared bounds
    (dpstats/mechanisms/histogram/binning_bias.py); None where a term has no range on the box (a log of a column
    whose bounds reach 0: the fit itself needs none)."""
    try:
        design, _ = build_design(formula, cells, bounds, levels)
    except ValueError:
        return None
    return EffectClass.of_design(design)


def noisy_histogram(
    data: pd.DataFrame,
    columns: Sequence[str],
    eps: float,
    *,
    bounds: Mapping[str, Sequence[float]] | None = None,
    levels: Mapping[str, Sequence] | None = None,
    bins: int | Mapping[str, int] | None = None,
    threshold: Threshold = "enhanced",
    bound_cells: bool | Sequence[str] = False,
    random_state: RandomState = None,
    missing: str = "impute",
    budget: Accountant | None = None,
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
        for the default (:func:`~dpstats.mechanisms.histogram.layout.default_bins`:
        the paper's rule undersmoothed for least squares' intervals;
        ``dp_quantreg(method="histogram")`` uses twice as many bins per axis,
        which quantile fits on this histogram get by passing them here).
    threshold : the fits' default: ``"enhanced"`` (``A log(n) / eps`` with
        A = 1/2, section 4.2), ``"nonnegative"`` (Algorithm 1'), ``"none"``
        (Algorithm 1) or a number A for ``A log(n) / eps``. A fit that a cut-off
        leaves failed falls back to ``"nonnegative"`` and says so.
    bound_cells : the numeric columns that get a cell of their own at each
        declared bound besides their bins (True: all of them; False, the
        default: none), so that rows at a bound (zeros, top codes, clipped
        values) are counted there, not at a bin's centre. Declare it for a
        column with a mass of rows at a bound: elsewhere those cells only hold
        noise (dpstats/mechanisms/histogram/layout.py).
    random_state : None (fresh OS entropy), an int, or a numpy Generator.
    missing : ``"impute"`` (the default: each bad cell gets the row-wise
        treatment of dpstats/frontend/cells.py) or ``"raise"`` (the curator's opt-in; its
        errors describe confidential data).
    budget : a :class:`~dpstats.privacy.budget.PrivacyBudget` the release is charged
        to (pure eps): refused before the data are touched when it could
        overspend it, recorded in its ledger once released.

    Neighbouring datasets differ in one row and have the same n (public).
    """
    eps = check_eps(eps)
    threshold = check_threshold(threshold)
    accountant = check_accountant(budget)
    if accountant is not None:
        accountant.check(PrivacySpent("pure", eps))
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
    ends = check_bound_cells(bound_cells, [c for c in columns if c not in declared_levels])
    layout = build_layout(
        columns, declared_bounds, declared_levels, bins, len(data), eps, ends=ends, threshold=threshold
    )
    rng = make_rng(random_state)
    frame = prepare_frame(data, columns, declared_bounds, declared_levels, missing)
    released = release_histogram(frame, layout, eps, threshold, rng, kind=NoisyHistogram)
    if accountant is not None:
        label = f"histogram of {', '.join(columns)}"
        accountant.record(released.privacy, formula=label, estimator="histogram", method=SPEC.name)
    return released

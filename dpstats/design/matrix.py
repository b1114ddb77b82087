"""The design handed to a mechanism, and the affine maps to and from unit scale.

A :class:`Design` holds the clipped response and design matrix of one call,
with the public metadata the mechanisms need (column bounds, n, term names).
It lives only for the duration of the call: nothing after the mechanism keeps
it (docs/DESIGN.md section 1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import numpy as np

from .survey import PSUs
from .units import Units

Total = TypeVar("Total")
Statistic = Callable[["Design"], Total]
"""A statistic of a design's rows that adds over disjoint chunks of them (sums, dpstats/design/moments.py)."""


@dataclass(frozen=True)
class Variables:
    """The formula's own variables in one call, for mechanisms that work on
    variables rather than on design columns (Lei 2011's perturbed histogram
    bins each variable, not each dummy or interaction column).

    ``frame`` holds the variables the formula uses after the front end's
    row-wise preparation (numeric ones clipped to their declared bounds,
    categorical ones as Categoricals with their declared levels), ``response``
    names those of the response; ``bounds`` and ``levels`` are the declared
    metadata. ``encode`` is a public map from rows of such variables (cell
    centres, say) to ``(y, X)`` with the design's columns: the formula
    evaluated elsewhere, so that a mechanism never imports the front end.
    A variable the formula uses only through one increasing invertible
    function (``np.log(wage)``) is held, bounded and encoded on that
    function's scale (dpstats/frontend/axes.py); ``response_axis`` names the
    variable whose column is the response itself on that scale (None where
    the response is another expression). ``integers`` are the numeric
    variables declared to take whole values only (one cell per value).
    Like the rest of the :class:`Design` it lives only for the duration of
    the call.
    """

    frame: Any
    response: tuple[str, ...]
    bounds: Mapping[str, tuple[float, float]]
    levels: Mapping[str, tuple]
    encode: Callable[[Any], tuple[np.ndarray, np.ndarray]]
    response_axis: str | None = None
    integers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Design:
    """Clipped data and public metadata of one regression call.

    ``x_bounds[j]`` and ``y_bounds`` are derived from the declared bounds only;
    every row of ``X`` and ``y`` lies inside them (the data were clipped).
    ``intercept_index`` is the column of ones, if the formula has one.
    ``one_hot_blocks`` are groups of columns of which every row has at most one
    1 and zeros elsewhere (treatment-coded categorical terms), known from the
    formula and the declared levels: public structure that sensitivities may
    use. ``variables`` (set by the formula front end, None for designs built
    from arrays) are the formula's variables before patsy coded them.

    A design whose rows stay elsewhere (the partitions of a Dask DataFrame,
    dpstats/distributed/dask_design.py) has ``y`` and ``X`` None, its public n in
    ``rows`` and ``chunks``, which sums a statistic over its partitions: a
    mechanism that supports it reads the rows only through :meth:`total`.

    ``units`` (None: the privacy unit is a row) gives every row's privacy unit
    when the call declared ``unit=`` and ``max_rows=`` (dpstats/design/units.py):
    the rows are already bounded to ``units.max_rows`` per unit.

    ``weights`` (None: every row weighs 1) are the rows' survey weights, clipped to
    ``weight_bounds``, their declared range (dpstats/frontend/weights.py): a row's
    contribution to a weighted sum moves by up to the upper bound times an
    unweighted row's. ``psus`` (None: every row is its own PSU) gives every row's
    PSU among a survey's declared PSUs and strata (dpstats/design/survey.py).
    """

    y: np.ndarray
    X: np.ndarray
    y_name: str
    term_names: tuple[str, ...]
    y_bounds: tuple[float, float] | None
    x_bounds: np.ndarray | None
    intercept_index: int | None
    one_hot_blocks: tuple[tuple[int, ...], ...] = ()
    variables: Variables | None = field(default=None, repr=False, compare=False)
    rows: int | None = None
    chunks: Callable[[Statistic], Any] | None = field(default=None, repr=False, compare=False)
    units: Units | None = field(default=None, repr=False, compare=False)
    weights: np.ndarray | None = field(default=None, repr=False, compare=False)
    weight_bounds: tuple[float, float] | None = None
    psus: PSUs | None = field(default=None, repr=False, compare=False)

    @property
    def n(self) -> int:
        """Number of rows: public under replace-one neighbours."""
        return int(self.X.shape[0]) if self.rows is None else int(self.rows)

    @property
    def n_columns(self) -> int:
        """Number of design columns, intercept included."""
        return len(self.term_names) if self.X is None else int(self.X.shape[1])

    def total(self, statistic: Statistic[Total]) -> Total:
        """``statistic`` of all the rows: of this design's rows, or added over the chunks of its rows."""
        return statistic(self) if self.chunks is None else self.chunks(statistic)

    def subset(self, rows: slice | np.ndarray) -> Design:
        """The design of some of its rows (public metadata unchanged)."""
        variables = self.variables
        if variables is not None:
            variables = replace(variables, frame=variables.frame.iloc[rows])
        units = None if self.units is None else self.units.subset(rows)
        weights = None if self.weights is None else self.weights[rows]
        psus = None if self.psus is None else self.psus.subset(rows)
        return replace(
            self, y=self.y[rows], X=self.X[rows], variables=variables, units=units, weights=weights, psus=psus
        )

    @property
    def slope_indices(self) -> np.ndarray:
        """Indices of the non-intercept columns."""
        return np.array([j for j in range(self.n_columns) if j != self.intercept_index], dtype=int)


@dataclass(frozen=True)
class CenteredUnitScale:
    """Affine map of every non-intercept column and of y onto [0, 1].

    With ``u_j = (x_j - lo_j) / w_j`` and ``v = (y - lo_y) / w_y``, a fit
    ``v = a + sum_j b_j u_j`` is, in the user's units,
    ``y = (lo_y + w_y a - sum_j s_j lo_j) + sum_j s_j x_j`` with
    ``s_j = w_y b_j / w_j``. The map is exact and needs an intercept.
    """

    x_lo: np.ndarray
    x_width: np.ndarray
    y_lo: float
    y_width: float

    @classmethod
    def from_design(cls, design: Design) -> CenteredUnitScale:
        """Scale from the design's declared (derived) bounds."""
        slopes = design.slope_indices
        bounds = design.x_bounds[slopes]
        return cls(
            x_lo=bounds[:, 0].astype(float),
            x_width=(bounds[:, 1] - bounds[:, 0]).astype(float),
            y_lo=float(design.y_bounds[0]),
            y_width=float(design.y_bounds[1] - design.y_bounds[0]),
        )

    def transform(self, design: Design) -> tuple[np.ndarray, np.ndarray]:
        """The slope columns and y on the unit scale (row-wise map: free)."""
        U = (design.X[:, design.slope_indices] - self.x_lo) / self.x_width
        v = (design.y - self.y_lo) / self.y_width
        return U, v

    def jacobian(self) -> np.ndarray:
        """Matrix A with ``theta_user[[intercept, slopes...]] = A @ (a, b) + c``."""
        p = self.x_lo.size
        scale = self.y_width / self.x_width
        A = np.zeros((p + 1, p + 1))
        A[0, 0] = self.y_width
        A[0, 1:] = -scale * self.x_lo
        A[1:, 1:] = np.diag(scale)
        return A

    def offset(self) -> np.ndarray:
        """Vector c of :meth:`jacobian`."""
        c = np.zeros(self.x_lo.size + 1)
        c[0] = self.y_lo
        return c


def place_coefficients(design: Design, intercept: float, slopes: np.ndarray) -> np.ndarray:
    """Put an intercept and slopes back in the design's column order."""
    params = np.empty(design.n_columns)
    params[design.slope_indices] = slopes
    if design.intercept_index is not None:
        params[design.intercept_index] = intercept
    return params

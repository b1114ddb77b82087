"""A bound on the binning bias of least squares on a perturbed histogram (issue 45): post-processing only.

Lei (2011) fits at the cells of the released histogram, so the estimate is
least squares on binned data; its Theorem 3 bounds the bias by the bins'
width. The results layer widens each interval by a per-coefficient bound
``B_j`` on that bias and calls the fit "biased" where a bound exceeds its
standard error (Armstrong & Kolesár 2020; dpstats/uncertainty/bias.py). This
module computes ``B_j`` from the release alone: the cells' boxes and public
``encode`` map (their quadratics, dpstats/mechanisms/histogram/cell_models.py),
the fit's points and weights, its estimate and covariance
(dpstats/mechanisms/histogram/inference.py), and the declared ranges.

**The bias.** Let cell r hold ``n_r`` rows and the fit put it at the point
``p_r`` with weight ``W_r`` (the noisy count; its noise and that of the
points are the bootstrap's, inference.py), ``A = sum_r W_r z(p_r) z(p_r)' -
C`` the fit's cross-product matrix (``C`` Sheppard's correction, 0 by
default), ``beta`` least squares on the rows, ``u = y - z'beta`` and
``zeta_j = e_j' A^{-1} z`` the design seen through the fit's bread. The
rows' normal equations ``sum_i z_i u_i = 0`` against the fit's give, with
no approximation::

    beta^_j - beta_j = -sum_r n_r [zeta-bar_jr eta_r + u(p_r) a_jr + Cov_r(zeta_j, u)] + e_j' A^{-1} C beta

where over the rows of cell r ``zeta-bar_jr`` is the mean of ``zeta_j``,
``a_jr = zeta-bar_jr - zeta_j(p_r)`` and ``eta_r = u-bar_r - u(p_r)`` are
the gaps between a mean and the value at the point, and ``Cov_r`` is the
rows' covariance. At the cells' noisy means (the default,
dpstats/mechanisms/histogram/cell_means.py) the gaps of terms linear in the
binned variables vanish, and what is left is the within-cell covariance of
the design with the residual (a cell bins y too, which is what makes it non-zero)
and, for curved terms (``I(x**2)``, interactions), the gaps ``1/2 tr(H Sigma_r)``.
At the centres (``moment_share=0``, ``noisy_histogram``) a cell's mean can be
anywhere in it, and the gaps are of the order of the bins' width, as in Lei's
Theorem 3: on 3,000 simulated rows of ``y ~ x + z + C(g)`` (5 to 8 bins an
axis) the bound there was 100 to 1,000 standard errors, 90 to 500 times the
realized error, so such a fit is "biased" with intervals that say how little
the centres pin down.

**The class** over which the bound holds, in the spirit of Armstrong &
Kolesár's smoothness classes (a bound over arbitrary data within a cell,
rows piled on its corners, was 10 to 20 times the realized bias on the
simulated designs of dpstats/uncertainty/coverage.py, 0.4 to 4 standard
errors, which labels nearly every fit "biased"):

1. *Coefficients.* Every linear function ``g'beta`` the bound needs (the
   fitted function's change across a cell, its value at a point) lies within
   ``SE_MULTIPLE`` standard errors of ``g'beta^`` under the release's
   covariance, and within what the package's class allows: unit-scale slopes
   of at most ``EFFECT_BOUND`` (dpstats/uncertainty/bias.py), that is
   ``|beta_k| <= EFFECT_BOUND range(y) / range(z_k)`` over the declared
   ranges. Without a covariance (a failed interval) the class alone. The
   estimate's own bias is allowed for: ``g'beta^`` may sit a further
   ``sum_k |(A^{-1} g)_k| S_k`` from ``g'beta``, ``S`` the bound on the
   normal equations' discrepancy per column, taken at the smallest fixed
   point of the bound (3 to 10 rounds on the real regressions; beyond
   ``FIXED_POINT_ROUNDS``, the class alone). Without it SwissLabor's income
   at eps = 1 was 14 standard errors off with a bound of 5: its set, around
   an estimate the bias had moved, left the truth out. ``SE_MULTIPLE`` 1
   instead of 3 labelled 0.929 of the real fits below instead of 0.946.
2. *Spread.* Along each binned axis a cell's rows have a variance of at most
   ``VARIANCE`` in the normalised position ``tau`` in [-1, 1]: 1/3, a uniform
   spread over the bin (Sheppard's ``h^2 / 12``; the largest variance of a
   density monotone across the bin). Popoviciu's 1 holds for any rows but
   trebles the bound; Bhatia & Davis's ``(1 - m)(1 + m)`` needs the cell's
   true mean ``m``, of which the release holds a noisy, shrunk one, and is
   below 1/3 only within a tenth of a bin of its edge. Pooled over the cells
   of the real regressions of benchmarks/real_regressions.py the variance
   was 0.02 to 0.34.
3. *Dependence.* Within a cell the positions along two axes have a
   correlation of at most ``CORRELATION`` in absolute value (measured on
   those regressions: at most 0.40 between regressors, HousePrices' bedrooms
   and stories in 2 bins; it vanishes as bins refine under a smooth density).
4. *Response.* Within a cell the response's conditional mean given the
   regressors follows the fitted function at a rate between 0 and 1:
   ``Cov_r(zeta, u) = -d_r Cov_r(zeta, f)``, ``f = z'beta``, ``d_r`` in
   [0, 1]. It holds where the model is right and its error, independent of
   the regressors with a log-concave density, is truncated to the cell's
   response bin: a window moved by ``s`` moves the truncated mean by
   between 0 and ``s`` (its translates are ordered by likelihood ratio;
   Bagnoli & Bergstrom 2005). ``d_r = 1`` where the bin is narrow next to
   the error (the response is constant in the cell: the regressors' spread
   attenuates as Sheppard's does), ``d_r = 0`` where it is wide (engel's
   coarse cells). A response of several binned variables, or one that a
   regressor uses too, is bounded by Cauchy-Schwarz with its own spread
   instead.

(``VARIANCE`` and ``CORRELATION`` are in dpstats/mechanisms/histogram/cell_spread.py, with the interval
arithmetic over a cell's quadratics that this bound and the logit's and probit's share.) Each cell's share
is then bounded over the class separately (no cancellation
across cells): the covariances from the quadratics' gradients with variances
in ``[0, VARIANCE]`` and cross-covariances within ``CORRELATION``
(Cauchy-Schwarz, with Popoviciu's bounds, for the quadratic parts), the gaps
from the curvatures; the bound is the larger end of the interval the sum
lies in.

**Measured.** In the limit without noise (eps = 1e9 at a layout's bins) the
bound was never below the realized bias against OLS: 1.3 to 1.9 times it on
the simulated designs at 8 and 17 bins (1.5 to 6.5 at 5), and 3 to 3,000
times it at the real regressions' default layouts for eps 0.5 to 5 (2 to 15
bins an axis; engel 8-342, CPS1985 24-1,229, CPS1988 2.9-16, HousePrices
449-3,247, SwissLabor 61-901, whose realized biases are 0.3 to 8 OLS
standard errors): coarse bins leave the class's worst cases far from these
data (tests/test_histogram_bias_bound.py checks engel and a coarse
response). benchmarks/bench_coverage.py (500 data sets a cell, least
squares): the intervals covered in 0.932-0.982 at 1.08 to 1.51 times the
estimates' spread, against 0.932-0.978 at 1.08 to 1.44 without the bound
(its misses are all above 0.975; the bound is 0.04 to 0.54 standard errors
there, 120 of 120 fits "ok"). benchmarks/bench_real_data.py (20 seeds, eps 0.5 to
5, engel, CPS1985, CPS1988, HousePrices, SwissLabor): the widened intervals
covered OLS's strong coefficients in 0.990 (0.833 without the bound); 0.946
of the fits were "biased" (1.000 before), 0.616 of those more than 2
standard errors off. A bound equal to the realized bias at each fit's layout
would have labelled 0.340 of them, 0.881 of those more than 2 standard
errors off: the class's slack (variances, correlations and the response's
rate at their worst in every cell, coefficients 3 standard errors and the
bias away) is what labels CPS1985, HousePrices and engel's coarse layouts.

**Quantile fits carry no bound** (``Release.bias_bound`` None: the bias is
named, and the fit says "biased"). A quantile fit's estimating equation
spreads each cell's rows uniformly over its response bin
(dpstats/mechanisms/histogram/weighted_fits.py); its binning error is the
gap between the rows' distribution of the response inside the cells the
fitted quantile crosses and that uniform spread, divided by the density at
the quantile. It is first order in the bins' width: the release holds a
cell's mean, not the shape of its rows, and a class of shapes that made the
bound small next to the standard errors would be the uniform spread the fit
already assumes. A logit or probit with a 0/1 response, constant within a
cell, has its own bound: dpstats/mechanisms/histogram/binary_binning_bias.py
(the identity above with the link's score factor in the place of ``u`` and
the fit's information as the bread, to first order: a delta-method bound;
this module's spreads, correlations, coefficient set and fixed point, the set
widened per coefficient). A fractional response would need class 4 for a
probability model, and carries none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ...design.matrix import Design
from ...uncertainty.bias import EFFECT_BOUND, box_reach
from . import cell_spread as within
from .cell_means import Encode
from .cell_models import CellModels, cell_models
from .cell_spread import (
    Interval,
)
from .layout import HistogramLayout

SE_MULTIPLE = 3.0
"""The coefficient set of the class: this many standard errors around the estimate (module docstring, 1)."""
FIXED_POINT_ROUNDS = 30
"""The most rounds of the bound's fixed point before it falls back to the class alone (least_squares_bound)."""
FIXED_POINT_TOLERANCE = 1e-3
"""A round that moves no bound by more than this share of it ends the fixed point."""


@dataclass(frozen=True)
class EffectClass:
    """The package's class of coefficients in a design's units (module docstring, 1): every column's largest
    absolute coefficient (infinite where the class says nothing: the intercept, or ranges not declared) and the
    largest residual ``|y - z'beta|`` at a point of the box."""

    limits: np.ndarray
    residual: float

    @classmethod
    def of(cls, column_ranges: np.ndarray, response_range: float, intercept: bool) -> EffectClass:
        """From the design columns' and the response's declared ranges: ``|beta_k| <= EFFECT_BOUND range(y) /
        range(z_k)``; with an intercept least squares passes through the rows' means, so a residual is at most
        ``range(y) (1 + EFFECT_BOUND q)`` for q columns with a range."""
        ranges = np.asarray(column_ranges, dtype=float)
        sloped = ranges > 0
        with np.errstate(divide="ignore"):
            limits = np.where(sloped, EFFECT_BOUND * response_range / np.where(sloped, ranges, 1.0), np.inf)
        residual = response_range * (1.0 + EFFECT_BOUND * int(sloped.sum())) if intercept else np.inf
        return cls(limits, float(residual))

    @classmethod
    def of_design(cls, design: Design) -> EffectClass | None:
        """From a design's declared (derived) ranges; None where it has none."""
        if design.x_bounds is None or design.y_bounds is None:
            return None
        x_bounds = np.asarray(design.x_bounds, dtype=float)
        response = float(design.y_bounds[1] - design.y_bounds[0])
        return cls.of(x_bounds[:, 1] - x_bounds[:, 0], response, design.intercept_index is not None)

    @classmethod
    def unknown(cls, p: int) -> EffectClass:
        """No declared ranges: the class says nothing (the set is the estimate's standard errors alone)."""
        return cls(np.full(p, np.inf), np.inf)


@dataclass(frozen=True)
class CoefficientSet:
    """The coefficients of the class (module docstring, 1): the estimate, its covariance (NaN or infinite where
    none was released), the class, and the estimate's bias allowed for: ``A^{-1} s`` with every entry of the
    normal equations' discrepancy ``s`` at most ``score_bias`` in absolute value (found as a fixed point,
    :func:`least_squares_bound`; infinite for the class alone), ``bread_inverse`` the fit's ``A^{-1}``."""

    params: np.ndarray
    cov: np.ndarray
    effects: EffectClass
    bread_inverse: np.ndarray | None = None
    score_bias: np.ndarray | None = None

    def interval(self, rows: np.ndarray) -> Interval:
        """Where ``rows @ beta`` lies (``rows``: ... x p), elementwise: within ``SE_MULTIPLE`` standard errors and
        the bias of ``rows @ beta^``, and within the class."""
        centre = rows @ self.params
        with np.errstate(invalid="ignore"):
            spread = np.sqrt(np.maximum(np.einsum("...i,ij,...j->...", rows, self.cov, rows), 0.0))
        spread = SE_MULTIPLE * np.where(np.isfinite(spread), spread, np.inf)
        if self.score_bias is not None:
            spread = spread + box_reach(rows @ self.bread_inverse, self.score_bias)
        reach = box_reach(rows, self.effects.limits)
        lo, hi = np.maximum(centre - spread, -reach), np.minimum(centre + spread, reach)
        empty = lo > hi  # the estimate is outside the class: the class alone
        return np.where(empty, -reach, lo), np.where(empty, reach, hi)

    def residual(self, points: np.ndarray) -> Interval:
        """Where ``u(p) = y(p) - z(p)'beta`` lies at each point (``points``: cells x (1 + p))."""
        lo, hi = self.interval(points[:, 1:])
        cap = self.effects.residual
        return np.maximum(points[:, 0] - hi, -cap), np.minimum(points[:, 0] - lo, cap)


@dataclass(frozen=True)
class BinnedCells:
    """What a fit's bound reads of its cells: the binned axes (the numeric ones of positive width; a level's or
    a whole number's rows sit at the cell's value, a bound's cell is a point), which cells it keeps (positive
    weight), their centres and levels, their quadratics (cell_models.py), and, per axis, whether the fit's
    points sit at the cells' noisy means along it (else at the centres)."""

    axes: list[str]
    kept: np.ndarray
    centres: pd.DataFrame
    models: CellModels
    means: np.ndarray

    @classmethod
    def of(
        cls,
        layout: HistogramLayout,
        names: Sequence[str],
        encode: Encode,
        cells: pd.DataFrame,
        weights: np.ndarray,
        mean_axes: Sequence[str],
    ) -> BinnedCells:
        """The cells of ``names`` (centres and levels in ``cells``) with ``weights``, their points at the noisy
        means along ``mean_axes``."""
        axes = [a.name for a in layout.axes if a.name in names and not a.categorical and not a.integer]
        kept = weights > 0
        half = {a: 0.5 * layout.cell_widths(names, a)[kept] for a in axes}
        centres = cells[kept].reset_index(drop=True)
        means = np.array([a in mean_axes for a in axes], dtype=bool)
        return cls(axes, kept, centres, cell_models(encode, centres, axes, half), means)


def fit_bias_bound(
    binned: BinnedCells,
    points: np.ndarray,
    weights: np.ndarray,
    coefficients: CoefficientSet,
    correction: np.ndarray | None = None,
) -> np.ndarray:
    """``B_j`` of a least-squares fit on the ``binned`` cells at ``points`` (the response and design row per
    cell) with ``weights`` (module docstring)."""
    X = points[:, 1:]
    bread = X.T @ (weights[:, None] * X) - (0.0 if correction is None else correction)
    kept = binned.kept
    return least_squares_bound(
        binned.models, points[kept], weights[kept], np.linalg.inv(bread), coefficients, binned.means, correction
    )


def least_squares_bound(
    models: CellModels,
    points: np.ndarray,
    weights: np.ndarray,
    bread_inverse: np.ndarray,
    coefficients: CoefficientSet,
    means: np.ndarray,
    correction: np.ndarray | None = None,
) -> np.ndarray:
    """``B_j`` for every coefficient (module docstring): infinite where the cells' quadratics are not finite.

    ``models`` and ``points`` (cells x (1 + p): the response and design row at each fit point) are those of
    the cells with positive weight, ``weights`` their weights; ``bread_inverse`` is ``A^{-1}``; ``means``
    says, per axis of ``models``, whether the points sit at the cells' noisy means along it (else at the
    centres); ``correction`` is Sheppard's ``C`` (p x p) or None. The coefficient set allows for the bias it
    bounds: the bound is the smallest fixed point of ``B = F(B)``, ``F`` the bound over the set widened by
    ``B`` (module docstring, 1), reached from ``B = 0`` by ``FIXED_POINT_ROUNDS`` at most; beyond them, the
    bound over the class alone.
    """
    if not models.finite:
        return np.full(bread_inverse.shape[0], np.inf)

    def bound(rows: np.ndarray, allowed: CoefficientSet) -> np.ndarray:
        return _bound(models, points, weights, rows, allowed, means, correction)

    return bound_with_own_bias(bound, coefficients, bread_inverse)


def bound_with_own_bias(
    bound: Callable[[np.ndarray, CoefficientSet], np.ndarray],
    coefficients: CoefficientSet,
    bread_inverse: np.ndarray,
    per_coefficient: bool = False,
) -> np.ndarray:
    """The smallest fixed point of the bound over a coefficient set that allows for the bias it bounds (module
    docstring, 1). ``bound(rows, allowed)`` bounds ``|r' A (beta^ - beta)|`` for every row r of ``rows`` over the
    set ``allowed``: for the identity, the estimating equations' discrepancy per column; for ``A^{-1}``
    (``bread_inverse``), the coefficients' bias. The set is widened by the discrepancy seen through ``A^{-1}``
    or, ``per_coefficient``, by the coefficients' own bounds (a box: no column's discrepancy is spread over the
    others through ``A^{-1}``). From 0, at most ``FIXED_POINT_ROUNDS`` rounds; beyond them, the class alone."""
    p = bread_inverse.shape[0]
    rows, through = (bread_inverse, np.eye(p)) if per_coefficient else (np.eye(p), bread_inverse)
    discrepancy = np.zeros(p)
    for _ in range(FIXED_POINT_ROUNDS):
        allowed = replace(coefficients, bread_inverse=through, score_bias=discrepancy)
        step = bound(rows, allowed)
        if np.all(step <= discrepancy * (1.0 + FIXED_POINT_TOLERANCE)):
            break
        discrepancy = step
    else:  # no fixed point within the rounds: the class alone
        allowed = replace(coefficients, bread_inverse=through, score_bias=np.full(p, np.inf))
    return bound(bread_inverse, allowed)


def _bound(
    models: CellModels,
    points: np.ndarray,
    weights: np.ndarray,
    rows: np.ndarray,
    coefficients: CoefficientSet,
    means: np.ndarray,
    correction: np.ndarray | None,
) -> np.ndarray:
    """The bound on ``|r' A (beta^ - beta)|`` for every row r of ``rows``, the bias of ``r' A beta^``, over the
    coefficient set: the discrepancy of the normal equations for the rows of the identity, the coefficients'
    bias for those of ``A^{-1}`` (module docstring)."""
    cells = _CellTerms.of(models, points, coefficients, means)
    bound = np.empty(rows.shape[0])
    for j, row in enumerate(rows):
        lo, hi = cells.share(row)
        lo, hi = -(weights @ hi), -(weights @ lo)
        if correction is not None:
            c_lo, c_hi = coefficients.interval(correction @ row)
            lo, hi = lo + c_lo, hi + c_hi
        bound[j] = max(abs(lo), abs(hi))
    return np.where(np.isnan(bound), np.inf, bound)


@dataclass(frozen=True)
class _CellTerms:
    """What every coefficient's bound shares: the fitted function's and the response's terms per cell."""

    models: CellModels
    points: np.ndarray
    means: np.ndarray
    f_gradient: Interval
    residual: Interval
    eta: Interval
    f_sd: np.ndarray
    f_quadratic_sd: np.ndarray
    y_sd: np.ndarray | None

    @classmethod
    def of(cls, models: CellModels, points: np.ndarray, coefficients: CoefficientSet, means: np.ndarray):
        """The terms of the fitted function ``f = z'beta`` over the coefficient set, and of the response."""
        gradient = coefficients.interval(models.gradient[..., 1:])
        curvature = coefficients.interval(models.curvature[..., 1:])
        mixed = coefficients.interval(models.mixed[..., 1:])
        f_gap = within.gap(curvature, mixed, models, means, gradient)
        y_gradient, y_curvature, y_mixed = (c[..., 0] for c in (models.gradient, models.curvature, models.mixed))
        y_gap = within.gap(within.point(y_curvature), within.point(y_mixed), models, means, within.point(y_gradient))
        y_sd = within.linear_sd(np.abs(y_gradient)) + within.quadratic_sd(np.abs(y_curvature), np.abs(y_mixed))
        return cls(
            models=models,
            points=points,
            means=means,
            f_gradient=gradient,
            residual=coefficients.residual(points),
            eta=(y_gap[0] - f_gap[1], y_gap[1] - f_gap[0]),
            f_sd=within.linear_sd(within.absmax(gradient)),
            f_quadratic_sd=within.quadratic_sd(within.absmax(curvature), within.absmax(mixed)),
            y_sd=None if _response_follows(models) else y_sd,
        )

    def share(self, row: np.ndarray) -> Interval:
        """Where each cell's ``zeta-bar eta + u(p) a + Cov(zeta, u)`` lies for ``zeta = row' z``."""
        zeta = within.row_terms(self.models, self.points, self.means, row)
        sd = zeta.linear_sd + zeta.quadratic_sd
        lo, hi = within.covariance(zeta, self.f_gradient, self.f_sd, self.f_quadratic_sd)  # Cov(zeta, f)
        if self.y_sd is None:  # class 4: -d Cov(zeta, f), d in [0, 1]
            covariance = (-np.maximum(hi, 0.0), -np.minimum(lo, 0.0))
        else:
            spread = sd * self.y_sd
            covariance = (-hi - spread, -lo + spread)
        first = within.product((zeta.value + zeta.gap[0], zeta.value + zeta.gap[1]), self.eta)
        second = within.product(self.residual, zeta.gap)
        return first[0] + second[0] + covariance[0], first[1] + second[1] + covariance[1]


def _response_follows(models: CellModels) -> bool:
    """Whether class 4 applies: the response varies along at most one axis, which no design column uses."""
    moves = np.any(models.gradient[..., 0] != 0, axis=0) | np.any(models.curvature[..., 0] != 0, axis=0)
    for (a, b), plane in zip(models.pairs, np.any(models.mixed[..., 0] != 0, axis=0), strict=True):
        moves[[a, b]] |= plane
    if moves.sum() > 1:
        return False
    used = np.any(models.gradient[..., 1:] != 0, axis=(0, 2)) | np.any(models.curvature[..., 1:] != 0, axis=(0, 2))
    return not np.any(moves & used)

"""A bound on the binning bias of a logit or probit on a perturbed histogram (issue 45): post-processing only.

The least-squares bound (dpstats/mechanisms/histogram/binning_bias.py: its
class of within-cell spreads, correlations and coefficients, the cells'
quadratics of dpstats/mechanisms/histogram/cell_models.py, the interval
arithmetic and the fixed point) carried over to the weighted MLE of a 0/1
response (dpstats/mechanisms/histogram/binary_response.py: the response is an
axis of two cells, so it is constant within a cell). The inputs are the
release's: the cells' boxes and points, the weights, the estimate and its
covariance, and the public ``encode`` map; never the rows.

**The bias, to first order.** Let ``g(y, eta) = d loglik / d eta`` be the
link's score factor (``y - F(eta)`` for the logit; ``phi (y - Phi) / (Phi (1 -
Phi))`` for the probit, dpstats/glm/links.py) and ``kappa = -dg / d eta``
its curvature (``F'`` for the logit; the probit's observed one, in (0, 1)).
The fit solves ``psi^(b) = sum_r W_r z_r g(y_r, z_r'b) = 0`` at the cells'
points ``p_r``, the rows' MLE ``beta`` solves ``sum_i z_i g(y_i, z_i'beta) =
0``. One Newton step, ``beta^ - beta ~ A^{-1} psi^(beta)`` with ``A = sum_r W_r
kappa(y_r, z_r'beta^) z_r z_r'`` the fit's observed information at its
estimate (the Fisher information for the logit; the bread of
binary_inference.py), and with the counts' noise dropped (``W_r = n_r``: the
bootstrap's), gives for ``zeta_j = e_j' A^{-1} z`` and ``eta = z'beta``::

    beta^_j - beta_j ~ -sum_r n_r [zeta-bar_jr J_r + a_jr g(y_r, eta(p_r)) + Cov_r(zeta_j, g(y_r, eta))]

with ``J_r = mean_r g(y_r, eta) - g(y_r, eta(p_r))`` the Jensen gap of the
score factor over the cell's rows and ``a_jr = zeta-bar_jr - zeta_j(p_r)`` as
in the least-squares identity (0 for terms linear in the binned axes at the
cells' means). It is exact but for the linearisation: a first-order
(delta-method) bound, as the standard errors are, whose neglected term is
quadratic in ``beta^ - beta``.

**The bound per cell**, with ``y_r`` fixed, ``V_r`` the largest within-cell
variance of ``eta`` and ``G_r`` the largest gap ``eta-bar - eta(p_r)`` over
the class (binning_bias.py's, 2 and 3, and its coefficient set, 1), ``R_r``
the range of ``eta`` over the cell (its value at the cell's centre over the
set, plus the quadratic's reach from the centre, ``sum |G_a| + 1/2 sum
|K_aa| + sum |K_ab|``; the point is inside the cell), ``m_r = V_r + G_r^2``
(at least ``mean_r (eta - eta(p_r))^2``), ``L_r`` and ``k_r`` the largest
and smallest ``kappa`` over ``R_r``, ``s_r <= s'_r`` the smallest and largest
``kappa'`` there (``|kappa| <= 1/4`` and ``|kappa'| <= 1 / (6 sqrt 3)`` for
the logit; ``kappa < 1`` and ``|kappa'| <= 0.2957``, at ``eta = 1.0024``, for
the probit's observed curvature at ``y = 1``; extremes over an interval from
its ends and the curves' peaks, :func:`curve_extremes`):

* Jensen, by Taylor about ``eta(p)``: ``J = -kappa(eta(p)) (eta-bar -
  eta(p)) + e``, ``e = 1/2 mean g''(xi) (eta - eta(p))^2`` in ``[min(0,
  -s'_r), max(0, -s_r)] m_r / 2`` (one-signed where ``g`` is convex or
  concave over the cell: always for the probit); and, by the mean value,
  ``|J| <= L_r sqrt(m_r)`` and at most the range of ``g`` over ``R_r``.
* The covariance: ``g(eta) - g(eta(p)) = -k(x) (eta - eta(p))`` with ``k``
  in ``[k_r, L_r]``, so ``Cov(zeta, g) = -k_mid Cov(zeta, eta) + d`` with
  ``k_mid`` the middle of that interval and ``|d| <= sd(zeta) (L_r - k_r) / 2
  sqrt(m_r)``, ``Cov(zeta, eta)`` over the class as least squares bounds
  ``Cov(zeta, f)``; and, as ``g`` is ``L_r``-Lipschitz on ``R_r``,
  ``|Cov(zeta, g)| <= sd(zeta) min(L_r sd(eta), range(g) / 2)`` (Popoviciu).
  The least squares' class 4 (the response's rate ``d_r``) is not needed:
  the response is constant in the cell, and ``kappa`` is the rate.

The terms are second order in the bins' width, as the least-squares bound at
the cells' means; at the centres (``moment_share=0``) the gaps are first
order. Each cell's share is bounded on its own (no cancellation across
cells), as for least squares.

**The fixed point** that lets the coefficient set allow for the bias it
bounds is binning_bias.py's (:func:`~.binning_bias.bound_with_own_bias`),
with the set widened by each coefficient's own bound (``per_coefficient``)
rather than by the estimating equations' discrepancy seen through
``A^{-1}``: the score's columns (education's and age's on CPSSW8) carry
discrepancies of 10^4 that ``|A^{-1}|`` spreads onto every coefficient, and
at eps = 1 the set's education slope went from 0.2 to 3.5 in one round
(bound 54 on the intercept, 250 standard errors, against 8.6 per
coefficient). The logit's bound is bounded in the set (``|g| <= 1``), so its
fixed point always exists; the probit's score grows with the index, and
where the first round's bound is large next to the set (a few bins an axis)
the rounds diverge and the bound is infinite (the set alone says nothing).

**The class on the index scale.** The package's class bounds a slope's move
of the response across its term's declared range (``EFFECT_BOUND`` times
y's range, dpstats/uncertainty/bias.py). A probability moves by at most 1
whatever the index does, so read on the response the class bounds nothing;
read at the link's steepest point (``|b_k| range(z_k) <= EFFECT_BOUND / sup
F'``, 8 for the logit, 5.0 for the probit) it excludes real fits: SwissLabor's
participation logit has income at 8.8 and its age pair at 15.5 and -18.7 on
that scale (the probit 5.3, 9.3, -11.3). So a binary fit's set is its
standard errors and its own bias alone (``EffectClass.unknown``), and where
they are wide the link's own bounds (``kappa <= L``, the range of ``g``)
keep the bound finite for the logit; a probit's score factor is unbounded
(the inverse Mills ratio), so without a covariance its bound is infinite.

A fractional response (binned, with a cell at each bound) varies within a
cell; the identity would need the least squares' class 4 for a probability
model, and it carries no bound (None: the fit says "biased").

**Measured.** Without noise (eps = 1e9; tests/test_histogram_binary_bias_bound.py)
the bound was never below the realized gap to statsmodels' Logit and Probit:
1.9 to 830 times it on a simulated design at 16 to 3 bins an axis (the gap
0.5 to 13 standard errors), 5 to 1,800 times it on CPSSW8's earnings above
the median at 10 to 4 bins (2.3 to 11 standard errors), 44 to 600 times it on
SwissLabor's participation (at most 1.3 standard errors; 75 standard errors
of bound: five binned regressors in 3 to 5 bins, a quadratic in age). At
CPSSW8's default layout without noise (111 bins) it is 0.06 standard errors
and the fit is "ok". benchmarks/bench_histogram_binary_bias.py (10 seeds,
``method="histogram"``, the logit): every fit at eps 0.5 to 20 was "biased";
at eps 0.5 to 5, 0.8 to 1.0 of them (CPSSW8) and all of them (SwissLabor) sat
more than 2 of their standard errors from Logit, so the label was earned,
while at CPSSW8's eps 10 and 20 (bound 2.9 and 1.5 standard errors; 17 bins
an axis at eps 10) none did. The widened intervals covered all 750 of Logit's
coefficients (0.61 to 1.00 per cell without the bound). The probit's bound was
infinite at CPSSW8's eps 0.5 and on SwissLabor (its fixed point), and 1.2 to
24 standard errors elsewhere. The bound doubles a fit's time (0.07-0.12 s to
0.12-0.29 s). The class's worst cases in every cell (a uniform spread over
the bin, correlations of 0.5, no cancellation across cells) are what is
left: round 0 of the fixed point is 0.87 of the final bound on CPSSW8 at
eps = 10.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from ...glm.links import Link, get_link
from . import cell_spread as within
from .binning_bias import (
    BinnedCells,
    CoefficientSet,
    Interval,
    bound_with_own_bias,
)
from .cell_means import Encode
from .cell_models import CellModels
from .weighted_fits import MAX_CONDITION

FAR = 30.0
"""Beyond ``|eta| = FAR`` a curve's extremes are its suprema (and 0), not evaluated."""


@dataclass(frozen=True)
class ScoreCurve:
    """The ``y = 1`` side of a link's score factor ``g``, its curvature ``kappa = -g'`` and ``kappa'``; the
    ``y = 0`` side mirrors it, ``g(0, eta) = -g(1, -eta)`` and ``kappa(0, eta) = kappa(1, -eta)``.

    ``kappa_sup`` and ``slope_sup`` are the suprema of ``kappa`` and ``|kappa'|`` over the line; every interior
    local maximum of ``kappa`` lies in ``kappa_peaks`` and every one of ``|kappa'|`` in ``slope_peaks``
    (tests/test_histogram_binary_bias_bound.py checks them on a grid)."""

    name: str
    kappa_sup: float
    slope_sup: float
    kappa_peaks: tuple[float, ...]
    slope_peaks: tuple[float, ...]

    def score(self, eta: np.ndarray) -> np.ndarray:
        """``g(1, eta)`` (dpstats/glm/links.py): decreasing, from ``g(1, -inf)`` (1 for the logit, infinite for the
        probit) to 0."""
        eta = np.asarray(eta, dtype=float)
        with np.errstate(invalid="ignore", over="ignore"):
            score = get_link(self.name).score_factor(1.0, eta)
        score = np.where(eta == np.inf, 0.0, score)  # the link's other side is 0 x inf there
        return np.where(eta == -np.inf, 1.0 if self.name == "logit" else np.inf, score)

    def kappa(self, eta: np.ndarray) -> np.ndarray:
        """``kappa(1, eta)`` for finite ``eta`` (dpstats/glm/links.py)."""
        return get_link(self.name).curvature(1.0, eta)

    def kappa_slope(self, eta: np.ndarray) -> np.ndarray:
        """``kappa'(1, eta)`` for finite ``eta``: ``kappa (1 - 2F)`` for the logit, ``lambda - kappa (2 lambda +
        eta)`` for the probit (``lambda`` the Mills ratio, ``lambda' = -kappa``)."""
        if self.name == "logit":
            return self.kappa(eta) * (special.expit(-eta) - special.expit(eta))
        mills = self.score(eta)
        return mills - self.kappa(eta) * (2.0 * mills + eta)


PROBIT_SLOPE_PEAK = 1.0023696
"""Where the probit's ``|kappa'(1, .)|`` peaks (the grid and scipy's minimize_scalar agree to 1e-6)."""
CURVES = {
    "logit": ScoreCurve("logit", 0.25, 1.0 / (6.0 * math.sqrt(3.0)), (0.0,), (-math.log(2.0 + math.sqrt(3.0)),
                        math.log(2.0 + math.sqrt(3.0)))),
    "probit": ScoreCurve("probit", 1.0, 0.2957189, (), (PROBIT_SLOPE_PEAK,)),
}  # fmt: skip
"""The curves of dpstats/glm/links.py's links (the probit's ``slope_sup`` is its value at the peak, rounded up)."""


def curve_extremes(curve: ScoreCurve, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Over ``eta`` in ``[lo, hi]`` (``y = 1``, elementwise): the smallest and largest ``kappa`` and the largest
    ``|kappa'|``, from the ends and the peaks inside; an interval reaching beyond ``FAR`` takes 0 and the
    suprema."""
    far = (lo < -FAR) | (hi > FAR)
    a, b = np.clip(lo, -FAR, FAR), np.clip(hi, -FAR, FAR)
    ends = [curve.kappa(a), curve.kappa(b)]
    k_min = np.minimum(*ends)  # no interior minimum: kappa is unimodal or monotone
    k_max = np.max([*ends, *(curve.kappa(np.clip(peak, a, b)) for peak in curve.kappa_peaks)], axis=0)
    slopes = [np.abs(curve.kappa_slope(x)) for x in (a, b, *(np.clip(peak, a, b) for peak in curve.slope_peaks))]
    slope = np.max(slopes, axis=0)
    return np.where(far, 0.0, k_min), np.where(far, curve.kappa_sup, k_max), np.where(far, curve.slope_sup, slope)


def slope_extremes(curve: ScoreCurve, lo: np.ndarray, hi: np.ndarray) -> Interval:
    """The smallest and largest ``kappa'`` over ``eta`` in ``[lo, hi]`` (``y = 1``): its local extrema are the
    peaks of ``|kappa'|``; beyond ``FAR``, ``-+ slope_sup``."""
    far = (lo < -FAR) | (hi > FAR)
    a, b = np.clip(lo, -FAR, FAR), np.clip(hi, -FAR, FAR)
    values = [curve.kappa_slope(x) for x in (a, b, *(np.clip(peak, a, b) for peak in curve.slope_peaks))]
    return np.where(far, -curve.slope_sup, np.min(values, axis=0)), np.where(
        far, curve.slope_sup, np.max(values, axis=0)
    )


def binary_fit_bias_bound(
    binned: BinnedCells,
    encode: Encode,
    points: np.ndarray,
    weights: np.ndarray,
    coefficients: CoefficientSet,
    link: Link,
) -> np.ndarray | None:
    """``B_j`` of a logit or probit fit ``link`` on the ``binned`` cells at ``points`` (the response and design
    row per cell) with ``weights`` (clipped at 0; ``encode`` the public map from a cell to its design row; module
    docstring); None where the response is not constant 0 or 1 within the cells (a fractional response),
    infinite where the fit's information is not usable."""
    kept, models = binned.kept, binned.models
    y = points[kept, 0]
    if not _response_constant(models) or not np.all((y == 0.0) | (y == 1.0)):
        return None
    p = points.shape[1] - 1
    with np.errstate(all="ignore"):
        bread_inverse = _information_inverse(points[kept, 1:], y, weights[kept], coefficients.params, link)
        if bread_inverse is None or not models.finite:
            return np.full(p, np.inf)
        curve = CURVES[link.name]
        at_centres = encode(binned.centres)[1]

        def bound(rows: np.ndarray, allowed: CoefficientSet) -> np.ndarray:
            return _bound(models, points[kept], at_centres, weights[kept], rows, allowed, binned.means, curve)

        return bound_with_own_bias(bound, coefficients, bread_inverse, per_coefficient=True)


def _response_constant(models: CellModels) -> bool:
    """Whether the response is constant within every cell (its quadratics vanish)."""
    return not any(np.any(c[..., 0] != 0) for c in (models.gradient, models.curvature, models.mixed))


def _information_inverse(
    X: np.ndarray, y: np.ndarray, weights: np.ndarray, params: np.ndarray, link: Link
) -> np.ndarray | None:
    """``A^{-1}``, ``A = sum_r W_r kappa(y_r, x_r'b^) x_r x_r'``; None where it is not finite and positive definite
    within ``MAX_CONDITION`` (binary_inference.py's test)."""
    information = X.T @ ((weights * link.curvature(y, X @ params))[:, None] * X)
    diag = np.diag(information)
    if not np.all(np.isfinite(information)) or np.any(diag <= 0):
        return None
    scale = 1.0 / np.sqrt(diag)
    eig = np.linalg.eigvalsh(information * np.outer(scale, scale))
    if eig[0] <= 0 or eig[-1] > MAX_CONDITION * eig[0]:
        return None
    return np.linalg.inv(information)


def _bound(
    models: CellModels,
    points: np.ndarray,
    centres: np.ndarray,
    weights: np.ndarray,
    rows: np.ndarray,
    coefficients: CoefficientSet,
    means: np.ndarray,
    curve: ScoreCurve,
) -> np.ndarray:
    """The bound on ``|r' A (beta^ - beta)|`` for every row r of ``rows`` over the coefficient set (``centres``:
    the design rows at the cells' centres)."""
    cells = _CellTerms.of(models, points, centres, coefficients, means, curve)
    bound = np.empty(rows.shape[0])
    for j, row in enumerate(rows):
        lo, hi = cells.share(row)
        lo, hi = -(weights @ hi), -(weights @ lo)
        bound[j] = max(abs(lo), abs(hi))
    return np.where(np.isnan(bound), np.inf, bound)


@dataclass(frozen=True)
class _CellTerms:
    """What every coefficient's bound shares: the index's terms per cell over the coefficient set and the link's
    (module docstring, **The bound per cell**)."""

    models: CellModels
    points: np.ndarray
    means: np.ndarray
    eta_gradient: Interval
    eta_linear_sd: np.ndarray
    eta_quadratic_sd: np.ndarray
    score: Interval  # g at the point
    jensen: Interval
    mean_square: np.ndarray  # m_r
    kappa: Interval  # over the cell's range R_r
    score_range: np.ndarray

    @classmethod
    def of(
        cls,
        models: CellModels,
        points: np.ndarray,
        centres: np.ndarray,
        coefficients: CoefficientSet,
        means: np.ndarray,
        curve: ScoreCurve,
    ) -> _CellTerms:
        gradient = coefficients.interval(models.gradient[..., 1:])
        curvature = coefficients.interval(models.curvature[..., 1:])
        mixed = coefficients.interval(models.mixed[..., 1:])
        gap = within.gap(curvature, mixed, models, means, gradient)
        size, bend, twist = within.absmax(gradient), within.absmax(curvature), within.absmax(mixed)
        linear_sd, quadratic_sd = within.linear_sd(size), within.quadratic_sd(bend, twist)
        mean_square = (linear_sd + quadratic_sd) ** 2 + within.absmax(gap) ** 2
        reach = size.sum(axis=-1) + 0.5 * bend.sum(axis=-1) + twist.sum(axis=-1)  # from the centre, over the box
        at_point, at_centre = coefficients.interval(points[:, 1:]), coefficients.interval(centres)
        one = points[:, 0] == 1.0
        # y = 0 mirrors y = 1: eta -> -eta, g -> -g
        p_lo, p_hi = np.where(one, at_point[0], -at_point[1]), np.where(one, at_point[1], -at_point[0])
        c_lo, c_hi = np.where(one, at_centre[0], -at_centre[1]), np.where(one, at_centre[1], -at_centre[0])
        r_lo, r_hi = c_lo - reach, c_hi + reach
        sign = np.where(one, 1.0, -1.0)
        score = _signed((curve.score(p_hi), curve.score(p_lo)), sign)
        score_range = curve.score(r_lo) - curve.score(r_hi)
        k_point = curve_extremes(curve, p_lo, p_hi)
        k_min, k_max, _ = curve_extremes(curve, r_lo, r_hi)
        s_min, s_max = slope_extremes(curve, r_lo, r_hi)
        # the gap of eta in the mirrored frame is -gap for y = 0; -kappa(eta(p)) gap, times sign back
        mirrored_gap = _signed(gap, sign)
        centre = within.product((-k_point[1], -k_point[0]), mirrored_gap)
        # the remainder 1/2 mean g''(xi) (eta - eta(p))^2, g'' = -kappa' in [-s_max, -s_min]
        low, high = (
            within.times(np.minimum(-s_max, 0.0), 0.5 * mean_square),
            within.times(np.maximum(-s_min, 0.0), 0.5 * mean_square),
        )
        centre = _signed((centre[0] + low, centre[1] + high), sign)
        cap = np.minimum(score_range, within.times(k_max, np.sqrt(mean_square)))
        jensen = np.maximum(centre[0], -cap), np.minimum(centre[1], cap)
        return cls(
            models=models,
            points=points,
            means=means,
            eta_gradient=gradient,
            eta_linear_sd=linear_sd,
            eta_quadratic_sd=quadratic_sd,
            score=score,
            jensen=jensen,
            mean_square=mean_square,
            kappa=(k_min, k_max),
            score_range=score_range,
        )

    def share(self, row: np.ndarray) -> Interval:
        """Where each cell's ``zeta-bar J + a g(eta(p)) + Cov(zeta, g)`` lies for ``zeta = row' z``."""
        zeta = within.row_terms(self.models, self.points, self.means, row)
        sd = zeta.linear_sd + zeta.quadratic_sd
        lo, hi = within.covariance(zeta, self.eta_gradient, self.eta_linear_sd, self.eta_quadratic_sd)
        k_min, k_max = self.kappa
        middle, half = 0.5 * (k_min + k_max), 0.5 * (k_max - k_min)
        rest = within.times(sd, within.times(half, np.sqrt(self.mean_square)))
        lo, hi = -within.times(middle, hi) - rest, -within.times(middle, lo) + rest
        eta_sd = self.eta_linear_sd + self.eta_quadratic_sd
        cap = within.times(sd, np.minimum(within.times(k_max, eta_sd), 0.5 * self.score_range))
        lo, hi = np.maximum(lo, -cap), np.minimum(hi, cap)
        covariance = np.where(lo <= hi, lo, -cap), np.where(lo <= hi, hi, cap)
        first = within.product((zeta.value + zeta.gap[0], zeta.value + zeta.gap[1]), self.jensen)
        second = within.product(zeta.gap, self.score)
        return first[0] + second[0] + covariance[0], first[1] + second[1] + covariance[1]


def _signed(interval: Interval, sign: np.ndarray) -> Interval:
    """``sign x`` for ``x`` in the interval, elementwise (``sign`` +1 or -1)."""
    lo, hi = interval
    return np.where(sign > 0, lo, -hi), np.where(sign > 0, hi, -lo)

"""Standard errors and intervals of a logit or probit fit on a perturbed histogram: post-processing only.

The model is the family's (dpstats/mechanisms/histogram/inference.py): a
cell's released count is ``N_r + L_r``, its rows' count ``N_r`` Poisson of
mean ``mu_r`` (independent across cells) and ``L_r`` the Laplace noise of
scale ``s = 2 / eps``; the fit's weight ``W_r`` is that count thresholded
and clipped at 0. The response is an axis of the histogram (its 0 and 1 are
cells of their own, dpstats/mechanisms/histogram/binary_response.py), so the
counts carry the sampling error of the response given the regressors too.

**The fit, linearised.** ``T(W)`` solves ``sum_r W_r s_r(b) = 0`` with the
cell's score ``s_r(b) = x_r lambda(y_r, x_r'b)`` (``lambda = dl / d eta``,
the link's ``score_factor``), so a change of weights moves it by one Newton
step, ``T(W') ~ T(W) + H^{-1} S'(W' - W)`` with ``S`` the cells' scores (one
per row) and ``H = sum_r W_r kappa_r x_r x_r'`` the observed information
(``kappa = -d^2 l / d eta^2``): the delta method for a Z-estimator.

**The thresholding's bias, corrected from the raw counts.** ``T(W)`` is
biased by ``H^{-1} S'(E W - mu)``: enhanced thresholding erodes cells with
a few rows, and with a rare outcome (a base rate of 10%) most cells of the
response's 1 are such cells, so the fitted rate falls and the slopes steepen
(at n = 100,000 and eps = 1, -3 sd on the intercept). The family's bootstrap
world, whose truth is the thresholded ``W`` itself, sees cells that the
thresholding zeroed as empty, and its correction ``2 T(W) - T(M(W))`` went
the wrong way (the intervals' centres -1.3 sd off at n = 10,000). But the
raw released count ``R_r = N_r + L_r`` is unbiased for ``mu_r``, so
``W_r - R_r`` is unbiased for the bias ``E W_r - mu_r`` and the interval is
centred at

    b_c = T(W) + H^{-1} S'(R - W) = T(W) + H^{-1} sum_r R_r s_r(T(W)),

one Newton step from the thresholded fit towards the root of Algorithm 1's
estimating equation with the raw counts (Lei 2011, whose Theorems 3-4 hold
for it). Linearised about ``mu``, ``b_c - T(mu) ~ H^{-1} S'(R - mu)``, a sum
over independent cells, drawn from its normal law with covariance
``H^{-1} S' diag(v) S H^{-1}``, ``v_r = Var R_r = mu_r + 2 s^2`` estimated
unbiasedly by ``max(R_r + 2 s^2, 0)`` (summed over the release's cells a fit's
cell pools). Without noise this is ``H^{-1} (sum_r N_r s_r s_r') H^{-1}``, the
heteroskedasticity-robust sandwich of the MLE on the cells (White 1982),
which for a correctly specified link is the inverse information. The price of
the correction is the noise of every cell, empty ones included, in ``v``.

The replicates handed to dpstats/uncertainty/intervals.py are
``T(W) + (b* - b_c)`` with ``b* ~ N(T(W), cov)``: basic intervals are then
centred at ``b_c`` (the hull with the estimate ``T(W)``, which keeps its
thresholding bias, follows: an interval holds its point).

**Noisy points.** The cells' noisy means, where released, move the points
(cell_means.py's moves): a unit offset of cell r's point moves its score by
``dx_r lambda_r + x_r (lambda_y dy_r - kappa_r dx_r'b)`` (``lambda_y`` its slope
in y: the log-likelihood is linear in y), weighted by ``W_r`` and added to
the score's normal law as quantile regression's are.

Coverage of the true coefficients on simulated logits and probits (base
rate 10%, three regressors; benchmarks/bench_histogram_logit.py): in the
family's docstring. Measured there, the centres' bias is within 0.4 of their
sd, and the standard errors are 0.95-1.2 times the centres' sd: the points'
moves are overstated as for the other fits (cell_means.py; at n = 2,000 and
eps = 2 the slopes' SEs were 1.13-1.2 times the sd with the means, 0.98-1.04
without them, where binning bias of 1.2 sd took the slopes' coverage to 0.78).
A Hessian that is not positive definite or too ill-conditioned makes the
interval fail (infinite variances).
"""

from __future__ import annotations

import numpy as np

from ...glm.links import Link
from ...uncertainty.intervals import replicate_covariance
from .cell_meat import CellMeat
from .inference import Intervals, PointMove, failed, normal_draws
from .weighted_fits import MAX_CONDITION

BINARY_NOTE = (
    "SEs and intervals: the delta method for the weighted MLE on the released histogram's cells (post-processing, "
    "no budget): every cell's count, the response's 0 and 1 cells included, varies by its sampling and its noise, "
    "and the thresholding's bias is corrected by one Newton step with the raw noisy counts (Lei 2011, Algorithm "
    "1); the cells' noisy means, where released, are moved by their noise and sampling error. The estimate is "
    "the MLE on binned data: it keeps a binning bias (at the cells' means, the spread of the rows inside a cell; "
    "at their centres, more), which the SEs do not cover and which shrinks as the bins refine (Lei 2011, "
    "Theorem 3)."
)
FLAT_INFORMATION = "the weighted information on the cells is not positive definite at the fit"


def binary_intervals(
    X: np.ndarray,
    y: np.ndarray,
    weights: np.ndarray,
    counts: np.ndarray,
    variances: np.ndarray,
    params: np.ndarray,
    link: Link,
    moves: tuple[PointMove, ...],
    rng: np.random.Generator,
    meat: CellMeat | None = None,
) -> Intervals:
    """The intervals of a weighted logit or probit fit ``params`` on the cells (module docstring).

    ``weights`` are the fit's weights ``W``, ``counts`` the raw noisy counts ``R`` and ``variances`` the
    estimates of ``Var R``, per cell of the fit (summed over the release's cells it pools). With survey weights
    ``variances`` are the noise's alone and ``meat`` releases the rows' design-based meat at the cells' scores
    (cell_meat.py), added to the score's spread.
    """
    p = params.size
    eta = X @ params
    factor = link.score_factor(y, eta)
    curvature = link.curvature(y, eta)
    score = X * factor[:, None]
    hessian = X.T @ ((weights * curvature)[:, None] * X)
    diag = np.diag(hessian)
    if np.any(diag <= 0):
        return failed(p, FLAT_INFORMATION)
    scale = 1.0 / np.sqrt(diag)
    eig = np.linalg.eigvalsh(hessian * np.outer(scale, scale))
    if eig[0] <= 0 or eig[-1] > MAX_CONDITION * eig[0]:
        return failed(p, FLAT_INFORMATION)
    inverse = np.linalg.inv(hessian)
    centre = params + inverse @ (score.T @ (counts - weights))
    spread = score.T @ (variances[:, None] * score)
    slope_y = link.score_factor(np.ones_like(eta), eta) - link.score_factor(np.zeros_like(eta), eta)
    for move in moves:
        step = move.dX * factor[:, None] + X * (slope_y * move.dy - curvature * (move.dX @ params))[:, None]
        spread += move.covariance(weights[:, None] * step)
    note = BINARY_NOTE
    if meat is not None:
        spread += meat.release(score, weights)
        note += meat.note
    cov = inverse @ spread @ inverse.T
    replicates = params + (normal_draws(rng, params, cov) - centre)
    return Intervals(replicate_covariance(replicates), replicates, note)

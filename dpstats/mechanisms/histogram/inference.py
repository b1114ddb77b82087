"""Standard errors and intervals for fits on a perturbed histogram: a parametric bootstrap of the release.

The released noisy histogram estimates the whole joint distribution of the
variables, so a bootstrap from it is post-processing and costs no budget: the
parametric bootstrap of Ferrando, Wang & Sheldon (2022), with the histogram as
the fitted model. The bootstrap world takes each cell's expected count to be
its released, thresholded count ``W_r``; a replicate draws every cell's count (Poisson, see
dpstats/mechanisms/histogram/cell_moments.py), fresh Laplace noise of the
release's scale, applies the same thresholding and refits. The replicates'
spread covers the sampling error and the privacy noise; their mean departs
from the world's truth by the thresholding's bias (spurious cells of pure
noise, eroded small counts), which an interval must correct.

Resampling every cell B times costs ``B x cells`` random draws, far more than
the fit itself. Both fits depend on the cells only through sums over cells,
so the bootstrap is run where those sums live:

* **Least squares.** The fit is ``T(S) = A^{-1} b`` of the statistic
  ``S = sum_r W_r z_r``, ``z_r = (vech(x_r x_r' - C_r), x_r y_r)`` (``C_r``
  Sheppard's correction per unit weight). A sum of hundreds of independent
  cells is close to normal (the central limit theorem across cells), with
  mean and covariance the sums of the cells' exact moments, so replicates of
  ``S`` are drawn from that normal law (B x dim(S) draws) and refitted by one
  batched solve, keeping the ratio's non-linearity.
* **Quantile regression.** The fit minimises ``sum_r W_r G_r(f_r)`` with
  ``f_r = x_r'b`` (the check loss integrated over the response's bins
  ``[a_r, a_r + h]``, C^1 and piecewise quadratic), so a change of weights
  moves it by one Newton step, ``-H^{-1} sum_r dW_r psi_r`` with
  ``psi_r = x_r (clip((f_r - a_r) / h, 0, 1) - q)`` (Bahadur's linearisation,
  Koenker 2005, section 4.2). The score sum is drawn from its normal law,
  like ``S``. ``H = sum_r W_r d_r x_r x_r'`` weights each cell by the
  conditional density at the fit: the Epanechnikov kernel of bandwidth ``B``
  integrated over the cell's response bin,
  ``d_r = [K((a_r + h - f_r) / B) - K((a_r - f_r) / B)] / h`` with K the
  kernel's distribution function. As ``B -> 0`` this is the objective's own
  Hessian ``1{a_r < f_r < a_r + h} / h``, right where bins are coarse; where
  they are fine, that Hessian rests on a few cells, and the kernel averages
  over those within B. ``B`` is statsmodels' QuantReg bandwidth (Hall &
  Sheather 1988 on the probability scale, times ``min(sd(y), IQR(resid) /
  1.34)``, both read from the histogram), so that at eps -> infinity and fine
  bins the covariance is Powell's (1991) kernel sandwich, which is
  heteroskedasticity-robust, with QuantReg's bandwidth.

**Bias correction.** With ``M(mu) = E W`` the thresholding's mean map, the
interval is centred at the bias-corrected estimate ``2 T(W) - T(M(W))`` (the
fit on the released weights minus the bias the bootstrap world shows: Efron &
Tibshirani 1993, section 10.6), and its spread is that of
``2 T(W*) - T(M(W*))`` over replicates: the correction is itself noisy, and
the spread of ``T(W*)`` alone would miss that (on the heteroskedastic design
of dpstats/uncertainty/coverage.py at n = 1000, eps = 1, the corrected estimate's sd is
about 1.35 times the uncorrected one's). The pairs ``(W_r, M(W_r))`` have exact
joint moments per cell, so the two statistics are drawn jointly. The
replicates handed to dpstats/uncertainty/intervals.py are ``theta~ + (theta_c* -
theta_c)``: basic intervals are then ``[theta_c - q_hi, theta_c - q_lo]`` of
the departures ``theta_c* - theta~``.

**Binning.** The bootstrap world is already binned, so binning bias is not
covered; at the cells' centres (``moment_share=0``, Algorithm 1) the default
bins are chosen finer than Lei's rule so that it is small next to the
interval's width (dpstats/mechanisms/histogram/layout.py). Where declared
bounds are wide next to the data it is not: on statsmodels' engel data (235
rows, median, eps = 1: 8 bins over the declared income range 0-5,000 hold 54
and 135 rows in the first two) QuantReg on the rows with income at its bin's
centre has slope 0.395 against 0.560 on the raw rows (0.537 with income at
its bin's mean; the histogram without noise 0.385:
benchmarks/bench_histogram_inference.py --binning), and the intervals covered
QuantReg's estimate in 0.47 of 100 seeds (benchmarks/bench_real_coverage.py,
``auto`` on engel's median). By default the fits are at the cells' noisy
means instead (dpstats/mechanisms/histogram/cell_means.py), which removes the
bias of the centres; what is left is the spread of the rows inside a cell,
which vanishes as the bins refine with eps. A least-squares fit carries a
bound on it, which the results' intervals hold (Armstrong & Kolesár 2020;
dpstats/mechanisms/histogram/binning_bias.py); a quantile fit names it
without one.

**Noisy points.** At the cells' noisy means the points move with the noise
and the sample too. Each cell's mean offset along an axis moves by a normal
draw of the variance cell_means.py gives (its own, and its bin's shared by
the bin's cells), carried to the fit linearly: least squares' statistic by
``W_r dz_r / du``, quantile regression's score by
``W_r (dx_r g_r + x_r d_r (dx_r'b - dy_r))`` per unit offset (``g_r`` the
integrated check loss's derivative, ``d_r`` the kernel density at the fit,
``dx_r``, ``dy_r`` the design row's and response's derivatives); the moves
are independent of the counts' noise (a separate release) and are added to
the statistic's or the score's normal law.

**Sparse layouts** (least squares). The bootstrap world takes the released,
thresholded counts as the truth. Where the layout expects fewer rows per cell
than the cut-off (``n / cells < A log(n) / eps``), most cells with rows hold a
few of them and are thinned by the thresholding: zeroed in some releases, kept
with a jump of the cut-off's size in others. The world has zeroed them for
good, so its counts vary less than the truth's and the intervals are too
narrow. Measured at eps = 1 on dpstats/uncertainty/coverage.py's symmetric design at n =
1,000, over 200 data sets (benchmarks/bench_histogram_inference.py --sparse):
with ``bins=25`` (0.46 cut-offs per cell) coverage 0.885 and 0.875, with
``bins=14`` (1.48) 0.94 and 0.94, at the default 9 bins (3.57) 0.96 and 0.965;
on statsmodels' fair data (6,366 rows, 2,500 cells: 0.58) 0.74-0.92 over 100
seeds (benchmarks/bench_real_coverage.py), the bias-corrected estimate's spread
1.0-1.5 times the SEs over 40 seeds. Whether a layout is sparse is public (n,
the cells, the cut-off), so such a fit's note says so
(:func:`sparse_layout_note`); the quantile fits, whose far cells carry no
leverage, covered fair's slopes in 0.95-0.98 of the seeds on the same 2,500
cells and carry no such note. Three repairs were tried on fair and left: the
correction applied to the statistic ``2 S(W) - S(M(W))`` instead of the fit (it
over-corrects the well-filled levels), a world of the released counts before
thresholding (coverage fell to 0.68-0.90), and coarser bins (binning bias: 4
bins covered the intercept in 0.65 of 40 seeds, 3 bins in none).

**Bound cells** (a point at a bound: ``widths`` 0) enter as response intervals
of width ``POINT_WIDTH`` bins (dpstats/mechanisms/histogram/weighted_fits.py),
and the kernel spreads their mass over the bandwidth like any cell's. Where the
fitted quantile sits on such a point for most cells (a median of a response
that is 0 for most rows), the fit is locally constant in the weights while
the linearisation moves it: the interval is then centred and scaled by an
approximation that does not hold, like QuantReg's own at a point mass. On
statsmodels' fair data (68% zeros, eps = 1) the estimate is QuantReg's 0 to
1e-3 while the intervals covered it in 62% of 100 seeds for the worst term
(benchmarks/bench_real_coverage.py).

A failed fit on the mapped weights, or a Hessian that is not positive definite
(no cell straddles the fitted quantile), makes the interval fail: infinite
variances (dpstats/uncertainty/intervals.py). A replicate whose refit fails is the
mechanism's failure in the bootstrap world and is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from ...privacy import noise
from ...uncertainty.intervals import infinite_cov, replicate_covariance
from .cell_meat import CellMeat, sandwich
from .cell_moments import CellMoments
from .weighted_fits import MAX_CONDITION, response_intervals

REPLICATES = 1000
"""Bootstrap replicates (public)."""

SE_NOTE = (
    "SEs and intervals: a parametric bootstrap of the released histogram (post-processing, no budget): every "
    "cell's count is redrawn with fresh noise and the same thresholding (exact moments per cell, normal sums "
    "across cells), bias-corrected for the thresholding, and the cells' noisy means, where released, are moved "
    "by their noise and sampling error. The estimate is the fit on binned data: it keeps a binning bias (at the "
    "cells' means, the spread of the rows inside a cell; at their centres, more), which the SEs do not cover "
    "and which shrinks as the bins refine (Lei 2011, Theorem 3)."
)
NO_BIN_NOTE = (
    "No SEs: quantile-regression intervals need the response's bins, and this formula's response is a "
    "transformation of a column. SEs, tests and intervals are NaN."
)
SPARSE_NOTE = (
    " This layout expects {rows:.2g} rows per cell (n / cells), fewer than the thresholding's cut-off of {cut:.2g}: "
    "most cells with rows are thinned by it, which the bootstrap does not reproduce, and on such layouts the "
    "95% intervals covered 0.74-0.92 (docstring of dpstats/mechanisms/histogram/inference.py): they are too "
    "narrow. A larger eps or fewer numeric variables avoid it; fewer bins trade it for binning bias."
)
FAILED_FIT = "the fit on the thresholding's mean map failed"
FLAT_HESSIAN = "no cell with weight straddles the fitted quantile, so the fit's curvature is not identified"


@dataclass(frozen=True)
class PointMove:
    """How the cells' noisy points move along one axis with released means (cell_means.py).

    ``dy`` and ``dX``: the derivative of each cell's response and design row per unit offset. A cell's offset
    moves by its own move (variance ``cell_variances``, independent across cells) plus ``bin_share`` times
    its bin's (``bins``: each cell's bin; ``bin_variances``: one per bin, shared by the bin's cells).
    """

    dy: np.ndarray
    dX: np.ndarray
    cell_variances: np.ndarray
    bins: np.ndarray
    bin_share: np.ndarray
    bin_variances: np.ndarray

    def covariance(self, rows: np.ndarray) -> np.ndarray:
        """The covariance of ``sum_r rows_r du_r`` over the cells' moves ``du_r``."""
        per_bin = np.zeros((self.bin_variances.size, rows.shape[1]))
        np.add.at(per_bin, self.bins, self.bin_share[:, None] * rows)
        own = rows.T @ (self.cell_variances[:, None] * rows)
        return own + per_bin.T @ (self.bin_variances[:, None] * per_bin)


@dataclass(frozen=True)
class CellProblem:
    """A fit's public points and what the intervals need of its weights (cells of the formula's variables).

    ``weights`` are the released weights ``W``, ``mapped`` the mean map
    ``M(W)`` and ``moments`` the moments of ``(W, M(W))`` at ``mu = W``, each
    summed over the release's cells that a cell of the fit pools.
    ``correction`` (least squares, or None) is Sheppard's correction per unit
    weight, one p x p matrix per cell. ``n`` is the public number of rows.
    ``moves``: the points' moves along the axes with noisy means (**Noisy points**). ``meat``: with survey
    weights, what releases the rows' design-based meat at the fit's cell scores (cell_meat.py), whose sandwich
    is the sampling error; the moments are then the noise's alone.
    """

    X: np.ndarray
    y: np.ndarray
    weights: np.ndarray
    mapped: np.ndarray
    moments: CellMoments
    n: int
    correction: np.ndarray | None = None
    moves: tuple[PointMove, ...] = ()
    meat: CellMeat | None = None


@dataclass(frozen=True)
class Intervals:
    """What a release reports about its error: covariance, replicates (or None) and the note."""

    cov: np.ndarray
    replicates: np.ndarray | None
    note: str


def failed(p: int, reason: str) -> Intervals:
    """Intervals whose own computation failed: infinite variances."""
    return Intervals(infinite_cov(p), None, f"{SE_NOTE} The interval failed here: {reason}.")


def sparse_layout_note(n: int, cells: int, cut: float) -> str:
    """The note of a least-squares fit on a layout expecting fewer rows per cell than the cut-off, else ''.

    Public: n, the release's cells and the cut-off (module docstring, sparse layouts).
    """
    rows = n / cells
    return SPARSE_NOTE.format(rows=rows, cut=cut) if cut > 0.0 and rows < cut else ""


def normal_draws(rng: np.random.Generator, mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """``REPLICATES`` draws of N(mean, cov) for a symmetric ``cov`` (negative eigenvalues clipped)."""
    values, vectors = np.linalg.eigh((cov + cov.T) / 2.0)
    root = vectors * np.sqrt(np.maximum(values, 0.0))
    return mean + noise.gaussian(rng, 1.0, (REPLICATES, mean.size)) @ root.T


def _statistic_rows(problem: CellProblem) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """``z_r`` for every cell (module docstring) and the upper-triangle indices of ``A``."""
    X, p = problem.X, problem.X.shape[1]
    rows, cols = np.triu_indices(p)
    outer = X[:, rows] * X[:, cols]
    if problem.correction is not None:
        outer = outer - problem.correction[:, rows, cols]
    return np.column_stack([outer, X * problem.y[:, None]]), (rows, cols)


def _statistic_steps(problem: CellProblem, move: PointMove, upper: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """The derivative of ``z_r`` per unit offset of the cell's point (the product rule on ``x x'`` and ``x y``)."""
    X, dX = problem.X, move.dX
    rows, cols = upper
    outer = dX[:, rows] * X[:, cols] + X[:, rows] * dX[:, cols]
    return np.column_stack([outer, dX * problem.y[:, None] + X * move.dy[:, None]])


def _solve(S: np.ndarray, p: int, upper: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``A^{-1} b`` for every row of ``S`` (NaN where A is not positive definite or too ill-conditioned)."""
    S = np.atleast_2d(S)
    rows, cols = upper
    A = np.zeros((S.shape[0], p, p))
    A[:, rows, cols] = S[:, : rows.size]
    A[:, cols, rows] = S[:, : rows.size]
    b = S[:, rows.size :]
    diag = np.einsum("bii->bi", A)
    out = np.full((S.shape[0], p), np.nan)
    usable = np.all(diag > 0, axis=1)
    if not usable.any():
        return out
    scale = 1.0 / np.sqrt(diag[usable])
    scaled = A[usable] * scale[:, :, None] * scale[:, None, :]
    try:  # all positive definite (the rule): the Cholesky pivots bound the condition number from below
        pivots = np.einsum("bii->bi", np.linalg.cholesky(scaled)) ** 2
        good = pivots.min(axis=1) * MAX_CONDITION >= pivots.max(axis=1)
    except np.linalg.LinAlgError:
        eig = np.linalg.eigvalsh(scaled)
        good = (eig[:, 0] > 0) & (eig[:, -1] <= MAX_CONDITION * eig[:, 0])
    solved = np.linalg.solve(scaled[good], (scale[good] * b[usable][good])[..., None])[..., 0]
    index = np.flatnonzero(usable)[good]
    out[index] = scale[good] * solved
    return out


def least_squares_intervals(problem: CellProblem, params: np.ndarray, rng: np.random.Generator) -> Intervals:
    """Bias-corrected parametric bootstrap of weighted least squares on the cells (module docstring)."""
    p = params.size
    Z, upper = _statistic_rows(problem)
    mapped_fit = _solve(problem.mapped @ Z, p, upper)[0]
    if not np.all(np.isfinite(mapped_fit)):
        return failed(p, FAILED_FIT)
    centre = 2.0 * params - mapped_fit
    m = problem.moments
    dim = Z.shape[1]
    mean = np.concatenate([m.mean @ Z, m.mean_m @ Z])
    cov = np.empty((2 * dim, 2 * dim))
    cov[:dim, :dim] = Z.T @ (m.var[:, None] * Z)
    cov[:dim, dim:] = Z.T @ (m.cov_m[:, None] * Z)
    cov[dim:, :dim] = cov[:dim, dim:].T
    cov[dim:, dim:] = Z.T @ (m.var_m[:, None] * Z)
    for move in problem.moves:
        step = _statistic_steps(problem, move, upper)
        cov += move.covariance(np.hstack([problem.weights[:, None] * step, problem.mapped[:, None] * step]))
    draws = normal_draws(rng, mean, cov)
    refits = _solve(np.concatenate([draws[:, :dim], draws[:, dim:]]), p, upper)
    corrected = 2.0 * refits[:REPLICATES] - refits[REPLICATES:]
    replicates = params + (corrected - centre)
    if problem.meat is None:
        return Intervals(replicate_covariance(replicates), replicates, SE_NOTE)
    sampling = _weighted_sampling(problem, params)
    if sampling is None:
        return failed(p, FAILED_FIT)
    replicates = replicates + normal_draws(rng, np.zeros(p), sampling)
    return Intervals(replicate_covariance(replicates), replicates, SE_NOTE + problem.meat.note)


def _weighted_sampling(problem: CellProblem, params: np.ndarray) -> np.ndarray | None:
    """Least squares' design-based sampling covariance with survey weights: the bread ``sum_r W_r (x_r x_r' -
    C_r)`` around the meat of the cell scores ``x_r y_r - (x_r x_r' - C_r) b`` (cell_meat.py)."""
    X, w = problem.X, problem.weights
    psi = X * (problem.y - X @ params)[:, None]
    bread = X.T @ (w[:, None] * X)
    if problem.correction is not None:
        psi = psi + np.einsum("rij,j->ri", problem.correction, params)
        bread = bread - np.einsum("r,rij->ij", w, problem.correction)
    return sandwich(bread, problem.meat.release(psi, w))


def _weighted_quantiles(values: np.ndarray, weights: np.ndarray, probs: list[float]) -> np.ndarray:
    """Quantiles of the distribution putting mass ``weights`` (>= 0, not all 0) on ``values``."""
    order = np.argsort(values)
    cumulative = np.cumsum(weights[order])
    return values[order][np.searchsorted(cumulative, np.asarray(probs) * cumulative[-1])]


def hall_sheather(n: int, q: float, alpha: float = 0.05) -> float:
    """Hall & Sheather's (1988) bandwidth on the probability scale, as statsmodels' QuantReg uses it."""
    normal = NormalDist()
    z = normal.inv_cdf(q)
    ratio = 1.5 * normal.pdf(z) ** 2 / (2.0 * z * z + 1.0)
    return n ** (-1.0 / 3.0) * normal.inv_cdf(1.0 - alpha / 2.0) ** (2.0 / 3.0) * ratio ** (1.0 / 3.0)


def kernel_bandwidth(problem: CellProblem, fitted: np.ndarray, q: float, widths: np.ndarray) -> float:
    """QuantReg's bandwidth on the residual scale, from the cells (module docstring)."""
    w, y = problem.weights, problem.y
    mean = np.average(y, weights=w)
    sd = np.sqrt(np.average((y - mean) ** 2 + widths**2 / 12.0, weights=w))
    q25, q75 = _weighted_quantiles(y - fitted, w, [0.25, 0.75])
    spread = min(sd, (q75 - q25) / 1.34) if q75 > q25 else sd
    h = hall_sheather(problem.n, q)
    normal = NormalDist()
    return spread * (normal.inv_cdf(min(q + h, 1.0 - 1e-9)) - normal.inv_cdf(max(q - h, 1e-9)))


def _epanechnikov_cdf(u: np.ndarray) -> np.ndarray:
    """The distribution function of the Epanechnikov kernel ``3 (1 - u^2) / 4`` on [-1, 1]."""
    u = np.clip(u, -1.0, 1.0)
    return 0.5 + 0.75 * u - 0.25 * u**3


def quantile_intervals(
    problem: CellProblem, params: np.ndarray, q: float, widths: np.ndarray | None, rng: np.random.Generator
) -> Intervals:
    """Bias-corrected bootstrap of weighted quantile regression, linearised by one Newton step (module docstring).

    ``widths``: the cells' widths along the response (0 at a bound's cell, a point: the fit's interval of
    :func:`~dpstats.mechanisms.histogram.weighted_fits.response_intervals`), None for a transformed response.
    """
    p = params.size
    if widths is None:
        return Intervals(np.full((p, p), np.nan), None, NO_BIN_NOTE)
    X, w = problem.X, problem.weights
    lower, upper = response_intervals(problem.y, widths)
    width = upper - lower
    fitted = X @ params
    score = X * (np.clip((fitted - lower) / width, 0.0, 1.0) - q)[:, None]
    bandwidth = max(kernel_bandwidth(problem, fitted, q, widths), 1e-12 * float(np.max(width)))
    above, below = (upper - fitted) / bandwidth, (lower - fitted) / bandwidth
    density = (_epanechnikov_cdf(above) - _epanechnikov_cdf(below)) / width
    hessian = X.T @ ((w * density)[:, None] * X)
    diag = np.diag(hessian)
    if np.any(diag <= 0):
        return failed(p, FLAT_HESSIAN)
    scale = 1.0 / np.sqrt(diag)
    eig = np.linalg.eigvalsh(hessian * np.outer(scale, scale))
    if eig[0] <= 0 or eig[-1] > MAX_CONDITION * eig[0]:
        return failed(p, FLAT_HESSIAN)
    inverse = np.linalg.inv(hessian)
    centre = params + inverse @ (score.T @ (problem.mapped - w))
    m = problem.moments
    mean_corrected = 2.0 * m.mean - m.mean_m
    var_corrected = 4.0 * m.var - 4.0 * m.cov_m + m.var_m
    mean = params - inverse @ (score.T @ (mean_corrected - w))
    spread = score.T @ (var_corrected[:, None] * score)
    gap = np.clip((fitted - lower) / width, 0.0, 1.0) - q
    for move in problem.moves:
        step = w[:, None] * (move.dX * gap[:, None] + X * (density * (move.dX @ params - move.dy))[:, None])
        spread += move.covariance(step)
    note = SE_NOTE
    if problem.meat is not None:
        spread += problem.meat.release(score, w)
        note += problem.meat.note
    cov = inverse @ spread @ inverse.T
    replicates = params + (normal_draws(rng, mean, cov) - centre)
    return Intervals(replicate_covariance(replicates), replicates, note)

"""Weighted least squares, weighted quantile regression and weighted binary MLE on public points.

The estimation step of Lei (2011), Algorithm 1: the perturbed histogram is a
set of public points (the cell centres ``a_r``) with weights (the noisy counts
``n^_r``), and the estimate minimises ``sum_r w_r m(a_r, theta)``. These fits
see nothing but the points and the weights, so everything here is
post-processing of the released histogram.

* Least squares: the weighted normal equations ``X'WX b = X'Wy``, solved
  after a diagonal (Jacobi) rescaling. Weights may be negative (Algorithm 1
  uses the noisy counts as they are); the objective then has a minimiser only
  if ``X'WX`` is positive definite, so the fit fails (returns ``failed``)
  otherwise. An optional ``correction`` matrix is subtracted from ``X'WX``
  (Sheppard's correction for grouped regressors, dpstats/api/histogram_release.py).
* Quantile regression: ``min_b sum_r w_r rho_q(y_r - x_r'b)`` with the check
  loss ``rho_q(u) = u (q - 1(u < 0))``, solved exactly as the linear program

      min  sum_r w_r (q u_r + (1 - q) v_r)
      s.t. X b + u - v = y,   u, v >= 0,   b free

  with scipy's HiGHS solver (statsmodels' QuantReg takes no weights). The
  check loss is convex only for non-negative weights (with a negative one the
  objective is unbounded below), so the weights must be >= 0 here: the
  histogram clips them at zero first (Lei 2011, Algorithm 1').
* Quantile regression with each point's response spread uniformly over an
  interval ``[a_r, b_r]`` (its histogram bin): the check loss integrated over
  the bin, the paper's objective (6) ``int f^_PH(x) m(x, theta) dx`` taken
  exactly along the response. With ``h = b - a``, ``mid = (a + b) / 2`` and
  ``f`` the fitted value,

      G(f) = q (mid - f)                                  if f <= a,
           = (q (b - f)^2 + (1 - q) (f - a)^2) / (2 h)    if a < f < b,
           = (1 - q) (f - mid)                            if f >= b,

  whose derivative ``clip((f - a) / h, 0, 1) - q`` is continuous: the sum
  over cells is a C^1 convex, piecewise-quadratic function of the
  coefficients, minimised by L-BFGS and polished by Newton steps with a
  backtracking line search. Putting every cell's mass at its centre instead
  (Algorithm 1's approximation) makes the linear program's optimum a vertex
  through p cell centres, so the estimates move in steps of the bin width;
  integrating along the response removes that (benchmarks/bench_histogram.py).

* Logit and probit: ``max_b sum_r w_r l(y_r, x_r'b)`` with the (quasi-)log-likelihood
  ``l(y, eta) = y log F(eta) + (1 - y) log(1 - F(eta))``: Lei's section 3.1
  example, whose contrast ``m = -l`` meets (A1)-(A3), solved by Newton's method
  (:func:`dpstats.glm.mle.fit_mle`) on the columns rescaled like quantile
  regression's. The weights must be >= 0 (a negative one makes the objective
  unbounded, as for the check loss). Without a finite maximiser (the retained
  cells separate the two responses) or without convergence the fit fails.

No fit raises on a property of the weights: a failure is returned as a
:class:`WeightedFit` with ``failed=True`` and a reason (docs/DESIGN.md section 2:
failure is an output).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
from scipy import sparse
from scipy.optimize import linprog, minimize

from ...glm.links import Link
from ...glm.mle import fit_mle
from ..quantiles import check_function

# A cross-product matrix whose Jacobi-scaled condition number exceeds this is
# treated as singular (a term that no retained cell identifies).
MAX_CONDITION = 1e12

NO_WEIGHT = "no cell kept a positive weight after thresholding, so there is nothing to fit"
NOT_PD = (
    "the weighted cross-product matrix X'WX is not positive definite (a term has no retained cell, "
    "or negative noisy counts dominate): the weighted least-squares objective has no unique minimiser"
)
NO_MLE = (
    "the weighted likelihood on the retained cells has no finite maximiser (they separate the responses) or "
    "Newton's method did not converge"
)
MAX_SCALED_COEFFICIENT = 1e3
"""A binary fit whose coefficient on a column rescaled to at most 1 in absolute value exceeds this has run off
to infinity (a linear index of 1,000 is a probability of ``1 - e^-1000``): it failed."""
NOT_IDENTIFIED = "the cells with positive weight do not identify every coefficient (a term has no retained cell)"


@dataclass(frozen=True)
class WeightedFit:
    """Coefficients of a weighted fit (NaN when ``failed``) and its summary statistics."""

    params: np.ndarray
    failed: bool = False
    reason: str | None = None
    stats: dict[str, np.ndarray] = field(default_factory=dict)
    objective: float = float("nan")


def _failed(p: int, reason: str) -> WeightedFit:
    return WeightedFit(params=np.full(p, np.nan), failed=True, reason=reason)


def _check_inputs(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float).reshape(-1)
    w = np.asarray(w, dtype=float).reshape(-1)
    if X.ndim != 2 or X.shape[0] != y.size or w.size != y.size:
        raise ValueError("X must be 2-d with one row per element of y and of w")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y)) and np.all(np.isfinite(w))):
        raise ValueError("X, y and w must be finite")
    return X, y, w


def weighted_least_squares(
    X: np.ndarray, y: np.ndarray, w: np.ndarray, correction: np.ndarray | None = None
) -> WeightedFit:
    """Solve ``(X'WX - correction) b = X'Wy``: weighted least squares (weights of any sign).

    ``stats`` holds ``X'WX`` (after the correction) and ``X'Wy``, the
    sufficient statistics of the fit. Without a correction this minimises
    ``sum_i w_i (y_i - x_i'b)^2``.
    """
    X, y, w = _check_inputs(X, y, w)
    p = X.shape[1]
    if not np.any(w != 0):
        return _failed(p, NO_WEIGHT)
    xtwx = X.T @ (w[:, None] * X)
    if correction is not None:
        xtwx = xtwx - np.asarray(correction, dtype=float)
    xtwy = X.T @ (w * y)
    stats = {"X'WX": xtwx, "X'Wy": xtwy}
    diag = np.diag(xtwx)
    if np.any(diag <= 0):
        return WeightedFit(np.full(p, np.nan), True, NOT_PD, stats)
    scale = 1.0 / np.sqrt(diag)
    scaled = xtwx * np.outer(scale, scale)
    try:
        factor = scipy.linalg.cho_factor(scaled, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        return WeightedFit(np.full(p, np.nan), True, NOT_PD, stats)
    if np.linalg.cond(scaled) > MAX_CONDITION:
        return WeightedFit(np.full(p, np.nan), True, NOT_PD, stats)
    params = scale * scipy.linalg.cho_solve(factor, scale * xtwy, check_finite=False)
    if not np.all(np.isfinite(params)):
        return WeightedFit(np.full(p, np.nan), True, NOT_PD, stats)
    residuals = y - X @ params
    return WeightedFit(params=params, stats=stats, objective=float(np.sum(w * residuals**2)))


def check_loss(residuals: np.ndarray, q: float, w: np.ndarray | None = None) -> float:
    """``sum_i w_i rho_q(r_i)`` with ``rho_q(u) = u (q - 1(u < 0))`` (all weights 1 by default)."""
    loss = check_function(np.asarray(residuals, dtype=float), q)
    return float(np.sum(loss if w is None else np.asarray(w, dtype=float) * loss))


def weighted_quantile_regression(X: np.ndarray, y: np.ndarray, w: np.ndarray, q: float) -> WeightedFit:
    """Minimise ``sum_i w_i rho_q(y_i - x_i'b)`` exactly, as a linear program (HiGHS).

    Weights must be non-negative (rows of weight 0 are dropped). The columns
    of X and y are rescaled by their largest absolute value (public: the
    points are public) and the weights by their sum, which leaves the
    minimiser unchanged and keeps the program well scaled. When the minimiser
    is not unique (ties, as with binned data) HiGHS returns one vertex of the
    optimal set.
    """
    X, y, w = _check_inputs(X, y, w)
    if not 0.0 < q < 1.0:
        raise ValueError("q must be in (0, 1)")
    if np.any(w < 0):
        raise ValueError("weighted quantile regression needs non-negative weights (clip them first)")
    p = X.shape[1]
    keep = w > 0
    if not np.any(keep):
        return _failed(p, NO_WEIGHT)
    X, y, w = X[keep], y[keep], w[keep]
    m = y.size
    Xs, x_scale, ws = _scaled_points(X, w)
    y_scale = float(np.max(np.abs(y))) or 1.0
    ys = y / y_scale
    if not identifies(X):
        return _failed(p, NOT_IDENTIFIED)
    cost = np.concatenate([np.zeros(p), q * ws, (1.0 - q) * ws])
    identity = sparse.identity(m, format="csr")
    A_eq = sparse.hstack([sparse.csr_matrix(Xs), identity, -identity], format="csc")
    lower = np.concatenate([np.full(p, -np.inf), np.zeros(2 * m)])
    bounds = np.column_stack([lower, np.full(p + 2 * m, np.inf)])
    solution = linprog(cost, A_eq=A_eq, b_eq=ys, bounds=bounds, method="highs")
    if solution.status != 0 or solution.x is None:
        return _failed(p, f"the quantile-regression linear program did not solve ({solution.message})")
    params = solution.x[:p] * y_scale / x_scale
    if not np.all(np.isfinite(params)):
        return _failed(p, "the quantile-regression linear program returned a non-finite solution")
    return WeightedFit(params=params, objective=check_loss(y - X @ params, q, w))


def identifies(X: np.ndarray) -> bool:
    """Whether the points ``X`` (one per row) identify every coefficient: full column rank, each column
    scaled by its largest absolute value first so that the rank does not depend on the columns' units."""
    p = X.shape[1]
    if X.shape[0] < p:
        return False
    return int(np.linalg.matrix_rank(_scaled_points(X, np.ones(X.shape[0]))[0])) == p


def _scaled_points(X: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """X divided by its columns' largest absolute values (public points), those scales, and w / sum(w)."""
    x_scale = np.max(np.abs(X), axis=0)
    x_scale[x_scale == 0] = 1.0
    return X / x_scale, x_scale, w / w.sum()


POINT_WIDTH = 1e-6
"""The response interval of a bound's cell (a point) as a share of the bins' width: the integrated check
loss over it differs from the point's check loss by at most ``POINT_WIDTH h / 2``, and it keeps the
objective piecewise quadratic (:func:`weighted_quantile_regression_binned`)."""


def response_intervals(y: np.ndarray, widths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's response interval ``[y - w / 2, y + w / 2]``; a point (``w = 0``) gets ``POINT_WIDTH`` bins."""
    widths = np.maximum(widths, POINT_WIDTH * max(float(np.max(widths, initial=0.0)), 1e-300))
    return y - 0.5 * widths, y + 0.5 * widths


def integrated_check_loss(f: np.ndarray, lower: np.ndarray, upper: np.ndarray, q: float) -> np.ndarray:
    """``G(f)``: the check loss averaged over a response uniform on ``[lower, upper]`` (module docstring)."""
    h, mid = upper - lower, 0.5 * (lower + upper)
    inside = (q * (upper - f) ** 2 + (1.0 - q) * (f - lower) ** 2) / (2.0 * h)
    return np.where(f <= lower, q * (mid - f), np.where(f >= upper, (1.0 - q) * (f - mid), inside))


def weighted_quantile_regression_binned(
    X: np.ndarray, lower: np.ndarray, upper: np.ndarray, w: np.ndarray, q: float
) -> WeightedFit:
    """Minimise ``sum_r w_r G_r(x_r'b)``: the check loss integrated over each point's response interval.

    ``lower < upper`` elementwise; weights must be non-negative (rows of
    weight 0 are dropped). The problem is rescaled like
    :func:`weighted_quantile_regression`; the start is the weighted least
    squares fit to the interval midpoints. ``objective`` is in the data's units.
    """
    X, lower, w = _check_inputs(X, lower, w)
    upper = np.asarray(upper, dtype=float).reshape(-1)
    if upper.shape != lower.shape or not np.all(np.isfinite(upper)) or np.any(upper <= lower):
        raise ValueError("upper must be finite and above lower, elementwise")
    if not 0.0 < q < 1.0:
        raise ValueError("q must be in (0, 1)")
    if np.any(w < 0):
        raise ValueError("weighted quantile regression needs non-negative weights (clip them first)")
    p = X.shape[1]
    keep = w > 0
    if not np.any(keep):
        return _failed(p, NO_WEIGHT)
    X, lower, upper, w = X[keep], lower[keep], upper[keep], w[keep]
    Xs, x_scale, ws = _scaled_points(X, w)
    y_scale = float(max(np.max(np.abs(lower)), np.max(np.abs(upper))))
    a, b = lower / y_scale, upper / y_scale
    h = b - a
    if not identifies(X):
        return _failed(p, NOT_IDENTIFIED)

    def objective(beta: np.ndarray) -> tuple[float, np.ndarray]:
        f = Xs @ beta
        return float(ws @ integrated_check_loss(f, a, b, q)), Xs.T @ (ws * (np.clip((f - a) / h, 0.0, 1.0) - q))

    start = weighted_least_squares(Xs, 0.5 * (a + b), ws).params
    if not np.all(np.isfinite(start)):
        start = np.zeros(p)
    found = minimize(objective, start, jac=True, method="L-BFGS-B", options={"maxiter": 10_000, "gtol": 1e-12})
    beta = _newton_polish(objective, found.x, Xs, ws, a, b)
    params = beta * y_scale / x_scale
    if not np.all(np.isfinite(params)):
        return _failed(p, "the integrated quantile regression did not converge to a finite solution")
    loss = float(w @ integrated_check_loss(X @ params, lower, upper, q))
    return WeightedFit(params=params, objective=loss)


def _newton_polish(objective, beta: np.ndarray, Xs, ws, a, b, steps: int = 50) -> np.ndarray:
    """Newton steps on the piecewise-quadratic objective, each accepted only if it decreases it (Armijo)."""
    h = b - a
    value, grad = objective(beta)
    for _ in range(steps):
        f = Xs @ beta
        active = (f > a) & (f < b)
        hessian = Xs.T @ (Xs * (ws * active / h)[:, None])
        try:
            step = np.linalg.solve(hessian, grad)
        except np.linalg.LinAlgError:
            return beta
        t = 1.0
        while t > 1e-10:
            candidate = beta - t * step
            new_value, new_grad = objective(candidate)
            if new_value <= value - 1e-4 * t * float(grad @ step):
                break
            t /= 2.0
        else:
            return beta
        converged = np.max(np.abs(candidate - beta)) < 1e-14
        beta, value, grad = candidate, new_value, new_grad
        if converged:
            break
    return beta


def weighted_binary_mle(link: Link, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> WeightedFit:
    """Maximise ``sum_r w_r l(y_r, x_r'b)``, the weighted (quasi-)log-likelihood of ``link`` (module docstring).

    Weights must be non-negative (rows of weight 0 are dropped); the columns
    are rescaled by their largest absolute value and the weights by their sum,
    as for :func:`weighted_quantile_regression`. ``stats`` holds the observed
    information ``-d^2/db^2`` of the weighted log-likelihood at the fit, and
    ``objective`` is minus that log-likelihood.
    """
    X, y, w = _check_inputs(X, y, w)
    if np.any(w < 0):
        raise ValueError("a weighted binary MLE needs non-negative weights (clip them first)")
    p = X.shape[1]
    keep = w > 0
    if not np.any(keep):
        return _failed(p, NO_WEIGHT)
    X, y, w = X[keep], y[keep], w[keep]
    if not identifies(X):
        return _failed(p, NOT_IDENTIFIED)
    Xs, x_scale, ws = _scaled_points(X, w)
    mle = fit_mle(link, Xs, y, ws, max_abs=MAX_SCALED_COEFFICIENT)
    if mle.failed:
        return _failed(p, NO_MLE)
    params = mle.params / x_scale
    information = mle.information * w.sum() / np.outer(x_scale, x_scale)
    return WeightedFit(params, stats={"information": information}, objective=float(-w @ link.loglik(y, X @ params)))

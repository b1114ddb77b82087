"""The minimiser of the perturbed objective (Chaudhuri, Monteleoni & Sarwate 2011, Algorithm 2's last step).

``n J(f) = sum_i l(x_i'f; y_i) + (n rho / 2) ||f||^2 + b'f`` with ``rho = Lambda + Delta``
(dpstats/mechanisms/objective/calibration.py), by Newton's method with step
halving from ``f = 0``. With ``rho > 0`` the objective is strongly convex and
smooth: the minimiser is unique and Newton's damped steps reach it. A run that
has not converged within ``MAX_ITER`` steps, or whose minimiser runs off
(``||f|| > MAX_NORM``: possible only when the ridge has underflowed to 0 at an
enormous eps and the rows are separated), returns NaN:
failure is an output, never an exception (docs/DESIGN.md section 2).
"""

from __future__ import annotations

import numpy as np

from .losses import IndexLoss

MAX_ITER = 100
MAX_NORM = 1e3
"""A minimiser with ``||f|| > MAX_NORM`` on the scaled problem (an index range of 1,000 over the unit ball: the
coefficients running off under separation) is returned as NaN."""
HALVINGS = 40
TOLERANCE = 1e-10


def objective(loss: IndexLoss, X: np.ndarray, y: np.ndarray, ridge: float, b: np.ndarray, f: np.ndarray) -> float:
    """``n J(f)`` (module docstring), with ``ridge = n rho``."""
    value, _, _ = loss.evaluate(y, X @ f)
    return float(value.sum() + 0.5 * ridge * f @ f + b @ f)


def gradient(loss: IndexLoss, X: np.ndarray, y: np.ndarray, f: np.ndarray) -> np.ndarray:
    """``sum_i l'(x_i'f) x_i``: the data's part of ``n grad J``; ``b(f) = -(gradient + n rho f)`` at a minimiser."""
    _, slope, _ = loss.evaluate(y, X @ f)
    return slope @ X


def minimise(loss: IndexLoss, X: np.ndarray, y: np.ndarray, ridge: float, b: np.ndarray) -> np.ndarray:
    """The minimiser of ``n J`` (``ridge = n rho``), or NaN if Newton's method does not find it (module docstring)."""
    f = _newton(loss, X, y, ridge, b)
    return f if float(np.linalg.norm(f)) <= MAX_NORM else np.full(X.shape[1], np.nan)


def _newton(loss: IndexLoss, X: np.ndarray, y: np.ndarray, ridge: float, b: np.ndarray) -> np.ndarray:
    p = X.shape[1]
    f = np.zeros(p)
    eye = np.eye(p)
    current = objective(loss, X, y, ridge, b, f)
    for _ in range(MAX_ITER):
        _, slope, curve = loss.evaluate(y, X @ f)
        grad = slope @ X + ridge * f + b
        hessian = (X * curve[:, None]).T @ X + ridge * eye
        step = -np.linalg.lstsq(hessian, grad, rcond=None)[0]
        if float(np.max(np.abs(step))) <= TOLERANCE * (1.0 + float(np.max(np.abs(f)))):
            return f
        factor = 1.0
        for _ in range(HALVINGS):
            trial = f + factor * step
            value = objective(loss, X, y, ridge, b, trial)
            if np.isfinite(value) and value <= current + 1e-12 * abs(current):
                f, current = trial, value
                break
            factor *= 0.5
        else:
            return f if float(np.max(np.abs(grad))) <= 1e-6 * (1.0 + abs(current)) else np.full(p, np.nan)
    return np.full(p, np.nan)

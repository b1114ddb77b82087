"""Maximum likelihood for binary-response models: Newton's method, one sample or a batch of samples at once.

Used on public points (a released histogram's cells), on the disjoint batches of
Tukey depth's mechanism (Amin et al. 2023, section 5) and for the non-private
reference. Both log-likelihoods are concave in the coefficients, so Newton's
method with step halving on the (weighted) log-likelihood converges from zero
whenever a finite maximiser exists. It does not exist under (quasi-)complete
separation, the trap of a small batch: the coefficients then run off to
infinity. A fit that has not converged within ``max_iter`` steps, whose
coefficients exceed ``max_abs``, or whose Hessian overflows, is returned as failed (an output, never an
exception: docs/DESIGN.md section 2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .links import Link

MAX_ITER = 60
TOLERANCE = 1e-9
HALVINGS = 30


@dataclass(frozen=True)
class MLE:
    """Coefficients ``(B, p)`` of a batch of fits (``(p,)`` for one), which failed, and the information.

    ``information`` is minus the Hessian of the weighted log-likelihood at the coefficients (``(B, p, p)``),
    the observed information; for the logit it is also the expected one.
    """

    params: np.ndarray
    failed: np.ndarray
    information: np.ndarray
    iterations: int


def objective(link: Link, X: np.ndarray, y: np.ndarray, w: np.ndarray, theta: np.ndarray, ridge: float) -> np.ndarray:
    """The weighted log-likelihood minus ``ridge/2 ||theta||^2``, per batch: ``(B,)``."""
    eta = np.einsum("bmp,bp->bm", X, theta)
    return np.sum(w * link.loglik(y, eta), axis=1) - 0.5 * ridge * np.sum(np.square(theta), axis=1)


def fit_mle(
    link: Link,
    X: np.ndarray,
    y: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    ridge: float = 0.0,
    max_abs: float = np.inf,
    max_iter: int = MAX_ITER,
) -> MLE:
    """The weighted MLE of ``link`` on ``X`` (``(m, p)``, or ``(B, m, p)`` for a batch) and ``y`` in [0, 1].

    ``weights`` default to 1 and must be >= 0; ``ridge`` adds ``-ridge/2 ||theta||^2`` to the objective.
    """
    one = np.ndim(X) == 2
    X = np.asarray(X, dtype=float)[None] if one else np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float).reshape(X.shape[:2])
    w = np.ones_like(y) if weights is None else np.asarray(weights, dtype=float).reshape(X.shape[:2])
    batches, _, p = X.shape
    theta = np.zeros((batches, p))
    done = np.zeros(batches, dtype=bool)
    broken = np.zeros(batches, dtype=bool)
    eye = np.eye(p)
    value = objective(link, X, y, w, theta, ridge)
    iterations = 0
    while iterations < max_iter and not done.all():
        iterations += 1
        eta = np.einsum("bmp,bp->bm", X, theta)
        gradient = np.einsum("bm,bmp->bp", w * link.score_factor(y, eta), X) - ridge * theta
        hessian = np.einsum("bm,bmp,bmq->bpq", w * link.curvature(y, eta), X, X) + ridge * eye
        overflow = ~np.isfinite(hessian).all(axis=(1, 2)) | ~np.isfinite(gradient).all(axis=1)
        hessian[overflow], gradient[overflow] = eye, 0.0  # such a fit stops here and fails (below)
        broken |= overflow
        done |= overflow
        step = np.einsum("bpq,bq->bp", np.linalg.pinv(hessian, hermitian=True), gradient)
        step[done] = 0.0
        theta, value, moved = _halved(link, X, y, w, theta, value, step, ridge)
        small = np.max(np.abs(step), axis=1) <= TOLERANCE * (1.0 + np.max(np.abs(theta), axis=1))
        done |= small | ~moved
    eta = np.einsum("bmp,bp->bm", X, theta)
    information = np.einsum("bm,bmp,bmq->bpq", w * link.curvature(y, eta), X, X) + ridge * eye
    broken |= ~np.isfinite(information).all(axis=(1, 2))
    information[broken] = eye
    failed = broken | ~done | ~np.all(np.isfinite(theta), axis=1) | (np.max(np.abs(theta), axis=1) > max_abs)
    failed |= np.linalg.matrix_rank(information, hermitian=True) < p
    params = np.where(failed[:, None], np.nan, theta)
    if one:
        return MLE(params[0], failed[0], information[0], iterations)
    return MLE(params, failed, information, iterations)


def _halved(
    link: Link,
    X: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    theta: np.ndarray,
    value: np.ndarray,
    step: np.ndarray,
    ridge: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each batch's Newton step, halved until the objective does not decrease; a batch that finds no such step
    keeps its coefficients (``moved`` False)."""
    factor = np.ones(len(theta))
    pending = np.any(step != 0.0, axis=1)
    new_theta, new_value = theta.copy(), value.copy()
    for _ in range(HALVINGS):
        if not pending.any():
            break
        trial = theta[pending] + factor[pending, None] * step[pending]
        trial_value = objective(link, X[pending], y[pending], w[pending], trial, ridge)
        better = np.isfinite(trial_value) & (trial_value >= value[pending] - 1e-12 * np.abs(value[pending]))
        index = np.flatnonzero(pending)
        new_theta[index[better]] = trial[better]
        new_value[index[better]] = trial_value[better]
        pending[index[better]] = False
        factor[pending] *= 0.5
    moved = ~pending & np.any(step != 0.0, axis=1)
    return new_theta, new_value, moved | ~np.any(step != 0.0, axis=1)

"""The privacy error of DP Newton's release, by simulating its own iteration on released values only.

The estimate's error has two parts. Sampling: the MLE's, ``H^{-1}`` with ``H``
the released curvature at the last iterate (the model's information, as
statsmodels' Logit reports). Privacy: every release's noise moves the iterate,
the early scores' and the Gram bound's too where the iteration has not
contracted them away, and the iteration's start at 0 may leave a shrinkage the
noise does not average out. The second part is measured by a parametric
bootstrap that is post-processing: ``REPLICATES`` reruns of the whole iteration
(dpstats/mechanisms/newton/mechanism.py) with the score linearised at the
released estimate, ``g(theta) = H (theta_hat - theta)``, fresh Laplace noise of
each release's scale on the score and on the released matrices, the same floors
and the same capped steps. The covariance reported is ``H^{-1}`` plus the
replicates' second moment about ``theta_hat`` (their mean error included, so that
a shrinkage the simulation shows widens the interval rather than being ignored).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...privacy import noise
from .steps import MAX_STEP

REPLICATES = 400


@dataclass(frozen=True)
class Iteration:
    """The public facts of one run: its number of early and Newton steps, each release's Laplace scale, and the
    floors the released matrices were raised to."""

    early: int
    newton: int
    gram_scale: float
    unit_score_scale: float
    unit_curvature_scale: float
    curvature_scale: float
    last_scale: float
    gram_floor: float
    unit_floor: float
    curvature_floor: float


def _noisy(matrix: np.ndarray, scale: float, floor: float, rng: np.random.Generator) -> np.ndarray:
    """``REPLICATES`` copies of ``matrix`` with symmetric Laplace noise of ``scale`` on its upper triangle, each
    with its eigenvalues raised to ``floor``."""
    p = matrix.shape[0]
    upper = np.triu(noise.laplace(rng, scale, (REPLICATES, p, p)))
    values, vectors = np.linalg.eigh(matrix + upper + np.triu(upper, 1).transpose(0, 2, 1))
    return np.einsum("rij,rj,rkj->rik", vectors, np.maximum(values, floor), vectors)


def _steps(matrices: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Each replicate's capped step ``M^{-1} g`` (dpstats/mechanisms/newton/steps.py's ``newton_step``)."""
    step = np.linalg.solve(matrices, scores[..., None])[..., 0]
    longest = np.max(np.abs(step), axis=1, keepdims=True)
    return step * np.minimum(1.0, MAX_STEP / np.maximum(longest, np.finfo(float).tiny))


def privacy_second_moment(
    gram: np.ndarray, curvature: np.ndarray, theta: np.ndarray, run: Iteration, rng: np.random.Generator
) -> np.ndarray:
    """``E[(theta* - theta_hat)(theta* - theta_hat)']`` over the simulated reruns (module docstring)."""
    p = theta.size
    bounds = _noisy(gram, run.gram_scale, run.gram_floor, rng)
    current = np.zeros((REPLICATES, p))
    for _ in range(run.early):
        score = (theta - current) @ curvature + noise.laplace(rng, run.unit_score_scale, (REPLICATES, p))
        current = current + _steps(bounds, score)
    for last in [False] * (run.newton - 1) + [True]:
        if last:
            matrices = _noisy(curvature, run.curvature_scale, run.curvature_floor, rng)
            score_noise = noise.laplace(rng, run.last_scale, (REPLICATES, p))
        else:
            matrices = _noisy(curvature, run.unit_curvature_scale, run.unit_floor, rng)
            score_noise = noise.laplace(rng, run.unit_score_scale, (REPLICATES, p))
        current = current + _steps(matrices, (theta - current) @ curvature + score_noise)
    errors = current - theta
    return errors.T @ errors / REPLICATES

"""Step 1 of the Tukey mechanism for ``dp_quantreg``: the q-th quantile regression of every batch.

Amin, Joseph, Ribero, Vassilvitskii (2023), Algorithm 2 fits OLS on each of m
disjoint batches; their privacy argument (and ours, for replacement
neighbours: dpstats/mechanisms/tukey/mechanism.py, part (a)) needs only that
each model is a function of its own batch and of data-independent draws, so
any per-batch estimator may take OLS's place. Here it is the q-th regression
quantile (Koenker & Bassett's check loss), and the Tukey median of the m
batch fits is a private median regression.

With survey weights each batch fits the weighted check loss ``sum_i w_i rho_q(r_i)``
(R's ``quantreg::rq(weights=)``): the IRLS weights and the polish's comparison take the factor ``w_i``.

Each batch is solved by iteratively reweighted least squares, the algorithm
of statsmodels' ``QuantReg``: from the batch's OLS fit, ``IRLS_STEPS`` times,
weighted least squares with weights ``q / |r_i|`` for a positive residual and
``(1 - q) / |r_i|`` for a negative one (``|r_i|`` floored at ``RESIDUAL_FLOOR``
times the batch's largest ``|y|``), each solved by the batches' common
elimination (dpstats/mechanisms/tukey/models.py). The number of steps is fixed
before the data are read and every batch runs the same arithmetic, so no
batch's model depends on another's rows (no stopping rule shared by the
stack). Which coefficients a batch cannot estimate, and the zero model of a
batch whose equations are not finite, are decided as for OLS
(:func:`~dpstats.mechanisms.tukey.models.batch_ols`).
"""

from __future__ import annotations

import numpy as np

from ..quantiles import check_function, check_quantile
from .models import MODEL_LIMIT, BatchFit, batch_ols, normal_equations, solve

IRLS_STEPS = 100
"""Reweighting steps per batch. With the polish (:func:`_polished`), tests/test_tukey_quantreg.py measured the
check loss at the exact linear program's (to 1e-9) in most batches of 4 to 100 rows (half of those with 100
rows and 10 columns), the median batch's at most 3e-6 above it and none more than 1.3% above it: far inside
the batch fits' own sampling spread."""
RESIDUAL_FLOOR = 1e-9
"""Residuals are floored at this fraction of the batch's largest |y| in the weights (a fitted row's weight is
then large but finite)."""


def quantile_batch_fit(q: float) -> BatchFit:
    """The batch fit of the q-th quantile regression, for :func:`~.models.partition_models`."""
    q = check_quantile(q)

    def fit(Xb: np.ndarray, yb: np.ndarray, wb: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        return batch_quantreg(Xb, yb, q, wb)

    return fit


def batch_quantreg(
    Xb: np.ndarray, yb: np.ndarray, q: float, wb: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The q-th quantile regression of each batch, weighted by the survey weights ``wb`` if given (module
    docstring): ``(k, d)`` coefficients and the ``(k, d)`` mask of the coefficients the batch cannot estimate
    (as :func:`~.models.batch_ols`)."""
    coef, unknown = batch_ols(Xb, yb, wb)
    w = np.ones(yb.shape) if wb is None else wb
    with np.errstate(all="ignore"):
        floor = RESIDUAL_FLOOR * np.max(np.abs(yb), axis=1, keepdims=True) + np.finfo(float).tiny
        for _ in range(IRLS_STEPS):
            residuals = yb - np.einsum("kbd,kd->kb", Xb, coef)
            weights = w * np.where(residuals > 0, q, 1.0 - q) / np.maximum(np.abs(residuals), floor)
            G, rhs, _ = normal_equations(Xb, yb, weights)
            coef = solve(G, rhs)
        coef = _polished(Xb, yb, q, coef, w)
    return np.clip(coef, -MODEL_LIMIT, MODEL_LIMIT), unknown


def check_loss(Xb: np.ndarray, yb: np.ndarray, q: float, coef: np.ndarray, wb: np.ndarray | None = None) -> np.ndarray:
    """``(k,)``: each batch's check loss ``sum_i w_i r_i (q - 1{r_i < 0})`` at its coefficients (``w_i`` = 1 when
    ``wb`` is None)."""
    losses = check_function(yb - np.einsum("kbd,kd->kb", Xb, coef), q)
    return np.sum(losses if wb is None else wb * losses, axis=1)


def _polished(Xb: np.ndarray, yb: np.ndarray, q: float, coef: np.ndarray, wb: np.ndarray) -> np.ndarray:
    """The fit through the d rows nearest each batch's IRLS fit, where its check loss is lower.

    A linear program's solution is a vertex: it fits d rows exactly (Koenker &
    Bassett's elemental subsets). IRLS approaches it only linearly; the d rows
    with the smallest residuals name the vertex it approaches, and solving
    through them lands on it.
    """
    d = Xb.shape[2]
    nearest = np.argsort(np.abs(yb - np.einsum("kbd,kd->kb", Xb, coef)), axis=1, kind="stable")[:, :d]
    G, rhs, _ = normal_equations(
        np.take_along_axis(Xb, nearest[:, :, None], axis=1), np.take_along_axis(yb, nearest, axis=1)
    )
    vertex = solve(G, rhs)
    better = check_loss(Xb, yb, q, vertex, wb) < check_loss(Xb, yb, q, coef, wb)
    return np.where(better[:, None], vertex, coef)

"""Step 1 of the Tukey mechanism: m models on a random partition of the rows.

Amin, Joseph, Ribero, Vassilvitskii (2023), Algorithm 2, lines 1-4: shuffle the
rows, split them into m disjoint batches and fit OLS on each (or, for
``dp_quantreg``, the q-th quantile regression: dpstats/mechanisms/tukey/quantile_models.py;
the proof needs only that each model is a function of its own batch). Here every row
is used: the batches hold ``floor(n/m)`` or ``ceil(n/m)`` rows (the public code
drops the ``n mod m`` left over). The permutation is drawn through
dpstats/privacy/noise.py and does not depend on the data.

What the privacy proof needs (dpstats/mechanisms/tukey/mechanism.py): each model is a
function of its own batch only (and of data-independent draws), computed the
same way whatever the other batches hold, so that replacing one row changes
at most one model. Hence no data-dependent switch between solvers for the
whole stack (such as a batched ``np.linalg.solve`` that falls back to
``pinv`` when one batch is singular): each batch is solved by the same
vectorised elimination, which drops a column that is (numerically) a
combination of the earlier ones *in that batch*. A batch whose normal
equations are not finite (a row with an infinite value, or values so large
that X'X overflows) gets the zero model, and every model is clipped to
``[-MODEL_LIMIT, MODEL_LIMIT]``: maps of one batch or one model, so free,
and every log volume downstream is finite or -inf, never NaN.

A coefficient that a batch cannot estimate (its column is a combination of
the others in that batch: a dummy whose level is absent, or, when the
baseline level is absent, the intercept and the dummies) has no value there.
R's ``lm`` reports NA; least squares' minimum-norm solution (and Amin et
al.'s code) gives 0 for a dropped column and silently changes the meaning of
the kept ones. Zero is a value, and a cluster of zeros drags the
coordinate-wise depth towards 0: with a level of frequency 0.2 absent from
11% of batches of 10 rows, the released dummy coefficient was biased by one
standard error (26% of batches of 6 rows: 2.5 standard errors). Here such a
coefficient is set to ``+MODEL_LIMIT`` or ``-MODEL_LIMIT`` with a sign drawn
for every (batch, column) before the data are read (:func:`unknown_signs`):
the unknown coefficient lies in one extreme or the other, never in the
middle, so the batches that estimate it decide the depth and, the signs being
balanced in expectation, the median stays where they put it. The models are
still each a function of their own batch and their own data-independent
draws. The price: many unknown coefficients (40% of 4-row batches for a
level of frequency 0.2) spread the extremes and lower the PTR statistic.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...privacy import noise

#: Models are clipped to +-MODEL_LIMIT, so that box side lengths and their logs stay finite.
MODEL_LIMIT = 1e150
#: Tie-breaking jitter: each model coordinate v moves by U(0, 1) x (JITTER_RELATIVE |v| + JITTER_ABSOLUTE).
JITTER_RELATIVE = 1e-12
JITTER_ABSOLUTE = 1e-290
#: A pivot below PIVOT_TOL x its diagonal (1 - R^2 of the column on the earlier ones) drops the column.
PIVOT_TOL = 1e-10


def batch_layout(n: int, m: int) -> tuple[int, int]:
    """``(b, r)``: r batches of ``b + 1`` rows and ``m - r`` of b rows (``n = m b + r``)."""
    return divmod(n, m)


BatchFit = Callable[[np.ndarray, np.ndarray, np.ndarray | None], tuple[np.ndarray, np.ndarray]]
"""Fits every batch of a stack: ``(k, b, d)`` rows, ``(k, b)`` responses and ``(k, b)`` survey weights (None:
unweighted) to ``(k, d)`` coefficients and the ``(k, d)`` mask of those the batch cannot estimate
(:func:`batch_ols`)."""


def partition_models(
    X: np.ndarray,
    y: np.ndarray,
    m: int,
    rng: np.random.Generator,
    batch_fit: BatchFit | None = None,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """``(m, d)``: the coefficients of ``batch_fit`` (default :func:`batch_ols`) on m disjoint batches of a
    uniformly random partition of the rows, each batch fitted with its own rows' survey ``weights`` (None:
    unweighted).

    The first r batches take ``b + 1`` rows and the others b (``n = m b + r``).
    The models are returned with their ties broken (:func:`break_ties`). A row's weight enters its own
    batch's fit only, as its x and y do: the proof's part (a) (dpstats/mechanisms/tukey/mechanism.py) holds
    with the weight read as part of the row.
    """
    batch_fit = batch_ols if batch_fit is None else batch_fit
    n, d = X.shape
    b, r = batch_layout(n, m)
    order = noise.permutation(rng, n)
    signs = unknown_signs(rng, m, d)
    stacks = (order[: r * (b + 1)].reshape(r, b + 1), order[r * (b + 1) :].reshape(m - r, b))
    fits = [
        batch_fit(np.take(X, rows, axis=0), np.take(y, rows), None if weights is None else np.take(weights, rows))
        for rows in stacks
    ]
    models = np.vstack([coef for coef, _ in fits])
    dropped = np.vstack([aliased for _, aliased in fits])
    return finish_models(models, dropped, signs, rng)


def unit_partition_models(
    X: np.ndarray,
    y: np.ndarray,
    codes: np.ndarray,
    count: int,
    m: int,
    rng: np.random.Generator,
    batch_fit: BatchFit | None = None,
) -> np.ndarray:
    """``(m, d)``: the models of m disjoint batches made of whole units (``codes[i]`` is row i's unit of
    ``count``; dpstats/design/units.py).

    A uniformly random permutation of the units deals them to the batches in
    turn, so every batch holds ``floor(count/m)`` or ``ceil(count/m)`` units
    and all the rows of each. The deal reads the units' codes, which are the
    same on unit-level neighbours (the panel's shape is public), and draws
    that do not depend on the data; so replacing every row of one unit
    changes the batch of that unit only, and the proof of
    dpstats/mechanisms/tukey/mechanism.py (step (a)) holds with "row"
    read as "unit". Batches of equal size are fitted together.
    """
    batch_fit = batch_ols if batch_fit is None else batch_fit
    d = X.shape[1]
    batch_of_unit = np.empty(count, dtype=np.int64)
    batch_of_unit[noise.permutation(rng, count)] = np.arange(count) % m
    signs = unknown_signs(rng, m, d)
    batch = batch_of_unit[codes]
    order = np.argsort(batch, kind="stable")
    sizes = np.bincount(batch, minlength=m)
    rows_of = np.split(order, np.cumsum(sizes)[:-1])
    models, dropped = np.zeros((m, d)), np.zeros((m, d), dtype=bool)
    for size in np.unique(sizes):
        same = np.flatnonzero(sizes == size)
        rows = np.vstack([rows_of[j] for j in same]) if size else np.zeros((same.size, 0), dtype=np.int64)
        models[same], dropped[same] = batch_fit(np.take(X, rows, axis=0), np.take(y, rows), None)
    return finish_models(models, dropped, signs, rng)


def finish_models(models: np.ndarray, unknown: np.ndarray, signs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The ``(m, d)`` models with each coefficient a batch cannot estimate at ``signs * MODEL_LIMIT`` (``signs``
    drawn before the data are read: :func:`unknown_signs`) and their ties broken (:func:`break_ties`)."""
    models = np.where(unknown, signs * MODEL_LIMIT, models)
    return break_ties(models, rng)


def unknown_signs(rng: np.random.Generator, m: int, d: int) -> np.ndarray:
    """``(m, d)`` signs, +1 or -1 with probability 1/2 each, drawn before the data are read (module docstring)."""
    return np.where(noise.uniform(rng, 0.0, 1.0, (m, d)) < 0.5, -1.0, 1.0)


def break_ties(models: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Move every coordinate by a tiny uniform amount, so that tied models no longer tie.

    Exact ties are common: a rare dummy absent from most batches gets the
    coefficient 0 in all of them, and then the depth boxes are flat (zero
    volume) and the test cannot pass. Amin et al.'s code adds ``1e-10 U(0,1)``;
    a fixed absolute size would swamp coefficients measured in large units,
    so here the move is relative (``1e-12 |v|``) plus ``1e-290`` for exact
    zeros. The draws do not depend on the data and each model moves by a
    function of itself only, so replacing a row still changes one model.
    """
    u = noise.uniform(rng, 0.0, 1.0, models.shape)
    return models + u * (JITTER_RELATIVE * np.abs(models) + JITTER_ABSOLUTE)


def batch_ols(Xb: np.ndarray, yb: np.ndarray, wb: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """OLS of each batch (weighted least squares with the ``(k, b)`` survey weights ``wb``, if given): ``Xb`` is
    ``(k, b, d)``, ``yb`` is ``(k, b)``; returns the ``(k, d)`` coefficients and the ``(k, d)`` mask of the
    coefficients that the batch cannot estimate (with weights: whose column is a combination of the others
    among the rows of positive weight).

    The normal equations of each batch (:func:`normal_equations`) are solved
    by Gaussian elimination without pivoting (:func:`solve`): they are
    positive semi-definite, and the elimination is invariant to the columns'
    scales. A column whose pivot falls below ``PIVOT_TOL`` times its diagonal
    (1 - R^2 on the earlier columns) is dropped from that batch, with
    coefficient 0; so is an all-zero column. That gives one least-squares
    solution; its coefficient j is the batch's estimate exactly when j is
    estimable, i.e. when column j is not (to the same tolerance) a
    combination of all the other columns (:func:`_estimable`). A dummy whose
    level is absent is not; neither, when the baseline level is absent, are
    the intercept and the dummies whose difference alone the batch sees (the
    elimination would have kept them, with the meaning of another baseline).
    """
    return models_of_equations(*normal_equations(Xb, yb, wb))


def models_of_equations(G: np.ndarray, rhs: np.ndarray, bad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``(k, d)`` coefficients of each batch's normal equations (``G`` ``(d, d, k)``, ``rhs`` ``(d, k)``, zero
    where ``bad``: :func:`normal_equations`), clipped to ``MODEL_LIMIT``, and the ``(k, d)`` mask of those the batch
    cannot estimate (:func:`batch_ols`). Each batch's model is a function of its own equations only."""
    with np.errstate(all="ignore"):
        coef = solve(G, rhs)
        unknown = ~_estimable(G) & ~bad[:, None]
    return np.clip(coef, -MODEL_LIMIT, MODEL_LIMIT), unknown


def normal_equations(
    Xb: np.ndarray, yb: np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each batch's (weighted) normal equations, batch axis last: ``G`` ``(d, d, k)``, ``rhs`` ``(d, k)``, and the
    ``(k,)`` mask of batches whose equations are not finite (a row with an infinite value, or values so large
    that X'X overflows), whose equations are set to zero (so they solve to the zero model)."""
    k, _, d = Xb.shape
    Xw = Xb if weights is None else Xb * weights[:, :, None]
    with np.errstate(all="ignore"):
        G = np.empty((d, d, k))
        np.matmul(Xw.transpose(0, 2, 1), Xb, out=G.transpose(2, 0, 1))
        rhs = np.empty((d, k))
        np.matmul(Xw.transpose(0, 2, 1), yb[:, :, None], out=rhs.T[:, :, None])
    return finite_equations(G, rhs)


def finite_equations(G: np.ndarray, rhs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(G, rhs, bad)``: the ``(k,)`` mask ``bad`` of the batches whose equations are not all finite, set (in
    place) to zero equations, which solve to the zero model (:func:`normal_equations`)."""
    bad = ~(np.isfinite(G).all(axis=(0, 1)) & np.isfinite(rhs).all(axis=0))
    G[:, :, bad], rhs[:, bad] = 0.0, 0.0
    return G, rhs, bad


def solve(G: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``(k, d)``: one solution of each batch's normal equations (:func:`batch_ols`), 0 for a dropped column."""
    with np.errstate(all="ignore"):
        solution, _ = _eliminate(G.copy(), rhs.copy(), np.einsum("iik->ik", G).copy())
    return np.where(np.isnan(solution.T), 0.0, solution.T)


def _estimable(G: np.ndarray) -> np.ndarray:
    """``(k, d)``: column j of each batch is not a combination of the others (pivot of j eliminated last).

    For each j the normal equations are reordered so that j comes last and
    eliminated as in :func:`_eliminate`; the last pivot is then the residual
    sum of squares of column j on all the others, compared with
    ``PIVOT_TOL`` times its diagonal.
    """
    d, _, k = G.shape
    out = np.empty((k, d), dtype=bool)
    for j in range(d):
        order = [*range(j), *range(j + 1, d), j]
        A = G[np.ix_(order, order)].copy()
        diag = np.einsum("iik->ik", A).copy()
        _, pivots = _eliminate(A, np.zeros((d, k)), diag)
        out[:, j] = np.isfinite(pivots[d - 1])
    return out


def _eliminate(A: np.ndarray, rhs: np.ndarray, diag: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``A x = rhs`` in place for every batch (``A`` is ``(d, d, k)``), dropping weak pivots.

    Returns the solution and the pivots, ``inf`` where a column was dropped.
    """
    d, _, k = A.shape
    pivots = np.ones((d, k))
    for p in range(d):
        good = A[p, p] > PIVOT_TOL * diag[p]
        pivots[p] = np.where(good, A[p, p], np.inf)  # x_p = 0 for a dropped column
        factor = A[p + 1 :, p] * (good / pivots[p])
        A[p + 1 :, p + 1 :] -= factor[:, None, :] * A[p, None, p + 1 :]
        rhs[p + 1 :] -= factor * rhs[p]
    x = np.zeros((d, k))
    for p in range(d - 1, -1, -1):
        x[p] = (rhs[p] - (A[p, p + 1 :] * x[p + 1 :]).sum(axis=0)) / pivots[p]
    return x, pivots

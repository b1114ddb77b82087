"""NoisyStats without failure: ``singular="repair"`` floors the noisy Gram matrix's eigenvalues at its noise's norm.

Algorithm 1 of Alabi et al. (2022) fails (its output ⊥) when the noisy
n*var(x) is not positive; the multivariate generalisation
(dpstats/mechanisms/noisystats/mechanism.py) when the noisy matrix it solves,
``A~ = A + E``, is not positive definite. With ten regressors on [0, 1] at
n = 1,000 and eps = 1 the noise E is larger than A, and the paper's
mechanism fails in most runs.

``singular="repair"`` solves with ``R(A~)`` instead: in the eigendecomposition
``A~ = V diag(l) V'`` every eigenvalue below ``lambda`` is raised to it,

    R(A~) = V diag(max(l, lambda)) V',

where ``lambda`` is the LEVEL quantile of the spectral norm ``||E||_2`` of
the release's noise: E symmetric with the released entries' iid Laplace
noise of the release's scale and the unreleased entries fixed (n, structural
zeros: dpstats/mechanisms/noisystats/structured.py).
Its law depends only on the public pattern of the release and the public
Laplace scale (sensitivity over budget), so lambda is public: it is the
quantile at scale 1 times the scale, the quantile computed once per pattern
by simulation from a fixed public seed (:func:`norm_quantile`). ``R`` then
reads only the released matrix and public numbers: it is post-processing of
the release and costs no budget (Alabi et al. 2022, Lemma 14; docs/DESIGN.md
section 2). The intercept's release, which uses the repaired slopes, is
unchanged (its sensitivity holds for any released slopes).

Why this repair. By Weyl's inequality every eigenvalue of A~ is within
``||E||_2`` of A's, so with probability LEVEL an eigenvalue of A~ below
lambda is compatible with an eigenvalue of A near zero: such directions are
noise-dominated, and their inverse eigenvalues, which blow up the solve or
flip its sign, are replaced by ``1/lambda``, the most the noise allows.
Directions whose eigenvalues clear the bound are kept as released, so where
A~ is well determined the estimate is Algorithm 1's. A ridge
``A~ + lambda I`` (with the same floor, so that it never fails) shrinks
every direction, the well-determined ones too. Measured by
benchmarks/bench_noisystats_repair.py (benchmarks/bench_auto.py's cells,
data and metric: C(68)/sigma of p25, all of eps on the point; the variants
post-process the same releases), geometric means over the cells:

=================  ==============  =============  ==============
variant            d = 1 (48)      d = 3 (6)      d = 10 (6)
=================  ==============  =============  ==============
floor (LEVEL)      17.6            3.85           6.70
floor (median)     23.7            4.04           6.55
floor if failing   23.0            4.37           6.70
ridge              19.2            5.63           8.11
=================  ==============  =============  ==============

The ridge is a little better (by about 5%) where the noise swamps S_xx at
d = 1 and much worse where the paper's estimate is good (d = 3, n = 10,000,
eps = 10: 1.43 against 0.63; d = 10, n = 10,000, eps = 10: 9.6 against
3.39); a floor at the median or only when the paper fails keeps too many
noise-dominated directions. The paper's mechanism failed (infinite error)
in 18, 3 and 5 of those cells.

The standard errors' parametric bootstrap (:mod:`.inference`) refits
through the same ``R`` with the same lambda, so the replicates have the law
of the repaired estimator; the repaired matrix is the bootstrap's truth.
Measured by benchmarks/bench_coverage.py (``noisystats repaired``, 500
replications, eps = 1): where the repair binds the 95% intervals cover a
little less than they should, as the paper's own intervals do where it
succeeds: at n = 100 the slope 0.93 (symmetric) and 0.91 (categorical, where
the paper fails in 74% of runs), the intercept 0.90 and 0.95; at n = 300
0.93-0.95 for the slopes and 0.87-0.95 for the intercept (the paper: 0.91 for
the intercept); at n = 1,000 they equal the paper's (0.95-0.98). Percentile
intervals: basic ones covered less (0.85-0.94).
"""

from __future__ import annotations

import functools

import numpy as np

from ...privacy import noise

SINGULAR = ("fail", "repair")
"""The values of NoisyStats' ``singular`` option: the paper's failure output, or this module's repair."""
LEVEL = 0.95
"""The probability with which the noise's spectral norm is at most the floor."""
DRAWS = 4000
"""Simulated noise matrices per pattern (the quantile's Monte Carlo error is below 1%)."""
SEED = 20261125
"""The public seed of the simulation (the floor is a public constant of the pattern)."""


def check_singular(singular: object) -> str:
    """The validated ``singular`` option (a ValueError names the allowed values)."""
    if not isinstance(singular, str) or singular not in SINGULAR:
        raise ValueError(f"singular must be one of {SINGULAR}, got {singular!r}")
    return singular


@functools.lru_cache(maxsize=256)
def norm_quantile(size: int, rows: tuple[int, ...], cols: tuple[int, ...]) -> float:
    """The LEVEL quantile of ``||E||_2`` for Laplace(1) noise on the pattern (a public constant).

    E is ``size x size`` and symmetric with iid Laplace(1) entries at
    ``(rows, cols)`` mirrored (the upper triangle), zero elsewhere.
    """
    rng = noise.independent_rngs(SEED, 1)[0]
    return float(np.quantile(spectral_norms(noise_matrices(rng, 1.0, size, rows, cols, DRAWS)), LEVEL))


def noise_matrices(
    rng: np.random.Generator,
    scale: float,
    size: int,
    rows: tuple[int, ...] | np.ndarray,
    cols: tuple[int, ...] | np.ndarray,
    count: int,
) -> np.ndarray:
    """``count`` noise matrices of the pattern (:func:`norm_quantile`) at Laplace scale ``scale``."""
    rows, cols = np.asarray(rows, dtype=np.intp), np.asarray(cols, dtype=np.intp)
    E = np.zeros((count, size, size))
    draws = noise.laplace(rng, scale, (count, rows.size))
    E[:, rows, cols] = draws
    E[:, cols, rows] = draws
    return E


def spectral_norms(matrices: np.ndarray) -> np.ndarray:
    """The spectral norm of each symmetric matrix of a stack."""
    return np.abs(np.linalg.eigvalsh(matrices)).max(axis=-1)


def upper_pattern(size: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Every entry of the upper triangle: the pattern of a fully released symmetric matrix."""
    rows, cols = np.triu_indices(size)
    return tuple(map(int, rows)), tuple(map(int, cols))


def floor(size: int, scale: float) -> float:
    """lambda for a fully released ``size x size`` symmetric matrix with iid Laplace(``scale``) entries."""
    return scale * norm_quantile(size, *upper_pattern(size))


def repaired(matrix: np.ndarray, bound: float) -> np.ndarray:
    """``R(A~)``: eigenvalues below ``bound`` raised to it (a stack of matrices too); positive definite."""
    values, vectors = np.linalg.eigh(matrix)
    return (vectors * np.maximum(values, bound)[..., None, :]) @ np.swapaxes(vectors, -1, -2)


def floor_bias(matrix: np.ndarray, bound: float) -> str | None:
    """The bias a repair keeps, named where it binds (else None): raising an eigenvalue to the floor shrinks the
    estimate along its direction, and the bootstrap, whose truth is the repaired matrix, repeats the shrinkage
    rather than covering it. Post-processing: the released matrix and the public floor."""
    raised = int(np.sum(np.linalg.eigvalsh(matrix) < bound))
    if raised == 0:
        return None
    return (
        f"the repair's shrinkage: {raised} eigenvalue(s) of the noisy Gram matrix lay below the noise floor and "
        "were raised to it, which pulls the estimate towards 0 along those directions (near-collinear terms such "
        "as x and x**2 first; dpstats/mechanisms/noisystats/repair.py)"
    )


def solve_refits(matrices: np.ndarray, rhs: np.ndarray, floor: float | None) -> np.ndarray:
    """Each ``matrices[b]^{-1} rhs[b]``: repaired at ``floor``, or NaN where not positive definite (no floor)."""
    if floor is not None:
        return np.linalg.solve(repaired(matrices, floor), rhs[..., None])[..., 0]
    definite = np.linalg.eigvalsh(matrices)[:, 0] > 0
    out = np.full(rhs.shape, np.nan)
    if definite.any():
        out[definite] = np.linalg.solve(matrices[definite], rhs[definite][..., None])[..., 0]
    return out

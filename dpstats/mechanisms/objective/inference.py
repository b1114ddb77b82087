"""Standard errors of objective perturbation: a noisy information matrix at the released coefficients.

The estimate ``f`` minimises ``sum_i l(x_i'f) + (n rho / 2) ||f||^2 + b'f`` on the
scaled problem (dpstats/mechanisms/objective/solver.py; the loss is the row's
negative log-likelihood over L). Linearised around the MLE, with the
information ``H = sum_i w(x_i'f) x_i x_i'`` (``w`` Fisher's weight,
dpstats/glm/links.py) and ``S = H + n rho L I``,

    f - f_MLE ~ -S^{-1} (n rho L f + L b) + (sampling error of the MLE),

so the covariance is ``S^{-1} H S^{-1}`` (sampling: the ridge-shrunk MLE's
sandwich, ``H^{-1}`` without a ridge) ``+ L^2 (p + 1) / beta^2 S^{-2}`` (the
privacy noise: ``E[b b'] = (p + 1) / beta^2 I``, dpstats/mechanisms/objective/sampler.py),
mapped to the user's units by the scaling's linear map A. The ridge's pull
``S^{-1} n rho L f`` is the estimand gap: it vanishes as eps grows (n rho = c /
(e^{eps/4} - 1) without a regulariser) and is named in the release's ``bias``
when it exceeds half a standard error.

H is private. It is released by the Laplace mechanism
(dpstats/privacy/noise.py's ``laplace_mechanism``, float-safe) on its upper
triangle at the released f, with the share ``se_share`` of eps. Sensitivity for
replace-one neighbours: entry (j, k) of one row's term is ``w x_j x_k`` with ``w``
in ``[0, w_max]`` (``w_max`` = 1/4 for the logit, 2/pi for the probit, Fisher's
weight at eta = 0) and ``x_j x_k`` in the range of the product over the scaled
box (0 for two columns of one one-hot block), so one replaced row moves it by
at most ``w_max (max(hi, 0) - min(lo, 0))``; the L1 sensitivity is the sum of
these widths over the upper triangle (brute-forced in tests/test_objective_logit.py).

The repair (post-processing of the release and public numbers). Each
eigenvalue of the noisy matrix is lowered by ``sigma = sqrt(2)`` Laplace
scales (about the noise in one eigenvalue) and kept above ``LOW sigma``. A
lower information gives larger standard errors, so where the noise swamps the
information (small n eps) the intervals err on the wide side rather than
collapse; raising noisy eigenvalues to a floor, as NoisyStats' point does,
made them far too narrow there (benchmarks/bench_objective_coverage.py:
coverage 0.35 at n = 1,000, eps = 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...design.bounds import power, product
from ...glm.links import Link
from ...privacy import noise
from ...uncertainty.sandwich import from_upper_triangle, upper_triangle
from .sampler import second_moment
from .scaling import RowScale

DEFAULT_SHARE = 0.2
"""The part of eps the noisy information matrix spends unless the user's ``se_share`` says otherwise."""
FLOOR = math.sqrt(2.0)
"""``sigma``: what the repair subtracts from each eigenvalue, in Laplace scales (the Laplace law's sd)."""
LOW = 0.1
"""The least eigenvalue of the repaired information, in units of the noise's spectral scale."""
RIDGE_BIAS = 0.5
"""The ridge's pull, in standard errors, above which the release names it as a bias."""
NO_SE_NOTE = "no standard errors (se_share=0: the whole budget went to the coefficients)"


def weight_max(link: Link) -> float:
    """``sup w``: Fisher's weight is largest at eta = 0, ``f(0)^2 / (1/4)``: 1/4 (logit), 2/pi (probit)."""
    return 4.0 * link.density_max**2


def entry_widths(scale: RowScale, column_bounds: np.ndarray, link: Link) -> np.ndarray:
    """How far one replaced row moves each upper-triangle entry of ``sum_i w_i x_i x_i'`` (module docstring)."""
    p = column_bounds.shape[0]
    widths = []
    for j in range(p):
        for k in range(j, p):
            if scale.same_block(j, k):
                widths.append(0.0)
                continue
            lo, hi = (
                power(tuple(column_bounds[j]), 2)
                if j == k
                else product(tuple(column_bounds[j]), tuple(column_bounds[k]))
            )
            widths.append(weight_max(link) * (max(hi, 0.0) - min(lo, 0.0)))
    return np.array(widths)


def information(link: Link, X: np.ndarray, f: np.ndarray) -> np.ndarray:
    """The upper triangle of ``sum_i w(x_i'f) x_i x_i'`` (the statistic the noise is added to)."""
    w = link.information_weight(X @ f)
    return upper_triangle((X * w[:, None]).T @ X)


@dataclass(frozen=True)
class Uncertainty:
    """The covariance in the user's units, the ridge's pull on the estimate (user units) and the note."""

    cov: np.ndarray
    pull: np.ndarray
    note: str


def release_information(
    rng: np.random.Generator, link: Link, X: np.ndarray, f: np.ndarray, widths: np.ndarray, eps: float
) -> np.ndarray:
    """The noisy information matrix at the released ``f`` (Laplace, L1 sensitivity ``widths.sum()``)."""
    noisy = noise.laplace_mechanism(rng, information(link, X, f), float(widths.sum()), eps, "objective information")
    return from_upper_triangle(np.asarray(noisy, dtype=float), f.size)


def repair(matrix: np.ndarray, laplace_scale: float) -> np.ndarray:
    """The noisy information, each eigenvalue lowered by ``sigma = FLOOR`` Laplace scales and kept above
    ``LOW sigma`` (post-processing; module docstring)."""
    values, vectors = np.linalg.eigh((matrix + matrix.T) / 2.0)
    nu = FLOOR * laplace_scale
    return (vectors * np.maximum(values - nu, LOW * nu)) @ vectors.T


def covariance(
    info: np.ndarray, f: np.ndarray, ridge: float, lipschitz: float, beta: float, to_user: np.ndarray
) -> Uncertainty:
    """Sampling plus privacy covariance and the ridge's pull, from the repaired information (module docstring)."""
    p = f.size
    penalty = ridge * lipschitz
    S_inv = np.linalg.inv(info + penalty * np.eye(p))
    scaled = S_inv @ info @ S_inv + lipschitz**2 * second_moment(p, beta) * (S_inv @ S_inv)
    cov = to_user @ scaled @ to_user.T
    pull = to_user @ (S_inv @ (penalty * f))
    note = (
        "model-based: the inverse of a noisy information matrix at the released coefficients (sampling) plus "
        "the objective's noise mapped through it (privacy)"
    )
    return Uncertainty((cov + cov.T) / 2.0, pull, note)

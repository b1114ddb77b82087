"""Noisy averages at released coefficients: what the average marginal effects and their standard errors need.

With the coefficients ``theta`` already released, the average marginal effect
of every design column is ``theta_j s`` with ``s = mean_i f(x_i'theta)``
(statsmodels' ``get_margeff(at="overall", method="dydx")``, which treats every
column as continuous), and its delta-method Jacobian is
``d AME_j / d theta_k = 1(j = k) s + theta_j g_k`` with
``g_k = mean_i f'(x_i'theta) x_ik``. Both are means over the private rows, so
they are released here with their own part of eps (sequential composition with
the coefficients' release, whose output ``theta`` they may depend on).

Sensitivity under replace-one neighbours (docs/DESIGN.md section 2), each sum
scaled first by its per-row bound: a row adds ``f(eta) / sup f`` in [0, 1] to
the first sum and ``f'(eta) x_k / (sup |f'| a_k)`` in [-1, 1] to the k-th of the
others, ``a_k`` the largest ``|x_k|`` the declared bounds allow. Replacing one row
moves the first by at most 1 and each other by at most 2: an L1 sensitivity of
``1 + 2p`` (``k (1 + 2p)`` when a unit of ``k`` rows changes). The vector gets
Laplace noise through :func:`dpstats.privacy.noise.laplace_mechanism`
(float-safe); unscaling and dividing by the public n are post-processing.
``tests/test_glm.py`` checks the bound by brute force over the box's corners.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..privacy import noise
from .links import Link


@dataclass(frozen=True)
class AtFit:
    """The released ``s`` and ``g`` at ``theta``, and the variance of ``s``'s noise (NaN after a failed fit)."""

    density_mean: float
    slope_means: np.ndarray
    density_noise_var: float


def row_bounds(x_bounds: np.ndarray) -> np.ndarray:
    """``a_k``: the largest absolute value each design column's declared bounds allow (at least a tiny positive
    number, so that a column fixed at 0 scales to 0)."""
    bounds = np.asarray(x_bounds, dtype=float)
    return np.maximum(np.max(np.abs(bounds), axis=1), np.finfo(float).tiny)


def scaled_rows(link: Link, X: np.ndarray, theta: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Each row's contribution to the released sums: ``(n, 1 + p)``, every entry in [-1, 1] (the first in [0, 1])."""
    eta = X @ theta
    first = link.density(eta) / link.density_max
    rest = link.density_slope(eta)[:, None] * X / (link.slope_max * scale[None, :])
    return np.column_stack([first, rest])


def sensitivity(p: int, unit_rows: int = 1) -> float:
    """The L1 sensitivity of the scaled sums (module docstring)."""
    return float(unit_rows * (1 + 2 * p))


def release_at_fit(
    link: Link,
    X: np.ndarray,
    x_bounds: np.ndarray,
    theta: np.ndarray,
    eps: float,
    rng: np.random.Generator,
    unit_rows: int = 1,
    weights: np.ndarray | None = None,
    weight_bounds: tuple[float, float] | None = None,
) -> AtFit:
    """The noisy ``s`` and ``g`` at ``theta`` (module docstring); NaN, spending the same eps, where ``theta`` is
    not finite (a failed fit, itself released). With survey weights they are weighted means: each row's terms
    are multiplied by ``w / w_max`` (still in [-1, 1]) and the weights' sum ``sum w / w_max`` is released with
    them (a row moves it by at most 1): an L1 sensitivity of ``2 + 2p``."""
    n, p = X.shape
    if not np.all(np.isfinite(theta)):
        return AtFit(float("nan"), np.full(p, np.nan), float("nan"))
    scale = row_bounds(x_bounds)
    terms = np.clip(scaled_rows(link, X, theta, scale), -1.0, 1.0)
    if weights is None or weight_bounds is None:
        total, count, delta = terms.sum(axis=0), float(n), sensitivity(p, unit_rows)
    else:
        lo, hi = weight_bounds
        share = np.clip(weights, lo, hi) / hi
        total = np.append((share[:, None] * terms).sum(axis=0), share.sum())
        delta = sensitivity(p, unit_rows) + unit_rows
    noisy = np.asarray(noise.laplace_mechanism(rng, total, delta, eps, "margins"), dtype=float)
    if weights is not None and weight_bounds is not None:
        lo, hi = weight_bounds
        count = float(max(noisy[-1], n * lo / hi, 1.0))  # the weights' sum, at least what the range allows
        noisy = noisy[:-1]
    density_mean = float(np.clip(noisy[0] / count, 0.0, 1.0)) * link.density_max
    slope_means = noisy[1:] * link.slope_max * scale / count
    noise_var = 2.0 * (delta / eps * link.density_max / count) ** 2
    return AtFit(density_mean, slope_means, noise_var)

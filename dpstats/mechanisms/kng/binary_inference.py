"""Standard errors and intervals for KNG's logit and probit: a noisy information matrix and the K-norm noise.

As for least squares (dpstats/mechanisms/kng/inference.py), the release ``phi~``
errs by the sampling error of the MLE ``phi^`` plus the privacy noise
``phi~ - phi^``, and both are reported from one release made with the share
``se_share`` of eps (the draw gets the rest) and post-processing:

* the Fisher information at the released coefficients,
  ``H = sum_i w(u_i'phi~) u_i u_i'`` with ``w = f^2 / (F (1 - F))`` (``Link.information_weight``:
  ``F (1 - F)`` for the logit), on the scaled rows. Each row's term is
  ``w u u'`` with ``0 <= w <= w(0)`` (1/4 for the logit, 2/pi for the probit; the
  weights are clipped there, a row-wise map), so it is released exactly as a
  residual meat with ``r^2 = w`` and the residual bound ``sqrt(w(0))``
  (``sandwich.release_meat_sums``: the intercept's entry, the sum of the
  weights, alone on ``RSS_SHARE`` of the budget, then the other entries with the
  intercept's cross entries down-weighted; Laplace, float-safe);
* the sampling covariance of the MLE is ``H~^{-1}`` (model-based, statsmodels'
  Logit/Probit default: the information matrix equality holds when the link is
  right and y is 0/1);
* the privacy noise is KNG's asymptotic law ``H^{-1} z``, z from the K-norm
  density ``~ exp(-c ||z||_K)`` (Reimherr & Awan 2019, Theorem 3.2: near the MLE
  ``g(phi) ~ H (phi - phi^)``), truncated to Theta;
* the intervals are those of least squares (``inference.inverted_draws``): basic
  bootstrap intervals from ``W = N(0, H~^{-1}) + H~^{-1} z`` where the truncation
  does not bind, the truncated law inverted along one line per coefficient where it
  does; each coefficient's whole range over Theta (``inference.domain_draws``)
  where H~ is not positive definite (its noise swamps the design's weakest direction).

What this leaves out: the noise of H~ is not re-drawn; with a fractional
response or a wrong link the model-based covariance is not the sandwich's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...glm.links import Link
from ...privacy import noise
from ...uncertainty import sandwich
from ...uncertainty.intervals import replicate_covariance
from . import inference

NAMES = ("SE: information, intercept", "SE: information")
"""The information matrix's two releases (its intercept entry alone, then the rest)."""
NOTE = (
    "Standard errors and percentile intervals cover the sampling error (model-based: the inverse of the Fisher "
    "information at the released coefficients, released with se_share of eps, as statsmodels' Logit/Probit "
    "default; not robust to a wrong link or a fractional response) and the privacy noise (KNG's asymptotic "
    f"K-norm noise H^-1 z, Reimherr & Awan 2019 Theorem 3.2, {inference.REPLICATES} draws, truncated to the "
    "domain as the mechanism's density is)."
)
NO_SE_NOTE = inference.NO_SE_NOTE
DOMAIN_ONLY = (
    " The noisy information matrix is not positive definite (its noise swamps the design's weakest directions at "
    "this n eps), so the intervals are instead each coefficient's whole range over KNG's domain ||phi||_1 <= B, "
    "which holds the estimate (they cover the non-private fit whenever it lies in the domain)."
)
BOUNDARY_NOTE = inference.BOUNDARY_NOTE


@dataclass(frozen=True)
class Problem:
    """The scaled rows ``U`` and responses, the box of U's columns and the map to the user's coefficients."""

    U: np.ndarray
    y: np.ndarray
    bounds: np.ndarray
    intercept_index: int | None
    to_user: Callable[[np.ndarray], np.ndarray]


def split(eps: float, p: int, intercept_index: int | None) -> tuple[tuple[str, float], ...]:
    """The standard errors' releases and their budgets (eps in all), for ``res.privacy.split``."""
    return sandwich.meat_split(eps, p, intercept_index, NAMES)


def no_standard_errors(p: int) -> inference.Uncertainty:
    """NaN covariance when ``se_share = 0``."""
    return inference.Uncertainty(np.full((p, p), np.nan), None, NO_SE_NOTE)


def weight_bound(link: Link) -> float:
    """``w(0)``, the largest information weight (1/4 for the logit, 2/pi for the probit)."""
    return float(link.information_weight(np.array(0.0)))


def release_information(
    rng: np.random.Generator, problem: Problem, phi: np.ndarray, link: Link, eps: float
) -> sandwich.NoisyMeat:
    """The information matrix at ``phi`` with Laplace noise (module docstring), at budget eps in all."""
    top = weight_bound(link)
    weights = np.clip(link.information_weight(problem.U @ phi), 0.0, top)
    full = sandwich.meat(problem.U, np.sqrt(weights))
    return sandwich.release_meat_sums(
        rng, full, problem.bounds, np.sqrt(top), eps, problem.intercept_index, names=NAMES
    )


def uncertainty(
    rng: np.random.Generator,
    information: np.ndarray,
    phi: np.ndarray,
    kng_noise: inference.Noise,
    to_user: tuple[np.ndarray, np.ndarray],
) -> inference.Uncertainty:
    """Covariance and replicates in the user's units from the released information (post-processing)."""
    with np.errstate(all="ignore"):
        if not (np.all(np.isfinite(information)) and inference._definite(information)):
            draws = inference.domain_draws(rng, kng_noise.B, to_user)
            return inference.Uncertainty(replicate_covariance(draws), draws, NOTE + DOMAIN_ONLY, inference.UNKNOWN)
        sampling = np.linalg.inv(information)
        draws, outside = inference.inverted_draws(
            rng, phi, (sampling + sampling.T) / 2, information, kng_noise, to_user
        )
        note = NOTE
        if outside > BOUNDARY_NOTE:
            note += inference.BOUNDARY.format(share=outside, what=inference.BOUNDARY_WHAT["ols"])
        cov = replicate_covariance(draws)
        if not np.all(np.isfinite(cov)):
            return inference.Uncertainty(cov, None, note, outside)
        if np.any(np.diag(cov) <= 0.0):  # pinned draws: a zero-width interval would be no promise
            draws = inference.domain_draws(rng, kng_noise.B, to_user)
            return inference.Uncertainty(replicate_covariance(draws), draws, note + inference.DEGENERATE, outside)
        return inference.Uncertainty(cov, draws, note, outside)


def standard_errors(
    rng: np.random.Generator,
    problem: Problem,
    phi: np.ndarray,
    link: Link,
    eps: float,
    c: float,
    norm: str,
    B: float,
) -> inference.Uncertainty:
    """The information's release at budget eps, then its post-processing (``noise.postprocessing_rng``)."""
    released = release_information(rng, problem, phi, link, eps)
    to_user = inference.affine_map(problem.to_user, phi.size)
    return uncertainty(noise.postprocessing_rng(rng), released.meat, phi, inference.Noise(c, norm, B), to_user)

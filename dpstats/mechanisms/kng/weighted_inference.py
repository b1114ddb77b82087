"""Standard errors for KNG with survey weights: a released weighted sandwich and the K-norm noise re-drawn.

With survey weights ``w_i`` in their declared range ``[lo, W]`` (``0 <= lo``) KNG's
loss is the weighted one (dpstats/mechanisms/kng/mechanism.py), and its estimate
is a draw around the weighted estimate ``phi^``, the root of the weighted
estimating equation ``sum_i s_i(phi) = 0`` with the rows' gradient terms

* least squares: ``s_i = 2 w_i (x_i'phi - v_i) x_i``, whose derivative is ``H = 2 sum_i w_i x_i x_i'``;
* quantile regression: ``s_i = w_i (1{v_i <= x_i'phi} - tau) x_i``, whose expected derivative is
  ``H = sum_i w_i f_i(0) x_i x_i'``, estimated by Powell's (1991) uniform kernel
  ``sum_i w_i 1{|r_i| <= h} x_i x_i' / (2 h)`` at Hall & Sheather's bandwidth h
  (as dpstats/mechanisms/kng/inference.py does without weights).

Its design-based (linearisation) covariance is ``H^{-1} M H^{-1}`` with M the
design-based meat of the ``s_i`` (Binder 1983; Lumley 2010, "Complex Surveys",
the weighted sandwich; rows as PSUs, or the declared PSUs in strata), and KNG adds
the privacy noise ``H^{-1} z``, z from the K-norm density ``~ exp(-c ||z||_K)``
(Reimherr & Awan 2019, section 4.2 exactly for least squares, Theorem 3.2's limit
for quantile regression). Released, at the standard errors' share of eps:

1. a residual scale: the median of ``|r_i|`` at the released phi by the exponential
   mechanism over a public grid (``inference.release_scale``: unweighted counts,
   sensitivity 1); it sets least squares' residual clip (``inference.residual_sigmas``
   sigmas) and quantile regression's bandwidth;
2. ``T = sum_i w_i k_i x_i x_i'`` (``k_i = 1`` for least squares, ``1{|r_i| <= h}`` for
   quantile regression), its upper triangle with Laplace noise. A row's entry
   ``w_i k_i x_ij x_ik`` lies in the hull of 0 and W times the range of ``x_j x_k``
   over the box (``w_i k_i`` is in ``[0, W]``), so a replaced row moves the upper
   triangle by at most the sum of those hulls' widths in L1 (:func:`gram_sensitivity`);
3. the meat: ``design_meat.release_meat`` of the ``s_i`` at the released phi, with the
   residual clipped for least squares; every ``s_i`` has ``||s_i||_1 <= W a C_1`` and
   ``||s_i||_2^2 <= (W a)^2 C_2`` (:func:`score_bound`: ``a = 2 R`` with R the clip, or
   ``max(tau, 1 - tau)``; ``C_1``, ``C_2`` the largest ``||x||_1``, ``||x||_2^2`` over the box).

Each release is a Laplace or exponential mechanism on its own, and their budgets add
up to the share (:func:`split`). The rest is post-processing: ``H~`` from ``T~``, the
covariance, and :data:`inference.REPLICATES` replicates ``phi~ - J (N(0, V) + H~^{-1} z)``
whose percentile intervals are the basic parametric-bootstrap intervals (Ferrando,
Wang & Sheldon 2022). What this leaves out (named in the note): the noise of the
released ``T~`` and M is not re-drawn, the truncation of KNG's density to its domain is
ignored (the fit is flagged where it matters: ``Uncertainty.outside``), and least
squares' residuals beyond the clip shrink the meat.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...design.survey import PSUs
from ...privacy import noise
from ...uncertainty import design_meat, sandwich
from ...uncertainty.intervals import infinite_cov, replicate_covariance
from . import inference
from . import sampler as kng_sampler

SCALE_SHARE = 0.2
"""The part of the standard errors' budget spent on the residual scale."""
GRAM_SHARE = 0.4
"""The part of the standard errors' budget spent on ``T`` (the rest, after the scale, goes to the meat)."""
GRAM_NAME = "SE: weighted X'X"

NOTE = (
    "Standard errors and percentile intervals are design-based for the survey weights: the weighted sandwich "
    "H^-1 M H^-1 (H {bread}; M the {meat} of the weighted gradient terms), released with se_share of eps, and "
    f"KNG's K-norm noise H^-1 z ({inference.REPLICATES} draws). The noise of the released H and M is not re-drawn "
    "and the truncation to KNG's domain is ignored{clip}."
)
BREAD = {
    "ols": "= 2 X'WX, noisy",
    "quantreg": "Powell's weighted kernel estimate at a privately chosen Hall-Sheather bandwidth, noisy",
}
CLIP = {"ols": "; residuals beyond a few released sigmas are clipped", "quantreg": ""}
FAILED = (
    " The released H is not positive definite (its noise swamps the design at this n eps): standard errors are "
    "infinite."
)


def meat_name(psus: PSUs | None) -> str:
    """The meat's name in the note."""
    if psus is None:
        return "weighted outer products, rows as PSUs"
    return "declared PSUs' noisy weighted totals, centred within strata"


def split(eps: float, psus: PSUs | None) -> tuple[tuple[str, float], ...]:
    """The standard errors' releases and their budgets (eps in all), for ``res.privacy.split``."""
    scale, gram = SCALE_SHARE * eps, GRAM_SHARE * eps
    return (("SE: residual scale", scale), (GRAM_NAME, gram), (design_meat.release_name(psus), eps - scale - gram))


def gram_sensitivity(bounds: np.ndarray, weight_max: float) -> float:
    """L1 sensitivity of the upper triangle of ``sum_i w_i k_i x_i x_i'``, ``w_i k_i`` in ``[0, W]``, x in the box."""
    ranges = np.array(sandwich.product_ranges(bounds))
    return float(weight_max * (np.maximum(ranges[:, 1], 0.0) - np.minimum(ranges[:, 0], 0.0)).sum())


def score_bound(bounds: np.ndarray, weight_max: float, factor: float) -> design_meat.ScoreBound:
    """Bounds on ``s_i = w_i a_i x_i`` with ``|a_i| <= factor``, ``w_i <= W``, x in the box."""
    largest = np.abs(bounds).max(axis=1)
    top = weight_max * factor
    return design_meat.ScoreBound(float(top * largest.sum()), float(top**2 * (largest**2).sum()))


@dataclass(frozen=True)
class WeightedRows:
    """The scaled rows, their weights clipped to ``[lo, W]``, the survey's PSUs, and public facts."""

    X: np.ndarray
    v: np.ndarray
    w: np.ndarray
    weight_max: float
    psus: PSUs | None
    bounds: np.ndarray
    v_bounds: tuple[float, float]


def release_gram(rng: np.random.Generator, rows: WeightedRows, k: np.ndarray, eps: float) -> np.ndarray:
    """``T~ = sum_i w_i k_i x_i x_i'`` with Laplace noise on its upper triangle (:func:`gram_sensitivity`)."""
    X = rows.X
    exact = sandwich.upper_triangle((X * (rows.w * k)[:, None]).T @ X)
    sensitivity = gram_sensitivity(rows.bounds, rows.weight_max)
    noisy = noise.laplace_mechanism(rng, exact, sensitivity, eps, GRAM_NAME)
    return sandwich.from_upper_triangle(np.atleast_1d(noisy), X.shape[1])


def release_pieces(
    rng: np.random.Generator, rows: WeightedRows, phi: np.ndarray, tau: float | None, eps: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(H~, M~)`` on the scaled problem, at budget eps in all (module docstring)."""
    parts = dict(split(eps, rows.psus))
    n = rows.v.size
    problem = inference.Problem.of_arrays(rows.X, rows.v, rows.bounds, rows.v_bounds, None, lambda p: p)
    top = sandwich.residual_bound(phi, rows.bounds, rows.v_bounds)
    scale = inference.release_scale(rng, problem, phi, top, parts["SE: residual scale"])
    residuals = rows.X @ phi - rows.v
    if tau is None:
        clip = min(top, inference.residual_sigmas(n, eps) * scale / inference.median_abs_factor(0.5))
        H = 2.0 * release_gram(rng, rows, np.ones(n), parts[GRAM_NAME])
        terms, factor = 2.0 * np.clip(residuals, -clip, clip), 2.0 * clip
    else:
        h = inference.bandwidth(n, tau, scale / inference.median_abs_factor(tau))
        H = release_gram(rng, rows, (np.abs(residuals) <= h).astype(float), parts[GRAM_NAME]) / (2.0 * h)
        terms, factor = (residuals >= 0).astype(float) - tau, max(tau, 1.0 - tau)
    scores = (rows.w * terms)[:, None] * rows.X
    bound = score_bound(rows.bounds, rows.weight_max, factor)
    meat = design_meat.release_meat(rng, scores, bound, parts[design_meat.release_name(rows.psus)], rows.psus).meat
    return H, meat


def definite(matrix: np.ndarray) -> bool:
    """Whether a symmetric matrix is finite and safely positive definite (relative eigenvalue floor)."""
    if not np.all(np.isfinite(matrix)):
        return False
    values = np.linalg.eigvalsh((matrix + matrix.T) / 2.0)
    return bool(values[0] > 1e-10 * np.abs(values).max())


def root(cov: np.ndarray) -> np.ndarray:
    """A symmetric square root of a PSD matrix."""
    values, vectors = np.linalg.eigh((cov + cov.T) / 2.0)
    return vectors * np.sqrt(np.maximum(values, 0.0))


def standard_errors(
    rng: np.random.Generator,
    rows: WeightedRows,
    phi: np.ndarray,
    tau: float | None,
    eps: float,
    kng_noise: inference.Noise,
    to_user: tuple[np.ndarray, np.ndarray],
) -> inference.Uncertainty:
    """The releases at budget eps, then the covariance and replicates in the user's units (never raises or warns)."""
    estimator = "ols" if tau is None else "quantreg"
    note = NOTE.format(bread=BREAD[estimator], meat=meat_name(rows.psus), clip=CLIP[estimator])
    H, meat = release_pieces(rng, rows, phi, tau, eps)
    p = phi.size
    with np.errstate(all="ignore"):
        if not (definite(H) and np.all(np.isfinite(meat))):
            return inference.Uncertainty(infinite_cov(p), None, note + FAILED, inference.UNKNOWN)
        H_inv = np.linalg.inv(H)
        cov = H_inv @ meat @ H_inv.T
        post = noise.postprocessing_rng(rng)
        z = kng_sampler.k_norm_draws(post, kng_noise.c, p, kng_noise.norm, inference.REPLICATES)
        W = noise.gaussian(post, 1.0, (inference.REPLICATES, p)) @ root(cov).T + z @ H_inv.T
        jacobian, offset = to_user
        draws = jacobian @ phi + offset - W @ jacobian.T
        outside = float(np.mean(np.abs(phi + W).sum(axis=1) > kng_noise.B))
        if outside > inference.BOUNDARY_NOTE:
            note += inference.BOUNDARY.format(share=outside, what=inference.BOUNDARY_WHAT["quantreg"])
        return inference.Uncertainty(replicate_covariance(draws), draws, note, outside)

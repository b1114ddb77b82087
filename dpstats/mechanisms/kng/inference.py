"""Standard errors and intervals for KNG: a budgeted sandwich and the K-norm noise re-drawn.

The release is ``phi~``, one draw of the KNG density on the scaled problem
(dpstats/mechanisms/kng/mechanism.py). Its error ``phi~ - phi_0`` is the
sampling error of the non-private estimate ``phi^`` plus the privacy noise
``phi~ - phi^``. Both are reported, from releases made with the share
``se_share`` of eps (the draw gets the rest; :data:`DEFAULT_SHARE`) and
post-processing. The sampling part needs a covariance of ``phi^``; the privacy
part the law of the noise, which KNG fixes given S = X'X (least squares) or
``D1`` (quantile regression). What the data give is released on rows whose
slope columns are centred at their released means (:func:`centring`).

**Least squares.** The gradient is affine, ``g(phi) = 2 (S phi - s)``, so the KNG
density is exactly the law of ``phi^ + (2 S)^{-1} z``, z from the K-norm density
``~ exp(-c ||z||_K)`` (Reimherr & Awan 2019, section 4.2; Hardt & Talwar 2010),
truncated to the domain Theta = {||phi||_1 <= B}. Released: S (upper triangle,
replace-one L1 sensitivity ``sandwich.bread_sensitivity`` over the scaled box;
up to :data:`BREAD_SHARE` of the share, :func:`bread_budget`: S decides the
noise's scale, the larger error at small n eps), the residual scale (as for
quantile regression below), then the HC meat ``sum_i r_i^2 w_i w_i'`` at the
released ``phi~`` (``sandwich.release_meat``) with the residuals clipped at
:func:`residual_sigmas` released sigmas (the meat's noise scales with the
bound's square; the box's bound is often 10 sigmas or more). They give White's (1980) HC1
sandwich V of ``phi^`` (``sandwich.robust_meat``: corrected for the residuals'
privacy noise, shrunk towards the homoskedastic meat, PSD). The intervals
(:func:`inverted_draws`) come from W = N(0, V) + (2 S~)^{-1} z, 1000 draws:
where ``phi~ + W`` stays in Theta (the truncation does not bind) they are the
basic intervals of the parametric bootstrap (Ferrando, Wang & Sheldon 2022).
Where it does (small n eps: the noise is a sizeable part of the domain),
the estimate's law depends on where ``phi^`` lies, and a bootstrap around
``phi~`` fails both ways (measured: basic intervals 0.85-0.90 coverage,
percentile or untruncated ones 0.98-0.99). The truncated law is then inverted,
coefficient by coefficient: along the line of candidate truths
``phi~ + t e`` inside Theta (e the regression of the coefficients on the
coefficient of interest under the untruncated covariance), the share of the
truncated draws ``(phi~ + t e + W) | in Theta`` whose coefficient falls below
the released one is a decreasing function of t; its quantiles are a confidence
distribution (Xie & Singh 2013), drawn in the ranks of W so that the
replicates keep their correlation. The intervals are its percentile intervals,
and they assume ``phi^`` lies in Theta (the mechanism's own assumption on B).

**Quantile regression.** ``phi^`` is asymptotically normal with covariance
``tau (1 - tau) D1^{-1} D0 D1^{-1} / n``, ``D0 = E[x x']``, ``D1 = E[f(0 | x) x x']``
(Koenker & Bassett 1978; non-iid errors: Koenker 2005, chapters 3-4;
Powell's 1991 kernel estimate of D1). Near ``phi^`` the expected gradient is
``n D1 (phi - phi^)``, so the KNG noise is about ``(n D1)^{-1} z`` (the K-norm
limit of Reimherr & Awan's Theorem 3.2 with the Hessian ``n D1``; the theorem
asks for a smooth loss, and section 4.5.1 shows the O(1/n) noise of quantile
regression by simulation). Released, adaptively:

1. S = n D0 as above;
2. a residual scale: the median of ``|r_i|`` at ``phi~`` by the exponential
   mechanism over a public geometric grid (utility ``-|#{|r_i| <= t} - n/2|``,
   sensitivity 1; McSherry & Talwar 2007, Smith 2011). Under the normal
   reference it gives sigma (:func:`median_abs_factor`) and Hall & Sheather's
   (1988) bandwidth, as statsmodels' QuantReg and R's ``summary.rq(se = "ker")``
   compute it from the data (:func:`bandwidth`);
3. the kernel matrix ``K = sum_i 1{|r_i| <= h} w_i w_i'``, released as the meat
   is with the indicator for ``r_i^2`` (each entry's row term lies in the hull
   of the product range and 0, whatever h is), made PSD (:func:`nearest_psd`;
   the homoskedastic ``K_11 S / n`` where that is singular);
   ``D1 = K / (2 h n)`` (the uniform kernel). It is not shrunk towards the
   homoskedastic matrix as the least-squares meat is: with heteroskedastic
   errors that bias is not calibrated by the bootstrap below (measured: slope
   coverage 0.84 with shrinkage, 0.93 without, at n = 2000, eps = 2, tau = 0.25).

The noise of the released S and K is large next to the kernel matrix's
signal unless n eps is large (the window holds a fraction of the rows), so the
intervals are bootstrap-t intervals (:func:`studentized_draws`; Davison &
Hinkley 1997, section 5.2, studentized intervals): in the bootstrap world the released S~, K~ are
the truth, fresh Laplace noise of the releases' scales gives S*, K* and the
standard errors se* of the same pipeline, and ``T* = (phi* - phi~) / se*`` with
``phi* = phi~ + N(0, V~) + (n D1~)^{-1} z*`` calibrates ``phi~ -+ T* se~``.
(Checked against draws of the mechanism at fixed data, n = 2000: the K-norm
model's privacy sd is within 10% of the draws' at eps = 1, 20% low at eps = 5
where the gradient's steps matter and the privacy noise is a small part.)

Both return replicates whose percentile intervals are those intervals (a
confidence distribution's draws) and whose spread gives the standard errors.
Where least squares' S~ is not positive definite (its noise swamps the
design's weakest direction: 5-12 coefficients at n = 500 and eps = 1 or 5, the
smallest eigenvalue of S on the scaled problem being 2.5 against noise of
scale 23 or more), or a coefficient's draws have no spread, the replicates are
:func:`domain_draws`: each coefficient's whole range over Theta, which holds
the estimate, so the interval covers whenever the non-private fit lies in
Theta, the mechanism's own assumption (before, the SEs were infinite).

What this leaves out: (i) least squares: the inversion fixes the other
coefficients on one line; the truncation is applied to the sum of the
sampling and privacy noise, not to the privacy noise given ``phi^``; the
noise of S~ is not re-drawn (the budget on S keeps it small: measured
coverage 0.93-0.97 at n = 1000, eps = 1), but where it is a sizeable part of
S the fit is flagged: the share of the noise law outside Theta that flags it
is the larger of W's and that of the wider law with the lower confidence
bound ``S_L = S~ - t I`` on S in place of S~ (:func:`cautious_outside`,
:func:`bread_margin`: S >= S_L with probability 0.95), and unknown, so
flagged, where S_L is not positive definite; residuals beyond 6 released
sigmas are clipped at moderate n eps (a variance bias with heavier tails
than the normal's); (ii) quantile regression: the
truncation to Theta (B = 2, rarely binding) and the K-norm approximation's
neglect of the gradient's steps (they matter only where the noise is already
small next to the sampling error), the kernel estimate's O(h^2) bias and the
bandwidth's own noise; with strongly heteroskedastic errors a pooled
bandwidth overstates the variance where the errors are small.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm as normal

from ...privacy import noise
from ...uncertainty import sandwich
from ...uncertainty.intervals import infinite_cov, replicate_covariance
from . import sampler as kng_sampler

DEFAULT_SHARE = {"ols": 0.3, "quantreg": 0.5, "logit": 0.3, "probit": 0.3}
"""The part of eps spent on standard errors unless the user sets ``se_share``."""
BREAD_SHARE = {"ols": 0.7, "quantreg": 0.2}
"""The most of the standard errors' budget spent on S = X'X (:func:`bread_budget`)."""
BREAD_LEVEL = 0.05
"""Least squares: the lower bound ``S~ - t I`` on S fails with this probability (:func:`bread_margin`)."""
BREAD_FLOOR = 0.1
"""The least of the standard errors' budget spent on S (:func:`bread_budget`)."""
BREAD_PRECISION = 300.0
"""S's noise scale is at most ``n / BREAD_PRECISION`` where the budget allows (:func:`bread_budget`)."""
SCALE_SHARE = 0.2
"""The part of the standard errors' budget spent on the residual scale (:func:`release_scale`)."""
RESIDUAL_SIGMAS = 6.0
"""Least squares: residuals are clipped at least this many released sigmas out (:func:`residual_sigmas`)."""
REPLICATES = 1000
"""Bootstrap draws (public)."""
GRID = 49
"""Least squares: candidate values per coefficient where the truncated noise law is inverted."""
REACH = 6.0
"""Least squares: the candidates span this many (untruncated) standard deviations either side."""
UNTRUNCATED = 0.005
"""Least squares: below this share of untruncated draws outside Theta the truncation is ignored."""
BOUNDARY_NOTE = 0.01
"""The note flags the estimate when more than this share of the untruncated draws leave Theta."""
SCALE_GRID = 2.0 ** (-np.arange(0, 96) / 4.0)
"""Candidate residual scales, as fractions of the largest residual possible at ``phi~`` (24 halvings)."""
KERNEL_NAMES = ("SE: kernel count", "SE: kernel D1")
"""The names of the kernel matrix's two releases (its intercept entry alone, then the rest)."""

NOTE = {
    "ols": (
        "Standard errors and percentile intervals cover the sampling error (an HC1 sandwich from a noisy X'X and "
        "a noisy residual meat, released with se_share of eps) and the privacy noise (KNG's exact K-norm noise "
        f"(2 X'X)^-1 z, {REPLICATES} draws, truncated to the domain as the mechanism's density is)."
    ),
    "quantreg": (
        "Standard errors and bootstrap-t intervals cover the sampling error (Powell's kernel sandwich "
        "tau(1-tau) D1^-1 D0 D1^-1 / n from a noisy X'X and a noisy kernel matrix at a privately chosen "
        "Hall-Sheather bandwidth, released with se_share of eps) and the privacy noise (KNG's asymptotic K-norm "
        f"noise (n D1)^-1 z), with the noise of the released matrices re-drawn in {REPLICATES} replicates."
    ),
}
NO_SE_NOTE = "se_share=0: no budget was spent on standard errors, so SEs, tests and intervals are NaN."
BOUNDARY = (
    " The estimate is near the boundary of KNG's domain ||phi||_1 <= B ({share:.0%} of the untruncated noise "
    "draws leave it): {what}."
)
BOUNDARY_WHAT = {
    "ols": "the intervals invert the truncated law along one line per coefficient and assume the model lies "
    "in the domain",
    "quantreg": "the intervals ignore the truncation there",
}


# --------------------------------------------------------------------------
# The budget
# --------------------------------------------------------------------------


def split(
    estimator: str, eps: float, n: int, bounds: np.ndarray, intercept_index: int | None
) -> tuple[tuple[str, float], ...]:
    """The standard errors' releases and their budgets (eps in all), for ``res.privacy.split``.

    S gets :func:`bread_budget`; it is not released when it is public (every
    column constant on the box: an intercept alone).
    """
    p = bounds.shape[0]
    bread = bread_budget(estimator, eps, n, bounds) if bread_is_private(bounds) else 0.0
    parts = ((("SE: X'X", bread),) if bread > 0 else ()) + (("SE: residual scale", SCALE_SHARE * eps),)
    rest = eps - sum(e for _, e in parts)
    names = sandwich.MEAT_NAMES if estimator == "ols" else KERNEL_NAMES
    return (*parts, *sandwich.meat_split(rest, p, intercept_index, names))


def bread_budget(estimator: str, eps: float, n: int, bounds: np.ndarray) -> float:
    """S's budget: ``min(BREAD_SHARE eps, max(BREAD_FLOOR eps, BREAD_PRECISION Delta / n))``.

    ``BREAD_PRECISION Delta / n`` makes S's noise scale ``n / BREAD_PRECISION``.

    The scaled columns' second moments are O(n) (a slope's centred one is
    ``n var(u)``, 0.1 n in the heteroskedastic design of dpstats/uncertainty/coverage.py),
    so at that scale S~ is within a few % of S; a larger n eps then leaves the
    rest to the meat or kernel matrix; at least ``BREAD_FLOOR`` of the share,
    so that S~ tends to S as eps grows. Public: n, eps and the box only.
    """
    target = BREAD_PRECISION * sandwich.bread_sensitivity(bounds) / n
    return min(BREAD_SHARE[estimator] * eps, max(BREAD_FLOOR * eps, target))


def bread_is_private(bounds: np.ndarray) -> bool:
    """Whether X'X depends on the rows: some column is not constant on the box."""
    return bool(np.any(bounds[:, 0] != bounds[:, 1]))


# --------------------------------------------------------------------------
# The releases
# --------------------------------------------------------------------------


ScaledStatistic = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""Sums over the rows ``(X, v)`` of the scaled problem: what the standard errors read from the data."""


@dataclass(frozen=True)
class Problem:
    """The mechanism's scaled problem: its rows, the box of X's columns, v's bounds, the map back.

    ``total(statistic)`` sums a :data:`ScaledStatistic` over the n rows
    (``Design.total``: on one machine or over a Dask DataFrame's partitions,
    dpstats/design/moments.py); ``gram`` is X'X when it is already summed.
    """

    total: Callable[[ScaledStatistic], np.ndarray]
    n: int
    bounds: np.ndarray
    v_bounds: tuple[float, float]
    intercept_index: int | None
    to_user: Callable[[np.ndarray], np.ndarray]
    gram: np.ndarray | None = None

    @classmethod
    def of_arrays(cls, X: np.ndarray, v: np.ndarray, *public) -> Problem:
        """The problem of rows held as arrays (``public``: the other fields but n, in order)."""
        return cls(lambda statistic: statistic(X, v), X.shape[0], *public)

    def gram_matrix(self) -> np.ndarray:
        """X'X (summed over the rows unless already known)."""
        return self.total(gram) if self.gram is None else self.gram


def gram(X: np.ndarray, v: np.ndarray) -> np.ndarray:
    """X'X of the scaled rows (a :data:`ScaledStatistic`)."""
    return X.T @ X


def residual_counts(phi: np.ndarray, grid: np.ndarray, X: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``#{i : |v_i - x_i'phi| <= t}`` for each t of the ``grid`` (a :data:`ScaledStatistic`)."""
    return np.searchsorted(np.sort(np.abs(v - X @ phi)), grid, side="right").astype(float)


def residual_meat(phi: np.ndarray, L: np.ndarray, bound: float, X: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The meat's upper triangle of the centred rows ``L x``, residuals at ``phi`` clipped at ``bound``."""
    return sandwich.meat(X @ L.T, sandwich.clipped_residuals(v, X @ phi, bound))


def kernel_meat(phi: np.ndarray, L: np.ndarray, h: float, X: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The kernel matrix's upper triangle: ``sum 1{|r_i| <= h} w_i w_i'`` of the centred rows ``w = L x``."""
    return sandwich.meat(X @ L.T, (np.abs(v - X @ phi) <= h).astype(float))


@dataclass(frozen=True)
class Released:
    """What the standard errors read from the data, released (scaled problem).

    ``bread`` is S~ with its entries' Laplace scale ``bread_scale`` (0 if S is
    public); ``meat`` the meat or kernel matrix of the centred rows ``L x``
    (``centring`` = L); ``bandwidth`` the kernel's h (quantile regression).
    """

    bread: np.ndarray
    bread_scale: float
    meat: sandwich.NoisyMeat
    centring: np.ndarray
    bandwidth: float | None = None


def release_bread(rng: np.random.Generator, problem: Problem, eps: float) -> tuple[np.ndarray, float]:
    """S = X'X: its upper triangle with Laplace noise (sensitivity ``bread_sensitivity``), and the noise's scale.

    Public (no release, scale 0) when every column is constant on the box.
    """
    bounds = problem.bounds
    p = bounds.shape[0]
    if not bread_is_private(bounds):
        return problem.n * np.outer(bounds[:, 0], bounds[:, 0]), 0.0
    sensitivity = sandwich.bread_sensitivity(bounds)
    exact = sandwich.upper_triangle(problem.gram_matrix())
    upper = noise.laplace_mechanism(rng, exact, sensitivity, eps, "SE: X'X")
    return sandwich.from_upper_triangle(np.atleast_1d(upper), p), sensitivity / eps


def centring(bread: np.ndarray, bounds: np.ndarray, n: int, intercept_index: int | None) -> np.ndarray:
    """L with rows ``w = L x = (1, u - c)``: slope columns centred at their released means c (clipped to the box).

    The released S holds the column sums (its intercept row), so c is public.
    The meat and the kernel matrix are released on the centred rows, whose
    intercept cross entries are small, as ``sandwich.release_meat`` assumes
    when it down-weights them. Identity without an intercept.
    """
    p = bread.shape[0]
    L = np.eye(p)
    if intercept_index is None:
        return L
    slopes = np.arange(p) != intercept_index
    L[slopes, intercept_index] = -np.clip(bread[intercept_index, slopes] / n, bounds[slopes, 0], bounds[slopes, 1])
    return L


def centred_box(bounds: np.ndarray, L: np.ndarray, intercept_index: int | None) -> np.ndarray:
    """The box of the centred rows ``w = L x`` (each slope column shifted by minus its centre)."""
    if intercept_index is None:
        return bounds
    shift = L[:, intercept_index].copy()
    shift[intercept_index] = 0.0
    return bounds + shift[:, None]


def release_least_squares(rng: np.random.Generator, problem: Problem, phi: np.ndarray, eps: float) -> Released:
    """S, then the HC meat of the centred rows at the released ``phi``, at budget eps in all (:func:`split`)."""
    n, bounds, icpt = problem.n, problem.bounds, problem.intercept_index
    parts = dict(split("ols", eps, n, bounds, icpt))
    bread, bread_scale = release_bread(rng, problem, parts.get("SE: X'X", 0.0))
    L = centring(bread, bounds, n, icpt)
    top = sandwich.residual_bound(phi, bounds, problem.v_bounds)
    scale = release_scale(rng, problem, phi, top, parts["SE: residual scale"])
    bound = min(top, residual_sigmas(n, eps) * scale / median_abs_factor(0.5))
    full = problem.total(functools.partial(residual_meat, phi, L, bound))
    meat_eps = sum(parts[name] for name in sandwich.MEAT_NAMES if name in parts)
    meat = sandwich.release_meat_sums(rng, full, centred_box(bounds, L, icpt), bound, meat_eps, icpt)
    return Released(bread, bread_scale, meat, L)


def residual_sigmas(n: int, eps: float) -> float:
    """``max(RESIDUAL_SIGMAS, (n eps)^(1/3) / 5)``: where least squares clips its residuals, in released sigmas.

    The meat's noise scales with the square of the residual bound, so a bound
    a few sigmas out (instead of the box's, often 10 sigmas or more) makes
    its slope entries informative at moderate n eps (6 sigmas up to
    n eps = 27,000); it grows with n eps so that nothing is clipped in the
    limit (the sandwich tends to HC1; residuals beyond 6 sigmas, as engel's
    largest, would otherwise shrink it by 5%).
    """
    return max(RESIDUAL_SIGMAS, (n * eps) ** (1.0 / 3.0) / 5.0)


@functools.cache
def median_abs_factor(tau: float) -> float:
    """m with ``P(|Z - z_tau| <= m) = 1/2`` for Z standard normal: median ``|r|`` = m sigma at the tau-quantile fit."""
    z = float(normal.ppf(tau))
    return float(brentq(lambda m: normal.cdf(z + m) - normal.cdf(z - m) - 0.5, 1e-9, 10.0 + abs(z)))


def bandwidth(n: int, tau: float, sigma: float, alpha: float = 0.05) -> float:
    """Hall & Sheather's (1988) bandwidth in the residuals' units, as statsmodels' QuantReg and R's quantreg.

    ``h_q = n^(-1/3) z_(1-alpha/2)^(2/3) (1.5 phi(z_tau)^2 / (2 z_tau^2 + 1))^(1/3)``
    in probability units (halved while ``tau +- h_q`` leaves (0, 1), as R's
    ``summary.rq``), then ``h = sigma (Phi^-1(tau + h_q) - Phi^-1(tau - h_q))``.
    """
    z = float(normal.ppf(tau))
    h_q = n ** (-1.0 / 3.0) * normal.ppf(1.0 - alpha / 2.0) ** (2.0 / 3.0)
    h_q *= (1.5 * normal.pdf(z) ** 2 / (2.0 * z**2 + 1.0)) ** (1.0 / 3.0)
    while tau - h_q <= 0.0 or tau + h_q >= 1.0:
        h_q /= 2.0
    return float(sigma * (normal.ppf(tau + h_q) - normal.ppf(tau - h_q)))


def release_scale(rng: np.random.Generator, problem: Problem, phi: np.ndarray, top: float, eps: float) -> float:
    """The median of ``|r_i|`` at ``phi`` by the exponential mechanism on the grid ``top * SCALE_GRID``.

    Utility ``u(t) = -|#{|r_i| <= t} - n/2|`` (sensitivity 1): replacing a row
    moves each count by at most 1. The grid depends on the released estimate
    only (``top``); the counts are sums over the rows (:func:`residual_counts`).
    """
    grid = top * SCALE_GRID
    counts = problem.total(functools.partial(residual_counts, phi, grid))
    n = problem.n

    def utility() -> np.ndarray:
        return -np.abs(counts - n / 2.0)

    def draw(generator: np.random.Generator) -> float:
        return float(grid[noise.exponential_choice(generator, utility(), eps, 1.0)])

    return float(noise.exponential_mechanism_release(rng, draw, utility, 1.0, eps, "SE: residual scale"))


def release_quantile(rng: np.random.Generator, problem: Problem, phi: np.ndarray, tau: float, eps: float) -> Released:
    """S, the residual scale, then the kernel matrix of the centred rows at the bandwidth it gives."""
    n, bounds, icpt = problem.n, problem.bounds, problem.intercept_index
    parts = dict(split("quantreg", eps, n, bounds, icpt))
    bread, bread_scale = release_bread(rng, problem, parts.get("SE: X'X", 0.0))
    L = centring(bread, bounds, n, icpt)
    top = sandwich.residual_bound(phi, bounds, problem.v_bounds)
    scale = release_scale(rng, problem, phi, top, parts["SE: residual scale"])
    h = bandwidth(n, tau, scale / median_abs_factor(tau))
    full = problem.total(functools.partial(kernel_meat, phi, L, h))
    kernel_eps = sum(parts[name] for name in KERNEL_NAMES if name in parts)
    box = centred_box(bounds, L, icpt)
    kernel = sandwich.release_meat_sums(rng, full, box, 1.0, kernel_eps, icpt, names=KERNEL_NAMES)
    return Released(bread, bread_scale, kernel, L, h)


# --------------------------------------------------------------------------
# Post-processing: the K-norm noise
# --------------------------------------------------------------------------


def k_norm_covariance(c: float, d: int, norm: str) -> np.ndarray:
    """``Cov(z)`` for the density ``~ exp(-c ||z||_K)`` on R^d (the law of ``kng_sampler.k_norm_draws``).

    z = r u with r ~ Gamma(d + 1, 1/c) (``E r^2 = (d + 1)(d + 2) / c^2``) and u
    uniform in the unit K-ball, whose coordinates have second moments 1/3
    (the cube), ``1 / (d + 2)`` (the l2 ball) and ``2 / ((d + 1)(d + 2))``
    (the cross-polytope: a Beta(1, d) spacing).
    """
    ball = {"linf": 1.0 / 3.0, "l2": 1.0 / (d + 2.0), "l1": 2.0 / ((d + 1.0) * (d + 2.0))}[norm]
    return (d + 1.0) * (d + 2.0) / c**2 * ball * np.eye(d)


@dataclass(frozen=True)
class Noise:
    """The draw's K-norm noise on the scaled problem: ``A^{-1} z``, z at rate c in the norm, truncated to Theta(B)."""

    c: float
    norm: str
    B: float


def _definite(matrices: np.ndarray) -> np.ndarray:
    """Which symmetric matrices (stacked) are safely positive definite (relative eigenvalue floor)."""
    values = np.linalg.eigvalsh((matrices + np.swapaxes(matrices, -1, -2)) / 2.0)
    finite = np.all(np.isfinite(values), axis=-1)
    top = np.where(finite, np.abs(values).max(axis=-1), 1.0)
    return finite & (values[..., 0] > 1e-10 * top)


def _root(cov: np.ndarray) -> np.ndarray:
    """A symmetric square root of a PSD matrix."""
    values, vectors = np.linalg.eigh((cov + cov.T) / 2.0)
    return vectors * np.sqrt(np.maximum(values, 0.0))


def _symmetric_noise(rng: np.random.Generator, scales: np.ndarray, p: int, size: int) -> np.ndarray:
    """``size`` symmetric p x p matrices with Laplace noise of the given scales on the upper triangle."""
    upper = noise.laplace(rng, 1.0, (size, scales.size)) * scales
    out = np.zeros((size, p, p))
    rows, cols = np.triu_indices(p)
    out[:, rows, cols] = upper
    out[:, cols, rows] = upper
    return out


# --------------------------------------------------------------------------
# Least squares: the HC sandwich, then the truncated K-norm law inverted
# --------------------------------------------------------------------------


def centred_meat(released: Released, privacy: np.ndarray, n: int, intercept_index: int | None) -> np.ndarray:
    """The released meat of the centred rows, corrected, shrunk and PSD (``sandwich.robust_meat``), in x's coordinates.

    ``robust_meat`` works with the centred bread ``L S L'`` and the privacy
    covariance of the centred coefficients ``L^-T V L^-1``; then ``M = L^-1 M_w L^-T``.
    """
    L = released.centring
    L_inv = np.linalg.inv(L)
    bread_w = L @ released.bread @ L.T
    meat_w = sandwich.robust_meat(released.meat, bread_w, L_inv.T @ privacy @ L_inv, n, intercept_index)
    return L_inv @ meat_w @ L_inv.T


def bread_margin(rng: np.random.Generator, bread_scale: float, p: int) -> float:
    """t with ``P(lambda_min(E) < -t) = BREAD_LEVEL`` for S~'s noise E (symmetric, iid Laplace upper triangle).

    Then ``S = S~ - E >= S~ - t I`` in the PSD order with probability
    ``1 - BREAD_LEVEL``. The quantile is taken over :data:`REPLICATES` draws of
    E at the release's public scale (post-processing).
    """
    if bread_scale == 0.0:
        return 0.0
    E = _symmetric_noise(rng, np.full(p * (p + 1) // 2, bread_scale), p, REPLICATES)
    return float(np.quantile(-np.linalg.eigvalsh(E)[:, 0], 1.0 - BREAD_LEVEL))


def least_squares_covariances(
    released: Released, n: int, kng_noise: Noise, intercept_index: int | None
) -> tuple[np.ndarray, np.ndarray] | None:
    """(HC1 sampling covariance V, ``A = 2 S~``) on the scaled problem, or None if S~ is not positive definite."""
    bread = released.bread
    if not _definite(bread):
        return None
    A_inv = np.linalg.inv(2.0 * bread)
    privacy = A_inv @ k_norm_covariance(kng_noise.c, bread.shape[0], kng_noise.norm) @ A_inv.T
    meat = centred_meat(released, privacy, n, intercept_index)
    return sandwich.hc_covariance(bread, meat, n), 2.0 * bread


def cautious_outside(
    rng: np.random.Generator, released: Released, phi: np.ndarray, cov: np.ndarray, kng_noise: Noise
) -> float:
    """The share of ``phi + N(0, cov) + (2 S_L)^-1 z`` outside Theta, with ``S_L = S~ - bread_margin I``; NaN
    (:data:`UNKNOWN`) where S_L is not positive definite.

    ``S_L`` is a lower confidence bound on S, so this noise law is wider than
    KNG's along the design's weak directions, where S~'s noise can make the
    law the intervals use too narrow: the fit is flagged when it leaves Theta
    (CPS1988 at eps = 1: the smallest eigenvalue of S is 124 and S~'s noise
    has scale 114; the intervals missed OLS while the fit was not flagged in 2
    of 4 seeds).
    """
    p = phi.size
    lower = released.bread - bread_margin(rng, released.bread_scale, p) * np.eye(p)
    if not _definite(lower):
        return UNKNOWN
    z = kng_sampler.k_norm_draws(rng, kng_noise.c, p, kng_noise.norm, REPLICATES)
    W = noise.gaussian(rng, 1.0, (REPLICATES, p)) @ _root(cov).T + np.linalg.solve(2.0 * lower, z.T).T
    return float(np.mean(np.abs(phi + W).sum(axis=1) > kng_noise.B))


def inverted_draws(
    rng: np.random.Generator,
    phi: np.ndarray,
    cov: np.ndarray,
    A: np.ndarray,
    kng_noise: Noise,
    to_user: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, float]:
    """Draws of each user coefficient's confidence distribution (percentile intervals), and the share outside Theta.

    ``W = N(0, cov) + A^{-1} z``. Without truncation (fewer than
    :data:`UNTRUNCATED` of ``phi + W`` leave Theta) the draws are ``y - J W``:
    their percentile intervals are the basic bootstrap intervals. Otherwise, for
    coefficient ``a'phi``: candidates ``phi + t e`` (``e = Sigma a / a'Sigma a``)
    on :data:`GRID` points of the chord of Theta within :data:`REACH` sd,
    ``F(t)`` = the share of the draws ``phi + t e + W`` inside Theta with
    ``a'W <= -t`` (the released value or less), and ``H = 1 - F`` (made monotone)
    is inverted at the ranks of ``-a'W`` (module docstring).
    """
    jacobian, offset = to_user
    d = phi.size
    A_inv = np.linalg.inv(A)
    z = kng_sampler.k_norm_draws(rng, kng_noise.c, d, kng_noise.norm, REPLICATES)
    W = noise.gaussian(rng, 1.0, (REPLICATES, d)) @ _root(cov).T + z @ A_inv.T
    y = jacobian @ phi + offset
    JW = W @ jacobian.T
    outside = float(np.mean(np.abs(phi + W).sum(axis=1) > kng_noise.B))
    if outside < UNTRUNCATED:
        return y - JW, outside
    sigma = cov + A_inv @ k_norm_covariance(kng_noise.c, d, kng_noise.norm) @ A_inv.T
    ranks = (np.argsort(np.argsort(-JW, axis=0), axis=0) + 0.5) / REPLICATES
    out = np.empty_like(JW)
    for j, a in enumerate(jacobian):
        var = a @ sigma @ a
        e = sigma @ a / var
        t_lo, t_hi = kng_sampler.l1_ball_chord(phi[None], e[None], kng_noise.B)
        reach = REACH * np.sqrt(var)
        t = np.linspace(max(t_lo[0], -reach), min(t_hi[0], reach), GRID)
        inside = np.abs(phi + t[:, None, None] * e + W[None]).sum(axis=2) <= kng_noise.B
        below = (t[:, None] + JW[None, :, j]) <= 0.0
        accepted = inside.sum(axis=1)
        F = np.where(accepted > 0, (inside & below).sum(axis=1) / np.maximum(accepted, 1), (t < 0).astype(float))
        out[:, j] = y[j] + np.interp(ranks[:, j], np.maximum.accumulate(1.0 - F), t)
    return out, outside


# --------------------------------------------------------------------------
# Quantile regression: Powell's sandwich, bootstrap-t over the releases' noise
# --------------------------------------------------------------------------


def nearest_psd(matrices: np.ndarray) -> np.ndarray:
    """``uncertainty.nearest_psd`` for stacked matrices: keep the (non-negative) diagonal, clip the correlations'
    eigenvalues at 0 (rows with a zero diagonal stay 0)."""
    with np.errstate(all="ignore"):
        sym = (matrices + np.swapaxes(matrices, -1, -2)) / 2.0
        scale = np.sqrt(np.maximum(np.diagonal(sym, axis1=-2, axis2=-1), 0.0))
        positive = scale > 0
        safe = np.where(positive, scale, 1.0)
        both = positive[..., :, None] & positive[..., None, :]
        eye = np.eye(sym.shape[-1], dtype=bool)
        corr = np.where(both, sym / (safe[..., :, None] * safe[..., None, :]), np.where(eye, 1.0, 0.0))
        values, vectors = np.linalg.eigh(corr)
        corr = (vectors * np.maximum(values, 0.0)[..., None, :]) @ np.swapaxes(vectors, -1, -2)
        unit = np.sqrt(np.maximum(np.diagonal(corr, axis1=-2, axis2=-1), 1e-300))
        corr = corr / (unit[..., :, None] * unit[..., None, :])
        return np.where(both, corr * (scale[..., :, None] * scale[..., None, :]), 0.0)


def quantile_sandwich(
    bread: np.ndarray, kernel_w: np.ndarray, released: Released, n: int, tau: float, kng_noise: Noise, icpt: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(sampling V, privacy covariance, ``A = n D1``, ok) for stacked (S, kernel matrix of the centred rows).

    The kernel matrix is made PSD (:func:`nearest_psd`) and mapped back to x's
    coordinates; where that is singular, with an intercept, the homoskedastic
    ``K_11 S / n`` (``D1 = f0 D0``) takes its place. NaN where S or D1 is not
    positive definite (``ok`` False).
    """
    L = released.centring
    L_inv = np.linalg.inv(L)
    p = L.shape[0]
    count = L_inv @ nearest_psd(kernel_w) @ L_inv.T
    if icpt is not None:
        pooled = (np.maximum(kernel_w[..., icpt, icpt], 0.0) / n)[..., None, None] * bread
        count = np.where(_definite(count)[..., None, None], count, pooled)
    d1 = count / (2.0 * released.bandwidth * n)
    ok = _definite(bread) & _definite(d1)
    d1_inv = np.linalg.inv(np.where(ok[..., None, None], d1, np.eye(p)))
    cov = tau * (1.0 - tau) * d1_inv @ (bread / n) @ np.swapaxes(d1_inv, -1, -2) / n
    privacy = d1_inv @ k_norm_covariance(kng_noise.c, p, kng_noise.norm) @ np.swapaxes(d1_inv, -1, -2) / n**2
    nan = np.full((p, p), np.nan)
    cov = np.where(ok[..., None, None], (cov + np.swapaxes(cov, -1, -2)) / 2.0, nan)
    return cov, np.where(ok[..., None, None], privacy, nan), n * d1, ok


def studentized_draws(
    rng: np.random.Generator,
    released: Released,
    phi: np.ndarray,
    n: int,
    tau: float,
    kng_noise: Noise,
    icpt: int | None,
    to_user: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, float] | None:
    """Bootstrap-t draws of the user coefficients (percentile intervals), and the share outside Theta; None if failed.

    ``y - se~ T*`` with ``T* = J (phi* - phi~) / se*`` per coefficient (module
    docstring): their percentile interval is ``[y - se~ T*_hi, y - se~ T*_lo]``.
    A bootstrap world whose S* or D1* is not positive definite (the real
    release would have failed) gives a NaN replicate, dropped by the intervals.
    """
    jacobian, offset = to_user
    p = phi.size
    cov, privacy, A, ok = quantile_sandwich(released.bread, released.meat.meat, released, n, tau, kng_noise, icpt)
    if not ok:
        return None
    z = kng_sampler.k_norm_draws(rng, kng_noise.c, p, kng_noise.norm, REPLICATES)
    W = noise.gaussian(rng, 1.0, (REPLICATES, p)) @ _root(cov).T + np.linalg.solve(A, z.T).T
    outside = float(np.mean(np.abs(phi + W).sum(axis=1) > kng_noise.B))
    bread_star = released.bread + _symmetric_noise(rng, np.full(p * (p + 1) // 2, released.bread_scale), p, REPLICATES)
    kernel_star = released.meat.meat + _symmetric_noise(rng, np.sqrt(released.meat.noise_variance / 2.0), p, REPLICATES)
    cov_star, privacy_star, _, _ = quantile_sandwich(bread_star, kernel_star, released, n, tau, kng_noise, icpt)
    se = np.sqrt(np.diag(jacobian @ (cov + privacy) @ jacobian.T))
    se_star = np.sqrt(np.diagonal(jacobian @ (cov_star + privacy_star) @ jacobian.T, axis1=-2, axis2=-1))
    y = jacobian @ phi + offset
    return y - se * (W @ jacobian.T) / se_star, outside


# --------------------------------------------------------------------------
# Both
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Uncertainty:
    """The covariance and replicates in the user's units (None where the covariance is not finite), and the note."""

    cov: np.ndarray
    replicates: np.ndarray | None
    note: str
    outside: float = 0.0
    """The share of the untruncated noise draws that leave the domain (post-processing of the release);
    :data:`UNKNOWN` where the noise law is unknown."""


def uncertainty(
    rng: np.random.Generator,
    released: Released,
    phi: np.ndarray,
    n: int,
    tau: float | None,
    kng_noise: Noise,
    intercept_index: int | None,
    to_user: tuple[np.ndarray, np.ndarray],
) -> Uncertainty:
    """Covariance and replicates in the user's units from the releases (post-processing; never warns or raises).

    ``to_user`` = (jacobian, offset) of the affine map from the scaled problem
    to the user's coefficients; ``tau`` is None for least squares.
    """
    estimator = "ols" if tau is None else "quantreg"
    p = phi.size
    failed = Uncertainty(infinite_cov(p), None, NOTE[estimator])
    with np.errstate(all="ignore"):
        inputs = (released.bread, released.meat.meat, phi)
        if not all(np.all(np.isfinite(a)) for a in inputs):
            return failed
        if tau is None:
            pieces = least_squares_covariances(released, n, kng_noise, intercept_index)
            if pieces is None or not np.all(np.isfinite(pieces[0])):
                draws = domain_draws(rng, kng_noise.B, to_user)
                return Uncertainty(replicate_covariance(draws), draws, NOTE["ols"] + DOMAIN_ONLY, UNKNOWN)
            draws, outside = inverted_draws(rng, phi, pieces[0], pieces[1], kng_noise, to_user)
            cautious = cautious_outside(rng, released, phi, pieces[0], kng_noise)
            outside = UNKNOWN if math.isnan(cautious) else max(outside, cautious)
        else:
            result = studentized_draws(rng, released, phi, n, tau, kng_noise, intercept_index, to_user)
            if result is None:
                return failed
            draws, outside = result
        note = NOTE[estimator]
        if outside > BOUNDARY_NOTE:
            note += BOUNDARY.format(share=outside, what=BOUNDARY_WHAT[estimator])
        cov = replicate_covariance(draws)
        if not np.all(np.isfinite(cov)):
            return Uncertainty(cov, None, note, outside)
        if np.any(np.diag(cov) <= 0.0):  # draws pinned to one value: an interval of width 0 would be no promise
            draws = domain_draws(rng, kng_noise.B, to_user)
            return Uncertainty(replicate_covariance(draws), draws, note + DEGENERATE, outside)
        return Uncertainty(cov, draws, note, outside)


UNKNOWN = float("nan")
"""``Uncertainty.outside`` where the noise law is unknown (S~ not positive definite): the fit is flagged."""
DOMAIN_ONLY = (
    " The noisy X'X is not positive definite (its noise swamps the design's weakest directions at this n eps), "
    "so it says nothing reliable about the noise law: the intervals are instead each coefficient's whole range "
    "over KNG's domain ||phi||_1 <= B, which holds the estimate, and they cover the non-private fit whenever "
    "it lies in the domain (at every level above 0.1%: the replicates sit at the range's two ends)."
)
"""Appended to the note of a least-squares release whose S~ is not positive definite (:func:`domain_draws`:
CPS1985 and HousePrices at eps = 1 and 5, whose SEs were infinite)."""


def domain_draws(rng: np.random.Generator, B: float, to_user: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Replicates whose percentile intervals are, at every level, each coefficient's range over Theta.

    Coefficient ``a'phi + b`` ranges over ``b +- B ||a||_inf`` on ``||phi||_1 <= B``
    (a linear function's extremes over the l1 ball are at its vertices ``+-B e_k``).
    Half the replicates sit at each end, in an order drawn independently per
    coefficient: the quantiles up to ``(R/2 - 1) / (R - 1)`` (R replicates) are
    the lower end and those from ``R / (2 (R - 1))`` the upper, so the interval
    is the whole range at every level above 0.1%, and it holds every point of
    Theta (post-processing: B and the map are public).
    """
    jacobian, offset = to_user
    half = B * np.abs(jacobian).max(axis=1)
    order = np.argsort(noise.uniform(rng, 0.0, 1.0, (REPLICATES, offset.size)), axis=0)
    upper = np.argsort(order, axis=0) < REPLICATES // 2
    return offset + np.where(upper, half, -half)


DEGENERATE = (
    " The draws of a coefficient have no spread (the truncated law is pinned against the domain's boundary): "
    "an interval of width 0 would be no promise, so the intervals are instead each coefficient's whole range "
    "over the domain ||phi||_1 <= B, which holds the estimate (at every level above 0.1%)."
)
"""Appended to the note of a release whose law is degenerate in some coefficient (engel at eps = 20: the
draws of the slope all equal the estimate, and its interval was a point)."""


def affine_map(to_user: Callable[[np.ndarray], np.ndarray], p: int) -> tuple[np.ndarray, np.ndarray]:
    """(jacobian, offset) of an affine map ``to_user`` of R^p (evaluated at 0 and the unit vectors)."""
    offset = np.asarray(to_user(np.zeros(p)), dtype=float)
    jacobian = np.column_stack([to_user(np.eye(p)[k]) - offset for k in range(p)])
    return jacobian, offset


def standard_errors(
    rng: np.random.Generator, problem: Problem, phi: np.ndarray, tau: float | None, eps: float, kng_noise: Noise
) -> Uncertainty:
    """The standard errors' releases at budget eps (:func:`split`), then their post-processing.

    ``rng`` is the mechanism's generator (the releases); the bootstrap draws
    from ``noise.postprocessing_rng(rng)``. ``tau`` is None for least squares.
    """
    if tau is None:
        released = release_least_squares(rng, problem, phi, eps)
    else:
        released = release_quantile(rng, problem, phi, tau, eps)
    n = problem.n
    to_user = affine_map(problem.to_user, phi.size)
    return uncertainty(
        noise.postprocessing_rng(rng), released, phi, n, tau, kng_noise, problem.intercept_index, to_user
    )

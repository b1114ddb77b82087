"""Standard errors and intervals of DP Theil-Sen: a rank-level parametric bootstrap, inside the budget.

The estimates are the released predictions p25, p75 (medians of pair
estimates, Alabi et al. 2022, Algorithms 2-5) and, by post-processing, the
intercept 1.5 p25 - 0.5 p75 and slope 2 (p75 - p25). Each release is
``m + E`` with m the median of the P pair estimates and E the mechanism's
privacy error. Both parts are carried to the estimate's scale by g, the count
density of the pair estimates at the median (estimates per unit of y on the
unit scale):

1. **Sampling error.** The count K(t) = #{pair estimates <= t} is a
   U-statistic (complete for all pairs, incomplete for k random matchings).
   Pairs with no common row are independent, so (Hoeffding 1948; Blom 1976
   for the incomplete design) Var K = sum_p Var(b_p) + sum over ordered
   pairs of pairs sharing a row of their covariance = P/4 + n_shared
   Var(h1). With D_i the centred sum of row i's pair signs about the
   median (dpstats/mechanisms/theilsen/row_counts.py),
   E sum_i D_i^2 = P/2 + n_shared Var(h1), so ``V = sum_i D_i^2 - P/4``
   estimates Var K, and ``sum_i D_a,i D_b,i - sum_p d_a,p d_b,p`` the
   covariance of the p25 and p75 counts. The Bahadur representation of a
   U-quantile (Choudhury & Serfling 1988) gives
   m - theta = -(K(theta) - P/2) / g + o_p, so the sampling covariance of
   (p25, p75) is V / (g g'). Unlike Sen's (1968) interval, which uses the
   null variance n (n - 1)(2n + 5)/18 of Kendall's statistic, this is valid
   for heteroskedastic errors and for predictions at x0 (whose pair signs are
   not Kendall's; on the coverage designs Var(h1) is 1.5-2 times Kendall's
   1/36). The moments ``(sum D_a^2, sum D_b^2, sum D_a D_b - pair term) / L^2``
   are released with Laplace noise (for all pairs the pair term, at most
   P/4 next to terms of order n^3, is left out). Replacing a row moves its
   own D's (within [-L/2, L/2]: at most 3 L^2/4 over the three moments)
   and, by at most one, the D's of its at most L partners (at most
   2 (L - 1) + max(L - 1, L/2) each), plus L/2 for the pair term:
   :func:`moments_sensitivity`, checked by brute force and by the replay
   (a hill-climbed pair reaches 0.75 of it: the three worst cases cannot all
   be met at once).
2. **Density.** g at each prediction comes from the spread release
   (dpstats/mechanisms/theilsen/spread.py): a DP window [p - w, p + w]
   holding tau + xi estimates, xi the exponential mechanism's rank error.
3. **Privacy error.** Given g, the law of each median's error is known
   (dpstats/mechanisms/theilsen/release_laws.py): Laplace for ``exp``, a
   flat-top Laplace for ``wide``, (Z / g)(T / s) for ``smooth``.

Why not the alternatives. Releasing the order statistics of ranks
P/2 -+ C (Sen's interval made private) costs two exponential mechanisms per
prediction, each with rank noise 2L/eps comparable to C at n eps ~ 1000, and
still needs a heteroskedasticity-robust C. A DP histogram of the pair
estimates spreads its noise over bins that the interval never reads. The
window is a single release whose rank noise is a known Laplace, so g enters
the bootstrap as an exact pivot (below).

The bootstrap (post-processing; Ferrando, Wang & Sheldon 2022, at the level
of the ranks) draws, all at once, B replicates of: g from its window
(``(tau + xi*) / (2 w)``, xi* the rank error's law truncated to g > 0), V from
the noisy moments (their Laplace law, as under a flat prior: the variances
truncated at 0 and the covariance clipped to their geometric mean, so a
noisy moment below its floor still gives a proper law, never a negative
variance or a failure), the count error
``u ~ N(0, V)`` and each median's privacy error; a replicate is
``p + u / g + E(g)``. For one prediction, ``(p - theta) g_hat = (u + E g) /
(1 + xi / tau)`` is a pivot whose law the replicates reproduce, so its basic
interval is exact in the local model; plugging the noisy g in instead
undercovers (measured 0.91-0.93 at n eps = 1000). For the intercept and slope,
which combine two independently estimated densities, the fiducial mixture is
conservative (the Behrens-Fisher effect), the more so the noisier g: the
default share (:func:`default_share`) keeps g's relative noise near 15%.
Intervals are the basic bootstrap ones (dpstats/uncertainty/intervals.py); the
standard errors come from the replicates' quantiles
(:func:`quantile_covariance`), since 1/g has heavy tails.

Budget: ``se_share`` of eps (default :func:`default_share`, 0.05 to 0.5):
:data:`WINDOW_SHARE` of it to the two windows, the rest to the moments
(:func:`split`); the predictions share the rest of eps.

Measured by benchmarks/bench_coverage.py (500 repetitions: every cell at
n = 10^4 and every n = 1,000 cell at eps = 5 in [0.93, 0.975]; at n = 1,000,
eps = 1 the ``exp`` cells give 0.96-0.97 and ``wide`` 0.94-0.98, the
Behrens-Fisher conservativeness above) and tests/test_theilsen_inference.py.
The approximations are local (the rank errors and the window small parts of
the P estimates). They fail for ``smooth`` at n eps ~ 1000, whose release
sits a sizeable fraction of the P ranks from the median (Student-t noise of
sd about 0.2 P ranks): the window around it then sees a lower density, the
intervals widen exactly when the error is large, and they over-cover
(0.99-1.0 on the coverage designs).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...privacy import noise
from ...uncertainty.intervals import MIN_REPLICATES, finite_replicates, infinite_cov

SHARE_RANGE = (0.1, 0.5)
"""Smallest and largest default part of eps spent on standard errors (unless the user sets ``se_share``)."""
SMALL_N_EPS = 200.0
"""Below this n eps the default share ramps down to :data:`FREE_SHARE` (:func:`default_share`)."""
FREE_N_EPS = 100.0
"""At and below this n eps the default share is :data:`FREE_SHARE`: no share buys an informative interval there."""
FREE_SHARE = 0.05
"""The default share at n eps <= FREE_N_EPS."""
DENSITY_NOISE = 0.15
"""The default share aims at this relative sd of the density's DP noise (:func:`default_share`)."""
WINDOW_SHARE = 0.75
"""The part of the standard errors' budget spent on the two windows (the rest on the moments)."""

REPLICATES = 1000
"""Bootstrap replicates (public)."""

ErrorLaw = Callable[[np.random.Generator, np.ndarray], np.ndarray]
"""``law(rng, g)``: one draw of a median's privacy error per density in g (release_laws.py)."""


@dataclass(frozen=True)
class Split:
    """Budget of each release: each prediction, each window, the moments."""

    point: float
    window: float
    moments: float


def split(eps: float, share: float) -> Split:
    """The predictions share (1 - share) eps; the two windows WINDOW_SHARE of share * eps; the moments the rest."""
    se = eps * share
    return Split(point=(eps - se) / 2.0, window=se * WINDOW_SHARE / 2.0, moments=se * (1.0 - WINDOW_SHARE))


def default_share(lipschitz: int, pairs: int, eps: float) -> float:
    """The default ``se_share``: the least that brings g's relative DP noise to :data:`DENSITY_NOISE`, clipped.

    A window of mass 1/4 (the largest, spread.py) released at eps_w has rank
    error Laplace(2 L / eps_w), a relative sd of sqrt(2) 2 L / (eps_w P / 4) in g.
    With eps_w = eps share WINDOW_SHARE / 2 this is DENSITY_NOISE when share =
    16 sqrt(2) L / (P eps WINDOW_SHARE DENSITY_NOISE), about 400 / (n eps) (L / P = 2 / n
    for all pairs and for k matchings). Noisier densities make the intervals
    of the intercept and slope, which combine two independently estimated
    densities, conservative (the Behrens-Fisher effect of fiducial
    intervals); a share of 0.3 left coverage near 0.98 at n eps = 1000.

    Where n eps is small the point's budget decides its accuracy: the candidate
    grid's cells number about e^A, A proportional to that budget
    (grid_median.py), and a share of 0.5 there cost the default call 9 times
    the error of ``se_share=0`` in a concentrated cell of the Alabi et al. grid
    (n = 100, eps = 1, var_x = 0.01, sd_e = 0.01: C68/sigma 64.5 against 7.1,
    benchmarks/bench_auto.py). At n eps = 100 no share buys an informative
    interval: on benchmarks/bench_coverage.py's symmetric and heteroskedastic
    designs (n = 100, eps = 1 and n = 1,000, eps = 0.1; 200 data sets) the
    intervals were 9-21 times the estimate's spread at the share 0.25 of the
    rule before and 8-17 times at 0.05, covering 0.995-1 at both, while 0.05
    took the point's C68/sigma from 13.7 to 4.1 (n = 100, eps = 1,
    var_x = 0.05, sd_e = 0.01). So up to :data:`FREE_N_EPS` the share is
    :data:`FREE_SHARE`, and up to :data:`SMALL_N_EPS` it ramps to
    ``SHARE_RANGE[1]`` with the point's budget ``eps (1 - share)`` linear in
    n eps between the two ends (from 0.95 to 1 times FREE_N_EPS / n): it
    still grows with eps, which the error model's calibrated_eps relies on.
    From n eps = 200 the share buys intervals: at n = 1,000 and eps = 0.2,
    0.3 and 0.5 the rule's 0.5 gave median widths 1/12, 1/23 and 1/42 of
    those at 0.05 (a ramp to 0.1 at n eps = 100 had also given intervals four
    times wider at n eps = 235, engel at eps = 1).
    """
    share = 16.0 * math.sqrt(2.0) * lipschitz / (pairs * eps * WINDOW_SHARE * DENSITY_NOISE)
    n_eps = 2.0 * pairs * eps / lipschitz  # n eps for all pairs and for k matchings
    return min(SHARE_RANGE[1], max(SHARE_RANGE[0], share), small_share(n_eps))


def small_share(n_eps: float) -> float:
    """The cap on the default share at small n eps (:func:`default_share`): FREE_SHARE up to FREE_N_EPS, then
    the share at which the point's budget (per unit of eps / n) runs linearly to that of SHARE_RANGE[1] at
    SMALL_N_EPS, and no cap beyond."""
    if n_eps <= FREE_N_EPS:
        return FREE_SHARE
    if n_eps >= SMALL_N_EPS:
        return 1.0
    low, high = FREE_N_EPS * (1.0 - FREE_SHARE), SMALL_N_EPS * (1.0 - SHARE_RANGE[1])
    point = low + (high - low) * (n_eps - FREE_N_EPS) / (SMALL_N_EPS - FREE_N_EPS)
    return 1.0 - point / n_eps


def moments_sensitivity(lipschitz: int, listed: bool) -> float:
    """L1 sensitivity of the moments vector divided by L^2 (module docstring, item 1)."""
    ell = float(lipschitz)
    partner = 2.0 * (ell - 1.0) + max(ell - 1.0, ell / 2.0)
    total = 0.75 * ell**2 + ell * partner + (ell / 2.0 if listed else 0.0)
    return total / ell**2


def moments(
    signs_a: tuple[np.ndarray, np.ndarray | None], signs_b: tuple[np.ndarray, np.ndarray | None], lipschitz: int
) -> np.ndarray:
    """``(sum D_a^2, sum D_b^2, sum D_a D_b - sum_p d_a d_b) / L^2`` (the statistic the noise is added to)."""
    (d_rows_a, d_pairs_a), (d_rows_b, d_pairs_b) = signs_a, signs_b
    # elementwise sums, not BLAS dot products: no thread start-up on a busy machine
    pair_term = float(np.sum(d_pairs_a * d_pairs_b)) if d_pairs_a is not None and d_pairs_b is not None else 0.0
    value = np.array(
        [np.sum(d_rows_a * d_rows_a), np.sum(d_rows_b * d_rows_b), np.sum(d_rows_a * d_rows_b) - pair_term]
    )
    return value / float(lipschitz) ** 2


def truncated_laplace(rng: np.random.Generator, center: float, scale: float, lower: float, size: int) -> np.ndarray:
    """Laplace(center, scale) conditioned on being above ``lower`` (inverse CDF; post-processing draws)."""
    if scale <= 0.0:
        return np.full(size, max(center, lower))
    z = (lower - center) / scale
    f_low = 0.5 * np.exp(z) if z < 0 else 1.0 - 0.5 * np.exp(-z)
    u = f_low + (1.0 - f_low) * noise.uniform(rng, 0.0, 1.0, size)
    with np.errstate(divide="ignore"):
        draws = np.where(u < 0.5, center + scale * np.log(2.0 * u), center - scale * np.log(2.0 * (1.0 - u)))
    return np.maximum(draws, lower)


@dataclass(frozen=True)
class Released:
    """What the standard errors read, all of it released (public)."""

    predictions: np.ndarray
    windows: np.ndarray
    tau: int
    moments: np.ndarray
    moments_scale: float
    pairs: int
    lipschitz: int
    window_eps: float


def densities(rng: np.random.Generator, released: Released, size: int) -> np.ndarray:
    """``size`` x 2 draws of g from the windows: ``(tau + xi*) / (2 w)``, xi* the rank error's law given g > 0."""
    r = released
    rank_scale = 2.0 * r.lipschitz / r.window_eps
    g = np.empty((size, 2))
    for k in range(2):
        xi = truncated_laplace(rng, 0.0, rank_scale, -r.tau, size)
        g[:, k] = np.maximum(r.tau + xi, np.finfo(float).tiny) / (2.0 * max(r.windows[k], np.finfo(float).tiny))
    return g


def count_covariances(rng: np.random.Generator, released: Released, size: int) -> np.ndarray:
    """``size`` draws of the 2 x 2 count covariance V from the noisy moments (module docstring)."""
    r = released
    ell2 = float(r.lipschitz) ** 2
    floor = r.pairs / (4.0 * ell2)
    v = np.empty((size, 2, 2))
    v[:, 0, 0] = ell2 * truncated_laplace(rng, r.moments[0], r.moments_scale, floor, size) - r.pairs / 4.0
    v[:, 1, 1] = ell2 * truncated_laplace(rng, r.moments[1], r.moments_scale, floor, size) - r.pairs / 4.0
    limit = np.sqrt(v[:, 0, 0] * v[:, 1, 1])
    v[:, 0, 1] = v[:, 1, 0] = np.clip(ell2 * (r.moments[2] + noise.laplace(rng, r.moments_scale, size)), -limit, limit)
    return v


def replicates(rng: np.random.Generator, released: Released, laws: tuple[ErrorLaw, ErrorLaw]) -> np.ndarray:
    """B x 2 bootstrap replicates of (p25, p75) on the unit scale (module docstring)."""
    size = REPLICATES
    g = densities(rng, released, size)
    v = count_covariances(rng, released, size)
    values, vectors = np.linalg.eigh(v)
    root = vectors * np.sqrt(np.maximum(values, 0.0))[:, None, :]
    u = np.einsum("bij,bj->bi", root, noise.gaussian(rng, 1.0, (size, 2)))
    errors = u / g
    for k in range(2):
        errors[:, k] += laws[k](rng, g[:, k])
    return released.predictions + errors


Z_975 = 1.959963984540054


def quantile_covariance(replicates: np.ndarray) -> np.ndarray:
    """The replicates' covariance measured by quantiles: robust to the heavy tails of 1/g.

    The density's law (a rank count divided by a window) has mass near 0, so
    1/g, and the replicates, have heavy tails and an unstable sample variance.
    Each standard error is the replicates' central 95% range over 2 x 1.96
    (the normal sd when the law is normal; the half-width of the basic
    interval over 1.96 in general), and the correlation is Spearman's,
    converted by ``2 sin(pi rho_s / 6)`` (exact for a normal law).
    """
    good = finite_replicates(replicates)
    p = replicates.shape[1]
    if good.shape[0] < MIN_REPLICATES:
        return infinite_cov(p)
    low, high = np.quantile(good, [0.025, 0.975], axis=0)
    sd = (high - low) / (2.0 * Z_975)
    ranks = np.argsort(np.argsort(good, axis=0), axis=0).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho_s = np.nan_to_num(np.atleast_2d(np.corrcoef(ranks, rowvar=False)), nan=0.0)
    corr = 2.0 * np.sin(np.pi * rho_s / 6.0)
    np.fill_diagonal(corr, 1.0)
    return corr * np.outer(sd, sd)

"""Standard errors and intervals for the Tukey mechanism: a private spread of the m models and their law.

The mechanism's output is a draw from ``exp(beta T(y))`` on ``{T >= t}``, with
T the approximate Tukey depth of the m batch models (Amin et al. 2023). T reads
the models one coordinate at a time (their sorted projections) and does not
change under a shift or a rescaling of a coordinate; neither does the
restricted sampler's law. Its error ``y~ - theta`` is the sampling error of a
coordinate-wise median of m independent batch fits plus the sampler's privacy
noise, and both scale with the spread of the fits in each coordinate: this is
subsample-and-aggregate (Nissim, Raskhodnikova & Smith 2007), where replacing
one row replaces one fit.

1. **Spread, released** (the share ``se_share`` of eps, default
   :func:`default_share`, in equal parts per coordinate; pure eps-DP, no
   delta): for each coordinate j the median absolute deviation of the fits
   from the released point, ``S_j = med_k |b_kj - y~_j|``, on the log scale,
   by the exponential mechanism (McSherry & Talwar 2007) with the rank
   utility ``u(s) = -|#{k : log|b_kj - y~_j| <= s} - m/2|`` and a uniform base
   measure on the window ``log|y~_j| +- WINDOW`` (public: the point is
   released). Replacing one row replaces one fit (mechanism.py, step (a)),
   which moves each count by at most 1: sensitivity 1, density
   ``exp(eps_j u / 2)``, sampled exactly (piecewise constant between the
   sorted log deviations; the sampler of Alabi et al. 2022, Algorithm 3). No
   bound on the data or the fits is needed: the log scale and the window make
   the range finite. A draw outside the good region has probability about
   ``50 exp(-eps_j m / 4) eps_j m / 10``, 1e-3 at ``eps_j m = 50``
   (:data:`MIN_SPREAD_BUDGET`); ``|y~_j|`` falls below ``e^-30`` times the
   spread with probability about e^-30.
2. **The law of the estimate**, from public facts and S~ (the "calibrate c"
   route: no resampling, a few milliseconds). The fits are modelled as a
   location-scale family of Student t laws with ``nu = floor(n/m) - d + 1``
   degrees of freedom, the marginal law of an OLS coefficient on
   ``floor(n/m)`` Gaussian rows (dpstats/mechanisms/tukey/default_m.py), with
   scale ``sigma_j = S~_j / mad_nu``. Then, in units of sigma_j
   (:func:`unit_variances`):

   * sampling: the coordinate-wise median of m fits, ``1 / (4 m f_nu(0)^2)``;
   * privacy: the restricted sampler's variance on the idealised cloud (t_nu
     quantiles at Blom's positions in every coordinate), computed exactly as
     a mixture over the pieces R_ij of Amin et al.'s Lemma 3.9 of uniform
     laws (:func:`sampler_variance`);

   so ``se_j = sigma_j sqrt(sampling + privacy)`` (measured against the
   mechanism rerun on 600 simulated t clouds within 5%:
   tests/test_tukey_inference.py). S~ is itself noisy: its log has the
   sampling variance of a median, ``1 / (4 m g^2)`` (g the density of
   ``log|t_nu|`` at its median), plus the exponential mechanism's Laplace
   error of scale ``2 / (eps_j m g)``; the intervals are therefore t intervals
   with ``df = 1 / (2 Var log S~)`` degrees of freedom (the Satterthwaite
   reading of a noisy scale, at least :data:`MIN_DF`), given as B draws of
   ``y~ + se t_df`` (basic intervals on them are the t intervals) and the
   law's covariance.

3. **The skew allowance.** The point is a median of the fits, their mean is
   what is unbiased for the full-sample fit (for OLS fits once jackknifed:
   dpstats/mechanisms/tukey/jackknife.py), and the two differ when the fits'
   law is skewed. A fit on b rows whose rows have skewness gamma has skewness
   about ``gamma / sqrt(b)``, and a law of scale sigma and small skewness g has
   ``mean - median = g sigma / 6`` (Cornish-Fisher), so the median is off by up
   to ``A_j = SKEW sigma_j / (6 sqrt(b))`` (:func:`skew_allowance`): in
   standard errors that is of order ``m / sqrt(n)``, which grows with m. The
   intervals own it the way bias-aware intervals do: ``se_j`` is multiplied by
   ``c(A_j / se_j) / z`` with ``c(r)`` the 95% quantile of ``|N(r, 1)|`` and z
   that of ``|N(0, 1)|`` (:func:`bias_aware_factor`), so the 95% interval
   covers whenever the bias is at most ``A_j``. The allowance is a function of
   public facts (n, m) and the released spreads: post-processing.
   It is the whole of the intervals' over-coverage on symmetric data: at
   n = 10,000 and eps = 1 (benchmarks/bench_coverage.py) they cover 1.00 at
   2.1-2.3 times the estimate's spread, where the other parts (the median's
   sampling variance, the sampler's, the noisy spread and its t law) are each
   within 10% of the simulated spread. Capping the default at a 5% widening
   was tried and undone: it covered the symmetric designs at 0.94-0.97 and
   1.03-1.12 times the spread, and CPS1988 (AER) at eps = 1 at 0.83-0.87 on
   two coefficients (60 seeds), its median regression at eps = 0.5 at 0.5
   (vignette 06). No public statistic tells the two apart at these sizes (a
   private estimate of the fits' skew would cost a quarter to half of eps per
   coefficient), so the default covers the skew of real wage data and a user
   who knows the rows symmetric passes ``skew=0``.

What is left out. (a) The t shape: batch fits on skewed or heteroskedastic
data are not exactly t (the coverage benchmark measures it), and a
coefficient that a batch cannot estimate sits at +-MODEL_LIMIT
(dpstats/mechanisms/tukey/models.py): a share q of such fits inflates the
released MAD more than it inflates the median's variance, so the standard
errors are conservative, by under 10% for q <= 0.2 and nu >= 3 but by a
factor up to 2 for q = 0.4 and nu = 1 (4-row batches). (b) The fits'
correlation between coordinates is not released: ``cov_params()`` is
diagonal, so single coefficients are covered, linear combinations are not.
(c) The PTR test's selection (the output is reported only when it passes) is
ignored; it passes with probability near 1 at the default m. (d) Skews beyond
SKEW: on CPS1988 (AER) the jackknifed fits' coordinate-wise median lies at
``gamma (m / sqrt n) / 6`` standard errors from OLS with gamma 2.4-2.7 at
15, 30 and 60 rows per fit; on fair (statsmodels), whose response is mostly
zero and whose rare religious levels have a row or two per batch, gamma
reaches 7-15 and the intervals under-cover.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from ...privacy import noise
from . import default_m
from . import depth as td

DEFAULT_SHARES = (0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
"""The parts of eps the spreads may spend unless the user sets ``se_share``: the smallest that both the
point and the spreads can afford (:func:`default_share`)."""
REPLICATES = 1000
"""Bootstrap clouds (public)."""
WINDOW = 30.0
"""Half-width, in natural-log units, of the window of the spread release around ``log |y~_j|`` (e^30 = 1e13)."""
MIN_SPREAD_BUDGET = 50.0
"""The spreads are released only if ``eps_j m`` reaches this (a draw outside the good region then has
probability about 1e-3)."""
TINY = 1e-300
"""Deviations and released coordinates below this are treated as this (the window stays finite)."""
SPREAD = "SE: spread of the models"
MIN_DF = 3.0
"""The t law's degrees of freedom never fall below this (its variance stays finite)."""
SKEW = 3.0
"""The default skewness of a row's contribution that the skew allowance covers (module docstring, step 3 and
(d)): above CPS1988's 2.4-2.7."""
BINARY_SKEW = 2.5
"""The default allowance for dp_logit / dp_probit. Their batch fits are corrected towards median-unbiasedness
(dpstats/mechanisms/tukey/logit_models.py), but at a rare outcome the fits' law is skewed and the restricted
sampler's draw, spread over the inner half of the cloud at a small eps, leans to the longer tail. Measured on
benchmarks/bench_tukey_logit.py's logits (10% base rate, 200 fits a cell): at n = 100,000 and eps = 1 (m = 973)
the intercept's coverage was 0.90 with no allowance, 0.92 at 1.5, 0.925 at 2, 0.935 at 2.5 and 0.96 at 3, whose
slopes reached 0.98; at eps = 5 (m = 198) every coefficient covered 0.93-0.955 at 2.5."""
LEVEL_Z = float(stats.norm.ppf(0.975))
"""The 95% quantile of ``|N(0, 1)|``: the level at which :func:`bias_aware_factor` makes intervals bias-aware."""


def spread_name(j: int) -> str:
    """The name of coordinate j's spread release."""
    return f"{SPREAD} [{j}]"


def window(centre: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The public window ``log|y_j| +- WINDOW`` of each coordinate's log spread."""
    anchor = np.log(np.maximum(np.abs(centre), TINY))
    return anchor - WINDOW, anchor + WINDOW


def log_deviations(models: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """``log |b - centre|`` along the last axis's coordinates, floored at log TINY (a map of each model alone)."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        dev = np.abs(models - centre)
    return np.log(np.maximum(np.nan_to_num(dev, nan=TINY, posinf=np.finfo(float).max), TINY))


def rank_utilities(m: int) -> np.ndarray:
    """u = -|(points below) - m/2| for the m + 1 intervals between sorted values (half-counts)."""
    return -np.abs(np.arange(m + 1) - m / 2.0)


def release_spreads(rng: np.random.Generator, models: np.ndarray, point: np.ndarray, eps: float) -> np.ndarray:
    """The d released log spreads (module docstring, step 1), each with budget ``eps``."""
    m, d = models.shape
    lo, hi = window(point)
    logs = np.clip(log_deviations(models, point), lo, hi)
    utilities = rank_utilities(m)
    out = np.empty(d)
    for j in range(d):
        edges = np.concatenate([[lo[j]], np.sort(logs[:, j]), [hi[j]]])
        grid = np.linspace(lo[j], hi[j], 2001)
        out[j] = noise.exponential_mechanism_release(
            rng,
            lambda g, edges=edges: noise.exponential_mechanism_intervals(g, edges, utilities, eps, 1.0),
            lambda column=logs[:, j], grid=grid: -np.abs((column[None, :] <= grid[:, None]).sum(axis=1) - m / 2.0),
            1.0,
            eps,
            spread_name(j),
        )
    return out


# --------------------------------------------------------------------------
# The estimate's law on the idealised cloud (public facts and the released spreads)
# --------------------------------------------------------------------------


def t_quantiles(nu: float, p: np.ndarray) -> np.ndarray:
    """Quantiles of Student's t with ``nu`` degrees of freedom."""
    return special.stdtrit(nu, p)


def t_density(nu: float, x: float) -> float:
    """Student's t density with ``nu`` degrees of freedom at x."""
    log = special.gammaln((nu + 1) / 2) - special.gammaln(nu / 2) - 0.5 * math.log(nu * math.pi)
    return math.exp(log - (nu + 1) / 2 * math.log1p(x * x / nu))


@functools.lru_cache(maxsize=256)
def unit_variances(m: int, d: int, nu: float, t: int, beta: float, eps_spread: float) -> tuple[float, float, float]:
    """On unit-scale t_nu models: (sampling variance, privacy variance, variance of log S~), per coordinate.

    * Sampling: the coordinate-wise median of m models, ``1 / (4 m f(0)^2)``.
    * Privacy: the exact variance of one coordinate of the restricted
      sampler on the ideal cloud (t_nu quantiles at Blom's positions in every
      coordinate, as dpstats/mechanisms/tukey/default_m.py): a mixture over
      the pieces R_ij of uniform laws (:func:`sampler_variance`).
    * The released log spread: the sample median of ``log |dev|`` has variance
      ``1 / (4 m g^2)`` with g the density of ``log |t_nu|`` at its median, and
      the exponential mechanism adds a Laplace of scale ``2 / (eps m g)``.
    """
    f0 = t_density(nu, 0.0)
    mad = float(t_quantiles(nu, np.array(0.75)))
    g = 2.0 * t_density(nu, mad) * mad
    ideal = t_quantiles(nu, (np.arange(m) + 1 - 0.375) / (m + 0.25))
    P = np.tile(ideal, (d, 1))
    log_spread = 1.0 / (4.0 * m * g * g) + 2.0 * (2.0 / (eps_spread * m * g)) ** 2
    return 1.0 / (4.0 * m * f0 * f0), sampler_variance(P, t, beta), log_spread


def _second_moment(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``E[y^2]`` for y uniform on [lo, hi]."""
    return (lo * lo + lo * hi + hi * hi) / 3.0


def sampler_variance(P: np.ndarray, t: int, beta: float) -> float:
    """``E[y_0^2]`` for the restricted sampler on a cloud symmetric about 0 whose coordinates are all ``P[0]``.

    The piece R_ij (depth i, first coordinate j at depth exactly i) has
    probability proportional to ``vol(R_ij) e^{beta i}`` (Amin et al. 2023,
    Lemma 3.9; :func:`dpstats.mechanisms.tukey.depth.shell_log_volumes`); in it,
    coordinate 0 is uniform on the depth > i side if j > 0 and on the two end
    gaps of depth i if j = 0.
    """
    m = P.shape[1]
    depths, pieces = td.shell_log_volumes(P, td.log_side_lengths(P), t)
    scores = pieces + beta * depths[:, None]
    weights = np.exp(scores - np.max(scores))
    weights /= weights.sum()
    x = P[0]
    top = td.max_depth(m)
    inner_moment = np.where(
        depths < top, _second_moment(x[np.minimum(depths, m - 1)], x[np.maximum(m - depths - 1, 0)]), 0.0
    )
    left_lo, left_hi = x[depths - 1], np.where(depths < top, x[np.minimum(depths, m - 1)], x[m - top])
    right_lo, right_hi = x[np.maximum(m - depths - 1, 0)], x[m - depths]
    left_len, right_len = left_hi - left_lo, np.where(depths < top, right_hi - right_lo, 0.0)
    with np.errstate(invalid="ignore"):
        gap_moment = (left_len * _second_moment(left_lo, left_hi) + right_len * _second_moment(right_lo, right_hi)) / (
            left_len + right_len
        )
    gap_moment = np.nan_to_num(gap_moment)
    return float((weights[:, 0] * gap_moment).sum() + (weights[:, 1:].sum(axis=1) * inner_moment).sum())


def degrees_of_freedom(n: int, m: int, d: int) -> float:
    """``nu = floor(n/m) - d + 1``: the t law of an OLS coefficient on ``floor(n/m)`` Gaussian rows."""
    return float(max(n // m - d + 1, 1))


def default_share(n: int, d: int, eps: float, delta: float, m: int | None, binary: bool = False) -> float:
    """The smallest of :data:`DEFAULT_SHARES` that the point and the spreads can afford, or 0 (public facts only).

    The point's propose-test-release has little slack where the default m
    reaches its cap n // d (n = 1000, d = 2, eps = 1 passes 93% of the time at
    eps and 2% at 0.9 eps): a share is spent only if the idealised cloud of
    dpstats/mechanisms/tukey/default_m.py still passes with probability
    PASS_TARGET at ``(1 - share) eps`` and each spread release gets
    ``eps_j m >= MIN_SPREAD_BUDGET``. The default m of the point shrinks with
    its eps as ``1 / eps``, so at 8-10 coefficients a quarter of eps left
    ``eps_j m`` at 34-40 for every n (m is about 1,250-1,370 at eps = 1): a
    larger share buys both a larger m and a larger ``eps_j``, and about a third
    of eps reaches 50 there. ``binary``: the default m is that of a binary response
    (:func:`.default_m.default_m_binary`).
    """
    rule = default_m.default_m_binary if binary else default_m.default_m
    for share in DEFAULT_SHARES:
        point_eps = eps * (1.0 - share)
        models = m if m is not None else rule(n, d, point_eps, delta)
        distance = default_m.ideal_distance(models, d, n, point_eps, delta)
        passes = distance >= default_m.required_distance(point_eps, delta)
        if passes and share_per_coordinate(eps, share, d) * models >= MIN_SPREAD_BUDGET:
            return share
    return 0.0


def share_per_coordinate(eps: float, share: float, d: int) -> float:
    """Each coordinate's spread release gets ``share eps / d``."""
    return eps * share / d


@dataclass(frozen=True)
class SpreadLaw:
    """The estimate's modelled law: ``y~ + se t_df`` in each coordinate, independently; ``se`` includes the skew
    allowance (``allowance``, in the coefficients' units: module docstring, step 3)."""

    se: np.ndarray
    df: float
    allowance: np.ndarray

    @property
    def cov(self) -> np.ndarray:
        """Its covariance (diagonal)."""
        return np.diag(self.se**2 * self.df / (self.df - 2.0))

    def replicates(self, rng: np.random.Generator, point: np.ndarray) -> np.ndarray:
        """``(B, d)`` draws of the law (basic intervals from them are the t intervals)."""
        return point + self.se * noise.student_t(rng, self.df, (REPLICATES, point.size))


@dataclass(frozen=True)
class SkewAllowance:
    """The skewness ``skew`` of a row's contribution that the intervals allow for, in fits on ``rows`` rows."""

    skew: float
    rows: int

    def of(self, scale: np.ndarray) -> np.ndarray:
        """``skew sigma / (6 sqrt(b))``: how far the median of the fits (scale sigma) may lie from their mean."""
        return self.skew * scale / (6.0 * math.sqrt(self.rows))


def spread_law(
    log_spreads: np.ndarray, m: int, nu: float, t: int, beta: float, eps_spread: float, skew: SkewAllowance
) -> SpreadLaw:
    """The standard errors from the released spreads (module docstring, steps 2 and 3)."""
    sampling, privacy, log_spread = unit_variances(m, log_spreads.size, nu, t, beta, eps_spread)
    mad = float(t_quantiles(nu, np.array(0.75)))
    scale = np.exp(log_spreads) / mad
    df = max(1.0 / (2.0 * log_spread), MIN_DF)
    se = scale * math.sqrt(sampling + privacy)
    allowance = skew.of(scale)
    return SpreadLaw(se=se * bias_aware_factor(allowance / se), df=df, allowance=allowance)


def bias_aware_factor(ratio: np.ndarray) -> np.ndarray:
    """``c(r) / z``: c(r) the 95% quantile of ``|N(r, 1)|``, so that ``+- c(r) se`` covers a bias up to ``r se``."""
    return stats.foldnorm.ppf(0.95, np.asarray(ratio, dtype=float)) / LEVEL_Z

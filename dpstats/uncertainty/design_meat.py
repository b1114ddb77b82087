"""The design-based meat of a weighted estimating equation, released: rows as PSUs, or declared PSUs in strata.

A weighted estimator solves ``sum_i s_i(theta) = 0`` with ``s_i = w_i psi_i z_i``,
and its design-based (linearisation) covariance is ``B^{-1} M B^{-1}`` with the
bread B (the mechanism's) and the meat

    M = sum_h m_h / (m_h - 1) sum_{c in h} (e_c - e_h)(e_c - e_h)'

over the strata h, their m_h PSUs c, the PSUs' score totals ``e_c = sum_{i in c} s_i``
and their stratum's mean ``e_h`` (Binder 1983; R survey's ``svyrecvar``, used by
``svyglm``, with ``nest = TRUE`` and a stratum of one PSU contributing nothing, as
``options(survey.lonely.psu = "certainty")``). The caller bounds every row's score
whatever the row (``ScoreBound``: ``||s_i||_1 <= l1`` and ``||s_i||_2^2 <= l2sq``,
from the declared bounds, the weights' declared maximum and a clipped residual).

* **Rows as PSUs** (no ``cluster=``): the upper triangle of ``sum_i s_i s_i'`` is one
  Laplace release. A row's entries have absolute values summing to
  ``sum_{j <= k} |s_j s_k| = (||s||_1^2 + ||s||_2^2) / 2``, so two rows move them by at
  most ``l1^2 + l2sq`` in L1 (:func:`row_meat_sensitivity`). The meat is
  ``n / (n - 1)`` times it (one stratum of n PSUs, the scores' mean 0 at the
  estimate).
* **Declared PSUs**: every PSU's total ``e_c`` is released (one Laplace vector of
  ``count x k`` entries). A replaced row leaves one total and joins one (possibly
  the same), so the vector moves by at most ``2 l1`` in L1, whatever the PSUs' sizes
  (:func:`psu_sensitivity`). Each entry carries Laplace noise of variance ``2 b^2``,
  independent, so the centred sum of squares of a stratum's noisy totals exceeds the
  exact one by ``(m_h - 1) 2 b^2 I`` in expectation; the meat subtracts it.

* **Rows as PSUs within strata** (``strata=`` without ``cluster=``): per stratum, the
  upper triangle of its rows' outer products, its score total and its number of rows
  (``STRATUM_PARTS`` of the budget). A replaced row leaves one stratum's sums and joins
  one's, so the three stacked releases move by at most ``l1^2 + l2sq``, ``2 l1`` and 2.
  The meat is ``sum_h n_h / (n_h - 1) [O_h - (T_h T_h' - 2 b^2 I) / n_h]`` at the
  released O, T and n (strata of fewer than two released rows left out), svyglm's for
  ``svydesign(ids = ~1, strata = ~st)``.

Both are made positive semi-definite (dpstats/uncertainty/intervals.py,
``nearest_psd``); what is subtracted and projected is post-processing.

Intervals. A variance read from a noisy meat is itself noisy, and with few PSUs
it is noisy without privacy too (svyglm's intervals are Student's t with the
PSUs less the strata as degrees of freedom). For a coefficient's variance
``v = a' M a``, :meth:`DesignMeat.sampling_law` raises v to at least the standard
deviation of its noise (where the noise's correction pushed it towards 0, the
variance is not known to be smaller than that: a half of such fits would otherwise
have intervals of almost no width) and gives Satterthwaite's degrees of freedom
``2 v^2 / Var(v)``, with ``Var(v)`` the design's ``2 v^2 / df`` plus the noise's:
for the PSUs' totals, per stratum ``4 sigma^2 Q_h + 5 (m_h - 1) sigma^4`` (``sigma^2``
the noise's variance along a, ``Q_h`` the stratum's spread along a less its
noise's, a Laplace fourth moment bounding the second term), times ``(m_h / (m_h -
1))^2``; for the outer products the entries' noise along ``a a'``. The
mechanisms draw their intervals' replicates as normal draws of the sandwich
scaled by :func:`studentised` factors, so that each coefficient's interval is
Student's t with its degrees of freedom: where the noise swamps the meat the
degrees of freedom fall and the interval widens, instead of shrinking with a
meat that the noise's correction pushed towards 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import chi2

from ..design.survey import PSUs
from ..privacy import noise
from ..privacy.noise import laplace_mechanism
from .intervals import nearest_psd
from .sandwich import from_upper_triangle, upper_triangle

ROW_MEAT = "meat"
PSU_TOTALS = "PSU score totals"
STRATUM_MEAT = "meat within strata"
STRATUM_PARTS = {"outer products by stratum": 0.5, "score totals by stratum": 0.4, "rows by stratum": 0.1}
"""Rows as PSUs within strata: the parts of the meat's budget (module docstring)."""


@dataclass(frozen=True)
class ScoreBound:
    """Public bounds on every row's weighted score ``s_i``: ``||s_i||_1 <= l1``, ``||s_i||_2^2 <= l2sq``."""

    l1: float
    l2sq: float


def row_meat_sensitivity(bound: ScoreBound) -> float:
    """L1 sensitivity of the upper triangle of ``sum_i s_i s_i'`` (module docstring)."""
    return bound.l1**2 + bound.l2sq


def psu_sensitivity(bound: ScoreBound) -> float:
    """L1 sensitivity of the PSUs' score totals, stacked (module docstring)."""
    return 2.0 * bound.l1


def release_name(psus: PSUs | None) -> str:
    """The release's name in the budget's split."""
    if psus is None:
        return ROW_MEAT
    return STRATUM_MEAT if psus.cluster is None else PSU_TOTALS


@dataclass(frozen=True)
class DesignMeat:
    """A released design-based meat (PSD) with what its precision needs: the noisy pieces it was made of.

    ``centred`` holds, per stratum of two PSUs or more, the noisy totals centred at their mean (rows as
    PSUs: None); ``noise_variance`` the variance of each released entry's Laplace noise; ``factor`` the
    rows' ``n / (n - 1)``; ``design_df`` the design's degrees of freedom: PSUs less strata, or n - 1.
    """

    meat: np.ndarray
    noise_variance: float
    design_df: int
    centred: tuple[np.ndarray, ...] | None = None
    factor: float = 1.0

    def noise_variance_along(self, a: np.ndarray) -> float:
        """The variance the release's noise gives ``a' M a`` (module docstring, "Intervals"; released facts)."""
        if self.centred is None:
            rows, cols = np.triu_indices(a.size)
            along = np.where(rows == cols, 1.0, 2.0) * a[rows] * a[cols]  # each released entry's part in a' M a
            return self.factor**2 * self.noise_variance * float(along @ along)
        sigma2 = self.noise_variance * float(a @ a)
        noise = 0.0
        for members in self.centred:
            m = members.shape[0]
            spread = max(float(np.sum((members @ a) ** 2)) - (m - 1) * sigma2, 0.0)
            noise += (m / (m - 1)) ** 2 * (4.0 * sigma2 * spread + LAPLACE_FOURTH * (m - 1) * sigma2**2)
        return noise

    def sampling_law(self, directions: np.ndarray, sampling: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The sampling covariance of the coefficients whose variances are ``a_j' M a_j`` (``directions``' columns
        ``a_j``; ``sampling`` = ``A' M A``), each variance raised to at least its noise's standard deviation,
        and each coefficient's degrees of freedom there (module docstring, "Intervals"; post-processing)."""
        noise = np.array([self.noise_variance_along(directions[:, j]) for j in range(directions.shape[1])])
        v = np.diag(sampling).copy()
        floored = np.maximum(v, np.sqrt(noise))
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(v > 0, np.sqrt(floored / v), 0.0)
            cov = sampling * np.outer(scale, scale)
            cov[np.diag_indices_from(cov)] = floored
            dfs = np.where(floored > 0, 1.0 / (1.0 / max(self.design_df, 1) + noise / (2.0 * floored**2)), np.inf)
        return cov, np.maximum(dfs, MIN_DF)


MIN_DF = 1.0
"""The fewest degrees of freedom a variance is given (Cauchy intervals: wide, but finite)."""
LAPLACE_FOURTH = 5.0
"""``Var(nu^2) / Var(nu)^2`` for a Laplace ``nu`` (its fourth moment is 6 sigma^4): an upper bound for a sum of
independent Laplace coordinates, whose kurtosis is smaller."""


def release_meat(
    rng: np.random.Generator, scores: np.ndarray, bound: ScoreBound, eps: float, psus: PSUs | None
) -> DesignMeat:
    """The design-based meat of the rows' weighted ``scores`` (n x k), released at ``eps`` (module docstring)."""
    n, k = scores.shape
    if psus is None:
        sensitivity = row_meat_sensitivity(bound)
        noisy = laplace_mechanism(rng, upper_triangle(scores.T @ scores), sensitivity, eps, ROW_MEAT)
        factor = n / max(n - 1, 1)
        meat = nearest_psd(from_upper_triangle(np.atleast_1d(noisy), k) * factor)
        return DesignMeat(meat, 2.0 * (sensitivity / eps) ** 2, n - 1, factor=factor)
    if psus.cluster is None:
        return _within_strata(rng, scores, bound, eps, psus)
    totals = np.zeros((psus.count, k))
    np.add.at(totals, psus.codes, scores)
    scale = psu_sensitivity(bound) / eps
    noisy = np.asarray(laplace_mechanism(rng, totals.ravel(), psu_sensitivity(bound), eps, PSU_TOTALS))
    noisy = noisy.reshape(psus.count, k)
    centred = tuple(
        members - members.mean(axis=0)
        for members in (noisy[psus.stratum == h] for h in np.unique(psus.stratum))
        if members.shape[0] >= 2
    )
    meat = nearest_psd(stratified_meat(noisy, psus.stratum, 2.0 * scale**2))
    return DesignMeat(meat, 2.0 * scale**2, sum(c.shape[0] - 1 for c in centred), centred)


def _within_strata(
    rng: np.random.Generator, scores: np.ndarray, bound: ScoreBound, eps: float, psus: PSUs
) -> DesignMeat:
    """Rows as PSUs within strata (module docstring): each stratum's outer products, score total and rows."""
    k = scores.shape[1]
    rows, cols = np.triu_indices(k)
    strata = psus.count
    outer, totals = np.zeros((strata, rows.size)), np.zeros((strata, k))
    np.add.at(outer, psus.codes, scores[:, rows] * scores[:, cols])
    np.add.at(totals, psus.codes, scores)
    counts = np.bincount(psus.codes, minlength=strata).astype(float)
    parts = [eps * share for share in STRATUM_PARTS.values()]
    sensitivities = (row_meat_sensitivity(bound), psu_sensitivity(bound), 2.0)
    released = [
        np.asarray(laplace_mechanism(rng, exact.ravel(), sensitivity, part, name), dtype=float)
        for exact, sensitivity, part, name in zip(
            (outer, totals, counts), sensitivities, parts, STRATUM_PARTS, strict=True
        )
    ]
    outer, totals, counts = released[0].reshape(strata, rows.size), released[1].reshape(strata, k), released[2]
    total_variance = 2.0 * (sensitivities[1] / parts[1]) ** 2
    meat = np.zeros((k, k))
    for h in np.flatnonzero(counts >= 2.0):
        squares = from_upper_triangle(outer[h], k)
        centred = squares - (np.outer(totals[h], totals[h]) - total_variance * np.eye(k)) / counts[h]
        meat += counts[h] / (counts[h] - 1.0) * centred
    kept = counts >= 2.0
    design_df = max(round(float(counts[kept].sum())) - int(kept.sum()), 1)
    outer_variance = strata * 2.0 * (sensitivities[0] / parts[0]) ** 2
    return DesignMeat(nearest_psd(meat), outer_variance, design_df)


def studentised(rng: np.random.Generator, dfs: np.ndarray, size: int) -> np.ndarray:
    """``size`` rows of factors ``sqrt(df_j / chi2_{df_j})``, one uniform per row for all columns (comonotone):
    multiplied into normal draws of a sandwich's law they give each coordinate Student's t law with its
    degrees of freedom (post-processing); an infinite one is the normal law (factor 1)."""
    uniform = noise.uniform(rng, 0.0, 1.0, size)[:, None]
    dfs = np.asarray(dfs, dtype=float)[None, :]
    finite = np.isfinite(dfs)
    degrees = np.where(finite, dfs, 1.0)
    with np.errstate(divide="ignore"):
        return np.where(finite, np.sqrt(degrees / chi2.ppf(uniform, degrees)), 1.0)


def t_draws(rng: np.random.Generator, mean: np.ndarray, cov: np.ndarray, dfs: np.ndarray, size: int) -> np.ndarray:
    """``size`` draws of ``mean`` plus normal draws of ``cov`` scaled by :func:`studentised` factors: each
    coordinate ``j`` Student's t with ``dfs[j]`` degrees of freedom and scale ``sqrt(cov[j, j])``."""
    values, vectors = np.linalg.eigh(0.5 * (cov + cov.T))
    normal = noise.gaussian(rng, 1.0, (size, mean.size)) @ (vectors * np.sqrt(np.maximum(values, 0.0))).T
    return mean + studentised(rng, dfs, size) * normal


def stratified_meat(totals: np.ndarray, stratum: np.ndarray, noise_variance: float = 0.0) -> np.ndarray:
    """``sum_h m_h/(m_h - 1) [sum_c (e_c - e_h)(e_c - e_h)' - (m_h - 1) noise_variance I]`` over the strata
    with two PSUs or more (module docstring); ``noise_variance`` 0 for exact totals."""
    k = totals.shape[1]
    meat = np.zeros((k, k))
    for h in np.unique(stratum):
        members = totals[stratum == h]
        m = members.shape[0]
        if m < 2:
            continue
        centred = members - members.mean(axis=0)
        meat += m / (m - 1) * (centred.T @ centred - (m - 1) * noise_variance * np.eye(k))
    return meat

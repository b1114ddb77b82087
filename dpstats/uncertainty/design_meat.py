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

Both are made positive semi-definite (dpstats/uncertainty/intervals.py,
``nearest_psd``); what is subtracted and projected is post-processing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..design.survey import PSUs
from ..privacy.noise import laplace_mechanism
from .intervals import nearest_psd
from .sandwich import from_upper_triangle, upper_triangle

ROW_MEAT = "meat"
PSU_TOTALS = "PSU score totals"


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
    return ROW_MEAT if psus is None else PSU_TOTALS


def release_meat(
    rng: np.random.Generator, scores: np.ndarray, bound: ScoreBound, eps: float, psus: PSUs | None
) -> np.ndarray:
    """The design-based meat of the rows' weighted ``scores`` (n x k), released at ``eps`` (module docstring)."""
    n, k = scores.shape
    if psus is None:
        noisy = laplace_mechanism(rng, upper_triangle(scores.T @ scores), row_meat_sensitivity(bound), eps, ROW_MEAT)
        return nearest_psd(from_upper_triangle(np.atleast_1d(noisy), k) * n / max(n - 1, 1))
    totals = np.zeros((psus.count, k))
    np.add.at(totals, psus.codes, scores)
    scale = psu_sensitivity(bound) / eps
    noisy = np.asarray(laplace_mechanism(rng, totals.ravel(), psu_sensitivity(bound), eps, PSU_TOTALS))
    return nearest_psd(stratified_meat(noisy.reshape(psus.count, k), psus.stratum, 2.0 * scale**2))


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

"""The design-based meat of a survey-weighted fit on a perturbed histogram, released at the fit's cell scores.

A fit on the weighted histogram (dpstats/mechanisms/histogram/survey_weights.py) solves
``sum_r W_r psi_r(b) = 0`` over the cells, with ``W_r`` the released weighted count and
``psi_r`` the estimator's score at the cell's point (least squares
``x_r (y_r - x_r'b)``; quantile regression ``x_r (G'_r - q)``, dpstats/mechanisms/histogram/inference.py;
a logit or probit ``x_r lambda_r``, dpstats/mechanisms/histogram/binary_inference.py).
Its rows' part, ``sum_i (w_i / W) psi_{r(i)}(b)``, is a weighted estimating equation
whose design-based covariance is the sandwich ``H^{-1} M H^{-1}`` with the meat of
survey::svyglm's linearisation (Binder 1983; dpstats/uncertainty/design_meat.py): the
weighted scores' outer products with one PSU per row (the weighted sandwich, HC0),
or the declared PSUs' score totals within strata. The weighted counts' sampling
variance is not Poisson's, so the histogram's own intervals are run in a world with
the counts' noise and thresholding only (cell_moments.py's ``NoiseModel``) and this
meat adds the rows' sampling error (Lei 2011, section 3: the fit on the histogram is
an M-estimator of the binned data).

**The release.** Once the fit ``b`` is released, ``psi_r(b)`` is a public function of
the cell (post-processing of the histogram), so every row's score ``s_i = (w_i / W)
psi_{r(i)}(b)`` obeys ``||s_i||_1 <= max_r ||psi_r||_1`` and ``||s_i||_2^2 <= max_r
||psi_r||_2^2`` (the weights' mass ``w_i / W`` is at most 1), whatever the row: the
:class:`~dpstats.uncertainty.design_meat.ScoreBound` that release_meat's sensitivities
need (``l1^2 + l2sq`` for the rows' meat, ``2 l1`` for the PSUs' totals). A cell whose
point has no finite design row (a transform undefined at a bound's cell) scores 0. The
meat spends ``MEAT_SHARE`` of eps, the histogram the rest (basic composition).

**Clipping.** The bound is the largest score over every cell, empty ones included, and a
least-squares residual at a far corner of the box is many times a typical one: the noise,
of scale ``l1^2 + l2sq``, then swamps the meat, whose projection onto the positive
semi-definite cone inflates it. Each cell's score is therefore scaled down to the
``CLIP_QUANTILE`` of the scores' L1 norms, the quantile taken under the fit's released
weights (public). The few rows beyond it count at the radius: the meat is biased down
by their excess alone.

**The cap** (one PSU per row). A row's mass ``w_i / W`` is at most 1, so the rows' meat
``sum_r (sum_{i in r} (w_i / W)^2) psi_r psi_r'`` is at most ``sum_r T_r psi_r psi_r'``
with ``T_r`` the weighted count (in units of W): the Poisson meat of the counts. Where
the weights' mean is far below W the released meat is mostly noise, and its projection
onto the positive semi-definite cone would inflate it past that bound; it is brought
between 0 and the bound at the fit's released weights (post-processing; a declared
PSU's total, whose rows' scores may add up, has no such bound).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ...design.survey import PSUs
from ...privacy.accounting import PrivacySpent
from ...uncertainty.design_meat import ScoreBound, release_meat, release_name

CLIP_QUANTILE = 0.99
"""Every cell's score is clipped to this quantile of the scores' L1 norms under the fit's weights (public)."""
MEAT_SHARE = 0.1
"""The part of eps a survey-weighted histogram fit spends on its design-based meat (the rest on the histogram)."""
WEIGHTED_NOTE = (
    " Survey weights: the counts are the rows' weights, and the rows' sampling error is the design-based weighted "
    "sandwich (as survey::svyglm's) over {design}, its meat released at the fit's cell scores "
    "(dpstats/mechanisms/histogram/cell_meat.py); the bootstrap world holds the counts' noise and thresholding."
)


@dataclass(frozen=True)
class CellMeat:
    """What releases the meat (private: the rows' cells and masses): ``cells`` every row's cell of the release,
    ``masses`` its ``w_i / W``, ``psus`` the declared PSUs (None: one per row), at ``eps`` from ``rng``."""

    cells: np.ndarray
    masses: np.ndarray
    psus: PSUs | None
    eps: float
    rng: np.random.Generator

    def release(self, psi: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """The released design-based meat of the rows' scores ``(w_i / W) psi_{r(i)}`` (``psi``: cells x k, public),
        each cell's score clipped to the ``CLIP_QUANTILE`` of the scores' L1 norms under the fit's ``weights``
        (module docstring)."""
        psi = np.where(np.all(np.isfinite(psi), axis=1)[:, None], psi, 0.0)
        norms = np.abs(psi).sum(axis=1)
        mass = np.maximum(weights, 0.0)
        if mass.sum() > 0:
            order = np.argsort(norms)
            cumulative = np.cumsum(mass[order])
            radius = norms[order][np.searchsorted(cumulative, CLIP_QUANTILE * cumulative[-1])]
            psi = psi * np.minimum(1.0, radius / np.where(norms > 0, norms, 1.0))[:, None]
        l1 = float(np.max(np.abs(psi).sum(axis=1)))
        if l1 == 0.0:  # every cell scores 0 (a public fact): so does every row
            return np.zeros((psi.shape[1], psi.shape[1]))
        bound = ScoreBound(l1, float(np.max(np.square(psi).sum(axis=1))))
        meat = release_meat(self.rng, self.masses[:, None] * psi[self.cells], bound, self.eps, self.psus).meat
        if self.psus is not None:
            return meat
        return capped(meat, psi.T @ (mass[:, None] * psi))

    @property
    def note(self) -> str:
        """The standard errors' note on the weights and the design."""
        design = "one PSU per row" if self.psus is None else self.psus.description
        return WEIGHTED_NOTE.format(design=design)


def capped(meat: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """``meat`` brought into ``0 <= meat <= upper`` (positive semi-definite order): the eigenvalues of
    ``upper^{-1/2} meat upper^{-1/2}`` clipped to [0, 1] (module docstring, **The cap**)."""
    values, vectors = np.linalg.eigh((upper + upper.T) / 2.0)
    kept = values > max(float(values[-1]), 0.0) * 1e-12
    if not kept.any():
        return np.zeros_like(meat)
    root, inverse = vectors[:, kept] * np.sqrt(values[kept]), vectors[:, kept] / np.sqrt(values[kept])
    inner = inverse.T @ meat @ inverse
    v, q = np.linalg.eigh((inner + inner.T) / 2.0)
    return root @ (q * np.clip(v, 0.0, 1.0)) @ q.T @ root.T


def sandwich(bread: np.ndarray, meat: np.ndarray) -> np.ndarray | None:
    """``B^{-1} M B^{-1}``, None where the bread is singular."""
    try:
        inverse = np.linalg.inv(bread)
    except np.linalg.LinAlgError:
        return None
    return inverse @ meat @ inverse.T


def with_meat(privacy: PrivacySpent, eps: float, psus: PSUs | None) -> PrivacySpent:
    """The histogram's spend with the meat's ``eps`` added to its total and its split (nothing when 0)."""
    if eps <= 0:
        return privacy
    split = privacy.split or (("histogram", privacy.eps),)
    return replace(privacy, eps=privacy.eps + eps, split=(*split, (release_name(psus), eps)))

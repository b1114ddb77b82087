"""How far NoisyStats' repair can pull the estimate: a bound on its shrinkage, from the release alone (issue 45).

The repair (dpstats/mechanisms/noisystats/repair.py) solves with
``R = A~ + D`` instead of the released ``A~ = A + E``, where ``D`` raises
every eigenvalue ``l_i`` of ``A~`` below the floor ``lambda`` to it. With the
released right-hand side ``b~ = A theta + e`` the estimate is, exactly,

    theta^ = R^{-1} b~ = theta - R^{-1} D theta + R^{-1} (e - E theta),

and ``R^{-1} D = sum_i s_i v_i v_i'`` over the raised eigenvectors ``v_i``
with ``s_i = 1 - l_i / lambda``. The last term is the noise, which the
bootstrap's spread describes; the middle one is the repair's shrinkage,
``-sum_i s_i v_i (v_i' theta)``: each raised direction loses the part
``s_i`` of the true coefficients' component along it. ``v_i``, ``s_i`` and
``lambda`` are read from the released matrix and a public floor, so
everything below is post-processing.

The component ``v_i' theta`` is unknown; it is bounded in two ways and the
smaller bound is used:

* **the class** (dpstats/uncertainty/bias.py, ``EFFECT_BOUND``): with
  ``|theta_k| <= M_k`` in the solve's coordinates, ``|v_i' theta| <=
  sum_k |v_ik| M_k``;
* **the release**, where ``l_i > 0``: along ``v_i`` the identity reads
  ``lambda v_i' theta^ = v_i' b~ = l_i v_i' theta - v_i' E theta + v_i' e``,
  so ``v_i' theta = (lambda / l_i) (v_i' theta^ + n_i)`` with ``n_i`` the
  noise of ``v_i' theta^`` (the estimate's own noise along ``v_i``); with
  its standard error ``sd_i`` from the release's covariance,
  ``|v_i' theta| <= (lambda / l_i) (|v_i' theta^| + Z sd_i)``, at the
  usual two-sided 95% (``Z`` = 1.96) for that noise.

Where the eigenvalue was only just below the floor (``s_i`` small) or the
component is small, the bound is small next to the standard error and the fit
is "ok"; where the repair replaced a noise-dominated direction (``l_i`` near
0 or negative), the class bound applies in full and the fit is "biased", its
intervals widened by it. A coefficient's bound sums its directions' bounds
through their images in the user's coordinates, ``sum_i |(L v_i)_j| s_i
m_i`` (``L`` the map from the solve's coordinates to the user's; where the
map itself depends on an unreleased mean, as the centred intercept's does,
the image is its largest over the declared bounds).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...design.matrix import CenteredUnitScale, Design
from ...uncertainty.bias import EFFECT_BOUND, box_reach
from .structured import Layout

Z = 1.959963984540054
"""The two-sided 95% normal quantile that bounds the estimate's noise along a raised direction."""


@dataclass(frozen=True)
class RepairShrinkage:
    """The raised directions of a repaired matrix (columns of ``vectors``), the part ``1 - l / lambda`` of the
    true coefficients each loses (``factors``) and ``lambda / l`` (``ratios``; infinite where ``l <= 0``)."""

    vectors: np.ndarray
    factors: np.ndarray
    ratios: np.ndarray

    @classmethod
    def of(cls, matrix: np.ndarray, floor: float) -> RepairShrinkage | None:
        """The shrinkage of repairing ``matrix`` at ``floor`` (None where no eigenvalue is raised)."""
        values, vectors = np.linalg.eigh(matrix)
        raised = values < floor
        if not raised.any():
            return None
        low = values[raised]
        with np.errstate(divide="ignore"):
            ratios = np.where(low > 0, floor / np.where(low > 0, low, 1.0), np.inf)
        return cls(vectors[:, raised], 1.0 - low / floor, ratios)

    def components(self, theta: np.ndarray, cov: np.ndarray | None, box: np.ndarray) -> np.ndarray:
        """Per raised direction, a bound on ``|v_i' theta|`` for the true coefficients (module docstring): the
        class's, or the release's where it is smaller (it needs a finite covariance ``cov`` of ``theta``)."""
        by_class = _weighted_sums(self.vectors, box)
        if cov is None or not np.all(np.isfinite(cov)) or not np.all(np.isfinite(theta)):
            return by_class
        with np.errstate(all="ignore"):
            along = self.vectors.T @ theta
            sd = np.sqrt(np.maximum(np.einsum("ki,kl,li->i", self.vectors, cov, self.vectors), 0.0))
            by_release = self.ratios * (np.abs(along) + Z * sd)
        return np.where(np.isfinite(by_release), np.minimum(by_class, by_release), by_class)

    def bound(self, images: np.ndarray, theta: np.ndarray, cov: np.ndarray | None, box: np.ndarray) -> np.ndarray:
        """Per user coefficient ``j``, ``sum_i images[j, i] s_i m_i``, with ``images[j, i]`` at least
        ``|(L v_i)_j|`` (module docstring) and ``m_i`` from :meth:`components`; infinite where a term is not
        finite (nothing bounds it), without a warning whatever the release holds."""
        with np.errstate(all="ignore"):
            pulls = self.factors * self.components(theta, cov, box)
        return _weighted_sums(images.T, pulls)


def _weighted_sums(matrix: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``|matrix|' weights`` (:func:`box_reach`: ``0 * inf = 0``) with NaN read as infinite (a bound nothing
    finite holds)."""
    sums = box_reach(matrix.T, weights)
    return np.where(np.isnan(sums), np.inf, sums)


def centered_bound(
    shrinkage: RepairShrinkage | None,
    scale: CenteredUnitScale,
    design: Design,
    slopes: np.ndarray,
    cov: np.ndarray | None,
) -> np.ndarray | None:
    """The bound in the design's order for the centred release, which solves for the unit-scale ``slopes``
    (dpstats/mechanisms/noisystats/mechanism.py); ``cov`` is the estimate's covariance in the design's order
    (None: no standard errors). The intercept's image is its largest over the columns' declared bounds, which
    hold its unreleased means (module docstring)."""
    if shrinkage is None:
        return None
    per_unit = scale.y_width / scale.x_width  # a unit-scale slope's size in the user's units
    V = shrinkage.vectors
    ends = np.stack([scale.x_lo, scale.x_lo + scale.x_width]) * per_unit  # (2, p): the slopes' multipliers
    reach = np.einsum("ej,ji->eji", ends, V)  # each slope's multiplier at either end, times the direction
    intercept = np.maximum(np.abs(reach.max(axis=0).sum(axis=0)), np.abs(reach.min(axis=0).sum(axis=0)))
    images = np.empty((design.n_columns, V.shape[1]))
    images[design.slope_indices] = np.abs(V) * per_unit[:, None]
    images[design.intercept_index] = intercept
    slope_cov = None
    if cov is not None:
        to_unit = 1.0 / per_unit
        block = cov[np.ix_(design.slope_indices, design.slope_indices)]
        with np.errstate(all="ignore"):
            slope_cov = block * np.outer(to_unit, to_unit)
    box = np.full(slopes.size, EFFECT_BOUND)
    return shrinkage.bound(images, slopes, slope_cov, box)


def structured_bound(
    shrinkage: RepairShrinkage | None,
    layout: Layout,
    to_user: np.ndarray,
    order: np.ndarray,
    theta: np.ndarray,
    cov: np.ndarray | None,
) -> np.ndarray | None:
    """The bound in the design's order for a release that solves ``W'W theta = W'v`` in the layout's
    coordinates (dpstats/mechanisms/noisystats/structured.py): ``to_user`` is the linear part ``J T`` of their
    map to the user's (intercept, slopes), ``order`` takes those to the design's order, ``cov`` is the
    estimate's covariance in the design's order (None: none). The class in these coordinates: slopes and
    effects at most ``EFFECT_BOUND``; a level's centred intercept (the response at the middle of the bounds,
    less the middle of its range) at most 1/2 plus the most the slopes can add on the way from a row to the
    middle: half a unit per continuous column, a whole one per dummy of the other blocks."""
    if shrinkage is None:
        return None
    images = (to_user @ shrinkage.vectors)[order]
    dummies = int(np.sum(layout.centre[:-1] == 0))
    continuous = layout.p - dummies
    levels = np.r_[0, 1 + layout.full]
    box = np.full(layout.p + 1, EFFECT_BOUND)
    box[levels] = 0.5 + EFFECT_BOUND * (continuous / 2 + dummies - layout.full.size)
    solve_cov = None
    if cov is not None:
        inverse = np.linalg.inv(to_user)
        ordered = np.empty_like(cov)
        ordered[np.ix_(order, order)] = cov
        with np.errstate(all="ignore"):  # an infinite covariance (its release failed) gives no release bound
            solve_cov = inverse @ ordered @ inverse.T
    return shrinkage.bound(images, theta, solve_cov, box)


def origin_bound(
    shrinkage: RepairShrinkage | None,
    per_unit: np.ndarray,
    unit_widths: np.ndarray,
    theta: np.ndarray,
    cov: np.ndarray | None,
) -> np.ndarray | None:
    """The bound for a release through the origin, which solves for ``theta`` with the user's coefficients
    ``per_unit * theta`` (dpstats/mechanisms/noisystats/mechanism.py): the class reads a coefficient's effect
    across its column's declared range, ``unit_widths * theta`` (the columns' ranges over y's, on the scales
    the release divides by), at most ``EFFECT_BOUND``; ``cov`` is the estimate's covariance (None: none)."""
    if shrinkage is None:
        return None
    images = np.abs(shrinkage.vectors) * per_unit[:, None]
    with np.errstate(all="ignore"):
        solve_cov = None if cov is None else cov / np.outer(per_unit, per_unit)
    with np.errstate(divide="ignore"):
        box = np.where(unit_widths > 0, EFFECT_BOUND / np.where(unit_widths > 0, unit_widths, 1.0), np.inf)
    return shrinkage.bound(images, theta, solve_cov, box)

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
everything below is post-processing. A user coefficient's bias is then a
linear function of the true coefficients, ``-h_j' theta`` with ``h_j =
sum_i (L v_i)_j s_i v_i`` (``L`` the map from the solve's coordinates to the
user's).

**The set the true coefficients lie in** is the intersection of two:

* **the class** (dpstats/uncertainty/bias.py, ``EFFECT_BOUND``): the box
  ``|theta_k| <= M_k`` in the solve's coordinates;
* **the release**: along every eigenvector ``w_k`` of ``A~`` with ``l_k > 0``
  the identity reads ``r_k w_k' theta^ = w_k' b~ = l_k w_k' theta - w_k' E
  theta + w_k' e`` (``r_k = max(l_k, lambda)``, the repaired eigenvalue), so
  ``w_k' theta = (r_k / l_k) (w_k' theta^ + n_k)`` with ``n_k`` the noise of
  ``w_k' theta^``; with its standard error ``sd_k`` from the release's
  covariance, ``w_k' theta`` lies within ``(r_k / l_k) Z sd_k`` of ``(r_k /
  l_k) w_k' theta^``. ``Z`` is Bonferroni's two-sided quantile over the
  directions used, so that all of them hold together with probability at
  least ``1 - LEVEL``, ``RAISED_SHARE`` of it spent on the raised ones,
  whose intervals the bound scales by ``lambda / l_k``. An unraised
  direction (``r_k = l_k``) pins its component to the estimate's; through
  the box it limits what the raised ones can be. A direction with ``l_k <=
  0`` says nothing.

The bound on ``|bias_j|`` is the largest ``|h_j' theta|`` over that set, a
pair of linear programmes (in the eigenvectors' coordinates, where the
release's intervals are simple bounds and the box is a set of linear
inequalities). Where the release's intervals leave the class empty (the
estimate's noise has put it outside), the class alone: ``sum_k |h_jk| M_k``,
reached at a corner of the box. Without a covariance, the class alone too.

Where the eigenvalue was only just below the floor (``s_i`` small) or the
component is pinned small, the bound is small next to the standard error and
the fit is "ok"; where the repair replaced a noise-dominated direction
(``l_i`` near 0 or negative) the class bounds it, and the fit is "biased",
its intervals widened by the bound. Where the map to the user's coordinates
depends on an unreleased mean (the centred intercept), the bound allows every
mean in the declared bounds.

**Measured** against the earlier bound, a sum over the raised directions of
each one's worst case (class or release, 1.96 standard errors each), on
benchmarks/real_regressions.py at eps 0.5, 1 and 5 (3 seeds; the ratio of the
bounds, median and range over the coefficients): HousePrices 0.20
(0.11-0.56; 125-400 standard errors became 15-95), CPS1985 0.63
(0.39-1.15), CASchools 0.82 (0.49-1.08), grunfeld 0.95 (0.65-1.09), fair
1.02 (1.00-1.33), engel 1 (one slope: the programme is the class's). Where a
ratio exceeds 1, Bonferroni's quantile is wider than 1.96. The labels did
not move (benchmarks/bench_real_data.py, 20 seeds: 446 of 600 fits
"biased", 0.77 of them more than 2 standard errors off, as before): where
the repair binds the bound is still tens of standard errors, since along a
noise-dominated direction the release says nothing and the class is all
there is (dpstats/uncertainty/bias.py, **What a bound over a class costs**).
benchmarks/bench_coverage.py is unchanged in its one- and two-column
designs (benchmarks/results/noisystats_repair_bound_coverage.txt). A fit's
programmes are one solver call, at no measurable cost (HousePrices' 12
coefficients: 0.10 s a fit, 0.12 s with the earlier bound).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from scipy import sparse
from scipy.optimize import OptimizeResult, linprog

from ...design.matrix import CenteredUnitScale, Design
from ...uncertainty.bias import EFFECT_BOUND, box_reach
from .structured import Layout

LEVEL = 0.05
"""The release's intervals on the eigen-components hold together with probability at least ``1 - LEVEL``."""

RAISED_SHARE = 0.8
"""The part of ``LEVEL`` spent on the raised directions' intervals; the unraised ones, whose noise is small next
to their components, share the rest."""

Interval = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class RepairShrinkage:
    """The eigen-decomposition of a released matrix (``directions`` as columns, ``values``) and the floor its
    repair raises the eigenvalues to."""

    directions: np.ndarray
    values: np.ndarray
    floor: float

    @classmethod
    def of(cls, matrix: np.ndarray, floor: float) -> RepairShrinkage | None:
        """The shrinkage of repairing ``matrix`` at ``floor`` (None where no eigenvalue is raised)."""
        values, directions = np.linalg.eigh(matrix)
        if not np.any(values < floor):
            return None
        return cls(directions, values, floor)

    @property
    def raised(self) -> np.ndarray:
        """Which eigenvalues the repair raises."""
        return self.values < self.floor

    @property
    def vectors(self) -> np.ndarray:
        """The raised directions ``v_i`` (columns)."""
        return self.directions[:, self.raised]

    @property
    def factors(self) -> np.ndarray:
        """``s_i = 1 - l_i / lambda``: the part of the true coefficients' component each raised direction loses."""
        return 1.0 - self.values[self.raised] / self.floor

    def pulls(self, images: np.ndarray) -> np.ndarray:
        """``h_j = sum_i images[j, i] s_i v_i`` for every row j of ``images`` (``(L v_i)_j``): the bias of user
        coefficient j is ``-h_j' theta``."""
        return (images * self.factors) @ self.vectors.T

    def components(self, theta: np.ndarray, cov: np.ndarray | None) -> Interval:
        """Where each eigen-component ``w_k' theta`` of the true coefficients lies by the release (module
        docstring): infinite ends where the release says nothing (``l_k <= 0``, or no finite covariance)."""
        p = self.values.size
        free = np.full(p, -np.inf), np.full(p, np.inf)
        if cov is None or not np.all(np.isfinite(cov)) or not np.all(np.isfinite(theta)):
            return free
        known = self.values > 0
        if not known.any():
            return free
        with np.errstate(all="ignore"):
            sd = np.sqrt(np.maximum(np.einsum("ki,kl,li->i", self.directions, cov, self.directions), 0.0))
            ratio = np.maximum(self.values, self.floor) / np.where(known, self.values, 1.0)
            centre, half = ratio * (self.directions.T @ theta), ratio * _quantiles(known, self.raised) * sd
        return np.where(known, centre - half, -np.inf), np.where(known, centre + half, np.inf)

    def bound(self, images: np.ndarray, theta: np.ndarray, cov: np.ndarray | None, box: np.ndarray) -> np.ndarray:
        """Per user coefficient ``j``, the largest ``|h_j' theta|`` over the class's box intersected with the
        release's intervals (module docstring); ``images[j, i] = (L v_i)_j``, ``cov`` the covariance of the
        estimate ``theta`` in the solve's coordinates (None: none). Infinite where nothing bounds it, without a
        warning whatever the release holds."""
        return largest_over(self.pulls(images), self.directions, self.components(theta, cov), box)


def _quantiles(known: np.ndarray, raised: np.ndarray) -> np.ndarray:
    """Per direction, the two-sided normal quantile of its interval: Bonferroni over the ``known`` directions,
    with ``RAISED_SHARE`` of ``LEVEL`` split among the raised ones (their intervals are the ones the bound
    scales by ``lambda / l``) and the rest among the others (or all of it where one group is empty)."""
    groups = (known & raised, known & ~raised)
    shares = (RAISED_SHARE, 1.0 - RAISED_SHARE) if all(g.any() for g in groups) else (1.0, 1.0)
    z = np.zeros(known.size)
    for group, share in zip(groups, shares, strict=True):
        if group.any():
            z[group] = NormalDist().inv_cdf(1.0 - share * LEVEL / (2.0 * int(group.sum())))
    return z


def largest_over(rows: np.ndarray, directions: np.ndarray, components: Interval, box: np.ndarray) -> np.ndarray:
    """``max |r' theta|`` for every row r of ``rows`` over ``{theta : |theta_k| <= box_k, lo <= W' theta <=
    hi}`` (``W`` = ``directions``, orthonormal; ``components`` = (lo, hi)); the box alone where that set is
    empty or the release bounds nothing; infinite where the set lets ``r' theta`` grow without bound.

    Every row's two programmes (its largest and its smallest value) are solved as one programme of independent
    blocks, one call to the solver per fit; where that one is unbounded, each row on its own."""
    with np.errstate(all="ignore"):
        by_class = box_reach(rows, box)
    by_class = np.where(np.isnan(by_class), np.inf, by_class)
    lo, hi = components
    if not (np.isfinite(lo).any() or np.isfinite(hi).any()) or not np.all(np.isfinite(rows)):
        return by_class
    live = np.flatnonzero(np.any(rows != 0, axis=1))
    out = np.where(np.any(rows != 0, axis=1), by_class, 0.0)
    if live.size == 0:
        return out
    walls = np.isfinite(box)
    sides = np.vstack([directions[walls], -directions[walls]]) if walls.any() else None  # |W phi| <= box
    limits = np.concatenate([box[walls], box[walls]]) if walls.any() else None
    bounds = [(None if np.isinf(a) else a, None if np.isinf(b) else b) for a, b in zip(lo, hi, strict=True)]

    def solve(costs: np.ndarray) -> OptimizeResult:  # one programme of independent blocks, a row of costs each
        blocks = costs.shape[0]
        return linprog(
            costs.ravel(),
            A_ub=None if sides is None else sparse.block_diag([sides] * blocks, format="csr"),
            b_ub=None if limits is None else np.tile(limits, blocks),
            bounds=bounds * blocks,
            method="highs",
        )

    costs = np.stack([sign * (directions.T @ rows[j]) for j in live for sign in (1, -1)])
    joint = solve(costs)
    if joint.status == 2:  # the release's set leaves the class: the class alone
        return out
    if joint.status == 0:
        ends = np.abs((joint.x.reshape(costs.shape) * costs).sum(axis=1)).reshape(-1, 2).max(axis=1)
        out[live] = np.minimum(by_class[live], ends)
        return out
    for j, pair in zip(live, costs.reshape(-1, 2, costs.shape[1]), strict=True):  # some row is unbounded
        ends = [solve(cost[None]) for cost in pair]
        if any(end.status == 3 for end in ends):
            out[j] = np.inf
        elif all(end.status == 0 for end in ends):
            out[j] = min(by_class[j], max(abs(ends[0].fun), abs(ends[1].fun)))
    return out


def centered_bound(
    shrinkage: RepairShrinkage | None,
    scale: CenteredUnitScale,
    design: Design,
    slopes: np.ndarray,
    cov: np.ndarray | None,
) -> np.ndarray | None:
    """The bound in the design's order for the centred release, which solves for the unit-scale ``slopes``
    (dpstats/mechanisms/noisystats/mechanism.py); ``cov`` is the estimate's covariance in the design's order
    (None: no standard errors). The intercept is the response's mean less ``sum_k m_k b_k`` over the slopes
    ``b_k`` and the columns' unreleased means ``m_k``, so its bias is ``sum_k m_k`` times the slopes' biases
    with each ``m_k`` anywhere in its declared bounds: with ``c_k`` their middles and ``w_k`` their half-widths
    it is at most the bound on ``sum_k c_k bias_k`` plus ``sum_k w_k B_k``."""
    if shrinkage is None:
        return None
    per_unit = scale.y_width / scale.x_width  # a unit-scale slope's size in the user's units
    slope_cov = None
    if cov is not None:
        to_unit = 1.0 / per_unit
        block = cov[np.ix_(design.slope_indices, design.slope_indices)]
        with np.errstate(all="ignore"):
            slope_cov = block * np.outer(to_unit, to_unit)
    rows = shrinkage.pulls(shrinkage.vectors * per_unit[:, None])
    half = 0.5 * scale.x_width
    middle = (scale.x_lo + half) @ rows
    box = np.full(slopes.size, EFFECT_BOUND)
    reach = largest_over(np.vstack([rows, middle]), shrinkage.directions, shrinkage.components(slopes, slope_cov), box)
    bound = np.empty(design.n_columns)
    bound[design.slope_indices] = reach[:-1]
    bound[design.intercept_index] = reach[-1] + box_reach(half, reach[:-1])
    return bound


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
    images = shrinkage.vectors * per_unit[:, None]
    with np.errstate(all="ignore"):
        solve_cov = None if cov is None else cov / np.outer(per_unit, per_unit)
    with np.errstate(divide="ignore"):
        box = np.where(unit_widths > 0, EFFECT_BOUND / np.where(unit_widths > 0, unit_widths, 1.0), np.inf)
    return shrinkage.bound(images, theta, solve_cov, box)

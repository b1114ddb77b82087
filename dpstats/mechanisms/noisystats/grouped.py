"""NoisyStats for many groups at once: every group's sufficient statistics in one pass, the noise in one batch.

Each group is Algorithm 1 of Alabi et al. (2022) (multivariate: the centred
statistics of dpstats/mechanisms/noisystats/mechanism.py) on its own m_g
rows, with the same sensitivities (:func:`.mechanism.centered_sensitivity`),
the same split and the same failure rule: per group the law is that of
``mechanism.fit`` on the group's design. Only the order of the draws differs:
one batch of Laplace noise with per-group scales
(:func:`.grouped_noise.release_per_group`). With a share of eps for standard
errors (``se_share``, default :data:`.inference.DEFAULT_SHARE`) each group's
budgeted sandwich is released the same way (:mod:`.grouped_sandwich`), its
HC1 covariance computed (:mod:`.grouped_covariance`) and its parametric
bootstrap run (:mod:`.grouped_bootstrap`, with common random numbers and
:data:`.grouped_bootstrap.REPLICATES` refits), all on a leading group axis.
The rows of the design come group by group, ``sizes[g]`` rows each (public
sizes, each at least 2); or, on a Dask DataFrame, the groups' moments come
summed over the partitions (:func:`fit_moments`, ``se_share=0`` only: the
meat needs a second pass over the rows), and the release from them is the
same code. ``singular="repair"`` repairs each group's noisy S_xx at its own
floor as ``mechanism.fit`` does (dpstats/mechanisms/noisystats/repair.py),
and names the bias where the repair binds. Each group's ``Release`` is made
from these arrays when it is first asked for (:mod:`.grouped_releases`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ...design.matrix import CenteredUnitScale, Design
from ...design.moments import GroupMoments
from ...privacy import noise
from ...privacy.accounting import PrivacySpent
from .. import precondition
from ..base import PrivacyRequest
from . import grouped_bootstrap, grouped_covariance, grouped_sandwich, inference, repair
from .grouped_noise import release_per_group
from .grouped_releases import GroupReleases, RepairBiases, Uncertainties
from .mechanism import NO_SE_NOTE, SE_NOTE, _split, centered_sensitivity
from .repair_bias import RepairShrinkage, centered_bound

POINT = ("ncov(x, y)", "nvar(x)", "intercept")
SE_NOTE_GROUPED = SE_NOTE.replace(
    f"in {inference.REPLICATES} refits", f"in {grouped_bootstrap.REPLICATES} refits per group"
)


def vectorised(design: Design) -> bool:
    """Whether a design's groups can be fitted at once, from public facts: an intercept and at least one slope,
    no categorical term (one-hot block), no survey weights, no privacy unit of several rows, and no variable
    with its square (``mechanism.fit`` preconditions those: dpstats/mechanisms/precondition.py)."""
    plain = design.intercept_index is not None and design.slope_indices.size > 0 and not design.one_hot_blocks
    return plain and design.weights is None and design.units is None and not precondition.pairs(design)


def supports(design: Design, privacy: PrivacyRequest) -> bool:
    """Whether the batch applies to the groups' moments (:func:`fit_moments`): :func:`vectorised` and
    ``se_share=0``."""
    return vectorised(design) and privacy.share(inference.DEFAULT_SHARE) == 0


def _segment_sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Sums of consecutive segments of rows (every segment non-empty)."""
    return np.add.reduceat(values, starts, axis=0)


def fit_groups(
    design: Design,
    sizes: np.ndarray,
    privacy: PrivacyRequest,
    rng: np.random.Generator,
    changed_groups: int = 1,
    singular: str = "fail",
) -> GroupReleases:
    """One release per group (module docstring); ``vectorised(design)`` must hold.

    ``changed_groups`` is how many groups one neighbour can change (1 with
    public sizes, 2 otherwise: dpstats/groups/partition.py); it enters the claim that
    each release records, not the noise.
    """
    scale = CenteredUnitScale.from_design(design)
    U, v = scale.transform(design)
    p = U.shape[1]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    m = sizes.astype(float)
    u_bar = _segment_sums(U, starts) / m[:, None]
    v_bar = _segment_sums(v, starts) / m
    Uc, vc = U - np.repeat(u_bar, sizes, axis=0), v - np.repeat(v_bar, sizes)
    iu, ju = np.triu_indices(p)
    s_xy = _segment_sums(Uc * vc[:, None], starts)
    s_xx_upper = _segment_sums(Uc[:, iu] * Uc[:, ju], starts)
    stats = (u_bar, v_bar, s_xy, s_xx_upper)
    points = _release_points(m, stats, privacy, rng, changed_groups, singular)
    share = privacy.share(inference.DEFAULT_SHARE)
    if share == 0:
        return _releases(design, scale, points, None)
    coef = np.where(points.ok[:, None], points.coef_unit, 0.0)
    released = grouped_sandwich.release(rng, U, v, sizes, coef, float(privacy.eps) * share, changed_groups)
    uncertainty = _uncertainty(noise.postprocessing_rng(rng), released, points, m, design, scale)
    return _releases(design, scale, points, uncertainty)


def unit_group_moments(scale: CenteredUnitScale, design: Design, codes: np.ndarray, groups: int) -> GroupMoments:
    """Each group's moments of the rows ``(u, v)`` on the unit scale; ``codes[i]`` is row i's group, -1 for none.

    The statistic a chunk of rows contributes (dpstats/distributed/by_group.py
    adds it over a Dask DataFrame's partitions).
    """
    U, v = scale.transform(design)
    return GroupMoments.of(np.column_stack([U, v]), codes, groups)


def fit_moments(
    design: Design,
    moments: GroupMoments,
    privacy: PrivacyRequest,
    rng: np.random.Generator,
    changed_groups: int = 1,
    singular: str = "fail",
) -> GroupReleases:
    """:func:`fit_groups` from each group's unit-scale moments (``moments.n`` its public size, each >= 2), with
    ``supports(design, privacy)``.

    ``design`` gives only the public metadata (bounds, columns); the rows are
    summarised in ``moments`` (:func:`unit_group_moments` over all of them).
    """
    scale = CenteredUnitScale.from_design(design)
    p = design.slope_indices.size
    iu, ju = np.triu_indices(p)
    stats = (moments.mean[:, :p], moments.mean[:, p], moments.comoment[:, :p, p], moments.comoment[:, iu, ju])
    points = _release_points(moments.n.astype(float), stats, privacy, rng, changed_groups, singular)
    return _releases(design, scale, points, None)


@dataclass(frozen=True)
class GroupPoints:
    """Every group's point release on the unit scale: the privacy record, (intercept, slopes), the matrix the
    slopes solved with (repaired where asked) and as released, the released S_xy, whether the group succeeded,
    the repair's floors (None: the failure rule) and the Laplace scales of S_xx, S_xy and the intercept's
    ``1 / (n eps_3)`` (G x 3)."""

    spent: PrivacySpent
    coef_unit: np.ndarray
    s_xx: np.ndarray
    raw: np.ndarray
    s_xy: np.ndarray
    ok: np.ndarray
    floor: np.ndarray | None
    scales: np.ndarray


def _release_points(
    m: np.ndarray,
    stats: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    privacy: PrivacyRequest,
    rng: np.random.Generator,
    changed_groups: int,
    singular: str,
) -> GroupPoints:
    """The point releases from each group's size m and statistics (means of u and v, s_xy, upper s_xx)."""
    u_bar, v_bar, s_xy, s_xx_upper = stats
    eps = float(privacy.eps)
    share = privacy.share(inference.DEFAULT_SHARE)
    G, p = u_bar.shape
    split = _split(eps, share, POINT, inference.centered_split(eps * share, p))
    spent = PrivacySpent(notion="pure", eps=eps, split=split)
    eps3 = split[0][1]
    iu, ju = np.triu_indices(p)
    delta = centered_sensitivity(m)  # elementwise over the groups
    s_xy = release_per_group(rng, s_xy, delta, p, eps3, changed_groups, "ncov(x, y)")
    s_xx_upper = release_per_group(rng, s_xx_upper, delta, p * (p + 1) / 2, eps3, changed_groups, "nvar(x)")
    s_xx = np.zeros((G, p, p))
    s_xx[:, iu, ju] = s_xx_upper
    s_xx[:, ju, iu] = s_xx_upper
    raw = s_xx
    scales = np.column_stack([p * (p + 1) / 2 * delta / eps3, p * delta / eps3, 1.0 / (m * eps3)])
    floor = None
    if repair.check_singular(singular) == "repair":  # each group's floor at its own Laplace scale
        floor = repair.floor(p, 1.0) * scales[:, 0]
        s_xx = repair.repaired(s_xx, floor[:, None])
    ok = np.linalg.eigvalsh(s_xx)[:, 0] > 0
    slopes = np.full((G, p), np.nan)
    slopes[ok] = np.linalg.solve(s_xx[ok], s_xy[ok][..., None])[..., 0]
    intercept_sensitivity = np.where(ok, (1.0 + np.abs(slopes).sum(axis=1)) / m, 1.0)
    intercept = np.where(ok, v_bar - np.einsum("gj,gj->g", np.nan_to_num(slopes), u_bar), 0.0)
    intercept = release_per_group(rng, intercept, intercept_sensitivity, 1, eps3, changed_groups, "intercept")
    coef_unit = np.concatenate([intercept[:, None], slopes], axis=1)
    return GroupPoints(spent, coef_unit, s_xx, raw, s_xy, ok, floor, scales)


def _uncertainty(
    rng: np.random.Generator,
    released: grouped_sandwich.GroupSandwiches,
    points: GroupPoints,
    m: np.ndarray,
    design: Design,
    scale: CenteredUnitScale,
) -> Uncertainties:
    """:func:`.inference.centered_uncertainty` of every group at once (post-processing; never warns or raises):
    infinite variances and no replicates where an input, the covariance or the replicates are not finite."""
    G, q = points.coef_unit.shape
    with np.errstate(all="ignore"):
        inputs = (released.u_sum, released.meat, points.s_xx, points.coef_unit)
        finite = points.ok & np.all([np.all(np.isfinite(a.reshape(G, -1)), axis=1) for a in inputs], axis=0)
        safe = finite[:, None]
        coef = np.where(safe, points.coef_unit, 0.0)
        s_xx = np.where(safe[..., None], points.s_xx, np.eye(q - 1))
        sandwiches = grouped_sandwich.GroupSandwiches(
            u_sum=np.where(safe, released.u_sum, 0.0),
            centre=released.centre,
            meat=np.where(safe[..., None], released.meat, np.eye(q)),
            noise_variance=released.noise_variance,
        )
        cov_unit = grouped_covariance.covariances(sandwiches, coef, s_xx, m, points.scales)
        finite &= np.all(np.isfinite(cov_unit), axis=(1, 2))
        u_bar = sandwiches.u_sum / m[:, None]
        to_user = (scale.jacobian(), scale.offset(), _order(design))
        run = np.flatnonzero(finite)  # only these groups' replicates are ever released
        floor = None if points.floor is None else points.floor[run]
        replicates, robust = grouped_bootstrap.bootstrap(
            rng, coef[run], cov_unit[run], s_xx[run], u_bar[run], points.scales[run], floor, to_user
        )
        cov = np.broadcast_to(np.diag(np.full(q, np.inf)), (G, q, q)).copy()
        cov[run] = robust
        row = np.full(G, -1)
        row[run] = np.where(np.all(np.isfinite(robust), axis=(1, 2)), np.arange(run.size), -1)
    return cov, replicates, row


def _order(design: Design) -> np.ndarray:
    """Column order taking (intercept, slopes...) to the design's order."""
    order = np.empty(design.n_columns, dtype=int)
    order[design.intercept_index] = 0
    order[design.slope_indices] = np.arange(1, design.n_columns)
    return order


def _releases(
    design: Design, scale: CenteredUnitScale, points: GroupPoints, uncertainty: Uncertainties | None
) -> GroupReleases:
    """Every group's release (the point in the user's units and design order, the noisy statistics, the
    standard errors' covariance and replicates where they were computed), each made when first asked for."""
    theta = points.coef_unit @ scale.jacobian().T + scale.offset()
    return GroupReleases(
        params=np.where(points.ok[:, None], theta[:, _order(design)], np.nan),
        ok=points.ok,
        nvar=points.raw * np.outer(scale.x_width, scale.x_width),
        ncov=points.s_xy * scale.x_width * scale.y_width,
        spent=points.spent,
        note=NO_SE_NOTE if uncertainty is None else SE_NOTE_GROUPED,
        uncertainty=uncertainty,
        biases=None if points.floor is None else _repair_biases(design, scale, points, uncertainty),
    )


def _repair_biases(
    design: Design, scale: CenteredUnitScale, points: GroupPoints, uncertainty: Uncertainties | None
) -> RepairBiases:
    """Each succeeded group's repair bias, and its bound when its release is made (``singular="repair"``; None
    for a failed group)."""
    notes = tuple(
        repair.floor_bias(points.raw[g], points.floor[g]) if points.ok[g] else None for g in range(points.ok.size)
    )
    return RepairBiases(notes, functools.partial(_repair_bound, design, scale, points, uncertainty))


def _repair_bound(
    design: Design, scale: CenteredUnitScale, points: GroupPoints, uncertainty: Uncertainties | None, g: int
) -> np.ndarray | None:
    """Group g's repair bias bound (None where its repair did not bind or it failed)."""
    if not points.ok[g]:
        return None
    shrinkage = RepairShrinkage.of(points.raw[g], points.floor[g])
    measured = None if uncertainty is None else uncertainty[0][g]
    return centered_bound(shrinkage, scale, design, points.coef_unit[g, 1:], measured)

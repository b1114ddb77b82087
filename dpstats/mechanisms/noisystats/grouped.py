"""NoisyStats for many groups at once: every group's sufficient statistics in one pass, the noise in one batch.

Each group is Algorithm 1 of Alabi et al. (2022) (multivariate: the centred
statistics of dpstats/mechanisms/noisystats/mechanism.py) on its own m_g
rows, with the same sensitivities (:func:`.mechanism.centered_sensitivity`),
the same split and the same failure rule: per group the law is that of
``mechanism.fit`` on the group's design, with ``se_share=0`` (no standard
errors; with a share the grouped front end runs ``mechanism.fit`` group by
group). Only the order of the draws differs: one batch of Laplace noise with
per-group scales. The rows of the design come group by group, ``sizes[g]``
rows each (public sizes, each at least 2); or, on a Dask DataFrame, the
groups' moments come summed over the partitions (:func:`fit_moments`), and
the release from them is the same code. ``singular="repair"`` repairs each
group's noisy S_xx at its own floor as ``mechanism.fit`` does
(dpstats/mechanisms/noisystats/repair.py).
"""

from __future__ import annotations

import numpy as np

from ...design.matrix import CenteredUnitScale, Design
from ...design.moments import GroupMoments
from ...privacy.accounting import PrivacySpent
from ...privacy.noise import laplace_mechanism
from ..base import PrivacyRequest, Release, failed_release
from . import inference, repair
from .mechanism import FAIL_REASON, NO_SE_NOTE, _split, centered_sensitivity

POINT = ("ncov(x, y)", "nvar(x)", "intercept")


def supports(design: Design, privacy: PrivacyRequest) -> bool:
    """Whether the batch applies: an intercept, no categorical term (one-hot block), no survey weights, and
    ``se_share=0``."""
    plain = design.intercept_index is not None and not design.one_hot_blocks and design.weights is None
    return plain and privacy.share(inference.DEFAULT_SHARE) == 0


def _segment_sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Sums of consecutive segments of rows (every segment non-empty)."""
    return np.add.reduceat(values, starts, axis=0)


def _release(
    rng: np.random.Generator,
    values: np.ndarray,
    group_sensitivity: np.ndarray,
    entries: float,
    eps: float,
    changed_groups: int,
    name: str,
) -> np.ndarray:
    """``values[g] + Lap(entries * group_sensitivity[g] / eps)`` for every group, as one recorded release.

    Each group's values are divided by its sensitivity first, so that one
    Laplace release of the whole vector has the same law as the groups'
    releases at their own scales, and the recorded claim is exact: a
    neighbour changes at most ``changed_groups`` groups, each by at most
    ``entries`` in L1 after the division, so the vector has L1 sensitivity
    ``changed_groups * entries`` and is ``changed_groups * eps``-DP (the
    replay and gray-box audits of dpstats/audit/ check that claim).
    """
    unit = values / (group_sensitivity[:, None] if values.ndim == 2 else group_sensitivity)
    noisy = laplace_mechanism(rng, unit, changed_groups * entries, changed_groups * eps, name)
    return np.asarray(noisy) * (group_sensitivity[:, None] if values.ndim == 2 else group_sensitivity)


def fit_groups(
    design: Design,
    sizes: np.ndarray,
    privacy: PrivacyRequest,
    rng: np.random.Generator,
    changed_groups: int = 1,
    singular: str = "fail",
) -> list[Release]:
    """One release per group (module docstring); ``supports(design, privacy)`` must hold.

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
    return _release_groups(design, scale, m, stats, privacy, rng, changed_groups, singular)


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
) -> list[Release]:
    """:func:`fit_groups` from each group's unit-scale moments (``moments.n`` its public size, each >= 2).

    ``design`` gives only the public metadata (bounds, columns); the rows are
    summarised in ``moments`` (:func:`unit_group_moments` over all of them).
    """
    scale = CenteredUnitScale.from_design(design)
    p = design.slope_indices.size
    iu, ju = np.triu_indices(p)
    stats = (moments.mean[:, :p], moments.mean[:, p], moments.comoment[:, :p, p], moments.comoment[:, iu, ju])
    return _release_groups(design, scale, moments.n.astype(float), stats, privacy, rng, changed_groups, singular)


def _release_groups(
    design: Design,
    scale: CenteredUnitScale,
    m: np.ndarray,
    stats: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    privacy: PrivacyRequest,
    rng: np.random.Generator,
    changed_groups: int,
    singular: str,
) -> list[Release]:
    """The releases from each group's size m and statistics (means of u and v, s_xy, upper triangle of s_xx)."""
    u_bar, v_bar, s_xy, s_xx_upper = stats
    eps = float(privacy.eps)
    split = _split(eps, 0.0, POINT, ())
    spent = PrivacySpent(notion="pure", eps=eps, split=split)
    eps3 = split[0][1]
    G, p = u_bar.shape
    iu, ju = np.triu_indices(p)
    delta = centered_sensitivity(m)  # elementwise over the groups
    s_xy = _release(rng, s_xy, delta, p, eps3, changed_groups, "ncov(x, y)")
    s_xx_upper = _release(rng, s_xx_upper, delta, p * (p + 1) / 2, eps3, changed_groups, "nvar(x)")
    s_xx = np.zeros((G, p, p))
    s_xx[:, iu, ju] = s_xx_upper
    s_xx[:, ju, iu] = s_xx_upper
    raw = s_xx
    if repair.check_singular(singular) == "repair":  # each group's floor at its own Laplace scale
        s_xx = repair.repaired(s_xx, (repair.floor(p, 1.0) * p * (p + 1) / 2 * delta / eps3)[:, None])
    ok = np.linalg.eigvalsh(s_xx)[:, 0] > 0
    slopes = np.full((G, p), np.nan)
    slopes[ok] = np.linalg.solve(s_xx[ok], s_xy[ok][..., None])[..., 0]
    intercept_sensitivity = np.where(ok, (1.0 + np.abs(slopes).sum(axis=1)) / m, 1.0)
    intercept = np.where(ok, v_bar - np.einsum("gj,gj->g", np.nan_to_num(slopes), u_bar), 0.0)
    intercept = _release(rng, intercept, intercept_sensitivity, 1, eps3, changed_groups, "intercept")
    theta = np.concatenate([intercept[:, None], slopes], axis=1) @ scale.jacobian().T + scale.offset()
    order = np.empty(design.n_columns, dtype=int)
    order[design.intercept_index] = 0
    order[design.slope_indices] = np.arange(1, p + 1)
    params = theta[:, order]
    nan_cov = np.full((p + 1, p + 1), np.nan)
    nvar = raw * np.outer(scale.x_width, scale.x_width)
    ncov = s_xy * scale.x_width * scale.y_width
    releases = []
    for g in range(G):
        stats = {"nvar(x)": nvar[g], "ncov(x, y)": ncov[g]}
        if not ok[g]:
            releases.append(failed_release(p + 1, spent, FAIL_REASON, NO_SE_NOTE, noisy_stats=stats))
            continue
        releases.append(
            Release(
                params=params[g],
                cov=nan_cov,
                privacy=spent,
                se_note=NO_SE_NOTE,
                noisy_stats=stats,
                interval="percentile",
            )
        )
    return releases

"""NoisyStats for many groups at once: every group's sufficient statistics in one pass, the noise in one batch.

Each group is Algorithm 1 of Alabi et al. (2022) (multivariate: the centred
statistics of dpstats/mechanisms/noisystats/mechanism.py) on its own m_g
rows, with the same sensitivities (:func:`.mechanism.centered_sensitivity`),
the same split and the same failure rule: per group the law is that of
``mechanism.fit`` on the group's design, with ``se_share=0`` (no standard
errors; with a share the grouped front end runs ``mechanism.fit`` group by
group). Only the order of the draws differs: one batch of Laplace noise with
per-group scales. The rows of the design come group by group, ``sizes[g]``
rows each (public sizes, each at least 2).
"""

from __future__ import annotations

import numpy as np

from ...design import CenteredUnitScale, Design
from ...noise import laplace
from ...privacy import PrivacySpent
from ..base import PrivacyRequest, Release, failed_release
from . import inference
from .mechanism import FAIL_REASON, NO_SE_NOTE, _split, _user_unit_stats, centered_sensitivity

POINT = ("ncov(x, y)", "nvar(x)", "intercept")


def supports(design: Design, privacy: PrivacyRequest) -> bool:
    """Whether the batch applies: an intercept, no block of two or more dummies, and ``se_share=0``."""
    plain = design.intercept_index is not None and not any(len(b) > 1 for b in design.one_hot_blocks)
    return plain and privacy.share(inference.DEFAULT_SHARE) == 0


def _segment_sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Sums of consecutive segments of rows (every segment non-empty)."""
    return np.add.reduceat(values, starts, axis=0)


def fit_groups(design: Design, sizes: np.ndarray, privacy: PrivacyRequest, rng: np.random.Generator) -> list[Release]:
    """One release per group (module docstring); ``supports(design, privacy)`` must hold."""
    eps = float(privacy.eps)
    split = _split(eps, 0.0, POINT, ())
    spent = PrivacySpent(notion="pure", eps=eps, split=split)
    eps3 = split[0][1]
    scale = CenteredUnitScale.from_design(design)
    U, v = scale.transform(design)
    G, p = sizes.size, U.shape[1]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    codes = np.repeat(np.arange(G), sizes)
    m = sizes.astype(float)
    u_bar = _segment_sums(U, starts) / m[:, None]
    v_bar = _segment_sums(v, starts) / m
    Uc, vc = U - u_bar[codes], v - v_bar[codes]
    iu, ju = np.triu_indices(p)
    s_xy = _segment_sums(Uc * vc[:, None], starts)
    s_xx_upper = _segment_sums(Uc[:, iu] * Uc[:, ju], starts)

    delta = np.array([centered_sensitivity(int(n)) for n in sizes])
    xy_scale, xx_scale = p * delta / eps3, p * (p + 1) / 2 * delta / eps3
    s_xy = s_xy + laplace(rng, xy_scale[:, None], s_xy.shape)
    s_xx_upper = s_xx_upper + laplace(rng, xx_scale[:, None], s_xx_upper.shape)
    s_xx = np.zeros((G, p, p))
    s_xx[:, iu, ju] = s_xx_upper
    s_xx[:, ju, iu] = s_xx_upper
    ok = np.linalg.eigvalsh(s_xx)[:, 0] > 0
    slopes = np.full((G, p), np.nan)
    slopes[ok] = np.linalg.solve(s_xx[ok], s_xy[ok][..., None])[..., 0]
    intercept_scale = (1.0 + np.abs(slopes).sum(axis=1)) / (m * eps3)
    intercept = v_bar - np.einsum("gj,gj->g", slopes, u_bar)
    intercept = intercept + laplace(rng, np.where(ok, intercept_scale, 1.0), G)
    theta = np.concatenate([intercept[:, None], slopes], axis=1) @ scale.jacobian().T + scale.offset()
    order = np.empty(design.n_columns, dtype=int)
    order[design.intercept_index] = 0
    order[design.slope_indices] = np.arange(1, p + 1)
    params = theta[:, order]
    nan_cov = np.full((p + 1, p + 1), np.nan)
    releases = []
    for g in range(G):
        stats = _user_unit_stats(scale, s_xx[g], s_xy[g])
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

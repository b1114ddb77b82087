"""The data's noise level, released once for all groups, so that a grouped auto weighs the right scenarios.

auto's error model (dpstats/planning/error_model.py) predicts each mechanism
in five reference scenarios, which differ in how the data fill the declared
bounds and in how noisy they are (the residual standard deviation on the
unit scale, 0.01 or 0.1). Neither is public, so an ungrouped auto weighs every
scenario alike. Which mechanism is best for a small group turns on the
noise: Theil-Sen's median of pairwise slopes is nearly exact on data with
little noise and wild on noisy data, where the perturbed histogram is steady.
A grouped call has many rows in all, so a small share of eps over all of
them measures the noise level almost exactly, and every group's choice
then weighs only the scenarios of that level (``PublicFacts.noise_level``,
dpstats/planning/selection.py).

The release. On the unit scale of the design (every slope column and y
mapped onto [0, 1] by the declared bounds, dpstats/design/matrix.py), each
group's centred cross-products of (u, v) over its m_g fitted rows (the
declared or released sizes, pad rows included: dpstats/groups/partition.py)
are summed over the groups, and the upper triangle of that (p + 1) x (p + 1)
matrix is released with Laplace noise. Sensitivity: one neighbour replaces
one row in at most ``changed_groups`` groups (partition.py's lemma and
theorem), and replacing one of m rows in [0, 1] moves each centred
cross-product by at most 1 - 1/m (Alabi et al. 2022, Lemma 19, as
dpstats/mechanisms/noisystats/mechanism.py uses it), so the L1 sensitivity is
``changed_groups * (p + 1)(p + 2)/2 * (1 - 1/max m_g)``. The release composes
sequentially with the groups' fits (each row is in both), which is why the
groups' fits get the call's eps less the release's (:func:`charged`). From it, by post-processing: the
residual variance of the pooled within-group regression,
``(S_vv - s_uv' S_uu^+ s_uv) / (N - G - p)``, with S_uu projected onto the
positive semi-definite cone, and its square root clipped to [0, 1]. Slopes
that differ across groups make it larger than each group's own noise, never
smaller.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..design.matrix import CenteredUnitScale, Design
from ..design.moments import GroupMoments
from ..privacy.noise import laplace_mechanism
from ..uncertainty.sandwich import from_upper_triangle, upper_triangle
from .partition import GroupBudget

SHARE = 0.05
"""The part of a grouped auto's eps spent on the noise level."""
MIN_ROWS_EPS = 2_000.0
"""The release is made only when the rows over all groups times its eps reach this (public): below it the
level's noise is not small against the gap between the scenarios' levels."""
NAME = "auto: the data's noise level (all groups)"


def worth_releasing(public: Design, n: int, eps: float) -> bool:
    """Whether a grouped auto releases the noise level: the formula has an intercept, its bounds are declared,
    and the n rows (public) are enough; ``public`` is the design's metadata (built on no rows)."""
    bounded = public.x_bounds is not None and public.y_bounds is not None
    return public.intercept_index is not None and bounded and n * eps * SHARE >= MIN_ROWS_EPS


def charged(budget: GroupBudget, eps: float) -> GroupBudget:
    """``budget`` (made for the call's eps less ``eps``) with the noise level's release added to the whole call's
    spending: it composes sequentially with every group's fit, so the eps reported is the call's."""
    spent = budget.spent
    total = replace(spent, eps=spent.eps + eps, split=(*spent.split, (NAME, eps)))
    return replace(budget, spent=total)


def release(design: Design, sizes: np.ndarray, eps: float, changed_groups: int, rng: np.random.Generator) -> float:
    """The noise level (module docstring), at budget ``eps``; the design holds the groups' rows in turn."""
    pooled = pooled_comoment(design, sizes)
    k = pooled.shape[0]
    noisy = np.atleast_1d(
        laplace_mechanism(rng, upper_triangle(pooled), sensitivity(k, sizes, changed_groups), eps, NAME)
    )
    return residual_sd(from_upper_triangle(noisy, k), design.n, sizes.size)


def pooled_comoment(design: Design, sizes: np.ndarray) -> np.ndarray:
    """The groups' centred cross-products of the unit-scale rows (u, v), summed over the groups."""
    U, v = CenteredUnitScale.from_design(design).transform(design)
    codes = np.repeat(np.arange(sizes.size), sizes)
    return GroupMoments.of(np.column_stack([U, v]), codes, sizes.size).comoment.sum(axis=0)


def sensitivity(k: int, sizes: np.ndarray, changed_groups: int) -> float:
    """L1 sensitivity of the upper triangle of :func:`pooled_comoment` of k columns (module docstring)."""
    return changed_groups * k * (k + 1) / 2 * (1.0 - 1.0 / float(sizes.max()))


def residual_sd(comoment: np.ndarray, n: int, groups: int) -> float:
    """The pooled within-group regression's residual standard deviation from a released comoment (post-processing)."""
    p = comoment.shape[0] - 1
    with np.errstate(all="ignore"):
        values, vectors = np.linalg.eigh(comoment[:p, :p])
        keep = values > 1e-9 * max(float(values.max(initial=0.0)), 1e-300)
        inverse = (vectors[:, keep] / values[keep]) @ vectors[:, keep].T
        s_uv = comoment[:p, p]
        rss = float(comoment[p, p] - s_uv @ inverse @ s_uv)
        level = np.sqrt(max(rss, 0.0) / max(n - groups - p, 1))
    return float(np.clip(np.nan_to_num(level, nan=1.0), 0.0, 1.0))

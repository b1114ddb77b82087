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
``(S_vv - s_uv' S_uu^+ s_uv) / (N - G - p)`` (the pseudo-inverse over S_uu's
positive eigenvalues), widened by its own noise to a range
(:func:`residual_range`), whose square roots are the released range of the
residual standard deviation. Every scenario whose level is nearest some
value in that range is weighed, so a level the noise leaves ambiguous keeps
both. Slopes that differ across groups make the level larger than each
group's own noise, never smaller.
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
MIN_ROWS_EPS = 5_000.0
"""The release is made only when the rows times its eps reach this (public): below it, even noisy data
(residual SD 0.1 on the unit scale) would not be told from quiet data."""
WIDTH = 4.0
"""The range is the estimate plus or minus this many times its noise's scale (a Laplace variable passes four
of its scales with probability e^-4, 1.8%; the sum of the entries' scales stands for the sum's)."""
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


def release(
    design: Design, sizes: np.ndarray, eps: float, changed_groups: int, rng: np.random.Generator
) -> tuple[float, float]:
    """The noise level's range (module docstring), at budget ``eps``; the design holds the groups' rows in turn."""
    pooled = pooled_comoment(design, sizes)
    k = pooled.shape[0]
    bound = sensitivity(k, sizes, changed_groups)
    noisy = np.atleast_1d(laplace_mechanism(rng, upper_triangle(pooled), bound, eps, NAME))
    return residual_range(from_upper_triangle(noisy, k), design.n, sizes.size, bound / eps)


def pooled_comoment(design: Design, sizes: np.ndarray) -> np.ndarray:
    """The groups' centred cross-products of the unit-scale rows (u, v), summed over the groups."""
    U, v = CenteredUnitScale.from_design(design).transform(design)
    codes = np.repeat(np.arange(sizes.size), sizes)
    return GroupMoments.of(np.column_stack([U, v]), codes, sizes.size).comoment.sum(axis=0)


def sensitivity(k: int, sizes: np.ndarray, changed_groups: int) -> float:
    """L1 sensitivity of the upper triangle of :func:`pooled_comoment` of k columns (module docstring)."""
    return changed_groups * k * (k + 1) / 2 * (1.0 - 1.0 / float(sizes.max()))


def residual_range(comoment: np.ndarray, n: int, groups: int, scale: float) -> tuple[float, float]:
    """The pooled within-group regression's residual standard deviation from a released comoment, as the range
    its noise leaves (post-processing; (0, 1) where the release says nothing).

    With the released slopes b, the residual sum of squares ``S_vv - 2 b's_uv + b'S_uu b`` moves by at most
    the sum of its entries' noise, whose Laplace scales add to ``scale (1 + |b|_1)^2``; the range is the
    estimate plus or minus :data:`WIDTH` times that, over the degrees of freedom ``n - groups - p``.
    """
    p = comoment.shape[0] - 1
    dof = max(n - groups - p, 1)
    with np.errstate(all="ignore"):
        values, vectors = np.linalg.eigh(comoment[:p, :p])
        keep = values > 1e-9 * max(float(values.max(initial=0.0)), 1e-300)
        b = (vectors[:, keep] / values[keep]) @ vectors[:, keep].T @ comoment[:p, p]
        variance = float(comoment[p, p] - comoment[:p, p] @ b) / dof
        half = WIDTH * scale * (1.0 + float(np.abs(b).sum())) ** 2 / dof
        ends = np.sqrt(np.clip([variance - half, variance + half], 0.0, 1.0))
    if not np.all(np.isfinite(ends)):
        return 0.0, 1.0
    return float(ends[0]), float(ends[1])

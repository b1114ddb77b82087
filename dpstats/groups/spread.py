"""The data's spread, released once for all groups, so that a grouped auto weighs the right scenarios.

auto's error model (dpstats/planning/error_model.py) predicts each mechanism
in five reference scenarios, which differ in how the regressors fill the
declared bounds (their variance on the unit scale: 0.01, 0.05, or skewed)
and in how noisy the data are (the residual standard deviation on the unit
scale, 0.01 or 0.1). Neither is public, so an ungrouped auto weighs every
scenario alike. Which mechanism is best for a small group turns on both:
Theil-Sen's median of pairwise slopes is nearly exact on data with little
noise and wild on noisy data, where the perturbed histogram is steady;
NoisyStats fails on regressors packed into a corner of their bounds and not
on regressors that fill them. A grouped call has many rows in all, so a small
share of eps over all of them measures both, and every group's choice then
weighs only the scenarios that match (``PublicFacts.spread``,
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
groups' fits get the call's eps less the release's (:func:`charged`).

From it, by post-processing (:func:`spread_of`), two ranges, each an
estimate widened by its own noise: the residual standard deviation of the
pooled within-group regression, from ``(S_vv - s_uv' S_uu^+ s_uv) / (N - G - p)``
(the pseudo-inverse over S_uu's positive eigenvalues), and the regressors'
mean within-group variance, ``trace(S_uu) / (p (N - G))``. A scenario is
weighed when its level on each axis is the nearest to some value in that
axis's range, so a level the noise leaves ambiguous keeps both. Slopes that
differ across groups make the residual level larger than each group's own
noise, never smaller; a group's own spread of x is only its share of the
pooled one.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..design.matrix import CenteredUnitScale, Design
from ..design.moments import GroupMoments
from ..planning.facts import DataSpread
from ..privacy.noise import laplace_mechanism
from ..uncertainty.sandwich import from_upper_triangle, upper_triangle
from .partition import GroupBudget

SHARE = 0.05
"""The part of a grouped auto's eps spent on the data's spread."""
MIN_ROWS_EPS = 5_000.0
"""The release is made only when the rows times its eps reach this (public): below it, even noisy data
(residual SD 0.1 on the unit scale) would not be told from quiet data."""
WIDTH = 4.0
"""The range is the estimate plus or minus this many times its noise's scale (a Laplace variable passes four
of its scales with probability e^-4, 1.8%; the sum of the entries' scales stands for the sum's)."""
NAME = "auto: the data's spread (all groups)"


def worth_releasing(public: Design, n: int, eps: float) -> bool:
    """Whether a grouped auto releases the data's spread: the formula has an intercept, its bounds are declared,
    and the n rows (public) are enough; ``public`` is the design's metadata (built on no rows)."""
    bounded = public.x_bounds is not None and public.y_bounds is not None
    return public.intercept_index is not None and bounded and n * eps * SHARE >= MIN_ROWS_EPS


def charged(budget: GroupBudget, eps: float) -> GroupBudget:
    """``budget`` (made for the call's eps less ``eps``) with the spread's release added to the whole call's
    spending: it composes sequentially with every group's fit, so the eps reported is the call's."""
    spent = budget.spent
    total = replace(spent, eps=spent.eps + eps, split=(*spent.split, (NAME, eps)))
    return replace(budget, spent=total)


def release(design: Design, sizes: np.ndarray, eps: float, changed_groups: int, rng: np.random.Generator) -> DataSpread:
    """The data's spread (module docstring), at budget ``eps``; the design holds the groups' rows in turn."""
    pooled = pooled_comoment(design, sizes)
    k = pooled.shape[0]
    bound = sensitivity(k, sizes, changed_groups)
    noisy = np.atleast_1d(laplace_mechanism(rng, upper_triangle(pooled), bound, eps, NAME))
    return spread_of(from_upper_triangle(noisy, k), design.n, sizes.size, bound / eps)


def pooled_comoment(design: Design, sizes: np.ndarray) -> np.ndarray:
    """The groups' centred cross-products of the unit-scale rows (u, v), summed over the groups."""
    U, v = CenteredUnitScale.from_design(design).transform(design)
    codes = np.repeat(np.arange(sizes.size), sizes)
    return GroupMoments.of(np.column_stack([U, v]), codes, sizes.size).comoment.sum(axis=0)


def sensitivity(k: int, sizes: np.ndarray, changed_groups: int) -> float:
    """L1 sensitivity of the upper triangle of :func:`pooled_comoment` of k columns (module docstring)."""
    return changed_groups * k * (k + 1) / 2 * (1.0 - 1.0 / float(sizes.max()))


def spread_of(comoment: np.ndarray, n: int, groups: int, scale: float) -> DataSpread:
    """The ranges of the residual standard deviation and of the regressors' mean variance from a released
    comoment whose entries carry Laplace noise of ``scale`` (post-processing; the widest ranges where the
    release says nothing).

    With the released slopes b, the residual sum of squares ``S_vv - 2 b's_uv + b'S_uu b`` moves by at most
    the sum of its entries' noise, whose scales add to ``scale (1 + |b|_1)^2``, and ``trace(S_uu) / p`` by
    ``scale``; each range is its estimate plus or minus :data:`WIDTH` times that, over its degrees of freedom.
    """
    p = comoment.shape[0] - 1
    with np.errstate(all="ignore"):
        values, vectors = np.linalg.eigh(comoment[:p, :p])
        keep = values > 1e-9 * max(float(values.max(initial=0.0)), 1e-300)
        b = (vectors[:, keep] / values[keep]) @ vectors[:, keep].T @ comoment[:p, p]
        dof = max(n - groups - p, 1)
        variance = float(comoment[p, p] - comoment[:p, p] @ b) / dof
        half = WIDTH * scale * (1.0 + float(np.abs(b).sum())) ** 2 / dof
        noise = np.sqrt(np.clip([variance - half, variance + half], 0.0, 1.0))
        fill = float(np.trace(comoment[:p, :p])) / (p * max(n - groups, 1))
        fill_half = WIDTH * scale / max(n - groups, 1)
        fills = np.clip([fill - fill_half, fill + fill_half], 0.0, 1.0)
    noise = noise if np.all(np.isfinite(noise)) else np.array([0.0, 1.0])
    fills = fills if np.all(np.isfinite(fills)) else np.array([0.0, 1.0])
    return DataSpread(noise=(float(noise[0]), float(noise[1])), fill=(float(fills[0]), float(fills[1])))

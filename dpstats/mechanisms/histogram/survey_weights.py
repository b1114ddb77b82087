"""Survey weights in the perturbed histogram (issue 41): weighted cell counts and weighted within-cell sums.

With ``weights="wt"`` and the declared range ``[lo, W]`` (docs/DESIGN.md section 2;
the rows' weights clipped to it by the front end, dpstats/frontend/weights.py) every
row adds its weight ``w_i`` to its cell instead of 1 (Lei 2011, section 2.2, counts
each row once). The weighted counts ``T_r = sum_{i in r} w_i`` estimate the
population's cell totals (the Horvitz-Thompson reading), and the fit on the cells
(Algorithm 1, weighted by the noisy ``T_r``) is the weighted fit of the binned data:
survey::svyglm's and statsmodels' WLS point estimate where the bins hold one value each.

**Counts: L1 sensitivity 2W.** Under replace-one neighbours one row of weight
``w in [lo, W]`` in cell r becomes a row of weight ``w' in [lo, W]`` in cell r': if
``r != r'``, ``T_r`` falls by ``w`` and ``T_r'`` rises by ``w'``, an L1 change of
``w + w' <= 2W``; if ``r = r'`` the change is ``|w - w'| <= W``. The bound is attained
(a row of weight W moved to another cell). Lei's Lemma 2 is the case ``W = 1``.

**Within-cell sums: L1 sensitivity mW.** The release's sums of the rows' centred
offsets (dpstats/mechanisms/histogram/cell_means.py, ``c in [-1/2, 1/2]`` per axis)
become ``sum_{i in r} w_i c_i``: one changed row takes ``w c`` out of one cell's sum
and adds ``w' c'`` to another's, at most ``W/2 + W/2 = W`` per axis, ``mW`` over m axes.
The cell's point is then its rows' weighted mean (the ratio of the two sums).

**The release in units of W.** Both statistics are released as ``sum_{i in r} w_i / W``
and ``sum_{i in r} (w_i / W) c_i`` with the unweighted scales ``2 / eps`` and
``m / eps``: the same law as Laplace noise of scale ``2W / eps`` and ``mW / eps`` on
the weighted sums themselves, divided by W afterwards (post-processing). Each row's
mass ``w_i / W`` lies in ``[lo / W, 1]``, so every count and sum of the release is a
row-mass sum with the unweighted sensitivities, and the thresholding's cut-off
``A log(n) / eps`` (section 4.2) keeps its meaning in units of the noise. The fits
are invariant to the weights' common scale. tests/test_histogram_weights.py checks
both sensitivities by brute force (rows at the cells' corners with weights 0 and W)
and replays a row whose weight moves from 0 to W.

**The default bins.** The layout's rule (dpstats/mechanisms/histogram/layout.py)
weighs the cells' expected mass against the noise; with weights a row's mass is
``w_i / W`` on average, unknown. The rule is given :func:`layout_eps`: eps times
``(lo + W) / (2W)``, the mean mass of weights spread evenly over their declared range
(public): the rule is homogeneous in the counts' unit, so scaling the noise by the
mass is scaling the mass.
"""

from __future__ import annotations

import numpy as np

from ...design.matrix import Design


def weighted_count_sensitivity(weight_max: float) -> float:
    """L1 sensitivity of the weighted cell counts ``sum_{i in r} w_i`` under replace-one neighbours: ``2W``."""
    return 2.0 * weight_max


def weighted_means_sensitivity(m: int, weight_max: float) -> float:
    """L1 sensitivity of the m axes' weighted sums of centred offsets: ``mW`` (module docstring)."""
    return float(m) * weight_max


def row_masses(design: Design) -> np.ndarray | None:
    """Every row's mass ``w_i / W`` in ``[lo / W, 1]`` (None without weights): what it adds to its cell."""
    if design.weights is None or design.weight_bounds is None:
        return None
    lo, hi = design.weight_bounds
    return np.clip(np.asarray(design.weights, dtype=float), lo, hi) / hi


def layout_eps(eps: float, design: Design) -> float:
    """The eps the default bins' rule is given: eps times the mean mass ``(lo + W) / (2W)`` of weights spread
    evenly over their declared range (module docstring); eps without weights. Public facts only."""
    if design.weight_bounds is None:
        return eps
    lo, hi = design.weight_bounds
    return eps * (lo + hi) / (2.0 * hi)

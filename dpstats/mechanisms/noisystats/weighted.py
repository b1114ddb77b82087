"""NoisyStats with survey weights: weighted least squares from noisy weighted sums, with design-based errors.

The point (``W'WW, W'Wv``). On the unit scale of the multivariate NoisyStats, with the
layout of :mod:`.structured` (``Z = [d_0, u - c, v - c_v]``: the full block coded in
full, or, without categorical terms, ``d_0 = 1``, the intercept column, as a block
with no columns), release the upper triangle of ``Z' diag(w) Z`` without its
structural zeros and ``(v, v)``, and solve ``W'WW theta = W'W(v - c_v)``: weighted
least squares, statsmodels' WLS and survey::svyglm's point estimate, mapped back to
the user's units exactly (:meth:`.structured.Layout.to_unit`). Every row's entries
are its unweighted entries times its weight ``w in [lo, W]`` (declared, clipped:
dpstats/frontend/weights.py). :func:`.structured.structured_sensitivity` bounds,
group by group, either the width of an entry's range, which contains 0 (a square in
``[0, 1/4]``, a product in ``[-1/4, 1/4]``), or twice the most a row's entries of a
group can add up to in absolute value; with the weight both are multiplied by at most
W. So the L1 sensitivity is ``W`` times the unweighted one (the intercept's empty block
counts as a block: its entries ``w, w (u_j - c), w (v - c_v)`` add up to at most
``w (1 + (c + 1)/2)``), checked against every pair of rows of a grid with weights 0
and W in tests/test_noisystats_weighted.py. n is public but not used: the weighted
counts are released.

The standard errors, with ``se_share`` of eps (default 0.2). The design-based
(linearisation) sandwich ``B^{-1} M B^{-1}``: B the released ``W'WW``, M the meat of
the rows' weighted scores ``s_i = w_i r_i Z_i`` (``Z_i`` without its response column,
``r_i`` the residual at the released estimate). ``SCALE_SHARE`` of the share releases
the residuals' weighted mean absolute value (each taken at most ``RESIDUAL_BOUND``, half
the response's range beyond its fitted value), and the meat clips the residuals at
``CLIP_SCALES`` times it over the released weights' total: a bound of the residuals'
own size, not the response's range, so that the meat's noise is that much smaller.
The meat is released by dpstats/uncertainty/design_meat.py: the scores' outer products
(one PSU per row, R survey's weighted sandwich without clusters), or the declared PSUs'
totals, centred within strata (``cluster=``, ``strata=``: svyglm's linearisation). A
row's score has at most one nonzero entry per block (at most 1) and continuous entries at
most 1/2, times ``W`` and the clipping bound. Then the privacy noise: a parametric
bootstrap of refits through the release's noise (:func:`.structured.noisy_refits`), as
the unweighted fit's
(dpstats/mechanisms/noisystats/inference.py), from Student's t draws of the sandwich with
each coefficient's degrees of freedom (the design's, lowered by the meat's noise:
dpstats/uncertainty/design_meat.py): the covariance adds the refits' departures
from their draws to the sandwich, and the intervals are the refits' percentiles.
"""

from __future__ import annotations

import numpy as np

from ...design.matrix import CenteredUnitScale, Design, place_coefficients
from ...privacy import noise
from ...privacy.accounting import PrivacySpent
from ...uncertainty.design_meat import DesignMeat, ScoreBound, release_meat, release_name, t_draws
from ...uncertainty.intervals import infinite_cov
from ..base import PrivacyRequest, Release, failed_release
from . import inference, structured
from .outputs import NO_SE_NOTE, design_order, noisystats_release
from .repair_bias import RepairShrinkage, structured_bound

NAME = "W'WW, W'Wy"
"""The point's release (in the budget's split)."""
RESIDUAL_BOUND = 1.0
"""The most a residual is taken to be, on the unit scale (module docstring)."""
SCALE_SHARE = 0.25
"""The part of the standard errors' budget spent on the residuals' scale."""
CLIP_SCALES = 5.0
"""The meat's residuals are clipped at this many times their released mean absolute value, or more where the
budget allows (``CLIP_GROWTH``)."""
CLIP_GROWTH = 0.1
"""The clip, in mean absolute residuals, is at least ``CLIP_GROWTH sqrt(n eps) mean(w) / W`` (public and released
facts): at a fixed clip the meat's noise relative to it falls like ``1 / (n eps)``, so the clip widens, and its bias
vanishes, as the budget grows; at eps 1e9 nothing is clipped."""
SCALE_NAME = "SE: residual scale"
SE_NOTE = (
    "Design-based standard errors: the weighted sandwich around the released weighted scores' {meat}, as R "
    "survey's svyglm ({design}), and the privacy noise (the release's noise re-drawn in {replicates} refits, a "
    "parametric bootstrap); percentile intervals."
)
FAIL_REASON = "the noisy weighted W'W matrix was not positive definite (the paper's failure output)"


def blocks_of(design: Design, position: dict[int, int]) -> tuple[tuple[int, ...], ...]:
    """The layout's blocks: the design's one-hot blocks among the slopes, or one empty block (the intercept)."""
    blocks = tuple(tuple(position[j] for j in block) for block in design.one_hot_blocks)
    return blocks or ((),)


def sensitivity(layout: structured.Layout, blocks: tuple[tuple[int, ...], ...], weight_max: float) -> float:
    """The weighted release's L1 sensitivity: ``W`` times the unweighted one (module docstring)."""
    in_block = sum(len(b) for b in blocks)
    return weight_max * structured.structured_sensitivity(layout.p - in_block, tuple(len(b) for b in blocks))


def score_bound(
    layout: structured.Layout, blocks: tuple[tuple[int, ...], ...], weight_max: float, residual_bound: float
) -> ScoreBound:
    """Bounds on a row's weighted score ``w r Z`` (module docstring): one entry of at most 1 per block, the
    continuous columns' at most 1/2, all times ``W`` and the residuals' bound."""
    continuous = layout.p - sum(len(b) for b in blocks)
    largest = weight_max * residual_bound
    return ScoreBound(largest * (len(blocks) + continuous / 2), largest**2 * (len(blocks) + continuous / 4))


def fit_weighted(design: Design, privacy: PrivacyRequest, rng: np.random.Generator, repairs: bool) -> Release:
    """Weighted NoisyStats (module docstring) on a design with an intercept and survey weights."""
    if design.intercept_index is None or design.weights is None or design.weight_bounds is None:
        raise ValueError("weighted NoisyStats needs an intercept and survey weights")
    eps = float(privacy.eps)
    share = privacy.share(inference.DEFAULT_SHARE)
    scale = CenteredUnitScale.from_design(design)
    position = {int(j): k for k, j in enumerate(design.slope_indices)}
    blocks = blocks_of(design, position)
    p = design.slope_indices.size
    layout = structured.Layout.of(p, blocks)
    weight_max = float(design.weight_bounds[1])
    eps_point = eps * (1.0 - share)
    se_parts = ((SCALE_NAME, eps * share * SCALE_SHARE), (release_name(design.psus), eps * share * (1 - SCALE_SHARE)))
    split = ((NAME, eps_point),) if share == 0 else ((NAME, eps_point), *se_parts)
    spent = PrivacySpent(notion="pure", eps=eps, split=split)
    note = SE_NOTE.format(
        meat="outer products" if design.psus is None else "PSU totals",
        design="one PSU per row" if design.psus is None else design.psus.description,
        replicates=inference.REPLICATES,
    )
    U, v = scale.transform(design)
    released_sensitivity = sensitivity(layout, blocks, weight_max)
    noise_scale = released_sensitivity / eps_point
    exact = layout.values(U, v, design.weights)
    released = noise.laplace_mechanism(rng, exact, released_sensitivity, eps_point, NAME)
    wtw, wtv = layout.matrices(np.atleast_1d(released))
    noisy_stats = _weighted_stats(scale, layout, wtw, wtv)
    solved, floor, bias = structured.repaired_gram(wtw, layout, noise_scale, repairs)
    if solved is None:
        return failed_release(design.n_columns, spent, FAIL_REASON, note, noisy_stats=noisy_stats)
    shrinkage = None if floor is None else RepairShrinkage.of(wtw, floor)
    wtw = solved
    theta = np.linalg.solve(wtw, wtv)
    to_unit, shift = layout.to_unit()
    coef_unit = to_unit @ theta + shift
    user = scale.jacobian() @ coef_unit + scale.offset()
    params = place_coefficients(design, user[0], user[1:])
    order = design_order(design)
    linear = scale.jacobian() @ to_unit  # the layout's coordinates to the user's (intercept, slopes)
    if share == 0:
        nan = np.full((p + 1, p + 1), np.nan)
        bias_bound = structured_bound(shrinkage, layout, linear, order, theta, None)
        return noisystats_release(params, nan, None, spent, NO_SE_NOTE, noisy_stats, bias, bias_bound)
    Z = layout.rows_of(U, v)
    residuals = Z[:, -1] - Z[:, :-1] @ theta
    bound = _residual_bound(
        rng, residuals, design.weights, weight_max, noisy_stats["sum of weights"], se_parts[0][1], se_parts[1][1]
    )
    scores = (design.weights * np.clip(residuals, -bound, bound))[:, None] * Z[:, :-1]
    meat = release_meat(rng, scores, score_bound(layout, blocks, weight_max, bound), se_parts[1][1], design.psus)
    cov, replicates = _uncertainty(noise.postprocessing_rng(rng), wtw, meat, theta, layout, noise_scale, floor)
    jacobian, offset = scale.jacobian(), scale.offset()
    with np.errstate(all="ignore"):
        cov_user = (jacobian @ cov @ jacobian.T)[np.ix_(order, order)]
        replicates = None if replicates is None else (replicates @ jacobian.T + offset)[:, order]
    bias_bound = structured_bound(shrinkage, layout, linear, order, theta, cov_user)
    return noisystats_release(params, cov_user, replicates, spent, note, noisy_stats, bias, bias_bound)


def _residual_bound(
    rng: np.random.Generator,
    residuals: np.ndarray,
    weights: np.ndarray,
    weight_max: float,
    total_weight: float,
    eps: float,
    eps_meat: float,
) -> float:
    """Where the meat clips the residuals: ``CLIP_SCALES`` (or ``CLIP_GROWTH``'s growth) times their weighted
    mean absolute value, released (``sum_i w_i min(|r_i|, 1)`` moves by at most ``W`` when a row is replaced)
    over the released weights' total; the whole ``RESIDUAL_BOUND`` where the release is not positive
    (post-processing of both)."""
    n = residuals.size
    total = float(weights @ np.minimum(np.abs(residuals), RESIDUAL_BOUND))
    noisy = float(noise.laplace_mechanism(rng, total, weight_max * RESIDUAL_BOUND, eps, SCALE_NAME))
    if not (noisy > 0 and total_weight > 0):
        return RESIDUAL_BOUND
    scales = max(CLIP_SCALES, CLIP_GROWTH * np.sqrt(n * eps_meat) * total_weight / (n * weight_max))
    return float(min(RESIDUAL_BOUND, scales * noisy / total_weight))


def _uncertainty(
    rng: np.random.Generator,
    wtw: np.ndarray,
    meat: DesignMeat,
    theta: np.ndarray,
    layout: structured.Layout,
    noise_scale: float,
    floor: float | None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """The covariance of (intercept, slopes) on the unit scale and the bootstrap's refits (post-processing):
    Student's t draws of the design-based sandwich, each coefficient with its degrees of freedom
    (dpstats/uncertainty/design_meat.py), pushed through the release's noise (module docstring). The covariance
    is the sandwich itself plus the refits' departures from their draws (the privacy error's), so that it is
    the sandwich exactly where the noise vanishes."""
    to_unit, shift = layout.to_unit()
    p = theta.size
    with np.errstate(all="ignore"):
        inverse = np.linalg.inv(wtw)
        directions = inverse @ to_unit.T
        sandwich = directions.T @ meat.meat @ directions
        if not np.all(np.isfinite(sandwich)):
            return infinite_cov(p), None
        sampling, dfs = meat.sampling_law(directions, sandwich)
        draws = t_draws(rng, to_unit @ theta + shift, sampling, dfs, inference.REPLICATES)
        refits = structured.noisy_refits(rng, wtw, draws, layout, noise_scale, floor)
        privacy_cov, replicates = inference.finish(refits - draws)
    if replicates is None:
        return privacy_cov, None
    return sampling + privacy_cov, refits


def _weighted_stats(
    scale: CenteredUnitScale, layout: structured.Layout, wtw: np.ndarray, wtv: np.ndarray
) -> dict[str, np.ndarray | float]:
    """The released weighted statistics in the user's units (post-processing): the weights' total and the
    weighted ``n var(x)`` and ``n cov(x, y)``."""
    u_total, v_total = layout.totals(wtw)[1:], layout.totals(wtv)
    total = wtw[0, 0] + np.trace(wtw[np.ix_(1 + layout.full, 1 + layout.full)])  # every row is at one level
    with np.errstate(all="ignore"):
        s_xx = wtw[1:, 1:] - np.outer(u_total, u_total) / total
        s_xy = wtv[1:] - u_total * v_total / total
    return {
        "sum of weights": float(total),
        "weighted nvar(x)": s_xx * np.outer(scale.x_width, scale.x_width),
        "weighted ncov(x, y)": s_xy * scale.x_width * scale.y_width,
    }

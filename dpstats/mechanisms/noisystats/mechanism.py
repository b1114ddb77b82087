"""NoisyStats: noisy OLS sufficient statistics (Alabi et al. 2022, Algorithm 1).

One regressor with an intercept is Algorithm 1 exactly, on the data rescaled
to [0, 1]^2 by the declared bounds: eps/3 to each of ncov(x, y), nvar(x) and
the intercept, Laplace noise with sensitivity Delta = 1 - 1/n (Lemma 19), and
failure (the paper's ⊥) when the noisy nvar(x) <= 0.

Several regressors (the multivariate generalisation). With slope columns
u_1..u_p and response v rescaled to [0, 1] (an exact affine map because the
model has an intercept), release

* S_xy = (ncov(u_j, v))_j                      with eps/3,
* S_xx = (ncov(u_j, u_k))_{j <= k}             with eps/3,
* the intercept  v_bar - b~ . u_bar            with eps/3,

where b~ = S~_xx^{-1} S~_xy. Lemma 19's proof holds for ncov of any two
vectors in [0, 1]^n, so each entry has replace-one sensitivity 1 - 1/n and the
L1 sensitivities are p(1 - 1/n) for S_xy and p(p+1)/2 (1 - 1/n) for S_xx. Both
are attained together by n - 1 rows at the origin and one row moved from the
origin to the all-ones corner (every centred product moves by 1 - 1/n). The
intercept has sensitivity (1 + sum_j |b~_j|)/n given the released b~, since
each mean moves by at most 1/n. At p = 1 this is Algorithm 1 draw for draw.
Failure generalises nvar <= 0: the noisy S_xx is not positive definite.
With ``singular="repair"`` (default ``"fail"``, the paper's) the matrix to
solve is post-processed instead, on every path below and in the standard
errors' bootstrap, so that the fit never fails (:mod:`.repair`: its
eigenvalues are floored at a public high-probability bound on the norm of
its noise; no extra privacy cost).

With an intercept and categorical terms (one-hot blocks), the centred
S_xx's noise would grow with the square of the number of levels:
:mod:`.structured` releases each level's count and sums of the columns
centred at their bounds' midpoints, without their structural zeros, instead,
with a sensitivity that does not grow with the levels.

Without an intercept the affine rescaling would change the model, so each
column is divided by c_j = max(|lo_j|, |hi_j|) (into [-1, 1]) and the
uncentred X'X (upper triangle) and X'y are released with eps/2 each; the
sensitivity of each entry is the width of its interval (x_j x_k by interval
multiplication, x_j^2 as an exact square), i.e. the most one row's
contribution can move, summed for the L1 sensitivity.

Standard errors (:mod:`.inference`): with the share ``se_share`` of eps
(default 0.2; the point estimate gets the rest, split as above) a noisy HC
meat is released and a parametric bootstrap through the mechanism's noise
gives basic intervals covering the sampling error and the privacy noise.
``se_share=0`` releases nothing more and the standard errors are NaN.

The privacy unit (``unit=``, ``max_rows=k``: dpstats/design/units.py). Neighbours then
differ in up to k rows, all of one unit. Every release above is a sum over rows (or,
for the intercept, a difference of means given the released slopes), so by the
triangle inequality over the k replaced rows its sensitivity is k times the row-level
one: every sensitivity is multiplied by k (:func:`reach`), and with it the noise
scales the bootstrap and the repair read. The standard errors' column sums likewise
(k p), and their meat is summed by unit, with the unit-level widths of
dpstats/uncertainty/cluster_meat.py, for CR1 standard errors clustered by unit. Such
a fit needs the rows of a unit together: in memory (a pandas DataFrame), or on one
partition of a Dask DataFrame (dpstats/distributed/dask_units.py), whose design carries
its rows' units: the meat's statistic reads the units of the rows it is given
(:func:`on_unit_scale`), so that its sums by unit, added over the partitions, are the
whole meat.

Survey weights (``design.weights``, with an intercept): weighted least squares from the
noisy weighted sums, with design-based standard errors (:mod:`.weighted`).

The rows are read only through ``design.total`` (dpstats/design/moments.py): the
statistics below are sums over rows (the unit-scale moments, the uncentred
cross-products, the residual meat at a released estimate), so a Dask
DataFrame's partitions compute them on the workers (dpstats/distributed/dask_design.py)
and everything from the sums to the release is this module's code.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np

from ...design.bounds import product
from ...design.matrix import CenteredUnitScale, Design, place_coefficients
from ...design.moments import Moments
from ...design.units import Units
from ...privacy import noise
from ...privacy.accounting import PrivacySpent
from ...privacy.noise import laplace_mechanism
from ...uncertainty import cluster_meat, sandwich
from ...uncertainty.sandwich import from_upper_triangle, upper_triangle
from .. import precondition
from ..base import PrivacyRequest, Release, failed_release
from . import inference, repair, structured
from .outputs import NO_SE_NOTE, design_order, is_positive_definite, noisystats_release
from .repair_bias import RepairShrinkage, centered_bound, origin_bound, structured_bound
from .weighted import fit_weighted

SE_NOTE = (
    "Standard errors and percentile bootstrap intervals cover the sampling error (an HC1 sandwich from a "
    "noisy residual meat, released with se_share of eps) and the privacy noise (the mechanism's noise "
    f"re-drawn in {inference.REPLICATES} refits: a parametric bootstrap, Ferrando, Wang & Sheldon 2022)."
)
CLUSTERED_SE_NOTE = SE_NOTE.replace("an HC1 sandwich", "a CR1 sandwich clustered by {unit}").replace(
    "residual meat", "residual meat summed by {unit}"
)
FAIL_REASON = "the noisy n*var(x) matrix was not positive definite (the paper's failure output)"


def centered_sensitivity(n: int) -> float:
    """Replace-one sensitivity of ncov(u, v) for u, v in [0, 1]^n (Lemma 19)."""
    return 1.0 - 1.0 / n


def slope_blocks(design: Design) -> tuple[tuple[int, ...], ...]:
    """The design's one-hot blocks as positions among the slope columns (the unit scale's columns)."""
    position = {int(j): k for k, j in enumerate(design.slope_indices)}
    return tuple(tuple(position[j] for j in block) for block in design.one_hot_blocks)


def se_share(n: int, columns: int, privacy: PrivacyRequest, options: Mapping[str, object]) -> float:
    """The part of eps the noisy sandwich spends (the user's ``se_share``, else :data:`.inference.DEFAULT_SHARE`)."""
    return privacy.share(inference.DEFAULT_SHARE)


def fit(design: Design, privacy: PrivacyRequest, rng: np.random.Generator, singular: str = "fail") -> Release:
    """Run NoisyStats on ``design`` (see the module docstring; ``singular``: :mod:`.repair`)."""
    repairs = repair.check_singular(singular) == "repair"
    found = () if design.chunks is not None else precondition.pairs(design)
    if found:  # a variable and its square: released nearly orthogonal, mapped back exactly
        release = _fit(precondition.preconditioned(design, found), privacy, rng, repairs)
        return precondition.back(release, design, found)
    return _fit(design, privacy, rng, repairs)


def _fit(design: Design, privacy: PrivacyRequest, rng: np.random.Generator, repairs: bool) -> Release:
    """The release on the design as given: weighted, through the origin, structured or centred."""
    if design.weights is not None:
        return fit_weighted(design, privacy, rng, repairs)
    if design.intercept_index is None:
        return _fit_through_origin(design, privacy, rng, repairs)
    if design.one_hot_blocks:
        return _fit_structured(design, privacy, rng, repairs)
    return _fit_centered(design, privacy, rng, repairs)


def _split(
    eps: float, share: float, names: tuple[str, ...], se_parts: tuple[tuple[str, float], ...]
) -> tuple[tuple[str, float], ...]:
    """The point's releases share ``(1 - share) eps`` equally; the standard errors' releases ``share eps``."""
    point = tuple((name, eps * (1.0 - share) / len(names)) for name in names)
    return point if share == 0 else (*point, *se_parts)


def unit_moments(scale: CenteredUnitScale, design: Design) -> Moments:
    """The moments of the rows ``(u, v)`` on the unit scale (a statistic for ``design.total``)."""
    U, v = scale.transform(design)
    return Moments.of(np.column_stack([U, v]))


def on_unit_scale(
    scale: CenteredUnitScale,
    statistic: inference.UnitStatistic | inference.ClusteredStatistic,
    by_unit: bool,
    design: Design,
) -> np.ndarray:
    """``statistic(U, v)`` of the design's rows on the unit scale (a statistic for ``design.total``); with
    ``by_unit``, ``statistic(U, v, units)``, the units of these rows (on a Dask DataFrame, a partition's)."""
    U, v = scale.transform(design)
    return statistic(U, v, design.units) if by_unit else statistic(U, v)


def units_of(design: Design) -> Units | None:
    """The privacy unit when it holds more than one row (module docstring); with one row per unit the
    row-level release is the unit-level one."""
    units = design.units
    return None if units is None or units.max_rows == 1 else units


def se_note(design: Design, share: float) -> str:
    """What the standard errors cover: clustered by unit when the privacy unit holds several rows."""
    units = units_of(design)
    if share == 0:
        return NO_SE_NOTE
    return SE_NOTE if units is None else CLUSTERED_SE_NOTE.format(unit=units.name)


def reach(design: Design) -> int:
    """How many rows one neighbour can change: 1, or the privacy unit's ``max_rows`` (module docstring)."""
    units = units_of(design)
    return 1 if units is None else units.max_rows


def _clusters(design: Design) -> int | None:
    """The number of units a meat summed by unit has (None: the rows' meat, HC1)."""
    units = units_of(design)
    return None if units is None else units.count


def _fit_centered(design: Design, privacy: PrivacyRequest, rng: np.random.Generator, repairs: bool) -> Release:
    eps, n, k = privacy.eps, design.n, reach(design)
    share = privacy.share(inference.DEFAULT_SHARE)
    point = ("ncov(x, y)", "nvar(x)", "intercept")
    split = _split(eps, share, point, inference.centered_split(eps * share, design.slope_indices.size))
    spent = PrivacySpent(notion="pure", eps=eps, split=split)
    eps3 = split[0][1]
    note = se_note(design, share)
    scale = CenteredUnitScale.from_design(design)
    p = design.slope_indices.size
    moments = design.total(functools.partial(unit_moments, scale))
    u_bar, v_bar = moments.mean[:p], moments.mean[p]
    delta = k * centered_sensitivity(n)
    xy_sensitivity, xx_sensitivity = p * delta, p * (p + 1) / 2 * delta

    s_xy = laplace_mechanism(rng, moments.comoment[:p, p], xy_sensitivity, eps3, "ncov(x, y)")
    s_xx_upper = laplace_mechanism(rng, upper_triangle(moments.comoment[:p, :p]), xx_sensitivity, eps3, "nvar(x)")
    s_xx = from_upper_triangle(np.atleast_1d(s_xx_upper), p)
    s_xy = np.atleast_1d(s_xy)
    noisy_stats = _user_unit_stats(scale, s_xx, s_xy)
    floor = repair.floor(p, xx_sensitivity / eps3) if repairs else None
    bias = None if floor is None else repair.floor_bias(s_xx, floor)
    shrinkage = None if floor is None else RepairShrinkage.of(s_xx, floor)
    if floor is not None:
        s_xx = repair.repaired(s_xx, floor)
    elif not is_positive_definite(s_xx):
        return failed_release(design.n_columns, spent, FAIL_REASON, note, noisy_stats=noisy_stats)

    slopes = np.linalg.solve(s_xx, s_xy)
    intercept_sensitivity = k * (1.0 + np.abs(slopes).sum()) / n
    intercept = laplace_mechanism(rng, v_bar - slopes @ u_bar, intercept_sensitivity, eps3, "intercept")
    coef_unit = np.concatenate([[intercept], slopes])
    theta = scale.jacobian() @ coef_unit + scale.offset()
    params = place_coefficients(design, theta[0], theta[1:])
    if share == 0:
        bound = centered_bound(shrinkage, scale, design, slopes, None)
        return noisystats_release(params, np.full((p + 1, p + 1), np.nan), None, spent, note, noisy_stats, bias, bound)

    rows = functools.partial(_unit_total, design, scale)
    released = inference.release_centered_sandwich(
        rng, rows, n, coef_unit, eps * share, u_sum=n * u_bar, units=units_of(design)
    )
    scales = (xx_sensitivity / eps3, xy_sensitivity / eps3, k / (n * eps3))
    to_user = (scale.jacobian(), scale.offset(), design_order(design))
    cov, replicates = inference.centered_uncertainty(
        noise.postprocessing_rng(rng), released, coef_unit, s_xx, n, scales, to_user, floor, _clusters(design)
    )
    bound = centered_bound(shrinkage, scale, design, slopes, cov)
    return noisystats_release(params, cov, replicates, spent, note, noisy_stats, bias, bound)


def _fit_structured(design: Design, privacy: PrivacyRequest, rng: np.random.Generator, repairs: bool) -> Release:
    """Designs with an intercept and categorical blocks (dpstats/mechanisms/noisystats/structured.py)."""
    eps, n = privacy.eps, design.n
    share = privacy.share(inference.DEFAULT_SHARE)
    p = design.slope_indices.size
    split = _split(eps, share, (structured.NAME,), inference.centered_split(eps * share, p, sums=False))
    spent = PrivacySpent(notion="pure", eps=eps, split=split)
    note = se_note(design, share)
    scale = CenteredUnitScale.from_design(design)
    rows = functools.partial(_unit_total, design, scale)
    blocks = slope_blocks(design)
    wtw, wtv, layout, noise_scale = structured.release(rng, rows, n, p, blocks, split[0][1], reach(design))
    u_total, v_total = layout.totals(wtw)[1:], layout.totals(wtv)  # S_xx and S_xy do not depend on the centring
    s_xx = wtw[1:, 1:] - np.outer(u_total, u_total) / n
    noisy_stats = _user_unit_stats(scale, s_xx, wtv[1:] - u_total * v_total / n)
    solved, floor, bias = structured.repaired_gram(wtw, layout, noise_scale, repairs)
    if solved is None:
        return failed_release(design.n_columns, spent, FAIL_REASON, note, noisy_stats=noisy_stats)
    shrinkage = None if floor is None else RepairShrinkage.of(wtw, floor)
    wtw = solved
    to_unit, shift = layout.to_unit()
    solution = np.linalg.solve(wtw, wtv)
    coef_unit = to_unit @ solution + shift
    theta = scale.jacobian() @ coef_unit + scale.offset()
    params = place_coefficients(design, theta[0], theta[1:])
    bounds = functools.partial(structured_bound, shrinkage, layout, scale.jacobian() @ to_unit, design_order(design))
    if share == 0:
        nan = np.full((p + 1, p + 1), np.nan)
        return noisystats_release(params, nan, None, spent, note, noisy_stats, bias, bounds(solution, None))

    released = inference.release_centered_sandwich(
        rng,
        rows,
        n,
        coef_unit,
        eps * share,
        blocks,
        u_sum=u_total + n * layout.centre[:-1],
        sums_released=True,
        units=units_of(design),
    )
    to_user = (scale.jacobian(), scale.offset(), design_order(design))
    cov, replicates = inference.structured_uncertainty(
        noise.postprocessing_rng(rng),
        released,
        coef_unit,
        wtw,
        layout,
        noise_scale,
        n,
        to_user,
        floor,
        _clusters(design),
    )
    return noisystats_release(params, cov, replicates, spent, note, noisy_stats, bias, bounds(solution, cov))


def _unit_total(
    design: Design,
    scale: CenteredUnitScale,
    statistic: inference.UnitStatistic | inference.ClusteredStatistic,
    by_unit: bool = False,
) -> np.ndarray:
    """``statistic`` summed over the design's rows on the unit scale (:func:`on_unit_scale`)."""
    return design.total(functools.partial(on_unit_scale, scale, statistic, by_unit))


def origin_sums(x_scale: np.ndarray, y_scale: float, design: Design) -> np.ndarray:
    """``X'y`` then the upper triangle of ``X'X`` of the rows divided by the scales (a statistic)."""
    Xs, ys = design.X / x_scale, design.y / y_scale
    return np.concatenate([Xs.T @ ys, upper_triangle(Xs.T @ Xs)])


def origin_meat(x_scale: np.ndarray, y_scale: float, coef: np.ndarray, bound: float, design: Design) -> np.ndarray:
    """The meat's upper triangle at the released ``coef``, residuals clipped at ``bound`` (a statistic); summed
    by unit first when the privacy unit is a unit of rows (dpstats/uncertainty/cluster_meat.py)."""
    Xs, ys = design.X / x_scale, design.y / y_scale
    residuals = sandwich.clipped_residuals(ys, Xs @ coef, bound)
    units = units_of(design)
    if units is None:
        return sandwich.meat(Xs, residuals)
    return cluster_meat.cluster_meat(Xs, residuals, units.codes, units.count)


def _fit_through_origin(design: Design, privacy: PrivacyRequest, rng: np.random.Generator, repairs: bool) -> Release:
    eps = privacy.eps
    share = privacy.share(inference.DEFAULT_SHARE)
    split = _split(eps, share, ("X'y", "X'X"), sandwich.meat_split(eps * share, design.n_columns, None))
    spent = PrivacySpent(notion="pure", eps=eps, split=split)
    eps2 = split[0][1]
    note = se_note(design, share)
    x_scale = np.abs(design.x_bounds).max(axis=1)
    y_scale = float(np.abs(design.y_bounds).max())
    xb = design.x_bounds / x_scale[:, None]
    yb = (design.y_bounds[0] / y_scale, design.y_bounds[1] / y_scale)
    p = design.n_columns
    sums = design.total(functools.partial(origin_sums, x_scale, y_scale))

    k = reach(design)
    xy_sensitivity = k * sum(hi - lo for lo, hi in (product(tuple(xb[j]), yb) for j in range(p)))
    xx_sensitivity = k * sandwich.bread_sensitivity(xb)
    xty = np.atleast_1d(laplace_mechanism(rng, sums[:p], xy_sensitivity, eps2, "X'y"))
    xtx_upper = laplace_mechanism(rng, sums[p:], xx_sensitivity, eps2, "X'X")
    xtx = from_upper_triangle(np.atleast_1d(xtx_upper), p)
    noisy_stats = {
        "X'X": xtx * np.outer(x_scale, x_scale),
        "X'y": xty * x_scale * y_scale,
    }
    floor = repair.floor(p, xx_sensitivity / eps2) if repairs else None
    bias = None if floor is None else repair.floor_bias(xtx, floor)
    shrinkage = None if floor is None else RepairShrinkage.of(xtx, floor)
    if floor is not None:
        xtx = repair.repaired(xtx, floor)
    elif not is_positive_definite(xtx):
        return failed_release(p, spent, FAIL_REASON, note, noisy_stats=noisy_stats)
    coef_scaled = np.linalg.solve(xtx, xty)
    params = coef_scaled * y_scale / x_scale
    widths = (xb[:, 1] - xb[:, 0]) / (yb[1] - yb[0])
    bounds = functools.partial(origin_bound, shrinkage, y_scale / x_scale, widths, coef_scaled)
    if share == 0:
        return noisystats_release(params, np.full((p, p), np.nan), None, spent, note, noisy_stats, bias, bounds(None))

    bound = sandwich.residual_bound(coef_scaled, xb, yb)
    full = design.total(functools.partial(origin_meat, x_scale, y_scale, coef_scaled, bound))
    widths = None if units_of(design) is None else cluster_meat.unit_widths(xb, bound, k)
    released = sandwich.release_meat_sums(rng, full, xb, bound, eps * share, None, widths=widths)
    scales = (xx_sensitivity / eps2, xy_sensitivity / eps2)
    cov, replicates = inference.origin_uncertainty(
        noise.postprocessing_rng(rng),
        released,
        coef_scaled,
        xtx,
        design.n,
        scales,
        y_scale / x_scale,
        floor,
        _clusters(design),
    )
    return noisystats_release(params, cov, replicates, spent, note, noisy_stats, bias, bounds(cov))


def _user_unit_stats(scale: CenteredUnitScale, s_xx: np.ndarray, s_xy: np.ndarray) -> dict:
    """The released statistics mapped to the user's units (post-processing)."""
    return {
        "nvar(x)": s_xx * np.outer(scale.x_width, scale.x_width),
        "ncov(x, y)": s_xy * scale.x_width * scale.y_width,
    }

"""``method="newton"``: DP Newton's method for dp_logit and dp_probit (Avella-Medina, Bradshaw & Loh 2023).

The release (dpstats/mechanisms/newton/steps.py), on the design scaled to [-1, 1]
by the declared bounds (dpstats/mechanisms/newton/scaling.py): the Gram matrix
times the curvature's bound, which majorises the curvature sum at every iterate
(Böhning & Lindsay 1988), then ``steps - 1`` steps from 0 with it (monotone, they
cannot overshoot), then Newton steps at the released curvature of each iterate: one,
and up to ``MAX_NEWTON`` where ``n eps / p^2`` is large (:func:`newton_steps`), so that
the limit at a huge eps is the MLE. The point's budget is split by basic composition (``SHARES``): the last score
gets the largest part (its noise is what the estimate keeps), the earlier ones
share 0.35 equally. Every release is the float-safe Laplace mechanism, so the
guarantee is pure eps-DP as implemented (``proven``).

Standard errors, post-processing of the release (dpstats/mechanisms/newton/inference.py):
``H^{-1}`` (the inverse of the released curvature at the last iterate: the model's
information) plus the second moment of the privacy error, simulated by rerunning the
iteration on the released values; mapped back to the user's units exactly. Nothing of
the budget goes to them.

Survey weights (``design.weights``, dpstats/frontend/weights.py): the same iteration on
the weighted scores and curvatures (the weighted pseudo-MLE, survey::svyglm's point
estimate), with ``MEAT_SHARE`` of eps on the weighted scores' outer products at the
release, so that the sampling part of the covariance is the design-based weighted
sandwich ``H^{-1} M H^{-1}`` (one PSU per row) instead of ``H^{-1}``. With a survey's declared
PSUs and strata (``design.psus``) that share releases the PSUs' weighted score totals instead,
and M is svyglm's linearisation meat (dpstats/uncertainty/design_meat.py).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...design.matrix import Design
from ...glm.links import Link, get_link
from ...privacy import noise
from ...privacy.accounting import PrivacySpent
from ...uncertainty.design_meat import DesignMeat, release_meat, release_name, t_draws
from .. import precondition
from ..base import PrivacyRequest, Release, refuse_rho
from .inference import Iteration, privacy_second_moment
from .scaling import BoxScale
from .steps import (
    CURVATURE_MAX,
    Sample,
    curvature_sensitivity,
    newton_step,
    noise_floor,
    noisy_curvature,
    noisy_score,
    repaired,
    score_bound,
    score_rows,
    score_sensitivity,
)

DEFAULTS: dict[str, object] = {"steps": 5}
SHARES = {"gram": 0.15, "curvature": 0.15, "last score": 0.35}
"""The point budget's parts: the Gram bound, the curvature at the last iterate, the last score; the earlier
releases share the rest (0.35) equally (:func:`budget`)."""
POLISH_LOAD = 100.0
"""From ten times this ``n eps / p^2`` the iteration ends with more than one Newton step (:func:`newton_steps`)."""
MAX_NEWTON = 4
FLOOR = 1e-3
"""The curvature's eigenvalues are raised to ``FLOOR n w_max``, and to its noise's floor (public), before it is
inverted (dpstats/mechanisms/newton/steps.py)."""
WEAK = 0.25
"""The Gram bound or the last curvature, if its least eigenvalue falls below ``WEAK`` times its noise
floor, marks the fit as biased: the steps along that direction were shortened four-fold or more, and the iteration
from 0 has not reached the MLE there. statsmodels' fair data (7 columns) at eps 1 and 5: every fit below it, 0.5
to 6 of the MLE's standard errors off; CPS1988's logit with experience and its square before the pair was
preconditioned (eps 5: the square's coefficient shrunk by 85%, every fit flagged; eps 20: by 30%, 8 of 10
flagged); above it, most fits of fair at eps 20 and of CPS1988's logit without the square at eps 1 and 5.
Preconditioned (:func:`fit`), the wage logits with a square (benchmarks/bench_newton_squares.py, 10 seeds) are
flagged in 0 of 10 fits at eps 5 and 20, against 7-10 of 10 before."""
SHRINKAGE = (
    "the shrinkage towards 0 along the design's weak directions (nearly collinear columns, such as a variable and "
    "its square), where a released curvature fell below a quarter of its noise's floor and was raised to it "
    "(dpstats/mechanisms/newton/steps.py): there the noisy steps are shortened and the iteration has not reached "
    "the MLE"
)
REPLICATES = 2000
"""Draws of a weighted fit's law for its intervals (module docstring; post-processing)."""
MEAT_SHARE = 0.1
"""With survey weights, the part of eps the weighted scores' outer products (the sandwich's meat) spend."""
SE_NOTE_WEIGHTED = (
    "weighted sandwich (the released curvature around the released outer products of the weighted scores, "
    "design-based with one PSU per row, as survey::svyglm without clusters) plus the privacy error's second "
    "moment, from reruns of the noisy iteration on the released values"
)
SE_NOTE_PSUS = (
    "design-based linearisation sandwich, as survey::svyglm's, over {psus}: the released curvature around the "
    "PSUs' noisy weighted score totals, centred within strata, less their noise's variance "
    "(dpstats/uncertainty/design_meat.py), plus the privacy error's second moment from reruns of the noisy "
    "iteration on the released values"
)
SE_NOTE = (
    "inverse of the released curvature (the model's information) plus the privacy error's second moment, from "
    "reruns of the noisy iteration on the released values (post-processing, no budget)"
)


def check_options(options: Mapping[str, object]) -> int:
    """The number of steps, an integer >= 2 (public)."""
    steps = options.get("steps", DEFAULTS["steps"])
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 2:
        raise ValueError("steps must be an integer >= 2")
    return steps


def check_request(privacy: PrivacyRequest, options: Mapping[str, object]) -> None:
    """Pure DP: eps, delta 0; the options checked before any data are read."""
    refuse_rho(privacy, "newton")
    if privacy.delta > 0:
        raise ValueError("method='newton' is pure DP: delta must be 0")
    check_options(options)


def newton_steps(n: int, eps: float, p: int) -> int:
    """How many Newton steps end the iteration: 1, and one more for each factor of 10 by which
    ``n eps / p^2`` exceeds ``POLISH_LOAD`` (at most ``MAX_NEWTON``): where the noise is small the last
    iterate reaches the MLE rather than one Newton step from the Gram bound's iterate (public facts only)."""
    load = n * eps / p**2
    return 1 + int(min(MAX_NEWTON - 1, max(0.0, np.floor(np.log10(load / POLISH_LOAD))))) if load > 0 else 1


def budget(eps: float, steps: int, newton: int = 1) -> dict[str, float]:
    """Each release's eps (``SHARES``; module docstring): the Gram bound, the last curvature and the last score
    take theirs; the rest is cut into equal units, one for each early score and two (a curvature and a score)
    for each Newton step before the last."""
    parts = {name: share * eps for name, share in SHARES.items()}
    parts["unit"] = (1.0 - sum(SHARES.values())) * eps / ((steps - 1) + 2 * (newton - 1))
    return parts


def fit(
    design: Design, privacy: PrivacyRequest, rng: np.random.Generator, *, steps: int = 5, link: str | None = None
) -> Release:
    """The noisy Newton release and its standard errors (module docstring), a variable and its square released
    nearly orthogonal and mapped back exactly (dpstats/mechanisms/precondition.py)."""
    found = () if design.chunks is not None else precondition.pairs(design)
    if found:
        release = _fit(precondition.preconditioned(design, found), privacy, rng, steps, link)
        return precondition.back(release, design, found)
    return _fit(design, privacy, rng, steps, link)


def _fit(design: Design, privacy: PrivacyRequest, rng: np.random.Generator, steps: int, link: str | None) -> Release:
    """The release on the design as given."""
    binary = get_link(link)
    steps = check_options({"steps": steps})
    scale = BoxScale.of(design)
    rows = _sample(design, scale)
    n, p = rows.Z.shape
    blocks, w_max = design.one_hot_blocks, rows.weight_max
    floor = FLOOR * n * CURVATURE_MAX[binary.name] * _least_weight(design)
    newton = newton_steps(n, float(privacy.eps), p)
    weighted = rows.weights is not None
    eps_point = float(privacy.eps) * (1.0 - MEAT_SHARE if weighted else 1.0)
    parts = budget(eps_point, steps, newton)
    gram = noisy_curvature(binary, rows, None, parts["gram"], rng)
    gram_floor = max(floor, noise_floor(binary, p, parts["gram"], w_max))
    bound = repaired(gram, gram_floor)
    weakest = _least_eigenvalue(gram) / gram_floor  # how far the released matrices fell below their floors
    theta = np.zeros(p)
    for _ in range(steps - 1):
        theta = theta + newton_step(bound, noisy_score(binary, rows, theta, parts["unit"], blocks, rng))
    unit_floor = max(floor, noise_floor(binary, p, parts["unit"], w_max))
    last_floor = max(floor, noise_floor(binary, p, parts["curvature"], w_max))
    for last in [False] * (newton - 1) + [True]:
        eps_curvature, eps_score = (parts["curvature"], parts["last score"]) if last else (parts["unit"],) * 2
        curvature = noisy_curvature(binary, rows, theta, eps_curvature, rng)
        H = repaired(curvature, last_floor if last else unit_floor)
        theta = theta + newton_step(H, noisy_score(binary, rows, theta, eps_score, blocks, rng))
    run = Iteration(
        early=steps - 1,
        newton=newton,
        gram_scale=curvature_sensitivity(binary, p, w_max) / parts["gram"],
        unit_score_scale=score_sensitivity(binary, p, blocks, w_max) / parts["unit"],
        unit_curvature_scale=curvature_sensitivity(binary, p, w_max) / parts["unit"],
        curvature_scale=curvature_sensitivity(binary, p, w_max) / parts["curvature"],
        last_scale=score_sensitivity(binary, p, blocks, w_max) / parts["last score"],
        gram_floor=gram_floor,
        unit_floor=unit_floor,
        curvature_floor=last_floor,
    )
    weakest = min(weakest, _least_eigenvalue(curvature) / last_floor)  # the bound's and the last curvature's
    information = repaired(curvature, floor)  # not raised to the noise's floor: that would shrink the SEs
    post = noise.postprocessing_rng(rng)
    privacy_part = privacy_second_moment(gram, information, theta, run, post)
    inverse = np.linalg.inv(information)
    split = [
        ("scores", parts["unit"] * (steps + newton - 2) + parts["last score"]),
        ("curvatures", parts["gram"] + parts["unit"] * (newton - 1) + parts["curvature"]),
    ]
    J = scale.jacobian()
    replicates = None
    if weighted:  # the design-based (weighted sandwich) covariance of the weighted MLE
        eps_meat = float(privacy.eps) - eps_point
        meat = _design_meat(binary, rows, theta, eps_meat, rng, design)
        note = SE_NOTE_WEIGHTED if design.psus is None else SE_NOTE_PSUS.format(psus=design.psus.description)
        split.append((release_name(design.psus), eps_meat))
        directions = inverse @ J.T  # a' M a is the sampling variance of each coefficient in the user's units
        sampling, dfs = meat.sampling_law(directions, directions.T @ meat.meat @ directions)
        replicates = t_draws(post, J @ theta, sampling, dfs, REPLICATES)
        replicates += t_draws(post, np.zeros(p), J @ privacy_part @ J.T, np.full(p, np.inf), REPLICATES)
    else:
        sampling = J @ inverse @ J.T
        note = SE_NOTE
    return Release(
        params=J @ theta,
        cov=sampling + J @ privacy_part @ J.T,
        privacy=PrivacySpent(notion="pure", eps=float(privacy.eps), split=tuple(split)),
        se_note=note,
        hyperparameters={"steps": steps, "newton steps": newton},
        bias=SHRINKAGE if weakest < WEAK else None,
        replicates=replicates,
        interval="percentile",
    )


def _design_meat(
    binary: Link, rows: Sample, theta: np.ndarray, eps: float, rng: np.random.Generator, design: Design
) -> DesignMeat:
    """The released design-based meat at ``theta`` (dpstats/uncertainty/design_meat.py): the weighted scores'
    outer products (one PSU per row), or the declared PSUs' score totals."""
    weights = np.ones(len(rows.y)) if rows.weights is None else rows.weights
    scores = weights[:, None] * score_rows(binary, rows.Z, rows.y, theta)
    bound = score_bound(binary, rows.Z.shape[1], design.one_hot_blocks, rows.weight_max)
    return release_meat(rng, scores, bound, eps, design.psus)


def _least_eigenvalue(matrix: np.ndarray) -> float:
    """The least eigenvalue of a released symmetric matrix (post-processing)."""
    return float(np.linalg.eigvalsh(matrix)[0])


def _sample(design: Design, scale: BoxScale) -> Sample:
    """The scaled rows, the response in [0, 1], and the survey weights with their declared upper end."""
    Z, y = scale.rows(design.X), np.clip(design.y, 0.0, 1.0)
    if design.weights is None or design.weight_bounds is None:
        return Sample(Z, y)
    lo, hi = design.weight_bounds
    return Sample(Z, y, np.clip(design.weights, lo, hi), float(hi))


def _least_weight(design: Design) -> float:
    """The weights' declared lower end (a thousandth of the upper one where it is 0); 1 without weights."""
    if design.weight_bounds is None:
        return 1.0
    lo, hi = design.weight_bounds
    return lo if lo > 0 else FLOOR * hi

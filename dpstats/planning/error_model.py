"""Predicted error and failure rate of each candidate mechanism, from public facts only.

The table (error_table.json, written by benchmarks/calibrate_error_model.py)
holds, per candidate, cells of two families of reference designs: continuous
(``y ~ x1 + ... + xd``, d in {1, 3, 10}) and categorical (``y ~ x + C(g)``
with L in {2, 3, 10, 30} declared levels; the cells with a ``levels`` key).
Per cell (n, eps, d or L) and each of five reference scenarios (how the data
fill the declared bounds and how noisy they are: not public, so every scenario
is predicted) it holds the 68th percentile of the deviation of the slopes of
interest from the non-private fit on the unit scale (``dev``: every slope in
the continuous family, x's alone in the categorical one, whose dummies are
controls), the same in units of the non-private standard errors (``rel``,
Alabi et al. 2022's C(68)/sigma) and the failure rate; the cells calibrated
since it was added also hold the 90th percentile of the deviation with a
failed fit counted as the worst fit that answered (``tail``: what a grouped auto ranks,
dpstats/planning/selection.py), and :class:`Prediction` has a tail only where
every cell it is read from records one.

A third family holds real designs (real_table.json, written by
benchmarks/calibrate_real_designs.py): the public regressions of
benchmarks/real_regressions.py, each resampled from its own rows at several n,
so that its shape and skew are kept. Per cell (n, eps) it holds the 68th
percentile of the deviation of the coefficient a prediction is of
(:func:`error_term`) on the unit scale, of the mean over the slopes in
non-private standard errors, the 90th percentile and the failure rate; its one
scenario is the design's data.

Which grid predicts a design (:func:`reference`): a design whose public
signature (dpstats/planning/facts.design_signature: the formula's terms, the
declarations, the estimator) is a real design's is read from that design's
grid at (n, eps), for every candidate it was calibrated with, where n is within
the sizes it was resampled at (one point cannot say how the error moves with
n). Otherwise one with an intercept,
exactly one continuous slope and exactly one categorical block (L = the
block's size + 1 levels) is read from the candidate's
categorical grid at (n, eps, L): calibrated. Every other design is read from
the continuous grid at the candidate's dimension (``Candidate.dimension``),
which counts categorical blocks as continuous columns: extrapolated, and for
designs with categorical terms possibly far off (several factors, or several
continuous regressors beside a factor, are not calibrated).

A prediction interpolates log ``dev`` and log ``rel`` linearly in (log n,
log eps, log d) or (log n, log eps, log L) between the grid's points and
extends the edge slopes beyond them in n and towards small eps (eps above the
grid, up to 1e9, and d or L are held at the grid's ends); failure rates are
interpolated linearly. Beyond the largest n the slope in log n is kept within
what the rates allow (:data:`MAX_DECAY`): a deviation falls at most as 1/n
(the privacy noise's rate; the sampling error falls as n^-1/2), in standard
errors at most as n^-1/2 (a failure rate, linear, may fall at its edge slope; none rises). A steeper
edge slope comes from a cell that failed or refused (CAP) beside one that did
not, not from the mechanism: Tukey with 10 coefficients is refused at
n = 3,000 and eps = 1 and answers at 10,000, and its unbounded slope predicted
AER's CPS1988 (28,155 rows) at 0.23 non-private standard errors. The calibration is the papers'
analyses made concrete: every rate in them is a power of n, eps and d, so the
error is close to log-linear between the grid's points.

The point estimate's error depends on the budget the point gets, and the
table's fits spent each mechanism's default share of eps on standard errors
(``MechanismSpec.se_share``: none for the histogram, 0.2 for NoisyStats, 0.25
to 0.5 for Theil-Sen, ...). A call whose ``se_share`` differs (0 in the
benchmarks, where the peers release no standard errors) is predicted at the
table's eps whose default split gives its point the same budget
(:func:`calibrated_eps`), so the comparison between mechanisms is at the
budgets they will actually spend on the point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..mechanisms import REGISTRY, PrivacyRequest
from .candidates import Candidate
from .facts import PublicFacts
from .tables import CAP, Grid, real_grids, synthetic_grids

SEARCH_STEPS = 60
"""Bisection steps of :func:`calibrated_eps` on log eps (a relative precision far below the table's)."""

SIZE_SLACK = 1e-9
"""Tolerance, in log n, of a real design's range of sizes (its cells' n are rounded)."""

MAX_DECAY = {"dev": 1.0, "rel": 0.5, "failure": math.inf}
"""The steepest fall in log n, per unit of log n, of each predicted quantity beyond the grid's largest n."""


@dataclass(frozen=True)
class Prediction:
    """One candidate's predicted error in each reference scenario and its failure rate."""

    label: str
    dev: tuple[float, ...]
    rel: tuple[float, ...]
    failure: float
    refused: bool = False
    tail: tuple[float, ...] | None = None
    noise: tuple[float, ...] = ()
    fill: tuple[float, ...] = ()
    worst: tuple[float, ...] | None = None
    """A real design's predicted worst relative error of a coefficient the data determine well (None elsewhere)."""
    eps: float | None = None
    """The budget it is read at where auto would spend less than the call's eps (dpstats/planning/selection.py),
    else None."""
    failures: tuple[float, ...] | None = None
    """Each scenario's predicted failure rate (``failure`` is the largest of them)."""

    @property
    def typical_dev(self) -> float:
        """The median over the scenarios of the predicted deviation (unit scale)."""
        return float(np.median(self.dev))

    @property
    def typical_rel(self) -> float:
        """The median over the scenarios of the deviation in units of the non-private standard error."""
        return float(np.median(self.rel))


def categorical_levels(facts: PublicFacts) -> int | None:
    """L when the design is of the categorical family (intercept, one continuous slope, one block of L - 1
    dummies), else None."""
    if facts.intercept and facts.continuous == 1 and len(facts.block_sizes) == 1:
        return facts.block_sizes[0] + 1
    return None


def error_unit(facts: PublicFacts) -> float:
    """The factor from the unit scale to the user's units of the coefficient a prediction is of (NaN: unknown).

    In the categorical family that is x's slope (the dummies are controls);
    otherwise the first slope's, as the continuous family's deviation is an
    average over slopes of the same scale.
    """
    return facts.unit[_error_slope(facts)] if facts.unit else float("nan")


def error_term(facts: PublicFacts) -> str:
    """The name of the coefficient a prediction is of (:func:`error_unit`'s)."""
    return facts.term_names[_error_slope(facts)] if facts.term_names else "the first regressor"


def _error_slope(facts: PublicFacts) -> int:
    """The slope a prediction is of: x's in the categorical family, else the first (module docstring)."""
    if categorical_levels(facts) is not None and len(facts.dummy) == len(facts.unit):
        return next(j for j, d in enumerate(facts.dummy) if not d)
    return 0


def reference(candidate: Candidate, facts: PublicFacts) -> tuple[Grid, float]:
    """The grid that predicts ``facts`` and the design's coordinate on its third axis (module docstring): the
    real design's own where the design is one the table was calibrated on (its signature) and n is within the
    sizes it was resampled at, else the synthetic family's."""
    real = real_grids().get((candidate.label, facts.signature))
    if real is not None and real.axes[0][0] - SIZE_SLACK <= math.log(facts.n) <= real.axes[0][-1] + SIZE_SLACK:
        return real, 1.0
    levels = categorical_levels(facts)
    if levels is not None:
        return synthetic_grids()[candidate.label, "categorical"], float(levels)
    return synthetic_grids()[candidate.label, "continuous"], candidate.dimension(facts)


def _weights(axis: np.ndarray, value: float, extend: bool) -> list[tuple[int, float]]:
    """Linear interpolation weights on one axis (edge slopes extended when ``extend``, else clamped)."""
    if axis.size == 1:
        return [(0, 1.0)]
    if not extend:
        value = min(max(value, axis[0]), axis[-1])
    hi = int(np.clip(np.searchsorted(axis, value), 1, axis.size - 1))
    lo = hi - 1
    t = (value - axis[lo]) / (axis[hi] - axis[lo])
    return [(lo, 1.0 - t), (hi, t)]


def _interpolate(values: np.ndarray, grid: Grid, point: tuple[float, float, float], max_decay: float) -> np.ndarray:
    """``values`` at ``point``; beyond the largest n, along the edge slope in log n bounded by ``max_decay``."""
    ns = grid.axes[0]
    if ns.size == 1 or point[0] <= ns[-1]:
        return _interpolate_inside(values, grid, point)
    top = _interpolate_inside(values, grid, (ns[-1], point[1], point[2]))
    below = _interpolate_inside(values, grid, (ns[-2], point[1], point[2]))
    slope = np.clip((top - below) / (ns[-1] - ns[-2]), -max_decay, 0.0)
    return top + slope * (point[0] - ns[-1])


def _interpolate_inside(values: np.ndarray, grid: Grid, point: tuple[float, float, float]) -> np.ndarray:
    out = 0.0
    wn = _weights(grid.axes[0], point[0], extend=True)
    we = _weights(grid.axes[1], point[1], extend=point[1] < grid.axes[1][0])
    wd = _weights(grid.axes[2], point[2], extend=False)
    for i, a in wn:
        for j, b in we:
            for k, c in wd:
                if a * b * c != 0.0:  # a cell of weight 0 plays no part, even where it holds NaN (no tail)
                    out = out + a * b * c * values[i, j, k]
    return np.asarray(out)


def point_eps(candidate: Candidate, facts: PublicFacts, eps: float, delta: float, share: float | None) -> float:
    """The budget the candidate's point estimate gets from ``eps`` when its SEs take ``share`` (None: default)."""
    spec = REGISTRY[candidate.method]
    options = {**candidate.options, **({"q": 0.5} if candidate.estimator == "quantreg" else {})}
    request = PrivacyRequest(eps=eps, delta=delta, se_share=share)
    return eps * (1.0 - spec.se_share(facts.n, facts.slopes + facts.intercept, request, options))


def calibrated_eps(candidate: Candidate, facts: PublicFacts) -> float:
    """The eps of the table at which a default fit's point gets this call's point budget (module docstring).

    With the default share that is the call's eps. Otherwise a bisection on
    log e between the call's point budget and four times it (every default
    share is below 3/4) finds where a default fit's point budget
    ``e (1 - share(e))`` reaches it: that budget grows with e, as the default
    shares are constant or fall with e (Tukey's switches on at the eps where
    the point can afford it, a step the bisection lands on either side of).
    """
    if facts.se_share is None:
        return facts.eps
    target = point_eps(candidate, facts, facts.eps, facts.delta, facts.se_share)
    lo, hi = math.log(target), math.log(4.0 * target)
    for _ in range(SEARCH_STEPS):
        mid = 0.5 * (lo + hi)
        if point_eps(candidate, facts, math.exp(mid), candidate.delta, None) < target:
            lo = mid
        else:
            hi = mid
    return math.exp(hi)


def predict(candidate: Candidate, facts: PublicFacts) -> Prediction:
    """The candidate's predicted error for ``facts``: its grid (:func:`reference`) at :func:`calibrated_eps`
    (at the unit level: :meth:`~dpstats.planning.candidates.Candidate.at_unit_level`)."""
    facts = candidate.at_unit_level(facts)
    grid, shape = reference(candidate, facts)
    point = (math.log(facts.n), math.log(calibrated_eps(candidate, facts)), math.log(shape))
    nearest = tuple(
        max(_weights(axis, value, extend=False), key=lambda w: w[1])[0]
        for axis, value in zip(grid.axes, point, strict=True)
    )
    if grid.refused[nearest]:
        return Prediction(candidate.label, (math.inf,), (math.inf,), 1.0, refused=True)
    dev = np.minimum(np.exp(_interpolate(grid.dev, grid, point, MAX_DECAY["dev"])), CAP)
    rel = np.minimum(np.exp(_interpolate(grid.rel, grid, point, MAX_DECAY["rel"])), CAP)
    failures = np.clip(_interpolate(grid.failure, grid, point, MAX_DECAY["failure"]), 0.0, 1.0)
    tail = np.minimum(np.exp(_interpolate(grid.tail, grid, point, MAX_DECAY["dev"])), CAP)
    worst = np.minimum(np.exp(_interpolate(grid.worst, grid, point, MAX_DECAY["dev"])), CAP)
    return Prediction(
        candidate.label,
        tuple(map(float, dev)),
        tuple(map(float, rel)),
        float(failures.max()),
        tail=None if np.isnan(tail).any() else tuple(map(float, tail)),
        noise=grid.noise,
        fill=grid.fill,
        worst=None if np.isnan(worst).any() else tuple(map(float, worst)),
        failures=tuple(map(float, failures)),
    )

"""Predicted error and failure rate of each candidate mechanism, from public facts only.

The table (error_table.json, written by benchmarks/calibrate_error_model.py)
holds, per candidate and cell (n, eps, d), for each of five reference
scenarios (how the data fill the declared bounds and how noisy they are: not
public, so every scenario is predicted) the 68th percentile of the slopes'
deviation from the non-private fit on the unit scale (``dev``), the same in
units of the non-private standard errors (``rel``, Alabi et al. 2022's
C(68)/sigma) and the failure rate. A prediction interpolates log ``dev`` and
log ``rel`` linearly in (log n, log eps, log d) between the grid's points and
extends the edge slopes beyond them in n and towards small eps (eps above the
grid, up to 1e9, and d are held at the grid's ends); failure rates are
interpolated linearly. The calibration is the papers'
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

import functools
import json
import math
from dataclasses import dataclass
from importlib import resources

import numpy as np

from ..mechanisms import REGISTRY, PrivacyRequest
from .candidates import Candidate
from .facts import PublicFacts

SEARCH_STEPS = 60
"""Bisection steps of :func:`calibrated_eps` on log eps (a relative precision far below the table's)."""

CAP = 1e6
"""Errors of cells with no successful fit, for interpolation (they then dominate any mean)."""


@dataclass(frozen=True)
class Prediction:
    """One candidate's predicted error in each reference scenario and its failure rate."""

    label: str
    dev: tuple[float, ...]
    rel: tuple[float, ...]
    failure: float
    refused: bool = False

    @property
    def typical_dev(self) -> float:
        """The median over the scenarios of the predicted deviation (unit scale)."""
        return float(np.median(self.dev))

    @property
    def typical_rel(self) -> float:
        """The median over the scenarios of the deviation in units of the non-private standard error."""
        return float(np.median(self.rel))


@dataclass(frozen=True)
class _Grid:
    """One candidate's calibrated cells on the (log n, log eps, log d) grid."""

    axes: tuple[np.ndarray, np.ndarray, np.ndarray]
    dev: np.ndarray  # (n, eps, d, scenario), log
    rel: np.ndarray
    failure: np.ndarray  # (n, eps, d)
    refused: np.ndarray  # (n, eps, d), bool


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, _Grid]:
    raw = json.loads(resources.files(__package__).joinpath("error_table.json").read_text())
    grids: dict[str, _Grid] = {}
    for label in dict.fromkeys(cell["candidate"] for cell in raw["cells"]):
        cells = [c for c in raw["cells"] if c["candidate"] == label]
        ns, es, ds = (sorted({c[k] for c in cells}) for k in ("n", "eps", "d"))
        shape = (len(ns), len(es), len(ds))
        scen = max(len(c["scenarios"]) for c in cells)
        dev, rel = np.full((*shape, scen), math.log(CAP)), np.full((*shape, scen), math.log(CAP))
        failure, refused = np.ones(shape), np.ones(shape, dtype=bool)
        for c in cells:
            at = (ns.index(c["n"]), es.index(c["eps"]), ds.index(c["d"]))
            refused[at] = c["refused"]
            if c["refused"]:
                continue
            dev[at] = [math.log(min(max(s["dev"], 1e-12), CAP)) for s in c["scenarios"]]
            rel[at] = [math.log(min(max(s["rel"], 1e-12), CAP)) for s in c["scenarios"]]
            failure[at] = max(s["failure"] for s in c["scenarios"])
        axes = (np.log(ns), np.log(es), np.log(ds))
        grids[label] = _Grid(axes, dev, rel, failure, refused)
    return grids


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


def _nearest(axis: np.ndarray, value: float) -> int:
    """The grid point closest to ``value`` (clamped to the grid)."""
    return int(np.argmin(np.abs(axis - value)))


def _interpolate(values: np.ndarray, grid: _Grid, point: tuple[float, float, float]) -> np.ndarray:
    out = 0.0
    wn = _weights(grid.axes[0], point[0], extend=True)
    we = _weights(grid.axes[1], point[1], extend=point[1] < grid.axes[1][0])
    wd = _weights(grid.axes[2], point[2], extend=False)
    for i, a in wn:
        for j, b in we:
            for k, c in wd:
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
    """The candidate's predicted error for ``facts``: the calibrated table at :func:`calibrated_eps`."""
    grid = _table()[candidate.label]
    point = (math.log(facts.n), math.log(calibrated_eps(candidate, facts)), math.log(candidate.dimension(facts)))
    nearest = tuple(
        max(_weights(axis, value, extend=False), key=lambda w: w[1])[0]
        for axis, value in zip(grid.axes, point, strict=True)
    )
    if grid.refused[nearest]:
        return Prediction(candidate.label, (math.inf,), (math.inf,), 1.0, refused=True)
    dev = np.minimum(np.exp(_interpolate(grid.dev, grid, point)), CAP)
    rel = np.minimum(np.exp(_interpolate(grid.rel, grid, point)), CAP)
    failure = float(np.clip(_interpolate(grid.failure, grid, point), 0.0, 1.0))
    return Prediction(candidate.label, tuple(map(float, dev)), tuple(map(float, rel)), failure)

"""DP Theil-Sen for one regressor plus intercept (Alabi, McMillan, Sarathy, Smith, Vadhan 2022, Alg. 2-5).

The data are mapped to [0, 1]^2 by the declared bounds
(:class:`~dpstats.design.matrix.CenteredUnitScale`, an exact affine map since the
model has an intercept). The mechanism releases the predictions at x = 1/4 and
x = 3/4 of the x range, p25 and p75, each as a DP median of pairwise
estimates (Algorithm 2), and derives slope = 2 (p75 - p25) and intercept =
1.5 p25 - 0.5 p75 on the unit scale, mapped back to the user's units.

Estimand. As eps grows the release tends to the all-pairs Theil-Sen line
(tests/test_theilsen.py), not to least squares: the two agree when y is linear
in x with errors symmetric given x, and differ on curved or skewed data (on
engel's Engel curve the slopes are 0.57 and 0.49, and at eps = 5 the intervals
covered OLS's in 1 and 6 of 10 seeds in two runs of 10). Whether the data are such is not public, so
every fit names the gap as a bias its interval does not cover
(:data:`ESTIMAND_BIAS`; status "biased"), and auto takes Theil-Sen only where no
unbiased mechanism is predicted usable (dpstats/planning/selection.py).

Pairs (Algorithm 2, Lemma 20; :mod:`.matchings`). ``k`` perfect matchings of
the circle-method decomposition of K_n are sampled without replacement after a
uniformly random permutation of the rows; ``k="all"`` (the maximum: n - 1
matchings for even n, n for odd n) is every pair. Odd n gets a phantom vertex
(each row idles in one matching), never a truncation. One row enters at most
L = min(k, n - 1) estimates: the Lipschitz constant of the pairing, by which
the medians' budget is divided (Lemma 5).

Budget. p25 and p75 share ``(1 - se_share) eps`` equally (the authors' code
spent eps on each, so the pair cost 2 eps); the standard errors spend the
rest. All of it is reported in ``res.privacy.split``; ``se_share=0`` with
``candidates="continuous"`` (or the other medians) is the paper's mechanism
draw for draw, at eps/2 per prediction.

Medians (option ``median``; :mod:`.dp_median`, :mod:`.grid_median`,
:mod:`.smooth_sensitivity`):

* ``"exp"``: the exponential mechanism's utility of Algorithm 3 at eps/2 with
  utility sensitivity L (the paper's eps' = (eps/2)/k), over the output range
  (``candidates="continuous"``: Algorithm 3) or over the centres of a public
  lattice of cells, chosen by permute-and-flip (:mod:`.grid_median`; an
  integer ``candidates`` is the number of cells). The default ``"auto"``
  takes the lattice, with the number of cells its rule gives from n and eps,
  whenever that rule asks for at most 65,535 cells (n eps_point below about
  100, eps_point the budget of one prediction), and Algorithm 3 above;
* ``"wide"``: the theta-widened exponential mechanism (Algorithm 4);
* ``"smooth"``: median + (S/s) T with T Student-t(df), S Lemma 10's t-smooth
  bound for L changed estimates, t = (eps/2) beta/(df + 1) and
  s = 2 sqrt(df) ((eps/2) - t (df + 1))/(df + 1) (Lemma 21). No division by L:
  S already accounts for the L estimates one row moves.

Both exponential medians are sampled exactly (in integer arithmetic, float-safe
with theta = 0). Up to 65,536 estimates (k
matchings, or all pairs for n <= 181) they are listed and Algorithm 3/4 runs
literally (an exact choice over every interval); beyond, an adaptive rejection
sampler needs only counts of estimates below a threshold. For all pairs with
more than 16,384 pairs those counts come from an O(n log n) exact counting
engine (:mod:`.pair_counting`) that never lists the n(n - 1)/2 estimates, so
the all-pairs median costs about a dozen sorts of n numbers and O(n) memory.
(The listed estimates are Algorithm 2's floating-point values; the counting
engine compares the exact real estimates: the two mechanisms differ only by
float rounding of the estimates, and each is exactly eps-DP.)

Conventions (decided here, documented in the user guide):

* ``output_range`` (r_l, r_u) is given in the units of y: the range searched
  for each prediction. It must contain the declared bounds of y. The default
  is Table 1's (-0.5, 1.5) on the unit scale, i.e. the bounds of y widened by
  half their width on each side.
* ``k`` defaults to all pairs for ``exp`` and ``wide`` and to 3 matchings for
  ``smooth`` (Table 1 and the authors' code, docs/ALGORITHMS.md), capped at
  the number of matchings for tiny n; on the candidate grid, to all pairs up
  to 65,536 of them and beyond to the most matchings with at most 65,536
  estimates (:func:`.grid_median.grid_matchings`: the privacy error does not
  depend on k). ``k`` counts matchings: for odd n, all pairs is k = n.
* theta (default 0.01), df (default 3) and beta (default 1/2) are on the
  unit scale / dimensionless, as in Table 1.

Standard errors (:mod:`.inference`): a DP window of the pair estimates
around each prediction gives their density, DP moments of the rows' pair
signs the U-statistic variance of the counts, and a rank-level parametric
bootstrap adds each median's own noise law; intervals are basic bootstrap
intervals. ``se_share`` defaults to :func:`.inference.default_share`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ...design.matrix import CenteredUnitScale, Design, place_coefficients
from ...privacy import noise
from ...privacy.accounting import PrivacySpent
from ..base import PrivacyRequest, Release, refuse_rho
from . import dp_median, grid_median, inference, matchings, release_laws, smooth_sensitivity, spread
from .banded_pairs import all_pairs_vector
from .pair_estimates import all_pairs, n_pairs
from .pair_sources import CountedPairs, ListedPairs

DEFAULTS: dict[str, object] = {
    "median": "exp",
    "k": None,
    "theta": 0.01,
    "df": 3.0,
    "beta": 0.5,
    "output_range": None,
    "candidates": "auto",
}
MEDIANS = ("exp", "wide", "smooth")
CANDIDATE_NAMES = ("auto", "continuous")
DEFAULT_K: dict[str, int | str] = {"exp": matchings.ALL, "wide": matchings.ALL, "smooth": 3}
TABLE1_UNIT_RANGE = (-0.5, 1.5)
MAX_UNIT_RANGE = 1e9
EXPLICIT_PAIRS_MAX = 1 << 14
POINTS = (("p25", 0.25), ("p75", 0.75))
SE_NOTE = (
    "SEs and basic bootstrap intervals cover sampling error and privacy noise: a rank-level parametric bootstrap "
    "from a DP window of the pair estimates (their density) and DP moments of the rows' pair signs (the U-statistic "
    "variance), released with se_share of eps, and each median's own noise law."
)
ESTIMAND_BIAS = (
    "the gap between the Theil-Sen line (the medians of the pairwise predictions, which the release tends to as "
    "eps grows) and least squares: none when y is linear in x with errors symmetric given x, and kept at any eps "
    "on curved or skewed data"
)
"""Why every Theil-Sen fit is flagged "biased" in ``dp_ols`` (module docstring, **Estimand**)."""
NO_SE_NOTE = "se_share=0: no budget was spent on standard errors, so SEs, tests and intervals are NaN."


def _real(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def check_options(options: Mapping[str, object]) -> dict[str, object]:
    """Validate the options that do not depend on the data's size or bounds; ValueError names the option."""
    unknown = sorted(set(options) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} for method='theilsen' (known: {', '.join(sorted(DEFAULTS))})")
    opts = {**DEFAULTS, **options}
    if opts["median"] not in MEDIANS:
        raise ValueError(f"median must be one of {', '.join(map(repr, MEDIANS))}, got {opts['median']!r}")
    if _real(opts["theta"], "theta") <= 0:
        raise ValueError(f"theta must be > 0 (the widening of Algorithm 4), got {opts['theta']!r}")
    if _real(opts["df"], "df") <= 0:
        raise ValueError(f"df must be > 0 (Student-t degrees of freedom), got {opts['df']!r}")
    beta = _real(opts["beta"], "beta")
    if not 0.0 < beta < 1.0:
        raise ValueError(f"beta must be in (0, 1) (Lemma 21 needs |t| (df + 1) < eps), got {opts['beta']!r}")
    k = opts["k"]
    named = k is None or (isinstance(k, str) and k == matchings.ALL)
    if not named and (isinstance(k, bool) or not isinstance(k, numbers.Real) or not float(k).is_integer() or k < 1):
        raise ValueError(f"k must be a positive integer (number of matchings) or 'all', got {k!r}")
    _check_candidates(opts["candidates"], str(opts["median"]))
    rng_opt = opts["output_range"]
    if rng_opt is not None:
        try:
            lo, hi = rng_opt  # type: ignore[misc]
        except (TypeError, ValueError):
            raise ValueError("output_range must be a pair (r_l, r_u) in the units of y") from None
        if _real(lo, "output_range[0]") >= _real(hi, "output_range[1]"):
            raise ValueError(f"output_range must have r_l < r_u, got {rng_opt!r}")
    return opts


def _check_candidates(candidates: object, median: str) -> None:
    """``candidates``: "auto", "continuous" or a number of cells in 1..MAX_CANDIDATES, for ``median="exp"`` only."""
    if isinstance(candidates, str) and candidates in CANDIDATE_NAMES:
        if candidates != "auto" and median != "exp":
            raise ValueError(f"candidates applies to median='exp' only, got median={median!r}")
        return
    top = grid_median.MAX_CANDIDATES
    if isinstance(candidates, bool) or not isinstance(candidates, numbers.Integral) or not 1 <= candidates <= top:
        raise ValueError(f"candidates must be 'auto', 'continuous' or an integer in 1..{top}, got {candidates!r}")
    if median != "exp":
        raise ValueError(f"candidates applies to median='exp' only, got median={median!r}")


def check_request(privacy: PrivacyRequest, options: Mapping[str, object]) -> None:
    """Pure eps-DP: delta must be 0; the options are checked before any data are read."""
    refuse_rho(privacy, "theilsen")
    if privacy.delta > 0:
        raise ValueError("method='theilsen' is pure DP: delta must be 0")
    check_options(options)


def unit_output_range(output_range: object, y_bounds: tuple[float, float]) -> tuple[float, float]:
    """The output range on the unit scale of y; it must contain the declared bounds of y."""
    y_lo, y_hi = float(y_bounds[0]), float(y_bounds[1])
    width = y_hi - y_lo
    if output_range is None:
        return TABLE1_UNIT_RANGE
    lo, hi = (float(v) for v in output_range)  # type: ignore[union-attr]
    if lo > y_lo or hi < y_hi:
        raise ValueError(
            f"output_range ({lo:g}, {hi:g}) must contain the declared bounds of y ({y_lo:g}, {y_hi:g}): "
            "it is the range searched for predictions, in the units of y"
        )
    unit = ((lo - y_lo) / width, (hi - y_lo) / width)
    if max(abs(unit[0]), abs(unit[1])) > MAX_UNIT_RANGE:
        raise ValueError("output_range is more than 1e9 times wider than the bounds of y")
    return unit


def fit(design: Design, privacy: PrivacyRequest, rng: np.random.Generator, **options: object) -> Release:
    """DP Theil-Sen on ``design`` (module docstring); options as in :data:`DEFAULTS`."""
    opts = check_options(options)
    if design.intercept_index is None:
        raise ValueError("method='theilsen' needs an intercept (it estimates the line through p25 and p75)")
    if design.slope_indices.size != 1:
        raise ValueError("method='theilsen' fits one regressor plus intercept")
    n = design.n
    median = str(opts["median"])
    plan = _plan(n, privacy, opts)
    k, lipschitz, total, share = plan.k, plan.lipschitz, plan.total, plan.share
    lo, hi = unit_output_range(opts["output_range"], design.y_bounds)
    scale = CenteredUnitScale.from_design(design)
    u, v = scale.transform(design)
    x = u[:, 0]
    everything = plan.everything
    listed = not everything or n_pairs(n) <= (grid_median.LISTED_MAX if plan.grid else EXPLICIT_PAIRS_MAX)
    budget = inference.split(privacy.eps, share)
    count = _cells(opts["candidates"], budget.point, total, lipschitz) if plan.grid else None
    pairs = (all_pairs(n) if everything else matchings.sample_matchings(rng, n, k)) if listed else None
    sources = {
        name: ListedPairs(x, v, pairs, x0) if pairs is not None else CountedPairs(x, v, x0) for name, x0 in POINTS
    }

    released = {}
    for name, x0 in POINTS:
        source = sources[name]
        if median == "smooth":
            released[name] = _smooth_release(rng, x, v, source, x0, lo, hi, lipschitz, budget.point, opts, name)
        elif count is not None:
            oracle = source.median_oracle(lo, hi)
            released[name] = grid_median.release(rng, oracle, lo, hi, count, lipschitz, budget.point, name)
        else:
            theta = float(opts["theta"]) if median == "wide" else 0.0
            oracle = source.median_oracle(lo, hi)
            released[name] = dp_median.release(rng, oracle, lo, hi, lipschitz, budget.point, theta, name)

    p25, p75 = released["p25"], released["p75"]
    coef_unit = np.array([1.5 * p25 - 0.5 * p75, 2.0 * (p75 - p25)])
    theta_user = scale.jacobian() @ coef_unit + scale.offset()
    p = design.n_columns
    split = (("p25", budget.point), ("p75", budget.point))
    if share > 0:
        windows = tuple((f"SE: window {name}", budget.window) for name, _ in POINTS)
        split += (*windows, ("SE: rank moments", budget.moments))
    exact = median == "exp"  # the grid and Algorithm 3 are sampled exactly; Algorithms 4 and 5 are not
    caveats = () if exact else (f"median={median!r}: {noise.FLOAT_CAVEAT}",)
    spent = PrivacySpent(notion="pure", eps=privacy.eps, split=split, caveats=caveats, proven=exact)
    hyper: dict[str, object] = {
        "median": median,
        "k": k,
        "pairs": "all" if everything else f"{k} matchings",
        "lipschitz": lipschitz,
        "output_range": (scale.y_lo + scale.y_width * lo, scale.y_lo + scale.y_width * hi),
    }
    if median == "exp":
        hyper["candidates"] = count if count is not None else "continuous"
    if median == "wide":
        hyper["theta"] = float(opts["theta"])
    if median == "smooth":
        hyper.update(df=float(opts["df"]), beta=float(opts["beta"]))
    noisy_stats = {name: np.asarray(scale.y_lo + scale.y_width * released[name]) for name, _ in POINTS}
    params = place_coefficients(design, float(theta_user[0]), theta_user[1:])
    if share == 0:
        cov, replicates, note = np.full((p, p), np.nan), None, NO_SE_NOTE
    else:
        predictions = np.array([p25, p75])
        se = _se_releases(rng, sources, predictions, lo, hi, lipschitz, budget, listed)
        laws = tuple(
            _error_law(median, opts, lipschitz, budget.point, sources[name].total, c, lo, hi, count)
            for (name, _), c in zip(POINTS, predictions, strict=True)
        )
        draws = inference.replicates(noise.postprocessing_rng(rng), se, laws)
        unit = np.column_stack([1.5 * draws[:, 0] - 0.5 * draws[:, 1], 2.0 * (draws[:, 1] - draws[:, 0])])
        user = unit @ scale.jacobian().T + scale.offset()
        replicates = np.empty_like(user)
        replicates[:, design.intercept_index] = user[:, 0]
        replicates[:, design.slope_indices[0]] = user[:, 1]
        cov, note = inference.quantile_covariance(replicates), SE_NOTE
    return Release(
        params=params,
        cov=cov,
        privacy=spent,
        se_note=note,
        noisy_stats=noisy_stats,
        hyperparameters=hyper,
        replicates=replicates,
        bias=ESTIMAND_BIAS,
    )


@dataclass(frozen=True)
class _Plan:
    """The pairs and the budget's split of a fit, from public facts (n, the request, the options)."""

    grid: bool
    k: int
    lipschitz: int
    everything: bool
    total: int
    share: float


def _plan(n: int, privacy: PrivacyRequest, opts: Mapping[str, object]) -> _Plan:
    """Which median runs where, how many matchings, their Lipschitz constant, the pairs and the SE share."""
    median = str(opts["median"])
    grid = _on_grid(opts["candidates"], median, n, privacy)
    k = matchings.resolve_k(opts["k"], n, grid_median.grid_matchings(n) if grid else DEFAULT_K[median])
    lipschitz = matchings.lipschitz_constant(n, k)
    everything = k == matchings.rounds_max(n)
    total = n_pairs(n) if everything else k * (n // 2)
    share = privacy.share(inference.default_share(lipschitz, total, privacy.eps))
    return _Plan(grid, k, lipschitz, everything, total, share)


def se_share(n: int, columns: int, privacy: PrivacyRequest, options: Mapping[str, object]) -> float:
    """The part of eps the standard errors spend (the user's ``se_share``, else the default for n and eps)."""
    return _plan(n, privacy, check_options(options)).share


def _on_grid(candidates: object, median: str, n: int, privacy: PrivacyRequest) -> bool:
    """Whether the exponential median runs on the candidate grid: public facts only (grid_median.py).

    ``"auto"`` asks :func:`grid_median.auto_candidates` with every pair (the
    exponent A is the same for any number of matchings, up to n odd).
    """
    if median != "exp" or candidates == "continuous" or n < 2:
        return False
    if candidates != "auto":
        return True
    pairs, lipschitz = n_pairs(n), n - 1
    share = privacy.share(inference.default_share(lipschitz, pairs, privacy.eps))
    point = inference.split(privacy.eps, share).point
    return grid_median.auto_candidates(point, pairs, lipschitz) is not None


def _cells(candidates: object, eps: float, pairs: int, lipschitz: int) -> int:
    """The number of cells: the user's, or the rule's for the pairs actually used (at most MAX_CANDIDATES)."""
    if isinstance(candidates, numbers.Integral):
        return int(candidates)
    return grid_median.auto_candidates(eps, pairs, lipschitz) or grid_median.MAX_CANDIDATES


def _se_releases(
    rng: np.random.Generator,
    sources: Mapping[str, ListedPairs | CountedPairs],
    predictions: np.ndarray,
    lo: float,
    hi: float,
    lipschitz: int,
    budget: inference.Split,
    listed: bool,
) -> inference.Released:
    """The standard errors' releases (dpstats/mechanisms/theilsen/inference.py): two windows, then the moments."""
    total = sources["p25"].total
    tau = spread.window_rank(total, lipschitz, budget.window)
    windows = []
    for (name, _), prediction in zip(POINTS, predictions, strict=True):
        center = min(hi, max(lo, float(prediction)))
        oracle = sources[name].window_oracle(center, lo, hi, tau)
        windows.append(spread.release_window(rng, oracle, lo, hi, lipschitz, budget.window, f"SE: window {name}"))
    signs = [sources[name].signs(float(t)) for (name, _), t in zip(POINTS, predictions, strict=True)]
    sensitivity = inference.moments_sensitivity(lipschitz, listed)
    value = inference.moments(signs[0], signs[1], lipschitz)
    noisy = np.atleast_1d(noise.laplace_mechanism(rng, value, sensitivity, budget.moments, "SE: rank moments"))
    return inference.Released(
        predictions=predictions,
        windows=np.array(windows),
        tau=tau,
        moments=noisy,
        moments_scale=sensitivity / budget.moments,
        pairs=total,
        lipschitz=lipschitz,
        window_eps=budget.window,
    )


def _error_law(
    median: str,
    opts: Mapping[str, object],
    lipschitz: int,
    eps: float,
    pairs: int,
    prediction: float,
    lo: float,
    hi: float,
    count: int | None,
) -> inference.ErrorLaw:
    """The law of one median's privacy error given the density (dpstats/mechanisms/theilsen/release_laws.py)."""
    if count is not None:
        width = (hi - lo) / count
        return lambda gen, g: release_laws.grid_errors(gen, g, lipschitz, eps, width)
    if median == "exp":
        return lambda gen, g: release_laws.laplace_errors(gen, g, lipschitz, eps)
    if median == "wide":
        theta = float(opts["theta"])
        return lambda gen, g: release_laws.widened_errors(gen, g, lipschitz, eps, theta)
    df, beta = float(opts["df"]), float(opts["beta"])
    t, s = smooth_sensitivity.student_t_parameters(eps, df, beta)
    center = min(hi, max(lo, prediction))
    floor, last_local = release_laws.smooth_floor(pairs, lipschitz, t, center, lo, hi)
    return lambda gen, g: release_laws.smooth_errors(
        gen, g, release_laws.unit_rate_bounds(gen, lipschitz, t, last_local), floor, s, df
    )


def _smooth_release(
    rng: np.random.Generator,
    x: np.ndarray,
    y: np.ndarray,
    source: ListedPairs | CountedPairs,
    x0: float,
    lo: float,
    hi: float,
    lipschitz: int,
    eps: float,
    opts: Mapping[str, object],
    name: str,
) -> float:
    """Algorithm 5 with Lemma 10's smooth sensitivity and Lemma 21's parameters, recorded."""
    df, beta = float(opts["df"]), float(opts["beta"])
    t, s = smooth_sensitivity.student_t_parameters(eps, df, beta)
    if isinstance(source, CountedPairs):  # all pairs: only the band of ranks Lemma 10 reads (memory linear in n)
        w = all_pairs_vector(x, y, x0, lo, hi, lipschitz, t)
    else:
        w = smooth_sensitivity.DoubledVector(*source.sorted_valid(lo, hi), lo, hi)
    bound = smooth_sensitivity.smooth_sensitivity(w, lipschitz, t)
    return float(noise.smooth_sensitivity_t_mechanism(rng, w.median(), bound, s, t, df, eps, name))

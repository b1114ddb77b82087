"""Intervals that carry a bound on the bias, and when a fit is called "biased" (issue 45).

Some mechanisms keep a bias their standard errors do not describe: the
perturbed histogram's binning, NoisyStats' repair of a noisy Gram matrix,
KNG's pull towards its domain's boundary, Theil-Sen's estimand. Where the
release bounds it per coefficient, ``|bias_j| <= B_j`` (``Release.bias_bound``,
post-processing of the release and public facts), the interval carries it as
Armstrong & Kolesár (2020) do for nonparametric regression: with the estimate
approximately ``N(theta_j + bias_j, se_j^2)`` and ``|bias_j| <= B_j``, the
interval ``theta^_j -/+ cv_alpha(B_j / se_j) se_j`` covers ``theta_j`` with
probability at least ``1 - alpha`` for every bias in the bound, where
``cv_alpha(t)`` is the ``1 - alpha`` quantile of ``|N(t, 1)|``
(:func:`critical_value`). At ``t = 0`` it is the usual ``z_{1 - alpha/2}``; for
large ``t`` it is about ``t + z_{1 - alpha}``, so the interval widens by the
bound and little more. A bootstrap interval is widened on each side by
``(cv_alpha(t) - z_{1 - alpha/2}) se_j`` (:func:`widened`), the p-values are
those of the widened intervals (:func:`widened_pvalues`).

**The class.** A bias that depends on the true coefficients is bounded over
a class of them, as Armstrong & Kolesár bound a regression function's
curvature: on the unit scale (every non-intercept design column and the
response mapped onto [0, 1] by their declared bounds,
dpstats/design/matrix.py, ``CenteredUnitScale``), in the columns the
mechanism solves in, every slope is at most ``EFFECT_BOUND`` in absolute
value: no term moves y by more than that many times y's declared range
across the term's own declared range. Of the ten real regressions of
benchmarks/real_regressions.py, in NoisyStats' columns (a variable and its
square preconditioned, dpstats/mechanisms/precondition.py) the
largest is 1.70 (SwissLabor's age) and the rest are at most 0.97 (engel's
income over its declared bounds; benchmarks/bench_effect_class.py).

**Status.** A fit is "biased" where, for some coefficient, the bound exceeds
``DOMINATES`` standard errors: the bias can then be the larger part of the
estimate's error, and the estimate can sit more than its standard errors from
the truth; its interval still carries the bound. Where every bound is at most
that, the bias is small next to the noise, the interval holds it, and the fit
is "ok". A bias that nothing bounds (``B_j`` infinite: Theil-Sen's estimand,
KNG's boundary pull) makes the fit "biased" and leaves its interval as the
mechanism gives it, with the status naming the bias. A fit without standard
errors is "biased" wherever its bound is positive: no interval carries it.

**What a bound over a class costs.** The bound is the bias's worst case over
the class (intersected with what the release says about the coefficients),
not its realized value: where the true coefficients sit well inside the
class the interval over-covers, and a fit can be "biased" with a small
realized error (benchmarks/bench_real_data.py's ``>2se`` column measures how
often). That is the price of honesty, not a slack a cleverer interval could
remove: for a bias linear in coefficients that range over a convex
centrosymmetric class, as here, an interval that covers over the whole class
cannot be much shorter, even where the bias is nil, than the one built for
the worst case (Armstrong & Kolesár 2018). Shorter intervals need a smaller class,
that is, a stronger assumption, or more released information.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
from scipy import optimize, stats

from .intervals import confidence_intervals, pvalues

EFFECT_BOUND = 2.0
"""The class of true coefficients bias bounds hold over: unit-scale slopes at most this (module docstring)."""
DOMINATES = 1.0
"""A fit is "biased" where some coefficient's bias bound exceeds this many of its standard errors (module
docstring, **Status**)."""


def critical_value(t: np.ndarray | float, alpha: float) -> np.ndarray:
    """``cv_alpha(t)``: the ``1 - alpha`` quantile of ``|N(t, 1)|`` (Armstrong & Kolesár 2020), elementwise;
    infinite where ``t`` is."""
    t = np.abs(np.atleast_1d(np.asarray(t, dtype=float)))
    out = np.full(t.shape, np.inf)
    for i, value in enumerate(t):
        if np.isfinite(value):
            out[i] = _critical_value(float(value), alpha)
    return out


FAR_BIAS = 1e6
"""Beyond this ``t`` the critical value is ``t + z_{1 - alpha}``: the lower tail ``Phi(-c - t)`` is nil in double
precision, and ``t + z + 1 - t`` would no longer resolve the search's bracket (a bound of 1e28 standard errors made
it raise)."""


def _critical_value(t: float, alpha: float) -> float:
    def coverage_gap(c: float) -> float:
        return stats.norm.cdf(c - t) - stats.norm.cdf(-c - t) - (1.0 - alpha)

    if t > FAR_BIAS:
        return t + NormalDist().inv_cdf(1.0 - alpha)
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    return float(optimize.brentq(coverage_gap, z - 1e-12, t + z + 1.0, xtol=1e-12))


def widened(
    lower: np.ndarray, upper: np.ndarray, se: np.ndarray, bound: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """The interval ``[lower, upper]`` widened on each side by ``(cv_alpha(B / se) - z) se`` (module docstring);
    unchanged where the bound is 0 or infinite, or the standard error is not finite and positive."""
    bound, se = np.asarray(bound, dtype=float), np.asarray(se, dtype=float)
    usable = np.isfinite(bound) & (bound > 0) & np.isfinite(se) & (se > 0)
    extra = np.zeros(bound.shape)
    if usable.any():
        z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
        extra[usable] = (critical_value(bound[usable] / se[usable], alpha) - z) * se[usable]
    return np.asarray(lower, dtype=float) - extra, np.asarray(upper, dtype=float) + extra


def widened_pvalues(p: np.ndarray, se: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """Two-sided p-values that invert the widened intervals: a p-value ``p`` is read as ``|z| = z_{1 - p/2}``
    and becomes ``P(|N(t, 1)| > |z|)`` with ``t = B / se``, the largest the bias allows (module docstring)."""
    p, bound, se = (np.asarray(a, dtype=float) for a in (p, bound, se))
    usable = np.isfinite(bound) & (bound > 0) & np.isfinite(se) & (se > 0) & np.isfinite(p)
    out = p.copy()
    if usable.any():
        z = stats.norm.isf(p[usable] / 2.0)
        t = bound[usable] / se[usable]
        out[usable] = np.minimum(stats.norm.sf(z - t) + stats.norm.sf(z + t), 1.0)
    return out


def dominates(bound: np.ndarray, se: np.ndarray) -> np.ndarray:
    """Per coefficient: can the bias dominate (module docstring, **Status**)? A positive bound next to a
    standard error that is not finite and positive counts."""
    bound, se = np.asarray(bound, dtype=float), np.asarray(se, dtype=float)
    with np.errstate(invalid="ignore"):
        measured = np.isfinite(se) & (se > 0)
        return np.where(measured, bound > DOMINATES * np.where(measured, se, 1.0), bound > 0)


def box_reach(rows: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The largest ``|rows @ beta|`` over the box ``|beta_k| <= sizes_k`` (``rows``: ... x p), that is
    ``|rows| @ sizes``, for sizes that may be infinite: an infinite size times a zero entry counts 0."""
    finite = np.isfinite(sizes)
    with np.errstate(invalid="ignore"):
        reach = np.abs(rows) @ np.where(finite, sizes, 0.0)
        unbounded = np.abs(rows) @ (~finite).astype(float) > 0
    return np.where(unbounded, np.inf, reach)


def largest_ratio(bound: np.ndarray, se: np.ndarray) -> float:
    """The largest bias bound in standard errors over the coefficients: 0 without a bias, infinite where a
    bias is unbounded or a bounded one has no finite, positive standard error."""
    bound, se = np.asarray(bound, dtype=float), np.asarray(se, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        usable = np.isfinite(se) & (se > 0)
        ratio = np.where(bound > 0, bound / np.where(usable, se, 0.0), 0.0)
    return float(np.max(ratio, initial=0.0))


def bounds_of(source: str | None, bound: np.ndarray | None, size: int) -> np.ndarray:
    """The per-coefficient bound a release carries: 0 where it names no bias, infinite where it names one that
    nothing bounds (a NaN bound too)."""
    if source is None:
        return np.zeros(size)
    if bound is None:
        return np.full(size, np.inf)
    bound = np.asarray(bound, dtype=float).reshape(size)
    return np.where(np.isnan(bound), np.inf, bound)


def status(failed: bool, bound: np.ndarray, se: np.ndarray) -> str:
    """ "failed", "biased" (some coefficient's bias can dominate its standard error) or "ok" (module docstring,
    **Status**)."""
    if failed:
        return "failed"
    return "biased" if bool(np.any(dominates(bound, se))) else "ok"


def bias_aware_intervals(
    params: np.ndarray, cov: np.ndarray, replicates: np.ndarray | None, alpha: float, kind: str, bound: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The fit's intervals at level ``1 - alpha`` (dpstats/uncertainty/intervals.py) widened by the bias bound
    (:func:`widened`)."""
    lower, upper = confidence_intervals(params, cov, replicates, alpha, kind)
    return widened(lower, upper, standard_errors(cov), bound, alpha)


def bias_aware_pvalues(
    params: np.ndarray, cov: np.ndarray, replicates: np.ndarray | None, kind: str, bound: np.ndarray
) -> np.ndarray:
    """The fit's p-values (dpstats/uncertainty/intervals.py) made to invert the widened intervals."""
    return widened_pvalues(pvalues(params, cov, replicates, kind), standard_errors(cov), bound)


def standard_errors(cov: np.ndarray) -> np.ndarray:
    """The square roots of the covariance's diagonal (NaN where negative)."""
    with np.errstate(invalid="ignore"):
        return np.sqrt(np.diag(np.asarray(cov, dtype=float)))

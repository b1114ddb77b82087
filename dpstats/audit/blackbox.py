"""Black-box neighbour audit through the public API: a lower bound on a whole call's eps from its outputs alone.

docs/PRIVACY_TESTING.md, "An audit that fits in CI", steps 3 and 4: where the
gray-box audit (dpstats/audit/graybox.py) samples one internal release of a core
mechanism, this one runs a public call (``dp_logit(..., weights="wt",
random_state=seed)``) ``runs`` times on each of two neighbouring data frames,
reduces each result to a vector of released numbers (the coefficients, their
standard errors), and bounds the privacy loss of the call as a whole:

1. on the first half of the runs of each side, the vector is turned into a scalar
   by Fisher's linear discriminant, ``S^+ (median(D) - median(D'))`` with ``S`` the
   covariance of the first halves about their medians (the released coefficients
   are correlated: a row's pull on the slope moves the intercept against it),
   fixed before the second halves are looked at;
2. :func:`~dpstats.audit.graybox.eps_lower_bound` then chooses an event on the
   first halves and bounds ``eps_lb = ln(p_lo / q_hi)`` with Clopper-Pearson on
   the second halves.

Everything after the call's releases is post-processing, so a call that is
eps-DP gives ``eps_lb > eps`` with probability at most ``alpha``: the
false-failure rate of one audit. A result whose numbers are not finite (a fit
that failed, ``res.failed``) projects to NaN, the event "release missing".

The runs use distinct integer seeds (``random_state``): ``seed, seed + 1, ...``
on D and the next ``runs`` integers on D', so every run is independent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .frame_pairs import FramePair
from .graybox import GrayBoxResult, eps_lower_bound

PublicCall = Callable[[pd.DataFrame, int], Any]
"""``call(data, seed)``: a public API call on ``data`` at ``random_state=seed``; returns its result."""


def released_numbers(result: Any) -> np.ndarray:
    """The default numbers a result is reduced to: its coefficients and their standard errors."""
    return np.concatenate([np.asarray(result.params, dtype=float), np.asarray(result.bse, dtype=float)])


@dataclass(frozen=True)
class CallSamples:
    """The numbers released by ``runs`` calls on each side of a pair (rows), and the (eps, delta) they claimed."""

    d: np.ndarray
    d_prime: np.ndarray
    eps: float
    delta: float


def sample_calls(
    call: PublicCall,
    pair: FramePair,
    runs: int,
    seed: int = 0,
    released: Callable[[Any], np.ndarray] = released_numbers,
) -> CallSamples:
    """``runs`` calls on each side of ``pair`` from independent seeds (module docstring), reduced by ``released``.

    Every call must claim the same (eps, delta) in ``result.privacy``: a claim
    that depends on the data would itself be a leak.
    """
    if runs < 4:
        raise ValueError("need at least 4 runs on each side")
    claims: set[tuple[float, float]] = set()

    def side(data: pd.DataFrame, first: int) -> np.ndarray:
        rows = []
        for s in range(first, first + runs):
            result = call(data, s)
            claims.add((float(result.privacy.eps), float(result.privacy.delta)))
            rows.append(np.asarray(released(result), dtype=float).ravel())
        return np.vstack(rows)

    d, d_prime = side(pair.d, seed), side(pair.d_prime, seed + runs)
    if len(claims) != 1:
        raise AssertionError(f"the calls claimed different budgets: {sorted(claims)}")
    eps, delta = claims.pop()
    return CallSamples(d, d_prime, eps, delta)


def _finite_rows(samples: np.ndarray) -> np.ndarray:
    return samples[np.all(np.isfinite(samples), axis=1)]


def discriminant(samples_d: np.ndarray, samples_dp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scalar samples: each run's vector projected on a direction fixed on the first halves (module docstring).

    A run with a non-finite number gives NaN (the release is missing).
    """
    a, b = np.asarray(samples_d, dtype=float), np.asarray(samples_dp, dtype=float)
    a1, b1 = _finite_rows(a[: a.shape[0] // 2]), _finite_rows(b[: b.shape[0] // 2])
    if a1.shape[0] == 0 or b1.shape[0] == 0:
        return np.full(a.shape[0], np.nan), np.full(b.shape[0], np.nan)
    scatter = np.cov(np.vstack([a1 - np.median(a1, axis=0), b1 - np.median(b1, axis=0)]), rowvar=False)
    direction = np.linalg.pinv(np.atleast_2d(scatter)) @ (np.median(a1, axis=0) - np.median(b1, axis=0))

    def project(samples: np.ndarray) -> np.ndarray:
        finite = np.all(np.isfinite(samples), axis=1)
        return np.where(finite, np.where(finite[:, None], samples, 0.0) @ direction, np.nan)

    return project(a), project(b)


def blackbox_audit(
    call: PublicCall,
    pair: FramePair,
    *,
    name: str,
    runs: int = 1000,
    seed: int = 0,
    alpha: float = 1e-6,
    released: Callable[[Any], np.ndarray] = released_numbers,
) -> GrayBoxResult:
    """Audit a public call on ``pair`` against the (eps, delta) its results claim; ``P(eps_lb > eps) <= alpha``.

    The result is a :class:`~dpstats.audit.graybox.GrayBoxResult` (engine
    ``"black box"``): ``flagged`` when the outputs prove more privacy loss than
    the call claims, ``assert_within_claim()`` to raise.
    """
    samples = sample_calls(call, pair, runs, seed, released)
    scalar_d, scalar_dp = discriminant(samples.d, samples.d_prime)
    bound = eps_lower_bound(scalar_d, scalar_dp, alpha=alpha, delta=samples.delta)
    return GrayBoxResult(name, pair.label, samples.eps, bound, runs, "black box")

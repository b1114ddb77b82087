"""KNG's private quantile (an intercept alone), sampled exactly: the exponential mechanism over intervals.

With the design an intercept alone (the scaled column is 1: dpstats/mechanisms/kng/mechanism.py),
the quantile loss's gradient at phi is ``g(phi) = #{y_i <= phi} - n tau``
(Reimherr & Awan 2019, section 4.5, eq. 3; Smith's 2011 private quantile),
constant between consecutive sorted responses. The KNG density
``exp(-eps / (2 Delta) |g(phi)|)`` on ``[-B, B]`` is then the exponential
mechanism over the n + 1 intervals between ``-B``, the clipped sorted
responses and ``B``, interval i having ``#{y <= phi} = i`` and utility
``-|i - n tau|``, and it is sampled exactly by
:func:`dpstats.privacy.noise.exponential_mechanism_intervals` (an interval by
exact weights, a uniform real in it rounded down to a double; the rate
rounded down). ``n tau`` is the double nearest it, a public constant: the
utility is the paper's up to that rounding, and its sensitivity is the same.
"""

from __future__ import annotations

import numpy as np

from ...privacy import noise


def draw(rng: np.random.Generator, y: np.ndarray, tau: float, B: float, eps: float, sensitivity: float) -> np.ndarray:
    """One exact draw of the scaled intercept (a ``(1,)`` array) from the KNG density on ``[-B, B]``."""
    responses = np.sort(np.clip(np.asarray(y, dtype=float), -B, B))
    edges = np.concatenate([[-B], responses, [B]])
    utilities = -np.abs(np.arange(responses.size + 1) - responses.size * tau)
    return np.array([noise.exponential_mechanism_intervals(rng, edges, utilities, eps, sensitivity)])

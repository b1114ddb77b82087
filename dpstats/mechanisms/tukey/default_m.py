"""The default number of models m of the Tukey mechanism, from public information only.

Too few models and the PTR test fails; too many and each OLS fit sees few
rows, so even a perfect aggregate is noisy (Amin et al. 2023, section 4.3;
their rule of thumb is n of the order of 1000 d). The default is the smallest
m at which an *idealised* model cloud would pass the test with probability
``PASS_TARGET``, times a safety factor, and is a function of (n, d, eps, delta):

* Idealised models: OLS on b = floor(n/m) rows with Gaussian regressors and
  errors gives coefficients whose marginals are Student-t with
  ``nu = b - d + 1`` degrees of freedom (``beta_hat_j - beta_j`` is
  ``sigma Z / sqrt(chi2_nu)``). Approximate Tukey volumes use the marginals
  only and do not change under a shift or rescaling of a coordinate, so the
  ideal sorted coordinates are the t_nu quantiles at Blom's plotting positions
  ``(k + 1 - 3/8) / (m + 1/4)`` in each of the d coordinates: ``log V_i = d log side_i``.
* Its distance statistic D_ideal (computed by the mechanism's own
  tukey_depth.distance_to_unsafety) passes with probability ``PASS_TARGET``
  when ``D_ideal >= (log(1/(2 delta)) + log(1/(2 (1 - PASS_TARGET)))) / eps1``,
  eps1 = eps/2 (the Laplace tail).
* ``m_ideal`` is the smallest such m in [12, n // d] (bisection); the default is
  ``min(n // d, ceil(SAFETY x m_ideal))``, or ``n // d`` when no m qualifies (the
  test will then usually refuse; the result says so and reports m).

Measurements (benchmarks/bench_tukey.py, eps = ln 3, delta = 1e-5, a 95% pass
needs D >= 23.9; D of the real model cloud, mean (min) over 10 partitions):

    data                      n   d  m_ideal  D real   D ideal  m_default  D real   D ideal
    synthetic d=2          5000   2      387  23.9 (23)     24        484  45.4 (43)     45
    synthetic d=5         10000   5      510  23.8 (22)     24        638  50.0 (48)     49
    synthetic d=11        22000  11      710  24.0 (23)     24        888  54.2 (53)     54
    synthetic d=20        40000  20      973  23.4 (22)     24       1217  59.8 (58)     60
    fair yrs_married       6366   6      547  23.6 (22)     24        684  49.8 (49)     49
    randhie log1p(mdvis)  20190  10      678  21.2 (20)     24        848  45.2 (42)     53

The ideal cloud predicts the real statistic within one unit on Gaussian data
and on fair; randhie (binary regressors, a 1.5% dummy) falls 10-15% short.
D grows steeply with m, so SAFETY = 1.25 doubles it: the least D seen at the
default m is 42, and the test (Laplace scale 1/eps1 = 1.82) then fails only if
the noise falls below -18, probability 2e-5. On the real data the test passed
in 50 of 50 runs at eps = ln 3. The price is sqrt(1.25) = 1.12 times the
spread of the batch fits. With the default m, the smallest n that passes in
95% of runs is about 410 d (d = 2), 530 d (d = 5), 750 d (d = 10) and 1070 d
(d = 20); there the default is the cap n // d (models of d rows each).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

from . import depth as td

#: Fewer than 12 models give t <= 2 and the test can never pass.
MIN_MODELS = 12
#: The pass probability the idealised cloud is asked to reach.
PASS_TARGET = 0.95
#: Safety factor on the idealised m (real model clouds are less regular than t quantiles).
SAFETY = 1.25


def t_quantile(nu: float, p: np.ndarray) -> np.ndarray:
    """Student-t quantiles: the Cornish-Fisher expansion (Abramowitz & Stegun 26.7.5) for nu >= 8, else exact.

    For nu >= 8 and p <= 0.9995 the expansion is within 6e-4 of the exact log
    quantile, and about 50 times faster than ``scipy.special.stdtrit``.
    """
    if nu < 8:
        return special.stdtrit(nu, p)
    z = special.ndtri(p)
    z2 = z * z
    g1 = z * (z2 + 1) / 4
    g2 = z * ((5 * z2 + 16) * z2 + 3) / 96
    g3 = z * (((3 * z2 + 19) * z2 + 17) * z2 - 15) / 384
    g4 = z * ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) / 92160
    return z + (g1 + (g2 + (g3 + g4 / nu) / nu) / nu) / nu


def ideal_log_volumes(m: int, d: int, nu: float) -> np.ndarray:
    """``log V_i`` (i = 0 .. I + 1) of m ideal models: t_nu quantiles at Blom's positions in d coordinates."""
    top = td.max_depth(m)
    i = np.arange(1, top + 1)
    upper = t_quantile(nu, (m - i + 1 - 0.375) / (m + 0.25))  # P[m - i]; P[i - 1] = -P[m - i]
    out = np.empty(top + 2)
    out[0], out[top + 1] = np.inf, -np.inf
    with np.errstate(divide="ignore"):
        out[1 : top + 1] = d * np.log(2.0 * np.maximum(upper, 0.0))
    return out


def ideal_distance(m: int, d: int, n: int, eps: float, delta: float) -> int:
    """The distance statistic of the ideal cloud of m models on n rows (``nu = floor(n/m) - d + 1``)."""
    nu = max(n // m - d + 1, 1)
    return td.distance_to_unsafety(ideal_log_volumes(m, d, nu), td.restricted_depth(m), eps / 4, delta)


def required_distance(eps: float, delta: float, target: float = PASS_TARGET) -> float:
    """The D at which the test ``D + Lap(2/eps) > log(1/(2 delta)) / (eps/2)`` passes with probability ``target``."""
    eps1 = eps / 2
    return (math.log(1.0 / (2.0 * delta)) + math.log(1.0 / (2.0 * (1.0 - target)))) / eps1


@functools.lru_cache(maxsize=256)
def ideal_m(n: int, d: int, eps: float, delta: float) -> int | None:
    """The smallest m in ``[MIN_MODELS, n // d]`` whose ideal cloud passes (bisection); None if none does.

    Bisection takes the ideal statistic to be non-decreasing in m, as it is on
    every case measured (benchmarks/bench_tukey.py); it only picks a default.
    """
    need = required_distance(eps, delta)
    lo, hi = MIN_MODELS, n // d
    if hi < lo or ideal_distance(hi, d, n, eps, delta) < need:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if ideal_distance(mid, d, n, eps, delta) >= need:
            hi = mid
        else:
            lo = mid + 1
    return lo


def default_m(n: int, d: int, eps: float, delta: float) -> int:
    """The default m (module docstring); raises when n is too small for even 12 models of d rows."""
    cap = n // d
    if cap < MIN_MODELS:
        raise ValueError(
            f"method='tukey' needs at least {MIN_MODELS} models of d={d} rows each: n={n} rows are too few"
        )
    ideal = ideal_m(n, d, float(eps), float(delta))
    if ideal is None:
        return cap
    return min(cap, math.ceil(SAFETY * ideal))


#: Binary responses (dp_logit, dp_probit): the events a batch should hold per coefficient, on average ...
EVENTS_PER_COEFFICIENT = 2.0
#: ... at the rarest outcome rate the default plans for (the base rate is not public; rarer outcomes separate more).
BASE_RATE_FLOOR = 0.1


def binary_batch_rows(d: int) -> int:
    """The fewest rows a binary batch should hold: ``EVENTS_PER_COEFFICIENT d / BASE_RATE_FLOOR`` (20 d).

    A batch without a finite MLE becomes a pair of extremes
    (dpstats/mechanisms/tukey/logit_models.py), and the batches that fail are
    the ones with the fewest events, so failures must be rare. Measured on
    logits with 3 Gaussian regressors and a 9% base rate (d = 4): 84% of
    batches of 10 rows failed, 48% of 20, 11% of 40, 0.5% of 75 and none of
    150 or 300; 20 d = 80 rows is the knee.
    """
    return math.ceil(EVENTS_PER_COEFFICIENT * d / BASE_RATE_FLOOR)


def default_m_binary(n: int, d: int, eps: float, delta: float) -> int:
    """The default m of a binary-response fit: :func:`default_m`, but never more models than leave
    :func:`binary_batch_rows` rows in each (at least MIN_MODELS).

    Where the two disagree (n below about ``default_m x 20 d``: at d = 4,
    eps = 1 and delta = 1e-6, n < 80,000) the batches keep their rows and
    propose-test-release usually refuses (the failure output, the budget
    spent): an honest refusal, where batches too small to fit would pass the
    test and release a median of the batches that happened not to separate.
    """
    m = default_m(n, d, eps, delta)
    return max(MIN_MODELS, min(m, n // binary_batch_rows(d)))

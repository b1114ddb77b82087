"""The one home of randomness in dpstats: generators, noise samplers and the
exponential mechanism.

Every random draw in the package goes through this module, so that

* ``random_state`` is interpreted in one place (:func:`make_rng`);
* every value a mechanism hands to a noise primitive, with its declared
  sensitivity, can be recorded for the privacy audit (:func:`recording`);
* the samplers are tested once, against their exact distributions
  (tests/test_noise_samplers.py).

Caveat (Mironov 2012): the samplers use numpy's floating-point
transformations; like every numpy-based DP library they are not hardened
against floating-point side channels. The default generator draws its seed
from the operating system's entropy source.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

RandomState = int | np.random.Generator | None


def make_rng(random_state: RandomState = None) -> np.random.Generator:
    """Turn ``random_state`` into a numpy Generator.

    ``None`` (the default) seeds from fresh OS entropy; an int gives a
    reproducible stream (for tests and replication); a Generator is used as is.
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError("random_state must be a non-negative integer")
        return np.random.default_rng(int(random_state))
    raise TypeError("random_state must be None, a non-negative int or a numpy Generator")


def postprocessing_rng(rng: np.random.Generator) -> np.random.Generator:
    """A stream for post-processing (bootstrap replicates), independent of ``rng``'s noise draws.

    It is spawned from ``rng``'s seed sequence (numpy's ``Generator.spawn``),
    which does not depend on how many numbers ``rng`` has drawn: a sampler
    whose number of draws depends on the data (rejection, MCMC) leaves it
    unchanged, so a replay that forces a neighbour's released values sees the
    same post-processing draws too, and a seeded call stays reproducible.
    """
    return rng.spawn(1)[0]


def independent_rngs(seed: int, count: int) -> list[np.random.Generator]:
    """``count`` independent reproducible streams from one seed (numpy's SeedSequence.spawn): the audits' sides."""
    return [np.random.default_rng(child) for child in np.random.SeedSequence(seed).spawn(count)]


# --------------------------------------------------------------------------
# Recording (privacy audit): every noisy release logs its exact input.
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class NoisyRelease:
    """One call of a noise primitive: what went in and what came out.

    ``sensitivity`` is measured in ``norm`` ("l1" for Laplace, "l2" for
    Gaussian). A Laplace release is ``eps``-DP (``rho`` is None); a Gaussian
    release is ``rho``-zCDP and is not eps-DP for any finite eps, so its
    ``eps`` is recorded as ``inf``.

    An exponential-mechanism release (:func:`exponential_mechanism_release`)
    records its utility on a fixed public grid as ``value``, its sensitivity in
    ``"linf"`` and its budget ``eps``. A smooth-sensitivity release
    (:func:`smooth_sensitivity_t_mechanism`) records the statistic, its
    ``t``-smooth upper bound S as ``sensitivity`` (data-dependent by design:
    the replay check is then ``S(D) <= e^t S(D')`` and
    ``|value(D) - value(D')| <= S(D)``) and ``smooth_t = t``.
    """

    name: str
    value: np.ndarray
    sensitivity: float
    eps: float
    noisy: np.ndarray
    norm: str
    rho: float | None = None
    smooth_t: float | None = None


@dataclass
class _Recorder:
    log: list[NoisyRelease]
    forced: list[np.ndarray] | None


_RECORDER: contextvars.ContextVar[_Recorder | None] = contextvars.ContextVar("dpstats_noise_recorder", default=None)


@contextlib.contextmanager
def recording(forced_outputs: list[np.ndarray] | None = None) -> Iterator[list[NoisyRelease]]:
    """Collect every :class:`NoisyRelease` made inside the block (for audits).

    With ``forced_outputs``, the i-th release returns ``forced_outputs[i]``
    instead of its own noisy value. Replaying a mechanism on a neighbour with
    the first run's outputs forced couples the two runs on their released
    values, so that a later release whose sensitivity depends on earlier
    outputs (NoisyStats' intercept) is compared on equal terms.
    """
    recorder = _Recorder(log=[], forced=forced_outputs)
    token = _RECORDER.set(recorder)
    try:
        yield recorder.log
    finally:
        _RECORDER.reset(token)


@contextlib.contextmanager
def discarded() -> Iterator[None]:
    """Forget the releases recorded inside the block: a computation that is run again in full later.

    Its draws are not released (dpstats/distributed/by_group.py runs a fit
    once to learn which sums it reads, then again with them); only the run
    whose output is used is recorded.
    """
    recorder = _RECORDER.get()
    start = None if recorder is None else len(recorder.log)
    try:
        yield
    finally:
        if recorder is not None:
            del recorder.log[start:]


def _record(release: NoisyRelease) -> np.ndarray:
    """Log ``release``; return the output the mechanism must use."""
    recorder = _RECORDER.get()
    if recorder is None:
        return release.noisy
    index = len(recorder.log)
    recorder.log.append(release)
    if recorder.forced is not None and index < len(recorder.forced):
        return np.asarray(recorder.forced[index], dtype=float)
    return release.noisy


def is_recording() -> bool:
    """True inside a :func:`recording` block: audit-only work (utility grids) may then be done."""
    return _RECORDER.get() is not None


# --------------------------------------------------------------------------
# Samplers
# --------------------------------------------------------------------------


def laplace(rng: np.random.Generator, scale: float, size: int | tuple[int, ...] | None = None):
    """Laplace(0, scale) draws."""
    return rng.laplace(0.0, scale, size)


def gaussian(rng: np.random.Generator, sigma: float, size: int | tuple[int, ...] | None = None):
    """Normal(0, sigma^2) draws."""
    return rng.normal(0.0, sigma, size)


def student_t(rng: np.random.Generator, df: float, size: int | tuple[int, ...] | None = None):
    """Standard Student-t draws with ``df`` degrees of freedom."""
    return rng.standard_t(df, size)


def gumbel(rng: np.random.Generator, size: int | tuple[int, ...] | None = None):
    """Standard Gumbel draws (location 0, scale 1), for Gumbel-max selection."""
    return rng.gumbel(0.0, 1.0, size)


def uniform(rng: np.random.Generator, low: float = 0.0, high: float = 1.0, size=None):
    """Uniform draws on [low, high)."""
    return rng.uniform(low, high, size)


def permutation(rng: np.random.Generator, n: int) -> np.ndarray:
    """A uniformly random permutation of range(n)."""
    return rng.permutation(n)


# --------------------------------------------------------------------------
# Mechanisms built on the samplers
# --------------------------------------------------------------------------


def laplace_mechanism(
    rng: np.random.Generator,
    value,
    sensitivity: float,
    eps: float,
    name: str,
):
    """Release ``value + Lap(sensitivity / eps)`` elementwise.

    ``sensitivity`` is the L1 sensitivity of the whole ``value`` vector under
    replace-one neighbours; the release is ``eps``-DP (Dwork et al. 2006).
    """
    value_arr = np.asarray(value, dtype=float)
    noisy = value_arr + laplace(rng, sensitivity / eps, value_arr.shape)
    noisy = _record(NoisyRelease(name, value_arr.copy(), float(sensitivity), float(eps), noisy.copy(), "l1"))
    return noisy if noisy.ndim else float(noisy)


def gaussian_mechanism(
    rng: np.random.Generator,
    value,
    sensitivity: float,
    rho: float,
    name: str,
):
    """Release ``value + N(0, sigma^2 I)`` with ``sigma = sensitivity / sqrt(2 rho)``.

    ``sensitivity`` is the L2 sensitivity of the whole ``value`` vector under
    replace-one neighbours; the release is ``rho``-zCDP (Bun & Steinke 2016,
    Proposition 1.6: the Gaussian mechanism is Delta^2 / (2 sigma^2)-zCDP).
    The record has ``norm="l2"``, the ``rho`` spent and ``eps = inf`` (no pure-DP guarantee).
    """
    value_arr = np.asarray(value, dtype=float)
    sigma = sensitivity / np.sqrt(2.0 * rho)
    noisy = value_arr + gaussian(rng, sigma, value_arr.shape)
    release = NoisyRelease(name, value_arr.copy(), float(sensitivity), math.inf, noisy.copy(), "l2", rho=float(rho))
    noisy = _record(release)
    return noisy if noisy.ndim else float(noisy)


def exponential_mechanism_intervals(
    rng: np.random.Generator,
    edges: np.ndarray,
    log_weights: np.ndarray,
) -> float:
    """Sample a point from the piecewise-constant density on ``edges``.

    Interval ``i`` is ``[edges[i], edges[i+1]]`` with density proportional to
    ``exp(log_weights[i])``; it is chosen with probability proportional to
    ``length_i * exp(log_weights[i])`` by the Gumbel-max trick in log space
    (no exponentiation, so no underflow at any eps), then a uniform point is
    drawn inside it. This is the sampler of Alabi et al. 2022, Algorithm 3.
    """
    edges = np.asarray(edges, dtype=float)
    lengths = np.diff(edges)
    with np.errstate(divide="ignore"):
        scores = np.log(lengths) + np.asarray(log_weights, dtype=float)
    scores = scores + gumbel(rng, scores.shape)
    i = int(np.argmax(scores))
    return float(uniform(rng, edges[i], edges[i + 1]))


def exponential_mechanism_release(
    rng: np.random.Generator,
    sampler: Callable[[np.random.Generator], float | np.ndarray],
    utility: Callable[[], np.ndarray],
    sensitivity: float,
    eps: float,
    name: str,
) -> float | np.ndarray:
    """Release one draw of an exponential mechanism, recorded for the audits.

    ``sampler(rng)`` draws the output, a number or a vector (density
    proportional to ``exp(eps u / (2 sensitivity))``; its random draws go
    through this module's primitives). ``utility()`` returns u on a fixed
    public set of outputs; it is evaluated only while :func:`recording`, so an
    ordinary fit never pays for it. The record's norm is ``"linf"``: the
    replay checks ``max_r |u_D(r) - u_D'(r)| <= sensitivity`` on that set.

    The K-norm gradient mechanism (Reimherr & Awan 2019, Theorem 3.1) is
    released here too: its draw is a vector theta, and ``utility()`` is
    the gradient norm ``||grad l(theta_p; D)||_K`` at fixed public points theta_p, the utility
    sensitivity that the proof reduces to.
    """
    noisy = np.asarray(sampler(rng), dtype=float)
    if is_recording():
        value = np.asarray(utility(), dtype=float)
        noisy = np.asarray(_record(NoisyRelease(name, value, float(sensitivity), float(eps), noisy.copy(), "linf")))
    return float(noisy) if noisy.ndim == 0 else np.asarray(noisy, dtype=float)


def smooth_sensitivity_t_mechanism(
    rng: np.random.Generator,
    value,
    smooth_sensitivity: float,
    s: float,
    t: float,
    df: float,
    eps: float,
    name: str,
):
    """Release ``value + (S / s) T`` with T standard Student-t(df) (Alabi et al. 2022, Alg. 5).

    ``smooth_sensitivity`` S must be a ``t``-smooth upper bound on the local
    sensitivity of the statistic; with ``t = eps beta / (df + 1)`` and
    ``s = 2 sqrt(df) (eps - t (df + 1)) / (df + 1)`` the release is eps-DP
    (Lemma 21, from Bun & Steinke 2019, Theorems 31 and 46).
    """
    value_arr = np.asarray(value, dtype=float)
    noisy = value_arr + (smooth_sensitivity / s) * student_t(rng, df, value_arr.shape)
    release = NoisyRelease(
        name, value_arr.copy(), float(smooth_sensitivity), float(eps), np.asarray(noisy).copy(), "l1", smooth_t=float(t)
    )
    noisy = _record(release)
    return noisy if np.ndim(noisy) else float(noisy)


def log_space_choice(rng: np.random.Generator, log_weights: np.ndarray, size: int | None = None):
    """Index ``i`` with probability proportional to ``exp(log_weights[i])``, by the Gumbel-max trick.

    Works on the logarithms only (no exponentiation: no underflow or overflow
    at any eps); ``-inf`` weights are never chosen. ``size`` independent draws
    come back as an array, ``size=None`` as one int. At least one weight must
    be finite (callers check this on their own terms before calling).
    """
    scores = np.asarray(log_weights, dtype=float).ravel()
    if not np.any(np.isfinite(scores)):
        raise ValueError("log_space_choice needs at least one finite log weight")
    if size is None:
        return int(np.argmax(scores + gumbel(rng, scores.shape)))
    return np.argmax(scores[None, :] + gumbel(rng, (int(size), scores.size)), axis=1)


def exponential_mechanism_point_release(
    rng: np.random.Generator,
    sampler: Callable[[np.random.Generator], np.ndarray],
    utility_at: Callable[[np.ndarray], float],
    sensitivity: float,
    eps: float,
    name: str,
) -> np.ndarray:
    """Release one draw of an exponential mechanism over a continuous space (a point of R^d).

    ``sampler(rng)`` draws the point (its random draws go through this
    module). With no public grid of outputs to score (Tukey depth, Amin et al.
    2023), the record's ``value`` is the utility of the point actually
    released, ``utility_at(point)``, filled in after any forced output is
    applied: in a replay D' is scored at the point released on D, and the
    check ``|u_D(y) - u_D'(y)| <= sensitivity`` (norm ``"linf"``) is the
    utility's sensitivity at that y. Scored only while :func:`recording`.
    """
    point = np.asarray(sampler(rng), dtype=float)
    if not is_recording():
        return point
    value = np.full(1, np.nan)  # filled below, once the released point is known
    release = NoisyRelease(name, value, float(sensitivity), float(eps), point.copy(), "linf")
    out = np.asarray(_record(release), dtype=float)
    value[0] = float(utility_at(out))
    return out


# --------------------------------------------------------------------------
# K-norm gradient mechanism (Reimherr & Awan 2019): primitives
# --------------------------------------------------------------------------


def gamma(rng: np.random.Generator, shape: float, scale: float = 1.0, size: int | tuple[int, ...] | None = None):
    """Gamma(shape, scale) draws (the radius of a K-norm mechanism draw)."""
    return rng.gamma(shape, scale, size)

"""The one home of randomness in dpstats: generators, noise mechanisms and the exponential mechanism.

Every random draw in the package goes through this module, so that

* ``random_state`` is interpreted in one place (:func:`make_rng`), and the
  generator is cryptographic: ChaCha20 (randomgen's ``ChaCha``, 20 rounds)
  keyed from the operating system's entropy, or from an int for reproducible
  tests and replication -- a seeded run is not for release;
* every release is float-safe (Mironov 2012; notes/FLOAT_SAFETY.md): additive
  noise is sampled exactly on a power-of-two grid (discrete Laplace or
  discrete Gaussian in integer arithmetic, dpstats/privacy/samplers.py), with
  the rounding to the grid counted in the sensitivity, so the eps or rho
  reported holds for the doubles released; the exponential mechanism's
  choices are sampled exactly (permute-and-flip, or a piece chosen with
  exact weights and a uniform real rounded down to a double);
* every value a mechanism hands to a noise primitive, with its declared
  sensitivity, can be recorded for the privacy audit (:func:`recording`);
* the samplers are tested once, against their exact distributions
  (tests/test_noise_samplers.py, tests/test_exact_samplers.py).

The primitives :func:`laplace`, :func:`gaussian`, :func:`student_t`,
:func:`gumbel`, :func:`uniform` and :func:`gamma` draw in floating point: they
serve post-processing (bootstrap replicates of a release's law) and the
samplers whose releases say they are not float-safe
(:data:`FLOAT_CAVEAT`).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from randomgen import ChaCha

from . import exact_choice, grid_noise

RandomState = int | np.random.Generator | None


FLOAT_CAVEAT = (
    "not float-safe: a continuous sampler in floating point (Mironov 2012), so the guarantee holds for the real-valued "
    "mechanism, not proven for the doubles released"
)
"""The caveat a release carries when one of its draws is not sampled exactly (docs/DESIGN.md section 2)."""

_POOL_WORDS = 8  # SeedSequence pool of 8 x 32 bits: the 256 bits of a ChaCha key


def _chacha(seed: np.random.SeedSequence) -> np.random.Generator:
    """A numpy Generator over ChaCha20 keyed from ``seed`` (a cryptographic stream; spawnable)."""
    return np.random.Generator(ChaCha(seed=seed, rounds=20))


def make_rng(random_state: RandomState = None) -> np.random.Generator:
    """Turn ``random_state`` into a numpy Generator over a cryptographic bit generator (ChaCha20).

    ``None`` (the default) keys it from 256 bits of the operating system's
    entropy (``secrets``); an int gives a reproducible stream, the same on
    every machine (for tests and replication: a seeded run is not for release,
    since anyone who knows the seed knows the noise); a Generator is used as is.
    """
    if random_state is None:
        return _chacha(np.random.SeedSequence(secrets.randbits(256), pool_size=_POOL_WORDS))
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError("random_state must be a non-negative integer")
        return _chacha(np.random.SeedSequence(int(random_state), pool_size=_POOL_WORDS))
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
    """``count`` independent reproducible ChaCha20 streams from one seed (SeedSequence.spawn): the audits' sides."""
    return [_chacha(child) for child in np.random.SeedSequence(seed, pool_size=_POOL_WORDS).spawn(count)]


def stream_key(rng: np.random.Generator) -> int:
    """A 256-bit key drawn from ``rng``, for streams made elsewhere (a Dask worker) by :func:`keyed_rng`."""
    return int.from_bytes(rng.bytes(32), "little")


def keyed_rng(key: int, *path: int) -> np.random.Generator:
    """The ChaCha20 stream at ``path`` under ``key`` (SeedSequence's spawn key: distinct paths give independent
    streams; ``keyed_rng(key, i)`` is ``independent_rngs(key, count)[i]``), the same on every machine."""
    return _chacha(np.random.SeedSequence(key, spawn_key=path, pool_size=_POOL_WORDS))


def integers(rng: np.random.Generator, high: int, size: int) -> np.ndarray:
    """``size`` uniform integers in ``[0, high)`` (numpy's bounded integers: exactly uniform, no modulo bias)."""
    return rng.integers(0, high, size)


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
    *,
    changed: int | None = None,
):
    """Release ``value`` with Laplace noise of scale ``sensitivity / eps``, float-safe: eps-DP for the doubles released.

    ``sensitivity`` is the L1 sensitivity of the whole ``value`` vector under
    replace-one neighbours (Dwork et al. 2006); ``changed`` the most
    coordinates one neighbour can move (all, by default; 2 for a histogram's
    counts). The noise is the discrete Laplace on a power-of-two grid with the
    rounding counted in the sensitivity (dpstats/privacy/grid_noise.py).
    """
    value_arr = np.asarray(value, dtype=float)
    moved = value_arr.size if changed is None else min(int(changed), value_arr.size)
    noisy = grid_noise.add_laplace(rng, value_arr, float(sensitivity), float(eps), max(moved, 1))
    noisy = _record(NoisyRelease(name, value_arr.copy(), float(sensitivity), float(eps), noisy.copy(), "l1"))
    return noisy if noisy.ndim else float(noisy)


def gaussian_mechanism(
    rng: np.random.Generator,
    value,
    sensitivity: float,
    rho: float,
    name: str,
):
    """Release ``value`` with Gaussian noise of sigma ``sensitivity / sqrt(2 rho)``, float-safe: rho-zCDP.

    ``sensitivity`` is the L2 sensitivity of the whole ``value`` vector under
    replace-one neighbours. The noise is the discrete Gaussian on a
    power-of-two grid with the rounding counted in the sensitivity
    (dpstats/privacy/grid_noise.py; Canonne, Kamath & Steinke 2020,
    Theorem 14: Delta^2 / (2 sigma^2)-zCDP, as for the continuous one, Bun &
    Steinke 2016, Proposition 1.6). The record has ``norm="l2"``, the ``rho``
    spent and ``eps = inf`` (no pure-DP guarantee).
    """
    value_arr = np.asarray(value, dtype=float)
    noisy = grid_noise.add_gaussian(rng, value_arr, float(sensitivity), float(rho), max(value_arr.size, 1))
    release = NoisyRelease(name, value_arr.copy(), float(sensitivity), math.inf, noisy.copy(), "l2", rho=float(rho))
    noisy = _record(release)
    return noisy if noisy.ndim else float(noisy)


def exponential_mechanism_intervals(
    rng: np.random.Generator,
    edges: np.ndarray,
    utilities: np.ndarray,
    eps: float,
    sensitivity: float,
) -> float:
    """A point of the density proportional to ``exp(eps u_i / (2 sensitivity))`` on interval i of ``edges``.

    Interval ``i`` is ``[edges[i], edges[i+1]]``; it is chosen with
    probability proportional to its length times its weight, then the point
    is uniform inside it: the sampler of Alabi et al. 2022, Algorithm 3,
    sampled exactly (dpstats/privacy/exact_choice.py; the utilities are counts
    or half-counts).
    """
    return exact_choice.interval_point(rng, edges, utilities, eps, sensitivity)


def exponential_choice(
    rng: np.random.Generator, utilities: np.ndarray, eps: float, sensitivity: float, counts: list[int] | None = None
) -> int:
    """The exponential mechanism over finitely many candidates, sampled exactly (dpstats/privacy/exact_choice.py)."""
    return exact_choice.exponential_choice(rng, utilities, eps, sensitivity, counts)


def permute_and_flip(rng: np.random.Generator, utilities: np.ndarray, eps: float, sensitivity: float) -> int:
    """Permute-and-flip (McKenna & Sheldon 2020) over candidates, sampled exactly (dpstats/privacy/exact_choice.py)."""
    return exact_choice.permute_and_flip(rng, utilities, eps, sensitivity)


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

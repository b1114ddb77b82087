"""Mironov's floating-point attack on textbook Laplace samplers: a preimage test and a distinguishing game.

Mironov (2012), "On significance of the least significant bits for differential privacy" (CCS), shows that a
Laplace sample computed on doubles as a monotone map of a uniform ``u`` on a grid (numpy's ``Generator.laplace``:
``u = k / 2^53``, ``loc + b*log(2u)`` below 1/2 and ``loc - b*log(2 - u - u)`` above) can only take certain
doubles, and which ones depends on ``loc``. One released value ``y = f(D) + noise`` is then often in the image of
the sampler at ``f(D)`` and not at ``f(D')``, which tells the neighbours apart far above what eps allows
(the project's notes/FLOAT_SAFETY.md).

This module is the attack, written once for every textbook form rather than for one line of code:

* :class:`SamplerForm` -- ``y = loc + sign * b * T(u)`` with ``T <= 0`` monotone on a range of the grid
  ``u = k / 2^53``; :data:`FORMS` holds numpy's two branches, the same with the sign flipped (``loc - noise``)
  and the exponential with a random sign (``loc ± b*E``, ``E = -log(u)``, ``-log1p(-u)`` or ``-log(1 - u)``),
  each evaluated with the C library's ``log`` (numpy's samplers, :mod:`math`) and with numpy's ufuncs
  (:data:`LOG_FUNCTIONS`, which differ in the last bit on a few inputs);
* :func:`in_image` / :func:`preimages` -- Mironov's test: invert ``y`` to the real ``u`` of each form, and look
  for an exact forward hit ``form(loc, k / 2^53) == y`` among the grid points next to it;
* :func:`distinguishing_attack` -- the game: releases from D or D' in a seeded order, each guessed from the
  images at the two locations (likelihood when they do not decide), and its accuracy;
* :func:`dp_accuracy_bound` -- what eps-DP allows that accuracy to be, ``e^eps / (1 + e^eps)``, with a stated
  sampling allowance.

A coarser grid (``k / 2^32``, float32 uniforms) is a subset of ``k / 2^53``, and the inverse-CDF form
``loc - b*sgn(v)*log(1 - 2|v|)`` with ``v = u - 1/2`` computes exactly ``log(2u)`` or ``log(2 - 2u)`` on the grid,
so both are covered. Not covered: samplers that are not a monotone map of one uniform (numpy's ziggurat
``normal`` and ``exponential``), a scale computed in another order than the ``scale`` given, and a fused
multiply-add in the final ``loc + b*T`` unless ``fused=True`` adds it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy import stats

from ..privacy.noise import make_rng

GRID_BITS = 53
"""numpy's ``next_double`` (and Python's ``random.random``) return ``k / 2^53``."""
GRID = 2.0**-GRID_BITS
HALF = 2 ** (GRID_BITS - 1)
"""The grid index of ``u = 1/2``."""
LAST = 2**GRID_BITS - 1
"""The largest grid index below 1."""
DENSE = 64
"""Windows of at most this many grid points are searched point by point, larger ones by bisection."""

Elementwise = Callable[[np.ndarray], np.ndarray]


def _libm(function: Callable[[float], float]) -> Elementwise:
    """``function`` (a :mod:`math` function: the C library's) applied elementwise."""

    def apply(values: np.ndarray) -> np.ndarray:
        return np.array([function(x) for x in np.ravel(values).tolist()], dtype=float)

    return apply


@dataclass(frozen=True)
class LogFunctions:
    """An implementation of ``log`` and ``log1p`` (they differ in the last bit between libraries)."""

    name: str
    log: Elementwise
    log1p: Elementwise


LIBM = LogFunctions("libm", _libm(math.log), _libm(math.log1p))
"""The C library's, which numpy's ``Generator`` samplers call (numpy/random/src/distributions)."""
NUMPY = LogFunctions("numpy", np.log, np.log1p)
"""numpy's ufuncs, which a sampler written in numpy calls."""
LOG_FUNCTIONS: tuple[LogFunctions, ...] = (LIBM, NUMPY)


@dataclass(frozen=True)
class SamplerForm:
    """One textbook form ``y = loc + sign * (b * T(u))``, ``u = k / 2^53`` for ``k`` in ``[first, last]``.

    ``T(u, logs)`` is computed as the sampler computes it (the same floating-point operations), is ``<= 0``
    and monotone on that range; ``inverse(t)`` is the real ``u`` with ``T(u) = t``. The final step is
    ``loc + b*T`` or ``loc - b*T``, each product rounded (``fused=True``: rounded once with the sum).
    """

    name: str
    sign: int
    transform: Callable[[np.ndarray, LogFunctions], np.ndarray]
    inverse: Callable[[float], float]
    first: int
    last: int

    def forward(self, loc: float, scale: float, k: np.ndarray, logs: LogFunctions, fused: bool = False) -> np.ndarray:
        """The sampler's output at ``loc`` for the grid indices ``k`` (exact: the sampler's own operations)."""
        t = np.asarray(self.transform(np.asarray(k, dtype=np.int64) * GRID, logs), dtype=float)
        if fused:
            signed = self.sign * scale
            return np.array([float(Fraction(loc) + Fraction(signed) * Fraction(x)) for x in t.tolist()])
        noise = scale * t
        return loc + noise if self.sign > 0 else loc - noise

    def grid_index(self, y: float, loc: float, scale: float) -> int:
        """The grid index nearest the real ``u`` that ``y`` inverts to (clipped to the form's range)."""
        t = min(self.sign * (y - loc) / scale, 0.0)
        u = self.inverse(t)
        if not math.isfinite(u):
            return self.first
        return min(max(round(u * 2.0**GRID_BITS), self.first), self.last)

    def hit(
        self, y: float, loc: float, scale: float, logs: LogFunctions, steps: int = 4, fused: bool = False
    ) -> int | None:
        """A grid index ``k`` with ``forward(loc, scale, k) == y``, or None (Mironov's preimage test).

        The grid points within ``steps`` of the inverted ``u`` are tried; where many grid points round to
        the same double (the map is locally many-to-one), the window widens to the spread of the
        inversions of ``y``'s two neighbouring doubles and the monotone map is bisected in it.
        """
        k0 = self.grid_index(y, loc, scale)
        spread = abs(
            self.grid_index(math.nextafter(y, math.inf), loc, scale)
            - self.grid_index(math.nextafter(y, -math.inf), loc, scale)
        )
        half = steps + spread
        lo, hi = max(k0 - half, self.first), min(k0 + half, self.last)
        if lo > hi:
            return None
        if hi - lo < DENSE:
            return self._first_hit(np.arange(lo, hi + 1), y, loc, scale, logs, fused)
        ends = self.forward(loc, scale, np.array([lo, hi]), logs, fused)
        increasing = bool(ends[0] <= ends[1])
        while lo < hi:  # the first k whose output is at or past y
            mid = (lo + hi) // 2
            value = float(self.forward(loc, scale, np.array([mid]), logs, fused)[0])
            if (value >= y) if increasing else (value <= y):
                hi = mid
            else:
                lo = mid + 1
        window = np.arange(max(lo - steps, self.first), min(lo + steps, self.last) + 1)
        return self._first_hit(window, y, loc, scale, logs, fused)

    def _first_hit(
        self, ks: np.ndarray, y: float, loc: float, scale: float, logs: LogFunctions, fused: bool
    ) -> int | None:
        found = np.flatnonzero(self.forward(loc, scale, ks, logs, fused) == y)
        return int(ks[found[0]]) if found.size else None


@dataclass(frozen=True)
class _Transform:
    label: str
    transform: Callable[[np.ndarray, LogFunctions], np.ndarray]
    inverse: Callable[[float], float]
    first: int
    last: int


_TRANSFORMS = (
    # numpy's branch below 1/2 (``log(U + U)``) and the inverse CDF's ``log(1 - 2|v|)`` there
    _Transform("log(2u)", lambda u, f: f.log(u + u), lambda t: math.exp(t) / 2.0, 1, HALF),
    # numpy's branch at and above 1/2, as numpy computes it: ``2.0 - U - U`` (rounded in its first step)
    _Transform("log(2-u-u)", lambda u, f: f.log(2.0 - u - u), lambda t: 1.0 - math.exp(t) / 2.0, HALF, LAST),
    # the same branch computed exactly (the inverse CDF's ``log(1 - 2|v|)``, ``v = u - 1/2``)
    _Transform("log(2-2u)", lambda u, f: f.log(2.0 - 2.0 * u), lambda t: 1.0 - math.exp(t) / 2.0, HALF, LAST),
    # the exponential by inversion, E = -T
    _Transform("log(u)", lambda u, f: f.log(u), math.exp, 1, LAST),
    _Transform("log1p(-u)", lambda u, f: f.log1p(-u), lambda t: -math.expm1(t), 0, LAST),
    _Transform("log(1-u)", lambda u, f: f.log(1.0 - u), lambda t: -math.expm1(t), 0, LAST),
)


def _forms() -> tuple[SamplerForm, ...]:
    forms = []
    for sign in (1, -1):
        for t in _TRANSFORMS:
            name = f"loc {'+' if sign > 0 else '-'} b*{t.label}"
            forms.append(SamplerForm(name, sign, t.transform, t.inverse, t.first, t.last))
    return tuple(forms)


FORMS: tuple[SamplerForm, ...] = _forms()
"""Every transform with both signs. numpy's ``Generator.laplace`` is ``loc + b*log(2u)`` with
``loc - b*log(2-u-u)``; ``loc - noise`` is ``loc - b*log(2u)`` with ``loc + b*log(2-u-u)``; ``loc ± b*E`` with
``E = -log(u)`` (or ``-log1p(-u)``, ``-log(1-u)``) is ``loc ∓ b*log(u)`` (and the like)."""


def forms_named(names: Sequence[str]) -> tuple[SamplerForm, ...]:
    """The forms of :data:`FORMS` with these names (an attack restricted to some forms)."""
    by_name = {form.name: form for form in FORMS}
    unknown = [name for name in names if name not in by_name]
    if unknown:
        raise ValueError(f"unknown sampler forms {unknown}; known: {list(by_name)}")
    return tuple(by_name[name] for name in names)


@dataclass(frozen=True)
class Preimage:
    """A grid point ``k / 2^53`` that ``form`` (with ``logs``) maps to the released value at ``loc``."""

    form: str
    logs: str
    k: int


def preimages(
    y: float,
    loc: float,
    scale: float,
    forms: Sequence[SamplerForm] = FORMS,
    logs: Sequence[LogFunctions] = LOG_FUNCTIONS,
    steps: int = 4,
    fused: bool = False,
) -> list[Preimage]:
    """Every (form, log implementation) under which ``y`` is an output of the sampler at ``loc`` (Mironov 2012).

    With numpy's forms, the ``k`` found is the generator's 53-bit output, or a grid point next to it that
    rounds to the same double: the release leaks it. ``fused``: as :func:`in_image`.
    """
    if not (math.isfinite(y) and math.isfinite(loc) and scale > 0):
        return []
    found = []
    for form in forms:
        for f in logs:
            for mode in _modes(fused):
                k = form.hit(y, loc, scale, f, steps, mode)
                if k is not None:
                    found.append(Preimage(form.name, f.name, k))
                    break
    return found


def in_image(
    y: float,
    loc: float,
    scale: float,
    forms: Sequence[SamplerForm] = FORMS,
    logs: Sequence[LogFunctions] = LOG_FUNCTIONS,
    steps: int = 4,
    fused: bool = False,
) -> bool:
    """True when ``y`` is an output of some textbook sampler at ``loc`` with scale ``scale`` (Mironov 2012).

    ``y`` is in the image when any form of ``forms``, with any of ``logs``, maps a grid point
    ``k / 2^53`` within ``steps`` of its inversion of ``y`` (:meth:`SamplerForm.hit`) exactly to ``y``.
    ``fused=True`` also tries each form with a fused multiply-add in its last step (``loc + b*T`` rounded
    once), as a compiler that contracts it would compute it.
    """
    if not (math.isfinite(y) and math.isfinite(loc) and scale > 0):
        return False
    return any(
        form.hit(y, loc, scale, f, steps, mode) is not None for form in forms for f in logs for mode in _modes(fused)
    )


def _modes(fused: bool) -> tuple[bool, ...]:
    """The final steps to try: the rounded product then the sum, and with ``fused`` the fused multiply-add."""
    return (False, True) if fused else (False,)


@dataclass(frozen=True)
class AttackResult:
    """The outcome of :func:`distinguishing_attack`.

    ``decisive`` releases were in the image at exactly one location (guessed from it), ``decisive_correct``
    of them rightly; the others were guessed by likelihood.
    """

    accuracy: float
    releases: int
    correct: int
    decisive: int
    decisive_correct: int


def guess_side(
    y: float,
    loc0: float,
    loc1: float,
    scale: float,
    rng: np.random.Generator,
    forms: Sequence[SamplerForm] = FORMS,
    logs: Sequence[LogFunctions] = LOG_FUNCTIONS,
    steps: int = 4,
    fused: bool = False,
) -> tuple[int, bool]:
    """``(side, decisive)``: the side whose location alone has ``y`` in its image (decisive), else the likelier.

    Laplace noise of one scale on both sides makes the likelier side the one whose location is closer to
    ``y``; a tie is broken by ``rng``.
    """
    hits = (in_image(y, loc0, scale, forms, logs, steps, fused), in_image(y, loc1, scale, forms, logs, steps, fused))
    if hits[0] != hits[1]:
        return (0 if hits[0] else 1), True
    d0, d1 = abs(y - loc0), abs(y - loc1)
    if d0 == d1:
        return int(rng.integers(2)), False
    return (0 if d0 < d1 else 1), False


def distinguishing_attack(
    release: Callable[[int], float],
    loc0: float,
    loc1: float,
    scale: float,
    releases: int = 400,
    seed: int = 0,
    forms: Sequence[SamplerForm] = FORMS,
    logs: Sequence[LogFunctions] = LOG_FUNCTIONS,
    steps: int = 4,
    fused: bool = False,
) -> AttackResult:
    """Play the distinguishing game of Mironov (2012) against ``release`` and return the accuracy.

    ``release(side)`` returns one fresh release from D (side 0, noise at ``loc0``) or D' (side 1, at ``loc1``),
    with Laplace scale ``scale``. ``releases`` of them (half from each side, in an order shuffled by ``seed``)
    are guessed by :func:`guess_side`, its ties broken by the same seeded generator. An eps-DP release keeps
    the accuracy at most :func:`dp_accuracy_bound`'s ``bound`` in expectation.
    """
    if releases < 2 or releases % 2:
        raise ValueError("releases must be a positive even number (half from each side)")
    if not scale > 0:
        raise ValueError("scale must be positive")
    rng = make_rng(seed)
    sides = rng.permutation(np.repeat([0, 1], releases // 2))
    correct = decisive = decisive_correct = 0
    for side in sides.tolist():
        y = float(release(side))
        guess, decided = guess_side(y, loc0, loc1, scale, rng, forms, logs, steps, fused)
        correct += guess == side
        decisive += decided
        decisive_correct += decided and guess == side
    return AttackResult(correct / releases, releases, correct, decisive, decisive_correct)


@dataclass(frozen=True)
class AccuracyBound:
    """The most an eps-DP release lets the game's accuracy be, and the test's threshold.

    ``bound = e^eps / (1 + e^eps)``; ``threshold = bound + allowance`` with ``allowance = sds`` binomial
    standard deviations at ``p = bound`` over ``releases``; ``false_failure`` is the exact probability
    ``P(Binomial(releases, bound) > threshold * releases)`` that an eps-DP release fails ``accuracy <=
    threshold``.
    """

    eps: float
    releases: int
    bound: float
    allowance: float
    threshold: float
    false_failure: float


def dp_accuracy_bound(eps: float, releases: int, sds: float = 4.0) -> AccuracyBound:
    """The accuracy eps-DP allows in the game of :func:`distinguishing_attack`, with a sampling allowance.

    Against an eps-DP release, any guess (randomised or not) is right with probability ``q0`` on D and
    ``q1`` on D', with ``q0 + q1 <= 2 e^eps / (1 + e^eps)`` (sum the two DP inequalities on the guess). The
    number of right guesses is a sum of independent Bernoulli variables whose mean is at most ``releases``
    times that bound, so its upper tail beyond the mean plus one is at most the binomial's at ``p = bound``
    (Hoeffding 1956, "On the distribution of the number of successes in independent trials", Theorem 4).
    The default 4 standard deviations give a false-failure probability below 1e-4 for 100 releases or more
    (about 3e-5 by the normal approximation); the exact binomial tail is in ``false_failure``.
    """
    if not (eps >= 0 and math.isfinite(eps)):
        raise ValueError("eps must be finite and >= 0")
    if releases < 1:
        raise ValueError("releases must be positive")
    bound = 1.0 / (1.0 + math.exp(-eps))
    allowance = sds * math.sqrt(bound * (1.0 - bound) / releases)
    threshold = bound + allowance
    false_failure = float(stats.binom.sf(math.floor(threshold * releases + 1e-9), releases, bound))
    return AccuracyBound(eps, releases, bound, allowance, threshold, false_failure)


# --------------------------------------------------------------------------
# The exponential mechanism's point: a uniform draw inside a data-dependent interval
# --------------------------------------------------------------------------


def in_uniform_image(y: float, low: float, high: float, steps: int = 4) -> bool:
    """Whether ``y`` is ``fl(low + (high - low) * k / 2^53)`` for a grid point k next to its real preimage.

    The textbook continuous exponential mechanism (Alabi et al. 2022, Algorithm 3; Tukey's shells) picks an
    interval whose ends are data values and returns ``low + width * u``: the same inversion as for Laplace,
    with the interval's ends in the role of ``loc``.
    """
    if not low <= y < high:
        return False
    width = high - low
    centre = round((y - low) / width * 2.0**GRID_BITS)
    return any(low + width * (k * GRID) == y for k in range(max(centre - steps, 0), min(centre + steps, LAST) + 1))


def interval_of(y: float, edges: np.ndarray) -> tuple[float, float]:
    """The interval ``[edges[i], edges[i + 1])`` that holds ``y``."""
    i = int(np.clip(np.searchsorted(edges, y, side="right") - 1, 0, len(edges) - 2))
    return float(edges[i]), float(edges[i + 1])


def interval_attack(
    release: Callable[[int], float], edges: tuple[np.ndarray, np.ndarray], releases: int = 400, seed: int = 0
) -> AttackResult:
    """Mironov's game against an interval exponential mechanism on neighbouring edges ``edges[0]``, ``edges[1]``.

    A release in the uniform image of exactly one side's interval is guessed to come from that side; any
    other is a fair coin (seeded).
    """
    rng = make_rng(seed)
    sides = rng.permutation(np.repeat([0, 1], releases // 2))
    correct = decisive = decisive_correct = 0
    for side in sides.tolist():
        y = float(release(side))
        hits = [in_uniform_image(y, *interval_of(y, e)) for e in edges]
        if hits[0] != hits[1]:
            guess = 0 if hits[0] else 1
            decisive += 1
            decisive_correct += guess == side
        else:
            guess = int(rng.integers(0, 2))
        correct += guess == side
    return AttackResult(correct / releases, releases, correct, decisive, decisive_correct)

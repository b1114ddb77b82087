"""Canaries: deliberately broken variants that the audits must flag.

docs/PRIVACY_TESTING.md, "An audit that fits in CI", step 5 (after Google's
stochastic tester, which must reject a mechanism at 1.05 eps): a test suite
that cannot tell a broken mechanism from a correct one has no power. Each
canary is a context manager that patches one module-global name for the
duration of the block, so the mechanism under audit picks up the broken
version through its ordinary name lookup:

* :func:`weaker_noise`: the noise sampler's draws are multiplied by
  ``factor`` (0.5: Laplace noise at scale ``sensitivity / (2 eps)``, i.e. the
  release is really 2 eps-DP while it claims eps) -- the google-research
  Tukey PTR bug class;
* :func:`understated_sensitivity`: a named sensitivity function returns
  ``factor`` times its value (0.5: half the Lemma 19 sensitivity) -- the
  diffprivlib X'X bug class.

* :func:`ignored_weight`: named sensitivity functions are called with the
  weights' declared maximum set to 1, as if every weight were at most 1 (a
  weighted mechanism that forgets to multiply by W).

The first two are :func:`scaled_return` applied to a different function, the
last :func:`forced_argument`.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Iterator
from types import ModuleType
from unittest import mock

from ..privacy import noise, samplers


@contextlib.contextmanager
def scaled_return(target: ModuleType | object, attribute: str, factor: float) -> Iterator[None]:
    """Within the block, ``target.attribute(...)`` returns ``factor`` times its usual value.

    The patch replaces the module-global (or attribute) name, so it reaches
    callers that look the name up at call time (``module.function(...)`` or a
    bare ``function(...)`` inside ``target``'s own module), not callers that
    imported the function object into their own namespace.
    """
    original = getattr(target, attribute)
    if not callable(original):
        raise TypeError(f"{attribute!r} is not callable")

    @functools.wraps(original)
    def scaled(*args, **kwargs):
        return factor * original(*args, **kwargs)

    with mock.patch.object(target, attribute, scaled):
        yield


RELEASE_SAMPLERS = {"laplace": "discrete_laplace", "gaussian": "discrete_gaussian"}
"""The exact samplers behind the Laplace and Gaussian mechanisms (dpstats/privacy/grid_noise.py)."""


def weaker_noise(factor: float = 0.5, sampler: str = "laplace") -> contextlib.AbstractContextManager[None]:
    """Noise ``factor`` times too small: the ``sampler`` family's draws scaled by ``factor``.

    ``laplace`` and ``gaussian`` patch the exact integer samplers of the
    releases (dpstats/privacy/samplers.py: the grid noise is then ``factor``
    times too small); any other name patches ``noise.<sampler>`` (a
    floating-point primitive, e.g. ``student_t``). For these zero-centred
    scale families scaling the draws is scaling the scale; at ``factor=0.5``
    a Laplace release claiming eps is really ``2 eps``-DP.
    """
    if sampler in RELEASE_SAMPLERS:
        return scaled_return(samplers, RELEASE_SAMPLERS[sampler], factor)
    return scaled_return(noise, sampler, factor)


def understated_sensitivity(
    module: ModuleType, function: str, factor: float = 0.5
) -> contextlib.AbstractContextManager[None]:
    """``module.function`` (a sensitivity) returns ``factor`` times the truth.

    Example: ``understated_sensitivity(dpstats.mechanisms.noisystats.mechanism,
    "centered_sensitivity")`` halves Lemma 19's ``1 - 1/n`` for ncov and nvar,
    so both releases are really ``2 eps``-DP and their values move by twice
    the declared sensitivity on the worst pair.
    """
    return scaled_return(module, function, factor)


@contextlib.contextmanager
def forced_argument(target: ModuleType | object, attribute: str, parameter: str, value: object) -> Iterator[None]:
    """Within the block, ``target.attribute(...)`` is called with its argument ``parameter`` set to ``value``.

    Whether the caller passed it by position, by keyword or left it to its
    default; the patch reaches the same callers as :func:`scaled_return`.
    """
    original = getattr(target, attribute)
    signature = inspect.signature(original)
    if parameter not in signature.parameters:
        raise TypeError(f"{attribute!r} has no parameter {parameter!r}")

    def forced(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        bound.arguments[parameter] = value
        return original(*bound.args, **bound.kwargs)

    functools.update_wrapper(forced, original, updated=())  # a class's __dict__ is not the wrapper's
    with mock.patch.object(target, attribute, forced):
        yield


def ignored_weight(
    module: ModuleType, function: str, parameter: str = "weight_max"
) -> contextlib.AbstractContextManager[None]:
    """``module.function`` called as if no weight exceeded 1: its argument ``parameter`` forced to 1.

    Example: ``ignored_weight(dpstats.mechanisms.newton.mechanism, "Sample")`` builds DP
    Newton's weighted rows with their declared maximum W forgotten, so that every
    sensitivity computed from it (the scores', the curvatures', the meat's, the PSU
    totals') is W times too small (docs/DESIGN.md section 2: one row moves a weighted
    statistic by up to W times an unweighted row): with weights up to W each release
    is about W times less private than it claims.
    """
    return forced_argument(module, function, parameter, 1.0)

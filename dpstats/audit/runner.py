"""Running a core mechanism under the noise recorder: forcing, stopping, batching.

The plumbing shared by the replay and the gray-box audit (docs/PRIVACY_TESTING.md,
"An audit that fits in CI", steps 1 and 3). A *core mechanism* is a callable
``fit(design, privacy, rng, **options) -> Release`` (dpstats/mechanisms/base.py);
every noisy release it makes goes through :func:`dpstats.privacy.noise.laplace_mechanism`
(or a later primitive) and is logged by :func:`dpstats.privacy.noise.recording` as a
:class:`~dpstats.privacy.noise.NoisyRelease` with its exact input, declared
sensitivity and eps.

Three controls, all built on ``recording(forced_outputs=...)`` without
changing dpstats/privacy/noise.py:

* **forcing**: the i-th release returns a given value instead of its own
  noisy output, so that two runs on neighbouring data are coupled on their
  earlier outputs and every later release is compared on equal terms;
* **stopping**: the run is abandoned right after the audited release is
  logged (:class:`StopRun`), which saves the rest of the mechanism's work;
* **batching**: a :class:`BatchingGenerator` makes the draws of one release
  return ``batch`` independent copies at once. The noise primitive itself then
  computes ``value + noise`` for all of them in one vectorised call; the
  release is logged with the whole batch and the run is stopped before the
  batch can reach the mechanism's own code.

The recorder contract relied on: ``noise._record`` appends the release to the
log *before* it looks up ``forced_outputs[index]``, and it asks for the
forced value only when ``index < len(forced_outputs)``. :func:`run_recorded`
checks the contract after every stopped run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any
from unittest import mock

import numpy as np

from ..design.matrix import Design
from ..mechanisms.base import PrivacyRequest, Release
from ..privacy import grid_noise, noise, samplers

CoreMechanism = Callable[..., Release]
"""``fit(design, privacy, rng, **options) -> Release`` (dpstats/mechanisms/base.py)."""


class StopRun(BaseException):
    """Raised inside a run right after the audited release is logged.

    A BaseException, so that a mechanism's own ``except Exception`` cannot
    swallow it.
    """


class Forcing(Sequence):
    """The ``forced_outputs`` sequence handed to :func:`dpstats.privacy.noise.recording`.

    ``prefix[i]`` (when not None) is returned by the i-th release instead of its
    own output; with ``stop_at = k`` the run raises :class:`StopRun` as soon as
    release ``k`` has been logged. Releases not forced keep their own output.
    """

    def __init__(self, prefix: Sequence[np.ndarray | None] = (), stop_at: int | None = None) -> None:
        self.prefix = list(prefix)
        self.stop_at = stop_at
        self.log: list[noise.NoisyRelease] | None = None

    def __len__(self) -> int:
        if self.stop_at is not None:
            return max(self.stop_at + 1, len(self.prefix))
        return len(self.prefix)

    def __getitem__(self, index):  # type: ignore[override]
        if self.stop_at is not None and index == self.stop_at:
            raise StopRun
        if index < len(self.prefix) and self.prefix[index] is not None:
            return self.prefix[index]
        if self.log is None or index >= len(self.log):
            raise RuntimeError(
                "dpstats.privacy.noise.recording changed: a forced output was read before its release was logged"
            )
        return self.log[index].noisy


def run_recorded(
    fit: CoreMechanism,
    design: Design,
    privacy: PrivacyRequest,
    rng: Any,
    *,
    forcing: Forcing | None = None,
    options: Mapping[str, object] | None = None,
) -> tuple[Release | None, list[noise.NoisyRelease]]:
    """Run ``fit`` once under the recorder; return its release (None if stopped) and the log."""
    forced = forcing if forcing is not None and len(forcing) > 0 else None
    with noise.recording(forced_outputs=forced) as log:
        if forcing is not None:
            forcing.log = log
        try:
            release = fit(design, privacy, rng, **dict(options or {}))
        except StopRun:
            release = None
    if forcing is not None:
        forcing.log = None
        if release is None and forcing.stop_at is not None and len(log) != forcing.stop_at + 1:
            raise RuntimeError(
                "dpstats.privacy.noise.recording changed: the run did not stop right after the audited release"
            )
    return release, list(log)


def find_release(log: Sequence[noise.NoisyRelease], name: str, occurrence: int = 0) -> int | None:
    """Index in ``log`` of the ``occurrence``-th release called ``name`` (None if absent)."""
    seen = 0
    for index, release in enumerate(log):
        if release.name == name:
            if seen == occurrence:
                return index
            seen += 1
    return None


# numpy Generator methods whose draws are *added* to a value (location-scale
# noise), with the position of their ``size`` argument.
_BATCHABLE: dict[str, int] = {
    "laplace": 2,
    "normal": 2,
    "logistic": 2,
    "standard_normal": 0,
    "standard_t": 1,
    "standard_cauchy": 0,
}


class NotBatchable(RuntimeError):
    """The audited release draws from a method that cannot be batched."""


class BatchingGenerator:
    """A numpy Generator proxy that batches the draws of one release.

    While ``active()`` is true (the audited release's draws: the recorder's
    log holds exactly the releases before it), a call of a location-scale
    method (:data:`_BATCHABLE`) draws ``size=(batch, *size)`` instead of
    ``size`` (from ``batch_rng`` when given, so that two coupled runs on D and
    D' still get independent batches); every other call is forwarded unchanged. Any other random call
    while active (Gumbel-max, uniform, permutation: releases whose output is
    not ``value + noise``) raises :class:`NotBatchable`; audit those with the
    ``runs`` engine.
    """

    def __init__(
        self,
        rng: np.random.Generator,
        batch: int,
        active: Callable[[], bool],
        batch_rng: np.random.Generator | None = None,
    ) -> None:
        self._rng = rng
        self._batch_rng = rng if batch_rng is None else batch_rng
        self._batch = int(batch)
        self._active = active
        self.batched_calls = 0

    @contextlib.contextmanager
    def exact_noise(self) -> Iterator[None]:
        """Within the block, the grid mechanisms (dpstats/privacy/grid_noise.py) batch their exact noise too.

        While the audited release is active, ``add_laplace`` and
        ``add_gaussian`` return ``step * (round(value / step) + Z)`` with Z of
        shape ``(batch, *value.shape)``: the same exact law as one release, drawn
        ``batch`` times from the batch generator.
        """
        laplace, gaussian = grid_noise.add_laplace, grid_noise.add_gaussian

        def batched(draw: Callable, grid: Callable, single: Callable) -> Callable:
            def add(rng, value: np.ndarray, sensitivity: float, budget: float, changed: int) -> np.ndarray:
                if not self._active() or sensitivity == 0.0:
                    return single(rng, value, sensitivity, budget, changed)
                self.batched_calls += 1
                step, size = grid(sensitivity, budget, changed)
                return grid_noise.released(value, step, draw(self._batch_rng, size, (self._batch, *value.shape)))

            return add

        patches = (
            mock.patch.object(
                grid_noise, "add_laplace", batched(samplers.discrete_laplace, grid_noise.laplace_grid, laplace)
            ),
            mock.patch.object(
                grid_noise, "add_gaussian", batched(samplers.discrete_gaussian, grid_noise.gaussian_grid, gaussian)
            ),
        )
        with patches[0], patches[1]:
            yield

    def __getattr__(self, attribute: str):
        target = getattr(self._rng, attribute)
        if not callable(target):
            return target

        def call(*args, **kwargs):
            if not self._active():
                return target(*args, **kwargs)
            if attribute not in _BATCHABLE:
                raise NotBatchable(f"Generator.{attribute} cannot be batched; use engine='runs'")
            position = _BATCHABLE[attribute]
            args = list(args)
            size = kwargs.pop("size", None)
            if len(args) > position:
                size = args.pop(position)
            shape = () if size is None else tuple(np.atleast_1d(np.asarray(size, dtype=int)).tolist())
            self.batched_calls += 1
            return getattr(self._batch_rng, attribute)(*args, size=(self._batch, *shape), **kwargs)

        return call

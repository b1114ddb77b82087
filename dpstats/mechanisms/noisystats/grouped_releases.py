"""The groups' releases of a vectorised grouped NoisyStats fit, each made when it is first asked for.

:func:`.grouped.fit_groups` computes every group's released values on a
leading group axis; a :class:`~dpstats.mechanisms.base.Release` per group
is only their packaging (post-processing), so it is built from the arrays
on first access (``releases[g]``) and kept. The arrays hold released values
and public facts only, never a row of the data. ``params``, ``cov`` and
``failed`` give every group's at once, without building the releases.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ...privacy.accounting import PrivacySpent
from ..base import Release, failed_release
from .mechanism import FAIL_REASON

Uncertainties = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Each group's covariance (user's units, design order); the bootstrap replicates of the groups with finite
inputs and covariance (F x B x q); and each group's row among them where its replicates are kept, else -1."""


@dataclass(frozen=True)
class RepairBiases:
    """Each group's bias note, and its bound (user's units, design order; None where the repair did not bind)
    from ``bound(g)``: a linear programme per group (dpstats/mechanisms/noisystats/repair_bias.py), so it is
    only solved for the groups whose releases are made."""

    notes: tuple[str | None, ...]
    bound: Callable[[int], np.ndarray | None]


@dataclass(frozen=True, eq=False)
class GroupReleases(Sequence[Release]):
    """Every group's release (module docstring): the estimates (G x q, the user's units and design order; NaN
    where the group failed), whether each group succeeded, the released S_xx and S_xy in the user's units, the
    privacy record, the standard errors' note, their covariances and replicates (None: no standard errors) and
    the repair's biases (None: the failure rule)."""

    params: np.ndarray
    ok: np.ndarray
    nvar: np.ndarray
    ncov: np.ndarray
    spent: PrivacySpent
    note: str
    uncertainty: Uncertainties | None
    biases: RepairBiases | None
    _made: dict[int, Release] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return self.ok.size

    def __getitem__(self, index: int | slice) -> Release | tuple[Release, ...]:
        if isinstance(index, slice):
            return tuple(self[g] for g in range(len(self))[index])
        g = range(len(self))[index]  # negative indices; IndexError beyond the groups
        if g not in self._made:
            self._made[g] = self._make(g)
        return self._made[g]

    @property
    def cov(self) -> np.ndarray:
        """Every group's ``Release.cov`` (G x q x q; NaN where the group failed or without standard errors)."""
        G, q = self.params.shape
        if self.uncertainty is None:
            return np.full((G, q, q), np.nan)
        return np.where(self.ok[:, None, None], self.uncertainty[0], np.nan)

    @property
    def failed(self) -> np.ndarray:
        """Every group's ``Release.failed``."""
        return ~self.ok

    def _make(self, g: int) -> Release:
        """Group g's release, as the ungrouped fit packages it."""
        q = self.params.shape[1]
        stats = {"nvar(x)": self.nvar[g], "ncov(x, y)": self.ncov[g]}
        if not self.ok[g]:
            return failed_release(q, self.spent, FAIL_REASON, self.note, noisy_stats=stats)
        cov, replicates = np.full((q, q), np.nan), None
        if self.uncertainty is not None:
            covs, kept, rows = self.uncertainty
            cov = covs[g]
            replicates = kept[rows[g]] if rows[g] >= 0 else None
        bias = None if self.biases is None else self.biases.notes[g]
        bound = None if self.biases is None else self.biases.bound(g)
        return Release(params=self.params[g], cov=cov, privacy=self.spent, se_note=self.note, noisy_stats=stats,
                       replicates=replicates, interval="percentile", bias=bias, bias_bound=bound)  # fmt: skip

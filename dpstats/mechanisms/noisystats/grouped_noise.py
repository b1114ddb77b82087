"""One Laplace release of a statistic of every group at once, each group at its own noise scale."""

from __future__ import annotations

import numpy as np

from ...privacy.noise import laplace_mechanism


def release_per_group(
    rng: np.random.Generator,
    values: np.ndarray,
    group_sensitivity: np.ndarray,
    entries: float,
    eps: float,
    changed_groups: int,
    name: str,
) -> np.ndarray:
    """``values[g] + Lap(entries * group_sensitivity[g] / eps)`` for every group, as one recorded release.

    Each group's values are divided by its sensitivity first, so that one
    Laplace release of the whole vector (the float-safe sampler of
    dpstats/privacy/noise.py) has the same law as the groups' releases at
    their own scales, and the recorded claim is exact: a neighbour changes at
    most ``changed_groups`` groups, each by at most ``entries`` in L1 after
    the division, so the vector has L1 sensitivity ``changed_groups * entries``
    and is ``changed_groups * eps``-DP (the replay and gray-box audits of
    dpstats/audit/ check that claim).
    """
    per_row = group_sensitivity[:, None] if values.ndim == 2 else group_sensitivity
    noisy = laplace_mechanism(rng, values / per_row, changed_groups * entries, changed_groups * eps, name)
    return np.asarray(noisy) * per_row

"""What every NoisyStats release ends with: the column order, the positive-definiteness test, the Release."""

from __future__ import annotations

import numpy as np

from ...design.matrix import Design
from ...privacy.accounting import PrivacySpent
from ..base import Release

NO_SE_NOTE = "se_share=0: no budget was spent on standard errors, so SEs, tests and intervals are NaN."


def design_order(design: Design) -> np.ndarray:
    """Column order taking (intercept, slopes...) to the design's order."""
    position = np.empty(design.n_columns, dtype=int)
    position[design.slope_indices] = np.arange(1, design.n_columns)
    position[design.intercept_index] = 0
    return position


def is_positive_definite(matrix: np.ndarray) -> bool:
    """Whether a released symmetric matrix is positive definite (its Cholesky factor exists)."""
    try:
        np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError:
        return False
    return True


def noisystats_release(
    params: np.ndarray,
    cov: np.ndarray,
    replicates: np.ndarray | None,
    spent: PrivacySpent,
    note: str,
    stats: dict,
    bias: str | None,
    bias_bound: np.ndarray | None = None,
) -> Release:
    """The release with percentile intervals from the bootstrap's ``replicates`` (None: none finite), and the
    repair's bias, named and bounded (dpstats/mechanisms/noisystats/repair_bias.py)."""
    return Release(
        params=params,
        cov=cov,
        privacy=spent,
        se_note=note,
        noisy_stats=stats,
        replicates=replicates,
        interval="percentile",
        bias=bias,
        bias_bound=None if bias is None else bias_bound,
    )

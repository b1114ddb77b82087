"""NoisyStats (Alabi et al. 2022, Algorithm 1, and its multivariate generalisation): noisy sufficient statistics.

``mechanism`` holds the release and its sensitivity proofs; ``grouped`` runs it
on many groups at once (one pass for the statistics, one batch of noise), for
grouped fits (dpstats/groups/partition.py).
"""

from __future__ import annotations

from ..base import MechanismSpec
from .mechanism import fit, se_share

SPEC = MechanismSpec(
    name="noisystats",
    title="NoisyStats (noisy sufficient statistics)",
    citation="Alabi, McMillan, Sarathy, Smith, Vadhan (2022), Algorithm 1; multivariate generalisation",
    estimators=frozenset({"ols"}),
    needs_bounds=True,
    max_slopes=None,
    needs_delta=False,
    options={"singular": "fail"},
    fit=fit,
    se_share=se_share,
    distributed=frozenset({"ols"}),
    unit_native=True,
    weighted=frozenset({"ols"}),
)

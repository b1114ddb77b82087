"""The unit-level guarantee of a mechanism that does not prove its own: group privacy.

With ``unit=`` and ``max_rows=k`` (dpstats/design/units.py) two neighbouring
datasets differ, after the contribution bounding, in at most k rows, all of
one unit. Tukey depth (its batches hold whole units) and NoisyStats (its
sensitivities and its clustered sandwich) prove the unit-level guarantee
themselves (``MechanismSpec.unit_native``). Every other mechanism is run at
the row-level request of :func:`row_request`, by this lemma:

**Group privacy.** If M is (e, d)-DP for replace-one neighbours, then for
datasets D, D' that differ in at most k rows and any set S of outputs,
``P[M(D) in S] <= e^{k e} P[M(D') in S] + d (1 + e^e + ... + e^{(k-1) e})``.
Proof: replace the differing rows one at a time, D = D_0, D_1, ..., D_k = D'
(each D_i has the same n and every D_i, D_{i+1} are replace-one neighbours);
apply the guarantee to each step and unroll:
``P[M(D_0) in S] <= e^e P[M(D_1) in S] + d <= e^e (e^e P[M(D_2) in S] + d) + d <= ...``.

So a mechanism run at ``e = eps/k`` and ``d = delta / sum_{i<k} e^{i eps/k}``
is (eps, delta)-DP at the unit level, each of its releases at k times its
row-level part (the reported split). For pure DP this is what a direct proof
gives for a release of sums (one unit moves a sum by at most k times one
row's reach, and the Laplace noise of ``k Delta / eps`` is that of ``Delta /
(eps/k)``): for the histogram's counts, KNG's and gradient descent's
gradients, there is nothing better to prove. For Theil-Sen's pair estimates
it is no better either: one unit of k rows sits in k pairs of every matching,
k times one row's share. zCDP is not converted here (its group privacy is
not a chain of the same form): a zCDP request with ``unit=`` is refused.

Standard errors: the intervals of these mechanisms take the rows as
independent, which a unit's rows are not, so under ``unit=`` (k > 1) they
spend nothing on standard errors and report none (:func:`without_row_intervals`).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..design.units import Units
from ..privacy.accounting import PrivacySpent
from .base import PrivacyRequest, Release

NO_CLUSTERED_SE = (
    "no standard errors: this mechanism's intervals take the rows as independent, which one {unit}'s rows are "
    "not; method='noisystats' (pure) or method='tukey' (with delta) cluster them by {unit}"
)


def unit_native_methods() -> frozenset[str]:
    """The registered mechanisms that prove the unit-level guarantee and cluster their intervals themselves."""
    from . import REGISTRY  # the registry imports this package's modules: looked up at call time

    return frozenset(name for name, spec in REGISTRY.items() if spec.unit_native)


def row_request(privacy: PrivacyRequest, k: int) -> PrivacyRequest:
    """The row-level request whose group privacy over k rows is ``privacy`` (module docstring), with no
    budget for standard errors."""
    eps = float(privacy.eps) / k
    if privacy.delta == 0:
        return PrivacyRequest(eps=eps, delta=0.0, se_share=0.0)
    delta = math.exp(math.log(privacy.delta) - log_chain(eps, k))
    if delta == 0:
        raise ValueError(f"delta={privacy.delta:g} spread over {k} rows at eps/{k} = {eps:g} is below a float")
    return PrivacyRequest(eps=eps, delta=delta, se_share=0.0)


def log_chain(eps: float, k: int) -> float:
    """``log(1 + e^eps + ... + e^{(k-1) eps})`` = ``log(expm1(k eps)) - log(expm1(eps))``, in closed form
    (a public k may be large)."""
    return _log_expm1(k * eps) - _log_expm1(eps)


def _log_expm1(t: float) -> float:
    """``log(e^t - 1)`` for t > 0, without overflow."""
    return t + math.log1p(-math.exp(-t)) if t > 1.0 else math.log(math.expm1(t))


def unit_spent(spent: PrivacySpent, privacy: PrivacyRequest, units: Units, grouped: bool) -> PrivacySpent:
    """What a call reports at the unit level: the user's eps and delta, and the neighbour relation.

    ``grouped``: the mechanism ran at :func:`row_request`, so each part of its
    split counts k times (group privacy); otherwise (a unit-native mechanism)
    its split is already at the unit level.
    """
    k = units.max_rows
    split = tuple((name, part * k) for name, part in spent.split) if grouped else spent.split
    return replace(
        spent, eps=float(privacy.eps), delta=privacy.delta, split=split, neighbours=units.neighbours, unit=units.name
    )


def without_row_intervals(release: Release, units: Units) -> Release:
    """The release with no standard errors: they would take one unit's rows as independent."""
    p = np.asarray(release.params).size
    note = NO_CLUSTERED_SE.format(unit=units.name)
    return replace(release, cov=np.full((p, p), np.nan), replicates=None, se_note=note)

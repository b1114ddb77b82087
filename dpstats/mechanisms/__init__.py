"""The registry of mechanisms: one module per family, selected by name.

``method="auto"`` chooses from public information only (DESIGN.md section 3).
"""

from __future__ import annotations

from . import noisystats
from .base import MechanismSpec, PrivacyRequest, Release

REGISTRY: dict[str, MechanismSpec] = {
    "noisystats": MechanismSpec(
        name="noisystats",
        title="NoisyStats (noisy sufficient statistics)",
        citation="Alabi, McMillan, Sarathy, Smith, Vadhan (2022), Algorithm 1; multivariate generalisation",
        estimators=frozenset({"ols"}),
        needs_bounds=True,
        max_slopes=None,
        needs_delta=False,
        options={},
        fit=noisystats.fit,
    ),
}


def get_mechanism(method: str, estimator: str) -> MechanismSpec:
    """The registered mechanism ``method`` for ``estimator`` ('ols' or 'quantreg')."""
    if not isinstance(method, str) or method not in REGISTRY:
        known = ", ".join(["auto", *sorted(k for k, v in REGISTRY.items() if estimator in v.estimators)])
        raise ValueError(f"unknown method {method!r}; choose one of: {known}")
    spec = REGISTRY[method]
    if estimator not in spec.estimators:
        raise ValueError(f"method={method!r} does not fit {estimator}")
    return spec


def choose_auto(estimator: str) -> tuple[str, str]:
    """The mechanism ``method="auto"`` picks for ``estimator``, and why.

    The choice may use public information only (n, the number of regressors,
    eps, which metadata was declared). With one OLS mechanism available it is
    NoisyStats, the method Alabi et al. (2022, section 4.2.5) recommend when
    the inputs' bounds are known.
    """
    if estimator != "ols":
        raise ValueError(f"no mechanism fits {estimator} in this version")
    return "noisystats", "the only OLS mechanism in this version"


__all__ = ["REGISTRY", "MechanismSpec", "PrivacyRequest", "Release", "choose_auto", "get_mechanism"]

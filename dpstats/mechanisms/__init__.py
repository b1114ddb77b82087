"""The registry of mechanisms: one subpackage per family, selected by name and imported lazily.

``method="auto"`` chooses among them from public information only (dpstats/planning/).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from .base import MechanismSpec, PrivacyRequest, Release

FAMILIES = ("noisystats", "gradient", "theilsen", "histogram", "kng", "tukey", "objective", "newton")
"""The registered mechanism families, each a subpackage that declares its ``SPEC``."""


class _Registry(Mapping[str, MechanismSpec]):
    """The mechanisms by name; a family's modules are imported only when its spec is asked for."""

    def __getitem__(self, name: str) -> MechanismSpec:
        if name not in FAMILIES:
            raise KeyError(name)
        return importlib.import_module(f"{__name__}.{name}").SPEC

    def __contains__(self, name: object) -> bool:
        return name in FAMILIES

    def __iter__(self) -> Iterator[str]:
        return iter(FAMILIES)

    def __len__(self) -> int:
        return len(FAMILIES)


REGISTRY: Mapping[str, MechanismSpec] = _Registry()


def get_mechanism(method: str, estimator: str) -> MechanismSpec:
    """The registered mechanism ``method`` for ``estimator`` ('ols' or 'quantreg')."""
    if not isinstance(method, str) or method not in REGISTRY:
        known = ", ".join(["auto", *sorted(k for k, v in REGISTRY.items() if estimator in v.estimators)])
        raise ValueError(f"unknown method {method!r}; choose one of: {known}")
    spec = REGISTRY[method]
    if estimator not in spec.estimators:
        raise ValueError(f"method={method!r} does not fit {estimator}")
    return spec


def weighted_methods(estimator: str) -> frozenset[str]:
    """The mechanisms that take survey weights for ``estimator`` (``MechanismSpec.weighted``)."""
    return frozenset(name for name, spec in REGISTRY.items() if estimator in spec.weighted)


__all__ = ["REGISTRY", "MechanismSpec", "PrivacyRequest", "Release", "get_mechanism", "weighted_methods"]

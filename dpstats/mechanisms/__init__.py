"""The registry of mechanisms: one subpackage per family, selected by name and imported lazily.

``method="auto"`` chooses from public information only (docs/DESIGN.md section 3).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from .base import MechanismSpec, PrivacyRequest, Release

FAMILIES = ("noisystats", "gradient", "theilsen", "histogram", "kng", "tukey")
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


def choose_auto(estimator: str, n_columns: int) -> tuple[str, str]:
    """The mechanism ``method="auto"`` picks for ``estimator``, and why.

    The choice uses public information only: the estimator and the number of
    design columns, which the formula and the declared levels decide. A
    mechanism whose guarantee is proven is preferred to one whose sampler is
    not (docs/DESIGN.md section 2).

    * Least squares: NoisyStats, which fits any number of regressors and is
      the method Alabi et al. (2022, section 4.2.5) recommend when the inputs'
      bounds are known and eps * n * var(x) is large.
    * Quantile regression with one design column (an intercept alone: Smith's
      private quantile, or one regressor through the origin): KNG, which
      samples that density exactly (Reimherr & Awan 2019, section 4.5).
      With more columns KNG's sampler is MCMC whose mixing is not proven, so
      auto takes the perturbed histogram (Lei 2011), a proven eps-DP quantile
      regression; ``method="kng"`` remains available.
    """
    if estimator == "quantreg":
        if n_columns == 1:
            return "kng", "one design column: KNG samples its density exactly (Reimherr & Awan 2019, section 4.5)"
        return "histogram", (
            "KNG's sampler is MCMC with no proven mixing bound for several columns; "
            "the perturbed histogram (Lei 2011) is proven eps-DP"
        )
    if estimator != "ols":
        raise ValueError(f"no mechanism fits {estimator} in this version")
    return "noisystats", "fits any number of regressors; for one regressor in a small cell try method='theilsen'"


__all__ = ["REGISTRY", "MechanismSpec", "PrivacyRequest", "Release", "choose_auto", "get_mechanism"]

"""The registry of mechanisms: one module per family, selected by name.

``method="auto"`` chooses from public information only (docs/DESIGN.md section 3).
"""

from __future__ import annotations

from . import gradient, histogram, kng, noisystats, theilsen, tukey
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
    "gradient": MechanismSpec(
        name="gradient",
        title="DP gradient descent (DPGradDescent: pure / approx / zCDP)",
        citation="Alabi, McMillan, Sarathy, Smith, Vadhan (2022), Algorithms 6 and 7, Lemmas 22-24",
        estimators=frozenset({"ols"}),
        needs_bounds=True,
        max_slopes=1,
        needs_delta=False,
        options=gradient.DEFAULTS,
        fit=gradient.fit,
        check_request=gradient.check_request,
    ),
    "theilsen": MechanismSpec(
        name="theilsen",
        title="DP Theil-Sen (median of pairwise predictions: exp / wide / smooth)",
        citation="Alabi, McMillan, Sarathy, Smith, Vadhan (2022), Algorithms 2-5, Lemmas 5, 10, 20, 21",
        estimators=frozenset({"ols"}),
        needs_bounds=True,
        max_slopes=1,
        needs_delta=False,
        options=theilsen.DEFAULTS,
        fit=theilsen.fit,
        check_request=theilsen.check_request,
    ),
    "histogram": histogram.SPEC,
    "kng": kng.SPEC,
    "tukey": MechanismSpec(
        name="tukey",
        title="Tukey depth with propose-test-release (no data bounds)",
        citation="Amin, Joseph, Ribero, Vassilvitskii (2023), Algorithm 2; Brown et al. (2021), Lemma 3.8",
        estimators=frozenset({"ols"}),
        needs_bounds=False,
        max_slopes=None,
        needs_delta=True,
        options=tukey.DEFAULTS,
        fit=tukey.fit,
        check_request=tukey.check_request,
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
    eps, which metadata was declared). For OLS it is NoisyStats, which fits any
    number of regressors and is the method Alabi et al. (2022, section 4.2.5)
    recommend when the inputs' bounds are known and eps * n * var(x) is large;
    choosing Theil-Sen automatically for small cells is left for a later version. Quantile regression uses KNG, whose
    asymptotic noise is negligible next to the sampling error (Reimherr & Awan
    2019, section 4.5.1).
    """
    if estimator == "quantreg":
        return "kng", "KNG is the quantile-regression mechanism of Reimherr & Awan (2019, section 4.5)"
    if estimator != "ols":
        raise ValueError(f"no mechanism fits {estimator} in this version")
    return "noisystats", "fits any number of regressors; for one regressor in a small cell try method='theilsen'"


__all__ = ["REGISTRY", "MechanismSpec", "PrivacyRequest", "Release", "choose_auto", "get_mechanism"]

"""What every mechanism is and returns.

A mechanism is a pure function of a :class:`~dpstats.design.matrix.Design`, the
privacy parameters, a generator and its options; it returns a
:class:`Release` that holds the private outputs only. Everything after it is
post-processing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ..design.matrix import Design
from ..privacy.accounting import PrivacySpent


@dataclass(frozen=True)
class PrivacyRequest:
    """The validated privacy parameters of one call.

    ``eps`` is the total budget of the call (with ``delta`` for approximate
    DP); a zCDP mechanism may be given ``rho`` instead, and then ``eps`` is
    None. Exactly one of the two is set (:func:`dpstats.privacy.accounting.check_budget`).
    ``se_share`` is the part of the budget that standard errors may spend
    (None: the mechanism's default; 0: none, and only what post-processing
    gives for free is reported).
    """

    eps: float | None
    delta: float = 0.0
    rho: float | None = None
    se_share: float | None = None

    def share(self, default: float) -> float:
        """The part of the budget for standard errors: the user's ``se_share``, else ``default``."""
        return default if self.se_share is None else self.se_share


def refuse_rho(privacy: PrivacyRequest, name: str) -> None:
    """A mechanism that is not zCDP takes eps, never rho."""
    if privacy.rho is not None:
        raise ValueError(f"method={name!r} is not a zCDP mechanism: pass eps (and delta), not rho")


@dataclass(frozen=True)
class Release:
    """The private outputs of one mechanism run, in the design's column order.

    ``params`` are in the user's units (NaN when ``failed``). ``cov`` is the
    covariance of the estimates that the standard errors come from: it covers
    the sampling error and the privacy noise, is NaN where the mechanism
    reports no standard error and infinite where the release that standard
    errors need failed; ``se_note`` says how it was obtained.
    ``replicates`` (B x p, or None) are draws of the estimates' law around
    ``params`` from a bootstrap that is post-processing of the release;
    intervals are then bootstrap intervals of the kind ``interval``
    (``"basic"`` or ``"percentile"``,
    :func:`dpstats.uncertainty.intervals.confidence_intervals`).
    ``noisy_stats`` are released sufficient statistics (no array of length n).
    ``bias`` names a bias the estimate keeps (binning at the declared bins, a
    pull towards a domain's boundary), decided from public facts and released
    values only, and ``bias_bound`` bounds it per coefficient (user units,
    post-processing; None where nothing bounds it). The result's intervals
    carry a finite bound and its status says "biased" where the bound can
    dominate the standard error (dpstats/uncertainty/bias.py; docs/DESIGN.md
    section 2: an interval is a promise).
    """

    params: np.ndarray
    cov: np.ndarray
    privacy: PrivacySpent
    se_note: str
    failed: bool = False
    reason: str | None = None
    noisy_stats: Mapping[str, np.ndarray] = field(default_factory=dict)
    hyperparameters: Mapping[str, object] = field(default_factory=dict)
    replicates: np.ndarray | None = None
    interval: str = "basic"
    bias: str | None = None
    bias_bound: np.ndarray | None = None


FitFunction = Callable[..., Release]
ShareFunction = Callable[[int, int, PrivacyRequest, Mapping[str, object]], float]
"""``se_share(n, columns, privacy, options)``: the part of eps a fit's standard errors spend (public facts only)."""


def no_se_share(n: int, columns: int, privacy: PrivacyRequest, options: Mapping[str, object]) -> float:
    """Standard errors that are post-processing of the point's release spend nothing."""
    return 0.0


@dataclass(frozen=True)
class MechanismSpec:
    """A registered mechanism: what it supports and its paper defaults."""

    name: str
    title: str
    citation: str
    estimators: frozenset[str]
    needs_bounds: bool
    max_slopes: int | None
    needs_delta: bool
    options: Mapping[str, object]
    fit: FitFunction
    check_request: Callable[[PrivacyRequest, Mapping[str, object]], None] | None = None
    request_notion: Callable[[PrivacyRequest, Mapping[str, object]], str] | None = None
    se_share: ShareFunction = no_se_share
    """The part of eps a fit's standard errors spend: the user's ``se_share`` or the mechanism's default,
    from public facts; so the point estimate's budget is known before a fit (dpstats/planning/error_model.py)."""
    distributed: frozenset[str] = frozenset()
    """The estimators whose ``fit`` reads the rows only through ``Design.total`` (sums over chunks of
    rows, dpstats/design/moments.py), so that it runs on a Dask DataFrame's partitions
    (dpstats/distributed/dask_design.py)."""
    weighted: frozenset[str] = frozenset()
    """The estimators whose ``fit`` takes survey weights (``design.weights``: dpstats/frontend/weights.py) and
    proves its guarantee with them; a call with ``weights=`` is refused before any data are read elsewhere."""
    unweighted_reason: str = "its sensitivity is proven for unweighted rows only"
    """Why a call with ``weights=`` is refused (for the estimators outside ``weighted``)."""
    unit_native: bool = False
    """Whether ``fit`` proves its own guarantee at the unit level when ``design.units`` is set: it is given the
    unit-level request, bounds what one unit's rows move and clusters its standard errors by unit. Any other
    mechanism is run at the row-level request that group privacy turns into the unit-level one, with no
    standard errors (dpstats/mechanisms/units.py)."""

    def check_privacy(self, privacy: PrivacyRequest, options: Mapping[str, object]) -> None:
        """Check the privacy parameters against the mechanism before any data are read.

        A mechanism whose requirements depend on its options (gradient
        descent: pure, approx or zCDP) supplies ``check_request(privacy, options)``,
        which raises a ValueError naming the option; otherwise ``rho`` is
        refused and ``needs_delta`` decides: delta is required when it is true
        and must be 0 when it is false.
        """
        if self.check_request is not None:
            self.check_request(privacy, options)
            return
        refuse_rho(privacy, self.name)
        delta = privacy.delta
        if delta > 0 and not self.needs_delta:
            raise ValueError(f"method={self.name!r} is pure DP: delta must be 0")
        if self.needs_delta and delta == 0:
            raise ValueError(f"method={self.name!r} needs delta > 0")

    def notion(self, privacy: PrivacyRequest, options: Mapping[str, object]) -> str:
        """The notion a call reports (``"pure"``, ``"approx"`` or ``"zcdp"``), from its public inputs.

        Known before any data are read, so that a
        :class:`~dpstats.privacy.budget.PrivacyBudget` can refuse the call first. A
        mechanism whose notion depends on its options (gradient descent's
        ``variant``) supplies ``request_notion``; otherwise delta decides.
        """
        if self.request_notion is not None:
            return self.request_notion(privacy, options)
        return "approx" if privacy.delta > 0 else "pure"

    def check_options(self, options: Mapping[str, object]) -> dict[str, object]:
        """Merge user options over the defaults; unknown names are an error."""
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            known = ", ".join(sorted(self.options)) or "none"
            raise ValueError(f"unknown option(s) {unknown} for method={self.name!r} (known: {known})")
        return {**self.options, **options}

    def check_design(self, design: Design) -> None:
        """Schema checks that depend only on the formula's shape."""
        slopes = design.slope_indices.size
        if self.max_slopes is not None and slopes > self.max_slopes:
            raise ValueError(f"method={self.name!r} supports at most {self.max_slopes} regressor(s) plus intercept")
        if slopes == 0 and design.intercept_index is not None:
            raise ValueError(f"method={self.name!r} needs at least one regressor")


def failed_release(p: int, privacy: PrivacySpent, reason: str, se_note: str, **extra) -> Release:
    """A failure output (the paper's ⊥): NaN estimates, the budget still spent."""
    nan = np.full(p, np.nan)
    return Release(
        params=nan,
        cov=np.full((p, p), np.nan),
        privacy=privacy,
        se_note=se_note,
        failed=True,
        reason=reason,
        **extra,
    )

"""A call whose privacy unit is every row of one unit (``unit=``, ``max_rows=k``): its checks, auto's candidates
and the release (docs/DESIGN.md section 2).

With k = 1 a unit has one row and the call is a row-level call that names its
unit. With k > 1 a unit-native mechanism (``MechanismSpec.unit_native``: it
proves the guarantee at the unit level and clusters its standard errors by
unit) runs at the user's request; any other runs at the row-level request
whose group privacy is the user's (dpstats/mechanisms/units.py), without
standard errors, and its release reports the unit-level budget. auto chooses
among the unit-native mechanisms; its error model reads NoisyStats at eps / k
(its sensitivities are k times one row's) and Tukey depth at the whole eps with
n the number of units (its batches hold whole units): dpstats/planning/candidates.py,
``Candidate.at_unit_level``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from ..design.matrix import Design
from ..mechanisms import MechanismSpec, PrivacyRequest, Release
from ..mechanisms.units import row_request, unit_native_methods, unit_spent, without_row_intervals


def check_unit_plan(
    spec: MechanismSpec | None, privacy: PrivacyRequest, notion: str, estimator: str, max_rows: int
) -> None:
    """A ``unit=`` call's public checks, before any data are read."""
    if notion == "zcdp":
        raise ValueError("unit= takes eps (and delta): a zCDP budget's group privacy is not converted here")
    if max_rows == 1:
        return
    if spec is None:
        if estimator in ("logit", "probit"):
            raise ValueError(
                "with unit= and max_rows > 1, a binary fit needs an explicit method=: 'newton' or 'histogram' give "
                "a point estimate at eps / max_rows without standard errors; 'tukey' (delta > 0), whose batches "
                "hold whole units, clusters its intervals by unit but needs many units"
            )
        if estimator == "quantreg" and privacy.delta == 0:
            raise ValueError(
                "with unit= and max_rows > 1, auto's quantile regression needs delta > 0: Tukey depth, whose "
                "models hold whole units, is the mechanism that clusters its intervals by unit; an explicit "
                "method= gives a point estimate at eps / max_rows without standard errors"
            )
        return
    if not spec.unit_native and privacy.se_share not in (None, 0.0):
        raise ValueError(
            f"method={spec.name!r} has no standard errors clustered by unit: with unit= it spends nothing on "
            "them; pass se_share=None or 0, or method='noisystats' or 'tukey'"
        )
    if not spec.unit_native and privacy.eps is not None:
        row_request(privacy, max_rows)  # a delta that group privacy would spread below a float is refused here


def unit_methods(
    unit: tuple[str, int] | None, among: frozenset[str] | None = None, auto: bool = False, estimator: str = ""
) -> frozenset[str] | None:
    """The methods auto may choose for a call's unit among ``among`` (None: all; on a Dask DataFrame, those that
    run there): with units of several rows, the unit-native ones. For an ``auto`` call left with none (a Dask
    DataFrame's quantile regression: Tukey's quantile fits need every row in one place), a refusal before any
    data are read."""
    if unit is None or unit[1] == 1:
        return among
    native = unit_native_methods() if among is None else among & unit_native_methods()
    if auto and not native:
        runs = ", ".join(repr(name) for name in sorted(among or ()))
        raise ValueError(
            f"with unit= and max_rows > 1, method='auto' chooses among the mechanisms that prove the unit level, "
            f"and none of them fits {estimator} on a Dask DataFrame: pass an explicit method= ({runs}: a point "
            "estimate at eps / max_rows without standard errors), or .compute() the data into a pandas DataFrame"
        )
    return native


def unit_release(
    spec: MechanismSpec,
    design: Design,
    privacy: PrivacyRequest,
    rng: np.random.Generator,
    options: Mapping[str, object],
) -> Release:
    """``spec``'s release on ``design`` at the call's privacy unit (module docstring)."""
    units = design.units
    if units is None:
        return spec.fit(design, privacy, rng, **options)
    grouped = units.max_rows > 1 and not spec.unit_native
    if grouped:
        release = without_row_intervals(spec.fit(design, row_request(privacy, units.max_rows), rng, **options), units)
    else:
        release = spec.fit(design, privacy, rng, **options)
    return replace(release, privacy=unit_spent(release.privacy, privacy, units, grouped))

"""Neighbouring data frames for audits through the public API, and the survey-weight move.

docs/DESIGN.md section 2: neighbours have the same public n and differ in one row;
weights are data, their range ``[0, W]`` public, and "one row moves every weighted
statistic by at most W times an unweighted row". The move that reaches it
(:func:`weight_move`): a row that counts for nothing in D (weight 0) counts for
the most it can in D' (weight W) with its values at a corner of the declared box;
every weighted sum then moves by W times that row's terms. A mechanism that forgot
the W in its sensitivity is about W times less private than it claims on this pair.

For the replay (dpstats/audit/replay.py), which runs a core mechanism on designs,
:func:`design_pair` builds both sides' :class:`~dpstats.design.matrix.Design` as a
call does (the formula front end, with the call's survey declaration: weights, PSUs,
strata), and :func:`as_called` is a weighted mechanism as ``dp_ols``, ``dp_quantreg``,
``dp_logit`` and ``dp_probit`` run it on that design (dpstats/api/estimators.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from ..api.binary_release import DEFAULT_MARGINS_SHARE, binary_release
from ..api.unit_calls import unit_release
from ..frontend.formula import build_design
from ..frontend.survey import SurveyDeclaration
from ..glm.links import LINKS
from ..mechanisms import get_mechanism
from .neighbours import NeighbourPair
from .runner import CoreMechanism


@dataclass(frozen=True)
class FramePair:
    """Two data frames with the same rows but one, as a public call reads them (replace-one neighbours)."""

    label: str
    d: pd.DataFrame
    d_prime: pd.DataFrame


def weight_move(
    base: pd.DataFrame,
    weights: str,
    w_max: float,
    before: Mapping[str, object],
    after: Mapping[str, object],
    row: int = 0,
) -> FramePair:
    """``base`` with row ``row`` at weight 0 and values ``before`` in D, at weight ``w_max`` and values ``after``
    in D' (every other cell of the row and every other row unchanged)."""
    if weights in before or weights in after:
        raise ValueError("the weight is set by the move: leave it out of before and after")
    d, d_prime = base.copy(), base.copy()
    for frame, values, weight in ((d, before, 0.0), (d_prime, after, float(w_max))):
        for column, value in {**values, weights: weight}.items():
            if column not in frame.columns:
                raise ValueError(f"{column!r} is not a column of the base frame")
            frame.loc[frame.index[row], column] = value
    label = f"row {row}: weight 0 at {dict(before)} -> weight {w_max:g} at {dict(after)} (n = {len(base)})"
    return FramePair(label, d, d_prime)


def design_pair(
    pair: FramePair,
    formula: str,
    bounds: Mapping[str, Sequence[float]],
    levels: Mapping[str, Sequence] | None,
    survey: SurveyDeclaration,
    binary: bool = False,
) -> NeighbourPair:
    """Both sides of ``pair`` as the designs a call with ``survey`` builds (clipped, weighted, with its PSUs)."""

    def design(data: pd.DataFrame):
        return build_design(formula, data, bounds, levels, binary=binary, survey=survey)[0]

    return NeighbourPair(pair.label, design(pair.d), design(pair.d_prime))


def as_called(estimator: str, method: str, q: float = 0.5) -> CoreMechanism:
    """``method``'s fit for ``estimator`` as the public call runs it on a built design: a binary model's release
    then its marginal effects at the default share (dpstats/api/binary_release.py), quantile regression at
    ``q``."""
    spec = get_mechanism(method, estimator)
    if estimator in LINKS:

        def binary(design, privacy, rng, **options):
            return binary_release(spec, design, privacy, rng, options, estimator, DEFAULT_MARGINS_SHARE)[0]

        return binary
    quantile = {"q": q} if estimator == "quantreg" else {}

    def fit(design, privacy, rng, **options):
        return unit_release(spec, design, privacy, rng, {**options, **quantile})

    return fit

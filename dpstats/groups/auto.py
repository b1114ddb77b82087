"""``method="auto"`` in a grouped call: a mechanism per group, from that group's public facts.

Each group's choice is the ungrouped rule (dpstats/planning/selection.py)
read at the group's public size m_g (declared, or released by its noisy
count) and with the group's fit marked as read side by side: auto then ranks
by the tail of the error, prices a failure as the worst fit that answered,
and weighs the scenarios that match the data's spread
(dpstats/groups/spread.py) when the call released it. Groups of the same
size get the same choice, so the rule runs once per distinct size.

What the ungrouped auto does not do here: refuse by its default rule.
Small-area estimates are used side by side and in aggregate, and each
group's interval says how wide it is, so a group too noisy to publish on its
own is still fitted. A user's ``target=`` still applies, per group: each
group chooses among the mechanisms predicted to err by at most the target on
the first regressor (in a typical scenario, as dpstats/planning/refusal.py
reads it), and a group where none is, or whose size no mechanism accepts, is
refused before its mechanism runs and spends nothing: a failed release with
the reason. When the sizes are public and every group would be refused, the
call is refused before it spends anything (dpstats/groups/fit.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from ..design.matrix import Design
from ..frontend.weights import planning_rows
from ..mechanisms import MechanismSpec, PrivacyRequest, get_mechanism, weighted_methods
from ..planning.facts import DataSpread, PublicFacts
from ..planning.selection import choose


@dataclass(frozen=True)
class GroupChoice:
    """The mechanism, its options and the reason, for the groups of one public size (None: no mechanism fits)."""

    spec: MechanismSpec | None
    options: Mapping[str, object]
    reason: str

    @property
    def key(self) -> tuple[str | None, str]:
        """What the groups fitted together share: the mechanism and its options (the reason names the size)."""
        return (None if self.spec is None else self.spec.name), repr(sorted(self.options.items()))


def choose_per_group(
    design: Design,
    sizes: np.ndarray,
    request: PrivacyRequest,
    estimator: str,
    spread: DataSpread | None,
    target: float | None = None,
    allowed: frozenset[str] | None = None,
) -> tuple[GroupChoice, ...]:
    """Every group's choice (module docstring), in the groups' order, among the methods ``allowed`` (None: all;
    on a Dask DataFrame, those whose statistics are sums: dpstats/distributed/by_group.py); ``target`` as
    checked by the caller. With survey weights (``design.weight_bounds``) among the mechanisms that take them,
    each group's size read as the rows its weights are worth (dpstats/frontend/weights.py, ``planning_rows``)."""
    base = replace(
        PublicFacts.of(design, request.eps, request.delta, estimator, request.se_share),
        side_by_side=True,
        spread=spread,
    )
    weights = design.weight_bounds
    if weights is not None:
        allowed = weighted_methods(estimator) if allowed is None else allowed & weighted_methods(estimator)
    rows = (lambda m: m) if weights is None else (lambda m: planning_rows(m, weights))
    by_size = {
        int(m): _choice(replace(base, n=rows(int(m))), request, estimator, target, allowed) for m in np.unique(sizes)
    }
    return tuple(by_size[int(m)] for m in sizes)


def _choice(
    facts: PublicFacts,
    request: PrivacyRequest,
    estimator: str,
    target: float | None,
    allowed: frozenset[str] | None = None,
) -> GroupChoice:
    """The rule at one size, among the mechanisms ``allowed`` (None: all) predicted within ``target``; a size
    where none is (or no mechanism accepts it) gives a choice of none (public facts only)."""
    try:
        choice = choose(facts, allowed, within=target)
    except ValueError as refusal:
        return GroupChoice(None, {}, f"refused before spending: a group of {facts.n} rows: {refusal}")
    spec = get_mechanism(choice.method, estimator)
    options = spec.check_options(choice.options)
    spec.check_privacy(request, options)
    spread = facts.spread
    level = "" if spread is None else (
        f"; released on the unit scale: residual SD {spread.noise[0]:.2g} to {spread.noise[1]:.2g}, "
        f"regressor variance {spread.fill[0]:.2g} to {spread.fill[1]:.2g}"
    )  # fmt: skip
    return GroupChoice(spec, options, f"a group of {facts.n} rows: {choice.reason}{level}")

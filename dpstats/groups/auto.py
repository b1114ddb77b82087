"""``method="auto"`` in a grouped call: a mechanism per group, from that group's public facts.

Each group's choice is the ungrouped rule (dpstats/planning/selection.py)
read at the group's public size m_g (declared, or released by its noisy
count) and with the group's fit marked as read side by side: auto then ranks
by the tail of the error, prices a failure as the worst error, and weighs the
scenarios of the released noise level (dpstats/groups/noise_level.py) when
the call released one. Groups of the same size get the same choice, so the
rule runs once per distinct size.

What the ungrouped auto does not do here: refuse. Small-area estimates are
used side by side and in aggregate, and each group's interval says how wide
it is, so a group too noisy to publish on its own is still fitted. A group
whose size no mechanism accepts gets a failed release with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from ..design.matrix import Design
from ..mechanisms import MechanismSpec, PrivacyRequest, get_mechanism
from ..planning.facts import PublicFacts
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
    noise_level: float | None,
) -> tuple[GroupChoice, ...]:
    """Every group's choice (module docstring), in the groups' order."""
    base = replace(
        PublicFacts.of(design, request.eps, request.delta, estimator, request.se_share),
        side_by_side=True,
        noise_level=noise_level,
    )
    by_size = {int(m): _choice(replace(base, n=int(m)), request, estimator) for m in np.unique(sizes)}
    return tuple(by_size[int(m)] for m in sizes)


def _choice(facts: PublicFacts, request: PrivacyRequest, estimator: str) -> GroupChoice:
    """The rule at one size; a size no mechanism accepts gives a choice of none (public facts only)."""
    try:
        choice = choose(facts)
    except ValueError as refusal:
        return GroupChoice(None, {}, f"no mechanism fits a group of {facts.n} rows: {refusal}")
    spec = get_mechanism(choice.method, estimator)
    options = spec.check_options(choice.options)
    spec.check_privacy(request, options)
    level = "" if facts.noise_level is None else f"; released noise level {facts.noise_level:.2g} (unit scale)"
    return GroupChoice(spec, options, f"a group of {facts.n} rows: {choice.reason}{level}")

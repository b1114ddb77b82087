"""One binary-response release: the mechanism's coefficients, then the averages at them for marginal effects.

A ``dp_logit`` / ``dp_probit`` call spends ``margins_share`` of eps (default
``DEFAULT_MARGINS_SHARE``) on the noisy averages at the released coefficients
(dpstats/glm/at_fit.py) and the rest on the mechanism. The two compose
sequentially: the second release reads the first's output, and what the call
reports is their sum, never more than eps. With ``margins_share=0`` nothing is
spent on them and ``get_margeff`` says so. Under approximate DP the whole delta
goes to the mechanism (the averages are pure).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from ..design.matrix import Design
from ..glm.at_fit import AtFit, release_at_fit
from ..glm.links import get_link
from ..mechanisms import MechanismSpec, PrivacyRequest, Release
from .unit_calls import unit_release

DEFAULT_MARGINS_SHARE = 0.05
"""The part of eps a binary fit spends on what its average marginal effects need."""


def binary_release(
    spec: MechanismSpec,
    design: Design,
    privacy: PrivacyRequest,
    rng: np.random.Generator,
    options: Mapping[str, object],
    link: str,
    margins_share: float,
) -> tuple[Release, AtFit | None]:
    """The mechanism's release at ``(1 - margins_share) eps``, then the averages at its coefficients (module
    docstring); the release reports the whole spend and its split."""
    eps = float(privacy.eps or 0.0)
    eps_margins = eps * margins_share
    release = unit_release(spec, design, replace(privacy, eps=eps - eps_margins), rng, {**options, "link": link})
    if eps_margins == 0.0:
        return release, None
    unit_rows = 1 if design.units is None else design.units.max_rows
    at_fit = release_at_fit(
        get_link(link), design.X, design.x_bounds, release.params, eps_margins, rng, unit_rows, design.weights,
        design.weight_bounds,
    )  # fmt: skip
    spent = release.privacy
    split = spent.split or (("coefficients", spent.eps),)
    total = replace(spent, eps=spent.eps + eps_margins, split=(*split, ("marginal effects", eps_margins)))
    return replace(release, privacy=total), at_fit

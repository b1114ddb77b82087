"""Objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011, Algorithm 2): logit and probit.

``scaling`` (rows into the unit L2 ball), ``losses`` (the 1-Lipschitz losses of
the index), ``calibration`` (Algorithm 2's Delta and beta, and the proof),
``sampler`` (the noise vector b), ``solver`` (the perturbed objective's
minimiser), ``inference`` (standard errors from a noisy information matrix) and
``mechanism`` (the release).
"""

from __future__ import annotations

from ..base import MechanismSpec
from .mechanism import DEFAULTS, check_request, fit, se_share

SPEC = MechanismSpec(
    name="objective",
    title="Objective perturbation (logit, probit)",
    citation="Chaudhuri, Monteleoni & Sarwate (2011), Algorithm 2; Kifer, Smith & Thakurta (2012), section 4",
    estimators=frozenset({"logit", "probit"}),
    needs_bounds=True,
    max_slopes=None,
    needs_delta=False,
    options=DEFAULTS,
    fit=fit,
    se_share=se_share,
    check_request=check_request,
    unweighted_reason=(
        "objective perturbation's sensitivity (Chaudhuri et al. 2011) is for a loss whose every row is "
        "1-Lipschitz; a weighted loss is W-Lipschitz, and that calibration is not built"
    ),
)

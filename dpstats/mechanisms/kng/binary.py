"""KNG for logit and probit: the negative (quasi-)log-likelihood as the convex loss of Theorem 3.1.

Reimherr & Awan (2019), Theorem 3.1 holds "for any convex loss" whose gradient
has a bounded sensitivity on the domain; ``dp_logit`` / ``dp_probit`` with
``method="kng"`` use ``l(phi; D) = -sum_i [y_i log F(eta_i) + (1 - y_i) log(1 - F(eta_i))]``,
``eta_i = u_i'phi``, with F the logistic or normal cdf (``dpstats.glm.links``) and y
in [0, 1] (0/1, or a fractional response: Papke & Wooldridge's quasi-likelihood).

The scaled problem. The regressors are mapped onto [-1, 1] by their declared
bounds as for least squares (mechanism.UnitBoxScale); the response is not (the
likelihood needs y in [0, 1]): ``y_mid = 0``, ``y_half = 1``. With an intercept
this is an exact reparametrisation of the MLE (the likelihood depends on x
through eta only), and ``theta_j = phi_j / h_j``,
``theta_0 = phi_0 - sum_j theta_j m_j`` (``UnitBoxScale.to_user``).

The domain ``Theta = {||phi||_1 <= B}``: on the declared box ``|eta| <= B C_inf``
(``C_inf = max_j max |u_j| = 1``), so Theta holds the models whose fitted
probabilities stay within ``[F(-B), F(B)]`` over the whole box of the regressors.
The default B (mechanism.default_radius: public n, the draw's eps and d) is
``B0 + g ln+(n eps / (500 (d + 1)))`` with ``B0 = 6``, ``g = 1`` for the logit
(fitted probabilities within [0.0025, 0.9975] on the box; the sensitivity below
is at most 2 whatever B, so a wide domain costs little) and ``B0 = 3.5``, ``g = 1``
for the probit (the same probabilities, on the probit's scale, which is about
1/1.6 of the logit's; its sensitivity grows like B). Measured: statsmodels'
fair data (``affairs > 0`` on six regressors with their public ranges) has
``||phi||_1`` = 4.18 (logit) and 2.48 (probit) on the scaled problem; a base
rate of 10% alone needs ``|phi_0| = 2.2`` (logit); AER's SwissLabor probit with a
square in age has 15.1, which ``g = 0.5`` left outside the domain at eps = 1e9 (B = 12.8,
and the chain did not reach the boundary: a fit 3.4 times off, unflagged), ``g = 1``
inside (B = 22.5, statsmodels' fit to 1e-3: vignettes/08_binary_outcomes.md).

Sensitivity (replace-one, on Theta; brute-forced in tests/test_kng_logit.py and
replayed in its audit). Row i adds ``-s(y_i, eta_i) u_i`` to the gradient, with
``s = d loglik / d eta`` linear in y and decreasing in eta (the log-likelihood is
concave in eta), so over y in [0, 1] and ``|eta| <= B C_inf``,
``|s| <= S(B) = s(1, -B C_inf)``: ``F(B C_inf)`` for the logit (``|y - F|``, below 1
for every B) and the inverse Mills ratio ``phi(B)/Phi(-B)`` (about ``B + 1/B``) for
the probit, whose score is unbounded in eta but not on Theta. A replaced row
moves the gradient by ``-a u + b u'`` with ``|a|, |b| <= S``, each coordinate by
at most ``2 S max |u_j|``:

    Delta = 2 S(B C_inf) C_K,   C_K = sup ||u||_K over the box

(:func:`binary_sensitivity`; 2 F(B) for the linf norm with an intercept). For
linf with an intercept and a slope it is attained at the vertex ``phi = B e_j``
by moving a row from ``(u_j = -1, y = 1)`` (eta = -B) to ``(u_j = 1, y = 0)``
(eta = B): the intercept coordinate moves by ``2 S(B)``.

Sampling: dpstats/mechanisms/kng/binary_sampler.py (MCMC; the release is not
``proven`` and names mechanism.FLOAT_CAVEAT). Standard errors:
dpstats/mechanisms/kng/binary_inference.py. As eps grows, KNG concentrates on
the zero of the gradient, the MLE, when it lies in Theta (the default B grows
with n eps); otherwise on the boundary, and the fit is flagged (:func:`binary_bias`).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ...design.matrix import Design
from ...glm.links import Link, get_link
from ...privacy import noise
from ...privacy.accounting import PrivacySpent
from ..base import PrivacyRequest, Release
from . import binary_inference, inference
from . import binary_sampler as sampler
from .mechanism import (
    BOUNDARY,
    FLOAT_CAVEAT,
    UnitBoxScale,
    box_norm,
    check_B,
    check_norm,
    check_steps,
    default_radius,
    default_steps,
)
from .sampler import probe_points

CAVEAT = (
    "MCMC sampler: the estimate is one chain started at the centre of the domain after {steps} sweeps (fixed from "
    "d = {d}, never from the data), each an independence move that inverts the gradient at a K-norm draw "
    "(accepted by the ratio of the Hessians' determinants) and a hit-and-run Metropolis move; both leave the KNG "
    "density invariant. A draw whose law is within total variation eta of the KNG density is "
    "(eps, eta (1 + e^eps))-DP; eta is not bounded by a proof, it is checked by goodness-of-fit tests against the "
    "numerically normalised density in two dimensions (tests/test_kng_logit.py)"
)


def score_bound(link: Link, eta_max: float) -> float:
    """``S = sup |s(y, eta)|`` over y in [0, 1] and ``|eta| <= eta_max``: ``s(1, -eta_max)`` (module docstring)."""
    return float(link.score_factor(np.array(1.0), np.array(-eta_max)))


def binary_sensitivity(link: Link, B: float, norm: str, column_bounds: np.ndarray) -> float:
    """``Delta = 2 S(B C_inf) C_K`` (module docstring)."""
    return 2.0 * score_bound(link, B * box_norm(column_bounds, "linf")) * box_norm(column_bounds, norm)


def binary_scale(design: Design) -> UnitBoxScale:
    """The regressors' map onto [-1, 1]; the response is kept in [0, 1] (module docstring)."""
    return replace(UnitBoxScale.from_design(design), y_mid=0.0, y_half=1.0)


def binary_bias(phi: np.ndarray, B: float, link: Link, outside: float = 0.0) -> str | None:
    """The boundary's pull, as mechanism.boundary_bias, in the terms of a binary model's domain."""
    size = float(np.abs(phi).sum())
    if size < BOUNDARY * B and outside <= binary_inference.BOUNDARY_NOTE:
        return None
    share = (
        "the noisy information matrix does not tell how much of the noise law lies outside it"
        if math.isnan(outside)
        else f"{outside:.0%} of the untruncated noise law lies outside it"
    )
    low = float(link.mean(np.array(-B)))
    return (
        f"the pull towards the boundary of KNG's domain (||phi||_1 = {size:.3g} against B = {B:g} on the scaled "
        f"problem; {share}). The domain holds the models whose linear index stays within +-B, i.e. whose fitted "
        f"probabilities stay within [{low:.2g}, 1 - {low:.2g}], over the whole box of the regressors; KNG's "
        "estimate always lies in it, so if the non-private fit lies outside, or the noise is a sizeable part of "
        "the domain, the estimate is pulled towards the boundary and the interval need not cover the non-private "
        "fit. Remedies: a larger eps (the default B grows with n eps), a larger B, or tighter bounds"
    )


def fit(
    design: Design,
    privacy: PrivacyRequest,
    rng: np.random.Generator,
    *,
    link: str,
    norm: str = "linf",
    B: float | None = None,
    steps: int | None = None,
) -> Release:
    """One KNG draw of the logit or probit coefficients for ``design`` (y in [0, 1]), and its standard errors."""
    model = get_link(link)
    norm = check_norm(norm)
    scale = binary_scale(design)
    d, n = design.n_columns, design.n
    # an intercept alone has no exact line draw here: it gets the sweeps of d = 2
    steps = default_steps(max(d, 2), model.name) if steps is None else check_steps(steps)
    bounds = scale.column_bounds(design)
    share = privacy.share(inference.DEFAULT_SHARE[model.name])
    eps = privacy.eps * (1.0 - share)
    B = default_radius(model.name, n, eps, d) if B is None else check_B(B)
    delta = binary_sensitivity(model, B, norm, bounds)
    U, y = scale.transform(design)
    target = sampler.BinaryTarget(
        np.asarray(U, dtype=float), np.asarray(y, dtype=float), model, eps / (2 * delta), norm
    )
    name = f"kng({model.name})"
    probes = probe_points(d, B)
    phi = noise.exponential_mechanism_release(
        rng,
        lambda r: sampler.sample_binary(r, target, B, steps)[0],
        lambda: target.utility(probes),
        delta,
        eps,
        name,
    )
    phi = np.asarray(phi, dtype=float).reshape(d)
    se_split = binary_inference.split(privacy.eps * share, d, scale.intercept_index) if share > 0 else ()
    spent = PrivacySpent(
        notion="pure",
        eps=privacy.eps,
        split=((name, eps), *se_split),
        caveats=(CAVEAT.format(steps=steps, d=d), FLOAT_CAVEAT),
        proven=False,
    )
    hyper: dict[str, object] = {
        "norm": norm,
        "B": B,
        "steps": steps,
        "sensitivity": float(f"{delta:.6g}"),
        "link": model.name,
    }
    se = binary_inference.no_standard_errors(d)
    if share > 0:
        problem = binary_inference.Problem(target.U, target.y, bounds, scale.intercept_index, scale.to_user)
        se = binary_inference.standard_errors(rng, problem, phi, model, privacy.eps * share, target.c, norm, B)
    return Release(
        params=scale.to_user(phi),
        cov=se.cov,
        privacy=spent,
        se_note=se.note,
        hyperparameters=hyper,
        replicates=se.replicates,
        interval="percentile",
        bias=binary_bias(phi, B, model, se.outside),
    )

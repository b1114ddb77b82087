"""Objective perturbation for logit and probit (Chaudhuri, Monteleoni & Sarwate 2011, Algorithm 2).

``dp_logit(..., method="objective")`` / ``dp_probit``: diffprivlib's
LogisticRegression method, with no regulariser by default (Kifer, Smith &
Thakurta 2012, section 4: the ridge Delta of Algorithm 2 is all the strong
convexity the proof needs). The steps:

1. Scale every row into the unit L2 ball from the declared bounds only
   (dpstats/mechanisms/objective/scaling.py).
2. Split eps: ``eps_obj = (1 - se_share) eps`` for the coefficients, the rest for
   the standard errors.
3. Calibrate Algorithm 2 at ``eps_obj`` with the normalised loss's smoothness c
   (dpstats/mechanisms/objective/calibration.py, losses.py): without a
   regulariser ``Delta = c / (n (e^{eps_obj/4} - 1))`` and ``||b|| ~ Gamma(p, 4 / eps_obj)``.
4. Draw b (dpstats/mechanisms/objective/sampler.py: continuous, not
   float-safe) and release the minimiser of
   ``(1/n) sum_i l(x_i'f) + ((Lambda + Delta) / 2) ||f||^2 + b'f / n``
   (dpstats/mechanisms/objective/solver.py), mapped back to the user's units.
5. Standard errors (dpstats/mechanisms/objective/inference.py): a noisy
   information matrix at the released coefficients (Laplace, float-safe).

Sensitivity and the audit. The proof (calibration.py) rests on
``||b(f; D) - b(f; D')|| <= 2`` for every f, where ``b(f; D) = -(sum_i l'(x_i'f) x_i
+ n (Lambda + Delta) f)`` is the noise that makes f the minimiser on D. The
release goes through dpstats/privacy/noise.py's
``exponential_mechanism_point_release`` with the utility ``u_D(f) = -||b(f; D)||``
at the released f, sensitivity 2 and eps ``4 beta``: the b-part of the
density is ``exp(-beta ||b||) = exp(4 beta u / (2 * 2))``, the exponential
mechanism's form, and the Jacobian plays the normaliser's part. The replay
(tests/test_objective_logit.py) checks ``|u_D(f) - u_D'(f)| <= 2`` at the
released f on corner neighbours; the vector bound ``||b(f; D) - b(f; D')|| <= 2``
is checked by brute force there too.

The estimand. The minimiser of the perturbed objective is the MLE shrunk by
the ridge ``Lambda + Delta`` plus the noise's shift. Without a regulariser the
ridge vanishes as eps grows (at eps = 1e9 it is 0 and b is 1e-9 in size: the fit
is statsmodels' Logit/Probit), and the standard errors name its pull as a bias
when it exceeds half a standard error. The probit's loss is continued beyond
``|eta| > index_bound`` (losses.py); a release whose index leaves that range
somewhere on the declared box is flagged, since rows there would be fitted by
the continued loss.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping

import numpy as np

from ...design.matrix import Design
from ...glm.links import get_link
from ...privacy import noise
from ...privacy.accounting import PrivacySpent
from ..base import PrivacyRequest, Release, failed_release, refuse_rho
from . import inference, sampler, solver
from .calibration import SENSITIVITY, calibrate
from .losses import IndexLoss
from .scaling import RowScale

DEFAULTS: dict[str, object] = {"regularization": 0.0, "index_bound": 5.0}
"""``regularization``: Lambda of Algorithm 2 (0: none, the MLE's estimand); ``index_bound``: the probit's R."""

CAVEATS = (
    "objective perturbation: the noise vector b (Gamma norm, uniform direction) is drawn in floating point and the "
    "perturbed objective minimised numerically (Newton's method to a relative step of 1e-10)",
    noise.FLOAT_CAVEAT,
)


def check_regularization(value: object) -> float:
    """Lambda: a finite number >= 0."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real) or not 0 <= float(value) < math.inf:
        raise ValueError("regularization (Lambda of Chaudhuri et al. 2011, Algorithm 2) must be a finite number >= 0")
    return float(value)


def check_index_bound(value: object) -> float:
    """R: a number in [1, 30] (the probit's loss is continued beyond |eta| > R)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real) or not 1 <= float(value) <= 30:
        raise ValueError("index_bound (where the probit's loss is continued linearly) must be a number in [1, 30]")
    return float(value)


def check_request(privacy: PrivacyRequest, options: Mapping[str, object]) -> None:
    """Objective perturbation is pure DP: eps only; the options are checked before any data are read."""
    refuse_rho(privacy, "objective")
    if privacy.delta > 0:
        raise ValueError("method='objective' is pure DP: delta must be 0")
    check_regularization(options["regularization"])
    check_index_bound(options["index_bound"])


def se_share(n: int, columns: int, privacy: PrivacyRequest, options: Mapping[str, object]) -> float:
    """The part of eps the noisy information matrix spends: the user's ``se_share``, else 0.2."""
    return privacy.share(inference.DEFAULT_SHARE)


def perturbation_gap(loss: IndexLoss, X: np.ndarray, y: np.ndarray, ridge: float, f: np.ndarray) -> float:
    """``-||b(f; D)||``: minus the norm of the noise that makes ``f`` the minimiser on these rows (the audit's
    utility; ``ridge = n rho``)."""
    if not np.all(np.isfinite(f)):
        return -math.inf
    return -float(np.linalg.norm(solver.gradient(loss, X, y, f) + ridge * f))


def index_bias(theta: np.ndarray, x_bounds: np.ndarray, bound: float) -> str | None:
    """The probit's continued loss, when the released index can leave [-R, R] on the declared box, else None."""
    ends = np.asarray(x_bounds, dtype=float) * theta[:, None]
    reach = max(abs(float(ends.min(axis=1).sum())), abs(float(ends.max(axis=1).sum())))
    if reach <= bound:
        return None
    return (
        f"the probit loss is continued linearly beyond |index| > {bound:g} (the mechanism needs a Lipschitz loss), "
        f"and the released fit reaches |index| = {reach:.3g} on the declared box: rows fitted beyond it would pull "
        "the estimate away from the probit MLE (raise index_bound, at the cost of more noise, if such rows exist)"
    )


def ridge_bias(pull: np.ndarray, cov: np.ndarray) -> str | None:
    """The ridge's pull when it exceeds ``RIDGE_BIAS`` standard errors, else None (post-processing)."""
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = float(np.nanmax(np.abs(pull) / se)) if pull.size else 0.0
    if not ratio > inference.RIDGE_BIAS:
        return None
    return (
        f"the ridge of objective perturbation (Lambda + Delta) shrinks the estimate towards 0 on the scaled problem "
        f"by up to {ratio:.2g} standard errors (estimated from the noisy information); it vanishes as eps or n grows "
        "(or with regularization=0)"
    )


def fit(
    design: Design,
    privacy: PrivacyRequest,
    rng: np.random.Generator,
    *,
    regularization: float = 0.0,
    index_bound: float = 5.0,
    link: str | None = None,
) -> Release:
    """One objective-perturbation release of the logit or probit coefficients (module docstring)."""
    link_ = get_link(link)
    lam = check_regularization(regularization)
    loss = IndexLoss.of(link_, check_index_bound(index_bound))
    scale = RowScale.from_design(design)
    X, y = scale.transform(design.X), np.asarray(design.y, dtype=float)
    n, p = X.shape
    share = privacy.share(inference.DEFAULT_SHARE)
    eps_obj, eps_se = privacy.eps * (1.0 - share), privacy.eps * share
    cal = calibrate(eps_obj, n, loss.smoothness, lam)
    ridge = n * cal.ridge

    def draw(r: np.random.Generator) -> np.ndarray:
        return solver.minimise(loss, X, y, ridge, sampler.perturbation(r, p, cal.beta))

    f = noise.exponential_mechanism_point_release(
        rng,
        draw,
        lambda point: perturbation_gap(loss, X, y, ridge, point),
        SENSITIVITY,
        4.0 * cal.beta,
        "objective perturbation",
    )
    split = (("objective perturbation", eps_obj), *((("information matrix", eps_se),) if share > 0 else ()))
    spent = PrivacySpent(notion="pure", eps=privacy.eps, split=split, caveats=CAVEATS, proven=False)
    hyper = {
        "regularization": lam,
        "Delta": float(f"{cal.delta:.6g}"),
        "noise_norm_scale": float(f"{cal.noise_scale:.6g}"),
        "lipschitz": float(f"{loss.lipschitz:.6g}"),
        "c": float(f"{loss.smoothness:.6g}"),
    }
    if loss.index_bound is not None:
        hyper["index_bound"] = loss.index_bound
    if not np.all(np.isfinite(f)):
        reason = "the perturbed objective's minimiser was not found (separated rows with a vanishing ridge)"
        return failed_release(p, spent, reason, inference.NO_SE_NOTE, hyperparameters=hyper)
    A = scale.to_user
    theta = A @ f
    bias = None if loss.index_bound is None else index_bias(theta, design.x_bounds, loss.index_bound)
    cov, note = np.full((p, p), np.nan), inference.NO_SE_NOTE
    if share > 0:
        widths = inference.entry_widths(scale, scale.column_bounds(design.x_bounds), link_)
        noisy = inference.release_information(rng, link_, X, f, widths, eps_se)
        info = inference.repair(noisy, float(widths.sum()) / eps_se)
        se = inference.covariance(info, f, ridge, loss.lipschitz, cal.beta, A)
        cov, note = se.cov, se.note
        bias = bias or ridge_bias(se.pull, cov)
    return Release(params=theta, cov=cov, privacy=spent, se_note=note, hyperparameters=hyper, bias=bias)

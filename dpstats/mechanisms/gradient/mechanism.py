"""DP gradient descent for the predictions p25, p75 (Alabi et al. 2022, Algorithms 6 and 7).

The model is simple linear regression on the data rescaled to [0, 1]^2 by the
declared bounds (:class:`~dpstats.design.matrix.CenteredUnitScale`), parameterised
by the predictions at x = 1/4 and x = 3/4: ``yhat(x) = 2 (p25 (3/4 - x) + p75 (x - 1/4))``.
Each of T rounds computes the per-row gradient of ``(y - yhat)^2 / 2``,

    g_i = ( 2 (yhat_i - y_i)(3/4 - x_i),  2 (yhat_i - y_i)(x_i - 1/4) ),

clips every row's g_i to the box [-tau, tau]^2 BEFORE summing, adds noise to the
sum, and takes the AdaGrad-norm step ``p <- p - Delta_t / sqrt(sum_{l <= t} ||Delta_l||^2)``.
The output is the mean of the last T/2 iterates p^(T/2+1), ..., p^T; then
slope = 2 (p75 - p25) and intercept = 1.5 p25 - 0.5 p75 on the unit scale,
mapped back to the user's units (exact, since the model has an intercept).

Two deliberate readings of the pseudo-code, both as in the authors' code:
the paper prints the row term as ``2 (y_i - yhat)(...)`` and then steps
``p - gamma Delta``, which is gradient *ascent*; the authors' code uses
``yhat - y`` (descent), as here. The paper's return line averages p^(T/2) ..
p^(T-1), which leaves the last noisy gradient unused; the authors' code (and
this module) average the T/2 iterates after each update, p^(T/2+1) .. p^T.
T must therefore be even (and >= 2).

Sensitivity (replace-one). Every row's clipped contribution c_i lies in
[-tau, tau]^2, whatever the iterate. Replacing one row changes the sum by
c - c' with c, c' in that box, so each coordinate moves by at most 2 tau:
L1 sensitivity 4 tau (Lemma 24) and L2 sensitivity 2 sqrt(2) tau (Lemma 22).
Both are attained: at the iterate (-1, -1) with tau = 1 (yhat = -1 everywhere)
the row (x, y) = (0, 1) contributes (-1, +1) and the row (1, 1) contributes
(+1, -1). At the default start (0.5, 0.5) no row reaches the clip (|g| <= 3/4)
and the worst pair moves the sum by (1.5, 0.5) in absolute value: the bound
holds for every iterate, not only the start.

Variants (option ``variant``):

* ``"pure"`` (default; Algorithm 6, Lemma 24): each round releases the sum with
  Laplace noise of scale 4 tau / (eps / T) per coordinate; eps-DP by basic
  composition of T eps/T-DP releases.
* ``"approx"`` (Algorithm 7 + Lemma 23): Gaussian noise with sigma = 2 tau /
  sqrt(rho / T) per round (each round rho/T-zCDP, Lemma 22), with rho the
  largest value whose conversion :func:`~dpstats.privacy.accounting.zcdp_to_approx_eps`
  (Bun & Steinke 2016, Lemma 3.6 and Proposition 1.3) is at most eps at the
  user's delta: (eps, delta)-DP.
* ``"zcdp"`` (Algorithm 7, the paper's DPGDzCDP): rho-zCDP. Given ``rho=``,
  that rho; its implied (eps', delta) is reported at the user's delta, or at
  ``DEFAULT_REPORT_DELTA`` = 1e-6 if none was given (and said so in the
  caveats). Given eps and delta > 0 instead, the eps is the total, as
  everywhere: rho is the largest value whose conversion (Bun & Steinke 2016,
  Proposition 1.3 and Lemma 3.6) is at most eps at delta, and the call
  reports that rho with the eps and delta passed. eps without delta is
  refused: zCDP implies no pure eps-DP guarantee.

Standard errors (:mod:`.inference`): with the share ``se_share`` of the
budget (default 0.1 of eps, or of rho for the Gaussian variants; the T rounds
get the rest, in equal parts) a noisy HC sandwich and the gradients' Gram
matrix are released after the point, and a parametric bootstrap reruns the
T noisy rounds on the least-squares gradient: basic intervals covering the
sampling error and the privacy noise. ``se_share=0`` is the paper's
algorithm draw for draw, with NaN standard errors.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from ...design.matrix import CenteredUnitScale, Design, place_coefficients
from ...privacy import noise
from ...privacy.accounting import DEFAULT_REPORT_DELTA, PrivacySpent, approx_to_zcdp_rho, zcdp_reported
from ...privacy.noise import gaussian_mechanism, laplace_mechanism
from ...uncertainty.intervals import infinite_cov, replicate_covariance
from ..base import PrivacyRequest, Release
from . import inference

VARIANTS = ("pure", "approx", "zcdp")
#: Paper defaults (Table 1; start and step rule from the authors' code, docs/ALGORITHMS.md).
DEFAULTS: dict[str, object] = {"variant": "pure", "T": 80, "tau": 1.0, "start": (0.5, 0.5)}

SE_NOTE = (
    "Standard errors and basic bootstrap intervals cover the sampling error (an HC1 sandwich from a noisy "
    "bread and residual meat, released with se_share of the budget) and the privacy noise (the T noisy "
    f"AdaGrad rounds rerun on the least-squares gradient in {inference.REPLICATES} replicates: a parametric "
    "bootstrap, Ferrando, Wang & Sheldon 2022)."
)
CLIP_CAVEAT = (
    " tau < 1: the clip may bind near the optimum, which the bootstrap (unclipped least-squares gradient) "
    "does not model; the intervals may then be too narrow or off-centre."
)
NO_SE_NOTE = "se_share=0: no budget was spent on standard errors, so SEs, tests and intervals are NaN."

#: A noisy release of one round's clipped gradient sum: (value, round index) -> noisy value.
StepRelease = Callable[[np.ndarray, int], np.ndarray]


def l1_sensitivity(tau: float) -> float:
    """Replace-one L1 sensitivity of the clipped gradient sum: 4 tau (Lemma 24)."""
    return 4.0 * tau


def l2_sensitivity(tau: float) -> float:
    """Replace-one L2 sensitivity of the clipped gradient sum: 2 sqrt(2) tau (Lemma 22)."""
    return 2.0 * math.sqrt(2.0) * tau


# --------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------


def check_options(options: Mapping[str, object]) -> dict[str, object]:
    """Validate the hyperparameters; return them normalised (unknown names are an error)."""
    unknown = sorted(set(options) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} for method='gradient' (known: {', '.join(sorted(DEFAULTS))})")
    opts = {**DEFAULTS, **options}
    variant = opts["variant"]
    if not isinstance(variant, str) or variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(map(repr, VARIANTS))} (got {variant!r})")
    T = opts["T"]
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 2 or T % 2:
        raise ValueError(f"T must be an even integer >= 2 (the output averages the last T/2 iterates); got {T!r}")
    tau = opts["tau"]
    if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not math.isfinite(tau) or tau <= 0:
        raise ValueError(f"tau (the clipping bound) must be a positive finite number; got {tau!r}")
    start = opts["start"]
    try:
        start_pair = tuple(float(s) for s in start)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        start_pair = ()
    if len(start_pair) != 2 or not all(math.isfinite(s) for s in start_pair):
        raise ValueError(f"start must be two finite numbers (p25, p75) on the [0, 1] scale; got {start!r}")
    return {"variant": variant, "T": int(T), "tau": float(tau), "start": start_pair}


def check_request(privacy: PrivacyRequest, options: Mapping[str, object]) -> None:
    """Check the options, and the privacy parameters against the variant (before any data are read)."""
    variant = check_options(options)["variant"]
    delta = privacy.delta
    if variant != "zcdp" and privacy.rho is not None:
        raise ValueError(f"rho is for variant='zcdp'; variant={variant!r} takes eps (and delta)")
    if variant == "zcdp" and privacy.rho is None and delta == 0:
        raise ValueError(
            "method='gradient' with variant='zcdp' needs rho=..., or eps with delta > 0 "
            "(eps is the call's total and zCDP implies no pure eps-DP guarantee)"
        )
    if variant == "pure" and delta > 0:
        raise ValueError(
            "method='gradient' with variant='pure' is pure DP: delta must be 0 "
            "(use variant='approx' for (eps, delta)-DP, or variant='zcdp')"
        )
    if variant == "approx" and delta == 0:
        raise ValueError("method='gradient' with variant='approx' needs delta > 0")


def request_notion(privacy: PrivacyRequest, options: Mapping[str, object]) -> str:
    """The notion a call reports: its variant's ("pure", "approx" or "zcdp"), known before any data are read."""
    return str(check_options(options)["variant"])


# --------------------------------------------------------------------------
# The algorithm on the unit scale
# --------------------------------------------------------------------------


def clipped_gradient_sum(u: np.ndarray, v: np.ndarray, p: np.ndarray, tau: float) -> np.ndarray:
    """Sum over rows of each row's gradient clipped to [-tau, tau]^2 (clip, then sum)."""
    ab = np.empty((2, u.size))
    np.subtract(0.75, u, out=ab[0])  # yhat = 2 (p25 (3/4 - x) + p75 (x - 1/4))
    np.subtract(u, 0.25, out=ab[1])
    r = (4.0 * float(p[0])) * ab[0] + (4.0 * float(p[1])) * ab[1] - 2.0 * v  # 2 (yhat - y)
    ab *= r  # row i's gradient is column i: (r_i (3/4 - x_i), r_i (x_i - 1/4))
    np.clip(ab, -tau, tau, out=ab)  # clip every row's contribution ...
    return ab.sum(axis=1)  # ... before the sum


def descend(
    u: np.ndarray,
    v: np.ndarray,
    release: StepRelease,
    T: int,
    tau: float,
    start: tuple[float, float],
) -> np.ndarray:
    """Run T noisy rounds; return the mean of the last T/2 iterates (p25, p75).

    ``release(g, t)`` returns the noisy version of round t's clipped gradient
    sum g. The step size uses released values only (post-processing); a round
    whose cumulative squared norm is 0 (possible only with forced outputs)
    does not move. Released values are capped at +-1e150 (post-processing, a
    no-op at any budget where the output means anything) so that the sum of
    squares cannot overflow.
    """
    p = np.array(start, dtype=float)
    sum_sq = 0.0
    tail = np.zeros(2)
    for t in range(T):
        noisy = np.clip(np.asarray(release(clipped_gradient_sum(u, v, p, tau), t), dtype=float), -1e150, 1e150)
        sum_sq += float(noisy @ noisy)
        if sum_sq > 0.0:
            p = p - noisy / math.sqrt(sum_sq)
        if t >= T // 2:
            tail += p
    return tail / (T // 2)


def _check_noise_scale(scale: float, T: int) -> None:
    """Refuse a budget so small that the per-round noise scale is not a finite float (public values only)."""
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"the budget is too small for T = {T} rounds: the per-round noise scale overflows")


SE_SENSITIVITY_CAP = 6.0
"""No standard-error release has a sensitivity above this (L1 of the weighted meat: 5.6 at R = 2 widths)."""


def _check_se_scale(se_budget: float, gaussian: bool) -> None:
    """Refuse a standard-error budget so small that a release's noise scale is not a finite float (public values)."""
    smallest = se_budget * min(fraction for _, fraction in inference.FRACTIONS)
    with np.errstate(all="ignore"):
        scale = SE_SENSITIVITY_CAP / (math.sqrt(2.0 * smallest) if gaussian else smallest) if smallest > 0 else math.inf
    if not math.isfinite(scale):
        raise ValueError("the budget for standard errors is too small: its noise scale overflows (pass se_share=0)")


def _split(point: str, budget: float, share: float) -> tuple[tuple[str, float], ...]:
    """The point's T rounds get ``(1 - share) budget``; the standard errors' releases share the rest."""
    parts = ((point, budget * (1.0 - share)),)
    if share == 0:
        return parts
    return (*parts, *((name, budget * share * fraction) for name, fraction in inference.FRACTIONS))


def zcdp_spent(privacy: PrivacyRequest, T: int, share: float = 0.0) -> PrivacySpent:
    """What variant 'zcdp' spends: the rho given, or the largest rho that meets the eps and delta given.

    The split lists rho: the T rounds' part and the standard errors' (zCDP composes by adding rho).
    """
    split = f"{T} noisy gradients (equal parts of rho, Gaussian)"
    if privacy.rho is None:
        rho = approx_to_zcdp_rho(privacy.eps, privacy.delta)
        caveat = (
            f"rho = {rho:.6g} is the largest rho whose conversion (Bun & Steinke 2016, Prop. 1.3 / Lemma 3.6) "
            "gives at most the eps passed at the delta passed; the split lists rho"
        )
        return PrivacySpent("zcdp", privacy.eps, privacy.delta, rho, _split(split, rho, share), caveats=(caveat,))
    caveats = [f"the call is rho-zCDP with rho = {privacy.rho:.6g}; the eps shown is implied at delta"]
    if privacy.delta == 0:
        caveats.append(f"implied (eps, delta) shown at the default delta = {DEFAULT_REPORT_DELTA:g} (none given)")
    eps, report_delta = zcdp_reported(privacy.rho, privacy.delta)
    split_parts = _split(split, privacy.rho, share)
    return PrivacySpent("zcdp", eps, report_delta, privacy.rho, split_parts, caveats=tuple(caveats))


@dataclass(frozen=True)
class Budget:
    """How one call spends its budget: the rounds' release rule, the standard errors' budget, the record."""

    release: StepRelease
    step_noise: inference.NoiseLaw
    se_budget: float
    gaussian: bool
    spent: PrivacySpent


def _budget(
    variant: str, privacy: PrivacyRequest, T: int, tau: float, share: float, rng: np.random.Generator
) -> Budget:
    """The per-round noisy release of ``variant`` on ``(1 - share)`` of the budget, and the record of the call.

    Pure: eps-DP releases, eps split by basic composition. Approx and zCDP:
    every release (the T rounds and the standard errors') is Gaussian and
    rho-zCDP with its part of rho; the parts add up to rho (Bun & Steinke
    2016, Lemma 2.3) and approx converts the total once.
    """
    eps, delta = privacy.eps, privacy.delta
    if variant == "pure":
        point = eps * (1.0 - share)
        _check_noise_scale(l1_sensitivity(tau) / (point / T) if point / T > 0 else math.inf, T)
        spent = PrivacySpent(notion="pure", eps=eps, split=_split(f"{T} noisy gradients (eps/{T} each)", eps, share))

        def laplace_step(g: np.ndarray, t: int) -> np.ndarray:
            return laplace_mechanism(rng, g, l1_sensitivity(tau), point / T, f"gradient[{t}]")

        noise_law = inference.step_noise(False, point, T, l1_sensitivity(tau))
        if share > 0:
            _check_se_scale(eps * share, False)
        return Budget(laplace_step, noise_law, eps * share, False, spent)

    if variant == "approx":
        rho = approx_to_zcdp_rho(eps, delta)
        spent = PrivacySpent(
            notion="approx",
            eps=eps,
            delta=delta,
            rho=rho,
            split=_split(f"{T} noisy gradients (equal parts of rho, Gaussian)", rho, share),
            caveats=(
                f"(eps, delta) from rho-zCDP with rho = {rho:.6g}, the largest rho whose conversion "
                "(Bun & Steinke 2016, Lemma 3.6 / Prop. 1.3; Alabi et al. Lemma 23) gives at most eps at delta; "
                "the split lists rho",
            ),
        )
    else:
        spent = zcdp_spent(privacy, T, share)
        rho = spent.rho

    point = rho * (1.0 - share)
    _check_noise_scale(l2_sensitivity(tau) / math.sqrt(2.0 * point / T) if point / T > 0 else math.inf, T)

    def gaussian_step(g: np.ndarray, t: int) -> np.ndarray:
        return gaussian_mechanism(rng, g, l2_sensitivity(tau), point / T, f"gradient[{t}]")

    noise_law = inference.step_noise(True, point, T, l2_sensitivity(tau))
    if share > 0:
        _check_se_scale(rho * share, True)
    return Budget(gaussian_step, noise_law, rho * share, True, spent)


def fit_unit(
    u: np.ndarray,
    v: np.ndarray,
    privacy: PrivacyRequest,
    rng: np.random.Generator,
    **options: object,
) -> tuple[np.ndarray, PrivacySpent]:
    """(p25, p75) on the unit scale from ``u, v`` in [0, 1], and the privacy spent: the paper's algorithm.

    The core of :func:`fit` for callers that already hold unit-scale data
    (benchmarks): the whole budget goes to the T rounds (no standard errors,
    whatever ``privacy.se_share``). Validates ``options`` and delta as
    :func:`check_request` does.
    """
    check_request(privacy, options)
    opts = check_options(options)
    budget = _budget(opts["variant"], privacy, opts["T"], opts["tau"], 0.0, rng)
    p = descend(np.asarray(u, float), np.asarray(v, float), budget.release, opts["T"], opts["tau"], opts["start"])
    return p, budget.spent


def se_share(n: int, columns: int, privacy: PrivacyRequest, options: Mapping[str, object]) -> float:
    """The part of eps the released sandwich spends (the user's ``se_share``, else :data:`.inference.DEFAULT_SHARE`)."""
    return privacy.share(inference.DEFAULT_SHARE)


def fit(design: Design, privacy: PrivacyRequest, rng: np.random.Generator, **options: object) -> Release:
    """DP gradient descent on ``design`` (one regressor plus intercept; module docstring), with its intervals."""
    if design.intercept_index is None or design.slope_indices.size != 1:
        raise ValueError("method='gradient' fits one regressor plus an intercept (formula 'y ~ x')")
    check_request(privacy, options)
    opts = check_options(options)
    share = privacy.share(inference.DEFAULT_SHARE)
    T, tau, start = opts["T"], opts["tau"], opts["start"]
    budget = _budget(opts["variant"], privacy, T, tau, share, rng)
    scale = CenteredUnitScale.from_design(design)
    U, v = scale.transform(design)
    u = U[:, 0]
    p25, p75 = descend(u, v, budget.release, T, tau, start)
    unit = inference.COEF_FROM_P @ np.array([p25, p75])
    theta = scale.jacobian() @ unit + scale.offset()
    params = place_coefficients(design, theta[0], theta[1:])
    if share == 0:
        return Release(params, np.full((2, 2), np.nan), budget.spent, NO_SE_NOTE, hyperparameters=opts)

    released = inference.release_sandwich(rng, u, v, unit, budget.se_budget, budget.gaussian)
    note = SE_NOTE + (CLIP_CAVEAT if tau < 1.0 else "")
    draws = inference.bootstrap(noise.postprocessing_rng(rng), unit, released, design.n, budget.step_noise, T, start)
    if draws is None:
        return Release(params, infinite_cov(2), budget.spent, note, hyperparameters=opts)
    user = (draws @ scale.jacobian().T + scale.offset())[:, _design_order(design)]
    return Release(params, replicate_covariance(user), budget.spent, note, hyperparameters=opts, replicates=user)


def _design_order(design: Design) -> np.ndarray:
    """Column order taking (intercept, slope) to the design's order."""
    position = np.empty(design.n_columns, dtype=int)
    position[design.slope_indices] = 1
    position[design.intercept_index] = 0
    return position

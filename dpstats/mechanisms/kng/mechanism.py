"""K-norm gradient mechanism (KNG) for least squares and quantile regression.

Reimherr & Awan (2019), Theorem 3.1: if ``||grad l(theta; D) - grad l(theta; D')||_K <= Delta``
for all neighbours D, D' and all theta in a convex domain Theta, the density
``f_D(theta) ~ exp(-eps ||grad l(theta; D)||_K / (2 Delta))`` on Theta is eps-DP
(the utility ``||grad l||_K / Delta`` has sensitivity 1 and this is the exponential
mechanism). ``dp_ols(..., method="kng")`` uses the squared loss (section 4.2),
``dp_quantreg(..., q=tau)`` the check loss (section 4.5).

The scaled problem (section 4.2: "x and y pre-processed into [-1, 1]"). Every
non-intercept design column and the response are mapped affinely onto [-1, 1]
by their declared bounds: ``u_j = (x_j - m_j) / h_j``, ``v = (y - m_y) / h_y``
with m the midpoint and h the half-width of the bounds; the intercept column
stays 1. With an intercept this is an exact reparametrisation for both losses
(least squares and quantile regression are equivariant under an invertible
affine map of the regressors and a positive one of the response), and a fit
``v = phi_0 + sum_j phi_j u_j`` is in the user's units
``y = m_y + h_y phi_0 - sum_j s_j m_j + sum_j s_j x_j`` with ``s_j = h_y phi_j / h_j``
(:class:`UnitBoxScale`). Without an intercept the maps are linear
(``u_j = x_j / max(|lo_j|, |hi_j|)``, likewise y), so the columns lie in
``[lo_j, hi_j] / max(|lo_j|, |hi_j|)``, inside [-1, 1].

The domain. ``Theta = {phi : ||phi||_1 <= B}`` on the scaled problem
(section 4.2). On the declared box ``max_u |phi_0 + sum_j phi_j u_j| = ||phi||_1``,
so with an intercept ``||phi||_1 <= B`` says exactly: over the whole declared box
of the regressors, the fitted regression function stays within ``B`` half-widths
of the midpoint of the response's declared range. ``B = 1``: it stays inside the
declared range of y; ``B = 2``: it may leave it by one half-width at the corners.
No B contains the non-private fit for every data set inside the bounds (OLS
is unbounded on nearly collinear rows), so the default B is chosen from public
facts alone, n, the draw's eps and d (:func:`default_radius`), never from the
rows: ``B = 1 + 0.4 max(0, ln(n eps / (500 (d + 1))))`` for least squares (the
paper's section 4.3 ``B = 1`` while n eps is small: B enters the sensitivity
``4 (1 + B)``, and there the noise, not the domain, is the error); quantile
regression keeps ``B = 2`` (B does not enter its sensitivity, but its chain
does not find the minimum in a larger domain: :func:`default_radius`). B grows
without bound with n eps, so any fixed model lies in Theta once n eps is large
and least-squares KNG tends to OLS as eps grows, while the noise, of
order ``(1 + B)(d + 1) / (n eps)``, keeps KNG's 1/n rate up to a logarithm.
Measured (benchmarks/bench_real_data.py's regressions, whose scaled OLS fits
have ``||phi||_1`` from 0.95 (PSID1976) to 2.90 (CPS1988)): at the draw's
eps = 3.5, 14 and 70 and B from 1 to 10, the error grows with ``1 + B`` once B
holds the fit, and the best B was 1 at ``n eps / (d + 1)`` up to about 300,
1 to 1.5 up to 3,000 and 1.5 to 2 beyond (CPS1985: 2 at 6,000); the rule gives
1, 1.0-1.7 and 1.7-2.9 there, and 10 for CPS1988 at eps = 1e9. A user's B
(public, validated before the data are read) replaces the rule. The estimate
always lies in Theta; if the non-private fit lies outside, KNG concentrates
on the boundary. A release with ``||phi||_1 >= BOUNDARY * B``, or whose
untruncated noise law leaves Theta for more than 1% of its draws, is flagged
biased (:func:`boundary_bias`: post-processing of the released phi, so it
costs no budget): with several regressors the declared box's corners lie far
from the data, and a fit that is fine on the data can leave the declared
range of y there.

Sensitivities for replace-one neighbours on the scaled problem (the rows x_i
range over the box of the scaled column bounds, ``|v_i| <= 1``; tight for the
default linf norm with an intercept and at least one slope; brute-forced in
tests/test_kng.py and replayed on corner neighbours in tests/test_kng_privacy.py):

* least squares (section 4.2): row i contributes ``2 (x_i'phi - v_i) x_i`` with
  ``|x_i'phi - v_i| <= 1 + B C_inf`` (``C_inf = max_j max |u_j| = 1``), so
  ``Delta = 2 * 2 (1 + B C_inf) C_K`` with ``C_K = sup ||x||_K`` over the box:
  ``4 (1 + B)`` for linf, ``4 (1 + B) sqrt(d)`` for l2 and ``4 (1 + B) d`` for l1
  with an intercept. For linf it is attained at ``phi = B e_j`` (a slope) by
  moving a row from ``(u_j = 1, v = -1)`` to ``(u_j = -1, v = 1)``. It is
  loose for an intercept alone (the exact value is 4, a private mean) and
  without an intercept (the residual bound ``1 + B`` and the row bound are
  not attained together); both are valid upper bounds.
* quantile regression (section 4.5): row i contributes ``w_i x_i`` with
  ``w_i = 1{v_i <= x_i'phi} - tau`` in ``{-tau, 1 - tau}``; a replaced row
  moves the gradient by ``a x - b x'`` with ``a, b`` in that set, so
  ``Delta = max_{a, b} || (max_{x_j, x'_j in {lo_j, hi_j}} |a x_j - b x'_j|)_j ||_K``
  (each coordinate's maximum is at the endpoints and the coordinates separate
  for fixed a, b; exact on the box). With an intercept and linf this is
  ``max(1, 2 max(tau, 1 - tau)) = 2 max(tau, 1 - tau)``; for the intercept
  alone (a single quantile, section 4.5's eq. 3) it is 1: Smith's (2011) private
  quantile. The paper's ``Delta = 2 (1 - tau) C_X`` understates it for
  tau > 1/2 (two rows with ``w = -tau`` and opposite x move it by ``2 tau C_X``);
  tests/test_kng_privacy.py shows the replay flagging that value.

Survey weights (``design.weights``, each clipped row-wise to its declared range
``[lo, W]`` with ``0 <= lo``; docs/DESIGN.md section 2). The loss is the weighted one,
``sum_i w_i l_i(phi)``: weighted least squares (the gradient ``2 (X'WX phi - X'Wv)``,
statsmodels' WLS at its minimum) and the weighted check loss (the gradient
``sum_i w_i x_i (1{v_i <= x_i'phi} - tau)``, R's ``quantreg::rq(weights=)`` at its
minimum). Proof that the sensitivity is ``W Delta`` with Delta the unweighted one
above: row i adds ``w_i g_i`` to the gradient, with ``g_i`` its unweighted term, so a
replaced row moves it by ``w g - w' g'``, and ``(w, w') -> ||w g - w' g'||_K`` is
convex on ``[lo, W]^2``: its largest value is at a corner, ``||W g - W g'|| <= W Delta``,
``||W g - lo g'||`` (at most the larger of the corners ``(W, W)`` and ``(W, 0)``, again by
convexity in w'), ``||W g||`` or 0. And ``sup ||g||_K <= Delta``: least squares' row
term is at most ``2 (1 + B C_inf) C_K = Delta / 2``, quantile regression's at most
``max(tau, 1 - tau) C_K <= C_K``, while a row moved onto itself with the opposite sign of
``1{.} - tau`` (``a - b = +-1``) moves each coordinate by ``|x_j|``, so ``Delta >= C_K``.
Hence ``||w g - w' g'||_K <= W Delta`` for all neighbours (brute-forced at the box's
corners with weights 0 and W in tests/test_kng_weights.py). The density is
Theorem 3.1's with ``Delta`` replaced by ``W Delta``: eps-DP for the rows and their
weights. Quantile regression's target keeps each distinct row with the sum of its
weights (quantile_lines.py), and a weighted quantile with an intercept alone is
drawn by pieces, not by the exact integer sampler (``exactly_sampled``). Standard
errors: dpstats/mechanisms/kng/weighted_inference.py (the weighted sandwich,
design-based with declared PSUs and strata).

Sampling (dpstats/mechanisms/kng/sampler.py). A quantile with an intercept
alone is the exponential mechanism over intervals, sampled exactly in integer
arithmetic (dpstats/mechanisms/kng/exact_quantile.py): the guarantee is
Theorem 3.1's eps-DP for the double released, and only this case is
``proven``. Otherwise, in one dimension (least squares with an intercept
alone, or one regressor through the origin) the density is piecewise
log-linear and is drawn from its pieces in floating point (not float-safe).
Least squares in d >= 2 is sampled exactly by rejection from the untruncated
K-norm density (the gradient is affine in theta), with a Markov chain only as
the fallback when the density puts little mass on Theta. Quantile regression
in d >= 2 is the state of a Markov chain after a number of sweeps fixed before
the data are read, started at the centre of Theta, with kernels that leave
the KNG density invariant. ``res.privacy.caveats`` states what each
guarantees. Standard errors and intervals (dpstats/mechanisms/kng/inference.py)
spend the share ``se_share`` of eps (the draw gets the rest) on a noisy sandwich
and re-draw the K-norm noise in a parametric bootstrap; ``se_share=0`` releases
the draw alone at the whole eps (the paper's algorithm) and the SEs are NaN.

Least squares reads its rows only through ``design.total`` (X'X and X'v
for the draw; X'X, the residual counts and the meat for the standard errors:
sums over rows, dpstats/design/moments.py), so it runs on a Dask DataFrame's
partitions (dpstats/distributed/dask_design.py); quantile regression's chain evaluates
the check loss on every row at every step and needs the rows in one place.

In the limit eps -> infinity the KNG density concentrates on the set where
``||grad l||_K`` is smallest. For least squares that is the OLS fit (when it
lies in Theta). For quantile regression the gradient is piecewise constant and
its smallest norm is reached on a union of cells of the arrangement of the
lines ``y_i = x_i'theta`` around the QuantReg solution, not at one point: KNG
at eps = 1e9 is uniform on that set. On engel (scaled by the bounds
income (0, 5000), foodexp (0, 2500)) the set spans intercepts 72.3 to 92.1 and
slopes 0.548 to 0.570 around QuantReg's (81.5, 0.560), i.e. +-0.7 standard
errors: a property of the mechanism, measured in tests/test_kng_limits.py.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ...design.matrix import Design
from ...privacy import noise
from ...privacy.accounting import PrivacySpent
from ..base import MechanismSpec, PrivacyRequest, Release, refuse_rho
from ..quantiles import check_quantile
from . import exact_quantile, inference, weighted_inference
from . import quantile_lines as kng_quantile
from . import sampler as kng_sampler

DEFAULTS: dict[str, object] = {"norm": "linf", "B": None, "steps": None}
BOUNDARY = 0.98
"""A release with ``||phi||_1`` at least this fraction of B is flagged as on the domain's boundary."""
DEFAULT_B = {"ols": 1.0, "quantreg": 2.0, "logit": 6.0, "probit": 3.5}
"""The smallest radius :func:`default_radius` gives (the paper's B = 1 for least squares, section 4.3; the
binary links: dpstats/mechanisms/kng/binary.py)."""
RADIUS_SCALE = 500.0
"""``n eps / (d + 1)`` beyond which :func:`default_radius` grows (module docstring: measured)."""
RADIUS_GROWTH = 0.4
"""What :func:`default_radius` adds to B per factor e of ``n eps`` beyond ``RADIUS_SCALE (d + 1)`` (least squares;
the binary links: :data:`LINK_GROWTH`)."""
LINK_GROWTH = {"logit": 1.0, "probit": 1.0}
""":data:`RADIUS_GROWTH` for the binary links (dpstats/mechanisms/kng/binary.py)."""
#: Sweeps per dimension d >= 2 (kng_sampler.run_chains: every walker of the ensemble
#: moves by hit-and-run and twice by ensemble directions; least squares adds an
#: independence proposal and runs only as the exact sampler's fallback). Quantile
#: regression, every sweep at the target's c from theta = 0: measured on engel at
#: eps = 1e9 (the hardest case: the density is a point mass on thin cells), 997 of
#: 1,000 chains reach the minimum after 60 sweeps (998 with a tempered warm-up over
#: the first half, which is not used); at n = 2,000, eps = 1, 1,000 chains pass the
#: KS test against the grid-normalised density after 8 sweeps, not after 5.
STEPS_PER_DIMENSION = {"ols": 25, "quantreg": 30, "logit": 5, "probit": 5}
#: The binary links (dpstats/mechanisms/kng/binary_sampler.py): each sweep is one gradient-inverting
#: independence move and one hit-and-run Metropolis move (tests/test_kng_logit.py measures the mixing).

FLOAT_CAVEAT = (
    f"{noise.FLOAT_CAVEAT}; its running time depends on the data (rejections, chain fallback): timing is not protected"
)


# --------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------


def check_norm(norm: object) -> str:
    """The K-norm: ``"linf"`` (default, the paper's), ``"l2"`` or ``"l1"``."""
    if norm not in kng_sampler.NORMS:
        raise ValueError(f"norm must be one of {kng_sampler.NORMS}")
    return str(norm)


def check_B(B: object) -> float:
    """The radius of the domain ``||phi||_1 <= B`` on the scaled problem: a positive finite number."""
    if isinstance(B, bool | np.bool_) or not isinstance(B, numbers.Real) or not (0 < float(B) < math.inf):
        raise ValueError(
            "B (the radius of the domain ||theta||_1 <= B on the scaled problem) must be a positive number"
        )
    return float(B)


def check_steps(steps: object) -> int:
    """A positive integer chain length (None: the default for the dimension)."""
    if isinstance(steps, bool | np.bool_) or not isinstance(steps, numbers.Integral) or int(steps) < 1:
        raise ValueError("steps must be a positive integer (the chain length, fixed before the data are read)")
    return int(steps)


def check_request(privacy: PrivacyRequest, options: Mapping[str, object]) -> None:
    """Validate delta and the options before any data are read (KNG is pure DP)."""
    refuse_rho(privacy, "kng")
    if privacy.delta > 0:
        raise ValueError("method='kng' is pure DP: delta must be 0")
    check_norm(options["norm"])
    if options["B"] is not None:
        check_B(options["B"])
    if options["steps"] is not None:
        check_steps(options["steps"])


def default_radius(estimator: str, n: int, eps: float, d: int) -> float:
    """The domain's radius B when none is given: ``DEFAULT_B + RADIUS_GROWTH ln+(n eps / (RADIUS_SCALE (d + 1)))``.

    Public facts only: n (public, or a group's public or released size), the
    draw's eps (the call's eps less the standard errors' share) and the number
    of columns d, never the rows, so B and the sensitivity ``4 (1 + B)`` it sets
    are the same for neighbouring data sets. Why a logarithm: least squares' KNG
    noise on phi is about ``(2 X'X)^-1 z`` with ``||z|| ~ 8 (1 + B)(d + 1) / eps``
    (Reimherr & Awan 2019, section 4.2 and Theorem 3.2), of order
    ``(1 + B)(d + 1) / (n eps)``; with B growing as ``ln(n eps)`` the noise keeps
    KNG's ``1 / n`` rate up to a logarithm, and it vanishes as eps grows, while
    every fixed model lies in the domain once n eps is large enough (so KNG
    tends to OLS). ``ln+`` is ``max(0, ln)``: the paper's B = 1 up to
    ``n eps = RADIUS_SCALE (d + 1)``. Rounded to 3 significant digits. The
    planner can call this for KNG's predicted error.

    Quantile regression keeps ``DEFAULT_B["quantreg"] = 2``: its chain does not
    find the minimum in a larger domain (CPS1988's median at eps = 1e9, one
    seed: largest relative error 1.44 with B = 2, 2.37 with B = 4, 16.2 with
    B = 8, at the default sweeps).
    """
    if estimator == "quantreg":
        return DEFAULT_B[estimator]
    growth = math.log(max(1.0, n * eps / (RADIUS_SCALE * (d + 1))))
    return float(f"{DEFAULT_B[estimator] + LINK_GROWTH.get(estimator, RADIUS_GROWTH) * growth:.3g}")


def default_steps(d: int, estimator: str) -> int:
    """The chain length: 1 (an exact draw) in one dimension, else proportional to d."""
    return 1 if d == 1 else STEPS_PER_DIMENSION[estimator] * d


# --------------------------------------------------------------------------
# The scaled problem
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class UnitBoxScale:
    """The affine map of the design onto [-1, 1] and back (module docstring)."""

    intercept_index: int | None
    x_mid: np.ndarray
    x_half: np.ndarray
    y_mid: float
    y_half: float

    @classmethod
    def from_design(cls, design: Design) -> UnitBoxScale:
        """From the design's declared (derived) bounds; raises if any is missing or infinite."""
        xb, yb = design.x_bounds, design.y_bounds
        if xb is None or yb is None or not (np.all(np.isfinite(xb)) and np.all(np.isfinite(yb))):
            raise ValueError(
                "method='kng' needs finite bounds for the response and every regressor: declare bounds=... "
                "(otherwise C_X, the bound on ||x|| in the sensitivity, is unbounded)"
            )
        xb = np.asarray(xb, dtype=float)
        lo, hi = xb[:, 0], xb[:, 1]
        icpt = design.intercept_index
        if icpt is None:
            mid, half = np.zeros(lo.size), np.maximum(np.abs(lo), np.abs(hi))
            y_mid, y_half = 0.0, max(abs(yb[0]), abs(yb[1]))
        else:
            mid, half = (lo + hi) / 2.0, (hi - lo) / 2.0
            mid[icpt], half[icpt] = 0.0, 1.0
            y_mid, y_half = (yb[0] + yb[1]) / 2.0, (yb[1] - yb[0]) / 2.0
        if np.any(half <= 0) or y_half <= 0:
            raise ValueError("bounds: every design column and the response need bounds of positive width")
        return cls(icpt, mid, half, float(y_mid), float(y_half))

    def transform(self, design: Design) -> tuple[np.ndarray, np.ndarray]:
        """The scaled design and response (a row-wise map: free)."""
        return (design.X - self.x_mid) / self.x_half, (design.y - self.y_mid) / self.y_half

    def column_bounds(self, design: Design) -> np.ndarray:
        """Bounds of the scaled columns (the intercept's is [1, 1])."""
        return (np.asarray(design.x_bounds, dtype=float) - self.x_mid[:, None]) / self.x_half[:, None]

    def to_user(self, phi: np.ndarray) -> np.ndarray:
        """Coefficients in the user's units from scaled ones (post-processing)."""
        theta = self.y_half * phi / self.x_half
        if self.intercept_index is not None:
            slopes = np.arange(phi.size) != self.intercept_index
            theta[self.intercept_index] = (
                self.y_mid + self.y_half * phi[self.intercept_index] - theta[slopes] @ self.x_mid[slopes]
            )
        return theta

    def to_scaled(self, theta: np.ndarray) -> np.ndarray:
        """The inverse of :meth:`to_user` (to express a user-unit model on the scaled problem)."""
        phi = np.asarray(theta, dtype=float) * self.x_half / self.y_half
        if self.intercept_index is not None:
            slopes = np.arange(phi.size) != self.intercept_index
            phi[self.intercept_index] = (
                theta[self.intercept_index] - self.y_mid + theta[slopes] @ self.x_mid[slopes]
            ) / (self.y_half)
        return phi


# --------------------------------------------------------------------------
# Sensitivities (module docstring)
# --------------------------------------------------------------------------


def _combine(per_coordinate: np.ndarray, norm: str) -> float:
    return float(kng_sampler.k_norm(np.asarray(per_coordinate, dtype=float), norm))


def box_norm(column_bounds: np.ndarray, norm: str) -> float:
    """``C_K = sup ||x||_K`` over the box of the scaled column bounds."""
    return _combine(np.abs(column_bounds).max(axis=1), norm)


def least_squares_sensitivity(B: float, norm: str, column_bounds: np.ndarray) -> float:
    """``Delta = 4 (1 + B C_inf) C_K``: section 4.2's bound for replace-one neighbours, |v| <= 1."""
    return 4.0 * (1.0 + B * box_norm(column_bounds, "linf")) * box_norm(column_bounds, norm)


def quantile_sensitivity(tau: float, norm: str, column_bounds: np.ndarray) -> float:
    """Exact sup of ``||a x - b x'||_K`` over the box and ``a, b in {-tau, 1 - tau}`` (section 4.5)."""
    lo, hi = column_bounds[:, 0], column_bounds[:, 1]
    best = 0.0
    for a in (-tau, 1.0 - tau):
        for b in (-tau, 1.0 - tau):
            ends = [np.abs(a * x - b * x2) for x in (lo, hi) for x2 in (lo, hi)]
            best = max(best, _combine(np.max(ends, axis=0), norm))
    return best


# --------------------------------------------------------------------------
# The mechanism
# --------------------------------------------------------------------------


def boundary_bias(phi: np.ndarray, B: float, outside: float = 0.0) -> str | None:
    """The bias of a released ``phi`` on (or within 2% of) the boundary of ``||phi||_1 <= B``, or whose noise
    law the domain truncates (more than ``inference.BOUNDARY_NOTE`` of its untruncated draws leave it) or may
    truncate (``outside`` NaN: the law is unknown), else None (post-processing: phi is released, B public, the
    draws post-processing)."""
    size = float(np.abs(phi).sum())
    if size < BOUNDARY * B and outside <= inference.BOUNDARY_NOTE:
        return None
    share = (
        "the noisy X'X does not tell how much of the noise law lies outside it"
        if math.isnan(outside)
        else f"{outside:.0%} of the untruncated noise law lies outside it"
    )
    return (
        f"the pull towards the boundary of KNG's domain (||phi||_1 = {size:.3g} against B = {B:g} on the "
        f"scaled problem; {share}). The domain holds the fits whose fitted values stay within B half-widths of "
        "the middle of the response's declared range over the whole box of the regressors; KNG's estimate always "
        "lies in it, so if the non-private fit lies outside, or the noise is a sizeable part of the domain, the "
        "estimate is pulled towards the boundary and the interval need not cover the non-private fit. Remedies: "
        "a larger eps (the default B grows with n eps), a larger B (least squares' sensitivity is 4 (1 + B)), or "
        "bounds that contain the model"
    )


def exactly_sampled(design: Design, estimator: str) -> bool:
    """Whether the draw is exact (float-safe): an unweighted quantile with an intercept alone
    (kng/exact_quantile.py counts rows in integers; with weights the one-dimensional draw is by pieces)."""
    return estimator == "quantreg" and design.n_columns == 1 and design.intercept_index == 0 and design.weights is None


def _caveats(d: int, steps: int, estimator: str, exact: bool) -> tuple[str, ...]:
    if exact:
        return (
            "exact sampler: with an intercept alone the KNG density is the exponential mechanism over the intervals "
            "between the sorted responses, drawn in integer arithmetic (float-safe), so Theorem 3.1's eps-DP holds "
            "for the double released",
        )
    if d == 1:
        return (
            "in one dimension the KNG density is piecewise log-linear and is drawn from its pieces, then an inverse "
            "CDF, in floating point",
            FLOAT_CAVEAT,
        )
    kernel = (
        "isotropic hit-and-run and ensemble differential directions, each drawing exactly from the density on its "
        "line" + (", after an independence proposal" if estimator == "ols" else "")
    )
    chain = (
        f"walker 0 of an ensemble of {kng_sampler.ensemble_size(d)} chains started at the centre of the domain, "
        f"after {steps} sweeps (fixed from d = {d}, never from the data) of moves that leave the KNG density "
        f"invariant ({kernel})"
    )
    mcmc = (
        "a draw whose law is within total variation eta of the KNG density is (eps, eta (1 + e^eps))-DP; eta is "
        "not bounded by a proof, it is checked by goodness-of-fit tests against the numerically normalised density "
        "in two dimensions (tests/test_kng_sampler.py)"
    )
    if estimator == "ols":
        return (
            "exact sampler by rejection: proposals from the untruncated (ridge-regularised) K-norm density, "
            "accepted with the exact target/proposal ratio, so an accepted draw has the KNG density (in real "
            "arithmetic); only if all "
            f"{kng_sampler.EXACT_TRIES} proposals are rejected (the density puts little "
            f"mass inside the domain) the draw is {chain}, and then {mcmc}",
            FLOAT_CAVEAT,
        )
    return (f"MCMC sampler: the estimate is {chain}; {mcmc}", FLOAT_CAVEAT)


def se_share(n: int, columns: int, privacy: PrivacyRequest, options: Mapping[str, object]) -> float:
    """The part of eps the noisy sandwich spends: the user's ``se_share``, else the estimator's default."""
    estimator = options.get("link") or ("ols" if options.get("q") is None else "quantreg")
    return privacy.share(inference.DEFAULT_SHARE[str(estimator)])


def fit(
    design: Design,
    privacy: PrivacyRequest,
    rng: np.random.Generator,
    *,
    norm: str = "linf",
    B: float | None = None,
    steps: int | None = None,
    q: float | None = None,
) -> Release:
    """One KNG draw for ``design``: least squares when ``q`` is None, else the q-th quantile regression."""
    norm = check_norm(norm)
    estimator = "ols" if q is None else "quantreg"
    tau = None if q is None else check_quantile(q)
    scale = UnitBoxScale.from_design(design)
    d, n = design.n_columns, design.n
    steps = default_steps(d, estimator) if steps is None else check_steps(steps)
    if d == 1:
        steps = 1
    bounds = scale.column_bounds(design)
    exact = exactly_sampled(design, estimator)
    weights, weight_max = survey_weights(design)
    share = privacy.share(inference.DEFAULT_SHARE[estimator])
    eps = privacy.eps * (1.0 - share)
    B = default_radius(estimator, n, eps, d) if B is None else check_B(B)
    rows = functools.partial(_scaled_total, design, scale)
    gram = None
    if tau is None:
        delta = weight_max * least_squares_sensitivity(B, norm, bounds)
        sums = rows(least_squares_sums) if weights is None else least_squares_sums(*scale.transform(design), weights)
        gram = sums[:, :d]
        ls_target = kng_sampler.LeastSquaresTarget(gram, sums[:, d], eps / (2.0 * delta), norm)
        target: kng_sampler.Target = ls_target
        name = "kng"

        def draw(r: np.random.Generator) -> np.ndarray:
            return kng_sampler.sample_least_squares(r, ls_target, B, steps)[0]
    else:
        delta = weight_max * quantile_sensitivity(tau, norm, bounds)
        target = kng_quantile.QuantileTarget(*scale.transform(design), tau, eps / (2.0 * delta), norm, weights)
        name = f"kng(q={tau:g})"

        def draw(r: np.random.Generator) -> np.ndarray:
            if exact:
                return exact_quantile.draw(r, target.y, tau, B, eps, delta)
            return kng_sampler.run_chains(r, target, d, B, steps)[0]

    probes = kng_sampler.probe_points(d, B)
    phi = noise.exponential_mechanism_release(
        rng,
        draw,
        lambda: target.utility(probes),
        delta,
        eps,
        name,
    )
    phi = np.asarray(phi, dtype=float).reshape(d)
    se_split = () if share == 0 else _se_split(design, estimator, privacy.eps * share, bounds, scale.intercept_index)
    spent = PrivacySpent(
        notion="pure",
        eps=privacy.eps,
        split=((name, eps), *se_split),
        caveats=_caveats(d, steps, estimator, exact),
        proven=exact,
    )
    hyper: dict[str, object] = {"norm": norm, "B": B, "steps": steps, "sensitivity": float(f"{delta:.6g}")}
    if tau is not None:
        hyper["q"] = tau
    se = inference.Uncertainty(np.full((d, d), np.nan), None, inference.NO_SE_NOTE)
    if share > 0:
        y_scaled = tuple((np.asarray(design.y_bounds, dtype=float) - scale.y_mid) / scale.y_half)
        kng_noise = inference.Noise(target.c, norm, B)
        if weights is None:
            problem = inference.Problem(rows, n, bounds, y_scaled, scale.intercept_index, scale.to_user, gram)
            se = inference.standard_errors(rng, problem, phi, tau, privacy.eps * share, kng_noise)
        else:
            weighted = weighted_inference.WeightedRows(
                *scale.transform(design), weights, weight_max, design.psus, bounds, y_scaled
            )
            to_user = inference.affine_map(scale.to_user, d)
            se = weighted_inference.standard_errors(rng, weighted, phi, tau, privacy.eps * share, kng_noise, to_user)
    return Release(
        params=scale.to_user(phi),
        cov=se.cov,
        privacy=spent,
        se_note=se.note,
        hyperparameters=hyper,
        replicates=se.replicates,
        interval="percentile",
        bias=boundary_bias(phi, B, se.outside),
    )


def least_squares_sums(X: np.ndarray, v: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """``[X'WX, X'Wv]`` (d x (d + 1)) of the scaled rows (W the survey weights, the identity when None): least
    squares' sufficient statistics."""
    Xw = X if weights is None else X * weights[:, None]
    return np.column_stack([Xw.T @ X, Xw.T @ v])


def survey_weights(design: Design) -> tuple[np.ndarray | None, float]:
    """The rows' survey weights clipped to their declared range, and its upper end W (None and 1 without)."""
    if design.weights is None or design.weight_bounds is None:
        return None, 1.0
    lo, hi = design.weight_bounds
    return np.clip(np.asarray(design.weights, dtype=float), lo, hi), float(hi)


def _se_split(
    design: Design, estimator: str, eps: float, bounds: np.ndarray, intercept_index: int | None
) -> tuple[tuple[str, float], ...]:
    """The standard errors' releases and budgets: weighted (weighted_inference.py) or not (inference.py)."""
    if design.weights is None:
        return inference.split(estimator, eps, design.n, bounds, intercept_index)
    return weighted_inference.split(eps, design.psus)


def scaled_rows(scale: UnitBoxScale, statistic: inference.ScaledStatistic, design: Design) -> np.ndarray:
    """``statistic(X, v)`` of the design's rows on the scaled problem (a statistic for ``design.total``)."""
    return statistic(*scale.transform(design))


def _scaled_total(design: Design, scale: UnitBoxScale, statistic: inference.ScaledStatistic) -> np.ndarray:
    """``statistic`` summed over the design's rows on the scaled problem."""
    return design.total(functools.partial(scaled_rows, scale, statistic))


@dataclass(frozen=True)
class KNGSpec(MechanismSpec):
    """The registry entry: any design shape, including an intercept only (a private quantile or mean)."""

    def check_design(self, design: Design) -> None:
        """KNG needs at least one column; an intercept alone is the exactly sampled one-dimensional case."""
        if design.n_columns == 0:
            raise ValueError("method='kng' needs at least one design column")

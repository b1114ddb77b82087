"""Standard errors and intervals for DP gradient descent: a budgeted sandwich and a bootstrap of the descent.

Why this works. On the unit scale with ``w_i = (3/4 - u_i, u_i - 1/4)`` the
per-row gradient of Algorithms 6-7 is ``2 (2 w_i'p - v_i) w_i``; when no row
reaches the clip the round's sum is the least-squares gradient

    G(p) = 4 A (p - p^),    A = sum_i w_i w_i',

with p^ the least-squares (p25, p75). The released estimate is then a
function of two statistics and the noise, ``p~ = F(p^, z_1..z_T; A)``: the
sampling error enters through p^ (asymptotically normal with the HC
sandwich covariance, White 1980) and the privacy error through the T noisy
AdaGrad-norm steps. Both are reproduced:

1. **Sampling error and A, released** with the share ``se_share`` of the
   budget (default :data:`DEFAULT_SHARE`), after the point estimate, in
   three releases (:data:`FRACTIONS` of the share): the column sum
   ``sum_i u_i`` (sensitivity 1), whose mean clipped to [0, 1] is the centre
   c; the centred bread ``Q = sum_i (u_i - c)^2`` (a row's term lies in
   ``[0, max(c, 1 - c)^2]``); the weighted upper triangle of the HC meat
   ``sum_i r_i^2 w_i w_i'`` with ``w_i = (1, u_i - c)`` and residuals at the
   released estimate, clipped to the bound R of dpstats/uncertainty/sandwich.py (weights,
   sensitivity and the shrinkage of noise-swamped entries towards the
   homoskedastic meat as there). They give the noisy HC1 sandwich V of
   (intercept, slope) and ``A = K B K'`` from the same bread B (K maps
   ``(1, u - c)`` to w). Variant ``pure`` releases them with Laplace noise
   (eps-DP each; basic composition with the rounds). ``approx`` and ``zcdp``
   use Gaussian noise calibrated to the L2 sensitivity (rho-zCDP each), so
   the whole call is rho-zCDP with rho split between the T rounds and these
   releases (zCDP composes by adding rho, Bun & Steinke 2016, Lemma 2.3);
   ``approx`` converts that total once (Proposition 1.3 / Lemma 3.6), so
   the (eps, delta) reported covers the standard errors too.
2. **Privacy error, simulated**: the parametric bootstrap of Ferrando, Wang &
   Sheldon (2022) at the level of the statistics. Treating the release as
   the truth, draw targets ``p_b ~ N(p~, V_p)`` and rerun the mechanism's T
   noisy AdaGrad-norm rounds on ``G_b(p) = 4 A~ (p - p_b)`` with fresh noise
   of the release's scale (Laplace ``4 tau T / eps_point`` or Gaussian
   ``2 sqrt(2) tau / sqrt(2 rho_point / T)`` per coordinate), the same start,
   step rule and tail average: all B replicates at once, a loop over the T
   rounds only (:func:`descend_batch`).
3. **The descent's shrinkage, undone.** At small n eps the noisy descent
   does not travel all the way to its target in a weakly identified
   direction: ``E F(p)`` moves by ``J < I`` when p moves (J = 0.86 in the
   slope direction of the heteroskedastic design at n = 1000, eps = 1), so
   the error of p~ is not a translate of one law and the plain basic
   interval under-covers (measured 0.90 with the exact A and V). The
   simulated descent is differentiated with respect to its target in the
   same pass (forward mode, exact) and the replicates are
   ``r_b = p~ + J^{-1} (F(p_b, z_b) - p~)`` with J the mean Jacobian: the
   basic interval built on them is the linearised inversion of the
   simulated law (indirect inference, Gourieroux, Monfort & Renault 1993:
   the binding function p -> E F(p) is inverted and its derivative scales
   the error), centred at the bias-corrected ``p~ - J^{-1} (E F(p~) - p~)``.
   With J = I (large n eps, a converged descent) this is the plain basic
   bootstrap. Intervals and standard errors come from the replicates mapped
   to the user's units by the estimate's own affine map.

What is left out. (a) The clip. Rows whose gradient exceeds tau are clipped
in the real descent, not in the simulated one. With tau = 1 this happens
only for rows whose residual exceeds 2/3 of the response's declared range
at the ends of the x range, mostly in the first rounds after the unit-length
first step (at most 15-40% of the rows in one round, about 0.2% over all
rounds on the coverage designs); the simulated law matches the mechanism's
(tests/test_gradient_inference.py). With a small tau the clip binds at the
optimum and the descent estimates a clipped-loss M-estimator: the note says
so for tau < 1. (b) The noise in the released bread is not propagated (drawing
A from its noise law changed coverage by at most 0.02 and widened the
intervals by up to 20%). (c) p^ is taken as normal with the sandwich's
covariance, a large-sample approximation. (d) Residuals are taken at the
released estimate: where T rounds do not converge (Engel's design at
T = 80), the meat is that of a biased fit (the standard errors at eps = 1e9
are then 0.86 of HC1 there, and match it at T = 400).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...privacy import noise
from ...uncertainty import sandwich
from ...uncertainty.intervals import infinite_cov

DEFAULT_SHARE = 0.2
"""The part of the budget (eps, or rho for the Gaussian variants) spent on standard errors by default.

The privacy error, which A calibrates, dominates the sampling error in every
coverage cell (benchmarks/bench_coverage.py), and a share of 0.1 left the
bread too noisy at n eps = 1000: on the heteroskedastic design (n = 1000,
eps = 1, 300 fits) the bread came out not positive definite, hence infinite
intervals, in 6.3% of fits at a share of 0.1 and 0.7% at 0.2.
"""
REPLICATES = 1000
"""Bootstrap replicates of the descent (public)."""
JACOBIAN_FLOOR = 1e-8
"""A mean Jacobian whose determinant is below this is singular: the output ignores its target."""
FRACTIONS = (("SE: sum(x)", 0.3), ("SE: bread", 0.4), ("SE: HC meat", 0.3))
"""How the standard errors' share is divided between their three releases.

A depends on the mean of u to first order (``A_11 = n ((3/4 - u_bar)^2 + var u)``),
so the column sum gets almost as much as the bread; the meat matters only
where the sampling error is a sizeable part of the total (large n eps).
"""

P_FROM_COEF = np.array([[1.0, 0.25], [1.0, 0.75]])
"""(p25, p75) = P_FROM_COEF @ (intercept, slope) on the unit scale."""
COEF_FROM_P = np.array([[1.5, -0.5], [-2.0, 2.0]])
"""(intercept, slope) = COEF_FROM_P @ (p25, p75) (the inverse map)."""


@dataclass(frozen=True)
class NoiseLaw:
    """A release's noise: Laplace of ``scale`` or Gaussian of sd ``scale``, per coordinate."""

    gaussian: bool
    scale: float

    def draw(self, rng: np.random.Generator, size: tuple[int, ...]) -> np.ndarray:
        """Fresh noise of the release's law."""
        if self.gaussian:
            return noise.gaussian(rng, self.scale, size)
        return noise.laplace(rng, self.scale, size)

    @property
    def variance(self) -> float:
        """The noise variance per coordinate (inf, never an overflow error, at an absurdly small budget)."""
        scale = float(self.scale)
        square = scale * scale  # a Python float: inf on overflow, where ** would raise
        return square if self.gaussian else 2.0 * square


@dataclass(frozen=True)
class SandwichRelease:
    """The standard errors' releases, on the unit scale, and the public noise variances of the meat."""

    u_sum: float
    centre: float
    bread_q: float
    meat: np.ndarray
    meat_noise_variance: np.ndarray


def _release(
    rng: np.random.Generator, value: np.ndarray, widths: np.ndarray, budget: float, gaussian: bool, name: str
) -> tuple[np.ndarray, NoiseLaw]:
    """Release ``value`` (entry j moves by at most ``widths[j]`` when a row is replaced); return it and its noise law.

    Laplace: L1 sensitivity ``sum(widths)``, eps = budget. Gaussian: L2
    sensitivity ``sqrt(sum(widths^2))``, rho = budget.
    """
    if gaussian:
        sensitivity = float(np.sqrt(np.sum(widths**2)))
        noisy = noise.gaussian_mechanism(rng, value, sensitivity, budget, name)
        return np.atleast_1d(noisy), NoiseLaw(True, sensitivity / math.sqrt(2.0 * budget))
    sensitivity = float(np.sum(widths))
    noisy = noise.laplace_mechanism(rng, value, sensitivity, budget, name)
    return np.atleast_1d(noisy), NoiseLaw(False, sensitivity / budget)


def bread_reach(centre: float) -> float:
    """How far one row's ``(u - c)^2`` can move for u in [0, 1]: ``max(c, 1 - c)^2``."""
    return max(centre, 1.0 - centre) ** 2


def release_sandwich(
    rng: np.random.Generator, u: np.ndarray, v: np.ndarray, coef_unit: np.ndarray, budget: float, gaussian: bool
) -> SandwichRelease:
    """The three releases of step 1 (module docstring); ``budget`` is eps (Laplace) or rho (Gaussian) in all.

    Sensitivities (replace-one; c and the estimate are public, released
    before): ``sum u`` moves by at most 1; a row's ``(u - c)^2`` lies in
    ``[0, max(c, 1 - c)^2]``; the meat entry (j, k) by the width of
    ``I_jk * [0, R^2]`` (dpstats/uncertainty/sandwich.py), times its weight.
    """
    n = u.size
    (sum_name, f_sum), (bread_name, f_bread), (meat_name, f_meat) = FRACTIONS
    u_sum, _ = _release(rng, np.array([u.sum()]), np.array([1.0]), budget * f_sum, gaussian, sum_name)
    centre = min(max(float(u_sum[0]) / n, 0.0), 1.0)
    reach = np.array([bread_reach(centre)])
    q_value = np.array([np.sum((u - centre) ** 2)])
    bread_q, _ = _release(rng, q_value, reach, budget * f_bread, gaussian, bread_name)
    W = np.column_stack([np.ones(n), u - centre])
    box = np.array([[1.0, 1.0], [-centre, 1.0 - centre]])
    coef_centred = np.array([coef_unit[0] + coef_unit[1] * centre, coef_unit[1]])
    bound = sandwich.residual_bound(coef_centred, box, (0.0, 1.0))
    residuals = sandwich.clipped_residuals(v, W @ coef_centred, bound)
    weights = sandwich.meat_weights(2, 0)
    widths = weights * sandwich.entry_widths(box, bound)
    noisy, meat_noise = _release(
        rng, weights * sandwich.meat(W, residuals), widths, budget * f_meat, gaussian, meat_name
    )
    return SandwichRelease(
        u_sum=float(u_sum[0]),
        centre=centre,
        bread_q=float(bread_q[0]),
        meat=sandwich.from_upper_triangle(noisy / weights, 2),
        meat_noise_variance=meat_noise.variance / weights**2,
    )


def centred_bread(released: SandwichRelease, n: int) -> np.ndarray:
    """The bread ``sum_i (1, u_i - c)(1, u_i - c)'`` from the releases (post-processing)."""
    offset = released.u_sum - n * released.centre
    return np.array([[float(n), offset], [offset, released.bread_q]])


def covariance(released: SandwichRelease, n: int) -> np.ndarray:
    """HC1 covariance of (intercept, slope) on the unit scale; infinite if the noisy bread is not positive definite."""
    bread = centred_bread(released, n)
    if not (np.all(np.isfinite(bread)) and np.linalg.eigvalsh(bread)[0] > 0):
        return infinite_cov(2)
    noisy = sandwich.NoisyMeat(released.meat, released.meat_noise_variance)
    meat = sandwich.robust_meat(noisy, bread, np.zeros_like(bread), n, 0)
    cov_centred = sandwich.hc_covariance(bread, meat, n)
    back = np.array([[1.0, -released.centre], [0.0, 1.0]])
    return back @ cov_centred @ back.T


def gradient_gram(released: SandwichRelease, n: int) -> np.ndarray:
    """``A = sum_i w_i w_i'`` with ``w = (3/4 - u, u - 1/4) = K (1, u - c)`` from the released bread."""
    c = released.centre
    K = np.array([[0.75 - c, -1.0], [c - 0.25, 1.0]])
    return K @ centred_bread(released, n) @ K.T


def descend_batch(
    rng: np.random.Generator,
    gram: np.ndarray,
    targets: np.ndarray,
    step_noise: NoiseLaw,
    T: int,
    start: tuple[float, float],
) -> tuple[np.ndarray, np.ndarray]:
    """The mechanism's T rounds on ``G(p) = 4 A (p - p_b)`` for each target p_b, all at once, and their Jacobians.

    The same step rule, cap on released values and tail average as
    :func:`~dpstats.mechanisms.gradient.mechanism.descend`. Returns the
    ``(B, 2)`` outputs and the ``(2, 2)`` mean over replicates of the
    derivative of the output with respect to the target, by forward-mode
    differentiation of the recursion (``g = C (p - p_b) + z`` with
    ``C = 4 A``, ``S <- S + |g|^2``, ``p <- p - g / sqrt(S)``):

        dg = C (J - I),   dS <- dS + 2 g' dg,   J <- J - dg / sqrt(S) + g dS / (2 S^{3/2}).

    Arrays are held coordinate-first, ``(2, B)`` and ``(2, 2, B)``, so that
    every step is a few operations on contiguous vectors of length B.
    """
    size = targets.shape[0]
    C = 4.0 * np.asarray(gram, dtype=float)
    p = np.repeat(np.asarray(start, dtype=float)[:, None], size, axis=1)
    goal = np.ascontiguousarray(targets.T)
    sum_sq = np.zeros(size)
    d_sum_sq = np.zeros((2, size))
    jac = np.zeros((2, 2, size))
    tail = np.zeros((2, size))
    tail_jac = np.zeros((2, 2, size))
    shifted = jac - np.eye(2)[:, :, None]
    for t in range(T):
        noisy = np.clip(np.einsum("ij,jb->ib", C, p - goal) + step_noise.draw(rng, (2, size)), -1e150, 1e150)
        np.subtract(jac, np.eye(2)[:, :, None], out=shifted)
        d_noisy = np.einsum("ij,jkb->ikb", C, shifted)
        sum_sq += noisy[0] ** 2 + noisy[1] ** 2
        d_sum_sq += 2.0 * (noisy[0] * d_noisy[0] + noisy[1] * d_noisy[1])
        inv_root = 1.0 / np.sqrt(np.maximum(sum_sq, 1e-300))
        jac -= d_noisy * inv_root
        jac += noisy[:, None, :] * d_sum_sq[None, :, :] * (0.5 * inv_root**3)
        p -= noisy * inv_root
        if t >= T // 2:
            tail += p
            tail_jac += jac
    half = T // 2
    return (tail / half).T, tail_jac.mean(axis=2) / half


def normal_draws(rng: np.random.Generator, mean: np.ndarray, cov: np.ndarray, size: int) -> np.ndarray:
    """``size`` draws of N(mean, cov) for a PSD ``cov`` (its symmetric square root)."""
    values, vectors = np.linalg.eigh(cov)
    root = vectors * np.sqrt(np.maximum(values, 0.0))
    return mean + noise.gaussian(rng, 1.0, (size, mean.size)) @ root.T


def bootstrap(
    rng: np.random.Generator,
    coef_unit: np.ndarray,
    released: SandwichRelease,
    n: int,
    step_noise: NoiseLaw,
    T: int,
    start: tuple[float, float],
) -> np.ndarray | None:
    """``(B, 2)`` replicates of (intercept, slope) on the unit scale (module docstring, step 2), or None.

    None (infinite intervals) when the release cannot support them: a noisy
    bread that is not positive definite, or a simulated descent whose mean
    Jacobian is singular (its output does not respond to its target).
    Everything here is post-processing of released values; floating-point
    warnings are silenced and a non-finite result is the failure.
    """
    with np.errstate(all="ignore"):
        cov_unit = covariance(released, n)
        if not np.all(np.isfinite(cov_unit)):
            return None
        p_tilde = P_FROM_COEF @ coef_unit
        targets = normal_draws(rng, p_tilde, P_FROM_COEF @ cov_unit @ P_FROM_COEF.T, REPLICATES)
        out, jac = descend_batch(rng, gradient_gram(released, n), targets, step_noise, T, start)
        if not (np.all(np.isfinite(jac)) and abs(np.linalg.det(jac)) > JACOBIAN_FLOOR):
            return None
        corrected = p_tilde + np.linalg.solve(jac, (out - p_tilde).T).T
        draws = corrected @ COEF_FROM_P.T
    return draws if np.all(np.isfinite(draws)) else None


def step_noise(gaussian: bool, budget: float, T: int, sensitivity: float) -> NoiseLaw:
    """One round's noise when the point's ``budget`` (eps for Laplace, rho for Gaussian) is split over T rounds.

    ``sensitivity`` is the round's L1 (Laplace) or L2 (Gaussian) sensitivity.
    """
    if gaussian:
        return NoiseLaw(True, sensitivity / math.sqrt(2.0 * budget / T))
    return NoiseLaw(False, sensitivity / (budget / T))

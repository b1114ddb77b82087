"""Sampling KNG for logit and probit (Reimherr & Awan 2019, Theorem 3.1, "for any convex loss").

The target is ``pi_D(phi) ~ exp(-c ||g(phi; D)||_K)`` on ``Theta = {||phi||_1 <= B}``
of the scaled problem (dpstats/mechanisms/kng/binary.py), with ``c = eps / (2 Delta)``
and g the gradient of the negative (quasi-)log-likelihood,

    g(phi) = -sum_i s(y_i, u_i'phi) u_i,    s = d loglik / d eta (``Link.score_factor``),

whose Jacobian is the Hessian ``H(phi) = sum_i k(y_i, u_i'phi) u_i u_i'``
(``k = Link.curvature`` > 0: both log-likelihoods are strictly concave in eta),
so g is one-to-one wherever H is positive definite (:class:`BinaryTarget`).

The chain (:func:`sample_binary`) starts at ``phi = 0`` (the centre of Theta,
public) and runs a number of sweeps fixed before the data are read; each sweep
makes two Metropolis-Hastings moves that leave pi_D invariant:

* an independence move whose proposal inverts the gradient: z from the K-norm
  density ``~ exp(-c ||z||_K)`` (``sampler.k_norm_draws``), then ``phi'`` with
  ``g(phi') = z`` (Newton's method on the convex ``l(phi) - z'phi``,
  :meth:`BinaryTarget.solve`). By the change of variables ``z = g(phi')`` the
  proposal's density is ``exp(-c ||g(phi')||_K) det H(phi')`` (on the image of g;
  a z outside it, or a solve that fails, proposes nothing and the chain stays:
  a mixture with the identity, still invariant). The exponentials cancel in the
  acceptance ratio, which is ``1{phi' in Theta} det H(phi) / det H(phi')``: near
  1 when the noise is small next to the curvature's variation, so at moderate n eps
  the first accepted proposal is nearly a draw of pi_D (for the logit
  ``det H`` is largest at ``phi = 0``, where every weight is 1/4, so the first
  proposal inside Theta is always accepted);
* a hit-and-run Metropolis move: a direction uniform on the sphere, a point
  uniform on the chord of Theta (``sampler.l1_ball_chord``: a symmetric
  proposal), accepted with ``exp(-c (||g(phi')|| - ||g(phi)||))``. It moves the
  chain where the density is flat next to the domain (small n eps), where the
  gradient's image does not hold most of the K-norm draws.

Neither move's law is bounded by a proof of mixing: the release is MCMC
(mechanism.FLOAT_CAVEAT, ``proven`` False). Everything runs on ``chains``
independent chains at once (rows of ``phi``) for the goodness-of-fit tests and
the gray-box audit; a fit uses one. Every random number comes from
dpstats/privacy/noise.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...glm.links import Link
from ...privacy import noise
from .sampler import into_ball, k_norm, k_norm_draws, l1_ball_chord, uniform_directions

#: Newton iterations of one gradient inversion (:meth:`BinaryTarget.solve`), step halvings per iteration.
NEWTON_STEPS = 60
HALVINGS = 30
#: A Newton solve has converged when its step is below this relative size and its residual below
#: ``RESIDUAL * (n + ||z||_inf)`` (g's coordinates are sums of n terms of at most ``S(B)`` each).
STEP_TOLERANCE = 1e-10
RESIDUAL = 1e-8


@dataclass(frozen=True)
class BinaryTarget:
    """``g(phi) = -sum_i s(y_i, u_i'phi) u_i`` on the scaled rows ``U`` (n x d) with responses y in [0, 1]."""

    U: np.ndarray
    y: np.ndarray
    link: Link
    c: float
    norm: str

    def _eta(self, phi: np.ndarray) -> np.ndarray:
        # einsum loops, not BLAS: with a dimension of size d a threaded BLAS on a busy machine is far slower
        # (as in quantile_lines.QuantileTarget)
        return np.einsum("kd,nd->kn", phi, self.U)

    def gradient(self, phi: np.ndarray) -> np.ndarray:
        """Gradients at the rows of ``phi`` (k x d)."""
        return -np.einsum("kn,nd->kd", self.link.score_factor(self.y, self._eta(phi)), self.U)

    def utility(self, phi: np.ndarray) -> np.ndarray:
        """``||g(phi)||_K`` at the rows of ``phi`` (the exponent is ``-c`` times it)."""
        return k_norm(self.gradient(phi), self.norm)

    def hessian(self, phi: np.ndarray) -> np.ndarray:
        """``H(phi) = sum_i k(y_i, eta_i) u_i u_i'`` per row of ``phi``: (k, d, d); the identity where it is not
        finite (a point far outside Theta, where the linear algebra would raise; such points are rejected)."""
        with np.errstate(all="ignore"):
            weights = self.link.curvature(self.y, self._eta(phi))
            H = np.einsum("kn,nd,ne->kde", weights, self.U, self.U)
        finite = np.all(np.isfinite(H), axis=(1, 2))
        return np.where(finite[:, None, None], H, np.eye(phi.shape[1]))

    def log_det(self, phi: np.ndarray) -> np.ndarray:
        """``log det H(phi)`` per row (``-inf`` where H is singular)."""
        sign, value = np.linalg.slogdet(self.hessian(phi))
        return np.where(sign > 0, value, -np.inf)

    def loss(self, phi: np.ndarray) -> np.ndarray:
        """The negative log-likelihood per row of ``phi``."""
        return -self.link.loglik(self.y, self._eta(phi)).sum(axis=1)

    def solve(self, z: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``phi`` with ``g(phi) = z`` per row, by Newton's method with step halving on ``l(phi) - z'phi``
        from ``start``; returns the solutions and which converged (never raises)."""
        n = self.U.shape[0]
        phi = start.copy()
        with np.errstate(all="ignore"):
            value = self.loss(phi) - (z * phi).sum(axis=1)
            done = np.zeros(phi.shape[0], dtype=bool)
            for _ in range(NEWTON_STEPS):
                phi[~np.all(np.isfinite(phi), axis=1)] = 0.0  # a diverged solve restarts, and fails the residual test
                residual = self.gradient(phi) - z
                step = np.einsum("kde,ke->kd", np.linalg.pinv(self.hessian(phi), hermitian=True), residual)
                step[done | ~np.all(np.isfinite(step), axis=1)] = 0.0
                factor = np.ones(phi.shape[0])
                pending = np.any(step != 0.0, axis=1)
                for _ in range(HALVINGS):
                    if not pending.any():
                        break
                    trial = phi[pending] - factor[pending, None] * step[pending]
                    trial_value = self.loss(trial) - (z[pending] * trial).sum(axis=1)
                    better = np.isfinite(trial_value) & (trial_value <= value[pending] + 1e-12 * np.abs(value[pending]))
                    rows = np.flatnonzero(pending)[better]
                    phi[rows], value[rows] = trial[better], trial_value[better]
                    pending[rows] = False
                    factor[pending] *= 0.5
                small = np.max(np.abs(step), axis=1) <= STEP_TOLERANCE * (1.0 + np.max(np.abs(phi), axis=1))
                done |= small | pending
                if done.all():
                    break
            residual = np.max(np.abs(self.gradient(phi) - z), axis=1)
            scale = n + np.max(np.abs(z), axis=1)
            ok = done & np.all(np.isfinite(phi), axis=1) & (residual <= RESIDUAL * scale)
        return phi, ok


def independence_move(
    rng: np.random.Generator, target: BinaryTarget, phi: np.ndarray, log_det: np.ndarray, B: float
) -> tuple[np.ndarray, np.ndarray]:
    """The gradient-inverting independence move (module docstring); returns the new states and their log det H."""
    z = k_norm_draws(rng, target.c, phi.shape[1], target.norm, phi.shape[0])
    proposal, ok = target.solve(z, phi)
    inside = ok & (np.abs(proposal).sum(axis=1) <= B)
    proposal = np.where(inside[:, None], proposal, phi)
    proposal_log_det = np.where(inside, target.log_det(proposal), -np.inf)
    log_u = np.log(noise.uniform(rng, 0.0, 1.0, phi.shape[0]))
    with np.errstate(invalid="ignore"):
        log_ratio = np.nan_to_num(log_det - proposal_log_det, nan=-np.inf)
    accept = inside & np.isfinite(proposal_log_det) & (log_u < log_ratio)
    return np.where(accept[:, None], proposal, phi), np.where(accept, proposal_log_det, log_det)


def hit_and_run_move(rng: np.random.Generator, target: BinaryTarget, phi: np.ndarray, B: float) -> np.ndarray:
    """A point uniform on a random chord of Theta, accepted by Metropolis' rule (module docstring)."""
    u = uniform_directions(rng, phi.shape[0], phi.shape[1])
    t_lo, t_hi = l1_ball_chord(phi, u, B)
    t = t_lo + (t_hi - t_lo) * noise.uniform(rng, 0.0, 1.0, phi.shape[0])
    proposal = into_ball(phi + t[:, None] * u, B)
    log_u = np.log(noise.uniform(rng, 0.0, 1.0, phi.shape[0]))
    with np.errstate(invalid="ignore", over="ignore"):
        log_ratio = np.nan_to_num(-target.c * (target.utility(proposal) - target.utility(phi)), nan=-np.inf)
    return np.where((log_u < log_ratio)[:, None], proposal, phi)


def sample_binary(rng: np.random.Generator, target: BinaryTarget, B: float, sweeps: int, chains: int = 1) -> np.ndarray:
    """``chains`` independent draws: each chain from ``phi = 0`` after ``sweeps`` sweeps of both moves."""
    phi = np.zeros((chains, target.U.shape[1]))
    log_det = target.log_det(phi)
    for _ in range(sweeps):
        phi, log_det = independence_move(rng, target, phi, log_det, B)
        moved = hit_and_run_move(rng, target, phi, B)
        changed = np.any(moved != phi, axis=1)
        if changed.any():
            log_det = np.where(changed, target.log_det(moved), log_det)
        phi = moved
    return phi
